fn main() -> std::process::ExitCode {
    nsys_explorer::cli::main()
}

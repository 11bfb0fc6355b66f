#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: nsys_explorer::huge_pages::HugePages = nsys_explorer::huge_pages::HugePages;

fn main() -> std::process::ExitCode {
    // Output piped into `head` ends with the pipe closed: end quietly, as command-line
    // tools do, instead of panicking on the next print.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    #[expect(unsafe_code, reason = "libc's signal has no safe wrapper")]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    nsys_explorer::cli::main()
}

//! How numbers and names read wherever they are shown (window, reports, CSV): durations,
//! signed differences, counts with their noun, names cut to fit.

/// A difference with its sign: `+518.2 ms`, `-3.1 ms`.
pub fn signed_ns(ns: i64) -> String {
    if ns >= 0 {
        format!("+{}", format_ns(ns))
    } else {
        format_ns(ns)
    }
}

/// "1 stream", "2 streams".
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Human-readable duration: `812 ns`, `3.4 µs`, `12.5 ms`, `3.087 s`.
pub fn format_ns(ns: i64) -> String {
    let a = ns.abs() as f64;
    if a < 1e3 {
        format!("{ns} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if a < 1e9 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

/// [`format_ns`] with as many decimals as telling times `resolution_ns` apart takes: a
/// tooltip's start in a 25 µs wide view reads `10.6003 ms`, not `10.6 ms`.
pub fn format_ns_at(ns: i64, resolution_ns: f64) -> String {
    let a = ns.abs() as f64;
    let (unit, name, least) = if a < 1e3 {
        return format!("{ns} ns");
    } else if a < 1e6 {
        (1e3, "µs", 1)
    } else if a < 1e9 {
        (1e6, "ms", 1)
    } else {
        (1e9, "s", 3)
    };
    let needed = if resolution_ns > 0.0 {
        (unit / resolution_ns).log10().ceil().max(0.0) as usize
    } else {
        0
    };
    format!("{:.*} {name}", needed.clamp(least, 9), ns as f64 / unit)
}

/// A rate given in GB/s, in the unit that shows it: `12.3 GB/s`, `45.6 MB/s`, `7.8 KB/s`
/// (a small copy's rate is no `0.0 GB/s`).
pub fn format_rate(gbps: f64) -> String {
    if gbps >= 1.0 || gbps == 0.0 {
        format!("{gbps:.1} GB/s")
    } else if gbps >= 1e-3 {
        format!("{:.1} MB/s", gbps * 1e3)
    } else {
        format!("{:.1} KB/s", gbps * 1e6)
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// `text` cut to `max` characters by taking out its middle, so the start and the end
/// (where kernel names and signatures differ) both stay.
pub fn shorten_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(1);
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// Bytes in the binary unit that reads best: `512 B`, `64.0 MiB`, `10.0 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_cut_in_the_middle_keeps_its_start_and_end() {
        let a = "void at::native::vectorized_elementwise_kernel<4, AddFunctor>";
        let b = "void at::native::vectorized_elementwise_kernel<4, MulFunctor>";
        let (sa, sb) = (shorten_middle(a, 30), shorten_middle(b, 30));
        assert_eq!(sa.chars().count(), 30);
        assert_ne!(sa, sb, "two long names must not read alike");
        assert!(
            sa.starts_with("void at::nat") && sa.ends_with("AddFunctor>"),
            "{sa}"
        );
        assert_eq!(shorten_middle("short", 30), "short");
    }

    #[test]
    fn durations_read_in_the_unit_that_fits_with_their_sign() {
        assert_eq!(format_ns(812), "812 ns");
        assert_eq!(format_ns(3_400), "3.4 µs");
        assert_eq!(format_ns(12_500_000), "12.5 ms");
        assert_eq!(format_ns(3_087_000_000), "3.087 s");
        assert_eq!(signed_ns(518_200_000), "+518.2 ms");
        assert_eq!(signed_ns(-3_100_000), "-3.1 ms");
        assert_eq!(plural(1, "stream"), "1 stream");
        assert_eq!(plural(2, "stream"), "2 streams");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }

    #[test]
    fn times_in_a_narrow_view_get_the_decimals_that_tell_them_apart() {
        // A 25 µs wide view: a pixel is about 25 ns.
        assert_eq!(format_ns_at(10_600_250, 25.0), "10.60025 ms");
        assert_eq!(format_ns_at(10_600_250, 250.0), "10.6003 ms");
        // A wide view: no more than format_ns gives.
        assert_eq!(format_ns_at(10_600_250, 1e6), "10.6 ms");
        assert_eq!(format_ns_at(3_087_000_000, 1e7), "3.087 s");
        assert_eq!(format_ns_at(812, 1.0), "812 ns");
    }

    #[test]
    fn small_sizes_and_rates_read_in_units_that_show_them() {
        assert_eq!(format_rate(24.96), "25.0 GB/s");
        assert_eq!(format_rate(0.0042), "4.2 MB/s");
        assert_eq!(format_rate(0.0000031), "3.1 KB/s");
        assert_eq!(format_bytes(4), "4 B");
        assert_eq!(format_bytes(64 << 20), "64.0 MiB");
    }
}

//! Numbers as runpack's messages show them: digits in groups of three, sizes in bytes with
//! their decimal and binary units.

/// `1234567` → `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count with both units: `52,613,349,376 bytes (52.6 GB, 49.0 GiB)`; below 1,000
/// bytes the count alone (`512 bytes`), which the units would only repeat.
pub fn human_bytes(n: u64) -> String {
    if n < 1000 {
        return format!("{n} byte{}", if n == 1 { "" } else { "s" });
    }
    let (dec, dunit) = scale(n as f64, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"]);
    let (bin, bunit) = scale(n as f64, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB"]);
    if bunit == "B" {
        // 1,000 to 1,023 bytes: no binary unit yet
        return format!("{} bytes ({dec:.1} {dunit})", group_digits(n));
    }
    format!("{} bytes ({dec:.1} {dunit}, {bin:.1} {bunit})", group_digits(n))
}

fn scale(mut v: f64, base: f64, units: &[&'static str]) -> (f64, &'static str) {
    let mut i = 0;
    while v >= base && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    (v, units[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_said_in_the_units_that_add_something() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1), "1 byte");
        assert_eq!(human_bytes(50_000_000_000), "50,000,000,000 bytes (50.0 GB, 46.6 GiB)");
        assert_eq!(human_bytes(999), "999 bytes");
        assert_eq!(human_bytes(1000), "1,000 bytes (1.0 kB)");
        assert_eq!(human_bytes(1024), "1,024 bytes (1.0 kB, 1.0 KiB)");
        assert_eq!(human_bytes(52_613_349_376), "52,613,349,376 bytes (52.6 GB, 49.0 GiB)");
    }
}

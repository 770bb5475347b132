//! Parsing of human-friendly quantities: durations (`10s`, `500ms`, `2m`),
//! byte sizes (`100`, `10k`, `1KiB`, `64mb`) and counts (`100000`, `1m`).
//!
//! Every parser returns a plain message on failure; the caller wraps it in
//! an error that names the flag or preset key.

use std::time::Duration;

/// The longest duration bakeoff takes (a year): longer ones are typing
/// mistakes, and beyond about 584 years a duration no longer fits in the
/// clock's nanoseconds.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses a duration such as `10s`, `500ms`, `2m`, `1h`, `1.5s` or a bare
/// number of seconds, at most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!(
            "`{text}` is negative; a duration is 0 or more, e.g. `10s`"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. `10s`, `500ms`, `2m`"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" | "mins" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "unknown time unit `{other}` in `{text}`; use us, ms, s, m or h"
            ))
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{text}` is not a valid duration"));
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "`{text}` is longer than a year, the most bakeoff takes; write e.g. `10s`, `2m`, `1h`"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a byte size: a bare number is bytes; `k`/`kb`/`kib` = 1024,
/// `m`/`mb`/`mib` = 1024², `g`/`gb`/`gib` = 1024³ (binary units, as servers
/// such as Redis read them).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size; write e.g. `100`, `10k`, `64mb`"))?;
    let scale: u64 = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{text}`; use k, m or g"
            ))
        }
    };
    value
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// Parses a count: `100000`, `100k`, `2m` (decimal: k = 1000, m = 10⁶).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase().replace('_', "");
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a count; write e.g. `100000` or `100k`"))?;
    let scale: u64 = match unit {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" | "b" => 1_000_000_000,
        other => {
            return Err(format!(
                "unknown count suffix `{other}` in `{text}`; use k or m"
            ))
        }
    };
    value
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// Formats nanoseconds with a unit that keeps 3 significant digits.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Formats a span of seconds in the unit that reads best: `3.2 s`,
/// `12 min`, `26 h`, `365 days`.
pub fn fmt_duration_s(s: f64) -> String {
    if s >= 2.0 * 86_400.0 {
        format!("{:.0} days", s / 86_400.0)
    } else if s >= 2.0 * 3_600.0 {
        format!("{:.0} h", s / 3_600.0)
    } else if s >= 120.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.1} s")
    }
}

/// Formats a rate of operations per second (`123.4k ops/s`).
pub fn fmt_rate(per_s: f64) -> String {
    fmt_per_s(per_s, "ops/s")
}

/// Formats a rate in `unit` (e.g. `rec/s`) with k / M prefixes.
pub fn fmt_per_s(per_s: f64, unit: &str) -> String {
    if per_s >= 1e6 {
        format!("{:.2}M {unit}", per_s / 1e6)
    } else if per_s >= 1e3 {
        format!("{:.1}k {unit}", per_s / 1e3)
    } else if per_s >= 10.0 || per_s == 0.0 {
        format!("{per_s:.0} {unit}")
    } else {
        // Slow targets (a search taking seconds) would otherwise read "0".
        format!("{per_s:.2} {unit}")
    }
}

/// Formats a byte count with binary units.
pub fn fmt_bytes(b: f64) -> String {
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

/// Chart ticks: the shortest exact number, the unit in the axis title or
/// after it. Every chart's ticks come from these, so a chart and a table
/// never spell a unit two ways.
pub mod ticks {
    /// `2.5`, `10`, `0.33`: two decimals at most, no trailing zeros.
    pub fn number(v: f64) -> String {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }

    /// `950`, `12k`, `1.5M`.
    pub fn count(v: f64) -> String {
        if v >= 1e6 {
            format!("{}M", number(v / 1e6))
        } else if v >= 1e3 {
            format!("{}k", number(v / 1e3))
        } else {
            number(v)
        }
    }

    /// Nanoseconds in the largest whole unit: `10 µs`, `2.5 ms`.
    pub fn ns(v: f64) -> String {
        let (x, unit) = if v >= 1e9 {
            (v / 1e9, "s")
        } else if v >= 1e6 {
            (v / 1e6, "ms")
        } else if v >= 1e3 {
            (v / 1e3, "µs")
        } else {
            (v, "ns")
        };
        format!("{} {unit}", number(x))
    }

    /// A whole percentage: `85 %`.
    pub fn percent(v: f64) -> String {
        format!("{v:.0} %")
    }

    /// A percentage with its decimals: `12.5 %`.
    pub fn share(v: f64) -> String {
        format!("{} %", number(v))
    }

    /// Bytes with three significant digits at most: `977 KiB`, `4.8 MiB`.
    pub fn bytes(v: f64) -> String {
        let (x, unit) = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
            .iter()
            .find(|(b, _)| v >= *b as f64)
            .map(|(b, u)| (v / *b as f64, *u))
            .unwrap_or((v, "B"));
        let digits = if x >= 100.0 {
            format!("{x:.0}")
        } else if x >= 10.0 {
            number((x * 10.0).round() / 10.0)
        } else {
            number(x)
        };
        format!("{digits} {unit}")
    }

    /// Bytes a second: `4.8 MiB/s`.
    pub fn bytes_per_s(v: f64) -> String {
        format!("{}/s", bytes(v))
    }

    /// Whole seconds: `12 s`.
    pub fn seconds(v: f64) -> String {
        format!("{v:.0} s")
    }

    /// A position counted in nines (10^p = 1 / (1 − q)) as its percentile:
    /// 2 is `99 %`, 3 is `99.9 %`.
    pub fn nines(p: f64) -> String {
        let q = 100.0 * (1.0 - 10f64.powf(-p));
        let decimals = (p.ceil() as usize).saturating_sub(2);
        format!("{q:.decimals$} %")
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn ticks_are_short_and_carry_their_unit() {
            assert_eq!(super::ns(2_500_000.0), "2.5 ms");
            assert_eq!(super::count(12_000.0), "12k");
            assert_eq!(super::bytes(1_000_000.0), "977 KiB");
            assert_eq!(super::bytes_per_s(5_033_165.0), "4.8 MiB/s");
            assert_eq!(super::nines(3.0), "99.9 %");
            assert_eq!(super::nines(1.0), "90 %");
            assert_eq!(super::share(12.5), "12.5 %");
        }
    }
}

/// Formats dollars: whole dollars from $1,000, cents from $1, and 3
/// significant digits below (a million operations may cost $0.000184).
pub fn fmt_dollars(d: f64) -> String {
    if d >= 1000.0 {
        let whole = format!("{d:.0}");
        let mut grouped = String::new();
        for (i, c) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("${grouped}")
    } else if d >= 1.0 || d == 0.0 {
        format!("${d:.2}")
    } else {
        let digits = (2 - d.log10().floor() as i32).max(0) as usize;
        format!("${d:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars() {
        assert_eq!(fmt_dollars(9.65), "$9.65");
        assert_eq!(fmt_dollars(0.000_183_6), "$0.000184");
        assert_eq!(fmt_dollars(0.5), "$0.500");
        assert_eq!(fmt_dollars(0.0), "$0.00");
        assert_eq!(fmt_dollars(1_234_567.4), "$1,234,567");
        assert_eq!(fmt_dollars(999.994), "$999.99");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        // Beyond a year, or negative: an error that says so, never a panic.
        for long in ["99999999999999999999h", "1000000000h", "9000h"] {
            let e = parse_duration(long).unwrap_err();
            assert!(e.contains("longer than a year"), "{long}: {e}");
        }
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert_eq!(parse_duration("8760h").unwrap(), MAX_DURATION);
        assert!(parse_duration("ten").is_err());
        // The refusal lists every unit the parser takes.
        let e = parse_duration("5y").unwrap_err();
        assert!(e.contains("us, ms, s, m or h"), "{e}");
        assert_eq!(parse_duration("5us").unwrap(), Duration::from_micros(5));
    }

    #[test]
    fn sizes_and_counts() {
        assert_eq!(parse_bytes("100").unwrap(), 100);
        assert_eq!(parse_bytes("10k").unwrap(), 10240);
        assert_eq!(parse_bytes("64MB").unwrap(), 64 << 20);
        assert!(parse_bytes("1x").is_err());
        assert_eq!(parse_count("100k").unwrap(), 100_000);
        assert_eq!(parse_count("1_000").unwrap(), 1000);
        assert!(parse_count("-3").is_err());
    }

    #[test]
    fn formatting_has_units() {
        assert_eq!(fmt_ns(1500.0), "1.5 µs");
        assert_eq!(fmt_rate(12345.0), "12.3k ops/s");
        assert_eq!(fmt_rate(0.4), "0.40 ops/s");
        assert_eq!(fmt_rate(0.0), "0 ops/s");
        assert_eq!(fmt_bytes(2048.0), "2.0 KiB");
    }
}

//! A network link between the clients and the server: a round-trip time
//! and, optionally, a bandwidth (`--link rtt=150us,bandwidth=1gbit`).
//!
//! This kernel has no netem, so a link is a relay bakeoff runs between its
//! clients and the server, holding every byte for half the round trip in
//! each direction (the relay is in the drivers crate; this is what it is
//! asked to be).

use serde::{Deserialize, Serialize};

use crate::units::parse_duration;

/// The link asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Link {
    /// Round-trip time the link adds, ns (half of it each way).
    pub rtt_ns: u64,
    /// Bandwidth in each direction, bits per second; `None`: as fast as
    /// the relay can copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bps: Option<u64>,
}

/// The longest round trip a link may add: longer ones are a WAN tool's job.
const MAX_RTT_NS: u64 = 10_000_000_000;

impl Link {
    /// Parses `rtt=150us`, `rtt=1ms,bandwidth=1gbit` (`none` is no link,
    /// handled by the caller).
    pub fn parse(text: &str) -> Result<Self, String> {
        let usage = "write rtt=TIME[,bandwidth=RATE], e.g. rtt=150us or rtt=1ms,bandwidth=100mbit";
        let mut rtt = None;
        let mut bandwidth = None;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!("`{part}` is not KEY=VALUE; {usage}"));
            };
            let key = key.trim();
            if (key == "rtt" && rtt.is_some()) || (key == "bandwidth" && bandwidth.is_some()) {
                return Err(format!("{key} is given twice; give it once; {usage}"));
            }
            match key {
                "rtt" => {
                    let v = value.trim();
                    if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.') {
                        return Err(format!(
                            "rtt={v} has no unit; write e.g. {v}ms, {v}us or {v}s"
                        ));
                    }
                    let d = parse_duration(value).map_err(|e| format!("rtt: {e}; {usage}"))?;
                    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                    if ns > MAX_RTT_NS {
                        return Err(format!(
                            "rtt={value} is longer than bakeoff's relay holds bytes (at most 10s)"
                        ));
                    }
                    rtt = Some(ns);
                }
                "bandwidth" => bandwidth = Some(parse_bits_per_s(value)?),
                other => {
                    return Err(format!(
                        "unknown link key `{other}`; known keys: rtt, bandwidth; {usage}"
                    ))
                }
            }
        }
        let Some(rtt_ns) = rtt else {
            return Err(format!("a link needs its round-trip time; {usage}"));
        };
        Ok(Link {
            rtt_ns,
            bandwidth_bps: bandwidth,
        })
    }

    /// Time the link holds bytes in one direction, ns.
    pub fn one_way_ns(&self) -> u64 {
        self.rtt_ns / 2
    }

    /// Time `bytes` take to leave at the link's bandwidth, ns (0 without one).
    pub fn serialisation_ns(&self, bytes: usize) -> u64 {
        match self.bandwidth_bps {
            Some(bps) if bps > 0 => (bytes as u128 * 8 * 1_000_000_000 / bps as u128) as u64,
            _ => 0,
        }
    }
}

/// `1gbit`, `100mbit`, `10kbit`, `1000000` (bits per second).
fn parse_bits_per_s(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix("/s").unwrap_or(&t);
    let t = t.strip_suffix("ps").unwrap_or(t);
    let t = t.strip_suffix("bit").unwrap_or(t);
    let (digits, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let mult: u64 = match unit {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        _ => {
            return Err(format!(
                "bandwidth `{text}`: use a rate in bits per second, e.g. 1gbit, 100mbit or 10kbit"
            ))
        }
    };
    let value: f64 = digits.trim().parse().map_err(|_| {
        format!("bandwidth `{text}`: use a rate in bits per second, e.g. 1gbit or 100mbit")
    })?;
    if !(value.is_finite() && value >= 1.0) || value * mult as f64 > 1e12 {
        return Err(format!(
            "bandwidth `{text}` is out of range (1 bit/s to 1000gbit)"
        ));
    }
    Ok((value * mult as f64) as u64)
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = self.rtt_ns;
        if ns.is_multiple_of(1_000_000) {
            write!(f, "rtt={}ms", ns / 1_000_000)?;
        } else if ns.is_multiple_of(1_000) {
            write!(f, "rtt={}us", ns / 1_000)?;
        } else {
            write!(f, "rtt={ns}ns")?;
        }
        if let Some(b) = self.bandwidth_bps {
            if b.is_multiple_of(1_000_000_000) {
                write!(f, ",bandwidth={}gbit", b / 1_000_000_000)?;
            } else if b.is_multiple_of(1_000_000) {
                write!(f, ",bandwidth={}mbit", b / 1_000_000)?;
            } else if b.is_multiple_of(1_000) {
                write!(f, ",bandwidth={}kbit", b / 1_000)?;
            } else {
                write!(f, ",bandwidth={b}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_parse_and_print_back() {
        let l = Link::parse("rtt=150us").unwrap();
        assert_eq!(l.rtt_ns, 150_000);
        assert_eq!(l.one_way_ns(), 75_000);
        assert_eq!(l.bandwidth_bps, None);
        assert_eq!(l.to_string(), "rtt=150us");
        let b = Link::parse("rtt=1ms, bandwidth=100mbit").unwrap();
        assert_eq!(b.bandwidth_bps, Some(100_000_000));
        assert_eq!(Link::parse(&b.to_string()).unwrap(), b);
        // 1500 bytes at 100 Mbit/s take 120 µs to leave.
        assert_eq!(b.serialisation_ns(1500), 120_000);
        assert!(Link::parse("rtt=1gbit").unwrap_err().contains("rtt"));
        for bad in [
            "",
            "150us",
            "bandwidth=1gbit",
            "rtt=150us,delay=1ms",
            "rtt=11s",
            "rtt=1ms,bandwidth=fast",
            "rtt=1ms,bandwidth=0",
            "rtt=1ms,bandwidth=99999999gbit",
        ] {
            assert!(Link::parse(bad).is_err(), "{bad}");
        }
    }

    /// A key given twice is refused rather than the last one kept, and an
    /// rtt without a unit is refused rather than read as seconds (`[link]
    /// rtt = 5` meant 5 ms as often as 5 s).
    #[test]
    fn a_key_twice_or_an_rtt_without_unit_is_refused() {
        let e = Link::parse("rtt=1ms,rtt=2ms").unwrap_err();
        assert!(e.contains("rtt") && e.contains("twice"), "{e}");
        let e = Link::parse("rtt=1ms,bandwidth=1gbit,bandwidth=2gbit").unwrap_err();
        assert!(e.contains("bandwidth") && e.contains("twice"), "{e}");
        let e = Link::parse("rtt=5").unwrap_err();
        assert!(e.contains("unit") && e.contains("5ms"), "{e}");
        assert_eq!(Link::parse("rtt=5s").unwrap().rtt_ns, 5_000_000_000);
    }
}

//! What a user requires of a store (`--require p99<=2ms@20k/s`,
//! `durable=power-cut`, `memory<=2GB@10M`, `reach=network`): the run is
//! shaped by them (an open loop at the rate asked, settings that keep
//! writes as asked, only the targets reached as asked), and the report
//! says which candidates meet them all, ranked by what they cost.

use serde::{Deserialize, Serialize};

use crate::durability::DurableTo;
use crate::units::{fmt_bytes, fmt_ns, parse_bytes, parse_count, parse_duration};

/// One requirement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Requirement {
    /// A latency percentile at most `at_most_ns` with requests sent at
    /// `rate_per_s` (open loop, latency from each request's intended
    /// start).
    Latency {
        /// The percentile, e.g. 99.
        percentile: f64,
        /// Its bound, ns.
        at_most_ns: u64,
        /// The rate it must hold at, requests per second.
        rate_per_s: f64,
    },
    /// Acknowledged writes survive at least this (from the targets'
    /// declared settings, and measured where the run checks it).
    Durable {
        /// The least class.
        class: DurableTo,
    },
    /// Memory at most `at_most_bytes` holding `records` records (the
    /// measured memory per record, extrapolated linearly).
    Memory {
        /// The bound, bytes.
        at_most_bytes: u64,
        /// At this many records.
        records: u64,
    },
    /// Reached over the network (a server) or in the application's
    /// process (an embedded engine).
    Reach {
        /// In process, rather than over the network.
        in_process: bool,
    },
}

impl Requirement {
    /// Parses `p99<=2ms@20k/s`, `durable=power-cut|crash|none`,
    /// `memory<=2GB@10M`, `reach=network|in-process`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let usage = "write p99<=2ms@20k/s, durable=power-cut (or crash, none), memory<=2GB@10M or reach=network (or in-process)";
        if let Some(class) = t.strip_prefix("durable=") {
            let class = match class.trim() {
                "power-cut" => DurableTo::PowerCut,
                "crash" | "process-crash" => DurableTo::ProcessCrash,
                "none" | "memory" => DurableTo::MemoryOnly,
                other => {
                    return Err(format!(
                        "`{other}` is no durability; use power-cut, crash or none"
                    ))
                }
            };
            return Ok(Requirement::Durable { class });
        }
        if let Some(reach) = t.strip_prefix("reach=") {
            return match reach.trim() {
                "network" => Ok(Requirement::Reach { in_process: false }),
                "in-process" | "embedded" => Ok(Requirement::Reach { in_process: true }),
                other => Err(format!("`{other}` is no reach; use network or in-process")),
            };
        }
        if let Some(rest) = t.strip_prefix("memory<=") {
            let (bytes, records) = rest
                .split_once('@')
                .ok_or_else(|| format!("`{t}` names no record count; {usage}"))?;
            let at_most_bytes = parse_bytes(bytes)?;
            let records = parse_count(records.trim().trim_end_matches(" records"))?;
            return checked(Requirement::Memory {
                at_most_bytes,
                records,
            })
            .map_err(|e| format!("`{t}`: {e}; {usage}"));
        }
        if let Some(rest) = t.strip_prefix('p') {
            let (percentile, rest) = rest
                .split_once("<=")
                .ok_or_else(|| format!("`{t}` is no requirement; {usage}"))?;
            let percentile: f64 = percentile
                .parse()
                .map_err(|_| format!("`p{percentile}` is no percentile; {usage}"))?;
            let (bound, rate) = rest
                .split_once('@')
                .ok_or_else(|| format!("`{t}` names no rate to hold it at; {usage}"))?;
            let at_most_ns = parse_duration(bound)?.as_nanos() as u64;
            let rate = rate.trim().trim_end_matches("/s");
            let rate_per_s = parse_count(rate)
                .map_err(|_| format!("`{rate}` is no rate in requests per second; {usage}"))?
                as f64;
            return checked(Requirement::Latency {
                percentile,
                at_most_ns,
                rate_per_s,
            })
            .map_err(|e| format!("`{t}`: {e}; {usage}"));
        }
        Err(format!("`{t}` is no requirement; {usage}"))
    }
}

/// `r` if its figures can be measured, else why not.
fn checked(r: Requirement) -> Result<Requirement, String> {
    r.check().map(|()| r)
}

impl Requirement {
    /// Whether its figures can be measured: a percentile strictly between
    /// 0 and 100, a bound and a rate above 0 (the rate at most a request a
    /// nanosecond, as `--rate` allows), memory above 0 at 1 record or
    /// more. What [`Requirement::parse`] refuses, and what a result file
    /// is checked for when read (it may have been written by hand).
    pub fn check(&self) -> Result<(), String> {
        match *self {
            Requirement::Latency {
                percentile,
                at_most_ns,
                rate_per_s,
            } => {
                if !(percentile > 0.0 && percentile < 100.0) {
                    return Err(format!(
                        "p{percentile} is no percentile (give one above 0 and below 100, e.g. p99)"
                    ));
                }
                if at_most_ns == 0 {
                    return Err("a latency bound of 0 bounds nothing".into());
                }
                if !(rate_per_s > 0.0 && rate_per_s.is_finite()) {
                    return Err(format!("{rate_per_s}/s is no rate to hold a bound at"));
                }
                if rate_per_s > 1e9 {
                    return Err(format!(
                        "{rate_per_s:.0}/s is more than a request a nanosecond, the most an open loop can schedule (as --rate)"
                    ));
                }
                Ok(())
            }
            Requirement::Memory {
                at_most_bytes,
                records,
            } => {
                if at_most_bytes == 0 {
                    return Err("memory of 0 bytes bounds nothing".into());
                }
                if records == 0 {
                    return Err("memory at 0 records says nothing".into());
                }
                Ok(())
            }
            Requirement::Durable { .. } | Requirement::Reach { .. } => Ok(()),
        }
    }
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Requirement::Latency {
                percentile,
                at_most_ns,
                rate_per_s,
            } => write!(
                f,
                "p{percentile} <= {} at {rate_per_s:.0}/s",
                fmt_ns(*at_most_ns as f64)
            ),
            Requirement::Durable {
                class: DurableTo::MemoryOnly,
            } => f.write_str("writes need survive nothing"),
            Requirement::Durable { class } => write!(f, "writes survive a {class}"),
            Requirement::Memory {
                at_most_bytes,
                records,
            } => write!(
                f,
                "memory <= {} at {records} records",
                fmt_bytes(*at_most_bytes as f64)
            ),
            Requirement::Reach { in_process: true } => f.write_str("in the application's process"),
            Requirement::Reach { in_process: false } => f.write_str("over the network"),
        }
    }
}

/// A candidate left out before anything ran, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeftOut {
    /// The target as named.
    pub target: String,
    /// Why it cannot meet the requirements.
    pub why: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_parse_and_say_what_is_wrong() {
        assert_eq!(
            Requirement::parse("p99<=2ms@20k/s").unwrap(),
            Requirement::Latency {
                percentile: 99.0,
                at_most_ns: 2_000_000,
                rate_per_s: 20_000.0
            }
        );
        assert_eq!(
            Requirement::parse("p99.9<=500us@1000").unwrap(),
            Requirement::Latency {
                percentile: 99.9,
                at_most_ns: 500_000,
                rate_per_s: 1000.0
            }
        );
        assert_eq!(
            Requirement::parse("durable=power-cut").unwrap(),
            Requirement::Durable {
                class: DurableTo::PowerCut
            }
        );
        assert_eq!(
            Requirement::parse("memory<=2GB@10M").unwrap(),
            Requirement::Memory {
                at_most_bytes: 2 << 30,
                records: 10_000_000
            }
        );
        assert_eq!(
            Requirement::parse("reach=in-process").unwrap(),
            Requirement::Reach { in_process: true }
        );
        for bad in [
            "p99<=2ms",
            "p100<=1ms@1k",
            "p150<=1ms@1k",
            "p-1<=1ms@1k",
            "p99<=0ms@1k",
            "p99<=1ms@2000m/s",
            "memory<=0@10M",
            "memory<=1GB@0",
            "durable=always",
            "memory<=2GB",
            "reach=moon",
            "fast",
        ] {
            assert!(Requirement::parse(bad).is_err(), "{bad}");
        }
    }
}

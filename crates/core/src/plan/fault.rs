//! A fault injected into a measured run: what, and when.

use serde::{Deserialize, Serialize};

use crate::durability::DurableTo;
use crate::units::parse_duration;
use crate::workload::Rng;

/// What is done to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FaultKind {
    /// SIGKILL to the server's whole process group (a crash: no flush, no
    /// clean-up), then a start on the same data directory.
    Kill,
    /// A clean stop (SIGTERM), then a start on the same data directory,
    /// with its files dropped from the kernel's page cache: the time to
    /// serve again is the time to read the data back.
    Restart,
    /// A power cut: SIGKILL to the group, and every byte written to the
    /// data directory but not yet fsynced is thrown away (the directory is
    /// on bakeoff's own FUSE layer, which keeps such bytes in its memory),
    /// then a start on what is left, from a cold page cache.
    #[serde(rename = "power-cut")]
    PowerCut,
}

impl FaultKind {
    /// Its name in flags and presets.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Restart => "restart",
            FaultKind::PowerCut => "power-cut",
        }
    }

    /// The least durability class whose stores promise to keep every
    /// acknowledged write through this fault: a restart or a kill takes
    /// one that survives a process crash, a power cut one that survives
    /// a power cut.
    pub fn survived_by(self) -> DurableTo {
        match self {
            FaultKind::PowerCut => DurableTo::PowerCut,
            FaultKind::Kill | FaultKind::Restart => DurableTo::ProcessCrash,
        }
    }
}

/// A fault and the window it falls in, in seconds from the start of the
/// measure job (the warm-up included).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fault {
    /// What is done.
    pub kind: FaultKind,
    /// Earliest moment, seconds.
    pub from_s: f64,
    /// Latest moment, seconds; equal to `from_s` for a fixed moment.
    pub to_s: f64,
}

impl Fault {
    /// Parses `kill@5s`, `restart@500ms`, `kill@5s..15s`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let usage = "write KIND@TIME or KIND@FROM..TO, e.g. kill@5s or restart@5s..15s";
        let (kind, when) = text
            .trim()
            .split_once('@')
            .ok_or_else(|| format!("`{text}` has no time; {usage}"))?;
        let kind = match kind.trim() {
            "kill" => FaultKind::Kill,
            "restart" => FaultKind::Restart,
            "power-cut" => FaultKind::PowerCut,
            other => {
                return Err(format!(
                    "unknown fault `{other}`; use kill, restart or power-cut"
                ))
            }
        };
        let seconds = |t: &str| {
            parse_duration(t)
                .map(|d| d.as_secs_f64())
                .map_err(|e| format!("{e}; {usage}"))
        };
        let (from_s, to_s) = match when.split_once("..") {
            Some((a, b)) => (seconds(a)?, seconds(b)?),
            None => {
                let at = seconds(when)?;
                (at, at)
            }
        };
        if from_s <= 0.0 {
            return Err(
                "a fault at 0 s leaves nothing to compare with; give a later moment".into(),
            );
        }
        if to_s < from_s {
            return Err(format!("the window {when} ends before it starts"));
        }
        Ok(Fault { kind, from_s, to_s })
    }

    /// The moment of the fault in repeat `repeat` of run `index`: the fixed
    /// moment, or one drawn from the window by the seed (another each
    /// repeat, the same for the same seed).
    pub fn moment_s(&self, seed: u64, index: u32, repeat: u32) -> f64 {
        if self.to_s <= self.from_s {
            return self.from_s;
        }
        let mut rng = Rng::new(seed ^ 0xfa17, ((index as u64) << 32) | repeat as u64);
        let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.from_s + unit * (self.to_s - self.from_s)
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.to_s > self.from_s {
            write!(f, "{}@{}s..{}s", self.kind.name(), self.from_s, self.to_s)
        } else {
            write!(f, "{}@{}s", self.kind.name(), self.from_s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_and_windows_parse_and_draw_inside() {
        let f = Fault::parse("kill@5s").unwrap();
        assert_eq!((f.kind, f.from_s, f.to_s), (FaultKind::Kill, 5.0, 5.0));
        assert_eq!(f.moment_s(1, 0, 0), 5.0);
        assert_eq!(Fault::parse(&f.to_string()).unwrap(), f);
        let w = Fault::parse("restart@2s..4s").unwrap();
        let moments: Vec<f64> = (0..20).map(|r| w.moment_s(7, 0, r)).collect();
        assert!(
            moments.iter().all(|m| (2.0..=4.0).contains(m)),
            "{moments:?}"
        );
        assert!(moments.windows(2).any(|p| p[0] != p[1]), "repeats differ");
        assert_eq!(w.moment_s(7, 0, 3), moments[3], "same seed, same moment");
        assert_eq!(Fault::parse(&w.to_string()).unwrap(), w);
        let p = Fault::parse("power-cut@3s").unwrap();
        assert_eq!(p.kind, FaultKind::PowerCut);
        assert_eq!(Fault::parse(&p.to_string()).unwrap(), p);
        for bad in ["kill", "explode@1s", "kill@0s", "kill@4s..2s", "kill@soon"] {
            assert!(Fault::parse(bad).is_err(), "{bad}");
        }
    }
}

//! Background work asked of the server at a moment of a measured run
//! (`--provoke checkpoint@5s`): what the timeline then shows the tail
//! doing while it runs.

use serde::{Deserialize, Serialize};

use crate::units::parse_duration;

/// Background work a server can be asked to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Work {
    /// Redis: `BGSAVE`, a snapshot written by a forked child.
    Bgsave,
    /// Redis: `BGREWRITEAOF`, the append-only file rewritten by a child.
    AofRewrite,
    /// PostgreSQL: `CHECKPOINT`, every dirty buffer written and synced.
    Checkpoint,
}

impl Work {
    /// Every kind, in the order `--help` lists them.
    pub const ALL: [Work; 3] = [Work::Bgsave, Work::AofRewrite, Work::Checkpoint];

    /// Its name in flags and presets.
    pub fn name(self) -> &'static str {
        match self {
            Work::Bgsave => "bgsave",
            Work::AofRewrite => "aof-rewrite",
            Work::Checkpoint => "checkpoint",
        }
    }
}

/// Background work asked for at a moment, seconds from the start of the
/// measure job (the warm-up included), as `--fault` counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provoke {
    /// What is asked for.
    pub work: Work,
    /// When, seconds.
    pub at_s: f64,
}

impl Provoke {
    /// Parses `checkpoint@5s`, `bgsave@500ms`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let names = Work::ALL.map(Work::name).join(", ");
        let usage = format!("write WORK@TIME, e.g. checkpoint@5s; WORK is one of {names}");
        let (work, when) = text
            .trim()
            .split_once('@')
            .ok_or_else(|| format!("`{text}` has no time; {usage}"))?;
        let work = Work::ALL
            .into_iter()
            .find(|w| w.name() == work.trim())
            .ok_or_else(|| format!("unknown background work `{}`; {usage}", work.trim()))?;
        let at_s = parse_duration(when)
            .map_err(|e| format!("{e}; {usage}"))?
            .as_secs_f64();
        Ok(Provoke { work, at_s })
    }
}

impl std::fmt::Display for Provoke {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}s", self.work.name(), self.at_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_and_moment_parse_and_print_back() {
        let p = Provoke::parse("checkpoint@5s").unwrap();
        assert_eq!((p.work, p.at_s), (Work::Checkpoint, 5.0));
        assert_eq!(Provoke::parse(&p.to_string()).unwrap(), p);
        assert_eq!(Provoke::parse("aof-rewrite@500ms").unwrap().at_s, 0.5);
        for bad in ["checkpoint", "vacuum@1s", "bgsave@soon"] {
            let e = Provoke::parse(bad).unwrap_err();
            assert!(e.contains("bgsave, aof-rewrite, checkpoint"), "{bad}: {e}");
        }
    }
}

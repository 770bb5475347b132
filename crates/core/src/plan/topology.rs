//! How many servers make a target, and how they share the work
//! (`--topology`).

use serde::{Deserialize, Serialize};

/// The shape of a target.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// One server.
    #[default]
    Single,
    /// A primary and one replica: writes go to the primary, reads to the
    /// one `--read-from` names.
    PrimaryReplica,
    /// N independent nodes; the client spreads keys over them with ketama
    /// consistent hashing.
    Shards(u32),
    /// A Redis Cluster of N masters; the client routes by hash slot.
    Cluster(u32),
}

/// The most nodes a topology may have on this one machine.
const MAX_NODES: u64 = 64;

impl Topology {
    /// Its kind's name in flags, messages and capabilities: `single`,
    /// `primary-replica`, `shards`, `cluster`.
    pub fn kind(&self) -> &'static str {
        match self {
            Topology::Single => "single",
            Topology::PrimaryReplica => "primary-replica",
            Topology::Shards(_) => "shards",
            Topology::Cluster(_) => "cluster",
        }
    }

    /// Servers it runs.
    pub fn nodes(&self) -> u32 {
        match self {
            Topology::Single => 1,
            Topology::PrimaryReplica => 2,
            Topology::Shards(n) | Topology::Cluster(n) => *n,
        }
    }
}

impl std::str::FromStr for Topology {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let usage = "use single, primary-replica, shards:N or cluster:N";
        let t = text.trim();
        let count = |n: &str, kind: &str| -> Result<u32, String> {
            let v =
                crate::units::parse_count(n).map_err(|e| format!("{kind}:{n}: {e}; {usage}"))?;
            if v == 0 {
                return Err(format!(
                    "{kind}:0 has no node to send anything to; use at least 1"
                ));
            }
            if v > MAX_NODES {
                return Err(format!(
                    "{kind}:{v} is more nodes than one machine runs sensibly (at most {MAX_NODES})"
                ));
            }
            Ok(v as u32)
        };
        match t.split_once(':') {
            None if t == "single" => Ok(Topology::Single),
            None if t == "primary-replica" => Ok(Topology::PrimaryReplica),
            None if t == "shards" || t == "cluster" => {
                Err(format!("`{t}` needs its node count, e.g. {t}:4; {usage}"))
            }
            Some(("shards", n)) => Ok(Topology::Shards(count(n, "shards")?)),
            Some(("cluster", n)) => Ok(Topology::Cluster(count(n, "cluster")?)),
            _ => Err(format!("unknown topology `{t}`; {usage}")),
        }
    }
}

impl std::fmt::Display for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topology::Shards(n) | Topology::Cluster(n) => write!(f, "{}:{n}", self.kind()),
            _ => f.write_str(self.kind()),
        }
    }
}

/// Where reads go in a primary-replica run (`--read-from`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ReadFrom {
    /// Reads go to the primary, with the writes.
    #[default]
    Primary,
    /// Reads go to the replica.
    Replica,
}

impl std::str::FromStr for ReadFrom {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "primary" => Ok(ReadFrom::Primary),
            "replica" => Ok(ReadFrom::Replica),
            o => Err(format!("unknown `{o}`; use primary or replica")),
        }
    }
}

impl ReadFrom {
    /// Its name in flags and presets.
    pub fn name(self) -> &'static str {
        match self {
            ReadFrom::Primary => "primary",
            ReadFrom::Replica => "replica",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topologies_parse_and_print_back() {
        for t in ["single", "primary-replica", "shards:4", "cluster:3"] {
            let parsed: Topology = t.parse().unwrap();
            assert_eq!(parsed.to_string(), t);
        }
        assert_eq!("shards:4".parse::<Topology>().unwrap().nodes(), 4);
        let zero = "shards:0".parse::<Topology>().unwrap_err();
        assert!(zero.contains("at least 1"), "{zero}");
        for bad in ["shards", "shards:x", "ring:3", "cluster:1000", ""] {
            assert!(bad.parse::<Topology>().is_err(), "{bad}");
        }
    }
}

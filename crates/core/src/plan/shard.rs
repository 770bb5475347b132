//! One shard of an experiment run from several client machines at once
//! (`--shard i/N`, or a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`
//! with `BAKEOFF_SHARDS`): which part of the load it writes, which part of
//! the clients and the rate it runs, and the seed its generators draw from.
//! The parts of the N shards add up to the whole, with nothing twice.

use std::ops::Range;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::Workload;

/// The environment variable a Kubernetes Indexed Job sets to the pod's
/// index.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The environment variable that gives the number of shards beside it.
pub const COUNT_ENV: &str = "BAKEOFF_SHARDS";

/// Most shards one experiment is split into.
pub const MAX_SHARDS: u32 = 10_000;

/// Shard `index` of `count` (`0 <= index < count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// Shards in all.
    pub count: u32,
}

impl Shard {
    /// Parses `i/N` (`--shard 0/3`).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let usage =
            "write the shard as INDEX/COUNT, counting from 0, e.g. 0/3 for the first of three";
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not INDEX/COUNT; {usage}"))?;
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{text}`: the {what} `{s}` is not a whole number; {usage}"))
        };
        Shard::new(number(i, "index")?, number(n, "count")?)
    }

    /// The shard the environment names: [`INDEX_ENV`] and [`COUNT_ENV`]
    /// both set, or neither (`None`); `lookup` reads a variable.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, String> {
        match (lookup(INDEX_ENV), lookup(COUNT_ENV)) {
            (None, None) => Ok(None),
            (Some(i), Some(n)) => Shard::parse(&format!("{}/{}", i.trim(), n.trim()))
                .map(Some)
                .map_err(|e| format!("{INDEX_ENV}={i} and {COUNT_ENV}={n}: {e}")),
            (Some(i), None) => Err(format!(
                "{INDEX_ENV}={i} is set but {COUNT_ENV} is not: set {COUNT_ENV} to the number of shards (the Job's completions)"
            )),
            (None, Some(n)) => Err(format!(
                "{COUNT_ENV}={n} is set but {INDEX_ENV} is not: give this shard's index with --shard INDEX/{n}"
            )),
        }
    }

    /// A checked shard.
    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            return Err("0 shards run nothing; the count is 1 or more".into());
        }
        if count > MAX_SHARDS {
            return Err(format!(
                "{count} shards is more than bakeoff takes ({MAX_SHARDS})"
            ));
        }
        if index >= count {
            return Err(format!(
                "shard {index} of {count} does not exist: indexes run from 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// This shard's part of a whole number `total` (clients, operations):
    /// `total / count`, the first `total % count` shards one more.
    pub fn share(&self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// This shard's part of an open loop's rate, ops/s.
    pub fn rate_share(&self, rate: f64) -> f64 {
        rate / f64::from(self.count)
    }

    /// This shard's part of the record ids `ids`, in order: consecutive
    /// parts that cover `ids` exactly.
    pub fn part(&self, ids: Range<u64>) -> Range<u64> {
        let len = u128::from(ids.end.saturating_sub(ids.start));
        let (i, n) = (u128::from(self.index), u128::from(self.count));
        let at = |k: u128| ids.start + (len * k / n) as u64;
        at(i)..at(i + 1)
    }

    /// The workload this shard runs of `w`: its share of the clients (and
    /// of the worker threads, at most one per client), of the open loop's
    /// rate and of an operation count, and its part of the ids the load
    /// adds. The key space it draws from stays the whole of `w.records`.
    pub fn workload(&self, w: &Workload) -> Workload {
        let mut mine = w.clone();
        mine.clients = self.share(u64::from(w.clients)) as u32;
        mine.threads = w.threads.min(mine.clients).max(1);
        mine.rate = w.rate.map(|r| self.rate_share(r));
        mine.ops = w.ops.map(|n| self.share(n));
        let ids = self.part(w.load_from..w.load_to.unwrap_or(w.records).min(w.records));
        // One shard of one is the whole run (and empties the table first).
        if self.count > 1 {
            mine.load_from = ids.start;
            mine.load_to = Some(ids.end);
            // Its inserts write ids of its own (YCSB's processes all
            // insert from the record count on, the same ids).
            mine.insert_from = Some(crate::inserts::shard_first(
                w.records, self.index, self.count,
            ));
        }
        mine
    }

    /// The seed of this shard's generators, derived from the plan's: each
    /// shard draws its own stream over the whole key space.
    pub fn seed(&self, plan_seed: u64) -> u64 {
        // SplitMix64's finaliser over the seed and the index: distinct
        // shards get unrelated streams; one shard of one is the plan's.
        if self.count == 1 {
            return plan_seed;
        }
        let mut z = plan_seed ^ (u64::from(self.index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// How far from the planned start a shard may start, and how far its
/// clock may be from the server's, unless `--start-tolerance` says.
pub const START_TOLERANCE: Duration = Duration::from_millis(250);

/// How far ahead a synchronised start may be: a day (a start years ahead
/// would have the run wait that long in silence).
pub const MAX_START_AHEAD: Duration = Duration::from_secs(86_400);

/// Time between one synchronised run's end and the next's start, for
/// closing the one and opening and loading the other.
pub const RUN_GAP: Duration = Duration::from_secs(30);

/// A synchronised start (`--start-at`): every shard opens its target and
/// loads, then waits for this time to start its measured run (warm-up
/// first), so that the shards' measured phases coincide.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StartAt {
    /// The time, RFC 3339 in UTC (`2026-11-26T10:00:00Z`).
    pub at: String,
    /// How late a shard may start, and how far its clock may be from the
    /// server's, seconds.
    pub tolerance_s: f64,
    /// Seconds from one run's planned start to the next's, when the plan
    /// makes several: the longest run (warm-up and measured phase) plus
    /// [`RUN_GAP`] for closing it, opening the next target and loading.
    #[serde(default)]
    pub every_s: f64,
}

impl StartAt {
    /// Reads `text` as an RFC 3339 time in UTC.
    pub fn parse(text: &str, tolerance: Duration) -> Result<StartAt, String> {
        let at = humantime::parse_rfc3339(text.trim()).map_err(|e| {
            format!(
                "`{text}` is not an RFC 3339 time in UTC ({e}); write e.g. {}, as `date -u +%FT%TZ -d '+2 min'` prints",
                humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            )
        })?;
        Ok(StartAt {
            at: humantime::format_rfc3339_nanos(at).to_string(),
            tolerance_s: tolerance.as_secs_f64(),
            every_s: 0.0,
        })
    }

    /// The time the first run starts.
    pub fn time(&self) -> SystemTime {
        humantime::parse_rfc3339(&self.at).expect("checked when the plan was built")
    }

    /// The planned start of run `index` (from 0, in the order they run).
    pub fn of_run(&self, index: u32) -> StartAt {
        let at = self.time() + Duration::from_secs_f64(self.every_s * f64::from(index));
        StartAt {
            at: humantime::format_rfc3339_nanos(at).to_string(),
            ..self.clone()
        }
    }

    /// The tolerance.
    pub fn tolerance(&self) -> Duration {
        Duration::from_secs_f64(self.tolerance_s)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_written_index_slash_count() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(Shard::parse("0/1").unwrap().to_string(), "0/1");
        for bad in ["3/3", "1/0", "x/3", "1", "-1/3", "1/100001"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert!(Shard::parse("3/3").unwrap_err().contains("from 0 to 2"));
    }

    #[test]
    fn the_environment_gives_both_or_neither() {
        fn env(
            i: Option<&'static str>,
            n: Option<&'static str>,
        ) -> impl Fn(&str) -> Option<String> {
            move |k: &str| match k {
                INDEX_ENV => i.map(String::from),
                COUNT_ENV => n.map(String::from),
                _ => None,
            }
        }
        assert_eq!(Shard::from_env(env(None, None)), Ok(None));
        assert_eq!(
            Shard::from_env(env(Some("1"), Some("4"))),
            Ok(Some(Shard { index: 1, count: 4 }))
        );
        let e = Shard::from_env(env(Some("1"), None)).unwrap_err();
        assert!(e.contains(COUNT_ENV), "{e}");
        let e = Shard::from_env(env(Some("4"), Some("4"))).unwrap_err();
        assert!(e.contains(INDEX_ENV) && e.contains("from 0 to 3"), "{e}");
    }

    #[test]
    fn shares_and_parts_add_up_to_the_whole() {
        for count in [1u32, 2, 3, 7, 100] {
            for total in [0u64, 1, 5, 99, 100, 1001] {
                let shards = (0..count).map(|index| Shard { index, count });
                assert_eq!(shards.clone().map(|s| s.share(total)).sum::<u64>(), total);
                // Consecutive, covering, never overlapping.
                let mut next = 17;
                for s in shards {
                    let p = s.part(17..17 + total);
                    assert_eq!(p.start, next, "{s} of {total}");
                    next = p.end;
                }
                assert_eq!(next, 17 + total);
            }
        }
        let rate: f64 = (0..3)
            .map(|index| Shard { index, count: 3 }.rate_share(1000.0))
            .sum();
        assert!((rate - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn each_shard_draws_its_own_seed() {
        let seeds: std::collections::BTreeSet<u64> = (0..100)
            .map(|index| Shard { index, count: 100 }.seed(1))
            .collect();
        assert_eq!(seeds.len(), 100);
        assert_eq!(Shard { index: 0, count: 1 }.seed(42), 42);
        assert_eq!(
            Shard { index: 3, count: 5 }.seed(42),
            Shard { index: 3, count: 5 }.seed(42)
        );
    }

    #[test]
    fn three_shards_workloads_add_up_to_the_whole() {
        let mut w = crate::plan::params::defaults();
        w.records = 1000;
        w.clients = 10;
        w.threads = 4;
        w.rate = Some(9000.0);
        w.ops = Some(100);
        let parts: Vec<Workload> = (0..3)
            .map(|i| Shard::new(i, 3).unwrap().workload(&w))
            .collect();
        let clients: Vec<u32> = parts.iter().map(|p| p.clients).collect();
        assert_eq!(clients, [4, 3, 3]);
        assert!(parts
            .iter()
            .all(|p| p.threads <= p.clients && p.threads >= 1));
        assert_eq!(parts.iter().map(|p| p.rate.unwrap()).sum::<f64>(), 9000.0);
        assert_eq!(parts.iter().map(|p| p.ops.unwrap()).sum::<u64>(), 100);
        // The load's parts follow one another and cover 0..1000.
        let mut next = 0;
        for p in &parts {
            assert_eq!(p.load_from, next);
            next = p.load_to.unwrap();
            assert_eq!(p.records, 1000, "every shard draws from every key");
        }
        assert_eq!(next, 1000);
        // Each shard inserts ids of its own, above the records (YCSB's
        // processes all insert from the record count on).
        let firsts: Vec<u64> = parts.iter().map(|p| p.first_insert()).collect();
        assert_eq!(firsts[0], 1000);
        assert!(
            firsts.windows(2).all(|w| w[1] > w[0] + 100_000_000_000),
            "{firsts:?}"
        );
        // A growth checkpoint's load (ids 1000..1600) is split the same way.
        w.load_from = 1000;
        w.records = 1600;
        let (a, c) = (
            Shard::new(0, 3).unwrap().workload(&w),
            Shard::new(2, 3).unwrap().workload(&w),
        );
        assert_eq!((a.load_from, c.load_to), (1000, Some(1600)));
        // One shard of one is the whole run.
        let whole = Shard::new(0, 1).unwrap().workload(&w);
        assert_eq!(
            serde_json::to_value(&whole).unwrap(),
            serde_json::to_value(&w).unwrap()
        );
    }
}

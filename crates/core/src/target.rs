//! What a target is to the runner: the [`Target`] a run talks to and
//! reads counters of, and the [`TargetOpener`] that makes one; with the
//! counters a target keeps and how they are held against what bakeoff sent.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use crate::driver::Driver;
use crate::error::TargetError;
use crate::plan::{FaultKind, Plan, TargetSpec, Work, Workload};
use crate::readings::{ClockReading, LinkSample, MachineTicks, ProcSnapshot, Readings};
use crate::result::{CounterCheck, TargetRecord};
use crate::workload::{OpKind, OP_KINDS};

/// When a fault struck (the signal sent, or the stop begun) and how long
/// the server then took until its own process held its port again.
#[derive(Clone, Copy, Debug)]
pub struct FaultStruck {
    /// The moment it struck.
    pub at: Instant,
    /// From then until the restarted server held its port.
    pub back_after: Duration,
}

/// Operation counters a target keeps itself (e.g. Redis `INFO commandstats`).
pub type Counters = BTreeMap<String, u64>;

/// How a target's counters add up to operations bakeoff sent: the changes
/// of `counters` over the run must equal the requests of `kinds`.
#[derive(Clone, Copy, Debug)]
pub struct CounterRule {
    /// What is compared, with where the figure comes from.
    pub what: &'static str,
    /// The target's counters whose changes are summed.
    pub counters: &'static [&'static str],
    /// The operation kinds whose requests are summed.
    pub kinds: &'static [OpKind],
}

/// What bakeoff sent to a target over a run, all phases, for the
/// conservation checks against the target's own counters: requests as
/// they went on the wire (an insert is a set, a read-modify-write a get
/// and, when its read went well, a set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Requests per kind.
    pub requests: [u64; OP_KINDS],
    /// Of the operations completed, those answered as a miss, per kind.
    pub misses: [u64; OP_KINDS],
    /// Second requests of operations that needed one, per kind (not in
    /// `requests`).
    pub follow_ups: [u64; OP_KINDS],
    /// Updates were read-merge-writes (records of several fields on a
    /// target that keeps a record as one value): each a read, then its
    /// write as its second request.
    pub merged_updates: bool,
}

impl Sent {
    /// Adds what one phase sent.
    pub fn add(&mut self, phase: &crate::recorder::PhaseStats) {
        for kind in OpKind::ALL {
            let (k, wire) = (kind as usize, kind.wire() as usize);
            self.requests[wire] += phase.sent[k];
            self.misses[wire] += phase.misses[k];
            if kind == OpKind::ReadModifyWrite {
                // Its second requests are its writes.
                self.requests[OpKind::Set as usize] += phase.follow_ups[k];
            } else if kind == OpKind::Update && self.merged_updates {
                // Its first requests were reads; its second, the writes.
                self.requests[wire] -= phase.sent[k];
                self.requests[OpKind::Get as usize] += phase.sent[k];
                self.requests[wire] += phase.follow_ups[k];
            } else {
                self.follow_ups[kind.write() as usize] += phase.follow_ups[k];
            }
        }
    }

    /// The requests one node of several was sent, per kind of operation
    /// (a read-modify-write's write already counted as a set there), as
    /// they went on the wire; per node only requests are counted.
    pub fn of_node(per_kind: &[u64; OP_KINDS]) -> Sent {
        let mut sent = Sent::default();
        for kind in OpKind::ALL {
            sent.requests[kind.wire() as usize] += per_kind[kind as usize];
        }
        sent
    }

    /// Requests of `kind`.
    pub fn of(&self, kind: OpKind) -> u64 {
        self.requests[kind as usize]
    }
}

/// Applies `rules` to the counters `before` and `after` a run and the
/// requests `sent` per kind; a rule with nothing on either side is left out.
pub fn compare_counters(
    rules: &[CounterRule],
    before: &Counters,
    after: &Counters,
    sent: &Sent,
) -> Vec<CounterCheck> {
    let delta = |k: &str| {
        let a = after.get(k).copied().unwrap_or(0);
        a.saturating_sub(before.get(k).copied().unwrap_or(0))
    };
    rules
        .iter()
        .map(|r| CounterCheck {
            what: r.what.into(),
            bakeoff: r.kinds.iter().map(|k| sent.of(*k)).sum(),
            target: r.counters.iter().map(|c| delta(c)).sum(),
        })
        .filter(|c| c.bakeoff > 0 || c.target > 0)
        .collect()
}

/// One target, ready for one run: a started server, an external endpoint or
/// an opened engine. Dropping it stops and cleans up what it started.
pub trait Target {
    /// The driver that talks to it.
    fn driver(&self) -> &dyn Driver;
    /// Version, settings and requests, for the result file.
    fn record(&self) -> TargetRecord;
    /// The target's own operation counters, if it keeps any.
    fn counters(&self) -> Option<Counters>;
    /// How the target's counters add up to the requests bakeoff sent, for
    /// [`Target::counter_checks`]; none where it keeps no such counters.
    fn counter_rules(&self) -> &'static [CounterRule] {
        &[]
    }
    /// Compares bakeoff's requests sent per kind (all phases) with the
    /// change of the target's counters over the run: by
    /// [`Target::counter_rules`], unless the target's counters need more
    /// than a sum (requests of its own besides bakeoff's).
    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &Sent,
    ) -> Vec<CounterCheck> {
        compare_counters(self.counter_rules(), before, after, sent)
    }
    /// Whether it keeps the fields of a record of several apart (a Redis
    /// hash), so that an update writes one field as it is; the others
    /// keep a record as one value, which an update reads and writes back.
    fn keeps_fields(&self) -> bool {
        false
    }
    /// Records the target holds, if it can tell.
    fn record_count(&self) -> Option<u64>;
    /// Records the server has evicted since it started, by its own count
    /// (memcached's `evictions`, Redis's `evicted_keys`), where it evicts
    /// and says so: a write it evicted is not one a fault lost.
    fn evictions(&self) -> Option<u64> {
        None
    }
    /// Removes every record of the workload's table before a full load on
    /// a target already loaded (a search's later step), where a load
    /// cannot overwrite what is there (MongoDB's inserts); others keep
    /// their records, which the load's upserts overwrite.
    fn empty(&self) -> Result<(), TargetError> {
        Ok(())
    }
    /// Resource counters of the server process, if bakeoff started it.
    fn resources(&self) -> Option<ProcSnapshot>;
    /// Writes what the page cache holds of the target's files to their
    /// device, around the measure job: what the load left is then not
    /// counted to it, and what the job left is. Stops between files once
    /// `stop` is set (Ctrl-C). Nothing for a server bakeoff did not start.
    fn flush_disk(&self, _stop: &std::sync::atomic::AtomicBool) {}
    /// The machine's CPU time now, every process's: read for every target,
    /// a server given by URL as much as one bakeoff started, since the
    /// server and bakeoff on one machine share its CPUs.
    fn machine(&self) -> Option<MachineTicks> {
        MachineTicks::read()
    }
    /// What the runner samples once a second: [`Target::resources`] and
    /// [`Target::machine`].
    fn readings(&self) -> Readings {
        Readings {
            process: self.resources(),
            machine: self.machine(),
        }
    }
    /// Kills (`kill`, `power-cut`) or stops (`restart`) the server and
    /// starts it again on its data; returns when the fault struck and how
    /// long until its own process held the port again. Only servers
    /// bakeoff started can; the plan refuses `--fault` for the others, so
    /// this default is not reached through it.
    fn fault(&self, kind: FaultKind) -> Result<FaultStruck, TargetError> {
        Err(TargetError::Client(format!(
            "--fault {}: bakeoff cannot fault this target",
            kind.name()
        )))
    }
    /// Why the server bakeoff started answers nothing though it runs (it
    /// is stopped: a SIGSTOP, or a debugger); `None` while it runs, and
    /// for targets bakeoff did not start. A run on a stalled server asks it
    /// nothing more after its measured phase.
    fn stalled(&self) -> Option<String> {
        None
    }

    /// Why the server bakeoff started is no longer running (how it exited,
    /// or the signal that killed it, and the end of its log); `None` while
    /// it runs, and for targets bakeoff did not start.
    fn gone(&self) -> Option<String> {
        None
    }
    /// What the link relay in front of the target did so far, when the
    /// workload has a link.
    fn link(&self) -> Option<LinkSample> {
        None
    }
    /// The server's clock, read now, if it tells the time (Redis `TIME`):
    /// what a synchronised start (`--start-at`) holds this machine's clock
    /// against.
    fn clock(&self) -> Option<std::io::Result<ClockReading>> {
        None
    }
    /// The server's own time per command, where the target reads it; else
    /// why not, where the report should say (memcached's stats keep none),
    /// or nothing (an in-process engine, whose operations have no round
    /// trip to split).
    fn server_time(&self) -> Observed<'_, dyn ServerTime + '_> {
        Err(None)
    }
    /// The engine's own background work, where the target reads it; else
    /// why not, where the report should say (LMDB has none), or nothing.
    fn background_work(&self) -> Observed<'_, dyn BackgroundWork + '_> {
        Err(None)
    }
    /// Asks the server to start background work now (`--provoke`): an
    /// act, not an observation, and asked of a server whose work bakeoff
    /// may not read (PostgreSQL's by URL). The plan refuses work a target
    /// does not declare it can be asked for, so this default is not
    /// reached through it.
    fn provoke(&self, work: Work) -> Result<(), TargetError> {
        Err(TargetError::Client(format!(
            "--provoke {}: bakeoff cannot ask this target for it",
            work.name()
        )))
    }
    /// The target's nodes, when it is made of several servers (shards, a
    /// primary and its replica, a cluster); `None` for one server.
    fn several(&self) -> Option<&dyn Nodes> {
        None
    }
}

/// An observation a target may offer ([`Target::server_time`],
/// [`Target::background_work`]): the capability, or why the target does
/// not offer it (`None`: nothing worth saying). Each optional observation
/// is a trait of its own, so a new one adds nothing to the targets that
/// lack it but what [`Target`]'s default says.
pub type Observed<'a, T> = Result<&'a T, Option<&'static str>>;

/// The server's own time in the commands it ran.
pub trait ServerTime {
    /// The time per command so far, cumulative (Redis: `INFO
    /// commandstats`), and where it comes from; `None` when it could not
    /// be read now.
    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)>;
    /// Why there are none where [`ServerTime::command_times`] gives none
    /// though the server can time its commands (MariaDB with
    /// performance_schema off), for the report.
    fn untimed(&self) -> Option<&'static str> {
        None
    }
}

/// The engine's own work besides serving (checkpoints, compactions,
/// forks).
pub trait BackgroundWork {
    /// Where the engine tells of it, and how often to look.
    fn source(&self) -> (&'static str, Duration);
    /// One look; `None` when it did not answer.
    fn look(&self) -> Option<BackgroundLook>;
}

/// A target made of several servers.
pub trait Nodes {
    /// The nodes' addresses, in the order of the client's per-node counts.
    fn nodes(&self) -> Vec<String>;
    /// Each node's counters compared with the requests sent to it
    /// (`sent[i]` for node `i`, all phases).
    fn node_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &[[u64; OP_KINDS]],
    ) -> Vec<CounterCheck>;
    /// Records the replica of a primary-replica target holds, if it is one.
    fn replica_records(&self) -> Option<u64> {
        None
    }
}

/// One command's calls and time inside the server, cumulative since it
/// started (see [`ServerTime::command_times`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandTime {
    /// The server's name of the command.
    pub command: String,
    /// The operations of bakeoff's the command serves.
    pub kinds: &'static [OpKind],
    /// Calls so far.
    pub calls: u64,
    /// Time spent in them so far, µs.
    pub usec: u64,
    /// Time the operations spend outside any one command's own (the
    /// commits' WAL write and flush), its calls the operations': a part of
    /// their time inside the server, not a round trip of its own.
    pub apart: bool,
    /// The server's distribution of the calls' times so far, where it
    /// keeps one (Redis's `LATENCY HISTOGRAM`): (a bucket's upper bound,
    /// µs; the calls at or under it), bounds rising; empty otherwise.
    pub histogram_usec: Vec<(u64, u64)>,
}

/// What an engine does besides serving, as one look sees it (see
/// [`BackgroundWork::look`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BackgroundLook {
    /// The work running at the look: its name and what it has done so far.
    pub running: Vec<(&'static str, String)>,
    /// Work of each name finished since the engine started, and what the
    /// latest did: a count that grew while the work was not seen running
    /// ran between two looks (a mark on the timeline).
    pub finished: Vec<(&'static str, u64, String)>,
    /// Work the engine logged since the last look, with its own times.
    pub logged: Vec<LoggedWork>,
}

/// The name of background work during which the engine stops writes
/// (RocksDB, compaction behind): the run's writes wait on it.
pub const WRITE_STOP: &str = "write stop";
/// The name of background work during which the engine slows writes down
/// (RocksDB's delayed write rate).
pub const WRITE_DELAY: &str = "write delay";

/// Background work an engine logged, with its times.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedWork {
    /// Its name (`checkpoint`).
    pub what: &'static str,
    /// When it started.
    pub from: SystemTime,
    /// When it ended; `None` while it runs.
    pub to: Option<SystemTime>,
    /// What it did.
    pub detail: String,
}

/// Opens targets; implemented by the driver registry.
pub trait TargetOpener {
    /// Checks, without starting anything lasting, that `spec` can be used
    /// (binary on PATH, endpoint answers, password accepted). The message
    /// says what is wrong and how to fix it.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError>;
    /// Every declared setting of `spec` as a run of `plan` uses it (set,
    /// else its default), for the result file; empty for an external
    /// target, whose settings are its own.
    fn declared_settings(&self, _spec: &TargetSpec, _plan: &Plan) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    /// What the settings `spec` runs with in `plan` promise acknowledged
    /// writes survive, as the target declares; `None` for an external
    /// target, whose settings are its own.
    fn durable_to(&self, _spec: &TargetSpec, _plan: &Plan) -> Option<crate::durability::DurableTo> {
        None
    }
    /// Opens `spec` for one run of `workload` (a point of `plan`).
    fn open(
        &self,
        spec: &TargetSpec,
        plan: &Plan,
        workload: &Workload,
    ) -> Result<Box<dyn Target>, TargetError>;
}

//! A primary and its replica: the replica catches up after the load
//! before the warm-up, reads are checked against acknowledged writes
//! (stale reads), and after the run the replica's lag and record count
//! are checked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::plan::{Topology, Workload};
use crate::result::{ReplicaCheck, RunResult};

use super::super::job::{JobOutcome, Observer};
use super::{Extra, Stage};
use crate::target::Target;

/// Longest wait for a replica to catch up after a run: the wait ends as
/// soon as it has, and a replica that was paused, applying on one thread
/// on a machine busy with other work, was seen taking more than 10 s.
const REPLICA_CATCH_UP: Duration = Duration::from_secs(60);

/// Longest wait for a replica to catch up after the load: a replica
/// applying on one thread (MariaDB's) trails a load of 100000 rows by
/// tens of MiB here.
const REPLICA_CATCH_UP_AFTER_LOAD: Duration = Duration::from_secs(60);

/// What a replication run's measure job checks its reads against: the
/// versions of the writes acknowledged, made for a primary-replica run.
pub(super) fn acked_versions(workload: &Workload) -> Option<crate::stale::AckedVersions> {
    (workload.topology == Topology::PrimaryReplica)
        .then(|| crate::stale::AckedVersions::new(workload.records))
}

/// The replication check of one run (the measure job checks reads
/// against the writes acknowledged: `JobInputs::acked`).
#[derive(Default)]
pub(super) struct Replication {
    /// Seconds the replica took to catch up with the load.
    after_load: Option<f64>,
}

/// Seconds until the replica's lag is 0, waiting at most `limit` (or
/// until `stop`); `None` if it was not.
fn replica_caught_up(target: &dyn Target, limit: Duration, stop: &AtomicBool) -> Option<f64> {
    let start = Instant::now();
    while start.elapsed() < limit && !stop.load(Ordering::Relaxed) {
        if target.resources().and_then(|s| s.replication_lag_bytes) == Some(0) {
            return Some(start.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

impl Extra for Replication {
    fn loaded(&mut self, stage: &Stage, _run: &mut RunResult) {
        self.after_load =
            replica_caught_up(stage.target, REPLICA_CATCH_UP_AFTER_LOAD, stage.inputs.stop);
    }

    fn measured(
        &mut self,
        _stage: &Stage,
        outcome: &mut JobOutcome,
        _load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        run.measure.stale_reads = Some(outcome.phases[1].stale_reads);
        Ok(())
    }

    /// After the run: how long the replica took to catch up, and the
    /// records the primary and the replica then hold.
    fn check(
        &mut self,
        stage: &Stage,
        run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), String> {
        let target = stage.target;
        run.checks.replica = Some(ReplicaCheck {
            caught_up_after_load_s: self.after_load,
            caught_up_after_s: replica_caught_up(target, REPLICA_CATCH_UP, stage.inputs.stop),
            primary_records: target.record_count(),
            replica_records: target.several().and_then(|s| s.replica_records()),
        });
        Ok(())
    }
}

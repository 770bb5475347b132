//! Disk per write: the block device under the target's data over the
//! measure job (its warm-up and measured phase, and the flush of what they
//! left in the page cache), less what it wrote while the target sat idle
//! just before, and the server's own counters beside it, set against the
//! writes of the job.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::disk::{DiskPerWrite, DiskReading, IdleBaseline};
use crate::readings::{DeviceCounters, ProcessWrites};
use crate::result::{PhaseResult, RunResult};
use crate::target::Target;

use super::super::job::{JobOutcome, Observer};
use super::{Extra, Stage};

/// The longest idle time taken before a measured phase, however long the
/// phase: a rate is a rate.
const IDLE_MAX: Duration = Duration::from_secs(5);
/// The shortest: a device that wrote nothing at all in it is quiet.
const IDLE_QUIET: Duration = Duration::from_millis(500);

/// The readings at the edges of the measured window.
#[derive(Default)]
pub(super) struct Disk {
    idle: Option<IdleBaseline>,
    before: Option<DiskReading>,
    after: Option<DiskReading>,
}

/// The target's counters and everyone's writes now.
fn reading(target: &dyn Target) -> Option<DiskReading> {
    let target = target.resources()?;
    Some(DiskReading {
        target,
        everyone: ProcessWrites::read(),
        at_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
    })
}

/// Sits idle for as long as the measure job will last (at most
/// `IDLE_MAX`; `IDLE_QUIET` when the device wrote nothing in that
/// long), reading the device at both ends; stops early when the run is.
fn idle_baseline(stage: &Stage, first: DeviceCounters) -> Option<IdleBaseline> {
    let w = stage.workload();
    let planned = w.duration_s.unwrap_or(1.0) + w.warmup_s;
    let want = Duration::from_secs_f64(planned.max(0.0)).clamp(IDLE_QUIET, IDLE_MAX);
    let start = Instant::now();
    let read = || stage.target.resources()?.device;
    idle_until(start + IDLE_QUIET, stage.inputs.stop)?;
    let quiet = read()?;
    let after = if quiet.written_bytes == first.written_bytes && quiet.writes == first.writes {
        quiet
    } else {
        idle_until(start + want, stage.inputs.stop)?;
        read()?
    };
    Some(IdleBaseline {
        seconds: start.elapsed().as_secs_f64(),
        before: first,
        after,
    })
}

/// Waits until `deadline`, or `None` as soon as the run is stopped
/// (looked at every 50 ms: Ctrl-C is not held by the idle time).
fn idle_until(deadline: Instant, stop: &std::sync::atomic::AtomicBool) -> Option<()> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Some(());
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

impl Extra for Disk {
    fn before_measure(
        &mut self,
        stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), crate::error::RunError> {
        // What the load left in the page cache goes to the disk now, not
        // in the measured phase (nothing for a target of no files here).
        stage.target.flush_disk(stage.inputs.stop);
        if let Some(first) = stage.target.resources().and_then(|r| r.device) {
            self.idle = idle_baseline(stage, first);
        }
        self.before = reading(stage.target);
        Ok(())
    }

    fn measured(
        &mut self,
        stage: &Stage,
        _outcome: &mut JobOutcome,
        _load_s: f64,
        _run: &mut RunResult,
    ) -> Result<(), String> {
        if self.before.is_some() && !stage.inputs.stop.load(Ordering::Relaxed) {
            // What the job's writes left in the page cache is theirs too:
            // a store that writes without fsync is not free of the disk
            // because the kernel writes its pages back later.
            stage.target.flush_disk(stage.inputs.stop);
            self.after = reading(stage.target);
        }
        Ok(())
    }

    fn check(
        &mut self,
        stage: &Stage,
        run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), String> {
        if let (Some(b), Some(a)) = (self.before.as_ref(), self.after.as_ref()) {
            let w = stage.workload();
            let value_bytes = w.replay.is_none().then(|| w.value_size.mean());
            let phases: Vec<&PhaseResult> = run.warmup.iter().chain([&run.measure]).collect();
            run.disk = DiskPerWrite::between(
                b,
                a,
                self.idle.as_ref(),
                &phases,
                value_bytes,
                run.fault.is_some(),
            );
        }
        Ok(())
    }
}

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

impl Disk {
    fn read(&self, target: &dyn Target) -> Option<DiskReading> {
        let target = target.resources()?;
        Some(DiskReading {
            target,
            everyone: ProcessWrites::read(),
            at_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        })
    }
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
    let mut last = first.clone();
    while start.elapsed() < want {
        if stage.ctx.stop.load(Ordering::Relaxed) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50).min(want.saturating_sub(start.elapsed())));
        if start.elapsed() >= IDLE_QUIET {
            last = read()?;
            if last.written_bytes == first.written_bytes && last.writes == first.writes {
                break;
            }
        }
    }
    let after = read().unwrap_or(last);
    Some(IdleBaseline {
        seconds: start.elapsed().as_secs_f64(),
        before: first,
        after,
    })
}

impl Extra for Disk {
    fn before_measure(
        &mut self,
        stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), crate::error::RunError> {
        if stage.target.resources().and_then(|r| r.device).is_some() {
            // What the load left in the page cache goes to the disk now,
            // not in the measured phase.
            stage.target.flush_disk(stage.ctx.stop);
            if let Some(first) = stage.target.resources().and_then(|r| r.device) {
                self.idle = idle_baseline(stage, first);
            }
        }
        self.before = self.read(stage.target);
        Ok(())
    }

    fn measured(
        &mut self,
        stage: &Stage,
        _outcome: &mut JobOutcome,
        _load_s: f64,
        _run: &mut RunResult,
    ) -> Result<(), String> {
        if self.before.is_some() && !stage.ctx.stop.load(Ordering::Relaxed) {
            // What the job's writes left in the page cache is theirs too:
            // a store that writes without fsync is not free of the disk
            // because the kernel writes its pages back later.
            stage.target.flush_disk(stage.ctx.stop);
            self.after = self.read(stage.target);
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

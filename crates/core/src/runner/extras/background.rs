//! The engine's work besides serving, on the run's timeline: a target
//! that tells of it (Redis's forks and saves, PostgreSQL's checkpoints and
//! autovacuum in its log, RocksDB's compactions and flushes) is looked at
//! while the measure job runs, as often as it asks; each piece of work
//! becomes a band from when it was first seen running to when it was no
//! longer (or the engine's own times, from its log), and work seen only
//! as finished between two looks a mark. The measured seconds any band
//! overlaps are then set beside the others: the tail inside the work and
//! outside it.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use crate::recorder::new_histogram;
use crate::result::{
    decode_histogram, encode_histogram, BackgroundBand, BackgroundWork, Phase, RunResult,
    SecondsLatency,
};
use crate::target::{BackgroundLook, Target};

use super::super::job::JobOutcome;
use super::{Extra, Stage};

/// Looks at the engine's background work while the measure job runs.
pub(super) struct Background {
    /// Where the looks come from, or why there are none.
    source: &'static str,
    /// How often to look; `None` where the engine tells nothing.
    every: Option<Duration>,
    /// The next look, seconds since the job's start.
    next_s: f64,
    /// The run was interrupted: no more looks.
    interrupted: bool,
    tracker: Tracker,
    /// Each measured second's latency (encoded: a run of an hour keeps
    /// 3,600 of them), for the tail inside and outside the bands.
    seconds: Vec<(u32, String)>,
}

/// One look at the engine's background work, where the target reads it.
fn look(target: &dyn Target) -> Option<crate::target::BackgroundLook> {
    target.background_work().ok()?.look()
}

impl Background {
    /// The extra, for a target that tells of its background work or says
    /// why it does not.
    pub fn of(target: &dyn Target) -> Option<Self> {
        let (source, every) = match target.background_work() {
            Ok(work) => {
                let (source, every) = work.source();
                (source, Some(every))
            }
            Err(why) => (why?, None),
        };
        Some(Background {
            source,
            every,
            next_s: 0.0,
            interrupted: false,
            tracker: Tracker::default(),
            seconds: Vec::new(),
        })
    }
}

impl Extra for Background {
    fn due_s(&self) -> Option<f64> {
        self.every
            .filter(|_| !self.interrupted)
            .map(|_| self.next_s)
    }

    fn at(&mut self, stage: &Stage, t_s: f64) {
        let Some(every) = self.every else { return };
        // Interrupted: the user wants out, and asks the server nothing
        // more (it may be why).
        if stopping(stage) {
            self.interrupted = true;
            return;
        }
        self.next_s = t_s + every.as_secs_f64();
        // A stalled server would hold the thread that collects the run
        // for the look's whole timeout, every look.
        if stage.target.stalled().is_some() {
            return;
        }
        // The job's start on the wall clock, for the engine's own times.
        let t0 = SystemTime::now() - Duration::from_secs_f64(t_s);
        if let Some(look) = look(stage.target) {
            self.tracker.look(t_s, t0, look);
        }
    }

    fn second(&mut self, second: u32, phase: Phase, latency: &Histogram<u64>) {
        if self.every.is_some() && phase == Phase::Measure && !latency.is_empty() {
            self.seconds.push((second, encode_histogram(latency)));
        }
    }

    fn measured(
        &mut self,
        stage: &Stage,
        outcome: &mut JobOutcome,
        load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        let Some(every) = self.every else {
            run.background = Some(BackgroundWork {
                source: self.source.to_string(),
                ..BackgroundWork::default()
            });
            return Ok(());
        };
        // A last look, for work that ended after the one before.
        let end_s = outcome
            .timeline
            .last()
            .map_or(self.next_s, |p| p.t_s as f64 + 1.0)
            .max(self.tracker.last_s);
        let t0 = SystemTime::now() - Duration::from_secs_f64(end_s);
        if let Some(look) = (!stopping(stage)).then(|| look(stage.target)).flatten() {
            self.tracker.look(end_s, t0, look);
        }
        let bands = std::mem::take(&mut self.tracker).finish(end_s);
        // Where the measured phase ended on the job's clock.
        let end_s = outcome
            .timeline
            .iter()
            .find(|p| p.phase == Phase::Measure)
            .map_or(f64::INFINITY, |p| p.t_s as f64 + run.measure.duration_s);
        let (inside, outside) = split_seconds(&self.seconds, &bands, end_s);
        run.background = Some(BackgroundWork {
            source: self.source.to_string(),
            every_ms: every.as_millis() as u32,
            bands: bands
                .into_iter()
                .map(|mut b| {
                    // On the run's timeline, which counts the load's seconds.
                    b.from_s += load_s;
                    b.to_s += load_s;
                    b
                })
                .collect(),
            inside,
            outside,
        });
        Ok(())
    }
}

/// Whether the run was interrupted (Ctrl-C, SIGTERM).
fn stopping(stage: &Stage) -> bool {
    stage.inputs.stop.load(std::sync::atomic::Ordering::Relaxed)
}

/// Work seen running and not yet ended.
#[derive(Debug)]
struct Open {
    what: &'static str,
    from_s: f64,
    detail: String,
    /// What the engine said of it as finished while it was still seen
    /// running, for its band's detail.
    finished: String,
    /// From the engine's log (its end will be logged too).
    logged: bool,
}

impl Open {
    fn band(self, to_s: f64, more: &str) -> BackgroundBand {
        BackgroundBand {
            what: self.what.into(),
            from_s: self.from_s,
            to_s: to_s.max(self.from_s),
            detail: join(&join(&self.detail, &self.finished), more),
            exact: false,
        }
    }
}

/// Turns looks into bands (seconds since the job's start).
#[derive(Debug, Default)]
struct Tracker {
    open: Vec<Open>,
    /// Finished work per name at the last look.
    finished: BTreeMap<&'static str, u64>,
    bands: Vec<BackgroundBand>,
    looked: bool,
    last_s: f64,
}

impl Tracker {
    /// One look at `t_s`, the job having started at `t0` on the wall clock.
    fn look(&mut self, t_s: f64, t0: SystemTime, look: BackgroundLook) {
        let secs = |w: SystemTime| match w.duration_since(t0) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        };
        for l in look.logged {
            let started = self.open.iter().position(|o| o.logged && o.what == l.what);
            match l.to {
                None if started.is_none() => self.open.push(Open {
                    what: l.what,
                    from_s: secs(l.from),
                    detail: l.detail,
                    finished: String::new(),
                    logged: true,
                }),
                None => {}
                Some(to) => {
                    // Its start as logged when it was, else as its end tells.
                    let from_s = started.map_or(secs(l.from), |i| self.open.remove(i).from_s);
                    self.bands.push(BackgroundBand {
                        what: l.what.into(),
                        from_s,
                        to_s: secs(to),
                        detail: l.detail,
                        exact: true,
                    });
                }
            }
        }
        // Work no longer running ended at this look.
        let mut ended: Vec<&'static str> = Vec::new();
        let mut i = 0;
        while i < self.open.len() {
            let o = &self.open[i];
            if o.logged || look.running.iter().any(|(w, _)| *w == o.what) {
                i += 1;
                continue;
            }
            let o = self.open.remove(i);
            ended.push(o.what);
            self.bands.push(o.band(t_s, ""));
        }
        for (what, detail) in look.running {
            match self.open.iter_mut().find(|o| !o.logged && o.what == what) {
                Some(o) => o.detail = detail,
                None => self.open.push(Open {
                    what,
                    from_s: t_s,
                    detail,
                    finished: String::new(),
                    logged: false,
                }),
            }
        }
        for (what, count, detail) in look.finished {
            let before = self.finished.insert(what, count);
            let new = match before {
                Some(b) if self.looked => count.saturating_sub(b),
                _ => 0,
            };
            if new == 0 {
                continue;
            }
            // Seen running: what it did goes with its band.
            if let Some(o) = self.open.iter_mut().find(|o| o.what == what) {
                o.finished = detail;
                continue;
            }
            if ended.contains(&what) {
                if let Some(b) = self.bands.iter_mut().rev().find(|b| b.what == what) {
                    b.detail = join(&b.detail, &detail);
                }
                continue;
            }
            let detail = if new > 1 {
                join(
                    &format!("{new} between two looks"),
                    &format!("the latest: {detail}"),
                )
            } else {
                detail
            };
            self.bands.push(BackgroundBand {
                what: what.into(),
                from_s: t_s,
                to_s: t_s,
                detail,
                exact: false,
            });
        }
        self.looked = true;
        self.last_s = t_s;
    }

    /// The bands, in the order they started, with the work still running
    /// at `end_s` ended there.
    fn finish(mut self, end_s: f64) -> Vec<BackgroundBand> {
        for o in std::mem::take(&mut self.open) {
            self.bands
                .push(o.band(end_s, "still running as the job ended"));
        }
        self.bands.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
        self.bands
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}; {b}"),
    }
}

/// The measured seconds that any band overlaps, merged, and the others
/// (`seconds`: each second's index and encoded latency); a second the
/// measured phase ended partway through (`end_s`) counts on neither side,
/// as it holds only part of a second's work.
fn split_seconds(
    seconds: &[(u32, String)],
    bands: &[BackgroundBand],
    end_s: f64,
) -> (Option<SecondsLatency>, Option<SecondsLatency>) {
    let (mut inside, mut outside) = ((new_histogram(), 0), (new_histogram(), 0));
    for (s, hdr) in seconds {
        let (from, to) = (*s as f64, *s as f64 + 1.0);
        if to > end_s + 0.02 {
            continue;
        }
        let touched = bands.iter().any(|b| b.from_s < to && b.to_s >= from);
        let Ok(h) = decode_histogram(hdr) else {
            continue;
        };
        let into = if touched { &mut inside } else { &mut outside };
        let _ = into.0.add(&h);
        into.1 += 1;
    }
    let summary = |(h, n): (Histogram<u64>, u32)| {
        (n > 0 && !h.is_empty()).then(|| SecondsLatency {
            seconds: n,
            count: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
        })
    };
    (summary(inside), summary(outside))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::LoggedWork;

    fn look(running: &[(&'static str, &str)], finished: &[(&'static str, u64)]) -> BackgroundLook {
        BackgroundLook {
            running: running.iter().map(|(w, d)| (*w, d.to_string())).collect(),
            finished: finished
                .iter()
                .map(|(w, n)| (*w, *n, format!("{w} done")))
                .collect(),
            logged: Vec::new(),
        }
    }

    /// Work seen running is a band from its first look to the look that
    /// no longer saw it; work seen only as finished is a mark; what ran
    /// before the first look is not counted as new.
    #[test]
    fn looks_become_bands_and_marks() {
        let t0 = SystemTime::UNIX_EPOCH;
        let mut t = Tracker::default();
        t.look(0.0, t0, look(&[], &[("fork", 3), ("bgsave", 1)]));
        t.look(
            0.1,
            t0,
            look(&[("bgsave", "0 s")], &[("fork", 4), ("bgsave", 1)]),
        );
        // Counted as finished one look before it is no longer running.
        t.look(
            0.2,
            t0,
            look(&[("bgsave", "1 s")], &[("fork", 4), ("bgsave", 2)]),
        );
        t.look(0.3, t0, look(&[], &[("fork", 4), ("bgsave", 2)]));
        t.look(0.4, t0, look(&[], &[("fork", 6), ("bgsave", 2)]));
        t.look(0.5, t0, look(&[("compaction", "1 running")], &[]));
        let bands = t.finish(0.7);
        let got: Vec<(&str, f64, f64, &str)> = bands
            .iter()
            .map(|b| (b.what.as_str(), b.from_s, b.to_s, b.detail.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("fork", 0.1, 0.1, "fork done"),
                ("bgsave", 0.1, 0.3, "1 s; bgsave done"),
                (
                    "fork",
                    0.4,
                    0.4,
                    "2 between two looks; the latest: fork done"
                ),
                (
                    "compaction",
                    0.5,
                    0.7,
                    "1 running; still running as the job ended"
                ),
            ]
        );
    }

    /// Logged work keeps the engine's own times: a start logged first is
    /// the band's start when its end is logged.
    #[test]
    fn logged_work_keeps_its_own_times() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut t = Tracker::default();
        let logged = |from: f64, to: Option<f64>, detail: &str| LoggedWork {
            what: "checkpoint",
            from: at(from),
            to: to.map(at),
            detail: detail.into(),
        };
        t.look(
            1.0,
            t0,
            BackgroundLook {
                logged: vec![logged(0.25, None, "starting: immediate")],
                ..Default::default()
            },
        );
        t.look(2.0, t0, BackgroundLook::default());
        t.look(
            3.0,
            t0,
            BackgroundLook {
                logged: vec![logged(2.0, Some(2.5), "wrote 10 buffers")],
                ..Default::default()
            },
        );
        let bands = t.finish(4.0);
        assert_eq!(bands.len(), 1);
        let b = &bands[0];
        assert_eq!((b.from_s, b.to_s, b.exact), (0.25, 2.5, true));
        assert_eq!(b.detail, "wrote 10 buffers");
    }

    /// The tail of the seconds a band overlaps, apart from the others'.
    #[test]
    fn seconds_inside_and_outside_the_bands() {
        let second = |ns: u64| {
            let mut h = new_histogram();
            h.record_n(ns, 100).unwrap();
            encode_histogram(&h)
        };
        let seconds = vec![
            (0, second(1_000)),
            (1, second(50_000)),
            (2, second(1_000)),
            (3, second(2_000)),
        ];
        let band = |from_s: f64, to_s: f64| BackgroundBand {
            what: "checkpoint".into(),
            from_s,
            to_s,
            ..Default::default()
        };
        let bands = [band(1.2, 1.8), band(3.0, 3.0)];
        let (inside, outside) = split_seconds(&seconds, &bands, 4.0);
        let (inside, outside) = (inside.unwrap(), outside.unwrap());
        assert_eq!((inside.seconds, inside.count), (2, 200));
        assert!(inside.p99_ns >= 49_000, "{inside:?}");
        assert_eq!((outside.seconds, outside.count), (2, 200));
        assert!(outside.p99_ns <= 1_001, "{outside:?}");
        // A measured phase that ended halfway through second 3: that
        // second holds half a second's work and counts on neither side.
        let (inside, _) = split_seconds(&seconds, &bands, 3.5);
        assert_eq!(inside.unwrap().seconds, 1);
    }
}

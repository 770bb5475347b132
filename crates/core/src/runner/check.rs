//! The durability check after a run: every id the writers attempted is
//! read back (with a few past each writer's last, to catch writes nobody
//! made), read again while a read gets no definite answer, and set against
//! the writers' log ([`crate::durability::classify`]).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::job::{run_job, Observer};
use crate::driver::JobInputs;
use crate::driver::JobKind;
use crate::durability::{classify, DurabilityCheck, ReadBack, Stored, WriteId, WriteLog};
use crate::error::TargetError;
use crate::target::Target;

/// Ids read past each writer's last attempted one: a value there is a
/// write no writer made.
const PROBES: u64 = 4;

/// Reads of an id that got no definite answer before it counts as unread.
const TRIES: usize = 3;

/// Pause between tries, for a server still coming back.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long the check waits for a server that refuses connections, or
/// says it is still starting (PostgreSQL replaying its WAL after a power
/// cut on a cold cache), before it gives up.
const COME_BACK_WITHIN: Duration = Duration::from_secs(60);

/// Calls `job` until it gets past connecting: a connection error is tried
/// again after `pause` until `within` has passed or `stop` is set; any
/// other outcome (and the last connection error) is returned.
fn past_connecting<T>(
    within: Duration,
    pause: Duration,
    stop: &AtomicBool,
    mut job: impl FnMut() -> Result<T, TargetError>,
) -> Result<T, TargetError> {
    let deadline = Instant::now() + within;
    loop {
        match job() {
            Err(TargetError::Connect(_))
                if Instant::now() + pause < deadline && !stop.load(Ordering::Relaxed) =>
            {
                std::thread::sleep(pause)
            }
            outcome => return outcome,
        }
    }
}

/// How long a read-back goes on once the run has been told to stop
/// (Ctrl-C, SIGTERM): long enough for the reads of a short run to finish,
/// short enough that the stop is not ignored. A second signal exits at
/// once.
const READ_ON_AFTER_STOP: Duration = Duration::from_secs(10);

/// A stop flag of the read-back's own: set once `outer` has been set for
/// `grace`, or never while `outer` stays clear. The read-back must not
/// inherit the run's flag as it is: a run stopped by Ctrl-C would read
/// nothing back, and every write it did not read would look lost.
struct GraceStop<'a> {
    outer: &'a AtomicBool,
    grace: Duration,
    own: AtomicBool,
    done: AtomicBool,
}

impl<'a> GraceStop<'a> {
    fn new(outer: &'a AtomicBool, grace: Duration) -> Self {
        GraceStop {
            outer,
            grace,
            own: AtomicBool::new(false),
            done: AtomicBool::new(false),
        }
    }

    /// Watches `outer` until [`GraceStop::finish`]; sets the own flag
    /// `grace` after `outer` was first seen set.
    fn watch(&self) {
        let mut seen_at: Option<Instant> = None;
        while !self.done.load(Ordering::Relaxed) {
            if self.outer.load(Ordering::Relaxed) {
                let at = *seen_at.get_or_insert_with(Instant::now);
                if at.elapsed() >= self.grace {
                    self.own.store(true, Ordering::Relaxed);
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Reads back every id in `log` from `target` and classifies the run, its
/// fault (or its end) at `fault_ns` ns since the measure job's start. Ids
/// the read-back did not get to (the run stopped, and the grace after it
/// ran out) count as unread, never as lost.
pub(super) fn read_back(
    target: &dyn Target,
    inputs: JobInputs,
    log: &WriteLog,
    fault_ns: u64,
    observer: &mut dyn Observer,
) -> Result<DurabilityCheck, TargetError> {
    let stop = GraceStop::new(inputs.stop, READ_ON_AFTER_STOP);
    std::thread::scope(|s| {
        s.spawn(|| stop.watch());
        let checked = read_back_until(target, inputs, log, fault_ns, observer, &stop.own);
        stop.finish();
        checked
    })
}

fn read_back_until(
    target: &dyn Target,
    inputs: JobInputs,
    log: &WriteLog,
    fault_ns: u64,
    observer: &mut dyn Observer,
    stop: &AtomicBool,
) -> Result<DurabilityCheck, TargetError> {
    let mut ids: Vec<u64> = log.ids().map(WriteId::record).collect();
    for (&writer, &seq) in &log.last_seq() {
        ids.extend((1..=PROBES).map(|k| {
            WriteId {
                writer,
                seq: seq + k,
            }
            .record()
        }));
    }
    let mut stored = Stored::default();
    for attempt in 0..TRIES {
        if ids.is_empty() || stop.load(Ordering::Relaxed) {
            break;
        }
        if attempt > 0 {
            std::thread::sleep(RETRY_AFTER);
        }
        let inputs = inputs.for_read_back(&ids, stop);
        let seen = past_connecting(COME_BACK_WITHIN, RETRY_AFTER, stop, || {
            run_job(
                target.driver(),
                JobKind::ReadBack,
                inputs,
                &mut crate::readings::Readings::default,
                &mut super::job::NothingDuring,
                observer,
            )
        })?
        .durability
        .unwrap_or_default();
        let mut answered = BTreeSet::new();
        for (id, read) in seen.found {
            answered.insert(id.record());
            if log.contains(id) {
                stored.found.insert(id, read);
            } else if read != ReadBack::Absent {
                stored.unexpected.insert(id);
            }
        }
        for id in seen.foreign {
            answered.insert(id.record());
            // A value another run left: not this run's write.
            stored.unexpected.insert(id);
            if log.contains(id) {
                stored.found.insert(id, ReadBack::Absent);
            }
        }
        // Read again: what got no definite answer, and what a stopped
        // read-back never asked for.
        ids.retain(|id| !answered.contains(id));
    }
    stored.unread = unread(ids, log);
    Ok(classify(log, &stored, fault_ns))
}

/// The attempted writes among `ids`, the records nothing answered for.
fn unread(ids: Vec<u64>, log: &WriteLog) -> BTreeSet<WriteId> {
    ids.into_iter()
        .filter_map(WriteId::of_record)
        .filter(|id| log.contains(*id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ConnectError;
    use crate::recorder::ErrorKind;

    fn starting_up() -> TargetError {
        ConnectError::new(ErrorKind::ServerError, "the database system is starting up").into()
    }

    #[test]
    fn a_server_still_starting_is_waited_for() {
        let mut calls = 0;
        let outcome = past_connecting(
            Duration::from_secs(5),
            Duration::from_millis(1),
            &AtomicBool::new(false),
            || {
                calls += 1;
                if calls < 4 {
                    Err(starting_up())
                } else {
                    Ok(calls)
                }
            },
        );
        assert_eq!(outcome.unwrap(), 4);
    }

    #[test]
    fn a_server_that_never_comes_back_fails_after_the_deadline() {
        let start = Instant::now();
        let mut calls = 0;
        let outcome: Result<(), _> = past_connecting(
            Duration::from_millis(50),
            Duration::from_millis(10),
            &AtomicBool::new(false),
            || {
                calls += 1;
                Err(starting_up())
            },
        );
        assert!(matches!(outcome, Err(TargetError::Connect(_))));
        assert!(calls >= 2, "{calls}");
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    /// A stopped read-back waits no longer for a server that is not back.
    #[test]
    fn a_stop_ends_the_wait_for_a_server() {
        let stop = AtomicBool::new(true);
        let mut calls = 0;
        let outcome: Result<(), _> = past_connecting(
            Duration::from_secs(60),
            Duration::from_millis(1),
            &stop,
            || {
                calls += 1;
                Err(starting_up())
            },
        );
        assert!(matches!(outcome, Err(TargetError::Connect(_))));
        assert_eq!(calls, 1);
    }

    #[test]
    fn other_errors_are_not_retried() {
        let mut calls = 0;
        let outcome: Result<(), _> = past_connecting(
            Duration::from_secs(5),
            Duration::from_millis(1),
            &AtomicBool::new(false),
            || {
                calls += 1;
                Err(TargetError::Server("no table".into()))
            },
        );
        assert!(matches!(outcome, Err(TargetError::Server(_))));
        assert_eq!(calls, 1);
    }
}

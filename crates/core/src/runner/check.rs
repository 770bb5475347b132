//! The durability check after a run: every id the writers attempted is
//! read back (with a few past each writer's last, to catch writes nobody
//! made), read again while a read gets no definite answer, and set against
//! the writers' log ([`crate::durability::classify`]).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::{run_job, JobContext, Observer, Target};
use crate::driver::JobKind;
use crate::durability::{classify, DurabilityCheck, ReadBack, Stored, WriteId, WriteLog};
use crate::error::TargetError;

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
/// again after `pause` until `within` has passed; any other outcome (and
/// the last connection error) is returned.
fn past_connecting<T>(
    within: Duration,
    pause: Duration,
    mut job: impl FnMut() -> Result<T, TargetError>,
) -> Result<T, TargetError> {
    let deadline = Instant::now() + within;
    loop {
        match job() {
            Err(TargetError::Connect(_)) if Instant::now() + pause < deadline => {
                std::thread::sleep(pause)
            }
            outcome => return outcome,
        }
    }
}

/// Reads back every id in `log` from `target` and classifies the run, its
/// fault (or its end) at `fault_ns` ns since the measure job's start.
pub(super) fn read_back(
    target: &dyn Target,
    ctx: &JobContext,
    log: &WriteLog,
    fault_ns: u64,
    observer: &mut dyn Observer,
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
        if ids.is_empty() {
            break;
        }
        if attempt > 0 {
            std::thread::sleep(RETRY_AFTER);
        }
        let job = JobContext {
            fault: None,
            read_back: &ids,
            acked: None,
            ..*ctx
        };
        let seen = past_connecting(COME_BACK_WITHIN, RETRY_AFTER, || {
            run_job(
                target.driver(),
                JobKind::ReadBack,
                &job,
                &mut || None,
                observer,
            )
        })?
        .durability
        .unwrap_or_default();
        for (id, read) in seen.found {
            if log.contains(id) {
                stored.found.insert(id, read);
            } else if read != ReadBack::Absent {
                stored.unexpected.insert(id);
            }
        }
        for id in seen.foreign {
            // A value another run left: not this run's write.
            stored.unexpected.insert(id);
            if log.contains(id) {
                stored.found.insert(id, ReadBack::Absent);
            }
        }
        ids = seen.unanswered;
    }
    stored.unread = ids
        .into_iter()
        .filter_map(WriteId::of_record)
        .filter(|id| log.contains(*id))
        .collect::<BTreeSet<_>>();
    Ok(classify(log, &stored, fault_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::ErrorKind;
    use crate::session::ConnectError;

    fn starting_up() -> TargetError {
        ConnectError::new(ErrorKind::ServerError, "the database system is starting up").into()
    }

    #[test]
    fn a_server_still_starting_is_waited_for() {
        let mut calls = 0;
        let outcome = past_connecting(Duration::from_secs(5), Duration::from_millis(1), || {
            calls += 1;
            if calls < 4 {
                Err(starting_up())
            } else {
                Ok(calls)
            }
        });
        assert_eq!(outcome.unwrap(), 4);
    }

    #[test]
    fn a_server_that_never_comes_back_fails_after_the_deadline() {
        let start = Instant::now();
        let mut calls = 0;
        let outcome: Result<(), _> =
            past_connecting(Duration::from_millis(50), Duration::from_millis(10), || {
                calls += 1;
                Err(starting_up())
            });
        assert!(matches!(outcome, Err(TargetError::Connect(_))));
        assert!(calls >= 2, "{calls}");
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn other_errors_are_not_retried() {
        let mut calls = 0;
        let outcome: Result<(), _> =
            past_connecting(Duration::from_secs(5), Duration::from_millis(1), || {
                calls += 1;
                Err(TargetError::Server("no table".into()))
            });
        assert!(matches!(outcome, Err(TargetError::Server(_))));
        assert_eq!(calls, 1);
    }
}

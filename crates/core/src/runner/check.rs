//! The durability check after a run: every id the writers attempted is
//! read back (with a few past each writer's last, to catch writes nobody
//! made), read again while a read gets no definite answer, and set against
//! the writers' log ([`crate::durability::classify`]).

use std::collections::BTreeSet;
use std::time::Duration;

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
        let seen = run_job(
            target.driver(),
            JobKind::ReadBack,
            &job,
            &mut || None,
            observer,
        )?
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

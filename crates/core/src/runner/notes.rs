//! What a finished run or search tells the user beyond its figures.

use crate::result::{PhaseResult, RunResult, SearchResult};

/// Writes that stored nothing: more than half of a run's sets or updates
/// came back as misses (the target declined them, or found no row to
/// change). HandlerSocket's set is an insert, which it declines for a key
/// that exists; a store may skip an update that changes nothing. The
/// throughput of such writes is not that of stored writes.
fn unstored_write_notes(index: u32, measure: &PhaseResult, label: &str) -> Vec<String> {
    ["set", "update"]
        .iter()
        .filter_map(|kind| {
            let o = measure.ops.get(*kind)?;
            (o.completed >= 100 && o.misses * 2 > o.completed).then(|| {
                format!(
                    "run {} ({label}): {} of {} {kind}s stored nothing (declined by the target, as memcached's NOT_STORED, or an update or delete that found no row): the {kind} figures of this run are of requests that wrote nothing.",
                    index, o.misses, o.completed
                )
            })
        })
        .collect()
}

/// An open loop's own failings: requests sent late (send lag p99 above
/// 10 µs and above 5 % of the response time's p99), or a rate asked for
/// that was not reached (more than 5 % under it).
fn open_loop_notes(run: &RunResult, label: &str) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(rate) = run.workload.rate else {
        return notes;
    };
    let m = &run.measure;
    if let Some(lag) = m.send_lag.as_ref().filter(|l| l.count > 0) {
        if lag.p99_ns > 10_000 && lag.p99_ns as f64 > 0.05 * m.all.p99_ns as f64 {
            // A thread whose spin reached its share woke at send times
            // rather than before them.
            let spin = run.client.spin_percent.iter().cloned().fold(0.0, f64::max);
            let why = if spin >= 11.0 {
                format!(" (a thread spent {spin:.0} % of its time spinning before send times, the most it may)")
            } else {
                String::new()
            };
            notes.push(format!(
                "run {} ({label}): requests left late, send lag p99 {} (response time p99 {}){why}: part of the response time is bakeoff's own lateness; fewer --clients per thread or more --threads.",
                run.index,
                crate::units::fmt_ns(lag.p99_ns as f64),
                crate::units::fmt_ns(m.all.p99_ns as f64)
            ));
        }
    }
    let achieved = m.attempted_per_s();
    if run.status == crate::result::RunStatus::Ok && m.duration_s > 0.0 && achieved < 0.95 * rate {
        notes.push(format!(
            "run {} ({label}): the rate asked for was not reached: {} of {} ({:.0} % short); the target or the client could not keep up.",
            run.index,
            crate::units::fmt_rate(achieved),
            crate::units::fmt_rate(rate),
            100.0 * (1.0 - achieved / rate)
        ));
    }
    notes
}

/// What a search found, in a line for the terminal.
pub(super) fn search_note(s: &SearchResult) -> Option<String> {
    use crate::units::{fmt_ns, fmt_rate};
    let point = s
        .point
        .iter()
        .map(|(k, v)| format!(" {k}={v}"))
        .collect::<String>();
    Some(match (s.kind.as_str(), s.found) {
        ("peak", Some(_)) => format!(
            "{}{point}: peak {} at {} clients",
            s.target,
            fmt_rate(s.throughput_per_s?),
            s.clients?
        ),
        ("capacity", Some(_)) => format!(
            "{}{point}: capacity {} with {} (p{} {}); closed-loop ceiling {}",
            s.target,
            fmt_rate(s.rate_per_s?),
            s.bound?,
            s.bound?.percentile,
            fmt_ns(s.latency_ns? as f64),
            fmt_rate(s.ceiling_per_s.unwrap_or(0.0))
        ),
        ("capacity", None) => format!(
            "{}{point}: no rate held {} (closed-loop ceiling {})",
            s.target,
            s.bound?,
            fmt_rate(s.ceiling_per_s.unwrap_or(0.0))
        ),
        _ => format!("{}{point}: no peak found (every step failed)", s.target),
    })
}

/// What a finished run tells the user beyond its figures: a client that
/// set the pace, an open loop that fell behind, writes that stored
/// nothing, a link relay that set the pace.
pub(super) fn run_notes(run: &RunResult, label: &str) -> Vec<String> {
    let mut notes = Vec::new();
    if run.client_limited() {
        notes.push(format!(
            "run {} ({label}) was client-bound: a bakeoff thread was busy {:.0} % of the time; these numbers measure bakeoff, not the target. Add --threads or lower --clients.",
            run.index,
            run.client.thread_busy_percent.iter().cloned().fold(0.0, f64::max)
        ));
    }
    notes.extend(open_loop_notes(run, label));
    notes.extend(unstored_write_notes(run.index, &run.measure, label));
    if let Some(l) = run.client.link.as_ref().filter(|l| l.relay_bound) {
        notes.push(format!(
            "run {} ({label}): the link relay was busy {:.0} % of the time; the relay, not the link, may have set the pace. Lower --clients or --rate.",
            run.index, l.relay_busy_percent
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::OpResult;

    fn measure(kind: &str, completed: u64, misses: u64) -> PhaseResult {
        let mut m = PhaseResult::default();
        m.ops.insert(
            kind.to_string(),
            OpResult {
                completed,
                misses,
                ..Default::default()
            },
        );
        m
    }

    #[test]
    fn writes_that_mostly_stored_nothing_are_named() {
        let notes = unstored_write_notes(3, &measure("set", 1000, 990), "handlersocket");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("run 3 (handlersocket): 990 of 1000 sets stored nothing"));
        let notes = unstored_write_notes(0, &measure("update", 1000, 600), "x");
        assert!(notes[0].contains("600 of 1000 updates"), "{notes:?}");
        // A few misses, a few requests, or misses of reads: no note.
        assert!(unstored_write_notes(0, &measure("set", 1000, 400), "x").is_empty());
        assert!(unstored_write_notes(0, &measure("set", 50, 50), "x").is_empty());
        assert!(unstored_write_notes(0, &measure("get", 1000, 1000), "x").is_empty());
    }
}

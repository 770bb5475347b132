//! The server's own time per command beside the client's: a server that
//! times its commands (Redis: `INFO commandstats`, `calls` and `usec`;
//! PostgreSQL: `pg_stat_statements`) is read as the warm-up ends (before
//! the measure job when it has none) and after the job, so the figures are
//! the measured phase's, and the mean time it spent per call is set next
//! to the client's mean for the same operations. The gap
//! is the network, the kernel and the client library: a server that takes
//! 2 µs of a 100 µs round trip is not the bottleneck.

use std::collections::BTreeMap;

use crate::error::RunError;
use hdrhistogram::Histogram;

use crate::result::{
    decode_histogram, CommandTime as CommandTimeResult, RunResult, ServerTime as ServerTimeResult,
    TimeBucket,
};

use super::super::job::JobOutcome;
use super::super::job::Observer;
use super::{Extra, Stage};
use crate::target::{CommandTime, Target};

/// The server's command times so far, where it times them.
fn command_times(target: &dyn Target) -> Option<(&'static str, Vec<CommandTime>)> {
    target.server_time().ok()?.command_times()
}

/// Reads of the server's command times around the measured phase.
pub(super) struct ServerTime {
    /// Where the figures come from, for the result; or why there are none.
    source: &'static str,
    /// Whether the server times its commands.
    timed: bool,
    before: Vec<CommandTime>,
}

impl ServerTime {
    /// The extra, for a target that times its commands or says why it
    /// does not.
    pub fn of(target: &dyn Target) -> Option<Self> {
        let (source, timed) = match target.server_time() {
            Ok(time) => match time.command_times() {
                Some((source, _)) => (source, true),
                None => (time.untimed()?, false),
            },
            Err(why) => (why?, false),
        };
        Some(ServerTime {
            source,
            timed,
            before: Vec::new(),
        })
    }
}

impl Extra for ServerTime {
    fn before_measure(
        &mut self,
        stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        if !self.timed {
            return Ok(());
        }
        // With a warm-up, the reading as it ends replaces this one.
        self.before = command_times(stage.target)
            .map(|(_, t)| t)
            .unwrap_or_default();
        Ok(())
    }

    fn warmed_up(&mut self, stage: &Stage) {
        if !self.timed {
            return;
        }
        if let Some((_, t)) = command_times(stage.target) {
            self.before = t;
        }
    }

    fn measured(
        &mut self,
        stage: &Stage,
        _outcome: &mut JobOutcome,
        _load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        // Interrupted: the user wants out, and the server may be why.
        if stage.inputs.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        if !self.timed {
            run.server_time = Some(ServerTimeResult {
                source: self.source.to_string(),
                commands: Vec::new(),
            });
            return Ok(());
        }
        let Some((_, after)) = command_times(stage.target) else {
            return Ok(());
        };
        let before: BTreeMap<&str, &CommandTime> = self
            .before
            .iter()
            .map(|c| (c.command.as_str(), c))
            .collect();
        let commands: Vec<CommandTimeResult> = after
            .iter()
            // Only the commands that serve bakeoff's operations (not its
            // own INFO, for one).
            .filter(|a| !a.kinds.is_empty())
            .filter_map(|a| {
                let (calls0, usec0) = before
                    .get(a.command.as_str())
                    .map_or((0, 0), |b| (b.calls, b.usec));
                let calls = a.calls.checked_sub(calls0).filter(|&c| c > 0)?;
                let usec = a.usec.saturating_sub(usec0);
                // The client's mean service time of the operations the
                // command serves, over the measured phase.
                let client = || {
                    a.kinds
                        .iter()
                        .filter_map(|k| run.measure.ops.get(k.name()))
                        .map(|op| op.service_time.as_ref().unwrap_or(&op.latency))
                };
                let (n, sum) = client().fold((0u64, 0.0), |(n, sum), l| {
                    (n + l.count, sum + l.mean_ns * l.count as f64)
                });
                let histogram = if a.histogram_usec.is_empty() {
                    Vec::new()
                } else {
                    let mut merged: Option<Histogram<u64>> = None;
                    for h in client().filter_map(|l| decode_histogram(&l.hdr).ok()) {
                        match &mut merged {
                            Some(m) => m.add(&h).unwrap_or(()),
                            None => merged = Some(h),
                        }
                    }
                    let before = before
                        .get(a.command.as_str())
                        .map_or(&[][..], |b| &b.histogram_usec[..]);
                    side_by_side(before, &a.histogram_usec, merged.as_ref())
                };
                Some(CommandTimeResult {
                    command: a.command.clone(),
                    calls,
                    server_mean_us: usec as f64 / calls as f64,
                    client_mean_us: (n > 0).then(|| sum / n as f64 / 1e3),
                    apart: a.apart,
                    histogram,
                })
            })
            .collect();
        if !commands.is_empty() {
            run.server_time = Some(ServerTimeResult {
                source: self.source.to_string(),
                commands,
            });
        }
        Ok(())
    }
}

/// The power of two nearest `us` (Redis names its buckets by their top
/// value: 32 µs's is 33).
fn power_of_two(us: u64) -> u64 {
    let up = us.max(1).next_power_of_two();
    if up - us > us - up / 2 {
        up / 2
    } else {
        up
    }
}

/// The measured phase's distribution of one command in power-of-two µs
/// buckets: the server's (its cumulative counts `after` less `before`,
/// each bound taken to its power of two) beside the client's (`client`,
/// ns), from the first bucket either has calls in to the last.
fn side_by_side(
    before: &[(u64, u64)],
    after: &[(u64, u64)],
    client: Option<&Histogram<u64>>,
) -> Vec<TimeBucket> {
    // Calls at or under `le` µs in a cumulative list.
    let at = |list: &[(u64, u64)], le: u64| {
        list.iter()
            .take_while(|(b, _)| power_of_two(*b) <= le)
            .last()
            .map_or(0, |(_, c)| *c)
    };
    let server_top = after.last().map_or(1, |(b, _)| power_of_two(*b));
    let client_top = client.map_or(1, |h| h.max().div_ceil(1000));
    let mut out = Vec::new();
    let (mut server_below, mut client_below) = (0, 0);
    let mut le = 1u64;
    loop {
        let server = at(after, le).saturating_sub(at(before, le));
        let client = client.map_or(0, |h| h.count_between(0, le * 1000));
        out.push(TimeBucket {
            le_us: le,
            server: server.saturating_sub(server_below),
            client: client.saturating_sub(client_below),
        });
        (server_below, client_below) = (server.max(server_below), client.max(client_below));
        if le >= server_top && le >= client_top {
            break;
        }
        le *= 2;
    }
    let used = |b: &TimeBucket| b.server > 0 || b.client > 0;
    let first = out.iter().position(used).unwrap_or(out.len());
    let last = out.iter().rposition(used).map_or(first, |i| i + 1);
    out[first..last].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's buckets less their counts before the phase, beside
    /// the client's, on the same bounds; Redis's 33 is 32.
    #[test]
    fn server_and_client_distributions_side_by_side() {
        assert_eq!(
            [1, 2, 3, 16, 33, 66, 132, 1000].map(power_of_two),
            [1, 2, 4, 16, 32, 64, 128, 1024]
        );
        let before = [(1, 100), (33, 110)];
        let after = [(1, 150), (2, 180), (33, 200)];
        let mut client = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        client.record_n(3_000, 5).unwrap(); // 3 µs
        client.record_n(20_000, 4).unwrap(); // 20 µs
        let got = side_by_side(&before, &after, Some(&client));
        let row = |b: &TimeBucket| (b.le_us, b.server, b.client);
        assert_eq!(
            got.iter().map(row).collect::<Vec<_>>(),
            [
                (1, 50, 0),
                (2, 30, 0),
                (4, 0, 5),
                (8, 0, 0),
                (16, 0, 0),
                (32, 10, 4)
            ]
        );
    }
}

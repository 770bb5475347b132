//! The server's own time per command beside the client's: a server that
//! times its commands (Redis: `INFO commandstats`, `calls` and `usec`) is
//! read before and after the measure job, and the mean time it spent per
//! call is set next to the client's mean for the same operations. The gap
//! is the network, the kernel and the client library: a server that takes
//! 2 µs of a 100 µs round trip is not the bottleneck.

use std::collections::BTreeMap;

use crate::error::RunError;
use crate::result::{CommandTime as CommandTimeResult, RunResult, ServerTime as ServerTimeResult};

use super::super::job::JobOutcome;
use super::super::job::Observer;
use super::{Extra, Stage};
use crate::target::{CommandTime, Target};

/// Reads of the server's command times around the measure job.
pub(super) struct ServerTime {
    /// Where the figures come from, for the result.
    source: &'static str,
    before: Vec<CommandTime>,
}

impl ServerTime {
    /// The extra, for a target that times its commands.
    pub fn of(target: &dyn Target) -> Option<Self> {
        let (source, _) = target.command_times()?;
        Some(ServerTime {
            source,
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
        self.before = stage
            .target
            .command_times()
            .map(|(_, t)| t)
            .unwrap_or_default();
        Ok(())
    }

    fn measured(
        &mut self,
        stage: &Stage,
        _outcome: &mut JobOutcome,
        _load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        // Interrupted: the user wants out, and the server may be why.
        if stage.ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let Some((_, after)) = stage.target.command_times() else {
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
                let client = a.kinds.iter().filter_map(|k| run.measure.ops.get(k.name()));
                let (n, sum) = client.fold((0u64, 0.0), |(n, sum), op| {
                    let l = op.service_time.as_ref().unwrap_or(&op.latency);
                    (n + l.count, sum + l.mean_ns * l.count as f64)
                });
                Some(CommandTimeResult {
                    command: a.command.clone(),
                    calls,
                    server_mean_us: usec as f64 / calls as f64,
                    client_mean_us: (n > 0).then(|| sum / n as f64 / 1e3),
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

//! A target made of several servers (shards, Redis Cluster): the requests
//! sent to each node, its redirections, and each node's counters set
//! against what it was sent.

use crate::driver::JobKind;
use crate::result::{NodeOps, Redirections, RunResult};
use crate::workload::OP_KINDS;

use super::super::job::{add_node_sent, JobOutcome};
use super::{Extra, Stage};
use crate::target::Counters;

/// Per-node counts over the run's jobs.
#[derive(Default)]
pub(super) struct Nodes {
    /// Requests sent per node and kind.
    sent: Vec<[u64; OP_KINDS]>,
    /// `MOVED` and `ASK` replies per node.
    redirects: Vec<[u64; 2]>,
}

impl Extra for Nodes {
    fn job_done(&mut self, _stage: &Stage, _kind: JobKind, outcome: &JobOutcome) {
        add_node_sent(&mut self.sent, &outcome.node_sent);
        add_node_sent(&mut self.redirects, &outcome.node_redirects);
    }

    fn counters(
        &mut self,
        stage: &Stage,
        before: &Counters,
        after: &Counters,
        run: &mut RunResult,
    ) {
        if let Some(several) = stage.target.several() {
            run.checks
                .counters
                .extend(several.node_checks(before, after, &self.sent));
        }
    }

    fn check(
        &mut self,
        stage: &Stage,
        run: &mut RunResult,
        _observer: &mut dyn super::super::Observer,
    ) -> Result<(), String> {
        run.nodes = stage
            .target
            .several()
            .map(|s| s.nodes())
            .unwrap_or_default()
            .into_iter()
            .zip(&self.sent)
            .enumerate()
            .map(|(i, (node, sent))| NodeOps {
                node,
                sent: sent.iter().sum(),
                redirected: self
                    .redirects
                    .get(i)
                    .map(|&[moved, ask]| Redirections { moved, ask }),
            })
            .collect();
        if !self.redirects.is_empty() {
            run.redirections = Some(Redirections {
                moved: self.redirects.iter().map(|r| r[0]).sum(),
                ask: self.redirects.iter().map(|r| r[1]).sum(),
            });
        }
        Ok(())
    }
}

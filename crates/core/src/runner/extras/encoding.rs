//! Client-encoded values: what encoding and decoding cost the client,
//! timed apart from the run (its workers never encode in the hot path).

use crate::plan::Workload;
use crate::result::RunResult;
use crate::value::ValuePool;

use super::super::job::JobOutcome;
use super::{Extra, Stage};

/// CPU time spent timing the client's encoding, and again its decoding,
/// after a run whose values are client-encoded.
const ENCODING_TIMED_FOR: std::time::Duration = std::time::Duration::from_millis(100);

/// Client-encoded values come from a table of their own, the same for
/// every run of the form (a growth series reads its earlier checkpoints'
/// values back); plain values from the experiment's pool (`None`).
pub(super) fn encoded_pool(workload: &Workload) -> Option<ValuePool> {
    let form = workload.value_form();
    (!form.is_plain())
        .then(|| ValuePool::encoded(form, workload.value_size.max(), workload.value_content))
}

/// Times the encoding of the run's values, when they are encoded.
pub(super) struct Encoding;

impl Extra for Encoding {
    fn measured(
        &mut self,
        stage: &Stage,
        _outcome: &mut JobOutcome,
        _load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        if let Some(table) = stage.inputs.pool.encoded_payloads() {
            run.client.encoding = Some(
                table
                    .cost(ENCODING_TIMED_FOR)
                    .map_err(|e| format!("the client's encoding is broken: {e}"))?,
            );
        }
        Ok(())
    }
}

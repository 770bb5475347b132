//! Client-encoded values: what encoding and decoding cost the client,
//! timed apart from the run (its workers never encode in the hot path).

use crate::result::RunResult;

use super::super::job::JobOutcome;
use super::{Extra, Stage};

/// CPU time spent timing the client's encoding, and again its decoding,
/// after a run whose values are client-encoded.
const ENCODING_TIMED_FOR: std::time::Duration = std::time::Duration::from_millis(100);

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
        if let Some(table) = stage.ctx.pool.encoded_payloads() {
            run.client.encoding = Some(
                table
                    .cost(ENCODING_TIMED_FOR)
                    .map_err(|e| format!("the client's encoding is broken: {e}"))?,
            );
        }
        Ok(())
    }
}

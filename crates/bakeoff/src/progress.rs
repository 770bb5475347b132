//! Progress on a terminal: one line, rewritten each second, on stderr.
//! Quiet when stderr is not a terminal (logs and CI stay clean).

use std::io::{IsTerminal, Write};
use std::time::Instant;

use bakeoff_core::driver::JobKind;
use bakeoff_core::result::{RunResult, TimelinePoint};
use bakeoff_core::runner::Observer;
use bakeoff_core::units::{fmt_ns, fmt_rate};

/// Draws progress and notes.
pub struct Progress {
    live: bool,
    label: String,
    index: usize,
    total: usize,
    expected_s: Option<f64>,
    started: Instant,
}

impl Progress {
    /// Live only if `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Self {
        Self {
            live: enabled && std::io::stderr().is_terminal(),
            label: String::new(),
            index: 0,
            total: 0,
            expected_s: None,
            started: Instant::now(),
        }
    }
}

impl Observer for Progress {
    fn run_started(&mut self, index: usize, total: usize, label: &str, expected_s: Option<f64>) {
        self.label = label.to_string();
        self.index = index;
        self.total = total;
        self.expected_s = expected_s;
        self.started = Instant::now();
        say!("[{}/{}] {label}", index + 1, total);
    }

    fn second(&mut self, job: JobKind, p: &TimelinePoint) {
        if !self.live {
            return;
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let remaining = match (job, self.expected_s) {
            (JobKind::Measure, Some(e)) => {
                format!(", {:.0} s left", (e - p.t_s as f64 - 1.0).max(0.0))
            }
            _ => String::new(),
        };
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r\x1b[K  {} {:>4.0} s elapsed{remaining}  {}  p99 {}  errors {}",
            p.phase,
            elapsed,
            fmt_rate(p.ops_per_s as f64),
            fmt_ns(p.p99_ns as f64),
            p.errors
        );
        let _ = err.flush();
    }

    fn run_finished(&mut self, run: &RunResult) {
        if self.live {
            say_inline!("\r\x1b[K");
        }
        let m = &run.measure;
        say!(
            "      {}: {}, p50 {}, p99 {}, {} errors{}",
            run.target,
            fmt_rate(m.throughput_per_s),
            fmt_ns(m.all.p50_ns as f64),
            fmt_ns(m.all.p99_ns as f64),
            m.error_total(),
            run.message
                .as_ref()
                .map(|s| format!(" — {s}"))
                .unwrap_or_default()
        );
    }

    fn note(&mut self, text: &str) {
        if self.live {
            say_inline!("\r\x1b[K");
        }
        say!("note: {text}");
    }
}

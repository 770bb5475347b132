//! Two experiments side by side (`bakeoff compare A.json B.json`): for each
//! target and point both ran, each figure's median over the repeats in A
//! and in B, the change, and whether it is beyond what the repeats can
//! tell apart: the Mann–Whitney test at α = 0.05 with at least 4 repeats
//! a side, or disjoint 95 % between-run intervals (6 repeats a side).

use std::collections::BTreeMap;
use std::io::Write;

use bakeoff_core::result::{ExperimentResult, RunResult};

use crate::markdown::md_table;
use crate::view::{point_label, Figure, Spread};

/// Whether a change stands out from the noise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not significant at 0.05: a tie.
    WithinNoise,
    /// Significant at 0.05.
    Beyond,
    /// Repeated, but too few times a side for any test to reach 0.05.
    TooFew,
    /// Neither side was repeated: the spread is unknown.
    NoRepeats,
}

impl Verdict {
    /// As printed.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::WithinNoise => "~ tie",
            Verdict::Beyond => "beyond noise",
            Verdict::TooFew => "cannot tell (4 repeats a side needed)",
            Verdict::NoRepeats => "spread unknown (no repeats)",
        }
    }
}

/// One figure of one target at one point, in A and in B.
#[derive(Clone, Debug)]
pub struct Row {
    /// Target name.
    pub target: String,
    /// Sweep values.
    pub point: BTreeMap<String, String>,
    /// Which figure.
    pub figure: Figure,
    /// A's repeats.
    pub a: Spread,
    /// B's repeats.
    pub b: Spread,
    /// (B − A) / A.
    pub change: f64,
    /// Against the noise.
    pub verdict: Verdict,
    /// The Mann–Whitney p, where both sides were repeated.
    pub p: Option<f64>,
}

/// The comparison of two experiments.
pub struct Comparison {
    /// Matched figures.
    pub rows: Vec<Row>,
    /// Target/point pairs only one side ran, as `(side, label)`.
    pub unmatched: Vec<(char, String)>,
}

/// A target and a sweep point.
type RunKey = (String, BTreeMap<String, String>);

fn groups(r: &ExperimentResult) -> Vec<(RunKey, Vec<&RunResult>)> {
    let mut out: Vec<(RunKey, Vec<&RunResult>)> = Vec::new();
    // Failed and interrupted runs measured nothing, or less than a run.
    for run in r.runs.iter().filter(|r| {
        r.status != bakeoff_core::result::RunStatus::Failed
            && r.status != bakeoff_core::result::RunStatus::Interrupted
    }) {
        let key = (run.target.clone(), run.point.clone());
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(run),
            None => out.push((key, vec![run])),
        }
    }
    out
}

/// Judges a change from the repeats of each side (see
/// [`bakeoff_core::stats::judge`]): its verdict and the test's p.
pub fn judge(a: &[f64], b: &[f64]) -> (Verdict, Option<f64>) {
    use bakeoff_core::stats;
    if a.len() < 2 && b.len() < 2 {
        return (Verdict::NoRepeats, None);
    }
    let d = stats::judge(
        a,
        stats::median_interval(a).as_ref(),
        b,
        stats::median_interval(b).as_ref(),
    );
    let verdict = if d.significant {
        Verdict::Beyond
    } else if a.len().min(b.len()) < stats::REPEATS_FOR_TEST {
        Verdict::TooFew
    } else {
        Verdict::WithinNoise
    };
    (verdict, d.p)
}

/// Matches the runs of `a` and `b` by target and point.
pub fn compare(a: &ExperimentResult, b: &ExperimentResult) -> Comparison {
    let ga = groups(a);
    let gb = groups(b);
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for (key, runs_a) in &ga {
        let Some((_, runs_b)) = gb.iter().find(|(k, _)| k == key) else {
            unmatched.push((
                'A',
                format!("{} {}", key.0, point_label(&key.1))
                    .trim_end()
                    .to_string(),
            ));
            continue;
        };
        for fig in Figure::ALL {
            let va: Vec<f64> = runs_a.iter().map(|r| fig.of(r)).collect();
            let vb: Vec<f64> = runs_b.iter().map(|r| fig.of(r)).collect();
            let (Some(sa), Some(sb)) = (Spread::of(va.clone()), Spread::of(vb.clone())) else {
                continue;
            };
            let (verdict, p) = judge(&va, &vb);
            let change = if sa.median != 0.0 {
                (sb.median - sa.median) / sa.median
            } else {
                0.0
            };
            rows.push(Row {
                target: key.0.clone(),
                point: key.1.clone(),
                figure: fig,
                verdict,
                p,
                a: sa,
                b: sb,
                change,
            });
        }
    }
    for (key, _) in &gb {
        if !ga.iter().any(|(k, _)| k == key) {
            unmatched.push((
                'B',
                format!("{} {}", key.0, point_label(&key.1))
                    .trim_end()
                    .to_string(),
            ));
        }
    }
    Comparison { rows, unmatched }
}

fn side(s: &Spread, fig: Figure) -> String {
    if s.n > 1 {
        format!(
            "{} [{}–{}]",
            fig.format(s.median),
            fig.format(s.min),
            fig.format(s.max)
        )
    } else {
        fig.format(s.median)
    }
}

impl Comparison {
    /// Table rows: target, point, figure, A, B, change, verdict.
    pub fn table_rows(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                let better = if r.change == 0.0 {
                    ""
                } else if (r.change > 0.0) == r.figure.higher_is_better() {
                    " better"
                } else {
                    " worse"
                };
                vec![
                    r.target.clone(),
                    point_label(&r.point),
                    r.figure.name().to_string(),
                    side(&r.a, r.figure),
                    side(&r.b, r.figure),
                    format!("{:+.1} %{better}", r.change * 100.0),
                    match (r.verdict, r.p) {
                        (Verdict::Beyond | Verdict::WithinNoise, Some(p)) => {
                            format!("{} (p = {p:.3})", r.verdict.text())
                        }
                        _ => r.verdict.text().to_string(),
                    },
                ]
            })
            .collect()
    }

    /// Writes the comparison as an aligned text table, or as Markdown.
    pub fn write(
        &self,
        a: &ExperimentResult,
        b: &ExperimentResult,
        markdown: bool,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let head = ["target", "point", "figure", "A", "B", "change", "vs noise"];
        let describe = |r: &ExperimentResult| {
            format!(
                "{} on {} ({}), started {}, {} repeat(s)",
                r.plan.name,
                r.environment.hostname,
                r.environment.cpu_model,
                r.started_at,
                r.plan.repeats
            )
        };
        writeln!(out, "A: {}", describe(a))?;
        writeln!(out, "B: {}", describe(b))?;
        writeln!(
            out,
            "Medians of the repeats, [min–max] when repeated; a change is beyond noise when a Mann–Whitney test of A's and B's repeats gives p < 0.05 (4 repeats a side at least; 6 give 95 % intervals), else a tie (~).\n"
        )?;
        let rows = self.table_rows();
        if markdown {
            let head: Vec<String> = head.iter().map(|s| s.to_string()).collect();
            md_table(&head, &rows, 3, out)?;
        } else {
            let mut all = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
            all.extend(rows);
            crate::text_table(&all, 3, out)?;
        }
        for (s, what) in &self.unmatched {
            writeln!(out, "only in {s}: {what}")?;
        }
        if self.rows.is_empty() {
            writeln!(
                out,
                "no target and point ran in both: nothing to compare (same preset on both sides?)"
            )?;
        }
        Ok(())
    }
}

/// `bakeoff compare`: two experiments, A then B, side by side, as an
/// aligned text table or as Markdown.
pub struct CompareExporter {
    /// Markdown rather than text.
    pub markdown: bool,
}

impl crate::Exporter for CompareExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        match results {
            [a, b] => compare(a, b).write(a, b, self.markdown, out),
            other => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a comparison is of two experiments, not {}", other.len()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three repeats a side cannot be told apart however far they are
    /// (the test's smallest p is 0.10); four apart can; four interleaved
    /// are a tie.
    #[test]
    fn a_change_is_beyond_noise_only_where_the_test_says() {
        assert_eq!(
            judge(&[100.0, 105.0, 102.0], &[130.0, 140.0, 135.0]).0,
            Verdict::TooFew
        );
        let (v, p) = judge(&[100.0, 105.0, 102.0, 101.0], &[130.0, 140.0, 135.0, 131.0]);
        assert_eq!(v, Verdict::Beyond);
        assert!(p.unwrap() < 0.05);
        assert_eq!(
            judge(&[100.0, 110.0, 120.0, 130.0], &[105.0, 115.0, 125.0, 135.0]).0,
            Verdict::WithinNoise
        );
        assert_eq!(judge(&[1.0], &[2.0]).0, Verdict::NoRepeats);
    }
}

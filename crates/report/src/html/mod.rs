//! The self-contained HTML report: one file, inline CSS and SVG, a few
//! lines of inline script, no network access. It opens offline in any
//! browser and prints in greyscale.
//!
//! The page renders the report's document ([`crate::document`]) section
//! by section, in its order: the answer first (which one fits, the
//! verdict, the summary), the charts next, the tables of detail after
//! them, long ones folded. [`page`] holds the page and its header,
//! [`sections`] renders a section's blocks, [`charts`] draws them in SVG.

use std::io::Write;

use bakeoff_core::result::ExperimentResult;

use crate::Exporter;

pub mod charts;
mod page;
mod sections;

/// The HTML report.
pub struct HtmlExporter;

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111; margin: 16px auto; max-width: 1320px; padding: 0 16px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 19px; margin-top: 26px; border-bottom: 2px solid #333; padding-bottom: 3px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-variant-numeric: tabular-nums; max-width: 100%; }
th, td { border: 1px solid #bbb; padding: 2px 7px; text-align: right; vertical-align: top; overflow-wrap: break-word; }
th { background: #eee; } td.l, th.l { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 14px; }
figure { margin: 0; border: 1px solid #ccc; max-width: 100%; }
svg.chart { max-width: 100%; height: auto; display: block; }
ul.verdict { padding-left: 20px; margin: 6px 0; } ul.verdict li { margin: 1px 0; }
svg.chart text { font: 12px system-ui, sans-serif; fill: #111; }
svg.chart text.title { font-weight: 600; font-size: 13px; }
svg.chart text.axis { font-size: 12px; fill: #333; }
svg.chart .grid { stroke: #e2e2e2; stroke-width: 1; }
svg.chart .frame { fill: none; stroke: #555; stroke-width: 1; }
svg.chart .band { fill: #000; }
svg.chart .band.work { fill: #d9730d; }
svg.chart text.band-label { font-size: 11px; fill: #444; font-style: italic; }
.warn { border: 2px solid #b00; background: #fff3f3; padding: 8px 12px; margin: 10px 0; }
.note { color: #444; } code { font-size: 12px; } details > summary { cursor: pointer; font-weight: 600; margin: 8px 0; }
@media print { figure { break-inside: avoid; } }
"#;

/// Marks each chart once the browser has laid it out, and notes where the
/// answer begins and how far right anything reaches, so a test (or a
/// reader of the DOM) can tell that every chart rendered and the page
/// opens with the answer at the window's width.
const SCRIPT: &str = r#"
document.querySelectorAll('svg.chart').forEach(function (s) {
  var b = s.getBBox();
  s.setAttribute('data-rendered', (b.width > 0 && b.height > 0 && s.querySelectorAll('path,rect,circle').length > 2) ? 'yes' : 'no');
});
document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
var answer = document.querySelector('section.answer');
if (answer) { document.body.setAttribute('data-answer-top', String(Math.round(answer.getBoundingClientRect().top + window.scrollY))); }
var widest = 0;
document.querySelectorAll('body *').forEach(function (e) { widest = Math.max(widest, e.getBoundingClientRect().right); });
document.body.setAttribute('data-widest', String(Math.round(widest)));
document.body.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
"#;

impl Exporter for HtmlExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        let refs: Vec<&ExperimentResult> = results.iter().collect();
        let title: Vec<&str> = results.iter().map(|r| r.plan.name.as_str()).collect();
        let body = page::Page::render(&refs, results);
        write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>bakeoff: {}</title><style>{STYLE}</style></head><body>{body}<p class=\"note\">Written by bakeoff from the result file(s); every figure here is in them. Latencies are response times of the measured phase (warm-up excluded); throughput counts successful operations. Hover over a mark for its exact value.</p><script>{SCRIPT}</script></body></html>\n",
            charts::esc(&title.join(" vs ")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::measure_start;
    use bakeoff_core::result::ExperimentResult;

    fn html(r: &ExperimentResult) -> String {
        let mut out = Vec::new();
        HtmlExporter
            .export(std::slice::from_ref(r), &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// A run on a primary and a replica draws each node's CPU, memory and
    /// disk writes as lines of their own, named by role and address; a
    /// single server's report has no such charts.
    #[test]
    fn each_node_gets_lines_of_its_own() {
        use bakeoff_core::result::{NodeOps, NodeResourceSample};
        // The mock run is of one server and was not sampled: both are set here.
        let mut result = crate::fixtures::mock_result();
        assert!(!html(&result).contains("of each node"));
        let run = &mut result.runs[0];
        run.workload.topology = bakeoff_core::plan::Topology::PrimaryReplica;
        run.nodes = ["127.0.0.1:7001", "127.0.0.1:7002"]
            .iter()
            .map(|n| NodeOps {
                node: n.to_string(),
                sent: 10,
                redirected: None,
            })
            .collect();
        let start = measure_start(run);
        run.resources = (0..3)
            .map(|k| bakeoff_core::result::ResourceSample {
                t_s: start + k as f64,
                ..Default::default()
            })
            .collect();
        for (k, x) in run.resources.iter_mut().enumerate() {
            x.nodes = (0..2)
                .map(|i| NodeResourceSample {
                    cpu_percent: 10.0 * (i + 1) as f64 + k as f64,
                    rss_bytes: 1 << (20 + i),
                    pss_bytes: None,
                    read_bytes_per_s: 0.0,
                    write_bytes_per_s: 4096.0,
                })
                .collect();
        }
        let page = html(&result);
        for title in [
            "Server CPU of each node",
            "Server memory (proportional set size) of each node",
            "Pages dirtied by each node",
        ] {
            assert!(page.contains(title), "{title}");
        }
        assert!(page.contains("primary 127.0.0.1:7001"));
        assert!(page.contains("replica 127.0.0.1:7002"));
    }

    /// Under a memory cap, each run's latency and the memory charged to it
    /// share one timeline, memory on an axis of its own on the right.
    #[test]
    fn latency_and_memory_share_a_timeline_under_a_memory_cap() {
        let mut result = crate::fixtures::mock_result();
        assert!(!html(&result).contains("Latency and memory over the run"));
        let run = &mut result.runs[0];
        let start = measure_start(run);
        run.resources = (0..4)
            .map(|k| bakeoff_core::result::ResourceSample {
                t_s: start + k as f64,
                cgroup_memory_bytes: Some((64 + 32 * k) << 20),
                ..Default::default()
            })
            .collect();
        let page = html(&result);
        let at = page
            .find("Latency and memory over the run")
            .unwrap_or_else(|| panic!("no latency-and-memory chart"));
        let figure = &page[at..at + page[at..].find("</svg>").unwrap()];
        assert!(figure.contains("p99 latency"), "{figure}");
        assert!(
            figure.contains("memory charged (RSS + page cache) (right axis)"),
            "{figure}"
        );
        // The right axis is labelled in bytes, up to the last sample.
        assert!(figure.contains("rotate(90)"), "{figure}");
        assert!(figure.contains("MiB"), "{figure}");
    }
}

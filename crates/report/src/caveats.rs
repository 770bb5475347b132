//! The first screen's caveats: one line for each thing that qualifies the
//! answer (what limited the runs, background work, notes on runs), each
//! naming where the evidence is, in place of the tables themselves.

use bakeoff_core::result::{BottleneckKind, ExperimentResult};

/// Where the tables behind a caveat are read.
pub const DETAILS_HINT: &str = "--details";

/// How a caveat names what limited a run.
fn kind_name(kind: BottleneckKind) -> &'static str {
    match kind {
        BottleneckKind::Client => "bakeoff itself",
        BottleneckKind::ServerCpu => "the server's busiest thread",
        BottleneckKind::MachineCpu => "the machine's CPUs",
        BottleneckKind::Disk => "the disk",
        BottleneckKind::Link => "the link's relay",
        BottleneckKind::Background => "background work",
        BottleneckKind::None => "nothing near full",
    }
}

/// `what limited the runs: the machine's CPUs (memcached, redis), bakeoff
/// itself (lmdb, rocksdb)`: each kind of limit with the targets whose
/// runs it limited, the most common first; counted instead where the
/// names would make the line wider than `width`.
pub fn limits(r: &ExperimentResult, width: usize) -> Option<String> {
    let mut kinds: Vec<(BottleneckKind, usize, Vec<String>)> = Vec::new();
    for run in &r.runs {
        let Some(b) = &run.bottleneck else {
            continue;
        };
        let at = match kinds.iter().position(|(k, _, _)| *k == b.kind) {
            Some(at) => at,
            None => {
                kinds.push((b.kind, 0, Vec::new()));
                kinds.len() - 1
            }
        };
        let (_, runs, targets) = &mut kinds[at];
        *runs += 1;
        let target = crate::view::run_label(run);
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    if kinds.is_empty() {
        return None;
    }
    kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
    let named: Vec<String> = kinds
        .iter()
        .map(|(kind, _, targets)| format!("{} ({})", kind_name(*kind), targets.join(", ")))
        .collect();
    let line = format!("what limited the runs: {}", named.join("; "));
    if line.chars().count() <= width {
        return Some(line);
    }
    let counted: Vec<String> = kinds
        .iter()
        .map(|(kind, runs, targets)| {
            let plural = |n: usize, what: &str| match n {
                1 => format!("1 {what}"),
                n => format!("{n} {what}s"),
            };
            format!(
                "{} ({} of {})",
                kind_name(*kind),
                plural(*runs, "run"),
                plural(targets.len(), "target")
            )
        })
        .collect();
    // Still wider than the screen: the commonest kinds, the rest counted
    // (`--details` names each run's).
    let mut shown = counted.len();
    loop {
        let mut line = format!("what limited the runs: {}", counted[..shown].join("; "));
        if shown < counted.len() {
            line.push_str(&format!("; {} more kinds", counted.len() - shown));
        }
        if line.chars().count() <= width || shown == 1 {
            return Some(line);
        }
        shown -= 1;
    }
}

/// `background work seen: redis (fork ×3), postgres (checkpoint)`: the
/// targets whose engines did work besides serving while they were
/// measured, and which.
pub fn background(r: &ExperimentResult) -> Option<String> {
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for run in &r.runs {
        let Some(work) = &run.background else {
            continue;
        };
        let target = crate::view::run_label(run);
        for band in &work.bands {
            match seen.iter_mut().find(|(t, _)| *t == target) {
                Some((_, whats)) if whats.contains(&band.what) => {}
                Some((_, whats)) => whats.push(band.what.clone()),
                None => seen.push((target.clone(), vec![band.what.clone()])),
            }
        }
    }
    (!seen.is_empty()).then(|| {
        let parts: Vec<String> = seen
            .iter()
            .map(|(t, whats)| format!("{t} ({})", whats.join(", ")))
            .collect();
        format!("background work seen: {}", parts.join(", "))
    })
}

/// The runs' notes on the first screen: all of them when there are two or
/// fewer; else the first alarms whole (errors, broken promises, counts
/// that differ: what the reader must not miss) and the rest counted.
fn notes(r: &ExperimentResult) -> Vec<String> {
    const ALARMS_SHOWN: usize = 3;
    let notes = crate::marked_run_notes(r);
    if notes.len() <= 2 {
        return notes.into_iter().map(|(_, n)| n).collect();
    }
    let mut out: Vec<String> = notes
        .iter()
        .filter(|(alarm, _)| *alarm)
        .take(ALARMS_SHOWN)
        .map(|(_, n)| n.clone())
        .collect();
    let rest = notes.len() - out.len();
    if rest > 0 {
        let more = if out.is_empty() { "" } else { "more " };
        out.push(format!(
            "{rest} {more}notes on runs: their errors, messages and counts ({DETAILS_HINT})"
        ));
    }
    out
}

/// Every caveat of `r` for the first screen, one line each at `width`,
/// and a last line naming the evidence behind `--details`.
pub fn lines(r: &ExperimentResult, width: usize) -> Vec<String> {
    let mut out: Vec<String> = [limits(r, width), background(r)]
        .into_iter()
        .flatten()
        .collect();
    out.extend(notes(r));
    let mut behind = vec!["each run"];
    behind.extend(
        crate::sections::TABLE_SECTIONS
            .iter()
            .filter(|s| (s.rows)(r).is_some())
            .map(|s| s.title),
    );
    behind.push("versions");
    let mut line = format!("more with {DETAILS_HINT}:");
    for (i, what) in behind.iter().enumerate() {
        let what = what.to_lowercase();
        let sep = if i == 0 { " " } else { ", " };
        // Room for the item, and for ", …" should more follow.
        let room = if i + 1 < behind.len() { 3 } else { 0 };
        if line.chars().count() + sep.len() + what.chars().count() + room > width {
            line.push_str(", …");
            break;
        }
        line.push_str(sep);
        line.push_str(&what);
    }
    out.push(line);
    out
}

/// `text` broken at spaces into lines of at most `width` characters, its
/// own leading spaces kept on the first and `indent` spaces before the
/// rest; a word longer than the width stands on its own line.
pub fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let body = text.trim_start_matches(' ');
    let mut line = text[..text.len() - body.len()].to_string();
    let mut lines = Vec::new();
    let mut fresh = true;
    for word in body.split(' ') {
        let taken = line.chars().count();
        if !fresh && taken + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, " ".repeat(indent)));
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wrapped lines keep every word, in order, and none is wider than
    /// asked unless one word is.
    #[test]
    fn wrapping_keeps_every_word_within_the_width() {
        let text = "what limited the runs: the machine's CPUs (memcached, redis, handlersocket, postgres, mariadb); bakeoff itself (lmdb, rocksdb, sqlite, tokyo-hash)";
        let lines = wrap(text, 40, 2);
        assert!(lines.len() > 3, "{lines:#?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:#?}");
        assert!(lines[1..].iter().all(|l| l.starts_with("  ")), "{lines:#?}");
        let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(words, text.split(' ').collect::<Vec<_>>());
        assert_eq!(
            wrap("a-very-long-word b", 5, 0),
            vec!["a-very-long-word", "b"]
        );
        assert_eq!(wrap("  kept  as is", 80, 4), vec!["  kept  as is"]);
    }
}

#[cfg(test)]
mod first_screen_tests {
    use bakeoff_core::result::ExperimentResult;

    use crate::fixtures::default_shaped;
    use crate::Exporter;

    fn text(r: &ExperimentResult, details: bool) -> String {
        let mut out = Vec::new();
        crate::TextExporter {
            details,
            width: None,
        }
        .export(std::slice::from_ref(r), &mut out)
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The default comparison's first screen fits one: at most 38 lines
    /// (bakeoff adds the result file's and the report's paths: 40), none
    /// wider than 120 characters; it holds the answer for every group,
    /// one row per target, and where the evidence is; `--details` holds
    /// the evidence (each run's row, what limited each, the versions).
    #[test]
    fn the_default_comparisons_first_screen_fits_one_screen() {
        let r = default_shaped();
        let first = text(&r, false);
        eprintln!("{first}");
        let lines: Vec<&str> = first.lines().collect();
        // Five figures for each of three groups.
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("  memory/record"))
                .count(),
            3
        );
        assert!(lines.len() <= 38, "{} lines:\n{first}", lines.len());
        // The disk's own count per write is a line of the verdict.
        assert!(first.contains("  disk/write "), "{first}");
        let widest = lines.iter().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= crate::DEFAULT_WIDTH, "{widest} wide:\n{first}");
        for group in [
            "network servers that survive a power cut: mariadb, postgres, handlersocket",
            "network servers that keep writes in memory only: redis, memcached",
        ] {
            assert!(first.contains(group), "{group}:\n{first}");
        }
        for (name, _) in r.targets.iter().map(|t| (&t.name, ())) {
            assert!(
                lines.iter().any(|l| l.starts_with(&format!("{name} "))),
                "{name}'s row:\n{first}"
            );
        }
        assert!(first.contains("what limited the runs: "), "{first}");
        assert!(
            first.contains("more with --details: each run, what limited each run"),
            "{first}"
        );
        assert!(!first.contains("evidence\n") && !first.contains("mariadb: mariadb 1.0"));
        let details = text(&r, true);
        assert!(details.lines().count() > 66, "{details}");
        assert!(details.contains("what limited each run:"), "{details}");
        assert!(details.contains("mariadb: mariadb 1.0"), "{details}");
    }

    /// Among the 66 runs' messages, a run whose server refused writes
    /// keeps its errors (and what the server said) on the first screen; the
    /// messages are counted. (A CI run caught the errors folded into "67
    /// notes on runs".)
    #[test]
    fn errors_stay_on_the_first_screen_among_many_notes() {
        let mut r = default_shaped();
        let measure = &mut r.runs[3].measure;
        measure.errors.insert("server_error".into(), 7);
        measure
            .error_texts
            .insert("server_error".into(), "OOM command not allowed".into());
        let first = text(&r, false);
        assert!(
            first.contains(
                "run 3 (redis) errors by kind: server_error 7 (first: \"OOM command not allowed\")"
            ),
            "{first}"
        );
        assert!(first.contains("66 more notes on runs"), "{first}");
        assert!(first.lines().count() <= 40, "{first}");
    }
}

//! PostgreSQL's background work as its log tells it, with its own times:
//! the servers bakeoff starts write each line after the epoch in ms
//! (`log_line_prefix='%n [%p] '`), log every checkpoint (`log_checkpoints`
//! is on by default since 15) and every autovacuum
//! (`log_autovacuum_min_duration=0`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bakeoff_core::target::LoggedWork;

/// The `log_line_prefix` bakeoff's servers log with: the moment first.
pub(super) const LOG_LINE_PREFIX: &str = "%n [%p] ";

/// The work logged in `text` (whole messages only) and the bytes read: a
/// message not yet whole (no end of line, or an autovacuum whose lines
/// with its time are still to come) is left for the next read.
pub(super) fn logged_work(text: &str) -> (Vec<LoggedWork>, usize) {
    let mut work = Vec::new();
    let mut read = 0;
    // A message's start: its first line, which begins with the moment.
    let starts: Vec<usize> = line_starts(text)
        .filter(|&at| moment(&text[at..]).is_some())
        .collect();
    for (i, &at) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(text.len());
        let message = &text[at..end];
        let last = i + 1 == starts.len();
        if last && !message.ends_with('\n') {
            break;
        }
        let parsed = parse_message(message);
        if last && parsed.is_none() && is_autovacuum(message) {
            // Its time is on a line not yet written.
            break;
        }
        work.extend(parsed);
        read = end;
    }
    if starts.is_empty() {
        // Lines of no message of ours (another prefix): past them.
        read = text.rfind('\n').map_or(0, |n| n + 1);
    }
    (work, read)
}

fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(
        text.match_indices('\n')
            .map(|(i, _)| i + 1)
            .filter(move |&i| i < text.len()),
    )
}

/// The moment a line begins with (`1795795449.458 [10006] `).
fn moment(line: &str) -> Option<SystemTime> {
    let (epoch, rest) = line.split_once(' ')?;
    if !rest.starts_with('[') || !epoch.contains('.') {
        return None;
    }
    let s: f64 = epoch.parse().ok()?;
    Some(UNIX_EPOCH + Duration::from_secs_f64(s))
}

fn is_autovacuum(message: &str) -> bool {
    message.contains("LOG:  automatic ")
}

/// The number after `name=` or `name: ` in `text` (`total=0.034 s`).
fn figure(text: &str, name: &str) -> Option<f64> {
    let at = text.find(name)? + name.len();
    let rest = text[at..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn parse_message(message: &str) -> Option<LoggedWork> {
    let at = moment(message)?;
    let (_, said) = message.split_once("LOG:  ")?;
    let first = said.lines().next().unwrap_or("");
    let before = |s: f64| at.checked_sub(Duration::from_secs_f64(s)).unwrap_or(at);
    if let Some(reason) = first.strip_prefix("checkpoint starting: ") {
        return Some(LoggedWork {
            what: "checkpoint",
            from: at,
            to: None,
            detail: format!("asked for by: {reason}"),
        });
    }
    if first.starts_with("checkpoint complete: ") {
        let total = figure(first, "total=")?;
        let buffers = figure(first, "wrote ").unwrap_or(0.0);
        let distance_kb = figure(first, "distance=").unwrap_or(0.0);
        return Some(LoggedWork {
            what: "checkpoint",
            from: before(total),
            to: Some(at),
            detail: format!(
                "{total:.3} s: wrote {buffers:.0} buffers ({:.1} MB), write {} s, sync {} s, {:.1} MB of WAL since the last",
                buffers * 8.0 / 1024.0,
                figure(first, "write=").unwrap_or(0.0),
                figure(first, "sync=").unwrap_or(0.0),
                distance_kb / 1024.0
            ),
        });
    }
    if let Some(rest) = first.strip_prefix("automatic ") {
        let elapsed = figure(said, "elapsed: ")?;
        let what = if rest.starts_with("analyze") {
            "autoanalyze"
        } else {
            "autovacuum"
        };
        let table = rest.split('"').nth(1).unwrap_or("");
        let tuples = said
            .lines()
            .find_map(|l| l.trim().strip_prefix("tuples: "))
            .map(|t| format!(", tuples: {t}"))
            .unwrap_or_default();
        return Some(LoggedWork {
            what,
            from: before(elapsed),
            to: Some(at),
            detail: format!("{table}: {elapsed:.2} s{tuples}"),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as PostgreSQL 15 wrote them here with bakeoff's prefix.
    const LOG: &str = "\
1795795449.458 [10006] LOG:  checkpoint starting: immediate force wait
1795795449.492 [10006] LOG:  checkpoint complete: wrote 6078 buffers (37.1%); 0 WAL file(s) added, 0 removed, 4 recycled; write=0.026 s, sync=0.006 s, total=0.034 s; sync files=46, longest=0.003 s, average=0.001 s; distance=75670 kB, estimate=75670 kB
1795795450.001 [10010] LOG:  statement: select 1
1795795451.821 [10019] LOG:  automatic vacuum of table \"postgres.public.t\": index scans: 1
\tpages: 0 removed, 5173 remain, 5173 scanned (100.00% of total)
\ttuples: 99999 removed, 200000 remain, 0 are dead but not yet removable
\tsystem usage: CPU: user: 0.05 s, system: 0.00 s, elapsed: 1.36 s
1795795451.903 [10019] LOG:  automatic analyze of table \"postgres.public.t\"
\tavg read rate: 1.035 MB/s, avg write rate: 0.282 MB/s
";

    fn secs(t: SystemTime) -> f64 {
        t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    }

    /// Checkpoints and autovacuums with the log's own times; the analyze
    /// whose time is not yet logged is left for the next read.
    #[test]
    fn checkpoints_and_autovacuum_from_the_log() {
        let (work, read) = logged_work(LOG);
        let got: Vec<(&str, f64, Option<f64>)> = work
            .iter()
            .map(|w| (w.what, secs(w.from), w.to.map(secs)))
            .collect();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-3;
        assert_eq!(got.len(), 3, "{work:?}");
        assert_eq!((got[0].0, got[0].2), ("checkpoint", None));
        assert!(near(got[0].1, 1795795449.458));
        assert_eq!(got[1].0, "checkpoint");
        assert!(near(got[1].1, 1795795449.458) && near(got[1].2.unwrap(), 1795795449.492));
        assert!(
            work[1].detail.contains("wrote 6078 buffers (47.5 MB)"),
            "{}",
            work[1].detail
        );
        assert_eq!(got[2].0, "autovacuum");
        assert!(near(got[2].1, 1795795451.821 - 1.36) && near(got[2].2.unwrap(), 1795795451.821));
        assert!(work[2]
            .detail
            .starts_with("postgres.public.t: 1.36 s, tuples: 99999 removed"));
        assert_eq!(&LOG[read..read + 14], "1795795451.903");
        // The rest, once its time is written, is read whole.
        let rest = format!(
            "{}\tsystem usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.08 s\n",
            &LOG[read..]
        );
        let (work, read) = logged_work(&rest);
        assert_eq!(work.len(), 1);
        assert_eq!(work[0].what, "autoanalyze");
        assert_eq!(read, rest.len());
        // Half a line waits.
        assert_eq!(logged_work("1795795449.458 [1] LOG:  checkpoint sta").1, 0);
    }
}

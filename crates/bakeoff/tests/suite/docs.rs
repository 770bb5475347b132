//! The guide stays true: every `bakeoff` command in README.md and under
//! docs/ is checked. A `bakeoff run` line's plan is built with `--dry-run`
//! (nothing starts), and the commands that only read (`presets`, `list`,
//! `schema`) run as written; each must succeed. Commands that need files
//! a reader makes first (`report`, `compare`, `merge`) are checked for a
//! known subcommand only.

use crate::common::*;

use std::path::{Path, PathBuf};

/// Every Markdown file of the guide, README.md first.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The `bakeoff …` command lines of a page's `sh` blocks: continuation
/// lines joined, comments dropped.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let line = strip_comment(line);
        pending.push_str(line.trim_end_matches('\\'));
        if line.ends_with('\\') {
            pending.push(' ');
            continue;
        }
        let cmd = std::mem::take(&mut pending);
        if cmd.trim_start().starts_with("bakeoff ") || cmd.trim() == "bakeoff" {
            out.push(cmd.trim().to_string());
        }
    }
    out
}

/// `line` without a shell comment (a `#` after a blank, outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double, mut prev) = (false, false, ' ');
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return line[..i].trim_end(),
            _ => {}
        }
        prev = c;
    }
    line.trim_end()
}

/// Splits a command line into words as a shell does for these lines:
/// quotes group, a redirection ends the command.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut single, mut double, mut any) = (false, false, false);
    for c in line.chars() {
        match c {
            '\'' if !double => {
                single = !single;
                any = true;
            }
            '"' if !single => {
                double = !double;
                any = true;
            }
            c if c.is_whitespace() && !single && !double => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            '>' if !single && !double => break,
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

#[test]
fn the_shell_splitting_of_the_guide_is_a_shells() {
    let _beside = crate::common::beside_others();
    assert_eq!(
        words("bakeoff run -t 'redis[a=b]' --find-capacity \"p99<=1ms\" > x.yaml"),
        [
            "bakeoff",
            "run",
            "-t",
            "redis[a=b]",
            "--find-capacity",
            "p99<=1ms"
        ]
    );
    assert_eq!(strip_comment("bakeoff run   # the default"), "bakeoff run");
    assert_eq!(
        strip_comment("bakeoff run -t 'a#b'"),
        "bakeoff run -t 'a#b'"
    );
    assert_eq!(
        commands("```sh\nbakeoff run \\\n  -t redis   # x\nls\n```\nbakeoff run\n"),
        ["bakeoff run    -t redis"]
    );
}

#[test]
fn every_command_in_the_guide_works() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    // The trace the guide's replay lines name, as `bakeoff capture` writes.
    std::fs::write(
        dir.path().join("trace.jsonl"),
        "{\"t\": 0.5, \"op\": \"set\", \"key\": \"k1\", \"size\": 100}\n{\"t\": 1.0, \"op\": \"get\", \"key\": \"k1\", \"size\": 0}\n",
    )
    .unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for line in commands(&text) {
            let w = words(&line);
            let args: Vec<&str> = w.iter().skip(1).map(String::as_str).collect();
            let (args, runs) = match args.first().copied() {
                Some("run") | None => {
                    let mut a = args.clone();
                    if a.is_empty() {
                        a.push("run");
                    }
                    if !a.contains(&"--dry-run") {
                        a.push("--dry-run");
                    }
                    (a, true)
                }
                Some("presets" | "list" | "schema") => (args.clone(), true),
                Some("report" | "compare" | "merge" | "kubernetes" | "help" | "capture") => {
                    (args.clone(), false)
                }
                Some(other) => {
                    failures.push(format!(
                        "{}: `{line}`: unknown command {other}",
                        page.display()
                    ));
                    continue;
                }
            };
            checked += 1;
            if !runs {
                continue;
            }
            let o = std::process::Command::new(bin())
                .args(&args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            if !o.status.success() {
                failures.push(format!(
                    "{}: `{line}` exited {:?}: {}",
                    page.display(),
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
            }
        }
    }
    assert!(checked >= 30, "only {checked} commands found in the guide");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

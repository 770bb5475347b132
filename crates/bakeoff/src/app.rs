//! The subcommands and their exit codes.
//!
//! Exit codes: 0 all runs clean; 1 some run had errors (failed operations,
//! a target that died, a result file that could not be written); 2 bad
//! input or a target that cannot be used (nothing was measured); 130
//! interrupted by Ctrl-C, 128 + N by signal N (SIGTERM 143, SIGHUP 129;
//! the result so far is on disk).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bakeoff_core::environment;
use bakeoff_core::error::RunError;
use bakeoff_core::plan::Plan;
use bakeoff_core::result::ExperimentResult;
use bakeoff_core::runner::{run_experiment, ExperimentOptions, Observer};
use bakeoff_drivers::registry::{kind, kinds, Registry};
use bakeoff_drivers::settings::declared_values;
use bakeoff_report::csv::CsvExporter;
use bakeoff_report::html::HtmlExporter;
use bakeoff_report::markdown::MarkdownExporter;
use bakeoff_report::{Exporter, JsonExporter, TextExporter};

use crate::cli::{Cli, Command, CompareArgs, MergeArgs, ReportArgs, RunArgs};
pub use crate::error::{AppError, EXIT_INTERRUPTED, EXIT_OK, EXIT_RUN_ERRORS, EXIT_USAGE};
pub use crate::planning::{overrides, plan};
use crate::progress::Progress;

/// Runs the parsed command line and returns the exit code.
pub fn main(cli: Cli) -> i32 {
    let command = cli.command.unwrap_or(Command::Run(Box::default()));
    let outcome = match command {
        Command::Run(args) => {
            let stop = Arc::new(AtomicBool::new(false));
            if let Err(e) = crate::signals::install(stop.clone()) {
                say!("warning: cannot catch Ctrl-C and SIGTERM ({e}); a signal will end bakeoff without writing the result");
            }
            let mut progress = Progress::new(!args.quiet);
            run_command(&args, stop, &mut progress)
        }
        Command::List => emit(&list_text()).map(|()| EXIT_OK),
        Command::Presets => crate::presets::listing()
            .and_then(|text| emit(&text))
            .map(|()| EXIT_OK),
        Command::Report(args) => report(&args),
        Command::Compare(args) => compare(&args),
        Command::Merge(args) => merge(&args),
        Command::Kubernetes(args) => kubernetes(&args),
        Command::EngineHost(args) => engine_host(&args),
        Command::Capture(args) => capture(&args),
        Command::Schema => serde_json::to_string_pretty(&bakeoff_core::result::json_schema())
            .map_err(|e| AppError::Failed(format!("cannot write the schema: {e}")))
            .and_then(|text| emit(&format!("{text}\n")))
            .map(|()| EXIT_OK),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            say!("error: {e}");
            e.exit_code()
        }
    }
}

/// Writes `text` to standard output.
fn emit(text: &str) -> Result<(), AppError> {
    to_stdout(|out| out.write_all(text.as_bytes()))
}

/// Runs `write` on standard output. A reader that went away (`bakeoff
/// schema | head -1`) ends the output quietly, as other Unix tools do;
/// any other write error is a failure.
/// The first screen's width: `COLUMNS`, or the terminal's own, when
/// standard output is a terminal; `None` (the report's default) when it
/// is a file or a pipe.
fn screen_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    columns
        .or_else(|| {
            let mut size: libc::winsize = unsafe { std::mem::zeroed() };
            // SAFETY: TIOCGWINSZ fills the winsize it is given; standard
            // output is open for the process's life.
            let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
            (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
        })
        .filter(|w| *w >= 40)
}

fn to_stdout(
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), AppError> {
    let mut out = std::io::stdout().lock();
    match write(&mut out).and_then(|()| std::io::Write::flush(&mut out)) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(AppError::Failed(format!(
            "cannot write to standard output: {e}"
        ))),
        _ => Ok(()),
    }
}

/// `bakeoff capture`: a live Redis's traffic into a trace.
fn capture(args: &crate::cli::CaptureArgs) -> Result<i32, AppError> {
    let stop = Arc::new(AtomicBool::new(false));
    if let Err(e) = crate::signals::install(stop.clone()) {
        say!("warning: cannot catch Ctrl-C ({e}); a signal will end the capture without flushing the trace");
    }
    let got = crate::capture::capture(args, &stop)?;
    let skipped: Vec<String> = got
        .skipped
        .iter()
        .map(|(name, n)| format!("{n} {name}"))
        .collect();
    say!(
        "{} operations written to {}{}",
        got.ops,
        args.output,
        if skipped.is_empty() {
            String::new()
        } else {
            format!(
                "; skipped (no operation of bakeoff's): {}",
                skipped.join(", ")
            )
        }
    );
    Ok(EXIT_OK)
}

/// The hidden `engine-host` command: an embedded engine served to the
/// bakeoff process that started it. What it is given (a name, settings,
/// a directory, a port) is bad input when it cannot be used: exit 2, as
/// for any command.
fn engine_host(args: &crate::cli::EngineHostArgs) -> Result<i32, AppError> {
    use bakeoff_core::error::TargetError;
    let mut table: toml::Table = toml::from_str(&args.settings)
        .map_err(|e| AppError::Usage(format!("engine-host --settings: {e}")))?;
    table.insert("dir".into(), toml::Value::String(args.dir.clone()));
    let kind = bakeoff_drivers::registry::kind(&args.name).ok_or_else(|| {
        AppError::Usage(format!(
            "engine-host: no embedded engine named `{}`",
            args.name
        ))
    })?;
    // Opens the engine on its settings' `dir` and serves it on
    // 127.0.0.1:PORT until SIGTERM or SIGINT; its files are never emptied,
    // so a restart finds what the engine left.
    kind.serve_hosted(&table, args.port).map_err(|e| match e {
        TargetError::Settings(_) | TargetError::NotInstalled { .. } | TargetError::Engine(_) => {
            AppError::Usage(e.to_string())
        }
        e => AppError::Failed(e.to_string()),
    })?;
    Ok(EXIT_OK)
}

fn default_out(plan: &Plan) -> PathBuf {
    let stamp = bakeoff_core::runner::now_rfc3339()
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    PathBuf::from("results").join(format!("{}-{stamp}.json", plan.name))
}

fn command_line() -> String {
    std::env::args()
        .map(|a| bakeoff_core::plan::redact(&a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `bakeoff run`: plan, run, write, summarise. Returns the exit code.
pub fn run_command(
    args: &RunArgs,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<i32, AppError> {
    if args.dry_run {
        let plan = plan(args)?;
        emit(&dry_run_text(&plan))?;
        return Ok(EXIT_OK);
    }
    let plan = plan(args)?;
    let limit = bakeoff_servers::raise_open_file_limit();
    check_open_files(&plan, limit)?;
    bakeoff_servers::scratch::check_temp_dir().map_err(AppError::Usage)?;
    for dir in bakeoff_servers::scratch::remove_stale() {
        say!(
            "note: removed {}, left behind by a bakeoff process that no longer runs",
            dir.display()
        );
    }
    let (result, out, not_where_asked) = run_experiment_from_args(args, plan, stop, observer)?;
    // The result is on disk already: a closed standard output loses
    // nothing of it.
    to_stdout(|o| {
        TextExporter {
            details: args.details,
            width: screen_width(),
        }
        .export(std::slice::from_ref(&result), o)
    })?;
    emit(&format!("result file: {}\n", out.display()))?;
    if let Some(why) = not_where_asked {
        say!("error: {why}");
        return Ok(EXIT_RUN_ERRORS);
    }
    if args.print_result {
        let text = std::fs::read_to_string(&out)
            .map_err(|e| AppError::Failed(format!("cannot read back {}: {e}", out.display())))?;
        emit(&format!("{}\n{text}", bakeoff_core::result::LOG_MARKER))?;
    }
    if let Some(html) = html_path(args, &out) {
        // The result file is on disk already: a report that cannot be
        // written loses nothing, so it is a warning, not a failure.
        match write_report(&HtmlExporter, std::slice::from_ref(&result), &html) {
            Ok(()) => emit(&format!("report: {}\n", html.display()))?,
            Err(e) => say!(
                "warning: could not write the HTML report {}: {e}; make it later with `bakeoff report {} --html FILE`",
                html.display(),
                out.display()
            ),
        }
    }
    Ok(exit_code_of(&result))
}

/// Files bakeoff holds besides its clients' sockets: result and log
/// files, pipes, its admin connections to the servers, /proc readers.
const SPARE_FILES: u64 = 256;

/// Refuses a plan whose clients need more sockets at once than this
/// process may open (`limit`, already raised to the hard limit), before
/// any server starts: otherwise the crowd fails one connection at a time,
/// counted as the target's errors.
pub fn check_open_files(plan: &Plan, limit: u64) -> Result<(), AppError> {
    let most = plan
        .targets
        .iter()
        .flat_map(|t| plan.points_for(t))
        .map(|p| {
            let w = &p.workload;
            // A connection per client to every node of the target, and a
            // second socket per client across a link's relay.
            let relay = if w.link.is_some() { 2 } else { 1 };
            w.clients as u64 * w.topology.nodes().max(1) as u64 * relay
        })
        .max()
        .unwrap_or(0);
    let needed = most + SPARE_FILES;
    if limit > 0 && needed > limit {
        return Err(AppError::Usage(format!(
            "{most} client connections at once need about {needed} open files, and this process may open {limit} (its hard limit); raise it (`ulimit -n {needed}` in a root shell, or LimitNOFILE= / /etc/security/limits.conf) or lower --clients"
        )));
    }
    Ok(())
}

/// Writes a report to `path` (through a temporary file, so a reader never
/// sees half of it).
fn write_report(
    exporter: &dyn Exporter,
    results: &[ExperimentResult],
    path: &Path,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    exporter.export(results, &mut buf)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, &buf);
    }
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, &buf)?;
    std::fs::rename(&tmp, path)
}

/// What `run --dry-run` shows: the experiment, its targets and points, and
/// how long the timed runs take at least.
pub fn dry_run_text(plan: &bakeoff_core::plan::Plan) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let points = plan.points();
    let _ = writeln!(s, "experiment {} (scale {})", plan.name, plan.scale);
    if !plan.description.is_empty() {
        let _ = writeln!(s, "{}", plan.description.trim());
    }
    if let Some(f) = &plan.finding {
        let _ = writeln!(s, "the seed found: {f}");
    }
    let targets: Vec<String> = plan.targets.iter().map(|t| t.label()).collect();
    let _ = writeln!(s, "targets: {}", targets.join(", "));
    if !plan.requirements.is_empty() {
        let required: Vec<String> = plan.requirements.iter().map(|r| r.to_string()).collect();
        let _ = writeln!(s, "required: {}", required.join("; "));
    }
    for l in &plan.left_out {
        let _ = writeln!(s, "left out: {}: {}", l.target, l.why);
    }
    if let Some(shard) = plan.shard {
        let mine = plan.own_part(&plan.workload);
        let _ = writeln!(
            s,
            "shard {shard} (plan {}): {} of {} clients, records {}..{} loaded here, seed {}",
            plan.hash(),
            mine.clients,
            plan.workload.clients,
            mine.load_from,
            mine.load_to.unwrap_or(mine.records),
            plan.run_seed()
        );
    }
    if let Some(start) = &plan.start {
        let every = if start.every_s > 0.0 {
            format!(", the next runs one every {} s", start.every_s)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "the first measured run starts at {}{every} (tolerance {} s)",
            start.at, start.tolerance_s
        );
    }
    for (name, differs) in plan.per_target_differences() {
        let shown: Vec<String> = differs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "  {name} runs its own workload: {}", shown.join(", "));
    }
    let _ = writeln!(
        s,
        "{} target(s) x {} point(s) x {} repeat(s) = {} run(s){}",
        plan.targets.len(),
        points.len(),
        plan.repeats,
        plan.run_count(),
        if plan.workload.grow {
            " (growth: each target through its checkpoints on one server)"
        } else {
            ""
        }
    );
    let timed = points_text(plan, &points, &mut s);
    for t in &plan.targets {
        let line = match t.endpoint {
            bakeoff_core::plan::Endpoint::Managed => server_settings_line(plan, t),
            bakeoff_core::plan::Endpoint::External { .. } => {
                "settings: the running server's own".to_string()
            }
        };
        let _ = writeln!(s, "  {}: {line}", t.label());
    }
    if timed > 0.0 {
        let _ = writeln!(
            s,
            "measuring takes at least {:.0} s, plus loading and server starts",
            timed
        );
    }
    s
}

/// One line per point of `points`, with every parameter of its workload,
/// appended to `s`; returns the seconds the timed points measure for.
fn points_text(
    plan: &bakeoff_core::plan::Plan,
    points: &[bakeoff_core::plan::Point],
    s: &mut String,
) -> f64 {
    use std::fmt::Write;
    let mut timed = 0.0;
    for p in points {
        let w = &p.workload;
        let label: Vec<String> = p.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let length = match (w.duration_s, w.ops) {
            (Some(d), _) => {
                // A found warm-up judges a window of seconds before it
                // can end: at least that, or its bound if shorter.
                let shortest_warmup = if w.warmup_auto {
                    w.warmup_bound_s()
                        .min(bakeoff_core::stats::STEADY_WINDOW_S as f64)
                } else {
                    w.warmup_s
                };
                timed +=
                    (d + shortest_warmup) * (plan.targets.len() * plan.repeats as usize) as f64;
                if w.warmup_auto {
                    format!(
                        "{d} s + a warm-up found as it runs (at most {} s)",
                        w.warmup_bound_s()
                    )
                } else {
                    format!("{d} s + {} s warm-up", w.warmup_s)
                }
            }
            (None, Some(n)) => format!("{n} ops"),
            (None, None) if w.ops_per_client.is_some() => {
                format!("{} ops per client", w.ops_per_client.unwrap_or(0))
            }
            (None, None) => String::new(),
        };
        let _ = writeln!(
            s,
            "  point {}: {} records, {} clients, mix {}, {}",
            if label.is_empty() {
                "-".to_string()
            } else {
                label.join(" ")
            },
            w.records,
            w.clients,
            w.mix,
            length
        );
        // Every parameter of the run, as the result file will record it.
        let _ = writeln!(s, "    workload: {}", workload_line(w));
    }
    timed
}

/// Every parameter of a run's workload, `key=value`, as a user would
/// write it.
fn workload_line(w: &bakeoff_core::plan::Workload) -> String {
    bakeoff_core::plan::params::PARAMS
        .iter()
        .map(|p| format!("{}={}", p.key, (p.show)(w)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A target's settings as a run will use them: each declared setting as
/// set, else its default; those left to the server named apart.
fn server_settings_line(
    plan: &bakeoff_core::plan::Plan,
    target: &bakeoff_core::plan::TargetSpec,
) -> String {
    let Some(entry) = kind(&target.name) else {
        return String::new();
    };
    let mut set = Vec::new();
    let mut left = Vec::new();
    for d in declared_values(entry.facts().settings, plan.settings_of(target)) {
        match (d.value, d.set) {
            (Some(v), true) => set.push(format!("{}={v} (set)", d.name)),
            (Some(v), false) => set.push(format!("{}={v}", d.name)),
            (None, _) => left.push(d.name),
        }
    }
    let mut line = if set.is_empty() {
        "settings: none".to_string()
    } else {
        format!("settings: {}", set.join(" "))
    };
    if !left.is_empty() {
        line.push_str(&format!("; left to the target: {}", left.join(", ")));
    }
    line
}

/// Exit code for a finished experiment: interrupted; 2 when every run
/// that did not end well could not even start (its target did not open:
/// a server that would not start, a database with no room), which is for
/// the user to fix before a comparison is made; 1 for runs that failed
/// or had errors once started; else 0.
pub fn exit_code_of(result: &ExperimentResult) -> i32 {
    use bakeoff_core::result::RunStatus;
    let not_ok: Vec<_> = result
        .runs
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .collect();
    if result.status == bakeoff_core::result::ExperimentStatus::Interrupted {
        crate::signals::received().map_or(EXIT_INTERRUPTED, |sig| 128 + sig)
    } else if !not_ok.is_empty() && not_ok.iter().all(|r| r.failed_to_start()) {
        EXIT_USAGE
    } else if !not_ok.is_empty() || result.runs.is_empty() {
        EXIT_RUN_ERRORS
    } else {
        EXIT_OK
    }
}

/// Runs the experiment `plan` (built from `args` by [`plan`]); returns the
/// result and where it was written.
/// The third value says why the result is not where asked, when it went
/// to the temporary folder instead (the second value).
pub fn run_experiment_from_args(
    args: &RunArgs,
    plan: Plan,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<(ExperimentResult, PathBuf, Option<String>), AppError> {
    let out = args
        .out
        .as_ref()
        .map(PathBuf::from)
        .unwrap_or_else(|| default_out(&plan));
    check_outputs(&out, html_path(args, &out).as_deref())?;
    // Held until the run ends: a second bakeoff with the same -o is
    // refused rather than one result silently replacing the other.
    let _claim = bakeoff_servers::scratch::OutputLock::take(&out).map_err(AppError::Usage)?;
    // The default comparison skips what this machine cannot start; a target
    // the user named must work or the run does not start.
    let skip_unavailable = args.targets.is_empty() && args.preset.is_none();
    let opts = ExperimentOptions {
        out: out.clone(),
        stop,
        skip_unavailable,
    };
    let env = environment::detect(plan.seed, command_line());
    let r = match run_experiment(&plan, &Registry, env, &opts, observer) {
        // The result could not go where asked, but went to the temporary
        // folder: shown and kept, and the run still fails.
        Err(RunError::Write {
            path,
            source,
            saved: Some(at),
        }) => {
            let why = format!(
                "cannot write result file {path}: {source}; the result is in {} instead",
                at.display()
            );
            let result = ExperimentResult::read(&at)
                .map_err(|e| AppError::Failed(format!("{why}, but it cannot be read back: {e}")))?;
            return Ok((result, at, Some(why)));
        }
        r => r?,
    };
    if r.runs.is_empty() && r.status == bakeoff_core::result::ExperimentStatus::Complete {
        return Err(AppError::Usage(format!(
            "no target could be used: {}",
            r.warnings.join("; ")
        )));
    }
    Ok((r, out, None))
}

/// Where the HTML report goes, unless there is none.
fn html_path(args: &RunArgs, out: &Path) -> Option<PathBuf> {
    (!args.no_html).then(|| {
        args.html
            .as_ref()
            .map(PathBuf::from)
            .unwrap_or_else(|| out.with_extension("html"))
    })
}

/// Bytes written where the result file goes, before anything starts: a
/// small result file's size.
const PROBE_BYTES: usize = 64 * 1024;

/// The result file `out` where it is a pipe, a socket or a character
/// device: refused, or for a device taken if it takes a line break.
/// `None` for anything else (a file, or nothing yet).
fn check_special_file(out: &Path) -> Option<Result<(), AppError>> {
    let bad = |m: String| Err(AppError::Usage(m));
    if std::fs::metadata(out).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_fifo() || m.file_type().is_socket()
    }) {
        return Some(bad(format!(
            "-o {} is a pipe: the result file is written again after every run, and a pipe would take one copy after the other (or wait for ever for a reader); write to a file, or add --print-result to have the result printed once the runs end",
            out.display()
        )));
    }
    if std::fs::metadata(out).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_char_device()
    }) {
        // A device is written in place: a line break tells whether it
        // takes bytes at all (`/dev/full` refuses every write), where a
        // terminal is left alone.
        let took = std::fs::OpenOptions::new()
            .write(true)
            .open(out)
            .and_then(|f| {
                use std::io::{IsTerminal, Write};
                if f.is_terminal() {
                    return Ok(());
                }
                (&f).write_all(b"\n")
            });
        return Some(match took {
            Ok(()) => Ok(()),
            Err(e) => bad(format!(
                "cannot write the result file to the device {}: {e}; choose a file with -o",
                out.display()
            )),
        });
    }
    None
}

/// Checks, before anything starts, that the result file can be written
/// where asked and that nothing will overwrite it: a run is never lost
/// to a path found wrong at its end.
pub fn check_outputs(out: &Path, html: Option<&Path>) -> Result<(), AppError> {
    let bad = |m: String| Err(AppError::Usage(m));
    if out.as_os_str().is_empty() {
        return bad("-o is empty; give the result file a name, e.g. -o results/run.json".into());
    }
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if matches!(ext.as_deref(), Some("html" | "htm")) {
        return bad(format!(
            "-o {}: the result file is JSON and the report would replace it; write -o {} (the report goes beside it as .html), or --html for the report's own name",
            out.display(),
            out.with_extension("json").display()
        ));
    }
    if out.is_relative() {
        if let Err(e) = std::env::current_dir() {
            return bad(format!(
                "the current directory cannot be used ({e}): the result file {} is relative to it; cd to an existing directory or give -o an absolute path",
                out.display()
            ));
        }
    }
    if out.is_dir() {
        return bad(format!(
            "-o {} is a directory; give a file name, e.g. -o {}",
            out.display(),
            out.join("result.json").display()
        ));
    }
    if let Some(h) = html {
        let same =
            h == out || matches!((h.canonicalize(), out.canonicalize()), (Ok(a), Ok(b)) if a == b);
        if same {
            return bad(format!(
                "--html {} is the result file (-o) too, and the report would replace it; give the report another name",
                h.display()
            ));
        }
    }
    if let Some(checked) = check_special_file(out) {
        return checked;
    }
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Err(e) = std::fs::create_dir_all(dir) {
        return bad(format!(
            "cannot create {} for the result file {}: {e}; choose another place with -o",
            dir.display(),
            out.display()
        ));
    }
    // Room for a result file, not only for its name: a full disk takes a
    // new file but not its bytes.
    let probe = tempfile::Builder::new()
        .prefix(".bakeoff-probe-")
        .tempfile_in(dir)
        .and_then(|mut f| {
            use std::io::Write;
            f.write_all(&[b' '; PROBE_BYTES])?;
            f.as_file().sync_data()
        });
    if let Err(e) = probe {
        return bad(format!(
            "cannot write the result file {} in {}: {e}; free some space or choose another place with -o",
            out.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// `bakeoff list`.
pub fn list_text() -> String {
    let mut s = String::from(
        "targets (bakeoff run --target NAME, or --target SCHEME://host:port for one you run):\n\n",
    );
    for e in kinds() {
        let here = match e.available() {
            Ok(()) => "available here".to_string(),
            Err(why) => format!("not available here: {why}"),
        };
        let abilities = e.facts().abilities;
        let ops: Vec<&str> = abilities.ops.iter().map(|o| o.name()).collect();
        let how = match e.facts().reach.scheme() {
            None => "in-process (bakeoff opens it on a directory it creates)".to_string(),
            Some(scheme) => format!("started by bakeoff, or external at {scheme}://host:port"),
        };
        s.push_str(&format!(
            "  {:<18} {}\n  {:<18} ops: {}; pipelining: {}; {how}\n  {:<18} {here}\n\n",
            e.name(),
            e.facts().summary,
            "",
            ops.join(", "),
            if abilities.pipelining { "yes" } else { "no" },
            "",
        ));
    }
    s.push_str("server settings (preset [servers.NAME] or --set NAME.KEY=VALUE):\n");
    s.push_str(&bakeoff_drivers::registry::settings_text());
    s
}

/// Reads result file `path`, saying on stderr which of its histograms do
/// not decode (a corrupt or hand-edited file): their percentiles are then
/// only as the file states them, and charts drawn from them are missing.
fn read_result(path: &str) -> Result<ExperimentResult, AppError> {
    const SHOWN: usize = 5;
    let r = ExperimentResult::read(Path::new(path))?;
    let problems = r.histogram_problems();
    for p in problems.iter().take(SHOWN) {
        say!("warning: {path}: a latency histogram does not decode ({p}); its percentiles are as the file states them, and its charts are left out");
    }
    if problems.len() > SHOWN {
        say!(
            "warning: {path}: {} more histograms do not decode",
            problems.len() - SHOWN
        );
    }
    Ok(r)
}

fn report(args: &ReportArgs) -> Result<i32, AppError> {
    let results = args
        .files
        .iter()
        .map(|f| read_result(f))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(path) = &args.html {
        write_report(&HtmlExporter, &results, Path::new(path))
            .map_err(|e| AppError::Usage(format!("cannot write the HTML report {path}: {e}")))?;
        say!("report: {path}");
        if !(args.markdown || args.csv || args.json) {
            return Ok(EXIT_OK);
        }
    }
    let exporter: &dyn Exporter = if args.json {
        &JsonExporter
    } else if args.markdown {
        &MarkdownExporter
    } else if args.csv {
        &CsvExporter
    } else {
        &TextExporter {
            details: args.details,
            width: screen_width(),
        }
    };
    to_stdout(|o| exporter.export(&results, o))?;
    Ok(EXIT_OK)
}

fn merge(args: &MergeArgs) -> Result<i32, AppError> {
    if !args.output.ends_with(".json") {
        return Err(AppError::Usage(format!(
            "-o {}: the merged file is JSON; write -o NAME.json (the report goes beside it as .html)",
            args.output
        )));
    }
    // The output must not be one of the inputs: writing it would destroy
    // a shard's file.
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if let Some(f) = args
        .files
        .iter()
        .find(|f| same(Path::new(f), Path::new(&args.output)))
    {
        return Err(AppError::Usage(format!(
            "-o {}: that is one of the shard files ({f}); write the merged file elsewhere",
            args.output
        )));
    }
    let files = args
        .files
        .iter()
        .map(|f| read_result(f).map(|r| (f.clone(), r)))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = bakeoff_core::merge::merge_results(&files)
        .map_err(|e| AppError::Usage(format!("cannot merge: {e}")))?;
    let out = Path::new(&args.output);
    merged
        .write_atomic(out)
        .map_err(|e| AppError::Usage(format!("cannot write {}: {e}", args.output)))?;
    let html = out.with_extension("html");
    write_report(&HtmlExporter, std::slice::from_ref(&merged), &html).map_err(|e| {
        AppError::Usage(format!(
            "cannot write the HTML report {}: {e}",
            html.display()
        ))
    })?;
    say!(
        "merged {} shards into {} (report: {})",
        files.len(),
        args.output,
        html.display()
    );
    Ok(EXIT_OK)
}

fn kubernetes(args: &crate::cli::KubernetesArgs) -> Result<i32, AppError> {
    let manifests = crate::kubernetes::manifests(args, std::time::SystemTime::now())?;
    for note in &manifests.notes {
        say!("note: {note}");
    }
    let text = manifests.yaml;
    match &args.output {
        None => emit(&text)?,
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|e| AppError::Usage(format!("-o {path}: cannot write it: {e}")))?;
            say!("wrote the manifests of {} shards to {path}", args.shards);
        }
    }
    Ok(EXIT_OK)
}

fn compare(args: &CompareArgs) -> Result<i32, AppError> {
    let a = read_result(&args.a)?;
    let b = read_result(&args.b)?;
    let exporter = bakeoff_report::compare::CompareExporter {
        markdown: args.markdown,
    };
    let in_common = !bakeoff_report::compare::compare(&a, &b).rows.is_empty();
    let (a_path, b_path) = (&args.a, &args.b);
    let both = [a, b];
    to_stdout(|o| exporter.export(&both, o))?;
    if !in_common {
        return Err(AppError::Usage(format!(
            "{a_path} and {b_path} have no target and point in common"
        )));
    }
    Ok(EXIT_OK)
}

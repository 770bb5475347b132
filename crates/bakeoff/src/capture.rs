//! `bakeoff capture`: a live Redis's traffic, recorded through `MONITOR`
//! into bakeoff's JSONL trace, for `bakeoff run --replay` to send to every
//! target.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bakeoff_core::plan::{parse_target, Endpoint, Environment};
use bakeoff_core::replay::monitor_line;
use bakeoff_drivers::registry::Registry;

use crate::cli::CaptureArgs;
use crate::error::AppError;

/// What a capture recorded.
#[derive(Debug, Default)]
pub struct Captured {
    /// Operations written to the trace.
    pub ops: u64,
    /// Commands with no operation of bakeoff's, by name.
    pub skipped: std::collections::BTreeMap<String, u64>,
}

/// Records `args.url`'s traffic into `args.output` until the duration is
/// over or `stop` is set; the file holds every operation seen by then.
pub fn capture(args: &CaptureArgs, stop: &AtomicBool) -> Result<Captured, AppError> {
    let duration = bakeoff_core::units::parse_duration(&args.duration)
        .map_err(|e| AppError::Usage(format!("--duration: {e}")))?;
    let env = Environment::of(|k| std::env::var(k).ok());
    let spec = parse_target(&args.url, &Registry, &env)
        .map_err(|e| AppError::Usage(format!("{}: {e}", args.url)))?;
    let (host, port) = match (&spec.name[..], &spec.endpoint) {
        ("redis", Endpoint::External { host, port, .. }) => (host.clone(), *port),
        _ => {
            return Err(AppError::Usage(format!(
                "`{}` is not a Redis URL; capture records a running Redis: bakeoff capture redis://HOST:PORT",
                args.url
            )))
        }
    };
    let out = Path::new(&args.output);
    let mut file = std::fs::File::create(out)
        .map(std::io::BufWriter::new)
        .map_err(|e| AppError::Usage(format!("cannot write {}: {e}", out.display())))?;
    let mut stream = TcpStream::connect((host.as_str(), port)).map_err(|e| {
        AppError::Usage(format!(
            "cannot reach Redis at {host}:{port}: {e}; is it running?"
        ))
    })?;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut hello = String::new();
    if let Some(p) = &spec.password {
        let user = spec.user.as_deref().unwrap_or("default");
        hello.push_str(&resp(&["AUTH", user, p]));
    }
    hello.push_str(&resp(&["MONITOR"]));
    stream
        .write_all(hello.as_bytes())
        .map_err(|e| AppError::Failed(format!("{host}:{port}: {e}")))?;
    let mut reader = BufReader::new(stream);
    let mut got = Captured::default();
    let started = Instant::now();
    let mut line = String::new();
    while started.elapsed() < duration && !stop.load(Ordering::Relaxed) {
        match reader.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) if !line.ends_with('\n') => continue,
            Ok(_) => {
                record(line.trim_end(), args.keep_keys, &mut file, &mut got)?;
                line.clear();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(AppError::Failed(format!("{host}:{port}: {e}"))),
        }
    }
    file.flush()
        .map_err(|e| AppError::Failed(format!("cannot write {}: {e}", out.display())))?;
    Ok(got)
}

/// One line from the server: an error ends the capture, a command is
/// written as its operations or counted as skipped.
fn record(
    line: &str,
    keep_keys: bool,
    file: &mut impl Write,
    got: &mut Captured,
) -> Result<(), AppError> {
    if let Some(e) = line.strip_prefix('-') {
        return Err(AppError::Usage(format!("Redis refused the capture: {e}")));
    }
    match monitor_line(line, keep_keys) {
        None => {}
        Some(Err(name)) => *got.skipped.entry(name).or_insert(0) += 1,
        Some(Ok(ops)) => {
            for op in ops {
                let text = serde_json::to_string(&op).expect("an operation serialises");
                writeln!(file, "{text}")
                    .map_err(|e| AppError::Failed(format!("cannot write the trace: {e}")))?;
                got.ops += 1;
            }
        }
    }
    Ok(())
}

/// A command in RESP.
fn resp(args: &[&str]) -> String {
    let mut s = format!("*{}\r\n", args.len());
    for a in args {
        s.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s
}

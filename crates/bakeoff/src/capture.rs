//! `bakeoff capture`: a live Redis's traffic, recorded through `MONITOR`
//! into bakeoff's JSONL trace, for `bakeoff run --replay` to send to every
//! target.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bakeoff_core::plan::{parse_target, redact, Endpoint, Environment, TargetSpec};
use bakeoff_core::replay::monitor_line;
use bakeoff_drivers::registry::Registry;

use crate::cli::CaptureArgs;
use crate::error::AppError;

/// How long a server has to answer MONITOR (as `run`'s probe waits).
const HANDSHAKE: Duration = Duration::from_secs(2);

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
    // The URL as typed may hold a password: only its redacted form is
    // ever shown.
    let shown = redact(&args.url);
    let env = Environment::of(|k| std::env::var(k).ok());
    let spec = parse_target(&args.url, &Registry, &env)
        .map_err(|e| AppError::Usage(format!("{shown}: {e}")))?;
    let (host, port) = match (&spec.name[..], &spec.endpoint) {
        ("redis", Endpoint::External { host, port, .. }) => (host.clone(), *port),
        _ => {
            return Err(AppError::Usage(format!(
                "`{shown}` is not a Redis URL; capture records a running Redis: bakeoff capture redis://HOST:PORT"
            )))
        }
    };
    let out = Path::new(&args.output);
    if out.extension().is_some_and(|e| e == "csv") {
        return Err(AppError::Usage(format!(
            "-o {}: capture writes bakeoff's JSONL, and --replay reads a .csv as Twitter's CSV; name it .jsonl",
            out.display()
        )));
    }
    let mut file = std::fs::File::create(out)
        .map(std::io::BufWriter::new)
        .map_err(|e| AppError::Usage(format!("cannot write {}: {e}", out.display())))?;
    let stream = TcpStream::connect((host.as_str(), port)).map_err(|e| {
        AppError::Usage(format!(
            "cannot reach Redis at {host}:{port}: {e}; is it running?"
        ))
    })?;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let Some(mut reader) = monitor(stream, &spec, &host, port, stop)? else {
        return Ok(Captured::default());
    };
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

/// Sends MONITOR (after AUTH, where the URL has a password) on `stream`
/// to the Redis at `host`:`port`, and reads each command's +OK within
/// the handshake's time: the connection, ready for the traffic, or `None`
/// when `stop` was set first. Anything else is an error naming the server.
fn monitor(
    mut stream: TcpStream,
    spec: &TargetSpec,
    host: &str,
    port: u16,
    stop: &AtomicBool,
) -> Result<Option<BufReader<TcpStream>>, AppError> {
    let mut hello = String::new();
    if let Some(p) = &spec.password {
        let user = spec.user.as_deref().unwrap_or("default");
        hello.push_str(&resp(&["AUTH", user, p]));
    }
    hello.push_str(&resp(&["MONITOR"]));
    let unusable = |why: String| {
        AppError::Usage(format!(
            "the server at {host}:{port} {why}; is it Redis, and is it well? capture needs MONITOR answered with +OK"
        ))
    };
    stream
        .write_all(hello.as_bytes())
        .map_err(|e| unusable(format!("could not be sent MONITOR ({e})")))?;
    let mut reader = BufReader::new(stream);
    // Each command sent (AUTH, MONITOR) is answered +OK before the
    // traffic starts; anything else means this is no capture.
    let answers = 1 + usize::from(spec.password.is_some());
    let asked = Instant::now();
    let mut first = Vec::new();
    while first.len() < answers {
        let mut line = Vec::new();
        let read = loop {
            match (&mut reader).take(512).read_until(b'\n', &mut line) {
                Ok(n) if n > 0 && !line.ends_with(b"\n") && line.len() < 512 => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) && asked.elapsed() < HANDSHAKE
                        && !stop.load(Ordering::Relaxed) =>
                {
                    continue
                }
                other => break other,
            }
        };
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        match read {
            Ok(0) => return Err(unusable("closed the connection without a word".into())),
            Ok(_) if text == "+OK" => first.push(text),
            Ok(_) if text.starts_with('-') => {
                return Err(AppError::Usage(format!(
                    "Redis at {host}:{port} refused the capture: {}",
                    &text[1..]
                )))
            }
            Ok(_) => {
                return Err(unusable(format!(
                    "answered `{}`",
                    text.chars().take(60).collect::<String>()
                )))
            }
            Err(_) if stop.load(Ordering::Relaxed) => return Ok(None),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(unusable(format!(
                    "did not answer within {} s",
                    HANDSHAKE.as_secs()
                )))
            }
            Err(e) => return Err(unusable(format!("failed: {e}"))),
        }
    }
    Ok(Some(reader))
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

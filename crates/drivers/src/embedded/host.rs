//! An embedded engine in a child process of its own, for runs with a
//! fault: killing the engine must not kill bakeoff, a restart must open
//! the engine again on its files, and a power cut must find those files on
//! bakeoff's FUSE layer. The child (`bakeoff engine-host NAME`, started by
//! [`open`]) opens the engine as an in-process run would and serves it over
//! RESP on a loopback port: `GET`, `SET`, `DEL`, `DBSIZE`, `PING` and an
//! `INFO` with the engine's version, settings and command counts. bakeoff
//! then drives it with its Redis driver and holds it like any server it
//! started: its CPU, memory and disk are the child's, its counts are
//! checked against the child's own, and `--fault` kills, cuts or restarts
//! it.
//!
//! Each connection gets a thread and an engine session of its own, and a
//! reply is written only after the engine's call returned: one
//! acknowledgement per write, as durable as the engine's settings make it.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bakeoff_core::embedded::EngineSession;
use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Plan, TargetSpec, Workload};
use bakeoff_core::profile::RecordKind;
use bakeoff_core::target::Target;
use bakeoff_core::workload::OpKind;

use super::{Engine, Opened};

use crate::codec::resp::{decode_request, Request};

/// How often a connection waiting for a request looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Set by SIGTERM or SIGINT: the host closes its connections and the
/// engine (which flushes what it keeps in memory), then exits.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Calls per command, for `INFO commandstats` (bakeoff's count check).
#[derive(Default)]
struct Calls {
    get: AtomicU64,
    set: AtomicU64,
    del: AtomicU64,
}

/// What every connection shares.
struct Shared<'a, E: Engine> {
    name: &'a str,
    opened: &'a Opened<E>,
    calls: Calls,
}

impl<E: Engine> Shared<'_, E> {
    /// `INFO`: the engine, its settings, what each request does, and the
    /// calls so far, as `key:value` lines.
    fn info(&self) -> String {
        let o = self.opened;
        let mut s = format!(
            "# Server\r\nengine:{}\r\nengine_version:{}\r\n",
            self.name, o.version
        );
        for (k, v) in &o.settings {
            s.push_str(&format!("setting_{k}:{v}\r\n"));
        }
        for k in [OpKind::Get, OpKind::Set, OpKind::Delete] {
            s.push_str(&format!(
                "request_{}:{}\r\n",
                k.name(),
                o.engine.describe(k)
            ));
        }
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        s.push_str(&format!(
            "# Commandstats\r\ncmdstat_get:calls={}\r\ncmdstat_set:calls={}\r\ncmdstat_del:calls={}\r\n",
            n(&self.calls.get),
            n(&self.calls.set),
            n(&self.calls.del)
        ));
        s
    }
}

pub(crate) fn serve<E: Engine>(
    name: &str,
    opened: Opened<E>,
    port: u16,
) -> Result<(), TargetError> {
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_stop_signal as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGINT,
            on_stop_signal as *const () as libc::sighandler_t,
        );
    }
    let io = |e: std::io::Error| TargetError::Engine(format!("engine-host on port {port}: {e}"));
    let listener = TcpListener::bind(("127.0.0.1", port)).map_err(io)?;
    listener.set_nonblocking(true).map_err(io)?;
    let shared = Shared {
        name,
        opened: &opened,
        calls: Calls::default(),
    };
    std::thread::scope(|s| {
        while !STOP.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let shared = &shared;
                    s.spawn(move || connection(stream, shared));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => {
                    eprintln!("engine-host: accept: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    });
    // Every session is gone with its thread; the engine closes here, as it
    // would at the end of an in-process run.
    drop(opened);
    Ok(())
}

/// Serves one connection until the client leaves or the host stops.
fn connection<E: Engine>(mut stream: TcpStream, shared: &Shared<'_, E>) {
    let mut session = match shared.opened.engine.session() {
        Ok(s) => s,
        Err(e) => {
            let _ = stream.write_all(format!("-ERR {}\r\n", one_line(&e.0)).as_bytes());
            return;
        }
    };
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_nodelay(true);
    if stream.set_read_timeout(Some(STOP_POLL)).is_err() {
        return;
    }
    let mut input = Vec::with_capacity(64 * 1024);
    let mut start = 0;
    let mut out = Vec::with_capacity(64 * 1024);
    let mut value = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // Every whole request in the buffer is answered before the replies
        // go out together: pipelined requests get one write.
        loop {
            match decode_request(&input[start..]) {
                Request::Incomplete => break,
                Request::Invalid => {
                    out.extend_from_slice(
                        b"-ERR protocol error: expected an array of bulk strings\r\n",
                    );
                    let _ = stream.write_all(&out);
                    return;
                }
                Request::Complete { len, argc, args } => {
                    let buf = &input[start..start + len];
                    let arg = |i: usize| &buf[args[i].0..args[i].1];
                    let quit = answer(shared, &mut session, argc, arg, &mut value, &mut out);
                    start += len;
                    if quit {
                        let _ = stream.write_all(&out);
                        return;
                    }
                }
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
        if start == input.len() {
            input.clear();
            start = 0;
        } else if start > 32 * 1024 {
            input.drain(..start);
            start = 0;
        }
        if STOP.load(Ordering::SeqCst) {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

/// An error message on one line, as RESP needs it.
fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// Answers one request into `out`; true if the client asked to quit.
fn answer<'b, E: Engine>(
    shared: &Shared<'_, E>,
    session: &mut E::Session,
    argc: usize,
    arg: impl Fn(usize) -> &'b [u8],
    value: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> bool {
    let command = arg(0).to_ascii_uppercase();
    let error = |out: &mut Vec<u8>, e: &dyn std::fmt::Display| {
        out.extend_from_slice(format!("-ERR {}\r\n", one_line(&e.to_string())).as_bytes());
    };
    match (command.as_slice(), argc) {
        (b"GET", 2) => {
            shared.calls.get.fetch_add(1, Ordering::Relaxed);
            match session.get(arg(1), value) {
                Ok(true) => {
                    out.extend_from_slice(format!("${}\r\n", value.len()).as_bytes());
                    out.extend_from_slice(value);
                    out.extend_from_slice(b"\r\n");
                }
                Ok(false) => out.extend_from_slice(b"$-1\r\n"),
                Err(e) => error(out, &e),
            }
        }
        (b"SET", 3) => {
            shared.calls.set.fetch_add(1, Ordering::Relaxed);
            match session.put(arg(1), arg(2)) {
                Ok(()) => out.extend_from_slice(b"+OK\r\n"),
                Err(e) => error(out, &e),
            }
        }
        (b"DEL", 2) => {
            shared.calls.del.fetch_add(1, Ordering::Relaxed);
            match session.delete(arg(1)) {
                Ok(found) => out.extend_from_slice(if found { b":1\r\n" } else { b":0\r\n" }),
                Err(e) => error(out, &e),
            }
        }
        (b"PING", 1) => out.extend_from_slice(b"+PONG\r\n"),
        (b"DBSIZE", 1) => match shared.opened.engine.count() {
            Some(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
            None => error(out, &"this engine cannot count its records exactly"),
        },
        (b"INFO", _) => {
            let info = shared.info();
            out.extend_from_slice(format!("${}\r\n{info}\r\n", info.len()).as_bytes());
        }
        (b"QUIT", 1) => {
            out.extend_from_slice(b"+OK\r\n");
            return true;
        }
        _ => error(
            out,
            &format!(
                "unknown command or wrong number of arguments: '{}' with {argc}; the engine host serves GET, SET, DEL, DBSIZE, INFO, PING and QUIT",
                String::from_utf8_lossy(&command)
            ),
        ),
    }
    false
}

/// Refuses, before anything starts, a run with a fault that the engine
/// host cannot serve: a directory the user named (bakeoff must own the
/// files it restarts the engine on, and put them on its FUSE layer), or
/// profile records (the host serves key-value records only).
pub fn probe(spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
    let name = &spec.name;
    // Without a RESP client, the refusal `open` would give, now.
    #[cfg(not(feature = "redis"))]
    for point in plan.points() {
        if point.workload.fault.is_some() {
            open(spec, plan, &point.workload)?;
        }
    }
    for point in plan.points() {
        let w = &point.workload;
        let Some(fault) = &w.fault else { continue };
        if plan
            .settings_of(spec)
            .is_some_and(|t| t.contains_key("dir"))
        {
            return Err(TargetError::Settings(format!(
                "servers.{name}.dir: with --fault {fault}, bakeoff runs {name} in a child process on a directory of its own (it starts the engine again on those files, and a power cut needs them on its FUSE layer); remove `dir`"
            )));
        }
        if w.record == RecordKind::Profile {
            return Err(TargetError::Settings(format!(
                "--fault {fault} on {name}: the engine then runs in a child process that serves key-value records only; use --record kv"
            )));
        }
    }
    Ok(())
}

/// Refuses engine target `spec` in a child process: this build has no RESP
/// client (the `redis` feature), and the engine host speaks only RESP.
#[cfg(not(feature = "redis"))]
pub fn open(
    spec: &TargetSpec,
    _plan: &Plan,
    workload: &Workload,
) -> Result<Box<dyn Target>, TargetError> {
    let fault = workload
        .fault
        .as_ref()
        .map(|f| f.to_string())
        .unwrap_or_default();
    Err(TargetError::Settings(format!(
        "--fault {fault} on {}: the engine then runs in a child process that bakeoff reaches over RESP, and this bakeoff was built without its `redis` feature; build it with the default features",
        spec.name
    )))
}

/// Starts engine target `spec` in a child process for a run of `workload`
/// (which has a fault), on a fresh directory of bakeoff's (on its FUSE
/// layer when the fault is a power cut), and holds it as a managed server.
#[cfg(feature = "redis")]
pub fn open(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
) -> Result<Box<dyn Target>, TargetError> {
    use bakeoff_core::result::TargetRecord;
    use bakeoff_servers::{ManagedServer, ServerCommand};
    let name = spec.name.as_str();
    let table = plan.settings_of(spec).cloned().unwrap_or_default();
    // The running executable itself, even should its file have been
    // replaced (a rebuild, an upgrade) since bakeoff started.
    let program = "/proc/self/exe";
    let shown = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| program.to_string());
    let settings = toml::to_string(&table)
        .map_err(|e| TargetError::Settings(format!("servers.{name}: {e}")))?;
    let cmd = ServerCommand {
        program,
        name: "engine-host",
        package: "bakeoff",
        port: None,
        args: &|port, dir| {
            vec![
                "engine-host".into(),
                name.into(),
                "--port".into(),
                port.to_string(),
                "--dir".into(),
                dir.display().to_string(),
                "--settings".into(),
                settings.clone(),
            ]
        },
        ready: &|addr| crate::admin::resp_pings(addr, "engine-host"),
        // A restart opens the engine on everything it stored.
        ready_timeout: Duration::from_secs(120),
        extra_dirs: &[],
        run_as: None,
        init: None,
        lazy_disk: workload.cuts_power(),
        stop_signal: libc::SIGTERM,
    };
    let mut server = ManagedServer::start(&cmd).map_err(TargetError::cause)?;
    server.limit(bakeoff_servers::Limits::of(workload))?;
    let command_line = format!("{shown} {}", server.args.join(" "));
    let mut target = crate::redis::RedisTarget::serving(server);
    let info = target.info("default").map_err(|e| {
        TargetError::Server(format!("cannot read INFO from the {name} engine host: {e}"))
    })?;
    let mut record = TargetRecord {
        name: spec.name.clone(),
        mode: "embedded, in a child process (RESP over loopback)".into(),
        ..TargetRecord::default()
    };
    for (k, v) in info {
        if k == "engine_version" {
            record.version = Some(v);
        } else if let Some(s) = k.strip_prefix("setting_") {
            record.settings.insert(s.to_string(), v);
        } else if let Some(op) = k.strip_prefix("request_") {
            record.requests.insert(
                op.to_string(),
                format!("RESP to bakeoff's engine host, then {v}"),
            );
        }
    }
    if let Some(d) = record.requests.get("set").cloned() {
        record.requests.insert("update".into(), d);
    }
    record.settings.insert("command_line".into(), command_line);
    target.set_record(record);
    Ok(Box::new(target))
}

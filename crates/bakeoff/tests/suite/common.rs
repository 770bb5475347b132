//! Shared fixtures: real servers started by the test itself (through
//! bakeoff's own ManagedServer), and a way to run the bakeoff binary.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use bakeoff_servers::{ManagedServer, ServerCommand};

/// A loopback port nothing listens on and nothing else can take while the
/// returned socket lives: bound, never listening, so connecting to it is
/// refused. (A port merely found free can be taken meanwhile by a server
/// another test starts: a URL meant to be unreachable then reaches it.)
pub fn closed_port() -> (std::os::fd::OwnedFd, u16) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns, with
    // a sockaddr_in of the size passed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let rc = libc::bind(
            fd,
            &addr as *const libc::sockaddr_in as *const libc::sockaddr,
            len,
        );
        assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
        let mut got_len = len;
        let rc = libc::getsockname(
            fd,
            &mut addr as *mut libc::sockaddr_in as *mut libc::sockaddr,
            &mut got_len,
        );
        assert_eq!(rc, 0, "getsockname: {}", std::io::Error::last_os_error());
        (owned, u16::from_be(addr.sin_port))
    }
}

/// Fails under CI when a server is missing; skips with a reason elsewhere.
pub fn require(program: &str, package: &str) -> bool {
    if bakeoff_servers::find_on_path(program).is_some() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") {
        panic!("{program} is not installed; CI must install the Debian package {package} (see scripts/test.sh)");
    }
    eprintln!("skipping: {program} is not installed (apt-get install {package})");
    false
}

/// Like `require`, for a program that may live outside PATH (`dirs` are
/// glob patterns, e.g. `/usr/lib/postgresql/*/bin`).
pub fn require_in(program: &str, dirs: &[&str], package: &str) -> bool {
    if bakeoff_servers::find_program(program, dirs).is_some() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") {
        panic!("{program} is not installed; CI must install {package} (see scripts/setup.sh)");
    }
    eprintln!("skipping: {program} is not installed ({package})");
    false
}

/// FerretDB or mongod, whichever this machine has (the test script installs
/// FerretDB, since Debian 12 packages no MongoDB server); CI fails only
/// when neither is there.
pub fn mongodb_installed() -> bool {
    bakeoff_servers::find_program("mongod", &[]).is_some()
        || require_in(
            "ferretdb",
            &["/usr/local/bin"],
            "FerretDB (scripts/install-ferretdb.sh)",
        )
}

/// A redis-server started for one test, optionally with a password.
pub fn redis(password: Option<&str>) -> ManagedServer {
    redis_on(password, &[])
}

/// A redis-server listening on loopback and on the addresses `also`
/// (with protected mode off, so that they are served without a password:
/// they are the test's own, in namespaces it made).
pub fn redis_on(password: Option<&str>, also: &[&str]) -> ManagedServer {
    let pw = password.map(|s| s.to_string());
    let also: Vec<String> = also.iter().map(|s| s.to_string()).collect();
    let args = move |port: u16, dir: &std::path::Path| {
        let mut a: Vec<String> = vec!["--port".into(), port.to_string(), "--bind".into()];
        a.push("127.0.0.1".into());
        a.extend(also.iter().cloned());
        if !also.is_empty() {
            a.extend(["--protected-mode".into(), "no".into()]);
        }
        a.extend(
            [
                "--dir",
                &dir.display().to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ]
            .map(String::from),
        );
        if let Some(p) = &pw {
            a.push("--requirepass".into());
            a.push(p.clone());
        }
        a
    };
    ManagedServer::start(&ServerCommand {
        program: "redis-server",
        name: "redis-server",
        package: "redis-server",
        port: None,
        args: &args,
        ready: &|addr| TcpStream::connect(addr).is_ok(),
        ready_timeout: Duration::from_secs(20),
        extra_dirs: &[],
        run_as: None,
        init: None,
        lazy_disk: false,
        stop_signal: libc::SIGTERM,
    })
    .expect("redis-server starts")
}

/// A memcached started for one test.
pub fn memcached() -> ManagedServer {
    ManagedServer::start(&ServerCommand {
        program: "memcached",
        name: "memcached",
        package: "memcached",
        port: None,
        args: &|port, _| {
            vec![
                "-p".into(),
                port.to_string(),
                "-l".into(),
                "127.0.0.1".into(),
                "-U".into(),
                "0".into(),
                "-m".into(),
                "256".into(),
                "-u".into(),
                "root".into(),
            ]
        },
        ready: &|addr| TcpStream::connect(addr).is_ok(),
        ready_timeout: Duration::from_secs(20),
        extra_dirs: &[],
        run_as: None,
        init: None,
        lazy_disk: false,
        stop_signal: libc::SIGTERM,
    })
    .expect("memcached starts")
}

/// Sends raw bytes and reads until `done` says the reply is whole.
pub fn call(addr: std::net::SocketAddr, req: &[u8], done: impl Fn(&[u8]) -> bool) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    while !done(&buf) {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// `INFO commandstats` calls of one command.
pub fn redis_calls(addr: std::net::SocketAddr, cmd: &str) -> u64 {
    redis_calls_as(addr, None, cmd).expect("redis answers INFO commandstats")
}

/// `INFO commandstats` calls of one command, after `AUTH password` where
/// one is given; `None` where the server does not answer (yet, or any
/// more), so that a wait can poll a server that is still starting.
pub fn redis_calls_as(
    addr: std::net::SocketAddr,
    password: Option<&str>,
    cmd: &str,
) -> Option<u64> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut req = String::new();
    if let Some(p) = password {
        req.push_str(&format!("AUTH {p}\r\n"));
    }
    req.push_str("INFO commandstats\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    // The bulk reply (`$N`), after AUTH's `+OK` where one was sent.
    let whole = |b: &[u8]| -> Option<usize> {
        let t = String::from_utf8_lossy(b);
        let at = t.find('$')?;
        let end = at + t[at..].find("\r\n")?;
        let n: usize = t[at + 1..end].parse().ok()?;
        (b.len() >= end + 2 + n + 2).then_some(at)
    };
    let at = loop {
        if let Some(at) = whole(&buf) {
            break at;
        }
        if buf.starts_with(b"-") && buf.ends_with(b"\r\n") {
            return None;
        }
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let text = String::from_utf8_lossy(&buf[at..]).into_owned();
    Some(
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:")))
            .and_then(|v| v.split(',').find_map(|f| f.strip_prefix("calls=")))
            .map(|c| c.parse().unwrap())
            .unwrap_or(0),
    )
}

/// Waits until `ready` holds, polling, and fails naming `what` after two
/// minutes: a condition waited for, which a busy machine only slows
/// (where a fixed sleep before a signal was a flake under load).
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !ready() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 120 s for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the redis at `addr` has counted more than `at_least` calls
/// of `cmd` (the run under test is that far along).
pub fn wait_for_redis_calls(
    addr: std::net::SocketAddr,
    password: Option<&str>,
    cmd: &str,
    at_least: u64,
) {
    wait_for(&format!("{at_least} {cmd} calls at {addr}"), || {
        redis_calls_as(addr, password, cmd).is_some_and(|n| n >= at_least)
    });
}

/// The pid and address of the first redis-server the process `parent`
/// started: redis retitles itself `redis-server 127.0.0.1:PORT`, and
/// before that its command line says `--port PORT`.
pub fn managed_redis(parent: u32) -> (u32, std::net::SocketAddr) {
    first_child(parent, |pid, args| {
        args.first()?.contains("redis-server").then_some(())?;
        let port = match args.iter().position(|a| a == "--port") {
            Some(i) => args.get(i + 1)?.clone(),
            None => {
                let title = args.first()?;
                let at = title.find("127.0.0.1:")? + "127.0.0.1:".len();
                title[at..].split_whitespace().next()?.to_string()
            }
        };
        Some((pid, format!("127.0.0.1:{port}").parse().ok()?))
    })
}

/// The port a server's command line `args` names (`--port=N`, `-p N`).
pub fn port_of(args: &[String]) -> u16 {
    args.iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix("--port=") {
            Some(p) => p.parse().ok(),
            None if a == "-p" => args.get(i + 1)?.parse().ok(),
            None => None,
        })
        .unwrap_or_else(|| panic!("no port in {args:?}"))
}

/// Established TCP connections to local port `port` (the server's ends,
/// from /proc/net/tcp and tcp6).
pub fn connections_to(port: u16) -> usize {
    let ours = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>())
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(&ours) && f[3] == "01"
        })
        .count()
}

/// A column of `pg_stat_database` (`xact_commit`, `sessions`) for the
/// database `postgres`, where bakeoff works, of the PostgreSQL at loopback
/// `port`; `None` where it does not answer. Asked through psql as user
/// `bakeoff` from database `template1`, so that the asking is not counted.
/// The statistics reach the view within about a second of the statements,
/// a session's when it ends.
pub fn postgres_stat(port: u16, column: &str) -> Option<u64> {
    let o = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "bakeoff"])
        .args(["-d", "template1", "-At", "-c"])
        .arg(format!(
            "SELECT {column} FROM pg_stat_database WHERE datname = 'postgres'"
        ))
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .ok()?;
    String::from_utf8_lossy(&o.stdout).trim().parse().ok()
}

/// Waits until the PostgreSQL at `port` has counted `more` of `column`
/// (see [`postgres_stat`]) beyond what it had when the wait began.
pub fn wait_for_postgres_stat(port: u16, column: &str, more: u64) {
    let mut base = None;
    wait_for(&format!("{more} more {column} at port {port}"), || {
        let Some(now) = postgres_stat(port, column) else {
            return false;
        };
        let from = *base.get_or_insert(now);
        now >= from + more
    });
}

/// Waits until the PostgreSQL at `port` has committed `more` transactions
/// beyond what it had when the wait began (the run under test is serving).
pub fn wait_for_postgres_commits(port: u16, more: u64) {
    wait_for_postgres_stat(port, "xact_commit", more);
}

/// memcached `stats` value.
pub fn memcached_stat(addr: std::net::SocketAddr, name: &str) -> u64 {
    let text = call(addr, b"stats\r\n", |b| b.ends_with(b"END\r\n"));
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("STAT {name} ")))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no stat {name}"))
}

/// Path of the bakeoff binary built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bakeoff"))
}

/// Runs bakeoff with `args`; returns its output.
pub fn bakeoff(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("bakeoff runs")
}

/// Runs bakeoff with `args`, requires exit `code` (failing with the
/// command line and bakeoff's stderr otherwise) and returns its stderr.
pub fn expect_exit(args: &[&str], code: i32) -> String {
    let o = bakeoff(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(code),
        "bakeoff {}: {stderr}",
        args.join(" ")
    );
    stderr
}

/// Held for writing by a test that must not share the two cores with
/// another test of the suite, for reading by the rest.
static ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Runs the calling test with no other test of the suite beside it (for
/// as long as the guard lives); the others take [`beside_others`].
pub fn alone() -> Turn<std::sync::RwLockWriteGuard<'static, ()>> {
    Turn::new(ALONE.write().unwrap_or_else(|e| e.into_inner()), "alone")
}

/// Lets the calling test run beside the others, but not beside one that
/// runs [`alone`].
pub fn beside_others() -> Turn<std::sync::RwLockReadGuard<'static, ()>> {
    Turn::new(ALONE.read().unwrap_or_else(|e| e.into_inner()), "beside")
}

/// A test's turn under the lock. Where `BAKEOFF_TEST_TIMES` names a file
/// (scripts/test.sh sets it), its end appends how long the test held its
/// turn, how (`alone` / `beside`) and its name: what the suite's minutes
/// are spent on, without the time a test waited for the lock.
pub struct Turn<G> {
    _guard: G,
    how: &'static str,
    started: Instant,
}

impl<G> Turn<G> {
    fn new(guard: G, how: &'static str) -> Self {
        Turn {
            _guard: guard,
            how,
            started: Instant::now(),
        }
    }
}

impl<G> Drop for Turn<G> {
    fn drop(&mut self) {
        let Some(path) = std::env::var_os("BAKEOFF_TEST_TIMES") else {
            return;
        };
        // libtest names each test's thread after the test.
        let name = std::thread::current().name().unwrap_or("?").to_string();
        let line = format!(
            "{}\t{:.1}\t{name}\n",
            self.how,
            self.started.elapsed().as_secs_f64()
        );
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// A fresh temporary directory.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Reads a result file as JSON.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `bakeoff run`-style `args` quietly into a result file of its own,
/// expects exit 0 (failing with bakeoff's stderr otherwise) and returns
/// the result.
pub fn run_ok(args: &[&str]) -> serde_json::Value {
    let dir = tmp();
    let out = dir.path().join("result.json");
    let mut all = args.to_vec();
    all.extend(["--quiet", "-o", out.to_str().unwrap()]);
    expect_exit(&all, 0);
    read_json(&out)
}

/// Starts bakeoff with `args`, its output piped, without waiting for it.
pub fn bakeoff_spawn(args: &[&str]) -> std::process::Child {
    Command::new(bin())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bakeoff starts")
}

/// What `pick` makes of the first child process of `parent` (its pid and
/// command line) it accepts, waiting up to 20 s for one.
pub fn first_child<T>(parent: u32, pick: impl Fn(u32, &[String]) -> Option<T>) -> T {
    // Generous: a condition waited for, which a busy machine only slows.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = children_with_cmdline(parent)
            .into_iter()
            .find_map(|(pid, args)| pick(pid, &args));
        if let Some(t) = found {
            return t;
        }
        assert!(std::time::Instant::now() < deadline, "no server started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The processes whose parent is `parent`, with their command lines.
pub fn children_with_cmdline(parent: u32) -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent is the second field after the command's closing paren.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            out.push((pid, args));
        }
    }
    out
}

/// Waits up to `limit` for `child` to end; a child still running then is
/// killed, and `None` says it hung.
pub fn wait_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let t = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

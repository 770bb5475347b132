//! # bakeoff-servers
//!
//! Managed servers: bakeoff finds the server binary on PATH, starts it as a
//! plain child process in a fresh temporary directory on a free 127.0.0.1
//! port, waits until it answers, samples its CPU, RSS and disk I/O from
//! /proc, and stops it at the end — on drop, so also on error and on
//! Ctrl-C. The child is started with `PR_SET_PDEATHSIG`, so even a killed
//! bakeoff leaves no server behind.
//!
//! ## Layout
//!
//! - [`ManagedServer`]: one running server process and its directory.
//! - [`ServerCommand`]: what to start and how to tell it is ready.
//! - [`proc_snapshot`]: /proc sampling of any process.
//! - [`cgroup::MemoryCap`]: a memory limit around a process for a run.

pub mod cgroup;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bakeoff_core::runner::ProcSnapshot;

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The binary is not installed.
    #[error("`{program}` is not on PATH; install it with `apt-get install {package}` (Debian package {package})")]
    NotInstalled {
        /// Binary name.
        program: String,
        /// Debian package that provides it.
        package: String,
    },
    /// The port asked for is taken.
    #[error("port {port} on 127.0.0.1 is already in use; free it, or leave the port unset so bakeoff picks a free one")]
    PortInUse {
        /// The port.
        port: u16,
    },
    /// The process exited or never answered.
    #[error("{program} did not start: {reason}{log}")]
    Failed {
        /// Binary name.
        program: String,
        /// What happened.
        reason: String,
        /// Tail of the server's log, if any.
        log: String,
    },
    /// Creating the directory or spawning failed.
    #[error("cannot start {program}: {source}")]
    Io {
        /// Binary name.
        program: String,
        /// Underlying error.
        source: std::io::Error,
    },
}

/// Finds `program` on PATH.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| {
                    m.is_file()
                        && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
                })
                .unwrap_or(false)
        })
}

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether `port` on 127.0.0.1 can be bound right now.
pub fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Prepares a server's data directory: gets the binary's path and the
/// directory; the error says what failed.
pub type InitFn<'a> = dyn Fn(&Path, &Path) -> Result<(), String> + 'a;

/// What to start.
pub struct ServerCommand<'a> {
    /// Binary name on PATH.
    pub program: &'a str,
    /// Debian package that provides it (for the error message).
    pub package: &'a str,
    /// Fixed port, or `None` for a free one.
    pub port: Option<u16>,
    /// Builds the arguments from the port and the data directory.
    pub args: &'a dyn Fn(u16, &Path) -> Vec<String>,
    /// True once the server answers on the address.
    pub ready: &'a dyn Fn(SocketAddr) -> bool,
    /// How long to wait for readiness.
    pub ready_timeout: Duration,
    /// Directories searched after PATH (e.g. `/usr/lib/postgresql/15/bin`).
    pub extra_dirs: &'a [&'a str],
    /// Run the server as this user (servers that refuse root).
    pub run_as: Option<&'a str>,
    /// Prepares the data directory (e.g. `initdb`); gets the binary's path
    /// and the directory.
    pub init: Option<&'a InitFn<'a>>,
}

/// Finds `program` on PATH or in `extra` directories (globs like
/// `/usr/lib/postgresql/*/bin` are expanded, newest last wins).
pub fn find_program(program: &str, extra: &[&str]) -> Option<PathBuf> {
    if let Some(p) = find_on_path(program) {
        return Some(p);
    }
    let mut found = None;
    for pattern in extra {
        let dirs: Vec<PathBuf> = match pattern.split_once('*') {
            Some((head, tail)) => {
                let mut v: Vec<PathBuf> = std::fs::read_dir(head)
                    .map(|rd| {
                        rd.flatten()
                            .map(|e| e.path().join(tail.trim_start_matches('/')))
                            .collect()
                    })
                    .unwrap_or_default();
                v.sort();
                v
            }
            None => vec![PathBuf::from(pattern)],
        };
        for d in dirs {
            let p = d.join(program);
            if p.is_file() {
                found = Some(p);
            }
        }
    }
    found
}

/// User and group ids of `user`.
pub fn user_ids(user: &str) -> Result<(u32, u32), String> {
    let c = std::ffi::CString::new(user).map_err(|_| format!("bad user name {user}"))?;
    // SAFETY: getpwnam returns a pointer to static storage or null.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return Err(format!("there is no user `{user}` on this machine"));
    }
    // SAFETY: pw is non-null and points to a valid passwd record.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Gives `path` (and everything under it) to `uid:gid`.
pub fn chown_tree(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))?;
    if path.is_dir() {
        for e in std::fs::read_dir(path)? {
            chown_tree(&e?.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// A command that runs as `user` when given (setgid/setuid before exec).
pub fn command_as(binary: &Path, user: Option<(u32, u32)>) -> Command {
    let mut c = Command::new(binary);
    if let Some((uid, gid)) = user {
        // SAFETY: setgid/setuid are async-signal-safe; they run in the child
        // between fork and exec.
        unsafe {
            c.pre_exec(move || {
                if libc::setgid(gid) != 0 || libc::setuid(uid) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    c
}

/// Starts `binary` with `args` in `dir` and waits until it listens on
/// `port` and answers; the error says why not.
fn spawn_and_wait(
    cmd: &ServerCommand,
    binary: &Path,
    args: &[String],
    user: Option<(u32, u32)>,
    dir: &Path,
    port: u16,
) -> Result<ServerProcess, ServerError> {
    let io = |source| ServerError::Io {
        program: cmd.program.into(),
        source,
    };
    let log_path = dir.join("server.log");
    let log = std::fs::File::create(&log_path).map_err(io)?;
    let log2 = log.try_clone().map_err(io)?;
    let mut command = command_as(binary, user);
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // SAFETY: prctl is async-signal-safe; this runs in the child between
    // fork and exec and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut process = ServerProcess(command.spawn().map_err(io)?);
    let pid = process.0.id();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + cmd.ready_timeout;
    loop {
        if let Ok(Some(status)) = process.0.try_wait() {
            let log = log_tail(dir);
            if log.contains("in use") || log.contains("Address already") {
                return Err(ServerError::PortInUse { port });
            }
            return Err(ServerError::Failed {
                program: cmd.program.into(),
                reason: format!("it exited with {status}"),
                log,
            });
        }
        // Until our process holds the listening socket, whatever answers
        // on the port is somebody else's.
        if listens_on(pid, port) != Some(false)
            && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            && (cmd.ready)(addr)
        {
            return Ok(process);
        }
        if Instant::now() > deadline {
            return Err(ServerError::Failed {
                program: cmd.program.into(),
                reason: format!("it did not answer on {addr} within {:?}", cmd.ready_timeout),
                log: log_tail(dir),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` holds a TCP socket listening on `port`; `None`
/// when that cannot be told (its file descriptors are not ours to read).
pub fn listens_on(pid: u32, port: u16) -> Option<bool> {
    let mut sockets = std::collections::HashSet::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            if let Some(inode) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
            {
                sockets.insert(inode.to_string());
            }
        }
    }
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if f.len() > 9 && f[3] == "0A" && local_port == Some(port) && sockets.contains(f[9]) {
                return Some(true);
            }
        }
    }
    Some(false)
}

/// Last lines of the server log in `dir`, prefixed for an error message.
fn log_tail(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!(
            "\n  server log: {}",
            lines
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n  server log: ")
        )
    }
}

/// A running server started by bakeoff. Dropping it stops the process
/// (SIGTERM, then SIGKILL after 5 s) and removes its directory.
pub struct ManagedServer {
    // Declared first: dropped (the process stopped) before the directory
    // goes and the memory cap is removed.
    process: ServerProcess,
    dir: tempfile::TempDir,
    /// Loopback address it listens on.
    pub addr: SocketAddr,
    /// Process id.
    pub pid: u32,
    /// Full path of the binary.
    pub binary: PathBuf,
    /// Arguments it was started with.
    pub args: Vec<String>,
    cap: Option<cgroup::MemoryCap>,
}

/// A server process that is stopped when dropped.
struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            // SAFETY: signalling our own child by its pid.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if matches!(self.0.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Times a server on a port bakeoff picked is started again on another
/// when the port was taken in between (picking and binding are two steps,
/// and other programs' connections draw from the same ports).
const PORT_ATTEMPTS: usize = 5;

impl ManagedServer {
    /// Starts the server and waits until it is ready.
    pub fn start(cmd: &ServerCommand) -> Result<Self, ServerError> {
        let binary =
            find_program(cmd.program, cmd.extra_dirs).ok_or_else(|| ServerError::NotInstalled {
                program: cmd.program.into(),
                package: cmd.package.into(),
            })?;
        let io = |source| ServerError::Io {
            program: cmd.program.into(),
            source,
        };
        if let Some(p) = cmd.port {
            if !port_is_free(p) {
                return Err(ServerError::PortInUse { port: p });
            }
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("bakeoff-{}-", cmd.program))
            .tempdir()
            .map_err(io)?;
        // Servers that drop privileges (memcached -u nobody) need to reach it.
        let _ = std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        );
        let user = match cmd.run_as {
            Some(u) => {
                let ids = user_ids(u).map_err(|reason| ServerError::Failed {
                    program: cmd.program.into(),
                    reason,
                    log: String::new(),
                })?;
                chown_tree(dir.path(), ids.0, ids.1).map_err(io)?;
                Some(ids)
            }
            None => None,
        };
        if let Some(init) = cmd.init {
            init(&binary, dir.path()).map_err(|reason| ServerError::Failed {
                program: cmd.program.into(),
                reason,
                log: String::new(),
            })?;
        }
        let mut attempt = 1;
        loop {
            // Picked only now, after the (slow) initialisation: the port
            // stays unbound for as short a time as can be.
            let port = match cmd.port {
                Some(p) => p,
                None => free_port().map_err(io)?,
            };
            let args = (cmd.args)(port, dir.path());
            match spawn_and_wait(cmd, &binary, &args, user, dir.path(), port) {
                Ok(process) => {
                    return Ok(ManagedServer {
                        pid: process.0.id(),
                        process,
                        dir,
                        addr: ([127, 0, 0, 1], port).into(),
                        binary,
                        args,
                        cap: None,
                    })
                }
                Err(ServerError::PortInUse { .. })
                    if cmd.port.is_none() && attempt < PORT_ATTEMPTS =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The server's data directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Last lines of the server's log, prefixed for an error message.
    pub fn log_tail(&self) -> String {
        log_tail(self.dir.path())
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.process.0.try_wait(), Ok(None))
    }

    /// Puts the server under a memory cap (RSS + page cache) of `limit`
    /// bytes until it stops.
    pub fn cap_memory(&mut self, limit: u64) -> Result<(), String> {
        let mut cap = cgroup::MemoryCap::create(limit, "server")?;
        cap.add(self.pid)?;
        self.cap = Some(cap);
        Ok(())
    }

    /// CPU, RSS, disk I/O, directory size and capped memory now, summed
    /// over the server and its child processes (PostgreSQL forks one per
    /// connection).
    pub fn snapshot(&self) -> ProcSnapshot {
        let mut s = proc_snapshot(self.pid).unwrap_or_default();
        for child in children_of(self.pid) {
            if let Some(c) = proc_snapshot(child) {
                s.cpu_ns += c.cpu_ns;
                s.rss_bytes += c.rss_bytes;
                s.read_bytes += c.read_bytes;
                s.write_bytes += c.write_bytes;
            }
        }
        s.disk_bytes = dir_size(self.dir.path());
        if let Some(u) = self.cap.as_ref().and_then(|c| c.usage()) {
            s.cgroup_memory_bytes = Some(u.total);
            s.cgroup_cache_bytes = Some(u.cache);
        }
        s
    }
}

/// Raises this process's soft limit on open files to its hard limit (a
/// thousand clients need a thousand sockets; servers started later inherit
/// it); returns the new limit.
pub fn raise_open_file_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur;
            }
        }
    }
    lim.rlim_cur
}

/// Reads CPU time, RSS and storage I/O of process `pid` from /proc.
pub fn proc_snapshot(pid: u32) -> Option<ProcSnapshot> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 of the whole line, in clock ticks.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let rss_pages = f.get(21)?.parse::<u64>().ok()?;
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    let field = |name: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(ProcSnapshot {
        cpu_ns: ticks * 1_000_000_000 / hz,
        rss_bytes: rss_pages * page,
        read_bytes: field("read_bytes:"),
        write_bytes: field("write_bytes:"),
        disk_bytes: 0,
        cgroup_memory_bytes: None,
        cgroup_cache_bytes: None,
    })
}

/// Process ids whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .and_then(|(_, r)| r.split_whitespace().nth(1))
                        .and_then(|p| p.parse::<u32>().ok())
                })
                == Some(pid)
        })
        .collect()
}

/// Total size of the files under `dir`, bytes.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `program` started with `args` on a port of bakeoff's choosing,
    /// ready as soon as it answers, within `ready_timeout`.
    fn command<'a>(
        program: &'a str,
        package: &'a str,
        args: &'a dyn Fn(u16, &Path) -> Vec<String>,
        ready_timeout: Duration,
    ) -> ServerCommand<'a> {
        ServerCommand {
            program,
            package,
            port: None,
            args,
            ready: &|_| true,
            ready_timeout,
            extra_dirs: &[],
            run_as: None,
            init: None,
        }
    }

    #[test]
    fn missing_binary_names_its_package() {
        let cmd = command(
            "no-such-server-bakeoff",
            "no-such-package",
            &|_, _| vec![],
            Duration::from_secs(1),
        );
        let e = ManagedServer::start(&cmd).err().unwrap().to_string();
        assert!(e.contains("apt-get install no-such-package"), "{e}");
    }

    #[test]
    fn snapshot_of_self_has_cpu_and_rss() {
        let s = proc_snapshot(std::process::id()).unwrap();
        assert!(s.rss_bytes > 0);
    }

    #[test]
    fn port_in_use_is_reported() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let cmd = ServerCommand {
            port: Some(port),
            ..command(
                "sleep",
                "coreutils",
                &|_, _| vec!["5".into()],
                Duration::from_secs(1),
            )
        };
        let e = ManagedServer::start(&cmd).err().unwrap().to_string();
        assert!(
            e.contains(&format!("port {port}")) && e.contains("in use"),
            "{e}"
        );
    }

    #[test]
    fn listening_sockets_are_told_by_process() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(listens_on(std::process::id(), port), Some(true));
        let mut other = Command::new("sleep").arg("5").spawn().unwrap();
        assert_eq!(listens_on(other.id(), port), Some(false));
        let _ = other.kill();
        let _ = other.wait();
        drop(l);
        assert_eq!(listens_on(std::process::id(), port), Some(false));
    }

    /// Somebody else listening on the port bakeoff picked (here: the test
    /// itself, binding it as the arguments are built) is not mistaken for
    /// the server, however well it answers.
    #[test]
    fn another_process_on_the_port_is_not_the_server() {
        let squatter = std::sync::Mutex::new(None);
        let args = |port: u16, _: &Path| {
            *squatter.lock().unwrap() = Some(TcpListener::bind(("127.0.0.1", port)).unwrap());
            vec!["5".into()]
        };
        let cmd = command("sleep", "coreutils", &args, Duration::from_millis(500));
        let e = ManagedServer::start(&cmd).err().unwrap().to_string();
        assert!(e.contains("did not answer"), "{e}");
    }

    /// A server that finds the picked port taken is started again on
    /// another one, in the same directory.
    #[test]
    fn a_port_taken_in_between_is_picked_again() {
        let attempts = std::sync::atomic::AtomicUsize::new(0);
        let args = |port: u16, dir: &Path| {
            let script = if attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                "echo 'bind: Address already in use' >&2; exit 1".to_string()
            } else {
                format!(
                    "exec python3 -m http.server {port} --bind 127.0.0.1 --directory {}",
                    dir.display()
                )
            };
            vec!["-c".into(), script]
        };
        let cmd = command("sh", "dash", &args, Duration::from_secs(20));
        let mut server = ManagedServer::start(&cmd).unwrap();
        assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert!(server.is_running());
        assert_eq!(listens_on(server.pid, server.addr.port()), Some(true));
    }
}

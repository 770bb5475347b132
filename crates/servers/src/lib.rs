//! # bakeoff-servers
//!
//! Managed servers: bakeoff finds the server binary on PATH, starts it as a
//! plain child process in a fresh temporary directory on a free 127.0.0.1
//! port, waits until it answers, samples its CPU, RSS and disk I/O from
//! /proc, and stops it at the end — on drop, so also on error and on
//! Ctrl-C. The child is started with `PR_SET_PDEATHSIG`, so even a killed
//! bakeoff leaves no server behind.
//!
//! A [`ServerCommand`] is a server's recipe (where the binary is, how its
//! directory is initialised, its arguments, when it is ready); the
//! mechanism here is the same for every server: each runs in a process
//! group of its own, so a crash can be simulated by SIGKILL to the whole
//! group ([`ManagedServer::kill`], PostgreSQL's backends included), and it
//! can be started again on the same directory and port
//! ([`ManagedServer::restart`]); several nodes of one recipe run side by
//! side as [`Nodes`] (a primary and its replicas, N shards). Speaking to a
//! server is the drivers' business, not this crate's.
//!
//! ## Layout
//!
//! - [`ManagedServer`]: one running server process and its directory.
//! - [`ServerCommand`]: what to start and how to tell it is ready.
//! - [`Nodes`]: several servers started side by side.
//! - [`proc_snapshot`]: /proc sampling of any process.
//! - [`cgroup::MemoryCap`]: a memory limit around a process for a run.

pub mod cgroup;
pub mod device;
pub mod fsyncs;
pub mod scratch;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::RawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bakeoff_core::readings::ProcSnapshot;
pub use scratch::ScratchDir;

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
    /// A step of preparing the server's directory failed: a folder or file
    /// bakeoff makes there, or running the program that initialises it.
    #[error("{what}: {source}")]
    Prepare {
        /// The step: "cannot create /tmp/…/data", "cannot run initdb".
        what: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The program that initialises a data directory (initdb,
    /// mariadb-install-db) ran and failed.
    #[error("{program} failed: {stderr}")]
    InitFailed {
        /// The program.
        program: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The power-cut layer (a FUSE mount) could not be put under the
    /// server's directory.
    #[error("cannot mount the power-cut layer (FUSE) on {}: {source}; it needs /dev/fuse and root", dir.display())]
    PowerCutLayer {
        /// The server's directory.
        dir: PathBuf,
        /// What mounting said.
        source: std::io::Error,
    },
    /// A step of setting up the memory cap failed.
    #[error("cannot cap memory: {what}: {source} (memory caps need root and a cgroup memory controller)")]
    MemoryCap {
        /// The step: "cannot write …/memory.max".
        what: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// This machine has no memory controller a cap can use.
    #[error("cannot cap memory: {0} (memory caps need root and a cgroup memory controller)")]
    NoMemoryController(cgroup::NoMemoryController),
    /// More CPUs were asked for than bakeoff may use.
    #[error("cannot give the server its CPUs: {asked} CPU(s) asked for, and bakeoff may use {usable} here")]
    TooManyCpus {
        /// CPUs asked for.
        asked: u32,
        /// CPUs this process may use.
        usable: usize,
    },
    /// bakeoff's own CPU affinity could not be read.
    #[error("cannot give the server its CPUs: cannot read bakeoff's CPU affinity: {0}")]
    Affinity(#[source] std::io::Error),
    /// A system user the server runs as is missing.
    #[error("there is no user `{0}` on this machine")]
    NoUser(String),
}

impl From<ServerError> for bakeoff_core::error::TargetError {
    fn from(e: ServerError) -> Self {
        match e {
            ServerError::NotInstalled { program, package } => Self::NotInstalled {
                what: format!("`{program}` is not on PATH"),
                package,
            },
            other => Self::cause(other),
        }
    }
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
pub type InitFn<'a> = dyn Fn(&Path, &Path) -> Result<(), ServerError> + 'a;

/// What to start.
pub struct ServerCommand<'a> {
    /// Binary name on PATH (or a path).
    pub program: &'a str,
    /// What messages and temporary directories call it (`redis-server`;
    /// `engine-host` for bakeoff's own, started as /proc/self/exe).
    pub name: &'a str,
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
    /// Put the data directory on bakeoff's FUSE layer, which holds bytes
    /// not yet fsynced in its own memory, so that a power cut
    /// ([`ManagedServer::fault`] with `power-cut`) can throw them away.
    pub lazy_disk: bool,
    /// The signal that stops it cleanly and soon (PostgreSQL: SIGINT, its
    /// fast shutdown; SIGTERM there waits for every client to leave).
    pub stop_signal: i32,
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
pub fn user_ids(user: &str) -> Result<(u32, u32), ServerError> {
    let c = std::ffi::CString::new(user).map_err(|_| ServerError::NoUser(user.into()))?;
    // SAFETY: getpwnam returns a pointer to static storage or null.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return Err(ServerError::NoUser(user.into()));
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

/// A command that runs as `user` when given (setgid/setuid before exec)
/// and dies with bakeoff: SIGKILL when the thread that started it ends,
/// whatever ends it (SIGKILL included), so that no server, initdb or
/// mariadb-install-db outlives the run that started it.
pub fn command_as(binary: &Path, user: Option<(u32, u32)>) -> Command {
    let mut c = Command::new(binary);
    // A process group of its own: Ctrl-C on the terminal reaches bakeoff
    // alone, which then finishes what it started in order.
    c.process_group(0);
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
    // SAFETY: getpid in the parent; prctl, getppid and kill are
    // async-signal-safe and run in the child between fork and exec. After
    // setuid, which clears the parent-death signal.
    let parent = unsafe { libc::getpid() };
    unsafe {
        c.pre_exec(move || {
            // Default dispositions, whatever bakeoff inherited: a shell
            // starts a background job with SIGINT and SIGQUIT ignored, and
            // a server would then ignore the stop signal it is sent.
            // (std resets the mask and SIGPIPE alone.)
            for sig in 1..32 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // bakeoff died between fork and prctl: nobody would kill it.
            if libc::getppid() != parent {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        });
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
    join: Option<RawFd>,
) -> Result<ServerProcess, ServerError> {
    let mut process =
        spawn(binary, args, user, dir, false, cmd.stop_signal, join).map_err(|source| {
            ServerError::Io {
                program: cmd.name.into(),
                source,
            }
        })?;
    wait_ready(
        &mut process,
        cmd.name,
        cmd.ready,
        cmd.ready_timeout,
        dir,
        port,
    )?;
    Ok(process)
}

/// Starts `binary` with `args` in `dir` as `user`, its output going to
/// `dir/server.log` (appended to on a restart), in a process group of its
/// own and killed if bakeoff dies; in the cgroup whose `cgroup.procs` is
/// open as `join`, when given, before it runs a line of its own.
fn spawn(
    binary: &Path,
    args: &[String],
    user: Option<(u32, u32)>,
    dir: &Path,
    append_log: bool,
    stop_signal: i32,
    join: Option<RawFd>,
) -> std::io::Result<ServerProcess> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append_log)
        .truncate(!append_log)
        .open(dir.join("server.log"))?;
    let log2 = log.try_clone()?;
    let mut command = command_as(binary, user);
    if let Some(fd) = join {
        // SAFETY: write is async-signal-safe; it runs in the child between
        // fork and exec, on a descriptor open in the parent. A group it
        // cannot join leaves its fsyncs uncounted, nothing else.
        unsafe {
            command.pre_exec(move || {
                libc::write(fd, b"0".as_ptr().cast(), 1);
                Ok(())
            });
        }
    }
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // In a process group of its own (`command_as`): a crash is SIGKILL
    // to the whole group, the server and every process it forked. It dies
    // with bakeoff.
    Ok(ServerProcess(command.spawn()?, stop_signal))
}

/// Waits until `process` holds the listening socket on `port` and `ready`
/// says it answers, within `timeout`.
fn wait_ready(
    process: &mut ServerProcess,
    program: &str,
    ready: &dyn Fn(SocketAddr) -> bool,
    timeout: Duration,
    dir: &Path,
    port: u16,
) -> Result<(), ServerError> {
    let pid = process.0.id();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(status)) = process.0.try_wait() {
            let log = log_tail(dir);
            // Only the address: "shared memory block is still in use" is
            // something else (and says so in the log).
            if log.to_ascii_lowercase().contains("address already in use") {
                return Err(ServerError::PortInUse { port });
            }
            return Err(ServerError::Failed {
                program: program.into(),
                reason: format!("it exited with {status}"),
                log,
            });
        }
        // Until our process holds the listening socket, whatever answers
        // on the port is somebody else's.
        if listens_on(pid, port) != Some(false)
            && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            && ready(addr)
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(ServerError::Failed {
                program: program.into(),
                reason: format!("it did not answer on {addr} within {timeout:?}"),
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

/// The name of the signals a server dies of.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGSEGV => "SIGSEGV, a crash",
        libc::SIGBUS => "SIGBUS, a crash",
        libc::SIGABRT => "SIGABRT, an abort",
        libc::SIGILL => "SIGILL, a crash",
        libc::SIGFPE => "SIGFPE, a crash",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
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
    /// Counts the fsyncs of the server's processes (its group is removed
    /// once they stopped), or why they cannot be counted.
    fsyncs: Result<fsyncs::FsyncCounter, String>,
    /// The block device under its data (under the power-cut layer's own
    /// directory when it has one).
    device: Option<device::BlockDevice>,
    // Unmounted after the process stopped, before the directories go.
    disk: Option<bakeoff_lazyfs::LazyMount>,
    dir: ScratchDir,
    /// Where the FUSE layer keeps what reached its disk; held only to be
    /// removed, after the unmount.
    _backing: Option<ScratchDir>,
    /// Its name (for messages), how long it may take to be ready, and
    /// the user it runs as: what a restart needs again.
    program: String,
    ready_timeout: Duration,
    user: Option<(u32, u32)>,
    /// Loopback address it listens on.
    pub addr: SocketAddr,
    /// Process id.
    pub pid: u32,
    /// Full path of the binary.
    pub binary: PathBuf,
    /// Arguments it was started with.
    pub args: Vec<String>,
    cap: Option<cgroup::MemoryCap>,
    /// The CPUs it runs on, when it is held to some.
    cpus: Option<cgroup::CpuSet>,
}

/// What a target may use of the machine: its memory (`--memory-cap`) and
/// its CPUs (`--server-cpus`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// A memory cap (RSS and page cache), bytes.
    pub memory: Option<u64>,
    /// How many CPUs it runs on.
    pub cpus: Option<u32>,
}

impl Limits {
    /// The limits `workload` asks for.
    pub fn of(workload: &bakeoff_core::plan::Workload) -> Self {
        Limits {
            memory: workload.memory_cap,
            cpus: workload.server_cpus,
        }
    }
}

/// A server process, leader of its own process group, that is stopped
/// when dropped.
struct ServerProcess(Child, i32);

impl Drop for ManagedServer {
    /// Stops the server, then whatever still works in its directory (the
    /// fields then go in their order: the disk layer, the directories).
    fn drop(&mut self) {
        self.process.stop();
        kill_stragglers(self.dir.path());
    }
}

impl ServerProcess {
    /// SIGKILL to the whole process group and to every descendant (some
    /// leave the group: PostgreSQL's backends call setsid()), then waits
    /// for the leader. Returns the moment the signals went.
    fn kill_group(&mut self) -> Instant {
        let leader = self.0.id();
        // Collected before anything dies (an orphan's parent becomes init,
        // and it could no longer be told from other processes), in one
        // pass over /proc.
        let tree = descendants_of(leader);
        let at = Instant::now();
        // SAFETY: signalling the process group of our own child (its pgid
        // is its pid: it was started with process_group(0)), the child
        // alone should it have left that group, and processes it started.
        unsafe {
            if libc::kill(-(leader as i32), libc::SIGKILL) != 0 {
                libc::kill(leader as i32, libc::SIGKILL);
            }
            for pid in tree {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
        let _ = self.0.wait();
        at
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

impl ServerProcess {
    /// Stops the server if it runs: its stop signal, then SIGKILL to its
    /// group after 5 s.
    fn stop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            // SAFETY: signalling our own child by its pid, then its process
            // group and descendants: a server stopped (SIGSTOP, a stall fault) holds its
            // stop signal until it is continued, and would be killed only
            // after the deadline.
            unsafe {
                libc::kill(self.0.id() as i32, self.1);
                libc::kill(-(self.0.id() as i32), libc::SIGCONT);
                // PostgreSQL's backends leave the group (setsid()).
                for pid in descendants_of(self.0.id()) {
                    libc::kill(pid as i32, libc::SIGCONT);
                }
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if matches!(self.0.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            self.kill_group();
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
            program: cmd.name.into(),
            source,
        };
        if let Some(p) = cmd.port {
            if !port_is_free(p) {
                return Err(ServerError::PortInUse { port: p });
            }
        }
        let dir = ScratchDir::new(cmd.name).map_err(io)?;
        let (disk, backing) = if cmd.lazy_disk {
            let backing = ScratchDir::new(&format!("{}-disk", cmd.name)).map_err(io)?;
            let mount =
                bakeoff_lazyfs::LazyMount::mount(backing.path(), dir.path()).map_err(|source| {
                    ServerError::PowerCutLayer {
                        dir: dir.path().to_path_buf(),
                        source,
                    }
                })?;
            (Some(mount), Some(backing))
        } else {
            (None, None)
        };
        // Servers that drop privileges (memcached -u nobody) need to reach it.
        let _ = std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        );
        let user = match cmd.run_as {
            Some(u) => {
                let ids = user_ids(u)?;
                chown_tree(dir.path(), ids.0, ids.1).map_err(io)?;
                Some(ids)
            }
            None => None,
        };
        if let Some(init) = cmd.init {
            init(&binary, dir.path())?;
        }
        let storage = backing.as_ref().unwrap_or(&dir).path().to_path_buf();
        let fsyncs = if disk.is_some() {
            Err("the power-cut layer counts them".to_string())
        } else {
            fsyncs::FsyncCounter::create(cmd.name, &storage)
        };
        let join = fsyncs.as_ref().ok().map(fsyncs::FsyncCounter::join_fd);
        let mut attempt = 1;
        loop {
            // Picked only now, after the (slow) initialisation: the port
            // stays unbound for as short a time as can be.
            let port = match cmd.port {
                Some(p) => p,
                None => free_port().map_err(io)?,
            };
            let args = (cmd.args)(port, dir.path());
            match spawn_and_wait(cmd, &binary, &args, user, dir.path(), port, join) {
                Ok(process) => {
                    return Ok(ManagedServer {
                        pid: process.0.id(),
                        process,
                        fsyncs,
                        device: device::BlockDevice::under(&storage),
                        disk,
                        dir,
                        _backing: backing,
                        program: cmd.name.into(),
                        ready_timeout: cmd.ready_timeout,
                        user,
                        addr: ([127, 0, 0, 1], port).into(),
                        binary,
                        args,
                        cap: None,
                        cpus: None,
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

    /// The server's log (its standard output and error).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// Last lines of the server's log, prefixed for an error message.
    pub fn log_tail(&self) -> String {
        log_tail(self.dir.path())
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.process.0.try_wait(), Ok(None))
    }

    /// Why the server answers nothing though it runs: it is stopped (a
    /// SIGSTOP, or a debugger); `None` otherwise.
    pub fn stalled(&self) -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
        matches!(state, 'T' | 't').then(|| {
            format!(
                "{} (pid {}) is stopped (a SIGSTOP, or a debugger, holds it) and answers nothing",
                self.program, self.pid
            )
        })
    }

    /// How the process ended, with the end of its log, if it is no longer
    /// running: "killed by signal 11 (SIGSEGV)", "exited with status 1".
    pub fn gone(&mut self) -> Option<String> {
        use std::os::unix::process::ExitStatusExt;
        let status = self.process.0.try_wait().ok()??;
        let name = format!("{} (pid {})", self.program, self.pid);
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("{name} exited with status {code}"),
            (None, Some(sig)) => format!(
                "{name} was killed by signal {sig}{}",
                signal_name(sig)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
            _ => format!("{name} ended: {status}"),
        };
        Some(format!("{how}{}", self.log_tail()))
    }

    /// Crashes the server: SIGKILL to its whole process group (the server
    /// and everything it forked, e.g. PostgreSQL's backends), no chance to
    /// flush or clean up. The directory stays for [`ManagedServer::restart`].
    pub fn kill(&mut self) {
        self.process.kill_group();
    }

    /// Starts the server again with the same binary, arguments, directory
    /// and port (after [`ManagedServer::kill`], or stops it first with
    /// SIGTERM if it still runs), and waits until its own process holds
    /// the port and `ready` says it answers. Its memory cap, if any, holds
    /// the new process too.
    pub fn restart(&mut self, ready: &dyn Fn(SocketAddr) -> bool) -> Result<(), ServerError> {
        self.process.stop();
        let dir = self.dir.path();
        self.process = spawn(
            &self.binary,
            &self.args,
            self.user,
            dir,
            true,
            self.process.1,
            self.fsyncs.as_ref().ok().map(fsyncs::FsyncCounter::join_fd),
        )
        .map_err(|source| ServerError::Io {
            program: self.program.clone(),
            source,
        })?;
        self.pid = self.process.0.id();
        if let Some(cap) = self.cap.as_mut() {
            cap.add(self.pid)?;
        }
        if let Some(cpus) = &self.cpus {
            cpus.pin_tree(self.pid)?;
        }
        wait_ready(
            &mut self.process,
            &self.program,
            ready,
            self.ready_timeout,
            dir,
            self.addr.port(),
        )
    }

    /// Injects `kind` and starts the server again on its data: `kill` is a
    /// crash (SIGKILL to its whole group), `restart` a clean stop. Returns
    /// the time from the fault until its own process held the port again.
    pub fn fault(
        &mut self,
        kind: bakeoff_core::plan::FaultKind,
    ) -> Result<bakeoff_core::target::FaultStruck, ServerError> {
        use bakeoff_core::plan::FaultKind;
        let at = match kind {
            FaultKind::Kill => self.process.kill_group(),
            FaultKind::PowerCut => {
                let at = self.process.kill_group();
                if let Some(disk) = &self.disk {
                    disk.power_cut();
                }
                at
            }
            FaultKind::Restart => {
                let at = Instant::now();
                self.process.stop();
                at
            }
        };
        kill_stragglers(self.dir.path());
        // After a power cut the machine comes up with nothing cached, and
        // a restart is timed from a cold cache (how long replaying the
        // data takes); a process crash leaves the kernel's cache warm.
        if kind != FaultKind::Kill {
            evict_from_page_cache(self.dir.path());
        }
        self.restart(&|_| true)?;
        Ok(bakeoff_core::target::FaultStruck {
            at,
            back_after: at.elapsed(),
        })
    }

    /// fsync and fdatasync calls, write calls and bytes written that
    /// reached the data directory, counted exactly by the FUSE layer; `None`
    /// when the directory is not on it.
    pub fn disk_stats(&self) -> Option<bakeoff_lazyfs::IoStats> {
        self.disk.as_ref().map(|d| d.stats())
    }

    /// Holds the server to `limits` until it stops (and after a restart):
    /// its memory in a capped cgroup, its processes on their CPUs.
    pub fn limit(&mut self, limits: Limits) -> Result<(), ServerError> {
        if let Some(bytes) = limits.memory {
            let mut cap = cgroup::MemoryCap::create(bytes, "server")?;
            cap.add(self.pid)?;
            self.cap = Some(cap);
        }
        if let Some(n) = limits.cpus {
            let cpus = cgroup::CpuSet::last(n)?;
            cpus.pin_tree(self.pid)?;
            self.cpus = Some(cpus);
        }
        Ok(())
    }

    /// Writes what the page cache holds of the server's files to their
    /// device (before a measurement, so that what the load left is not
    /// counted to it); stops between files once `stop` is set.
    pub fn flush_disk(&self, stop: &std::sync::atomic::AtomicBool) {
        device::write_back(self._backing.as_ref().unwrap_or(&self.dir).path(), stop);
    }

    /// The CPUs the server is held to, e.g. `1` or `2-3`.
    pub fn cpus(&self) -> Option<String> {
        self.cpus.as_ref().map(cgroup::CpuSet::list)
    }

    /// CPU, RSS, disk I/O, directory size and capped memory now, summed
    /// over the server and its child processes (PostgreSQL forks one per
    /// connection).
    pub fn snapshot(&self) -> ProcSnapshot {
        let mut s = proc_snapshot(self.pid).unwrap_or_default();
        for child in children_of(self.pid) {
            if let Some(c) = proc_snapshot(child) {
                s.pids.push(child);
                s.cpu_ns += c.cpu_ns;
                s.thread_cpu_ns.extend(c.thread_cpu_ns);
                s.rss_bytes += c.rss_bytes;
                // A backend that exits while it is read has no smaps
                // left: it holds nothing any more.
                s.pss_bytes = s.pss_bytes.map(|a| a + c.pss_bytes.unwrap_or(0));
                s.read_bytes += c.read_bytes;
                s.write_bytes += c.write_bytes;
                s.write_calls += c.write_calls;
            }
        }
        s.file_io = self.disk_stats().map(|d| bakeoff_core::readings::FileIo {
            fsyncs: d.fsyncs,
            writes: d.writes,
            bytes: d.bytes_written,
        });
        s.disk_bytes = dir_size(self.dir.path());
        s.device = self.device.as_ref().and_then(device::BlockDevice::read);
        match &self.fsyncs {
            Ok(c) => s.fsyncs = Some(c.count()),
            Err(why) => s.fsyncs_unknown = Some(why.clone()),
        }
        s.connections = Some(
            std::iter::once(self.pid)
                .chain(children_of(self.pid))
                .map(sockets_of)
                .sum(),
        );
        if let Some(u) = self.cap.as_ref().and_then(|c| c.usage()) {
            s.cgroup_memory_bytes = Some(u.total);
            s.cgroup_cache_bytes = Some(u.cache);
        }
        s
    }
}

/// Several servers started side by side — a primary and its replicas, N
/// shards — each by the same recipe or its own. Node `i` is started
/// knowing the nodes before it (a replica needs its primary's address).
/// They stop in reverse order: replicas before their primary.
pub struct Nodes {
    nodes: Vec<ManagedServer>,
}

impl Nodes {
    /// Starts `n` nodes, node `i` by `start_node(i, nodes before it)`; on an
    /// error the nodes already started are stopped.
    pub fn start(
        n: usize,
        mut start_node: impl FnMut(usize, &[ManagedServer]) -> Result<ManagedServer, ServerError>,
    ) -> Result<Self, ServerError> {
        let mut nodes = Nodes {
            nodes: Vec::with_capacity(n),
        };
        for i in 0..n {
            let node = start_node(i, &nodes.nodes)?;
            nodes.nodes.push(node);
        }
        Ok(nodes)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `i`.
    pub fn node(&self, i: usize) -> &ManagedServer {
        &self.nodes[i]
    }

    /// Node `i`, to kill or restart it.
    pub fn node_mut(&mut self, i: usize) -> &mut ManagedServer {
        &mut self.nodes[i]
    }

    /// The nodes in the order they started.
    pub fn iter(&self) -> impl Iterator<Item = &ManagedServer> {
        self.nodes.iter()
    }

    /// Resources summed over every node (CPU, RSS, disk I/O, disk size).
    pub fn snapshot(&self) -> ProcSnapshot {
        let mut snapshots = self.nodes.iter().map(ManagedServer::snapshot);
        let mut total = snapshots.next().unwrap_or_default();
        for s in snapshots {
            total.add(&s);
        }
        total
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        while let Some(node) = self.nodes.pop() {
            drop(node);
        }
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

/// Sockets held open by process `pid` (its connections, and its listening
/// sockets): counted from its file descriptors, so that the cost is that
/// of the server's own sockets, not of every socket on the machine.
pub fn sockets_of(pid: u32) -> u64 {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.flatten()
        .filter(|e| {
            std::fs::read_link(e.path())
                .is_ok_and(|t| t.as_os_str().as_encoded_bytes().starts_with(b"socket:"))
        })
        .count() as u64
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
        thread_cpu_ns: thread_cpu_ns(pid, hz),
        device: None,
        fsyncs: None,
        fsyncs_unknown: None,
        pids: vec![pid],
        rss_bytes: rss_pages * page,
        pss_bytes: pss_of(pid),
        read_bytes: field("read_bytes:"),
        write_bytes: field("write_bytes:"),
        write_calls: field("syscw:"),
        file_io: None,
        disk_bytes: 0,
        cgroup_memory_bytes: None,
        cgroup_cache_bytes: None,
        replication_lag_bytes: None,
        connections: None,
        nodes: Vec::new(),
    })
}

/// Each thread of process `pid` and its user + system CPU time, ns
/// (/proc/PID/task/TID/stat, `hz` clock ticks a second).
fn thread_cpu_ns(pid: u32, hz: u64) -> Vec<(u32, u64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let tid: u32 = t.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            let f: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
            let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some((tid, ticks * 1_000_000_000 / hz))
        })
        .collect()
}

/// The proportional set size of process `pid`, bytes: its share of every
/// page it maps, a page mapped by n processes counting 1/n in each (`Pss`
/// of /proc/PID/smaps_rollup, in kB). Summed over processes it counts each
/// page once, where their resident sets count a shared page once per
/// process.
pub fn pss_of(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Drops the clean pages of every file under `dir` from the kernel's page
/// cache (POSIX_FADV_DONTNEED), so that what a server reads next comes
/// from the disk. Dirty pages stay; unreadable files are passed over.
pub fn evict_from_page_cache(dir: &Path) {
    each_file(dir, &|| true, &mut |f| {
        // SAFETY: advice on a descriptor we own, for its whole length.
        unsafe {
            libc::posix_fadvise(
                std::os::fd::AsRawFd::as_raw_fd(f),
                0,
                0,
                libc::POSIX_FADV_DONTNEED,
            );
        }
    });
}

/// Opens every regular file under `dir`, however deep, and hands it to
/// `act`, for as long as `go_on` says so (asked before each file).
pub(crate) fn each_file(dir: &Path, go_on: &dyn Fn() -> bool, act: &mut dyn FnMut(&std::fs::File)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if !go_on() {
            return;
        }
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            each_file(&e.path(), go_on, act);
        } else if kind.is_file() {
            if let Ok(f) = std::fs::File::open(e.path()) {
                act(&f);
            }
        }
    }
}

/// Every descendant of `pid` (children, their children, …), from one
/// reading of /proc.
pub fn descendants_of(pid: u32) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for p in all_pids() {
        if let Some(parent) = parent_of(p) {
            children.entry(parent).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    let mut next = vec![pid];
    while let Some(p) = next.pop() {
        if let Some(c) = children.get(&p) {
            next.extend(c);
            out.extend(c);
        }
    }
    out
}

/// Every process id in /proc.
fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// The parent of process `pid`, from /proc/PID/stat (the field after the
/// state, which follows the parenthesised command name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// SIGKILLs every process whose working directory is in `dir` (a server's
/// own directory, where it and its children work), other than this one,
/// and waits up to 5 s until none is left. Such a process outside the
/// server's process tree is one that escaped a crash: a PostgreSQL backend
/// forked between the reading of the tree and the signals, then orphaned,
/// holds the old shared memory, and the next postmaster refuses to start
/// ("pre-existing shared memory block is still in use"). Zombies have no
/// working directory and hold nothing.
pub fn kill_stragglers(dir: &Path) {
    let me = std::process::id();
    let Ok(dir) = dir.canonicalize() else { return };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<u32> = all_pids()
            .into_iter()
            .filter(|&p| p != me)
            .filter(|p| {
                std::fs::read_link(format!("/proc/{p}/cwd")).is_ok_and(|cwd| cwd.starts_with(&dir))
            })
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return;
        }
        for pid in left {
            // SAFETY: SIGKILL to a process working in a directory bakeoff
            // made for its own server.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The direct children of process `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|&child| parent_of(child) == Some(pid))
        .collect()
}

/// What the files under `dir` hold of the disk, bytes: the blocks
/// allocated to them (a sparse file's holes take none; a file's last block
/// counts whole), as the filesystem counts them.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => std::os::unix::fs::MetadataExt::blocks(&m) * 512,
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_of_counts_this_process_sockets() {
        let before = sockets_of(std::process::id());
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _s = l.accept().unwrap();
        assert_eq!(sockets_of(std::process::id()), before + 3);
    }

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
            name: program,
            package,
            port: None,
            args,
            ready: &|_| true,
            ready_timeout,
            extra_dirs: &[],
            run_as: None,
            init: None,
            lazy_disk: false,
            stop_signal: libc::SIGTERM,
        }
    }

    /// Whether redis-server is here; under CI it must be.
    fn have_redis() -> bool {
        if find_on_path("redis-server").is_some() {
            return true;
        }
        assert!(
            std::env::var("CI").map_or(true, |v| v.is_empty() || v == "false"),
            "redis-server is not installed; CI must install it (scripts/setup.sh)"
        );
        eprintln!("skipping: redis-server is not installed");
        false
    }

    /// A redis-server in its directory; more arguments from `extra`.
    fn redis_args(port: u16, dir: &Path, extra: &[String]) -> Vec<String> {
        let mut a: Vec<String> = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--dir",
            &dir.display().to_string(),
            "--save",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend_from_slice(extra);
        a
    }

    /// One RESP command, its reply (up to what one read brings).
    fn resp(addr: SocketAddr, words: &[&str]) -> String {
        use std::io::{Read, Write};
        let mut req = format!("*{}\r\n", words.len());
        for w in words {
            req.push_str(&format!("${}\r\n{w}\r\n", w.len()));
        }
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn a_killed_server_restarts_on_its_own_data_and_port() {
        if !have_redis() {
            return;
        }
        let extra = [
            "--appendonly".to_string(),
            "yes".into(),
            "--appendfsync".into(),
            "always".into(),
        ];
        let args = |port: u16, dir: &Path| redis_args(port, dir, &extra);
        let cmd = command(
            "redis-server",
            "redis-server",
            &args,
            Duration::from_secs(10),
        );
        let mut server = ManagedServer::start(&cmd).unwrap();
        let (addr, first_pid) = (server.addr, server.pid);
        assert_eq!(resp(addr, &["SET", "k", "kept"]), "+OK\r\n");
        server.kill();
        assert!(!server.is_running());
        assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err());
        server.restart(&|_| true).unwrap();
        assert_ne!(server.pid, first_pid);
        assert_eq!(server.addr, addr);
        // Acknowledged with appendfsync always: it survived the SIGKILL.
        assert_eq!(resp(addr, &["GET", "k"]), "$4\r\nkept\r\n");
    }

    #[test]
    fn kill_takes_the_whole_process_group() {
        // The listener forks a helper, as PostgreSQL forks backends.
        let args = |port: u16, _: &Path| {
            vec![
                "-c".to_string(),
                format!("sleep 300 & exec python3 -m http.server {port} --bind 127.0.0.1"),
            ]
        };
        let cmd = command("bash", "bash", &args, Duration::from_secs(10));
        let mut server = ManagedServer::start(&cmd).unwrap();
        let helpers = children_of(server.pid);
        assert!(!helpers.is_empty(), "no forked helper");
        server.kill();
        std::thread::sleep(Duration::from_millis(100));
        for pid in helpers {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting for init to reap it.
            assert!(
                state.is_empty() || state.contains(") Z "),
                "helper {pid} survived: {state}"
            );
        }
    }

    #[test]
    fn nodes_run_side_by_side_and_a_replica_follows_its_primary() {
        if !have_redis() {
            return;
        }
        let mut nodes = Nodes::start(2, |i, before| {
            let extra = match before.first() {
                Some(primary) => vec![
                    "--replicaof".to_string(),
                    "127.0.0.1".into(),
                    primary.addr.port().to_string(),
                ],
                None => Vec::new(),
            };
            let args = move |port: u16, dir: &Path| redis_args(port, dir, &extra);
            let cmd = command(
                "redis-server",
                "redis-server",
                &args,
                Duration::from_secs(10),
            );
            assert_eq!(before.len(), i);
            ManagedServer::start(&cmd)
        })
        .unwrap();
        assert_eq!(nodes.len(), 2);
        let (primary, replica) = (nodes.node(0).addr, nodes.node(1).addr);
        assert_ne!(primary, replica);
        assert_ne!(nodes.node(0).dir(), nodes.node(1).dir());
        assert_eq!(resp(primary, &["SET", "k", "v1"]), "+OK\r\n");
        let deadline = Instant::now() + Duration::from_secs(10);
        while resp(replica, &["GET", "k"]) != "$2\r\nv1\r\n" {
            assert!(Instant::now() < deadline, "the replica never saw the write");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(nodes.snapshot().rss_bytes > nodes.node(0).snapshot().rss_bytes);
        // Replicas refuse writes: the second node is one.
        assert!(resp(replica, &["SET", "k", "x"]).starts_with("-READONLY"));
        nodes.node_mut(1).kill();
        assert!(!nodes.node_mut(1).is_running());
    }

    /// A clean restart stops the server with its own stop signal: one that
    /// ignores SIGTERM (as PostgreSQL's postmaster waits on it for every
    /// client to leave) is not left 5 s to be killed.
    #[test]
    fn a_restart_stops_the_server_with_its_stop_signal() {
        let args = |port: u16, _: &Path| {
            vec![
                "-c".to_string(),
                format!(
                    "import signal, socket\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', {port}))\ns.listen()\nwhile True:\n    s.accept()[0].close()\n"
                ),
            ]
        };
        let mut server = ManagedServer::start(&ServerCommand {
            stop_signal: libc::SIGINT,
            ..command("python3", "python3", &args, Duration::from_secs(20))
        })
        .unwrap();
        let struck = server
            .fault(bakeoff_core::plan::FaultKind::Restart)
            .unwrap();
        assert!(
            struck.back_after < Duration::from_secs(3),
            "the restart took {:?}: SIGINT was not sent",
            struck.back_after
        );
    }

    /// A server starts with every signal at its default disposition,
    /// whatever bakeoff inherited: run as a shell's background job, bakeoff
    /// has SIGINT ignored, and a server stopped by SIGINT (or a Python
    /// stand-in) would ignore it (the restart then took 5.11 s, issue 52).
    #[test]
    fn a_server_starts_with_default_signal_dispositions() {
        let ignored_by = |text: &str| {
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix("SigIgn:"))
                .expect("a SigIgn line");
            u64::from_str_radix(line.trim(), 16).unwrap()
        };
        let bit = 1u64 << (libc::SIGINT - 1);
        // SAFETY: signal() on the test process; restored below.
        let before = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        let mine = std::fs::read_to_string("/proc/self/status").unwrap();
        let out = command_as(Path::new("/bin/cat"), None)
            .arg("/proc/self/status")
            .output();
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGINT, before) };
        assert_ne!(ignored_by(&mine) & bit, 0, "the test ignores SIGINT");
        let theirs = String::from_utf8(out.unwrap().stdout).unwrap();
        assert_eq!(ignored_by(&theirs) & bit, 0, "{theirs}");
    }

    /// PostgreSQL's backends each call setsid(): a SIGKILL to the
    /// postmaster's process group alone leaves them running, holding the
    /// old shared memory, and the restart fails. A crash kills every
    /// descendant, whatever its group.
    #[test]
    fn a_crash_kills_descendants_that_left_the_group() {
        let args = |port: u16, dir: &Path| {
            vec![
                "-c".to_string(),
                format!(
                    "setsid sleep 300 & echo $! > {}/child.pid; exec python3 -m http.server --bind 127.0.0.1 {port}",
                    dir.display()
                ),
            ]
        };
        let mut server =
            ManagedServer::start(&command("sh", "dash", &args, Duration::from_secs(20))).unwrap();
        let pid_file = server.dir().join("child.pid");
        let child: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    !s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(false)
        };
        assert!(alive(child), "the setsid child runs");
        server.kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(child) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !alive(child),
            "pid {child} outlived the crash of its server"
        );
    }

    /// A process of the server that is no longer its descendant (a
    /// PostgreSQL backend forked while the crash was being dealt out, then
    /// orphaned) still holds the old server's resources: the restart after
    /// a crash, and the end of the server, kill whatever still works in
    /// its directory.
    #[test]
    fn a_crash_kills_orphans_still_working_in_the_servers_directory() {
        let args = |port: u16, dir: &Path| {
            vec![
                "-c".to_string(),
                format!(
                    "(setsid sleep 300 & echo $! > {d}/orphan.pid); exec python3 -m http.server --bind 127.0.0.1 {port}",
                    d = dir.display()
                ),
            ]
        };
        let mut server =
            ManagedServer::start(&command("sh", "dash", &args, Duration::from_secs(20))).unwrap();
        let pid_of = |server: &ManagedServer| -> u32 {
            std::fs::read_to_string(server.dir().join("orphan.pid"))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    !s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(false)
        };
        let first = pid_of(&server);
        assert!(alive(first), "the orphan runs");
        assert_eq!(parent_of(first), Some(1), "the orphan left the tree");
        server.fault(bakeoff_core::plan::FaultKind::Kill).unwrap();
        assert!(
            !alive(first),
            "pid {first} outlived the crash of its server"
        );
        let second = pid_of(&server);
        assert_ne!(first, second, "the restarted server made its own");
        assert!(alive(second));
        drop(server);
        assert!(!alive(second), "pid {second} outlived its server");
    }

    #[test]
    fn missing_binary_names_its_package() {
        let cmd = command(
            "no-such-server-bakeoff",
            "no-such-package",
            &|_, _| vec![],
            Duration::from_secs(1),
        );
        let e = ManagedServer::start(&cmd).err().unwrap();
        assert!(
            e.to_string().contains("apt-get install no-such-package"),
            "{e}"
        );
        // The kind survives the step into the drivers' error type.
        match bakeoff_core::error::TargetError::from(e) {
            bakeoff_core::error::TargetError::NotInstalled { package, .. } => {
                assert_eq!(package, "no-such-package")
            }
            other => panic!("not NotInstalled: {other:?}"),
        }
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

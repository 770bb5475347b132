//! fsync calls of a target's processes, counted by the filesystem's own
//! tracepoint (`ext4:ext4_sync_file_enter`, `xfs:xfs_file_fsync`,
//! `btrfs:btrfs_sync_file`): every fsync, fdatasync, msync(MS_SYNC) and
//! io_uring fsync that reaches the filesystem, whichever thread makes it.
//!
//! The processes sit in a cgroup v2 group of their own, joined between
//! fork and exec so that every process and thread the server starts is in
//! it too, and one counting perf event per CPU counts the tracepoint for
//! that group only. A tracepoint costs nothing until it fires, and a
//! counting event takes no samples: the cost is the event's upkeep when
//! the CPU switches between the group's tasks and others' (measured in
//! bench/fsync-count.sh).

use std::fs::File;
use std::io::Read;
use std::os::unix::io::{AsRawFd, FromRawFd, RawFd};
use std::path::{Path, PathBuf};

/// A cgroup whose members' fsyncs are counted; removed on drop (its
/// members moved back first).
pub struct FsyncCounter {
    dir: PathBuf,
    parent: PathBuf,
    procs: File,
    events: Vec<File>,
}

/// Why a filesystem's fsyncs cannot be counted, or the tracepoint that
/// counts them.
fn tracepoint_for(dir: &Path) -> Result<&'static str, String> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| "a path with a NUL byte".to_string())?;
    // SAFETY: statfs into a zeroed struct we own, on a NUL-terminated path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return Err(format!("cannot statfs {}", dir.display()));
    }
    match s.f_type as u64 {
        0xEF53 => Ok("ext4/ext4_sync_file_enter"),
        0x5846_5342 => Ok("xfs/xfs_file_fsync"),
        0x9123_683E => Ok("btrfs/btrfs_sync_file"),
        0x0102_1994 => Err("the data directory is on tmpfs, where nothing reaches a disk".into()),
        0x6573_5546 => Err("the data directory is on a FUSE layer".into()),
        t => Err(format!(
            "the data directory's filesystem (magic {t:#x}) has no fsync tracepoint bakeoff knows (ext4, xfs, btrfs)"
        )),
    }
}

/// The mount point of cgroup v2 and this process's group in it.
fn own_v2_group() -> Result<(PathBuf, PathBuf), String> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mount = mounts
        .lines()
        .find(|l| {
            l.split(" - ")
                .nth(1)
                .is_some_and(|t| t.starts_with("cgroup2 "))
        })
        .and_then(|l| l.split(' ').nth(4))
        .ok_or("no cgroup v2 hierarchy is mounted")?;
    let cg = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let rel = cg
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process has no cgroup v2 group")?;
    Ok((
        PathBuf::from(mount),
        PathBuf::from(mount).join(rel.trim_start_matches('/')),
    ))
}

fn tracefs() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("events").is_dir())
}

impl FsyncCounter {
    /// A new group counting fsyncs on the filesystem of `dir`, named for
    /// `label`; the error says why they cannot be counted here.
    pub fn create(label: &str, dir: &Path) -> Result<Self, String> {
        let tracepoint = tracepoint_for(dir)?;
        let tracing = tracefs().ok_or(
            "tracefs is not mounted (as root: mount -t tracefs tracefs /sys/kernel/tracing)",
        )?;
        let id: u64 = std::fs::read_to_string(tracing.join("events").join(tracepoint).join("id"))
            .map_err(|e| format!("the tracepoint {tracepoint} cannot be read: {e}"))?
            .trim()
            .parse()
            .map_err(|_| format!("the tracepoint {tracepoint} has no id"))?;
        let (_, parent) = own_v2_group()?;
        remove_stale(&parent);
        let dir = parent.join(format!(
            "bakeoff-fsyncs-{}-{label}-{}",
            std::process::id(),
            next_serial()
        ));
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot make a cgroup at {}: {e}", dir.display()))?;
        let made = Self {
            procs: std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| format!("cannot open {}/cgroup.procs: {e}", dir.display()))?,
            dir,
            parent,
            events: Vec::new(),
        };
        made.open_events(id)
    }

    fn open_events(mut self, id: u64) -> Result<Self, String> {
        let group = File::open(&self.dir).map_err(|e| e.to_string())?;
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1);
        for cpu in 0..cpus as i32 {
            // SAFETY: a zeroed perf_event_attr is valid; the fields set
            // below are those of a counting tracepoint event.
            let mut attr: perf_event_attr = unsafe { std::mem::zeroed() };
            attr.type_ = PERF_TYPE_TRACEPOINT;
            attr.size = std::mem::size_of::<perf_event_attr>() as u32;
            attr.config = id;
            // SAFETY: perf_event_open with a valid attr, the group's
            // descriptor as "pid" (PERF_FLAG_PID_CGROUP) and one CPU.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    &attr as *const perf_event_attr,
                    group.as_raw_fd(),
                    cpu,
                    -1,
                    PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC,
                )
            } as RawFd;
            if fd < 0 {
                let e = std::io::Error::last_os_error();
                // A CPU that is offline counts nothing.
                if e.raw_os_error() == Some(libc::ENODEV) {
                    continue;
                }
                return Err(format!("perf_event_open refused the fsync tracepoint: {e}"));
            }
            // SAFETY: fd is a new descriptor we own.
            self.events.push(unsafe { File::from_raw_fd(fd) });
        }
        Ok(self)
    }

    /// The descriptor of the group's `cgroup.procs`: a process that writes
    /// `0` to it joins (see [`crate::command_as`]).
    pub fn join_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// Moves process `pid` (all its threads) into the group.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
    }

    /// fsyncs counted so far.
    pub fn count(&self) -> u64 {
        self.events
            .iter()
            .map(|mut f| {
                let mut b = [0u8; 8];
                match f.read_exact(&mut b) {
                    Ok(()) => u64::from_ne_bytes(b),
                    Err(_) => 0,
                }
            })
            .sum()
    }
}

impl Drop for FsyncCounter {
    fn drop(&mut self) {
        self.events.clear();
        if let Ok(pids) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in pids.lines() {
                let _ = std::fs::write(self.parent.join("cgroup.procs"), pid);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Groups left by a bakeoff that was killed: removed when empty and their
/// process is gone.
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("bakeoff-fsyncs-"))
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

fn next_serial() -> u64 {
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_FLAG_PID_CGROUP: libc::c_ulong = 1 << 2;

/// The leading fields of the kernel's `struct perf_event_attr` (version 8,
/// 136 bytes), zero but for the type, size and config.
#[repr(C)]
struct perf_event_attr {
    type_: u32,
    size: u32,
    config: u64,
    rest: [u64; 15],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process made to join the group before exec: each of its 300
    /// fsyncs, from two threads, is counted, and none of this process's.
    #[test]
    fn counts_the_fsyncs_of_a_joined_process() {
        let dir = tempfile::tempdir().unwrap();
        let counter = match FsyncCounter::create("test", dir.path()) {
            Ok(c) => c,
            Err(why) => panic!("fsyncs cannot be counted on this machine: {why}"),
        };
        let f = std::fs::File::create(dir.path().join("mine")).unwrap();
        f.sync_all().unwrap();
        let script = format!(
            "import os,threading\nf=os.open('{}/x',os.O_WRONLY|os.O_CREAT)\n\
             def w():\n  for i in range(200): os.write(f,b'x'); os.fsync(f)\n\
             t=threading.Thread(target=w); t.start(); t.join()\n\
             for i in range(100): os.fdatasync(f)\n",
            dir.path().display()
        );
        let mut c = std::process::Command::new("python3");
        c.args(["-c", &script]);
        let fd = counter.join_fd();
        // SAFETY: write is async-signal-safe; it runs between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, move || {
                libc::write(fd, b"0".as_ptr().cast(), 1);
                Ok(())
            });
        }
        assert!(c.status().unwrap().success());
        f.sync_all().unwrap();
        assert_eq!(counter.count(), 300);
        let group = counter.dir.clone();
        drop(counter);
        assert!(!group.exists(), "the group is removed");
    }

    #[test]
    fn tmpfs_says_why_not() {
        let e = tracepoint_for(Path::new("/dev/shm")).unwrap_err();
        assert!(e.contains("tmpfs"), "{e}");
    }
}

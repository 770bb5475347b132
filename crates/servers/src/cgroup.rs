//! Limits on what a target may use: its CPUs ([`CpuSet`], by affinity)
//! and its memory.
//!
//! Memory caps: a child of the process's own memory cgroup with a limit,
//! into which the target (a managed server, or bakeoff itself for an
//! in-process engine) is moved for the run. On cgroup v1 (the machines here)
//! `memory.limit_in_bytes` caps RSS and page cache together; on cgroup v2
//! `memory.max` does. Dropping the cap moves the processes back and removes
//! the group.

use std::path::{Path, PathBuf};

use crate::ServerError;

/// A cgroup with a memory limit, removed on drop.
pub struct MemoryCap {
    dir: PathBuf,
    parent: PathBuf,
    v2: bool,
    /// The limit, bytes.
    pub limit: u64,
    members: Vec<u32>,
}

/// Memory use of a capped group.
#[derive(Clone, Copy, Debug, Default)]
pub struct CapUsage {
    /// Everything charged to the group (RSS + page cache …), bytes.
    pub total: u64,
    /// Page cache charged to the group, bytes.
    pub cache: u64,
}

/// Why this machine has no memory controller a cap can use.
#[derive(Debug, thiserror::Error)]
pub enum NoMemoryController {
    /// cgroup v1 lists a memory controller that no file system mounts.
    #[error("the memory cgroup controller is listed in /proc/self/cgroup but not mounted")]
    V1NotMounted,
    /// cgroup v2 is in use but not mounted.
    #[error("no cgroup2 file system is mounted")]
    V2NotMounted,
    /// cgroup v2's memory controller is not enabled for bakeoff's group.
    #[error("cgroup v2 is mounted but its memory controller is not enabled for {}", .0.display())]
    V2Disabled(PathBuf),
    /// Neither hierarchy is there.
    #[error("this system has neither a cgroup v1 memory controller nor cgroup v2")]
    Neither,
}

fn own_memory_cgroup() -> Result<(PathBuf, bool), ServerError> {
    let cg =
        std::fs::read_to_string("/proc/self/cgroup").map_err(|source| ServerError::MemoryCap {
            what: "cannot read /proc/self/cgroup".into(),
            source,
        })?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    // cgroup v1 with a memory controller.
    if let Some(rel) = cg.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    }) {
        let mount = mounts
            .lines()
            .find(|l| {
                l.contains(" - cgroup ")
                    && l.split(' ')
                        .next_back()
                        .is_some_and(|o| o.split(',').any(|x| x == "memory"))
            })
            .and_then(|l| l.split(' ').nth(4))
            .ok_or(ServerError::NoMemoryController(
                NoMemoryController::V1NotMounted,
            ))?;
        return Ok((Path::new(mount).join(rel.trim_start_matches('/')), false));
    }
    // cgroup v2: one hierarchy; the memory controller must be available.
    if let Some(rel) = cg.lines().find_map(|l| l.strip_prefix("0::")) {
        let mount = mounts
            .lines()
            .find(|l| l.contains(" - cgroup2 "))
            .and_then(|l| l.split(' ').nth(4))
            .ok_or(ServerError::NoMemoryController(
                NoMemoryController::V2NotMounted,
            ))?;
        let dir = Path::new(mount).join(rel.trim_start_matches('/'));
        let ctrls = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
        if !ctrls.split_whitespace().any(|c| c == "memory") {
            return Err(ServerError::NoMemoryController(
                NoMemoryController::V2Disabled(dir),
            ));
        }
        return Ok((dir, true));
    }
    Err(ServerError::NoMemoryController(NoMemoryController::Neither))
}

impl MemoryCap {
    /// Creates a capped group named after `label`.
    pub fn create(limit: u64, label: &str) -> Result<Self, ServerError> {
        let why = |what: String| move |source| ServerError::MemoryCap { what, source };
        let (parent, v2) = own_memory_cgroup()?;
        let dir = parent.join(format!("bakeoff-{}-{label}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(why(format!("cannot create {}", dir.display())))?;
        let file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        if let Err(e) = std::fs::write(dir.join(file), limit.to_string()) {
            let _ = std::fs::remove_dir(&dir);
            return Err(why(format!("cannot write {}", dir.join(file).display()))(e));
        }
        Ok(MemoryCap {
            dir,
            parent,
            v2,
            limit,
            members: Vec::new(),
        })
    }

    /// Moves process `pid` (all its threads) into the group.
    pub fn add(&mut self, pid: u32) -> Result<(), ServerError> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).map_err(|source| {
            ServerError::MemoryCap {
                what: format!("cannot move process {pid} into {}", self.dir.display()),
                source,
            }
        })?;
        self.members.push(pid);
        Ok(())
    }

    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Memory charged to the group now.
    pub fn usage(&self) -> Option<CapUsage> {
        let (usage_file, cache_key) = if self.v2 {
            ("memory.current", "file")
        } else {
            ("memory.usage_in_bytes", "cache")
        };
        let total = std::fs::read_to_string(self.dir.join(usage_file))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let stat = std::fs::read_to_string(self.dir.join("memory.stat")).unwrap_or_default();
        let cache = stat
            .lines()
            .find_map(|l| l.strip_prefix(cache_key).and_then(|r| r.strip_prefix(' ')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        Some(CapUsage { total, cache })
    }
}

impl Drop for MemoryCap {
    fn drop(&mut self) {
        for pid in &self.members {
            let _ = std::fs::write(self.parent.join("cgroup.procs"), pid.to_string());
        }
        // The directory can only go once no process is left in it; a server
        // that is still exiting may hold it for a moment.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// A set of CPUs a target runs on (`--server-cpus N`): the last N of the
/// CPUs bakeoff may use, set as the CPU affinity of every thread of the
/// target's processes, which every process and thread they start later
/// inherits (a cpuset cgroup does the same; affinity needs no controller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSet {
    cpus: Vec<usize>,
}

impl CpuSet {
    /// The last `n` of the CPUs this process may use.
    pub fn last(n: u32) -> Result<Self, ServerError> {
        let own = own_cpus()?;
        if n == 0 || n as usize > own.len() {
            return Err(ServerError::TooManyCpus {
                asked: n,
                usable: own.len(),
            });
        }
        Ok(CpuSet {
            cpus: own[own.len() - n as usize..].to_vec(),
        })
    }

    /// The CPUs, e.g. `1` or `2-3`.
    pub fn list(&self) -> String {
        match (self.cpus.first(), self.cpus.last()) {
            (Some(a), Some(b)) if a == b => a.to_string(),
            (Some(a), Some(b)) => format!("{a}-{b}"),
            _ => String::new(),
        }
    }

    /// Sets every thread of process `pid` and of the processes under it
    /// to run on these CPUs.
    pub fn pin_tree(&self, pid: u32) -> Result<(), ServerError> {
        let mut pids = vec![pid];
        let mut i = 0;
        while i < pids.len() {
            pids.extend(crate::children_of(pids[i]));
            i += 1;
        }
        for p in pids {
            for tid in threads_of(p) {
                // A thread that ended meanwhile is no matter.
                let _ = set_affinity(tid, &self.cpus);
            }
        }
        Ok(())
    }

    /// Sets the calling thread (a child about to exec: `pre_exec`) to run
    /// on these CPUs.
    pub fn pin_self(&self) -> std::io::Result<()> {
        set_affinity(0, &self.cpus)
    }
}

/// bakeoff's own threads held to a [`CpuSet`] (an in-process engine's,
/// which runs in them) until dropped, when each is given back the CPUs it
/// had.
pub struct OwnCpus {
    before: Vec<usize>,
}

impl OwnCpus {
    /// Pins every thread of this process to `set`.
    pub fn pin(set: &CpuSet) -> Result<Self, ServerError> {
        let before = own_cpus()?;
        set.pin_tree(std::process::id())?;
        Ok(OwnCpus { before })
    }
}

impl Drop for OwnCpus {
    fn drop(&mut self) {
        for tid in threads_of(std::process::id()) {
            let _ = set_affinity(tid, &self.before);
        }
    }
}

/// The CPUs this process may use, in order.
fn own_cpus() -> Result<Vec<usize>, ServerError> {
    // SAFETY: a zeroed cpu_set_t filled by the kernel for this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(ServerError::Affinity(std::io::Error::last_os_error()));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

fn set_affinity(tid: i32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: a cpu_set_t built here, given to the kernel for thread `tid`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The threads of process `pid` (none once it is gone).
fn threads_of(pid: u32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn more_cpus_than_bakeoff_may_use_are_refused_saying_both_counts() {
        let usable = own_cpus().unwrap().len();
        let asked = usable as u32 + 1;
        match CpuSet::last(asked) {
            Err(ServerError::TooManyCpus {
                asked: a,
                usable: u,
            }) => {
                assert_eq!((a, u), (asked, usable));
            }
            other => panic!("expected TooManyCpus, got {other:?}"),
        }
        let text = CpuSet::last(0).unwrap_err().to_string();
        assert!(
            text.starts_with("cannot give the server its CPUs: 0 CPU(s) asked for"),
            "{text}"
        );
    }

    #[test]
    fn a_cap_that_cannot_be_made_keeps_what_the_system_said() {
        // A group under a file, not a folder, cannot be made: the system's
        // own error stays the source, below bakeoff's words.
        let file = std::env::temp_dir().join(format!("bakeoff-cap-test-{}", std::process::id()));
        std::fs::write(&file, "").unwrap();
        let source = std::fs::create_dir_all(file.join("group")).unwrap_err();
        let kind = source.kind();
        let e = ServerError::MemoryCap {
            what: format!("cannot create {}", file.join("group").display()),
            source,
        };
        std::fs::remove_file(&file).unwrap();
        let text = e.to_string();
        assert!(
            text.starts_with("cannot cap memory: cannot create "),
            "{text}"
        );
        assert!(text.ends_with("(memory caps need root and a cgroup memory controller)"));
        let below = e.source().expect("the system's error is kept");
        let io = below.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), kind);
        // Through a target's error, the chain holds.
        let t: bakeoff_core::error::TargetError = e.into();
        assert_eq!(t.to_string(), text);
        assert!(t.source().is_some());
    }
}

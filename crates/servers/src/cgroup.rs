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

fn own_memory_cgroup() -> Result<(PathBuf, bool), ServerError> {
    let cg = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| ServerError::MemoryCap(format!("cannot read /proc/self/cgroup: {e}")))?;
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
            .ok_or_else(|| {
                ServerError::MemoryCap(
                    "the memory cgroup controller is listed in /proc/self/cgroup but not mounted"
                        .into(),
                )
            })?;
        return Ok((Path::new(mount).join(rel.trim_start_matches('/')), false));
    }
    // cgroup v2: one hierarchy; the memory controller must be available.
    if let Some(rel) = cg.lines().find_map(|l| l.strip_prefix("0::")) {
        let mount = mounts
            .lines()
            .find(|l| l.contains(" - cgroup2 "))
            .and_then(|l| l.split(' ').nth(4))
            .ok_or_else(|| ServerError::MemoryCap("no cgroup2 file system is mounted".into()))?;
        let dir = Path::new(mount).join(rel.trim_start_matches('/'));
        let ctrls = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
        if !ctrls.split_whitespace().any(|c| c == "memory") {
            return Err(ServerError::MemoryCap(format!(
                "cgroup v2 is mounted but its memory controller is not enabled for {}",
                dir.display()
            )));
        }
        return Ok((dir, true));
    }
    Err(ServerError::MemoryCap(
        "this system has neither a cgroup v1 memory controller nor cgroup v2".into(),
    ))
}

impl MemoryCap {
    /// Creates a capped group named after `label`.
    pub fn create(limit: u64, label: &str) -> Result<Self, ServerError> {
        let why = ServerError::MemoryCap;
        let (parent, v2) = own_memory_cgroup()?;
        let dir = parent.join(format!("bakeoff-{}-{label}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| why(format!("cannot create {}: {e}", dir.display())))?;
        let file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        if let Err(e) = std::fs::write(dir.join(file), limit.to_string()) {
            let _ = std::fs::remove_dir(&dir);
            return Err(why(format!(
                "cannot write {}: {e}",
                dir.join(file).display()
            )));
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
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).map_err(|e| {
            ServerError::MemoryCap(format!(
                "cannot move process {pid} into {}: {e}",
                self.dir.display()
            ))
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

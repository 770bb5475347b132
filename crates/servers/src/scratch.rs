//! bakeoff's temporary directories (servers' data, engines' files), each
//! with a lock that tells a live one from one left behind.
//!
//! A directory `bakeoff-NAME-XXXX` in the temporary folder has a lock file
//! beside it, `bakeoff-NAME-XXXX.lock`, on which its process holds an
//! exclusive `flock` for as long as it lives. The kernel drops the lock
//! when the process dies, whatever kills it (SIGKILL, a second Ctrl-C, a
//! crash). [`remove_stale`], run when bakeoff starts, takes the lock of
//! each such directory; when it gets it, the owner is gone, and the
//! directory (unmounted first, should a power-cut layer still sit on it)
//! and its lock go. The lock sits beside the directory, not inside it: the
//! power-cut layer is mounted over the directory and would hide it. The
//! lock holds bakeoff's marker; a `bakeoff-…` directory whose lock does
//! not is someone else's, and stays.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Ending of a directory's lock file.
const LOCK_SUFFIX: &str = ".lock";
/// Beginning of the names of bakeoff's directories.
const PREFIX: &str = "bakeoff-";
/// What a lock file of bakeoff's holds: the cleaner removes only a
/// directory whose lock says bakeoff made it, whoever else names theirs
/// `bakeoff-…`.
const MARKER: &[u8] =
    b"bakeoff scratch directory: removed by the next bakeoff once this file is unlocked\n";

/// A temporary directory of this process, removed when dropped; its lock
/// is released when the process ends.
#[derive(Debug)]
pub struct ScratchDir {
    // Declared first: the directory goes before its lock is released and
    // removed, so that no other process sees it unlocked and half gone.
    dir: tempfile::TempDir,
    lock: PathBuf,
    _held: File,
}

impl ScratchDir {
    /// A fresh directory `bakeoff-NAME-XXXX` in the temporary folder.
    pub fn new(name: &str) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{name}-"))
            .tempdir()?;
        let lock = lock_path(dir.path());
        // Locked under a name the cleaner ignores, then renamed into
        // place: no other process ever sees the lock file unlocked.
        let pending = lock.with_extension(format!("pending-{}", std::process::id()));
        let mut held = File::create(&pending)?;
        std::io::Write::write_all(&mut held, MARKER)?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_file(&pending);
            return Err(e);
        }
        std::fs::rename(&pending, &lock)?;
        Ok(Self {
            dir,
            lock,
            _held: held,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // The directory itself goes when `dir` is dropped, just after.
        let _ = std::fs::remove_file(&self.lock);
    }
}

/// The lock file of directory `dir`.
fn lock_path(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(LOCK_SUFFIX);
    PathBuf::from(name)
}

/// Removes the directories (and their locks) that bakeoff processes no
/// longer alive left in the temporary folder; returns them. A directory
/// whose lock a live process holds, or that has no lock, is left alone.
pub fn remove_stale() -> Vec<PathBuf> {
    remove_stale_in(&std::env::temp_dir())
}

/// [`remove_stale`] in folder `tmp`.
pub fn remove_stale_in(tmp: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(dir_name) = name
            .strip_suffix(LOCK_SUFFIX)
            .filter(|_| name.starts_with(PREFIX))
        else {
            continue;
        };
        let lock = entry.path();
        let Ok(mut file) = File::open(&lock) else {
            continue;
        };
        // Only what bakeoff's own marker says it made.
        let mut head = vec![0u8; MARKER.len() + 1];
        let n = std::io::Read::read(&mut file, &mut head).unwrap_or(0);
        if head[..n] != *MARKER {
            continue;
        }
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            continue; // its process lives
        }
        let dir = tmp.join(dir_name);
        if let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) {
            // A power-cut layer whose process died is a dead mount; it
            // must go before the directory can.
            // SAFETY: a NUL-terminated path; MNT_DETACH is harmless on a
            // directory that is no mount point.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let gone = match std::fs::remove_dir_all(&dir) {
            Ok(()) => true,
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        };
        if gone {
            let _ = std::fs::remove_file(&lock);
            removed.push(dir);
        }
    }
    removed
}

/// A run's claim on its result file: while one bakeoff writes a path,
/// another asked to write the same one is refused instead of both
/// replacing each other's file and one result being lost. A lock file in
/// the temporary folder, named after the path, held with `flock` for the
/// run; the kernel drops it if the process dies, and the next bakeoff's
/// [`remove_stale`] removes the file.
#[derive(Debug)]
pub struct OutputLock {
    lock: PathBuf,
    _held: File,
}

impl OutputLock {
    /// Claims `out` (a file that need not exist yet); the error says which
    /// path another bakeoff is writing.
    pub fn take(out: &Path) -> Result<Self, String> {
        Self::take_in(&std::env::temp_dir(), out)
    }

    /// [`OutputLock::take`] with its lock in folder `tmp`.
    pub fn take_in(tmp: &Path, out: &Path) -> Result<Self, String> {
        // The same file however it is named: its folder's real path and
        // its name.
        let parent = out
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut key = parent
            .canonicalize()
            .unwrap_or_else(|_| parent.to_path_buf())
            .into_os_string();
        key.push("/");
        key.push(out.file_name().unwrap_or_default());
        // FNV-1a: a stable name, whatever the path's length.
        let hash = key
            .as_encoded_bytes()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
            });
        let lock = tmp.join(format!("{PREFIX}output-{hash:016x}{LOCK_SUFFIX}"));
        let claim = || -> std::io::Result<File> {
            let mut held = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock)?;
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            held.set_len(0)?;
            std::io::Write::write_all(&mut held, MARKER)?;
            Ok(held)
        };
        match claim() {
            Ok(held) => Ok(OutputLock { lock, _held: held }),
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Err(format!(
                "another bakeoff is writing {} now; wait for it to end, or give this run another -o",
                out.display()
            )),
            Err(e) => Err(format!(
                "cannot claim {} for this run ({}: {e}); check the temporary folder (TMPDIR)",
                out.display(),
                lock.display()
            )),
        }
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.lock);
    }
}

/// Checks that the temporary folder exists and can be written: servers'
/// data goes there. The error names the folder and the variable to set.
pub fn check_temp_dir() -> Result<(), String> {
    let tmp = std::env::temp_dir();
    let from = match std::env::var_os("TMPDIR") {
        Some(_) => "TMPDIR",
        None => "the default temporary folder",
    };
    match tempfile::Builder::new().prefix(PREFIX).tempdir_in(&tmp) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "the temporary folder {} ({from}) cannot be used: {e}; bakeoff keeps servers' data there: set TMPDIR to a writable directory",
            tmp.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory whose process holds its lock stays; one whose lock
    /// nobody holds (its process died) goes, with the lock; one without a
    /// lock is not bakeoff's to judge and stays.
    #[test]
    fn only_directories_of_dead_processes_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let live = tmp.path().join("bakeoff-live-1");
        let dead = tmp.path().join("bakeoff-dead-1");
        let bare = tmp.path().join("bakeoff-bare-1");
        for d in [&live, &dead, &bare] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("data"), b"x").unwrap();
        }
        let held = File::create(lock_path(&live)).unwrap();
        // SAFETY: flock on a descriptor we own.
        assert_eq!(
            unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        // flock locks belong to the open file: another open of the same
        // file in this process is refused like another process would be.
        std::fs::write(lock_path(&dead), MARKER).unwrap();
        // Someone else's directory with an unheld lock beside it, but
        // without bakeoff's marker: not bakeoff's to remove.
        let foreign = tmp.path().join("bakeoff-foreign-1");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(lock_path(&foreign), b"their own lock").unwrap();
        let removed = remove_stale_in(tmp.path());
        assert_eq!(removed, vec![dead.clone()]);
        assert!(live.exists() && lock_path(&live).exists());
        assert!(!dead.exists() && !lock_path(&dead).exists());
        assert!(bare.exists());
        assert!(foreign.exists() && lock_path(&foreign).exists());
    }

    /// One run at a time writes a result file, however the path is
    /// spelled; the claim goes, and leaves nothing, when its run ends.
    #[test]
    fn a_result_file_is_claimed_by_one_run_at_a_time() {
        let tmp = tempfile::tempdir().unwrap();
        let outs = tempfile::tempdir().unwrap();
        let out = outs.path().join("r.json");
        let first = OutputLock::take_in(tmp.path(), &out).unwrap();
        let again = outs.path().join(".").join("r.json");
        let e = OutputLock::take_in(tmp.path(), &again).unwrap_err();
        assert!(e.contains("another bakeoff is writing"), "{e}");
        // Another file is another claim.
        let other = OutputLock::take_in(tmp.path(), &outs.path().join("s.json")).unwrap();
        drop(first);
        let back = OutputLock::take_in(tmp.path(), &out).unwrap();
        drop((back, other));
        let leftover: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert!(leftover.is_empty(), "{leftover:?}");
    }

    /// A scratch directory is locked while it lives and leaves nothing
    /// when dropped.
    #[test]
    fn a_scratch_directory_is_locked_and_leaves_nothing() {
        let s = ScratchDir::new("unit").unwrap();
        let (dir, lock) = (s.path().to_path_buf(), lock_path(s.path()));
        assert!(dir.is_dir() && lock.is_file());
        assert_eq!(std::fs::read(&lock).unwrap(), MARKER);
        assert!(!remove_stale().contains(&dir), "a live directory was taken");
        assert!(dir.is_dir());
        drop(s);
        assert!(!dir.exists() && !lock.exists());
    }
}

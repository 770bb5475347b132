//! Shared helpers of the mount tests: a mount under a tempdir, a skip rule
//! for machines without FUSE, and a time bound per test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use bakeoff_lazyfs::{LazyMount, Options};

/// True if real mounts can be made here. Without root or /dev/fuse the test
/// is skipped with a printed reason, except under CI, where it must run.
pub fn fuse_available(test: &str) -> bool {
    let root = unsafe { libc::geteuid() } == 0;
    let dev = Path::new("/dev/fuse").exists();
    if root && dev {
        return true;
    }
    let why = if !root {
        "not running as root"
    } else {
        "/dev/fuse is missing"
    };
    if std::env::var_os("CI").is_some() {
        panic!("{test}: cannot mount FUSE ({why}) and CI is set");
    }
    eprintln!("SKIP {test}: {why}");
    false
}

/// Runs `f` on its own thread and fails the test if it takes longer than
/// `secs`. A test stuck inside a FUSE call cannot be unwound, so on timeout
/// the whole test binary is aborted rather than left hanging.
pub fn bounded<F: FnOnce() + Send + 'static>(test: &'static str, secs: u64, f: F) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name(test.into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(());
            if let Err(p) = r {
                std::panic::resume_unwind(p);
            }
        })
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            eprintln!("{test}: still running after {secs} s; aborting the test binary");
            std::process::abort();
        }
    }
}

/// A mount of `<tmp>/backing` at `<tmp>/mnt`; unmounted before the tempdir
/// is removed.
pub struct Fixture {
    pub mount: Option<LazyMount>,
    pub backing: PathBuf,
    pub mnt: PathBuf,
    dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with(Options::default())
    }

    pub fn with(opts: Options) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let backing = dir.path().join("backing");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&backing).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let mount = LazyMount::mount_with(&backing, &mnt, opts).expect("mount");
        Fixture {
            mount: Some(mount),
            backing,
            mnt,
            dir,
        }
    }

    pub fn m(&self) -> &LazyMount {
        self.mount.as_ref().unwrap()
    }

    /// Path through the mount.
    pub fn p(&self, name: &str) -> PathBuf {
        self.mnt.join(name)
    }

    /// Path in the backing directory.
    pub fn b(&self, name: &str) -> PathBuf {
        self.backing.join(name)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        drop(self.mount.take());
    }
}

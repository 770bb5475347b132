//! # bakeoff-lazyfs
//!
//! A FUSE file system that mirrors a backing directory and behaves like a
//! disk with a volatile write cache, after Jepsen's
//! [LazyFS](https://github.com/dsrhaslab/lazyfs): database servers run with
//! their data directory on the mount, bakeoff kills them, calls
//! [`LazyMount::power_cut`], restarts them on the same mount and sees which
//! acknowledged writes survived.
//!
//! ## The model
//!
//! - **File data** written through the mount is *not* written to the backing
//!   file. It is kept in this process's memory, per inode, as dirty 4 KiB
//!   pages (like the kernel's page cache). Reads merge the backing file and
//!   the dirty pages; the size a client sees is the logical size
//!   (`max(backing size, end of dirty data)`, or what a truncate set).
//! - **fsync / fdatasync** of a file writes its dirty pages to the backing
//!   file, fsyncs the backing file and forgets the pages: from then on the
//!   data is durable. Files opened with `O_SYNC`/`O_DSYNC` are written
//!   through that way on every write.
//! - **Writeback**: like Linux (`dirty_expire_centisecs = 3000`), an inode
//!   dirty for longer than [`WRITEBACK_AFTER`] is written to its backing file
//!   by a background thread, and when the dirty pages of all files exceed
//!   [`MAX_DIRTY_BYTES`] the oldest dirty inodes are written back. Written
//!   back data survives a cut (the backing file system is not cut).
//! - **Metadata** is durable at once: create, mkdir, unlink, rename, link,
//!   symlink, chmod/chown/utimens, truncate and fallocate go straight to the
//!   backing directory. A truncate also trims the cached dirty data. Dirty
//!   data belongs to the inode, so it follows the file through renames.
//! - **close() does not flush**: the page cache outlives close(), and so does
//!   this cache. Unlinking the last name of a file that nobody has open
//!   drops its dirty data (nothing can reach it any more).
//! - **A power cut** ([`LazyMount::power_cut`]) throws away every dirty page
//!   of every file and resets logical sizes to the backing sizes. Names,
//!   directories, modes and sizes set by truncate stay as they are: that is
//!   a journaling file system whose metadata is committed but whose data
//!   blocks never reached the platter. This is what LazyFS's
//!   `lazyfs::clear-cache` fault does.
//!
//! The kernel is told not to cache much: attributes and entries have a zero
//! lifetime, opens do not keep the page cache, the FUSE writeback cache is
//! off, and a cut invalidates the kernel's pages of every file it touched.
//! `O_DIRECT` opens work (the kernel sends their I/O to the file system,
//! which caches it like any other write: direct I/O bypasses the page cache,
//! not a disk's volatile cache). Shared writable `mmap` works through the
//! kernel's own writeback of the mapping into `write` requests.
//!
//! Dropping a [`LazyMount`] is a clean unmount: remaining dirty data is
//! written back to the backing files, as the kernel does on umount.

#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod cache;
mod fs;
mod sys;

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fuser::{Config, MountOption, Session, SessionACL, SessionUnmounter};

use crate::fs::{LazyFs, Shared};

/// Age after which dirty data is written back to its backing file, as the
/// kernel does after `vm.dirty_expire_centisecs` (3000 by default).
pub const WRITEBACK_AFTER: Duration = Duration::from_secs(30);

/// Cap on cached dirty data, over which the oldest dirty files are written
/// back (down to half of it), like the kernel's dirty-page throttling.
pub const MAX_DIRTY_BYTES: u64 = 512 << 20;

/// How long dropping a mount waits for the FUSE session to end after the
/// unmount before leaving its threads behind.
const JOIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Tunables of a mount; [`Options::default`] is what [`LazyMount::mount`] uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Dirty data older than this is written back to the backing file and
    /// then survives a cut. Default [`WRITEBACK_AFTER`].
    pub writeback_after: Duration,
    /// Cap on dirty data held in memory. Default [`MAX_DIRTY_BYTES`].
    pub max_dirty_bytes: u64,
    /// FUSE worker threads: more than one lets a slow fsync of one file
    /// overlap with other requests. Default 4.
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            writeback_after: WRITEBACK_AFTER,
            max_dirty_bytes: MAX_DIRTY_BYTES,
            threads: 4,
        }
    }
}

/// What a [`LazyMount::power_cut`] threw away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CutReport {
    /// Bytes written through the mount and neither fsynced nor written back.
    pub bytes_dropped: u64,
    /// Files that had such bytes.
    pub files_touched: u64,
}

/// I/O counters of a mount since it was mounted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// fsync and fdatasync calls on files.
    pub fsyncs: u64,
    /// fsync and fdatasync calls on directories.
    pub dir_fsyncs: u64,
    /// Write requests (one per `write` call up to the kernel's request size).
    pub writes: u64,
    /// Bytes in those write requests.
    pub bytes_written: u64,
}

/// The writeback thread and the flag that stops it.
struct Writeback {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: JoinHandle<()>,
}

/// A mounted lazy file system. Unmounts on drop (lazily if files are still
/// open) and joins the FUSE session.
pub struct LazyMount {
    mountpoint: PathBuf,
    /// Canonical form, for umount2.
    canonical: PathBuf,
    shared: Arc<Shared>,
    unmounter: Option<SessionUnmounter>,
    session: Option<JoinHandle<io::Result<()>>>,
    writeback: Option<Writeback>,
    /// FUSE connection number (minor of the mount's st_dev), for aborting it
    /// through fusectl when a lazy unmount leaves it alive.
    conn: Option<u64>,
}

impl std::fmt::Debug for LazyMount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyMount")
            .field("mountpoint", &self.mountpoint)
            .field("options", &self.shared.opts)
            .finish_non_exhaustive()
    }
}

impl LazyMount {
    /// Mounts at `mountpoint` (an existing empty dir) a view of `backing` (an
    /// existing dir), with the default [`Options`]. Needs root (or
    /// CAP_SYS_ADMIN) and `/dev/fuse`; no libfuse or fusermount.
    pub fn mount(backing: &Path, mountpoint: &Path) -> io::Result<LazyMount> {
        LazyMount::mount_with(backing, mountpoint, Options::default())
    }

    /// [`LazyMount::mount`] with explicit [`Options`] (tests use a short
    /// writeback age).
    pub fn mount_with(backing: &Path, mountpoint: &Path, opts: Options) -> io::Result<LazyMount> {
        if !backing.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("backing directory {} does not exist", backing.display()),
            ));
        }
        let canonical = mountpoint.canonicalize()?;
        sys::raise_nofile_limit();
        let shared = Arc::new(Shared::new(backing, opts.clone())?);
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("bakeoff-lazyfs".into()),
            MountOption::DefaultPermissions,
        ];
        // Servers often run as their own user (postgres refuses root).
        config.acl = SessionACL::All;
        config.n_threads = Some(opts.threads.max(1));
        let fs = LazyFs {
            shared: shared.clone(),
        };
        let mut session = Session::new(fs, &canonical, &config)?;
        let unmounter = session.unmount_callable();
        *shared.notifier.lock().unwrap_or_else(|e| e.into_inner()) = Some(session.notifier());
        let session = std::thread::Builder::new()
            .name("lazyfs-session".into())
            .spawn(move || session.run())?;

        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let tick =
            (opts.writeback_after / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let wb_shared = shared.clone();
        let wb_stop = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lazyfs-writeback".into())
            .spawn(move || {
                let (m, cv) = &*wb_stop;
                let mut stopped = m.lock().unwrap_or_else(|e| e.into_inner());
                while !*stopped {
                    stopped = cv
                        .wait_timeout(stopped, tick)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    if *stopped {
                        break;
                    }
                    drop(stopped);
                    wb_shared.writeback_expired();
                    stopped = m.lock().unwrap_or_else(|e| e.into_inner());
                }
            })?;

        let conn = std::fs::metadata(&canonical)
            .ok()
            .map(|m| libc::minor(m.dev()) as u64);
        Ok(LazyMount {
            mountpoint: mountpoint.to_path_buf(),
            canonical,
            shared,
            unmounter: Some(unmounter),
            session: Some(session),
            writeback: Some(Writeback { stop, thread }),
            conn,
        })
    }

    /// Throws away every byte written through the mount and not yet
    /// fsynced/fdatasynced (nor written back); returns what was dropped.
    /// Logical sizes go back to the backing files' sizes; metadata stays.
    pub fn power_cut(&self) -> CutReport {
        self.shared.power_cut()
    }

    /// Counters since mount: fsync+fdatasync calls (fsyncdir separately),
    /// write calls, bytes written.
    pub fn stats(&self) -> IoStats {
        self.shared.stats()
    }

    /// Where the file system is mounted (as given to [`LazyMount::mount`]).
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }
}

impl Drop for LazyMount {
    fn drop(&mut self) {
        if let Some(wb) = self.writeback.take() {
            let (m, cv) = &*wb.stop;
            *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
            let _ = wb.thread.join();
        }
        let mut detached = false;
        if let Some(mut u) = self.unmounter.take() {
            if u.unmount().is_err() {
                // Busy (files still open): detach the mount from the tree now;
                // the kernel finishes it when the last file is closed.
                if let Ok(c) = CString::new(self.canonical.as_os_str().as_bytes()) {
                    // SAFETY: `c` is a NUL-terminated path that outlives the
                    // call; a failure leaves the mount as it was.
                    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
                }
                detached = true;
            }
        }
        if detached {
            // Where fusectl is mounted, end the connection so the session
            // (and the open files) end now rather than at their last close.
            if let Some(conn) = self.conn {
                let _ = std::fs::write(format!("/sys/fs/fuse/connections/{conn}/abort"), "1");
            }
        }
        let wait = if detached {
            Duration::from_secs(2)
        } else {
            JOIN_TIMEOUT
        };
        if let Some(h) = self.session.take() {
            let deadline = Instant::now() + wait;
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            // If it is still running it serves files open somewhere and ends
            // when those are closed; do not hang here waiting for that.
            if h.is_finished() {
                let _ = h.join();
            }
        }
        self.shared.writeback_all();
    }
}

//! The FUSE file system: metadata straight to the backing directory, file
//! data into per-inode [`Dirty`] caches until fsync, writeback or a cut.
//!
//! Locking: the inode table lock may be held while taking one inode's data
//! lock (forget, sweep), never the other way round; no code holds two inode
//! data locks at once; the handle table lock is only held to look a handle up.

use std::cmp::min;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, FileTypeExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, BsdFileFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    Generation, INodeNo, LockOwner, Notifier, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    TimeOrNow, WriteFlags,
};

use crate::cache::{Dirty, PAGE};
use crate::sys;
use crate::{CutReport, IoStats, Options};

/// Attribute and entry lifetime given to the kernel. Zero: sizes and names
/// are asked again on every use, so what a cut changed is seen at once.
const TTL: Duration = Duration::ZERO;

/// Locks a mutex, ignoring poisoning: a panicking request handler must not
/// turn every later request into a panic too.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn errno(e: io::Error) -> Errno {
    Errno::from(e)
}

/// Per-inode cache state.
#[derive(Default)]
pub(crate) struct FileData {
    pub(crate) dirty: Dirty,
    /// When the inode went from clean to dirty (the kernel's `dirtied_when`).
    since: Option<Instant>,
    /// A writable descriptor of the backing file, kept while dirty so the
    /// data can be written back after the handle that wrote it is closed.
    wfd: Option<Arc<File>>,
    /// Time of the last buffered write, reported as mtime while dirty.
    mtime: Option<SystemTime>,
    /// Open file handles on this inode.
    open: u32,
}

/// One inode the kernel knows about.
pub(crate) struct Node {
    ino: u64,
    kind: FileType,
    /// `O_PATH` descriptor of the backing file; it also pins the backing
    /// inode, so its (dev, ino) cannot be reused while this node exists.
    fd: OwnedFd,
    key: (u64, u64),
    /// Kernel lookup count; changed under the table lock.
    nlookup: AtomicU64,
    pub(crate) data: Mutex<FileData>,
}

struct Table {
    nodes: HashMap<u64, Arc<Node>>,
    by_key: HashMap<(u64, u64), u64>,
    next_ino: u64,
}

struct OpenFile {
    node: Arc<Node>,
    file: Arc<File>,
    /// Opened with O_SYNC/O_DSYNC: every write is made durable before it is
    /// acknowledged.
    sync: bool,
}

struct OpenDir {
    file: File,
    entries: Vec<(OsString, FileType, u64)>,
}

enum Handle {
    File(OpenFile),
    Dir(OpenDir),
}

/// Counters behind [`IoStats`].
#[derive(Default)]
struct Counters {
    fsyncs: AtomicU64,
    dir_fsyncs: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
}

/// State shared by the FUSE worker threads, the writeback thread and the
/// [`crate::LazyMount`] handle.
pub(crate) struct Shared {
    pub(crate) opts: Options,
    table: Mutex<Table>,
    handles: Mutex<HashMap<u64, Arc<Handle>>>,
    next_fh: AtomicU64,
    stats: Counters,
    /// Pages held by all dirty caches (the memory cap is checked on this).
    dirty_pages: AtomicU64,
    /// Serialises cap enforcement so concurrent writers do not all flush.
    cap_lock: Mutex<()>,
    pub(crate) notifier: Mutex<Option<Notifier>>,
    as_root: bool,
}

fn kind_of(mode: libc::mode_t) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        libc::S_IFSOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nsecs as u64)
    }
}

fn timespec(t: Option<TimeOrNow>) -> libc::timespec {
    match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            },
            Err(e) => {
                let d = e.duration();
                let (mut s, mut ns) = (-(d.as_secs() as i64), -(d.subsec_nanos() as i64));
                if ns < 0 {
                    s -= 1;
                    ns += 1_000_000_000;
                }
                libc::timespec {
                    tv_sec: s as libc::time_t,
                    tv_nsec: ns as libc::c_long,
                }
            }
        },
    }
}

/// Flags for opening a backing file on behalf of a client open. Writers get
/// O_RDWR so the cache can read the gaps between writes into one page;
/// O_APPEND is dropped because the kernel already turned appends into
/// positioned writes (and pwrite on an O_APPEND fd would ignore the offset);
/// O_DIRECT is dropped because the cache's buffers are not aligned and the
/// backing file is not the "device" here; O_SYNC/O_DSYNC are honoured by the
/// cache itself; O_TRUNC is applied through the cache.
fn backing_flags(flags: i32) -> i32 {
    let strip = libc::O_ACCMODE
        | libc::O_CREAT
        | libc::O_EXCL
        | libc::O_TRUNC
        | libc::O_APPEND
        | libc::O_DIRECT
        | libc::O_NOCTTY
        | libc::O_NOFOLLOW
        | libc::O_SYNC
        | libc::O_DSYNC
        | libc::O_ASYNC
        | libc::O_PATH
        | libc::O_DIRECTORY
        | libc::O_CLOEXEC;
    let acc = match flags & libc::O_ACCMODE {
        libc::O_RDONLY => libc::O_RDONLY,
        _ => libc::O_RDWR,
    };
    (flags & !strip) | acc
}

impl Shared {
    pub(crate) fn new(backing: &Path, opts: Options) -> io::Result<Shared> {
        let c = sys::cname(backing.as_os_str())?;
        let fd = sys::openat(libc::AT_FDCWD, &c, libc::O_PATH | libc::O_DIRECTORY, 0)?;
        let st = sys::fstat(fd.as_raw_fd())?;
        let root = Arc::new(Node {
            ino: 1,
            kind: FileType::Directory,
            fd,
            key: (st.st_dev, st.st_ino),
            nlookup: AtomicU64::new(1),
            data: Mutex::new(FileData::default()),
        });
        let mut table = Table {
            nodes: HashMap::new(),
            by_key: HashMap::new(),
            next_ino: 2,
        };
        table.by_key.insert(root.key, 1);
        table.nodes.insert(1, root);
        Ok(Shared {
            opts,
            table: Mutex::new(table),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            stats: Counters::default(),
            dirty_pages: AtomicU64::new(0),
            cap_lock: Mutex::new(()),
            notifier: Mutex::new(None),
            // SAFETY: geteuid takes nothing and cannot fail.
            as_root: unsafe { libc::geteuid() } == 0,
        })
    }

    pub(crate) fn stats(&self) -> IoStats {
        IoStats {
            fsyncs: self.stats.fsyncs.load(Ordering::Relaxed),
            dir_fsyncs: self.stats.dir_fsyncs.load(Ordering::Relaxed),
            writes: self.stats.writes.load(Ordering::Relaxed),
            bytes_written: self.stats.bytes_written.load(Ordering::Relaxed),
        }
    }

    fn node(&self, ino: INodeNo) -> Result<Arc<Node>, Errno> {
        lock(&self.table)
            .nodes
            .get(&ino.0)
            .cloned()
            .ok_or(Errno::ESTALE)
    }

    fn all_nodes(&self) -> Vec<Arc<Node>> {
        lock(&self.table).nodes.values().cloned().collect()
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<Handle>, Errno> {
        lock(&self.handles).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    fn file_handle(&self, fh: FileHandle) -> Result<Arc<Handle>, Errno> {
        let h = self.handle(fh)?;
        match &*h {
            Handle::File(_) => Ok(h),
            Handle::Dir(_) => Err(Errno::EISDIR),
        }
    }

    fn add_handle(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(h));
        fh
    }

    /// Looks `name` up in `parent` and returns its node, counting one kernel
    /// lookup (every reply that hands the kernel an entry must call this).
    fn lookup_child(&self, parent: &Node, name: &OsStr) -> io::Result<(Arc<Node>, libc::stat)> {
        let c = sys::cname(name)?;
        let fd = sys::openat(
            parent.fd.as_raw_fd(),
            &c,
            libc::O_PATH | libc::O_NOFOLLOW,
            0,
        )?;
        let st = sys::fstat(fd.as_raw_fd())?;
        let key = (st.st_dev, st.st_ino);
        let mut t = lock(&self.table);
        if let Some(ino) = t.by_key.get(&key).copied() {
            let n = t.nodes[&ino].clone();
            n.nlookup.fetch_add(1, Ordering::Relaxed);
            return Ok((n, st));
        }
        let ino = t.next_ino;
        t.next_ino += 1;
        let n = Arc::new(Node {
            ino,
            kind: kind_of(st.st_mode),
            fd,
            key,
            nlookup: AtomicU64::new(1),
            data: Mutex::new(FileData::default()),
        });
        t.by_key.insert(key, ino);
        t.nodes.insert(ino, n.clone());
        Ok((n, st))
    }

    /// Attributes as the kernel must see them: the backing file's, with the
    /// logical size (and last write time) while there is dirty data.
    ///
    /// The backing file is stat'ed under the inode's data lock: stat'ed
    /// before it, an fsync could write the dirty tail back and mark the
    /// inode clean in between, and the size answered would be the one from
    /// before the last writes; the kernel takes it, and the next `O_APPEND`
    /// write lands on top of them.
    fn attr(&self, node: &Node) -> io::Result<FileAttr> {
        let d = lock(&node.data);
        let st = sys::fstat(node.fd.as_raw_fd())?;
        let (size, mtime) = match d.dirty.size() {
            Some(s) => (s, d.mtime),
            None => (st.st_size as u64, None),
        };
        drop(d);
        let blocks = (st.st_blocks as u64).max(if size > st.st_size as u64 {
            size.div_ceil(512)
        } else {
            0
        });
        Ok(FileAttr {
            ino: INodeNo(node.ino),
            size,
            blocks,
            atime: time(st.st_atime, st.st_atime_nsec),
            mtime: mtime.unwrap_or_else(|| time(st.st_mtime, st.st_mtime_nsec)),
            ctime: time(st.st_ctime, st.st_ctime_nsec),
            crtime: UNIX_EPOCH,
            kind: kind_of(st.st_mode),
            perm: (st.st_mode & 0o7777) as u16,
            nlink: st.st_nlink as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev as u32,
            blksize: st.st_blksize as u32,
            flags: 0,
        })
    }

    fn entry(&self, parent: &Node, name: &OsStr) -> Result<FileAttr, Errno> {
        let (n, _) = self.lookup_child(parent, name).map_err(errno)?;
        self.attr(&n).map_err(errno)
    }

    /// Gives a file created on behalf of a client the client's ownership
    /// (we run as root, so the backing file starts out root's). A set-gid
    /// parent already gave it the right group.
    fn own(&self, req: &Request, parent: &Node, fd: RawFd) -> io::Result<()> {
        if !self.as_root {
            return Ok(());
        }
        let pst = sys::fstat(parent.fd.as_raw_fd())?;
        let gid = if pst.st_mode & libc::S_ISGID != 0 {
            u32::MAX
        } else {
            req.gid()
        };
        sys::chown_fd(fd, req.uid(), gid)
    }

    // ----- the cache -----

    fn add_dirty_pages(&self, before: u64, after: u64) {
        if after >= before {
            self.dirty_pages
                .fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.dirty_pages
                .fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// Forgets a node's dirty data; returns the bytes dropped.
    fn drop_dirty(&self, d: &mut FileData) -> u64 {
        let (bytes, pages) = d.dirty.clear();
        self.dirty_pages.fetch_sub(pages, Ordering::Relaxed);
        d.wfd = None;
        d.since = None;
        d.mtime = None;
        bytes
    }

    /// Writes a node's dirty data to its backing file (no fsync) and marks
    /// it clean. On error the data stays dirty.
    fn writeback(&self, d: &mut FileData) -> io::Result<()> {
        if d.dirty.is_empty() {
            return Ok(());
        }
        let f = d.wfd.clone().expect("a dirty inode keeps a writable fd");
        for (off, run) in d.dirty.runs() {
            std::os::unix::fs::FileExt::write_all_at(&*f, &run, off)?;
        }
        let size = d.dirty.size().unwrap_or(0);
        if (sys::fstat(f.as_raw_fd())?.st_size as u64) < size {
            f.set_len(size)?;
        }
        self.drop_dirty(d);
        Ok(())
    }

    /// fsync/fdatasync: write back, then make the backing file durable.
    fn sync_node(&self, node: &Node, file: &File, datasync: bool) -> io::Result<()> {
        let f = {
            let mut d = lock(&node.data);
            let f = d.wfd.clone();
            self.writeback(&mut d)?;
            f
        };
        // The sync runs without the inode lock: writes that arrive meanwhile
        // are simply not covered by this fsync, as with a real disk.
        sys::sync_file(f.as_deref().unwrap_or(file), datasync)
    }

    /// Drops the dirty data of a node that can no longer be reached: no
    /// name (nlink 0) and no open handle. Nothing could ever read it or
    /// fsync it, so keeping it would only hold memory.
    fn drop_if_unreachable(&self, node: &Node) {
        let mut d = lock(&node.data);
        if d.open == 0 && !d.dirty.is_empty() {
            if let Ok(st) = sys::fstat(node.fd.as_raw_fd()) {
                if st.st_nlink == 0 {
                    self.drop_dirty(&mut d);
                }
            }
        }
    }

    fn node_by_key(&self, key: (u64, u64)) -> Option<Arc<Node>> {
        let t = lock(&self.table);
        t.by_key.get(&key).and_then(|i| t.nodes.get(i)).cloned()
    }

    /// Truncates a file: the backing file at once (metadata is durable), the
    /// cache's dirty bytes past the new size, and the logical size.
    fn truncate(&self, node: &Node, file: Option<&File>, size: u64) -> io::Result<()> {
        let mut d = lock(&node.data);
        let owned;
        let f: &File = match (file, d.wfd.as_deref()) {
            (Some(f), _) => f,
            (None, Some(f)) => f,
            (None, None) => {
                owned = sys::reopen(node.fd.as_raw_fd(), libc::O_WRONLY)?;
                &owned
            }
        };
        f.set_len(size)?;
        let before = d.dirty.pages();
        d.dirty.truncate(size);
        self.add_dirty_pages(before, d.dirty.pages());
        if d.dirty.is_empty() {
            d.wfd = None;
            d.since = None;
            d.mtime = None;
        }
        Ok(())
    }

    fn write(&self, of: &OpenFile, off: u64, data: &[u8]) -> io::Result<()> {
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.stats
            .bytes_written
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        {
            let mut d = lock(&of.node.data);
            let backing_size = if d.dirty.is_empty() {
                sys::fstat(of.file.as_raw_fd())?.st_size as u64
            } else {
                0
            };
            let reader = d.wfd.clone().unwrap_or_else(|| of.file.clone());
            let before = d.dirty.pages();
            let r = d.dirty.write(off, data, backing_size, &mut |o, buf| {
                let n = sys::read_full_at(&reader, buf, o)?;
                buf[n..].fill(0);
                Ok(())
            });
            self.add_dirty_pages(before, d.dirty.pages());
            if !d.dirty.is_empty() {
                if d.wfd.is_none() {
                    d.wfd = Some(of.file.clone());
                    d.since = Some(Instant::now());
                }
                d.mtime = Some(SystemTime::now());
            }
            r?;
            if of.sync {
                self.writeback(&mut d)?;
                drop(d);
                of.file.sync_data()?;
            }
        }
        self.enforce_cap();
        Ok(())
    }

    fn read(&self, of: &OpenFile, off: u64, size: u32) -> io::Result<Vec<u8>> {
        let d = lock(&of.node.data);
        let want_end = off.saturating_add(size as u64);
        match d.dirty.size() {
            None => {
                let mut buf = vec![0u8; size as usize];
                let n = sys::read_full_at(&of.file, &mut buf, off)?;
                buf.truncate(n);
                Ok(buf)
            }
            Some(logical) => {
                let end = min(want_end, logical);
                if off >= end {
                    return Ok(Vec::new());
                }
                let mut buf = vec![0u8; (end - off) as usize];
                // Past the backing file's end (but inside the logical size)
                // the bytes that are not dirty are a hole: zeros.
                let n = sys::read_full_at(&of.file, &mut buf, off)?;
                buf[n..].fill(0);
                d.dirty.overlay(off, &mut buf);
                Ok(buf)
            }
        }
    }

    /// Writes back the oldest dirty inodes while the cache holds more than
    /// the cap (down to half of it), like the kernel's dirty throttling.
    fn enforce_cap(&self) {
        let cap_pages = self.opts.max_dirty_bytes / PAGE;
        if self.dirty_pages.load(Ordering::Relaxed) <= cap_pages {
            return;
        }
        let Ok(_g) = self.cap_lock.try_lock() else {
            return;
        };
        let mut dirty: Vec<(Instant, Arc<Node>)> = self
            .all_nodes()
            .into_iter()
            .filter_map(|n| {
                let since = lock(&n.data).since;
                since.map(|s| (s, n))
            })
            .collect();
        dirty.sort_by_key(|(s, _)| *s);
        for (_, n) in dirty {
            if self.dirty_pages.load(Ordering::Relaxed) <= cap_pages / 2 {
                break;
            }
            let mut d = lock(&n.data);
            let _ = self.writeback(&mut d);
        }
    }

    /// One pass of the writeback thread: inodes dirty for longer than the
    /// writeback age go to their backing files; forgotten clean inodes are
    /// let go.
    pub(crate) fn writeback_expired(&self) {
        let now = Instant::now();
        for n in self.all_nodes() {
            let mut d = lock(&n.data);
            if d.since
                .is_some_and(|s| now.duration_since(s) >= self.opts.writeback_after)
            {
                let _ = self.writeback(&mut d);
            }
        }
        self.sweep();
    }

    /// Writes back everything (a clean unmount does this too).
    pub(crate) fn writeback_all(&self) {
        for n in self.all_nodes() {
            let mut d = lock(&n.data);
            let _ = self.writeback(&mut d);
        }
    }

    /// Removes nodes the kernel has forgotten once they hold nothing.
    fn sweep(&self) {
        let mut t = lock(&self.table);
        let gone: Vec<u64> = t
            .nodes
            .values()
            .filter(|n| n.ino != 1 && n.nlookup.load(Ordering::Relaxed) == 0 && idle(n))
            .map(|n| n.ino)
            .collect();
        for ino in gone {
            if let Some(n) = t.nodes.remove(&ino) {
                t.by_key.remove(&n.key);
            }
        }
    }

    pub(crate) fn power_cut(&self) -> CutReport {
        let mut report = CutReport::default();
        let mut touched = Vec::new();
        for n in self.all_nodes() {
            let mut d = lock(&n.data);
            if !d.dirty.is_empty() {
                report.bytes_dropped += self.drop_dirty(&mut d);
                report.files_touched += 1;
                touched.push(n.ino);
            }
        }
        // The kernel may hold pages and a size from before the cut for a file
        // some process still has open; make it ask again.
        if let Some(notifier) = lock(&self.notifier).as_ref() {
            for ino in touched {
                let _ = notifier.inval_inode(INodeNo(ino), 0, 0);
            }
        }
        report
    }
}

/// A node with no dirty data and no open handle (or one busy right now,
/// which counts as not idle).
fn idle(n: &Node) -> bool {
    match n.data.try_lock() {
        Ok(d) => d.open == 0 && d.dirty.is_empty(),
        Err(_) => false,
    }
}

/// The `fuser` file system; all state lives in [`Shared`].
pub(crate) struct LazyFs {
    pub(crate) shared: Arc<Shared>,
}

macro_rules! tri {
    ($reply:ident, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => {
                $reply.error(e.into());
                return;
            }
        }
    };
}

impl LazyFs {
    fn reply_attr(&self, node: &Node, reply: ReplyAttr) {
        let attr = tri!(reply, self.shared.attr(node).map_err(errno));
        reply.attr(&TTL, &attr);
    }

    fn set_size(&self, node: &Node, fh: Option<FileHandle>, size: u64) -> Result<(), Errno> {
        let h = fh.and_then(|fh| self.shared.handle(fh).ok());
        let file = match h.as_deref() {
            Some(Handle::File(of)) => Some(&*of.file),
            _ => None,
        };
        self.shared.truncate(node, file, size).map_err(errno)
    }
}

impl Filesystem for LazyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let s = &self.shared;
        let p = tri!(reply, s.node(parent));
        let attr = tri!(reply, s.entry(&p, name));
        reply.entry(&TTL, &attr, Generation(0));
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        if ino.0 == 1 {
            return;
        }
        let mut t = lock(&self.shared.table);
        let Some(n) = t.nodes.get(&ino.0).cloned() else {
            return;
        };
        let left = n.nlookup.load(Ordering::Relaxed).saturating_sub(nlookup);
        n.nlookup.store(left, Ordering::Relaxed);
        // A node with dirty data or open handles stays (its data still has to
        // be written back or cut); the writeback thread sweeps it later.
        if left == 0 && idle(&n) {
            t.nodes.remove(&ino.0);
            t.by_key.remove(&n.key);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let n = tri!(reply, self.shared.node(ino));
        self.reply_attr(&n, reply);
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let s = &self.shared;
        let n = tri!(reply, s.node(ino));
        let fd = n.fd.as_raw_fd();
        if let Some(mode) = mode {
            if n.kind != FileType::Symlink {
                tri!(reply, sys::chmod_fd(fd, mode & 0o7777).map_err(errno));
            }
        }
        if uid.is_some() || gid.is_some() {
            tri!(
                reply,
                sys::chown_fd(fd, uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX)).map_err(errno)
            );
        }
        if let Some(size) = size {
            if n.kind != FileType::RegularFile {
                reply.error(Errno::EINVAL);
                return;
            }
            tri!(reply, self.set_size(&n, fh, size));
        }
        if atime.is_some() || mtime.is_some() {
            let ts = [timespec(atime), timespec(mtime)];
            tri!(
                reply,
                sys::utimens_fd(fd, n.kind == FileType::Symlink, &ts).map_err(errno)
            );
            if mtime.is_some() {
                // An explicit mtime wins over the time of the last buffered write.
                lock(&n.data).mtime = None;
            }
        }
        self.reply_attr(&n, reply);
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let n = tri!(reply, self.shared.node(ino));
        let target = tri!(reply, sys::readlink_fd(n.fd.as_raw_fd()).map_err(errno));
        reply.data(&target);
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let s = &self.shared;
        let p = tri!(reply, s.node(parent));
        let c = tri!(reply, sys::cname(name).map_err(errno));
        let perm = mode & 0o7777 & !umask;
        tri!(
            reply,
            sys::mknodat(
                p.fd.as_raw_fd(),
                &c,
                (mode & libc::S_IFMT) | perm,
                rdev as libc::dev_t,
            )
            .map_err(errno)
        );
        let (n, _) = tri!(reply, s.lookup_child(&p, name).map_err(errno));
        // Our own umask applied to mknod; set the mode the client asked for.
        let _ = sys::chmod_fd(n.fd.as_raw_fd(), perm);
        let _ = s.own(req, &p, n.fd.as_raw_fd());
        let attr = tri!(reply, s.attr(&n).map_err(errno));
        reply.entry(&TTL, &attr, Generation(0));
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let s = &self.shared;
        let p = tri!(reply, s.node(parent));
        let c = tri!(reply, sys::cname(name).map_err(errno));
        let mut perm = mode & 0o7777 & !umask;
        tri!(
            reply,
            sys::mkdirat(p.fd.as_raw_fd(), &c, perm).map_err(errno)
        );
        let (n, _) = tri!(reply, s.lookup_child(&p, name).map_err(errno));
        if let Ok(pst) = sys::fstat(p.fd.as_raw_fd()) {
            // Directories inherit a parent's set-gid bit; chmod must keep it.
            perm |= pst.st_mode & libc::S_ISGID;
        }
        let _ = sys::chmod_fd(n.fd.as_raw_fd(), perm);
        let _ = s.own(req, &p, n.fd.as_raw_fd());
        let attr = tri!(reply, s.attr(&n).map_err(errno));
        reply.entry(&TTL, &attr, Generation(0));
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let s = &self.shared;
        let p = tri!(reply, s.node(parent));
        let c = tri!(reply, sys::cname(name).map_err(errno));
        let st = sys::statat(p.fd.as_raw_fd(), &c).ok();
        tri!(reply, sys::unlinkat(p.fd.as_raw_fd(), &c, 0).map_err(errno));
        if let Some(n) = st.and_then(|st| s.node_by_key((st.st_dev, st.st_ino))) {
            s.drop_if_unreachable(&n);
        }
        reply.ok();
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let p = tri!(reply, self.shared.node(parent));
        let c = tri!(reply, sys::cname(name).map_err(errno));
        tri!(
            reply,
            sys::unlinkat(p.fd.as_raw_fd(), &c, libc::AT_REMOVEDIR).map_err(errno)
        );
        reply.ok();
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let s = &self.shared;
        let p = tri!(reply, s.node(parent));
        let c = tri!(reply, sys::cname(link_name).map_err(errno));
        let t = tri!(reply, sys::cname(target.as_os_str()).map_err(errno));
        tri!(
            reply,
            sys::symlinkat(&t, p.fd.as_raw_fd(), &c).map_err(errno)
        );
        let (n, _) = tri!(reply, s.lookup_child(&p, link_name).map_err(errno));
        let _ = s.own(req, &p, n.fd.as_raw_fd());
        let attr = tri!(reply, s.attr(&n).map_err(errno));
        reply.entry(&TTL, &attr, Generation(0));
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let s = &self.shared;
        let p = tri!(reply, s.node(parent));
        let np = tri!(reply, s.node(newparent));
        let c = tri!(reply, sys::cname(name).map_err(errno));
        let nc = tri!(reply, sys::cname(newname).map_err(errno));
        // The file a rename replaces loses a name; if that was its last one,
        // its dirty data goes like an unlinked file's.
        let replaced = if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            None
        } else {
            sys::statat(np.fd.as_raw_fd(), &nc).ok()
        };
        tri!(
            reply,
            sys::renameat(p.fd.as_raw_fd(), &c, np.fd.as_raw_fd(), &nc, flags.bits())
                .map_err(errno)
        );
        if let Some(n) = replaced.and_then(|st| s.node_by_key((st.st_dev, st.st_ino))) {
            s.drop_if_unreachable(&n);
        }
        reply.ok();
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let s = &self.shared;
        let n = tri!(reply, s.node(ino));
        let np = tri!(reply, s.node(newparent));
        let nc = tri!(reply, sys::cname(newname).map_err(errno));
        let mut r = sys::linkat(
            n.fd.as_raw_fd(),
            c"",
            np.fd.as_raw_fd(),
            &nc,
            libc::AT_EMPTY_PATH,
        );
        if r.is_err() && n.kind != FileType::Symlink {
            // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc works without.
            let pp = sys::proc_path(n.fd.as_raw_fd());
            r = sys::linkat(
                libc::AT_FDCWD,
                &pp,
                np.fd.as_raw_fd(),
                &nc,
                libc::AT_SYMLINK_FOLLOW,
            );
        }
        tri!(reply, r.map_err(errno));
        let attr = tri!(reply, s.entry(&np, newname));
        reply.entry(&TTL, &attr, Generation(0));
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let s = &self.shared;
        let n = tri!(reply, s.node(ino));
        let f = tri!(reply, open_backing(&n, flags.0).map_err(errno));
        let f = Arc::new(f);
        if flags.0 & libc::O_TRUNC != 0 {
            tri!(reply, s.truncate(&n, Some(&f), 0).map_err(errno));
        }
        lock(&n.data).open += 1;
        let fh = s.add_handle(Handle::File(OpenFile {
            node: n,
            file: f,
            sync: flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0,
        }));
        // No FOPEN_KEEP_CACHE: the kernel drops its cached pages of the file
        // on every open, so a process started after a cut reads what we say.
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let h = tri!(reply, self.shared.file_handle(fh));
        let Handle::File(of) = &*h else {
            unreachable!("file_handle checked")
        };
        let buf = tri!(reply, self.shared.read(of, offset, size).map_err(errno));
        reply.data(&buf);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let h = tri!(reply, self.shared.file_handle(fh));
        let Handle::File(of) = &*h else {
            unreachable!("file_handle checked")
        };
        tri!(reply, self.shared.write(of, offset, data).map_err(errno));
        reply.written(data.len() as u32);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close() does not make data durable; nothing to do.
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let s = &self.shared;
        if let Some(h) = lock(&s.handles).remove(&fh.0) {
            if let Handle::File(of) = &*h {
                {
                    let mut d = lock(&of.node.data);
                    d.open = d.open.saturating_sub(1);
                }
                // The data stays cached after close (the page cache outlives
                // close() too), unless the file has no name left.
                s.drop_if_unreachable(&of.node);
            }
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let s = &self.shared;
        s.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        let h = tri!(reply, s.file_handle(fh));
        let Handle::File(of) = &*h else {
            unreachable!("file_handle checked")
        };
        tri!(
            reply,
            s.sync_node(&of.node, &of.file, datasync).map_err(errno)
        );
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let s = &self.shared;
        let n = tri!(reply, s.node(ino));
        let file = tri!(
            reply,
            sys::reopen(n.fd.as_raw_fd(), libc::O_RDONLY | libc::O_DIRECTORY).map_err(errno)
        );
        // The listing is taken once, at opendir: offsets then index a stable
        // vector however the directory changes while it is read.
        let mut entries = vec![
            (OsString::from("."), FileType::Directory, n.key.1),
            (OsString::from(".."), FileType::Directory, 1),
        ];
        let path = sys::proc_path(file.as_raw_fd());
        let rd = tri!(
            reply,
            std::fs::read_dir(OsStr::from_bytes(path.as_bytes())).map_err(errno)
        );
        for e in rd {
            let e = tri!(reply, e.map_err(errno));
            let kind = match e.file_type() {
                Ok(t) if t.is_dir() => FileType::Directory,
                Ok(t) if t.is_symlink() => FileType::Symlink,
                Ok(t) if t.is_fifo() => FileType::NamedPipe,
                Ok(t) if t.is_socket() => FileType::Socket,
                Ok(t) if t.is_char_device() => FileType::CharDevice,
                Ok(t) if t.is_block_device() => FileType::BlockDevice,
                _ => FileType::RegularFile,
            };
            entries.push((e.file_name(), kind, e.ino()));
        }
        let fh = s.add_handle(Handle::Dir(OpenDir { file, entries }));
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let h = tri!(reply, self.shared.handle(fh));
        let Handle::Dir(d) = &*h else {
            reply.error(Errno::ENOTDIR);
            return;
        };
        for (i, (name, kind, ino)) in d.entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo((*ino).max(1)), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        lock(&self.shared.handles).remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let s = &self.shared;
        s.stats.dir_fsyncs.fetch_add(1, Ordering::Relaxed);
        let h = tri!(reply, s.handle(fh));
        let Handle::Dir(d) = &*h else {
            reply.error(Errno::ENOTDIR);
            return;
        };
        tri!(reply, sys::sync_file(&d.file, datasync).map_err(errno));
        reply.ok();
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let n = tri!(reply, self.shared.node(ino));
        let p = sys::proc_path(n.fd.as_raw_fd());
        let sv = tri!(reply, sys::statvfs(&p).map_err(errno));
        reply.statfs(
            sv.f_blocks,
            sv.f_bfree,
            sv.f_bavail,
            sv.f_files,
            sv.f_ffree,
            sv.f_bsize as u32,
            sv.f_namemax as u32,
            sv.f_frsize as u32,
        );
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        // default_permissions: the kernel checks modes itself.
        tri!(reply, self.shared.node(ino));
        reply.ok();
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let s = &self.shared;
        let p = tri!(reply, s.node(parent));
        let c = tri!(reply, sys::cname(name).map_err(errno));
        let perm = mode & 0o7777 & !umask;
        let bflags = backing_flags(flags);
        // Try to create exclusively, to know whether the mode and owner are
        // ours to set; an existing file is opened as it is (unless O_EXCL).
        let (fd, created) = match sys::openat(
            p.fd.as_raw_fd(),
            &c,
            bflags | libc::O_CREAT | libc::O_EXCL,
            perm,
        ) {
            Ok(fd) => (fd, true),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && flags & libc::O_EXCL == 0 => (
                tri!(
                    reply,
                    sys::openat(p.fd.as_raw_fd(), &c, bflags, 0).map_err(errno)
                ),
                false,
            ),
            Err(e) => {
                reply.error(errno(e));
                return;
            }
        };
        let file = File::from(fd);
        if created {
            let _ = file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(perm));
            let _ = s.own(req, &p, file.as_raw_fd());
        }
        let (n, _) = tri!(reply, s.lookup_child(&p, name).map_err(errno));
        let file = Arc::new(file);
        if !created && flags & libc::O_TRUNC != 0 {
            tri!(reply, s.truncate(&n, Some(&file), 0).map_err(errno));
        }
        let attr = tri!(reply, s.attr(&n).map_err(errno));
        lock(&n.data).open += 1;
        let fh = s.add_handle(Handle::File(OpenFile {
            node: n,
            file,
            sync: flags & (libc::O_SYNC | libc::O_DSYNC) != 0,
        }));
        reply.created(
            &TTL,
            &attr,
            Generation(0),
            FileHandle(fh),
            FopenFlags::empty(),
        );
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let s = &self.shared;
        let h = tri!(reply, s.file_handle(fh));
        let Handle::File(of) = &*h else {
            unreachable!("file_handle checked")
        };
        let mut d = lock(&of.node.data);
        let keep = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
        let zeroing = mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE) != 0;
        let simple = mode & !(libc::FALLOC_FL_KEEP_SIZE) == 0;
        if !simple && !zeroing {
            // Collapse/insert range move bytes around: settle the cache first.
            tri!(reply, s.writeback(&mut d).map_err(errno));
        }
        tri!(
            reply,
            sys::fallocate(&of.file, mode, offset, length).map_err(errno)
        );
        if zeroing {
            d.dirty.zero_range(offset, length);
        }
        if !keep {
            d.dirty.grow_size(offset.saturating_add(length));
        }
        reply.ok();
    }
}

/// Opens the backing file of `node` for a client open with `flags`.
fn open_backing(node: &Node, flags: i32) -> io::Result<File> {
    let bflags = backing_flags(flags);
    match sys::reopen(node.fd.as_raw_fd(), bflags) {
        Ok(f) => Ok(f),
        Err(e) if bflags & libc::O_ACCMODE == libc::O_RDWR => {
            // A write-only open of something we may not read (not as root):
            // the client's own access mode, then.
            let acc = flags & libc::O_ACCMODE;
            sys::reopen(node.fd.as_raw_fd(), (bflags & !libc::O_ACCMODE) | acc).map_err(|_| e)
        }
        Err(e) => Err(e),
    }
}

//! Thin wrappers over the `*at` system calls the pass-through needs.
//!
//! Every inode is held by an `O_PATH` descriptor of its backing file, so
//! operations address it by descriptor, not by path: a rename anywhere above
//! it, or an unlink of the name it was looked up by, cannot make a later
//! operation hit the wrong file.
//!
//! Soundness of the calls below rests only on the pointers passed: names are
//! `&CStr` (NUL-terminated, borrowed for the whole call) and out-parameters
//! point to room for the struct or the byte count given. Descriptors are
//! plain numbers to the kernel: a stale or wrong one makes the call fail
//! (`EBADF`, `ENOTDIR`), it cannot touch our memory.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;

/// `Err(last_os_error)` when a libc call returned -1.
pub(crate) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A name from the kernel as a C string (names never hold NUL bytes).
pub(crate) fn cname(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `/proc/self/fd/N`: reopens an `O_PATH` descriptor with real access modes.
pub(crate) fn proc_path(fd: RawFd) -> CString {
    CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a number")
}

const EMPTY: &CStr = c"";

/// `openat(dirfd, name, flags, mode)`, close-on-exec.
pub(crate) fn openat(dirfd: RawFd, name: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let fd = cvt(unsafe {
        libc::openat(
            dirfd,
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reopens the file an `O_PATH` descriptor refers to, with `flags`.
pub(crate) fn reopen(fd: RawFd, flags: i32) -> io::Result<File> {
    let p = proc_path(fd);
    let fd = openat(libc::AT_FDCWD, &p, flags, 0)?;
    Ok(File::from(fd))
}

/// `fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW)`.
pub(crate) fn statat(dirfd: RawFd, name: &CStr) -> io::Result<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated and `st` has room for one `stat`;
    // both outlive the call.
    cvt(unsafe {
        libc::fstatat(
            dirfd,
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: fstatat succeeded, so it filled the struct.
    Ok(unsafe { st.assume_init() })
}

/// `fstat` that also works on `O_PATH` descriptors.
pub(crate) fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `EMPTY` is a static NUL-terminated string and `st` has room
    // for one `stat`.
    cvt(unsafe {
        libc::fstatat(
            fd,
            EMPTY.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: fstatat succeeded, so it filled the struct.
    Ok(unsafe { st.assume_init() })
}

/// `mknodat(dirfd, name, mode, rdev)`.
pub(crate) fn mknodat(
    dirfd: RawFd,
    name: &CStr,
    mode: libc::mode_t,
    rdev: libc::dev_t,
) -> io::Result<()> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    cvt(unsafe { libc::mknodat(dirfd, name.as_ptr(), mode, rdev) }).map(drop)
}

/// `mkdirat(dirfd, name, mode)`.
pub(crate) fn mkdirat(dirfd: RawFd, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    cvt(unsafe { libc::mkdirat(dirfd, name.as_ptr(), mode) }).map(drop)
}

/// `unlinkat(dirfd, name, flags)` (`AT_REMOVEDIR` for a directory).
pub(crate) fn unlinkat(dirfd: RawFd, name: &CStr, flags: i32) -> io::Result<()> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    cvt(unsafe { libc::unlinkat(dirfd, name.as_ptr(), flags) }).map(drop)
}

/// `symlinkat(target, dirfd, name)`: creates `name` pointing at `target`.
pub(crate) fn symlinkat(target: &CStr, dirfd: RawFd, name: &CStr) -> io::Result<()> {
    // SAFETY: `target` and `name` are NUL-terminated strings that outlive
    // the call.
    cvt(unsafe { libc::symlinkat(target.as_ptr(), dirfd, name.as_ptr()) }).map(drop)
}

/// `renameat` when `flags` is 0, else `renameat2` with `RENAME_*` flags.
pub(crate) fn renameat(
    olddir: RawFd,
    old: &CStr,
    newdir: RawFd,
    new: &CStr,
    flags: u32,
) -> io::Result<()> {
    let r = if flags == 0 {
        // SAFETY: `old` and `new` are NUL-terminated strings that outlive
        // the call.
        unsafe { libc::renameat(olddir, old.as_ptr(), newdir, new.as_ptr()) }
    } else {
        // SAFETY: as above; `flags` is a plain value.
        unsafe { libc::renameat2(olddir, old.as_ptr(), newdir, new.as_ptr(), flags) }
    };
    cvt(r).map(drop)
}

/// `linkat(olddir, old, newdir, new, flags)`.
pub(crate) fn linkat(
    olddir: RawFd,
    old: &CStr,
    newdir: RawFd,
    new: &CStr,
    flags: i32,
) -> io::Result<()> {
    // SAFETY: `old` and `new` are NUL-terminated strings that outlive the
    // call.
    cvt(unsafe { libc::linkat(olddir, old.as_ptr(), newdir, new.as_ptr(), flags) }).map(drop)
}

/// `statvfs(path)`.
pub(crate) fn statvfs(path: &CStr) -> io::Result<libc::statvfs> {
    let mut sv = MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is NUL-terminated and `sv` has room for one `statvfs`;
    // both outlive the call.
    cvt(unsafe { libc::statvfs(path.as_ptr(), sv.as_mut_ptr()) })?;
    // SAFETY: statvfs succeeded, so it filled the struct.
    Ok(unsafe { sv.assume_init() })
}

/// Reads as much of `buf` as the file has from `off`; returns the count
/// (short only at end of file).
pub(crate) fn read_full_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)` (-1 keeps a value).
pub(crate) fn chown_fd(fd: RawFd, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: `EMPTY` is a static NUL-terminated string; the rest are values.
    cvt(unsafe {
        libc::fchownat(
            fd,
            EMPTY.as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// chmod through `/proc/self/fd/N` (works for `O_PATH` descriptors of
/// anything but symlinks, whose mode Linux cannot change anyway).
pub(crate) fn chmod_fd(fd: RawFd, mode: u32) -> io::Result<()> {
    let p = proc_path(fd);
    // SAFETY: `p` is a NUL-terminated path that outlives the call.
    cvt(unsafe { libc::fchmodat(libc::AT_FDCWD, p.as_ptr(), mode as libc::mode_t, 0) }).map(drop)
}

/// Sets atime/mtime (`UTIME_OMIT`/`UTIME_NOW` allowed) of what `fd` refers to.
pub(crate) fn utimens_fd(fd: RawFd, symlink: bool, ts: &[libc::timespec; 2]) -> io::Result<()> {
    if symlink {
        // SAFETY: `EMPTY` is a static NUL-terminated string and `ts` points
        // to the two timespecs utimensat reads.
        cvt(unsafe { libc::utimensat(fd, EMPTY.as_ptr(), ts.as_ptr(), libc::AT_EMPTY_PATH) })
            .map(drop)
    } else {
        let p = proc_path(fd);
        // SAFETY: `p` is a NUL-terminated path that outlives the call and
        // `ts` points to the two timespecs utimensat reads.
        cvt(unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), ts.as_ptr(), 0) }).map(drop)
    }
}

/// `readlinkat(fd, "")` of an `O_PATH` descriptor of a symlink.
pub(crate) fn readlink_fd(fd: RawFd) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: `EMPTY` is a static NUL-terminated string; `buf` is writable
    // for the `buf.len()` bytes passed, and readlinkat writes no more.
    let n = unsafe {
        libc::readlinkat(
            fd,
            EMPTY.as_ptr(),
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `fallocate(2)` on an open file.
pub(crate) fn fallocate(f: &File, mode: i32, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: plain values only; `f` keeps its descriptor open for the call.
    cvt(unsafe { libc::fallocate(f.as_raw_fd(), mode, off as libc::off_t, len as libc::off_t) })
        .map(drop)
}

/// `fdatasync(2)` or `fsync(2)`.
pub(crate) fn sync_file(f: &File, datasync: bool) -> io::Result<()> {
    if datasync {
        f.sync_data()
    } else {
        f.sync_all()
    }
}

/// Raises the soft open-file limit to the hard one: every inode the kernel
/// holds costs one `O_PATH` descriptor here.
pub(crate) fn raise_nofile_limit() {
    let mut rl = MaybeUninit::<libc::rlimit>::uninit();
    // SAFETY: `rl` has room for one `rlimit`, read only after getrlimit
    // returned 0 and so filled it; setrlimit reads an initialised struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, rl.as_mut_ptr()) == 0 {
            let mut rl = rl.assume_init();
            if rl.rlim_cur < rl.rlim_max {
                rl.rlim_cur = rl.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
            }
        }
    }
}

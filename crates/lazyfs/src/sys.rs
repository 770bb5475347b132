//! Thin wrappers over the `*at` system calls the pass-through needs.
//!
//! Every inode is held by an `O_PATH` descriptor of its backing file, so
//! operations address it by descriptor, not by path: a rename anywhere above
//! it, or an unlink of the name it was looked up by, cannot make a later
//! operation hit the wrong file.

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
    cvt(unsafe { libc::fchmodat(libc::AT_FDCWD, p.as_ptr(), mode as libc::mode_t, 0) }).map(drop)
}

/// Sets atime/mtime (`UTIME_OMIT`/`UTIME_NOW` allowed) of what `fd` refers to.
pub(crate) fn utimens_fd(fd: RawFd, symlink: bool, ts: &[libc::timespec; 2]) -> io::Result<()> {
    if symlink {
        cvt(unsafe { libc::utimensat(fd, EMPTY.as_ptr(), ts.as_ptr(), libc::AT_EMPTY_PATH) })
            .map(drop)
    } else {
        let p = proc_path(fd);
        cvt(unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), ts.as_ptr(), 0) }).map(drop)
    }
}

/// `readlinkat(fd, "")` of an `O_PATH` descriptor of a symlink.
pub(crate) fn readlink_fd(fd: RawFd) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
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

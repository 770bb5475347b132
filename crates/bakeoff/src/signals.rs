//! Stopping on a signal. Ctrl-C (SIGINT), SIGTERM (what `kill`, systemd
//! and container runtimes send), SIGHUP (a closed terminal) and SIGQUIT
//! all do the same: the requests in flight finish, the result is written,
//! the servers stop and their directories go. A second signal exits at
//! once; what bakeoff started dies with it (see
//! `bakeoff_servers::spawn`), and the next run removes what it left on
//! disk.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

/// The signals that stop a run cleanly.
pub const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Write end of the pipe the handler reports signals through (-1: none).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// The first stop signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signal handler: one byte, the signal's number, into the pipe
/// (`write` is async-signal-safe; everything else happens in a thread).
extern "C" fn on_signal(sig: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Relaxed);
    let byte = sig as u8;
    // SAFETY: writing one byte from a live stack slot to a pipe we own.
    unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
}

/// The name a message gives signal `sig`.
pub fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "Ctrl-C",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}

/// The first stop signal received, if any.
pub fn received() -> Option<libc::c_int> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// Installs the handlers: the first stop signal sets `stop`, a second
/// exits with 128 + its number.
pub fn install(stop: Arc<AtomicBool>) -> std::io::Result<()> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    PIPE_WRITE.store(fds[1], Ordering::Relaxed);
    let read_end = fds[0];
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut byte = 0u8;
            // SAFETY: reading one byte into a live stack slot.
            let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
            if n != 1 {
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                return;
            }
            let sig = libc::c_int::from(byte);
            if stop.swap(true, Ordering::SeqCst) {
                say!(
                    "\n{} again: exiting now; finished runs are in the result file",
                    name(sig)
                );
                std::process::exit(128 + sig);
            }
            RECEIVED.store(sig, Ordering::Relaxed);
            say!(
                "\n{}: finishing requests in flight and writing the result (again to quit at once)",
                name(sig)
            );
        })?;
    for sig in STOP_SIGNALS {
        // SAFETY: a zeroed sigaction with our handler; SA_RESTART so that
        // system calls the signal lands in carry on.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

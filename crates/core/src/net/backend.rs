//! The two I/O mechanisms under the loop, io_uring and epoll: the only
//! code that moves bytes between the sockets and the connections' buffers
//! and waits for the kernel.

#[allow(unused_imports)]
use super::*;

/// `epoll_wait` for at most `wait_ns`: with a nanosecond timeout
/// (`epoll_pwait2`, Linux 5.11). A millisecond timeout rounded down would
/// turn every shorter wait of an open loop into a busy poll; where
/// `epoll_pwait2` fails (an older kernel, a seccomp filter), that busy poll
/// is what remains, as the loop keeps its schedule rather than wake a
/// millisecond late.
fn epoll_wait_ns(epfd: i32, events: &mut [libc::epoll_event], wait_ns: u64) -> i32 {
    use std::sync::atomic::{AtomicBool, Ordering};
    static NO_PWAIT2: AtomicBool = AtomicBool::new(false);
    if !NO_PWAIT2.load(Ordering::Relaxed) {
        let ts = libc::timespec {
            tv_sec: (wait_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: events is a valid buffer of the given length, ts lives
        // through the call, and a null signal mask leaves the mask alone.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                epfd,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        } as i32;
        if n >= 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            return n;
        }
        NO_PWAIT2.store(true, Ordering::Relaxed);
    }
    let ms = (wait_ns / 1_000_000) as i32;
    // SAFETY: events is a valid buffer of the given length.
    unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), events.len() as i32, ms) }
}

/// How bytes move: io_uring or epoll.
pub(super) enum Backend {
    Uring {
        ring: Box<IoUring>,
        /// Completions copied out of the ring before they are handled.
        completions: Vec<(u64, i32)>,
    },
    Epoll {
        epfd: i32,
        events: Vec<libc::epoll_event>,
    },
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Backend::Epoll { epfd, .. } = *self {
            if epfd >= 0 {
                // SAFETY: closing the epoll fd we created.
                unsafe { libc::close(epfd) };
            }
        }
    }
}

pub(super) const RECV: u64 = 0;
pub(super) const SEND: u64 = 1;

impl Backend {
    pub(super) fn new(choice: IoBackend, conns: usize) -> (Self, IoLoop) {
        if choice != IoBackend::Epoll {
            let entries = (2 * conns + 16).next_power_of_two().clamp(64, 4096) as u32;
            // Completions are run only when this thread enters the ring
            // (single issuer, deferred task work): no interrupting task work,
            // cheaper per operation. Older kernels get a plain ring.
            let tuned = IoUring::builder()
                .setup_cqsize(entries * 2)
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_taskrun_flag()
                .build(entries);
            let ring =
                tuned.or_else(|_| IoUring::builder().setup_cqsize(entries * 2).build(entries));
            match ring {
                Ok(ring) => {
                    return (
                        Backend::Uring {
                            ring: Box::new(ring),
                            completions: Vec::with_capacity(entries as usize * 2),
                        },
                        IoLoop::IoUring,
                    )
                }
                Err(e) if choice == IoBackend::IoUring => {
                    return (
                        Self::epoll(conns),
                        IoLoop::Epoll {
                            note: Some(format!("io_uring was asked for but is unavailable: {e}")),
                        },
                    )
                }
                Err(e) => {
                    return (
                        Self::epoll(conns),
                        IoLoop::Epoll {
                            note: Some(format!("io_uring unavailable: {e}")),
                        },
                    )
                }
            }
        }
        (Self::epoll(conns), IoLoop::Epoll { note: None })
    }

    pub(super) fn epoll(conns: usize) -> Self {
        // SAFETY: plain syscall; the fd is closed in Drop.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        Backend::Epoll {
            epfd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; conns.clamp(1, 1024)],
        }
    }

    /// Queues an io_uring operation, submitting first if the queue is full.
    pub(super) fn push(ring: &mut IoUring, entry: io_uring::squeue::Entry) {
        // SAFETY: every buffer an entry points to lives in a Conn that is
        // neither moved, resized nor dropped until the entry's completion
        // has been reaped (recv_inflight / send_inflight guard them).
        unsafe {
            if ring.submission().push(&entry).is_err() {
                let _ = ring.submit();
                let _ = ring.submission().push(&entry);
            }
        }
    }
}

impl<'a, C: Codec, const MULTI: bool> Loop<'a, C, MULTI> {
    /// io_uring: keeps one receive in the kernel for `ci`.
    pub(super) fn arm_recv(&mut self, ci: usize) {
        let Backend::Uring { ring, .. } = &mut self.backend else {
            return;
        };
        let c = &mut self.conns[ci];
        if c.recv_inflight || !c.usable() {
            return;
        }
        c.make_room();
        let fd = c.stream.as_ref().expect("usable").as_raw_fd();
        let room = &mut c.rbuf[c.rend..];
        // (IORING_RECVSEND_POLL_FIRST was measured here and cost more CPU
        // per operation than the immediate attempt it saves.)
        let e = opcode::Recv::new(types::Fd(fd), room.as_mut_ptr(), room.len() as u32)
            .build()
            .user_data((ci as u64) << 1);
        Backend::push(ring, e);
        c.recv_inflight = true;
    }

    /// epoll: reads what is there on `ci` (one `read`).
    pub(super) fn on_readable(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.stream.is_none() {
            return;
        }
        c.make_room();
        let stream = c.stream.as_mut().expect("checked above");
        let res = stream.read(&mut c.rbuf[c.rend..]);
        let now = self.now();
        match res {
            Ok(n) => self.on_bytes::<false>(ci, n, now, 0),
            Err(e) if matches!(e.kind(), IoErrorKind::WouldBlock | IoErrorKind::Interrupted) => {}
            Err(_) => self.fail(ci, ErrorKind::Reset, now),
        }
    }

    /// Open loop on io_uring (see [`Loop::lazy`]): reads the replies
    /// already arrived on `ci`, without waiting, and times each by when the
    /// kernel received its last bytes (`SO_TIMESTAMPNS`), not by when this
    /// thread got round to it. One `recvmsg` per call while the buffer
    /// fills; nothing when no reply is there.
    pub(super) fn read_arrived(&mut self, ci: usize, now: u64) {
        loop {
            let c = &mut self.conns[ci];
            if c.recv_inflight || !c.usable() || c.inflight.is_empty() {
                return;
            }
            c.make_room();
            let fd = c.stream.as_ref().expect("usable").as_raw_fd();
            let room = c.rbuf.len() - c.rend;
            let mut iov = libc::iovec {
                // SAFETY: rend <= rbuf.len(); the pointer stays in the buffer.
                iov_base: unsafe { c.rbuf.as_mut_ptr().add(c.rend) }.cast(),
                iov_len: room,
            };
            // Room for one SCM_TIMESTAMPNS control message (a timespec),
            // aligned as cmsghdr wants.
            let mut control = [0u64; 8];
            // SAFETY: msghdr is plain data; every pointer set below is valid.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            // SAFETY: fd is our socket; msg points at live buffers.
            let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if matches!(e.kind(), IoErrorKind::WouldBlock | IoErrorKind::Interrupted) {
                    return;
                }
                return self.fail(ci, ErrorKind::Reset, now);
            }
            match self.arrival_of(&msg) {
                Some(t) => self.on_bytes::<true>(ci, n as usize, now, t.min(now)),
                None => self.on_bytes::<false>(ci, n as usize, now, 0),
            }
            if (n as usize) < room {
                return;
            }
        }
    }

    /// The time, ns since the job's start, of the kernel's receive
    /// timestamp in `msg`'s control messages.
    fn arrival_of(&self, msg: &libc::msghdr) -> Option<u64> {
        // SAFETY: msg was filled by recvmsg; CMSG_* walk its control buffer
        // within msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET
                    && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
                {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    let real = ts.tv_sec * 1_000_000_000 + ts.tv_nsec;
                    return u64::try_from(real - self.real_minus_job_ns).ok();
                }
                cmsg = libc::CMSG_NXTHDR(msg, cmsg);
            }
        }
        None
    }

    /// Open loop on io_uring: writes what is buffered for `ci` at once (one
    /// `send`), so that a send time costs no completion to wait for.
    /// Whether it all went; what did not goes by io_uring.
    #[inline(never)]
    pub(super) fn send_now(&mut self, ci: usize) -> bool {
        let c = &mut self.conns[ci];
        let fd = c.stream.as_ref().expect("usable").as_raw_fd();
        let rest = &c.sending[c.spos..];
        // SAFETY: fd is our socket and rest a live buffer.
        let n = unsafe {
            libc::send(
                fd,
                rest.as_ptr().cast(),
                rest.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n > 0 {
            c.spos += n as usize;
        }
        c.spos == c.sending.len()
    }

    /// epoll: writes what is being sent on `ci` (one `write`), and asks
    /// for EPOLLOUT while some of it is left.
    #[inline(never)]
    pub(super) fn write_now(&mut self, ci: usize, now: u64) {
        let Backend::Epoll { epfd, .. } = &self.backend else {
            return;
        };
        let epfd = *epfd;
        let c = &mut self.conns[ci];
        let stream = c.stream.as_mut().expect("usable");
        match stream.write(&c.sending[c.spos..]) {
            Ok(n) => c.spos += n,
            Err(e) if matches!(e.kind(), IoErrorKind::WouldBlock | IoErrorKind::Interrupted) => {}
            Err(_) => return self.fail(ci, ErrorKind::Reset, now),
        }
        let pending = c.spos < c.sending.len();
        if pending != c.want_write {
            c.want_write = pending;
            let mut events = libc::EPOLLIN as u32;
            if pending {
                events |= libc::EPOLLOUT as u32;
            }
            let mut ev = libc::epoll_event {
                events,
                u64: ci as u64,
            };
            let fd = c.stream.as_ref().expect("usable").as_raw_fd();
            // SAFETY: modifying the registration of a fd we own.
            unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, &mut ev) };
        }
    }

    /// io_uring: handles one completion.
    pub(super) fn on_completion(&mut self, user_data: u64, res: i32) {
        let ci = (user_data >> 1) as usize;
        let op = user_data & 1;
        let now = self.now();
        let c = &mut self.conns[ci];
        if op == RECV {
            c.recv_inflight = false;
        } else {
            c.send_inflight = false;
        }
        if c.closing {
            if !c.recv_inflight && !c.send_inflight {
                c.stream = None;
                c.closing = false;
                c.reset_buffers();
            }
            return;
        }
        if c.stream.is_none() {
            return;
        }
        if res < 0 {
            let kind = if -res == libc::ECANCELED || -res == libc::EINTR || -res == libc::EAGAIN {
                // Not a failure of the connection: try again.
                if op == RECV {
                    self.arm_recv(ci);
                } else {
                    self.kick_write(ci, now);
                }
                return;
            } else {
                ErrorKind::Reset
            };
            return self.fail(ci, kind, now);
        }
        if op == RECV {
            self.on_bytes::<false>(ci, res as usize, now, 0);
            if !self.lazy {
                self.arm_recv(ci);
            }
        } else {
            c.spos += res as usize;
            self.kick_write(ci, now);
        }
    }

    /// Whether io_uring has completions waiting to be handled, or (on the
    /// tuned ring, whose receive completions wait as deferred task work
    /// until this thread enters the kernel) work that would post some.
    /// epoll cannot tell without a system call: never.
    pub(super) fn has_completions(&mut self) -> bool {
        match &mut self.backend {
            Backend::Uring { ring, .. } => {
                ring.submission().taskrun() || !ring.completion().is_empty()
            }
            Backend::Epoll { .. } => false,
        }
    }

    /// Whether io_uring holds requests not yet submitted to the kernel.
    pub(super) fn has_unsubmitted(&mut self) -> bool {
        match &mut self.backend {
            Backend::Uring { ring, .. } => !ring.submission().is_empty(),
            Backend::Epoll { .. } => false,
        }
    }

    /// One wait: io_uring submits everything queued and waits for at least
    /// one completion in the same system call; epoll waits for readiness.
    /// Whether it ended with nothing to handle (by its time, or on a
    /// signal).
    pub(super) fn wait_and_handle(&mut self, wait_ns: u64) -> bool {
        match &mut self.backend {
            Backend::Uring { ring, completions } => {
                let ts = types::Timespec::new()
                    .sec(wait_ns / 1_000_000_000)
                    .nsec((wait_ns % 1_000_000_000) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                let r = if wait_ns == 0 {
                    ring.submit()
                } else {
                    ring.submitter().submit_with_args(1, &args)
                };
                if let Err(e) = r {
                    if !matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                    ) {
                        // Nothing sensible is left to do with a broken ring
                        // but to stop making requests.
                        self.harness.stop();
                    }
                }
                completions.clear();
                completions.extend(ring.completion().map(|cqe| (cqe.user_data(), cqe.result())));
                let completions_len = completions.len();
                for i in 0..completions_len {
                    let (ud, res) = match &self.backend {
                        Backend::Uring { completions, .. } => completions[i],
                        Backend::Epoll { .. } => unreachable!(),
                    };
                    self.on_completion(ud, res);
                }
                // A timeout is not always an error (ETIME) here: a wait
                // that brought no completion ended by its time.
                completions_len == 0
            }
            Backend::Epoll { epfd, events } => {
                let n = epoll_wait_ns(*epfd, events, wait_ns.min(100_000_000));
                for i in 0..n.max(0) as usize {
                    let (ci, flags) = match &self.backend {
                        Backend::Epoll { events, .. } => (events[i].u64 as usize, events[i].events),
                        Backend::Uring { .. } => unreachable!(),
                    };
                    if flags & (libc::EPOLLIN | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0 {
                        self.on_readable(ci);
                    }
                    if flags & libc::EPOLLOUT as u32 != 0 {
                        let now = self.now();
                        self.kick_write(ci, now);
                    }
                }
                n == 0
            }
        }
    }

    /// io_uring: shuts every socket down and waits until the kernel has
    /// returned every buffer, so none is freed while it may still be written.
    pub(super) fn drain_kernel(&mut self) {
        if !matches!(self.backend, Backend::Uring { .. }) {
            return;
        }
        for c in &mut self.conns {
            if c.recv_inflight || c.send_inflight {
                if let Some(s) = &c.stream {
                    // SAFETY: shutting down a socket we own.
                    unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
                }
                c.closing = true;
            }
        }
        let deadline = self.now() + 5_000_000_000;
        while self
            .conns
            .iter()
            .any(|c| c.recv_inflight || c.send_inflight)
            && self.now() < deadline
        {
            self.wait_and_handle(10_000_000);
        }
    }
}

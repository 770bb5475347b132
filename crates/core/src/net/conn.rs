//! One connection of the loop: its socket, buffers and requests in flight.

#[allow(unused_imports)]
use super::*;

pub(super) struct Conn {
    pub(super) stream: Option<crate::driver::Stream>,
    /// What the server numbered for this connection (see [`Codec::encode`]).
    pub(super) handles: Handles,
    /// Requests made since the last send was started.
    pub(super) wbuf: Vec<u8>,
    /// Bytes being sent (with io_uring the kernel holds a pointer into it
    /// until the send completes); `spos` of them are gone.
    pub(super) sending: Vec<u8>,
    pub(super) spos: usize,
    /// epoll: EPOLLOUT is armed because the socket buffer was full.
    pub(super) want_write: bool,
    /// io_uring: a receive / send is in the kernel.
    pub(super) recv_inflight: bool,
    pub(super) send_inflight: bool,
    /// io_uring: the socket was shut down; waiting for the kernel to hand
    /// back the buffers before closing.
    pub(super) closing: bool,
    pub(super) rbuf: Vec<u8>,
    pub(super) rstart: usize,
    pub(super) rend: usize,
    pub(super) inflight: VecDeque<Request>,
    pub(super) retry_at: u64,
    pub(super) dead_since: Option<u64>,
}

impl Conn {
    /// A connection not yet open, with `wcap` bytes of room to write,
    /// `rcap` to read, and `pipeline` requests in flight.
    pub(super) fn new(wcap: usize, rcap: usize, pipeline: usize) -> Self {
        Conn {
            stream: None,
            handles: Handles::default(),
            wbuf: Vec::with_capacity(wcap),
            sending: Vec::with_capacity(wcap),
            spos: 0,
            want_write: false,
            recv_inflight: false,
            send_inflight: false,
            closing: false,
            rbuf: vec![0u8; rcap],
            rstart: 0,
            rend: 0,
            inflight: VecDeque::with_capacity(pipeline),
            retry_at: 0,
            dead_since: None,
        }
    }

    pub(super) fn usable(&self) -> bool {
        self.stream.is_some() && !self.closing
    }

    /// Makes room at the end of the read buffer (compacting, or growing
    /// once when a single reply is larger than the buffer).
    pub(super) fn make_room(&mut self) {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        } else if self.rbuf.len() - self.rend < 4096 {
            if self.rstart > 0 {
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
            }
            if self.rbuf.len() - self.rend < 4096 {
                let n = self.rbuf.len() * 2;
                self.rbuf.resize(n, 0);
            }
        }
    }

    pub(super) fn reset_buffers(&mut self) {
        self.wbuf.clear();
        self.sending.clear();
        self.spos = 0;
        self.want_write = false;
        self.rstart = 0;
        self.rend = 0;
    }
}

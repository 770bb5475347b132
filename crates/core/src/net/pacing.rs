//! When an open loop wakes before a send time, and how much of the
//! worker's time it may spin to send on time.

#[allow(unused_imports)]
use super::*;

/// The most an open loop wakes before a send time, ns. On the VMs with a
/// nested-virtualisation kernel a sleep of 2 ms woke 80–86 µs late at the
/// median and 176–183 µs at the 99th percentile: capped at 100 µs, the
/// lead sat below the median's need and an open loop at 500/s sent 28–37
/// µs late at the median. The spin stays within its share of the thread
/// (SPIN_SHARE_DIVISOR) whatever the lead.
pub(super) const MAX_WAKE_LEAD_NS: u64 = 400_000;

/// The last stretch before a send time spent spinning rather than
/// waiting, beyond the learnt lateness of wake-ups, ns.
pub(super) const SPIN_NS: u64 = 3_000;

/// The most of a worker's time spent spinning before send times: an
/// eighth (plus the last SPIN_NS before each send). Past it the thread
/// sleeps until SPIN_NS before the send time and its lateness shows in the
/// send lag, so that a fast open loop does not burn a
/// core (and the target's CPU on a shared machine) to look punctual.
pub(super) const SPIN_SHARE_DIVISOR: u64 = 8;

/// Spin time saved up at most, ns: a quiet stretch buys no long burst.
pub(super) const MAX_SPIN_CREDIT_NS: u64 = 5_000_000;

impl<'a, C: Codec, const MULTI: bool> Loop<'a, C, MULTI> {
    /// Whether client `ci`, in an open loop that reads replies when it
    /// wakes ([`Loop::lazy`]), may have a reply waiting that no receive in
    /// the kernel watches: its send time must wake the loop, which then
    /// reads it. (A connection that is down waits for its reconnection, as
    /// in any loop: counted here, its send time, already past, would turn
    /// the loop into a busy poll.)
    #[inline]
    fn reply_unwatched(&self, ci: usize) -> bool {
        self.lazy
            && self.conns_of(ci).any(|k| {
                let c = &self.conns[k];
                c.usable() && !c.recv_inflight && !c.inflight.is_empty()
            })
    }

    /// How long the next wait may last, ns, and whether it ends at an
    /// open-loop send time.
    pub(super) fn wait_ns(&self, now: u64) -> (u64, bool) {
        let h = &self.harness;
        let mut until = h
            .next_tick()
            .min(self.next_timeout_check + TIMEOUT_CHECK_EVERY_NS);
        let mut send_at = u64::MAX;
        if h.generating() {
            until = until.min(h.measure_end()).min(if h.warmup_end() > now {
                h.warmup_end()
            } else {
                u64::MAX
            });
            if h.open_loop() {
                for ci in 0..self.client_inflight.len() {
                    if self.has_room(ci) || self.reply_unwatched(ci) {
                        if let Some(t) = h.next_start(ci, now) {
                            send_at = send_at.min(t);
                        }
                    }
                }
            }
        }
        let wait = until.min(send_at).saturating_sub(now).min(100_000_000);
        (wait, send_at <= until)
    }

    /// Waits `wait_ns` from `now` for an open-loop send time: wakes early
    /// by what wake-ups have been late, and spins out the rest, as long as
    /// the spin stays within its share of the thread.
    pub(super) fn wait_for_send(&mut self, now: u64, wait_ns: u64) {
        self.spin_credit_ns = (self.spin_credit_ns
            + (now.saturating_sub(self.spin_credit_at) / SPIN_SHARE_DIVISOR) as i64)
            .clamp(-(MAX_SPIN_CREDIT_NS as i64), MAX_SPIN_CREDIT_NS as i64);
        self.spin_credit_at = now;
        // Out of credit, the thread sleeps until just before the send
        // time; it still spins out a wait shorter than SPIN_NS, which a
        // sleep would turn into a wake-up tens of µs late (so the share
        // is an eighth plus at most SPIN_NS a send).
        let early = if self.spin_credit_ns > 0 {
            self.wake.lead_ns() + SPIN_NS
        } else {
            SPIN_NS
        };
        if wait_ns <= early {
            if self.has_unsubmitted() || self.has_completions() {
                self.wait_and_handle(0);
            } else {
                // A reply that comes meanwhile ends the spin: it is
                // handled (and timed) at once, and the spin resumes.
                // The spin is timed from its own start: the sends made
                // above are work.
                let until = now + wait_ns;
                let from = self.now();
                let mut t = from;
                while t < until && !self.has_completions() {
                    std::hint::spin_loop();
                    t = self.now();
                }
                let spun = t - from;
                self.spin_credit_ns -= spun as i64;
                self.harness.spun(spun);
            }
            return;
        }
        let planned = now + wait_ns - early;
        if self.wait_and_handle(wait_ns - early) {
            let woke = self.now();
            if woke >= planned {
                self.wake.learn(planned, woke);
            }
        }
    }
}

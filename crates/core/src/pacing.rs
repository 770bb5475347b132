//! Waking on time. A thread that sleeps until a moment wakes late: by the
//! kernel's timer slack (50 µs by default) and by the time an idle core
//! takes to wake (tens of µs on these machines). An open loop that sends
//! late adds that to every response time, and the link relay would add it
//! to every round trip. So threads that keep a schedule take the smallest
//! slack, learn how late their wake-ups are, set them that much early, and
//! spin out the last microseconds.

/// Sets the calling thread's timer slack to 1 ns, the least the kernel
/// allows: its timed waits end within the wake-up latency of their time.
pub fn least_timer_slack() {
    // SAFETY: prctl on the calling thread with a plain integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// How late a thread's timed wake-ups come, learnt from samples capped at
/// `max_ns` (a stall — a page fault, a preemption — is not the timer's
/// lateness): their running mean, or a level near their tail.
#[derive(Clone, Copy, Debug)]
pub struct WakeLead {
    lead_ns: u64,
    max_ns: u64,
    tail: bool,
}

impl WakeLead {
    /// The mean lateness, for a thread that acts as soon as it wakes (the
    /// link relay sends what is due within the lead: early on average by
    /// nothing); no lead above `max_ns`.
    pub const fn new(max_ns: u64) -> Self {
        Self {
            lead_ns: 0,
            max_ns,
            tail: false,
        }
    }

    /// A level near the tail of the lateness (it rises by a quarter of each
    /// later wake-up's excess and falls by a 16th towards earlier ones), for
    /// a thread that spins out the rest of the wait, so that waking early
    /// costs a little CPU and waking late costs the measurement. (Falling
    /// by a 64th it sat higher in the tail: an open loop at 10,000/s spun
    /// 12 % more CPU per request on these VMs, and its sends were on time
    /// at the 90th percentile either way.)
    pub const fn of_tail(max_ns: u64) -> Self {
        Self {
            lead_ns: 0,
            max_ns,
            tail: true,
        }
    }

    /// A wake-up meant for `planned` came at `now` (ns on one clock).
    #[inline]
    pub fn learn(&mut self, planned: u64, now: u64) {
        let late = now.saturating_sub(planned).min(self.max_ns);
        self.lead_ns = match (self.tail, late > self.lead_ns) {
            (false, _) => (self.lead_ns * 15 + late) / 16,
            (true, true) => self.lead_ns + (late - self.lead_ns).div_ceil(4),
            (true, false) => self.lead_ns - (self.lead_ns - late) / 16,
        };
    }

    /// How early to set a wake-up, ns.
    #[inline]
    pub fn lead_ns(&self) -> u64 {
        self.lead_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_follows_late_wake_ups_and_ignores_stalls() {
        let mut l = WakeLead::new(30_000);
        for _ in 0..200 {
            l.learn(1_000, 21_000);
        }
        assert!((19_000..=20_000).contains(&l.lead_ns()), "{}", l.lead_ns());
        // One stall of a second moves it by at most the cap's share.
        l.learn(0, 1_000_000_000);
        assert!(l.lead_ns() <= 20_700, "{}", l.lead_ns());
        // Early wake-ups (completions) teach it that nothing is late.
        for _ in 0..200 {
            l.learn(5_000, 4_000);
        }
        assert!(l.lead_ns() < 100, "{}", l.lead_ns());
    }

    #[test]
    fn the_tail_lead_sits_near_the_latest_wake_ups() {
        let mut l = WakeLead::of_tail(100_000);
        // Nine wake-ups in ten 10 µs late, one in ten 50 µs late.
        for i in 0..2000u64 {
            let late = if i % 10 == 9 { 50_000 } else { 10_000 };
            l.learn(0, late);
        }
        // Above the nine in ten, within the tail.
        assert!(
            l.lead_ns() > 20_000 && l.lead_ns() <= 50_000,
            "{}",
            l.lead_ns()
        );
        // Nine in ten back below it: it falls towards them.
        for _ in 0..9 {
            l.learn(0, 10_000);
        }
        assert!(
            l.lead_ns() > 10_000 && l.lead_ns() < 25_000,
            "{}",
            l.lead_ns()
        );
    }
}

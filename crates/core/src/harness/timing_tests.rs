//! The timing core pinned with scripted times: the harness is driven by
//! hand, each request made and completed at times the test picks, and what
//! it recorded is read back from the worker's output. No clock, no I/O.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{channel, Receiver};

use super::*;
use crate::driver::{Job, JobInputs, JobKind};
use crate::plan::params::defaults;
use crate::plan::workload::{Mix, Workload};
use crate::recorder::{Interval, WorkerOutput};
use crate::value::ValuePool;
use crate::workload::KeyDistribution;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// What a job borrows, owned by the test.
struct Bench {
    workload: Workload,
    pool: ValuePool,
    stop: AtomicBool,
    intervals: std::sync::mpsc::Sender<Interval>,
    _rx: Receiver<Interval>,
}

impl Bench {
    /// `clients` clients on one worker thread, reads only, uniform keys
    /// over 1,000 records, a warm-up of 1 s and a measured phase of 2 s.
    fn new(clients: u32) -> Self {
        let mut workload = defaults();
        workload.records = 1000;
        workload.clients = clients;
        workload.threads = 1;
        workload.warmup_s = 1.0;
        workload.warmup_auto = false;
        workload.duration_s = Some(2.0);
        workload.ops = None;
        workload.rate = None;
        workload.key_distribution = KeyDistribution::Uniform;
        workload.mix = Mix::parse("100:0").unwrap();
        workload.durability = false;
        workload.trace = 0;
        let (intervals, rx) = channel();
        Bench {
            pool: ValuePool::new(workload.value_size.max()),
            workload,
            stop: AtomicBool::new(false),
            intervals,
            _rx: rx,
        }
    }

    fn job(&self, kind: JobKind) -> Job<'_> {
        let mut inputs = JobInputs::plain(&self.workload, 7, &self.pool, &self.stop);
        inputs.nonce = 1;
        Job::new(kind, inputs, self.intervals.clone())
    }
}

/// The harness's own clock is never read: the CPU clock reads zero.
fn harness<'j>(job: &'j Job<'j>) -> Harness<'j> {
    Harness::with_cpu_clock(job, 0, CpuClock::None)
}

fn finish(h: Harness) -> WorkerOutput {
    h.finish(10 * S, crate::recorder::IoLoop::Other("scripted".into()))
}

/// The value bakeoff wrote for `key`, as a read would return it.
fn stored(h: &mut Harness, key: u64) -> Vec<u8> {
    let (header, payload) = h.value(0, key);
    let mut v = header.to_vec();
    v.extend_from_slice(payload);
    v
}

const GET: usize = OpKind::Get as usize;

#[test]
fn closed_loop_requests_start_when_the_client_is_free() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let h = harness(&job);
    assert!(!h.open_loop());
    assert_eq!(h.next_start(0, 123 * MS), Some(123 * MS));
    assert_eq!(h.due(0, 1500 * MS), Some(1500 * MS));
}

#[test]
fn the_warm_up_is_recorded_apart_from_the_measured_phase() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    for t in [100 * MS, 900 * MS, 1100 * MS, 1200 * MS, 2500 * MS] {
        let r = h.begin_due(0, t).unwrap();
        assert_eq!(r.phase, u8::from(t >= S), "at {t} ns");
        h.complete(&r, Outcome::Ok, t + MS);
    }
    let out = finish(h);
    assert_eq!(out.phases[0].completed[GET], 2);
    assert_eq!(out.phases[1].completed[GET], 3);
    assert_eq!(out.phases[1].sent[GET], 3);
}

#[test]
fn a_request_meant_for_the_warm_up_stays_in_it_however_late_it_ends() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 999 * MS).unwrap();
    h.complete(&r, Outcome::Ok, 1800 * MS);
    let out = finish(h);
    assert_eq!(out.phases[0].completed[GET], 1);
    assert_eq!(out.phases[1].completed[GET], 0);
}

#[test]
fn nothing_starts_at_or_after_the_end_of_a_timed_phase() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    assert_eq!(h.measure_end(), 3 * S);
    assert!(h.next_start(0, 3 * S - 1).is_some());
    assert!(h.next_start(0, 3 * S).is_none());
    assert!(h.tick(3 * S - 1));
    assert!(!h.tick(3 * S));
    assert!(h.begin_due(0, 3 * S - 1).is_none(), "stopped generating");
}

#[test]
fn a_stop_ends_generation_at_the_next_tick() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    assert!(h.tick(10 * MS));
    b.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(!h.tick(11 * MS));
    assert!(h.next_start(0, 12 * MS).is_none());
}

#[test]
fn closed_loop_response_time_equals_service_time() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 1500 * MS).unwrap();
    h.complete(&r, Outcome::Ok, 1507 * MS);
    let out = finish(h);
    let p = &out.phases[1];
    let response = p.response[GET].max();
    let service = p.service.as_ref().map(|s| s[GET].max()).unwrap_or(response);
    assert!((7 * MS..7 * MS + 10_000).contains(&response), "{response}");
    assert_eq!(response, service);
}

/// Open loop at 10 requests/s for one client: one every 100 ms.
fn open_loop_bench() -> Bench {
    let mut b = Bench::new(1);
    b.workload.rate = Some(10.0);
    b
}

#[test]
fn open_loop_requests_follow_the_schedule_not_the_replies() {
    let b = open_loop_bench();
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    assert!(h.open_loop());
    // The first is due at 0; made late at 30 ms, it still means 0.
    let r = h.begin_due(0, 30 * MS).unwrap();
    assert_eq!((r.intended, r.sent), (0, 30 * MS));
    // The next is due at 100 ms, whenever the first finished.
    assert_eq!(h.next_start(0, 31 * MS), Some(100 * MS));
    assert!(h.due(0, 99 * MS).is_none());
    assert!(h.begin_due(0, 99 * MS).is_none());
    assert_eq!(h.due(0, 100 * MS), Some(100 * MS));
}

#[test]
fn a_stalled_reply_counts_from_the_intended_start() {
    let b = open_loop_bench();
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    // Skip the warm-up's ten requests.
    for k in 0..10 {
        let r = h.begin_due(0, k * 100 * MS).unwrap();
        h.complete(&r, Outcome::Ok, k * 100 * MS + MS);
    }
    // Due at 1 s, sent 400 ms late (the client was stalled), answered in
    // 2 ms: 402 ms of response time, 2 ms of service time.
    let r = h.begin_due(0, 1400 * MS).unwrap();
    assert_eq!(r.intended, S);
    h.complete(&r, Outcome::Ok, 1402 * MS);
    let out = finish(h);
    let p = &out.phases[1];
    let response = p.response[GET].max();
    let service = p.service.as_ref().unwrap()[GET].max();
    assert!(
        (402 * MS..403 * MS).contains(&response),
        "response {response}"
    );
    assert!(
        (2 * MS..2 * MS + 10_000).contains(&service),
        "service {service}"
    );
    // The send lag is the difference, kept apart.
    assert!(p.send_lag.as_ref().unwrap().max() >= 399 * MS);
}

#[test]
fn requests_missed_while_the_target_was_down_are_dropped_not_made_late() {
    let b = open_loop_bench();
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 0).unwrap();
    h.complete(&r, Outcome::Failed(ErrorKind::Refused), MS);
    // Down until 1,250 ms: the requests due at 100..1200 ms are skipped.
    h.skip_missed(0, 1250 * MS);
    let next = h.next_start(0, 1250 * MS).unwrap();
    assert!((1200 * MS..=1300 * MS).contains(&next), "{next}");
}

#[test]
fn timeouts_and_refusals_are_failures_by_kind_not_completions() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 1100 * MS).unwrap();
    h.complete(&r, Outcome::Failed(ErrorKind::Timeout), 1200 * MS);
    let r = h.begin_due(0, 1300 * MS).unwrap();
    h.complete(&r, Outcome::Failed(ErrorKind::Reset), 1301 * MS);
    h.connect_failed(1400 * MS, ErrorKind::Refused);
    let out = finish(h);
    let p = &out.phases[1];
    assert_eq!(p.completed[GET], 0);
    assert_eq!(p.failed[GET], 2);
    assert_eq!(p.errors[ErrorKind::Timeout as usize], 1);
    assert_eq!(p.errors[ErrorKind::Reset as usize], 1);
    assert_eq!(p.errors[ErrorKind::Refused as usize], 1);
    assert_eq!(p.response[GET].len(), 0, "a failure has no latency");
}

#[test]
fn a_value_read_is_checked_against_what_was_written() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 1100 * MS).unwrap();
    let good = stored(&mut h, r.key);
    h.complete(&r, Outcome::Value(&good), 1101 * MS);
    let r = h.begin_due(0, 1200 * MS).unwrap();
    let mut bad = stored(&mut h, r.key);
    let last = bad.len() - 1;
    bad[last] ^= 0x55;
    h.complete(&r, Outcome::Value(&bad), 1201 * MS);
    let r = h.begin_due(0, 1300 * MS).unwrap();
    // Another record's value is as wrong as a corrupt one.
    let other = stored(&mut h, (r.key + 1) % 1000);
    h.complete(&r, Outcome::Value(&other), 1301 * MS);
    let out = finish(h);
    let p = &out.phases[1];
    assert_eq!(p.completed[GET], 1);
    assert_eq!(p.errors[ErrorKind::Verification as usize], 2);
}

#[test]
fn misses_complete_and_are_counted_apart() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 1100 * MS).unwrap();
    h.complete(&r, Outcome::Miss, 1101 * MS);
    let out = finish(h);
    assert_eq!(out.phases[1].completed[GET], 1);
    assert_eq!(out.phases[1].misses[GET], 1);
    assert_eq!(out.phases[1].error_total(), 0);
}

#[test]
fn a_value_for_a_write_is_a_protocol_error() {
    let mut b = Bench::new(1);
    b.workload.mix = Mix::parse("0:100").unwrap();
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 1100 * MS).unwrap();
    assert_eq!(r.kind, OpKind::Set);
    h.complete(&r, Outcome::Value(b"x"), 1101 * MS);
    let out = finish(h);
    assert_eq!(out.phases[1].errors[ErrorKind::Protocol as usize], 1);
    assert_eq!(out.phases[1].completed[OpKind::Set as usize], 0);
}

#[test]
fn a_request_that_never_left_is_taken_back_from_the_sent_count() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 1100 * MS).unwrap();
    h.not_sent(&r);
    let r = h.begin_due(0, 1200 * MS).unwrap();
    h.followed_up(&r);
    h.complete(&r, Outcome::Ok, 1201 * MS);
    let out = finish(h);
    assert_eq!(out.phases[1].sent[GET], 1);
    assert_eq!(out.phases[1].follow_ups[GET], 1);
}

#[test]
fn a_counted_run_makes_exactly_its_operations() {
    let mut b = Bench::new(2);
    b.workload.duration_s = None;
    b.workload.warmup_s = 0.0;
    b.workload.ops = Some(5);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let mut made = 0;
    let mut t = MS;
    while let Some((ci, at)) = h.next_client(t, 0) {
        let r = h.begin(ci, at, t);
        h.complete(&r, Outcome::Ok, t + 1000);
        made += 1;
        t += MS;
        assert!(made <= 5, "more than the 5 operations asked for");
    }
    assert_eq!(made, 5);
    assert_eq!(finish(h).phases[1].completed[GET], 5);
}

#[test]
fn searches_and_batches_count_their_rows() {
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 1100 * MS).unwrap();
    h.complete(&r, Outcome::Rows(17), 1101 * MS);
    let out = finish(h);
    assert_eq!(out.phases[1].rows[GET], 17);
    assert_eq!(out.phases[1].completed[GET], 1);
}

#[test]
fn only_time_inside_the_measured_window_counts_as_busy() {
    // Little's law's numerator: a request from 900 ms to 1,100 ms is
    // 100 ms inside the window [1 s, 3 s); one wholly inside counts whole.
    let b = Bench::new(1);
    let job = b.job(JobKind::Measure);
    let mut h = harness(&job);
    let r = h.begin_due(0, 900 * MS).unwrap();
    h.complete(&r, Outcome::Ok, 1100 * MS);
    let r = h.begin_due(0, 2000 * MS).unwrap();
    h.complete(&r, Outcome::Ok, 2050 * MS);
    let out = finish(h);
    assert_eq!(out.busy_in_window_ns, 150 * MS);
}

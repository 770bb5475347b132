//! A synchronised start (`--start-at`): this machine's clock held against
//! the server's, then a wait for the planned time. A shard that cannot
//! keep the time refuses to run rather than start late: its window would
//! not be the others'.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use crate::error::{StartError, TargetError};
use crate::plan::StartAt;
use crate::target::Target;

/// Readings of the server's clock; the one with the shortest round trip
/// gives the offset.
const CLOCK_READINGS: usize = 5;

/// Longest sleep between looks at the stop flag while waiting.
const STOP_POLL: Duration = Duration::from_millis(100);

fn words(ns: u64) -> String {
    crate::units::fmt_ns(ns as f64)
}

/// Nanoseconds from `b` to `a` (negative when `a` is earlier).
fn ns_between(a: SystemTime, b: SystemTime) -> i64 {
    match a.duration_since(b) {
        Ok(d) => d.as_nanos().min(i64::MAX as u128) as i64,
        Err(e) => -(e.duration().as_nanos().min(i64::MAX as u128) as i64),
    }
}

/// This machine's clock minus the target's, ns, from the reading with the
/// shortest round trip (its error is at most half that round trip);
/// `Ok(None)` when the target does not tell the time.
pub fn clock_offset(target: &dyn Target) -> Result<Option<i64>, TargetError> {
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..CLOCK_READINGS {
        let Some(reading) = target.clock() else {
            return Ok(None);
        };
        let r = reading.map_err(|e| TargetError::Server(format!("reading its clock: {e}")))?;
        let rtt = ns_between(r.received, r.sent).max(0) as u64;
        let middle = r.sent + Duration::from_nanos(rtt / 2);
        let offset = ns_between(middle, r.server);
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    Ok(best.map(|(_, offset)| offset))
}

/// Refuses an offset beyond the tolerance.
pub fn check_offset(start: &StartAt, offset_ns: Option<i64>) -> Result<(), StartError> {
    let tolerance = start.tolerance();
    match offset_ns {
        Some(o) if o.unsigned_abs() > tolerance.as_nanos() as u64 => Err(StartError::Clock {
            offset: words(o.unsigned_abs()),
            side: if o > 0 { "ahead of" } else { "behind" },
            tolerance: words(tolerance.as_nanos() as u64),
        }),
        _ => Ok(()),
    }
}

/// Waits until `start` by this machine's clock (`now` reads it), or
/// refuses when that is already more than the tolerance ago. Returns
/// early, without error, when `stop` is set.
pub fn wait_for(
    start: &StartAt,
    stop: &AtomicBool,
    now: &dyn Fn() -> SystemTime,
) -> Result<(), StartError> {
    let at = start.time();
    let late = ns_between(now(), at);
    if late > start.tolerance().as_nanos() as i64 {
        return Err(StartError::Late {
            at: start.at.clone(),
            late: words(late as u64),
            tolerance: words(start.tolerance().as_nanos() as u64),
        });
    }
    while !stop.load(Ordering::Relaxed) {
        let left = ns_between(at, now());
        if left <= 0 {
            break;
        }
        std::thread::sleep(Duration::from_nanos(left as u64).min(STOP_POLL));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(at: SystemTime, tolerance_ms: u64) -> StartAt {
        StartAt::parse(
            &humantime::format_rfc3339_nanos(at).to_string(),
            Duration::from_millis(tolerance_ms),
        )
        .unwrap()
    }

    #[test]
    fn a_shard_ready_after_the_start_and_its_tolerance_refuses() {
        let stop = AtomicBool::new(false);
        let t = SystemTime::now();
        let s = start(t - Duration::from_secs(2), 250);
        let e = wait_for(&s, &stop, &SystemTime::now).unwrap_err();
        assert!(matches!(e, StartError::Late { .. }), "{e}");
        assert!(
            e.to_string().contains("more than the tolerance of 250"),
            "{e}"
        );
        // Within the tolerance it starts at once.
        let s = start(t - Duration::from_millis(100), 250);
        let before = std::time::Instant::now();
        wait_for(&s, &stop, &SystemTime::now).unwrap();
        assert!(before.elapsed() < Duration::from_millis(50));
    }

    #[test]
    fn a_shard_waits_for_the_start() {
        let stop = AtomicBool::new(false);
        let s = start(SystemTime::now() + Duration::from_millis(300), 250);
        wait_for(&s, &stop, &SystemTime::now).unwrap();
        assert!(SystemTime::now() >= s.time());
        // A stop ends the wait.
        stop.store(true, Ordering::Relaxed);
        let s = start(SystemTime::now() + Duration::from_secs(60), 250);
        let before = std::time::Instant::now();
        wait_for(&s, &stop, &SystemTime::now).unwrap();
        assert!(before.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_clock_beyond_the_tolerance_refuses() {
        let s = start(SystemTime::now(), 250);
        assert_eq!(check_offset(&s, Some(200_000_000)), Ok(()));
        assert_eq!(check_offset(&s, None), Ok(()));
        let e = check_offset(&s, Some(-300_000_000)).unwrap_err();
        assert!(e.to_string().contains("behind the server's"), "{e}");
        let e = check_offset(&s, Some(1_000_000_000)).unwrap_err();
        assert!(e.to_string().contains("ahead of the server's"), "{e}");
    }
}

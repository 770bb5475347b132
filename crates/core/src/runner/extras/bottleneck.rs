//! What limited a run, named from evidence the run already has (issue 35):
//! the client's threads, the server's busiest thread, the machine's CPUs,
//! the data directory's disk, the link's relay, a rate the run was held
//! to, or none of these, said
//! as such rather than guessed. The figures are the measured phase's
//! resource samples and the machine's (the warm-up's left out) and the
//! client's usage.

use crate::recorder::IoLoop;
use crate::result::{
    BackgroundWork, Bottleneck as BottleneckResult, BottleneckKind, ClientUsage, MachineCpuSample,
    ResourceSample, RunResult,
};

use crate::target::{WRITE_DELAY, WRITE_STOP};

use super::super::job::JobOutcome;
use super::{Extra, Stage};

/// Busy above this share of what it has, a resource is what limits: a
/// little under full, as the kernel's share of a loopback round trip is
/// nobody's on these machines.
const BUSY: f64 = 85.0;
/// With no CPU near full, a disk with requests in flight this share of
/// the time is what the operations wait on (one client reading from disk
/// keeps it busy about half the time, its thread the other half).
const DISK_WAITED_ON: f64 = 40.0;
/// Writes held back by the engine this share of the measured phase or
/// more: its background work is what the run waits on.
const HELD_BACK: f64 = 0.2;
/// A rate reached to within this share is a run held to its rate.
const RATE_REACHED: f64 = 0.95;

/// Names the bottleneck of every run.
pub(super) struct Bottleneck;

impl Extra for Bottleneck {
    fn measured(
        &mut self,
        stage: &Stage,
        outcome: &mut JobOutcome,
        load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let measured = Measured {
            server: measured_samples(&outcome.resources, |s| s.t_s, outcome.warmup_s),
            machine: measured_samples(&outcome.machine_cpu, |s| s.t_s, outcome.warmup_s),
        };
        let from = load_s + outcome.warmup_s;
        let ran = Ran {
            target: &run.target,
            client: &run.client,
            rate: run.workload.rate,
            throughput: run.measure.throughput_per_s,
            held_back_s: held_back_s(run.background.as_ref(), from, from + run.measure.duration_s),
            measured_s: run.measure.duration_s,
            server_cpus: stage.workload().server_cpus,
        };
        run.bottleneck = Some(name(&ran, &measured, cores));
        Ok(())
    }
}

/// The samples of the measured phase: those that end (at `t_s`) past the
/// warm-up by half a second (a sample covers the second before it), or
/// all when none does (a run shorter than a sample).
fn measured_samples<S: Clone>(samples: &[S], t_s: fn(&S) -> f64, warmup_s: f64) -> Vec<S> {
    let after: Vec<S> = samples
        .iter()
        .filter(|s| t_s(s) > warmup_s + 0.5)
        .cloned()
        .collect();
    if after.is_empty() {
        samples.to_vec()
    } else {
        after
    }
}

/// The seconds between `from` and `to` on the run's timeline in which
/// the engine held writes back (stopped or slowed them), by its own word.
fn held_back_s(work: Option<&BackgroundWork>, from: f64, to: f64) -> f64 {
    let Some(work) = work else {
        return 0.0;
    };
    let mut stretches: Vec<(f64, f64)> = work
        .bands
        .iter()
        .filter(|b| b.what == WRITE_STOP || b.what == WRITE_DELAY)
        .map(|b| (b.from_s.max(from), b.to_s.min(to)))
        .filter(|(a, b)| b > a)
        .collect();
    stretches.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Overlapping stretches (a stop inside a delay) count once.
    let (mut sum, mut reached) = (0.0, f64::MIN);
    for (a, b) in stretches {
        let a = a.max(reached);
        if b > a {
            sum += b - a;
            reached = b;
        }
    }
    sum
}

/// The median of `values`, `None` when there are none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// The measured phase's samples: the server's processes (when bakeoff
/// started them) and the machine's CPUs (whatever the target).
#[derive(Default)]
struct Measured {
    server: Vec<ResourceSample>,
    machine: Vec<MachineCpuSample>,
}

/// What a run was and did, as far as its bottleneck goes.
struct Ran<'a> {
    /// The target's name.
    target: &'a str,
    /// bakeoff's use of the machine.
    client: &'a ClientUsage,
    /// The rate it was held to, if any.
    rate: Option<f64>,
    /// What it reached, ops/s.
    throughput: f64,
    /// Seconds of the measured phase the engine held writes back.
    held_back_s: f64,
    /// The measured phase's length, seconds.
    measured_s: f64,
    /// The CPUs the server was held to (`--server-cpus`), if it was.
    server_cpus: Option<u32>,
}

/// The figures a bottleneck is judged from: medians of the measured
/// phase's seconds, percent of one core (or of the time, for the disk).
struct Figures {
    /// The engine runs in bakeoff's threads.
    in_process: bool,
    /// bakeoff's busiest thread.
    client_busiest: f64,
    /// bakeoff's threads together.
    client_cpu: f64,
    /// The server's busiest thread, and all its threads.
    server_thread: Option<f64>,
    server_cpu: Option<f64>,
    /// The data directory's device, busy.
    device: Option<f64>,
    /// The server and bakeoff together, and what the machine has.
    machine: f64,
    machine_of: f64,
    cores: usize,
}

impl Figures {
    fn of(client: &ClientUsage, measured: &Measured, cores: usize) -> Self {
        let in_process = matches!(client.io_backend, IoLoop::InProcess);
        let client_cpu: f64 = client.thread_busy_percent.iter().sum();
        let of = |pick: fn(&ResourceSample) -> Option<f64>| {
            median(measured.server.iter().filter_map(pick).collect())
        };
        let server_cpu = of(|s| Some(s.cpu_percent));
        // The server's and bakeoff's, or every process's where the machine
        // was read (other work on it takes CPUs from both).
        let ours = if in_process {
            server_cpu.unwrap_or(client_cpu)
        } else {
            server_cpu.unwrap_or(0.0) + client_cpu
        };
        let machine_of = cores as f64 * 100.0;
        let everyone = median(measured.machine.iter().map(|s| s.busy_percent).collect())
            .map(|p| p / 100.0 * machine_of);
        Figures {
            in_process,
            client_busiest: client
                .thread_busy_percent
                .iter()
                .copied()
                .fold(0.0, f64::max),
            client_cpu,
            server_thread: of(|s| s.busiest_thread_percent),
            server_cpu,
            device: of(|s| s.device_busy_percent),
            // In process the engine's work is the client's: its "server"
            // is bakeoff's own process.
            machine: everyone.map_or(ours, |e| e.max(ours)),
            machine_of,
            cores,
        }
    }

    /// Each figure as a sentence, for the report.
    fn evidence(&self, run: &Ran) -> Vec<String> {
        let f = self;
        let mut out = vec![format!(
            "bakeoff's busiest thread {:.0} % busy ({} thread(s), {:.0} % of a core in all)",
            f.client_busiest,
            run.client.thread_busy_percent.len(),
            f.client_cpu
        )];
        if let (false, Some(t), Some(c)) = (f.in_process, f.server_thread, f.server_cpu) {
            out.push(format!(
                "the server's busiest thread {t:.0} % of a core, all its threads {c:.0} % (medians of the measured phase's seconds)"
            ));
        }
        out.push(format!(
            "the machine's CPUs {:.0} % used of {} core(s)",
            f.machine / f.machine_of * 100.0,
            f.cores
        ));
        if let Some(d) = f.device {
            out.push(format!(
                "the data directory's device busy {d:.0} % of the time"
            ));
        }
        if let Some(link) = &run.client.link {
            out.push(format!(
                "the link's relay {:.0} % busy",
                link.relay_busy_percent
            ));
        }
        if let Some(rate) = run.rate {
            out.push(format!(
                "held to --rate {rate:.0}/s, reached {:.0}/s",
                run.throughput
            ));
        }
        out
    }

    /// Whether the machine's CPUs were near full.
    fn machine_full(&self) -> bool {
        self.machine >= BUSY / 100.0 * self.machine_of
    }

    /// The summary's line for a run the machine's CPUs limited: how full
    /// they were, and who shared them.
    fn machine_line(&self) -> String {
        let f = self;
        let used = f.machine / f.machine_of * 100.0;
        let cpus = match f.cores {
            1 => "1 CPU".to_string(),
            n => format!("{n} CPUs"),
        };
        if f.in_process {
            return format!(
                "the machine's {cpus}: {used:.0} % in use (bakeoff, with the engine in its threads, {:.0} % of a core)",
                f.client_cpu
            );
        }
        match f.server_cpu {
            Some(server) => format!(
                "the machine's {cpus}, shared by the server and bakeoff: {used:.0} % in use (the server {server:.0} %, bakeoff {:.0} % of a core)",
                f.client_cpu
            ),
            // A server given by URL: bakeoff cannot read its processes,
            // but whatever else used the machine, on it or not, is there.
            None => format!(
                "the machine's {cpus}, shared by bakeoff and other processes: {used:.0} % in use (bakeoff {:.0} % of a core, the others {:.0} %)",
                f.client_cpu,
                (f.machine - f.client_cpu).max(0.0)
            ),
        }
    }

    /// What limited the run, and the summary's line; in order: a rate
    /// held, the client (unless the machine's CPUs were full with others'
    /// work too: then the machine), the link, a disk near full, the
    /// server's thread, the machine, a disk waited on, none.
    fn judge(&self, run: &Ran) -> (BottleneckKind, String) {
        let f = self;
        let client = run.client;
        if let Some(rate) = run.rate.filter(|&r| run.throughput >= RATE_REACHED * r) {
            return (
                BottleneckKind::None,
                format!("none: the run was held to --rate {rate:.0}/s, and reached it"),
            );
        }
        if client.client_bound || (f.in_process && f.client_busiest >= BUSY) {
            // bakeoff's thread was busy, but the machine had no CPU to
            // give it another, nor the server more: more --threads would
            // take from the server. Unless bakeoff alone filled the
            // machine, it is the machine the server and bakeoff share
            // that limited the run.
            let shared = f.client_cpu < BUSY / 100.0 * f.machine_of;
            if !f.in_process && f.machine_full() && shared {
                return (BottleneckKind::MachineCpu, f.machine_line());
            }
            let what = if f.in_process {
                "client (the engine runs in bakeoff's threads)"
            } else {
                "client"
            };
            return (
                BottleneckKind::Client,
                format!(
                    "{what}: bakeoff's busiest thread at {:.0} %",
                    f.client_busiest
                ),
            );
        }
        if let Some(link) = client.link.as_ref().filter(|l| l.relay_bound) {
            return (
                BottleneckKind::Link,
                format!(
                    "link: the relay's thread at {:.0} %",
                    link.relay_busy_percent
                ),
            );
        }
        if let Some(d) = f.device.filter(|&d| d >= BUSY) {
            return (
                BottleneckKind::Disk,
                format!("disk: the data directory's device busy {d:.0} % of the time"),
            );
        }
        if let Some(t) = f.server_thread.filter(|&t| !f.in_process && t >= BUSY) {
            return (
                BottleneckKind::ServerCpu,
                format!("server CPU: {}'s busiest thread at {t:.0} %", run.target),
            );
        }
        if let (Some(n), Some(c), false) = (run.server_cpus, f.server_cpu, f.in_process) {
            if c >= BUSY * n as f64 {
                return (
                    BottleneckKind::ServerCpu,
                    format!(
                        "server CPU: {} at {c:.0} % of a core, on the {n} CPU(s) it was given",
                        run.target
                    ),
                );
            }
        }
        if f.machine_full() {
            return (BottleneckKind::MachineCpu, f.machine_line());
        }
        if run.measured_s > 0.0 && run.held_back_s >= HELD_BACK * run.measured_s {
            return (
                BottleneckKind::Background,
                format!(
                    "background work: {} stopped or slowed writes for {:.1} s of the {:.1} s measured (its compactions behind)",
                    run.target, run.held_back_s, run.measured_s
                ),
            );
        }
        if let Some(d) = f.device.filter(|&d| d >= DISK_WAITED_ON) {
            return (
                BottleneckKind::Disk,
                format!(
                    "disk: the data directory's device busy {d:.0} % of the time, with no CPU near full"
                ),
            );
        }
        (
            BottleneckKind::None,
            "none of these: neither bakeoff, nor the server's busiest thread, nor the machine's CPUs, nor the data's disk were near full, nor did the engine hold writes back (locks are not judged yet)".to_string(),
        )
    }
}

/// The bottleneck of `run` from its client usage and the server's and
/// the machine's samples over the measured phase, on a machine of `cores`
/// CPUs.
fn name(run: &Ran, measured: &Measured, cores: usize) -> BottleneckResult {
    let figures = Figures::of(run.client, measured, cores);
    let (kind, line) = figures.judge(run);
    BottleneckResult {
        kind,
        line,
        evidence: figures.evidence(run),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ClientUsage;

    fn client(busy: &[f64], client_bound: bool) -> ClientUsage {
        ClientUsage {
            io_backend: IoLoop::IoUring,
            thread_busy_percent: busy.to_vec(),
            client_bound,
            ..Default::default()
        }
    }

    /// A server whose busiest thread used `thread` % of a core and all
    /// its threads `all` %, each second; the machine not read.
    fn samples(thread: f64, all: f64) -> Measured {
        Measured {
            server: (1..=3)
                .map(|t| ResourceSample {
                    t_s: t as f64,
                    cpu_percent: all,
                    busiest_thread_percent: Some(thread),
                    ..Default::default()
                })
                .collect(),
            machine: Vec::new(),
        }
    }

    /// The machine's CPUs `busy` % in use each second.
    fn machine(busy: f64) -> Vec<MachineCpuSample> {
        (1..=3)
            .map(|t| MachineCpuSample {
                t_s: t as f64,
                busy_percent: busy,
            })
            .collect()
    }

    /// Each kind of evidence names its bottleneck, in order: a rate held
    /// first, then the client, the server's one thread, the machine.
    #[test]
    fn the_evidence_names_the_bottleneck() {
        let (c40, c95) = (client(&[40.0], false), client(&[95.0], true));
        let c60 = client(&[60.0, 60.0], false);
        let c20 = client(&[20.0], false);
        let ran = |client, rate, throughput| Ran {
            target: "redis",
            client,
            rate,
            throughput,
            held_back_s: 0.0,
            measured_s: 10.0,
            server_cpus: None,
        };
        let kind = |run: Ran, s: &Measured| name(&run, s, 2).kind;
        let server_bound = samples(98.0, 103.0);
        assert_eq!(
            kind(ran(&c40, None, 1e5), &server_bound),
            BottleneckKind::ServerCpu
        );
        let line = name(&ran(&c40, None, 1e5), &server_bound, 2).line;
        assert_eq!(line, "server CPU: redis's busiest thread at 98 %");
        assert_eq!(
            name(&ran(&c95, None, 1e5), &server_bound, 4).kind,
            BottleneckKind::Client,
            "a busy client with two of four cores to spare"
        );
        assert_eq!(
            kind(ran(&c40, Some(1e4), 9_990.0), &server_bound),
            BottleneckKind::None,
            "held to its rate"
        );
        assert_eq!(
            kind(ran(&c40, Some(1e4), 5_000.0), &server_bound),
            BottleneckKind::ServerCpu,
            "a rate not reached"
        );
        assert_eq!(
            kind(ran(&c60, None, 1e5), &samples(40.0, 70.0)),
            BottleneckKind::MachineCpu
        );
        assert_eq!(
            kind(ran(&c20, None, 1e5), &samples(30.0, 40.0)),
            BottleneckKind::None
        );
        let mut reading = samples(30.0, 40.0);
        for s in &mut reading.server {
            s.device_busy_percent = Some(97.0);
        }
        assert_eq!(kind(ran(&c20, None, 1e3), &reading), BottleneckKind::Disk);
        // One client reading from disk: its thread and the disk each busy
        // about half the time.
        for s in &mut reading.server {
            s.device_busy_percent = Some(52.0);
        }
        let c50 = client(&[50.0], false);
        assert_eq!(kind(ran(&c50, None, 1e3), &reading), BottleneckKind::Disk);
        for s in &mut reading.server {
            s.device_busy_percent = Some(10.0);
        }
        assert_eq!(kind(ran(&c50, None, 1e3), &reading), BottleneckKind::None);
        // Writes held back a fifth of the measured phase.
        let held = Ran {
            held_back_s: 2.5,
            ..ran(&c50, None, 1e3)
        };
        assert_eq!(kind(held, &reading), BottleneckKind::Background);
        // All of the one CPU it was given, the machine's other core idle.
        let given_one = Ran {
            server_cpus: Some(1),
            ..ran(&c20, None, 1e5)
        };
        assert_eq!(
            kind(given_one, &samples(40.0, 97.0)),
            BottleneckKind::ServerCpu
        );
    }

    /// A busy client on a machine whose CPUs the server and bakeoff
    /// filled together (issue 50: Redis at 99 % and bakeoff at 95 % of a
    /// core on 2 CPUs) is limited by the machine, not the client; bakeoff
    /// filling the machine alone, or with CPUs to spare, is the client.
    #[test]
    fn a_busy_client_on_a_full_machine_names_the_machine() {
        let ran = |client| Ran {
            target: "redis",
            client,
            rate: None,
            throughput: 1e5,
            held_back_s: 0.0,
            measured_s: 10.0,
            server_cpus: None,
        };
        let c95 = client(&[95.0], true);
        let shared = name(&ran(&c95), &samples(99.0, 99.0), 2);
        assert_eq!(shared.kind, BottleneckKind::MachineCpu);
        assert_eq!(
            shared.line,
            "the machine's 2 CPUs, shared by the server and bakeoff: 97 % in use (the server 99 %, bakeoff 95 % of a core)"
        );
        // Read from /proc/stat: every process's work, the server's too.
        let read = Measured {
            machine: machine(98.0),
            ..samples(99.0, 99.0)
        };
        let line = name(&ran(&c95), &read, 2).line;
        assert!(line.contains(": 98 % in use"), "{line}");
        // A server given by URL: its processes unread, the machine read.
        let url = Measured {
            server: Vec::new(),
            machine: machine(98.0),
        };
        let by_url = name(&ran(&c95), &url, 2);
        assert_eq!(by_url.kind, BottleneckKind::MachineCpu);
        assert_eq!(
            by_url.line,
            "the machine's 2 CPUs, shared by bakeoff and other processes: 98 % in use (bakeoff 95 % of a core, the others 101 %)"
        );
        assert!(
            by_url
                .evidence
                .contains(&"the machine's CPUs 98 % used of 2 core(s)".to_string()),
            "{:?}",
            by_url.evidence
        );
        // bakeoff alone filled the machine: the client.
        let c2 = client(&[96.0, 95.0], true);
        assert_eq!(name(&ran(&c2), &url, 2).kind, BottleneckKind::Client);
        // Cores to spare: the client.
        let spare = Measured {
            server: Vec::new(),
            machine: machine(49.0),
        };
        assert_eq!(name(&ran(&c95), &spare, 4).kind, BottleneckKind::Client);
    }

    /// Stops inside delays count once; what falls outside the window not.
    #[test]
    fn writes_held_back_inside_the_measured_phase() {
        let band = |what: &str, from_s: f64, to_s: f64| crate::result::BackgroundBand {
            what: what.into(),
            from_s,
            to_s,
            ..Default::default()
        };
        let work = BackgroundWork {
            bands: vec![
                band(WRITE_DELAY, 0.0, 3.0),
                band(WRITE_STOP, 2.0, 2.5),
                band("compaction", 1.0, 9.0),
                band(WRITE_STOP, 5.0, 6.0),
                band(WRITE_DELAY, 9.5, 12.0),
            ],
            ..Default::default()
        };
        let held = held_back_s(Some(&work), 1.0, 10.0);
        assert!((held - 3.5).abs() < 1e-9, "{held}");
    }
}

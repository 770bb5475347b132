//! Disk per write as the block device counts it: each test puts the
//! server's data on an ext4 filesystem of its own, on a loop device no
//! other process writes to, and reads that device's counters beside the
//! run, as a user would with iostat.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::{bin, read_json, require, require_in, tmp};

/// An ext4 filesystem on a loop device over a file, mounted for the test;
/// unmounted and detached on drop.
struct LoopDisk {
    mount: tempfile::TempDir,
    device: String,
    _image: tempfile::TempDir,
}

impl LoopDisk {
    fn new() -> LoopDisk {
        let image = tmp();
        let file = image.path().join("disk.img");
        std::fs::File::create(&file)
            .unwrap()
            .set_len(512 << 20)
            .unwrap();
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&file)
            .output()
            .expect("losetup runs");
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let device = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let mount = tmp();
        let disk = LoopDisk {
            mount,
            device,
            _image: image,
        };
        for cmd in [
            // Inode tables and journal zeroed now, not by the kernel in the
            // background while the test measures.
            vec![
                "mkfs.ext4",
                "-q",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
                &disk.device,
            ],
            vec!["mount", &disk.device, disk.mount.path().to_str().unwrap()],
        ] {
            let s = Command::new(cmd[0]).args(&cmd[1..]).status().unwrap();
            assert!(s.success(), "{cmd:?}");
        }
        // Servers that drop privileges write their data here too.
        std::fs::set_permissions(
            disk.mount.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o1777),
        )
        .unwrap();
        disk
    }

    fn name(&self) -> &str {
        self.device.trim_start_matches("/dev/")
    }

    fn path(&self) -> &Path {
        self.mount.path()
    }

    /// Bytes the device wrote since it came up, by its own count.
    fn written_bytes(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/sys/block/{}/stat", self.name())).unwrap();
        stat.split_whitespace()
            .nth(6)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 512
    }

    /// Reads the device every 20 ms until the returned sampler is
    /// stopped: (Unix seconds, bytes written).
    fn sample(self: &Arc<Self>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (disk, s, st) = (self.clone(), samples.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_secs_f64();
                s.lock().unwrap().push((now, disk.written_bytes()));
                // How often, not a bound: a sampler held up only widens
                // the bounds `between` gives.
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler {
            stop,
            samples,
            thread: Some(thread),
        }
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.mount.path())
            .status();
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
    }
}

struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<(f64, u64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    /// The device's own count from `from` to `to` (Unix seconds): at
    /// least what it wrote between the samples inside the window, at most
    /// between those just outside it.
    fn between(mut self, from: f64, to: f64) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        let s = self.samples.lock().unwrap();
        let at_or_before = |t: f64| s.iter().rev().find(|(at, _)| *at <= t).unwrap().1;
        let at_or_after = |t: f64| s.iter().find(|(at, _)| *at >= t).unwrap().1;
        (
            at_or_before(to).saturating_sub(at_or_after(from)),
            at_or_after(to).saturating_sub(at_or_before(from)),
        )
    }
}

/// Runs bakeoff with `args` and its servers' data on `disk`; returns the
/// result's only run and what bakeoff printed.
fn run_on(disk: &LoopDisk, args: &[&str]) -> (serde_json::Value, String) {
    let out_dir = tmp();
    let out: PathBuf = out_dir.path().join("r.json");
    let o = Command::new(bin())
        .args(args)
        .args(["-o", out.to_str().unwrap()])
        .env("TMPDIR", disk.path())
        .output()
        .unwrap();
    let screen =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "bakeoff {}: {screen}", args.join(" "));
    (read_json(&out)["runs"][0].clone(), screen)
}

/// The device's own count over the window bakeoff reports for `dev`.
fn own_count(sampler: Sampler, dev: &serde_json::Value) -> (u64, u64) {
    let from = f(&dev["started_unix_s"]);
    sampler.between(from, from + f(&dev["measured_s"]))
}

/// The fsyncs per write counted on the filesystem's tracepoint; they
/// need tracefs, which scripts/setup.sh mounts where a machine boots
/// without it.
fn fsyncs_per_write(disk: &serde_json::Value) -> f64 {
    disk["fsyncs_per_write"].as_f64().unwrap_or_else(|| {
        panic!("fsyncs not counted (tracefs mounted? scripts/setup.sh mounts it): {disk}")
    })
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

/// Redis appending each write to its AOF with an fsync (one client, so
/// one fsync each): the known amount, 4 kB a write, is all on the device,
/// and what bakeoff reports is what the device counted over the same
/// seconds (the data plus the filesystem's journal and metadata), within
/// 10 %; each fsync is counted.
#[test]
fn fsynced_appends_are_reported_as_the_device_wrote_them() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _alone = crate::common::alone();
    let disk = Arc::new(LoopDisk::new());
    let sampler = disk.sample();
    let (run, _) = run_on(
        &disk,
        &[
            "run",
            "-t",
            "redis",
            "--set",
            "redis.persistence=aof-always",
            "--records",
            "1000",
            "--mix",
            "0:100",
            "--value-size",
            "4000",
            "--clients",
            "1",
            "--duration",
            "2s",
            "--warmup",
            "1s",
        ],
    );
    let d = &run["disk"];
    let dev = &d["device"];
    assert_eq!(dev["name"], disk.name(), "{d}");
    let (low, high) = own_count(sampler, dev);
    let reported = f(&dev["written_bytes"]);
    assert!(
        reported >= 0.9 * low as f64 && reported <= 1.1 * high as f64,
        "bakeoff says the device wrote {reported} B; it counted {low}–{high} B over the same seconds"
    );
    let writes = f(&d["writes"]);
    assert!(writes > 100.0, "{d}");
    let per_write = f(&dev["bytes_per_write"]);
    assert!(
        per_write >= 4000.0,
        "each write's 4,000 bytes reached the disk: {per_write} B per write"
    );
    // Nothing else wrote to this device: the idle time took nothing off.
    assert!(f(&dev["net_bytes"]) >= 0.9 * reported, "{dev}");
    assert!(f(&dev["write_amplification"]) >= 1.0, "{dev}");
    let fsyncs = fsyncs_per_write(d);
    assert!(
        (0.9..=1.1).contains(&fsyncs),
        "one fsync per write with one client: {fsyncs}"
    );
    assert!(f(&dev["flushes_per_write"]) >= 0.5, "{dev}");
    // The processes' own count stays, under its own name.
    assert!(d["dirtied_bytes_per_write"].is_number(), "{d}");
}

/// PostgreSQL: what its processes' counters say they wrote (pages
/// dirtied) is many times what the disk wrote; what bakeoff reports per
/// write is the device's own count over the same seconds.
#[test]
fn postgres_is_reported_as_the_device_wrote_it() {
    if !require_in("postgres", &["/usr/lib/postgresql/*/bin"], "postgresql") {
        return;
    }
    let _alone = crate::common::alone();
    let disk = Arc::new(LoopDisk::new());
    let sampler = disk.sample();
    let (run, _) = run_on(
        &disk,
        &[
            "run",
            "-t",
            "postgres",
            "--records",
            "20k",
            "--clients",
            "16",
            "--mix",
            "50:50",
            "--duration",
            "3s",
            "--warmup",
            "1s",
        ],
    );
    let d = &run["disk"];
    let dev = &d["device"];
    let (low, high) = own_count(sampler, dev);
    let writes = f(&d["writes"]);
    let reported = f(&dev["bytes_per_write"]);
    let (device_low, device_high) = (low as f64 / writes, high as f64 / writes);
    assert!(
        reported >= device_low / 1.5 && reported <= device_high * 1.5,
        "bakeoff reports {reported} B per write; the device wrote {device_low}–{device_high} B per write over the same seconds"
    );
    assert!(fsyncs_per_write(d) > 0.0, "{d}");
}

/// A run without writes, while another process writes to the same device
/// at a steady rate all along: the idle time before the measured phase
/// sees that rate, and it is taken off, leaving about 0; the run's notes
/// say someone else wrote.
#[test]
fn the_idle_rate_is_taken_off() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _alone = crate::common::alone();
    let disk = Arc::new(LoopDisk::new());
    let stop = Arc::new(AtomicBool::new(false));
    let blocks = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let path = disk.path().join("other-writer");
        let (stop, blocks) = (stop.clone(), blocks.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::File::create(path).unwrap();
            let block = vec![7u8; 128 << 10];
            let start = std::time::Instant::now();
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                // Block n is due at n × 25 ms from the start, fsynced:
                // 5 MiB/s on the device on average over any second,
                // whatever delays a block (a late one is caught up on),
                // rewritten from the start every 32 MiB.
                if let Some(early) = (start + Duration::from_millis(25) * n)
                    .checked_duration_since(std::time::Instant::now())
                {
                    std::thread::sleep(early);
                }
                if n.is_multiple_of(256) {
                    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).unwrap();
                }
                f.write_all(&block).unwrap();
                f.sync_data().unwrap();
                n += 1;
                blocks.store(u64::from(n), Ordering::Relaxed);
            }
        })
    };
    // The other writer under way (a few of its blocks on the device)
    // before bakeoff starts.
    while blocks.load(Ordering::Relaxed) < 8 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (run, screen) = run_on(
        &disk,
        &[
            "run",
            "-t",
            "redis",
            "--records",
            "1000",
            "--mix",
            "100:0",
            "--duration",
            "2s",
            "--warmup",
            "0",
        ],
    );
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let dev = &run["disk"]["device"];
    let (written, net) = (f(&dev["written_bytes"]), f(&dev["net_bytes"]));
    assert!(
        written > 4e6,
        "the other writer's bytes are on the device: {dev}"
    );
    assert!(
        f(&dev["idle_s"]) >= 1.5,
        "idle as long as the measured phase: {dev}"
    );
    assert!(
        net.abs() < 0.3 * written,
        "the idle rate taken off leaves about 0: {net} of {written} B: {dev}"
    );
    assert!(
        dev["bytes_per_write"].is_null(),
        "no writes, no figure per write"
    );
    assert!(f(&dev["others_claimed_bytes"]) > 4e6, "{dev}");
    assert!(
        screen.contains("other processes wrote while it was measured"),
        "{screen}"
    );
}

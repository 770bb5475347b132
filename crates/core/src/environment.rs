//! What machine the numbers come from, read from /proc.

use crate::result::Environment;

/// Reads CPU model, cores, memory, kernel and host name.
pub fn detect(seed: u64, command: String) -> Environment {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_bytes = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0);
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    Environment {
        cpu_model,
        cores,
        memory_bytes,
        kernel: read("/proc/sys/kernel/osrelease"),
        hostname: read("/proc/sys/kernel/hostname"),
        bakeoff_version: env!("CARGO_PKG_VERSION").to_string(),
        seed,
        command,
    }
}

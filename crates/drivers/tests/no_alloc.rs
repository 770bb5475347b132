//! No heap allocation per operation in steady state on the Redis,
//! memcached, PostgreSQL and MariaDB hot paths: a counting global allocator counts the worker
//! thread's allocations over a window between two once-a-second interval
//! hand-offs (which allocate, once a second, by design).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bakeoff_core::driver::{Codec, Connector, Driver, Job, JobInputs, JobKind};
use bakeoff_core::net::CodecDriver;
use bakeoff_core::plan::{IoBackend, Mix, Workload};
use bakeoff_core::value::{ValueContent, ValuePool};
use bakeoff_core::workload::{KeyDistribution, ValueSizes};
use bakeoff_drivers::codec::memcache_binary::MemcacheBinaryCodec;
use bakeoff_drivers::codec::memcache_text::MemcacheTextCodec;
use bakeoff_drivers::codec::mysql::MysqlCodec;
use bakeoff_drivers::codec::postgres::PostgresCodec;
use bakeoff_drivers::codec::resp::RespCodec;
use bakeoff_servers::{ManagedServer, ServerCommand};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Held by each test from start to end: the count is shared by all
/// threads that set `COUNT_ME`, and a server starting beside a
/// measurement (initdb, mariadb-install-db) delays its worker so that the
/// once-a-second hand-off falls into the window.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}
thread_local! {
    static COUNT_ME: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNT_ME.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNT_ME.with(|c| c.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Plain(SocketAddr);
impl Connector for Plain {
    fn connect(
        &self,
        _within: std::time::Duration,
    ) -> std::io::Result<bakeoff_core::driver::Connected> {
        let s = TcpStream::connect(self.0)?;
        s.set_nodelay(true)?;
        Ok(s.into())
    }
}

fn require(program: &str) -> bool {
    if bakeoff_servers::find_on_path(program).is_some() {
        return true;
    }
    assert!(
        std::env::var("CI")
            .map(|v| v.is_empty() || v == "false")
            .unwrap_or(true),
        "{program} missing under CI"
    );
    eprintln!("skipping: {program} not installed");
    false
}

fn server(program: &str, args: fn(u16) -> Vec<String>) -> ManagedServer {
    ManagedServer::start(&ServerCommand {
        program,
        name: program,
        package: program,
        port: None,
        args: &move |p, _| args(p),
        ready: &|a| TcpStream::connect(a).is_ok(),
        ready_timeout: Duration::from_secs(20),
        extra_dirs: &[],
        run_as: None,
        init: None,
        lazy_disk: false,
        stop_signal: libc::SIGTERM,
    })
    .unwrap()
}

/// Runs a 2.5 s mixed job and returns (allocations in [1.25 s, 1.85 s],
/// operations finished in second 1).
fn steady_state_allocations<C: Codec>(
    codec: C,
    addr: SocketAddr,
    pipeline: u32,
    io: IoBackend,
) -> (u64, u64) {
    steady_state_allocations_on(codec, addr, 1, pipeline, io)
}

/// As [`steady_state_allocations`], with keys spread by ketama over
/// `nodes` connections per client (all to `addr`: the routing is what is
/// measured, not the servers).
fn steady_state_allocations_on<C: Codec>(
    codec: C,
    addr: SocketAddr,
    nodes: u16,
    pipeline: u32,
    io: IoBackend,
) -> (u64, u64) {
    let connectors: Vec<Box<dyn Connector>> = (0..nodes)
        .map(|_| Box::new(Plain(addr)) as Box<dyn Connector>)
        .collect();
    let names: Vec<(String, u16)> = (0..nodes)
        .map(|i| ("127.0.0.1".to_string(), 20000 + i))
        .collect();
    let driver = if nodes > 1 {
        let ring = bakeoff_core::net::Route::Ring(bakeoff_core::ketama::Ketama::new(&names));
        CodecDriver::routed(codec, connectors, ring)
    } else {
        let one = connectors.into_iter().next().expect("one connector");
        CodecDriver::new(codec, one)
    };
    steady_state_allocations_through(&driver, pipeline, io)
}

/// As [`steady_state_allocations`], through `driver`'s connections and
/// routing.
fn steady_state_allocations_through<C: Codec>(
    driver: &CodecDriver<C>,
    pipeline: u32,
    io: IoBackend,
) -> (u64, u64) {
    let workload = Workload {
        records: 1000,
        key_distribution: KeyDistribution::Uniform,
        value_size: ValueSizes::Range { min: 24, max: 400 },
        value_content: ValueContent::Random,
        mix: Mix {
            weights: [60, 20, 10, 10, 0, 0, 0, 0],
        },
        clients: 8,
        threads: 1,
        pipeline,
        duration_s: Some(2.5),
        ops: None,
        warmup_s: 0.0,
        warmup_auto: false,
        rate: None,
        timeout_s: 5.0,
        load: false,
        io,
        ..bakeoff_core::plan::params::defaults()
    };
    let pool = ValuePool::new(400);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut inputs = JobInputs::plain(&workload, 1, &pool, &stop);
    inputs.nonce = 1;
    let job = Job::new(JobKind::Measure, inputs, tx);
    let (a, b) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            COUNT_ME.with(|c| c.set(true));
            driver.carrier(&job).run_worker(&job, 0).unwrap()
        });
        std::thread::sleep(Duration::from_millis(1250).saturating_sub(job.t0.elapsed()));
        let a = ALLOCS.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(1850).saturating_sub(job.t0.elapsed()));
        let b = ALLOCS.load(Ordering::Relaxed);
        let out = h.join().unwrap();
        assert_eq!(out.phases[1].error_total(), 0);
        (a, b)
    });
    drop(job);
    let second1 = rx
        .iter()
        .find(|iv| iv.second == 1)
        .map(|iv| iv.ops)
        .unwrap_or(0);
    (b - a, second1)
}

#[test]
fn redis_hot_path_does_not_allocate() {
    let _alone = alone();
    if !require("redis-server") {
        return;
    }
    let s = server("redis-server", |p| {
        vec![
            "--port".into(),
            p.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--save".into(),
            "".into(),
        ]
    });
    for io in [IoBackend::IoUring, IoBackend::Epoll] {
        for pipeline in [1, 8] {
            let (allocs, ops) = steady_state_allocations(RespCodec, s.addr, pipeline, io);
            assert!(ops > 1000, "the loop was busy: {ops} ops in second 1");
            assert_eq!(
                allocs,
                0,
                "{io:?}: {allocs} allocations during ~{} operations (pipeline {pipeline})",
                ops * 6 / 10
            );
        }
        // Shards: a connection per node, keys hashed to them.
        let (allocs, ops) = steady_state_allocations_on(RespCodec, s.addr, 3, 4, io);
        assert!(ops > 1000, "sharded: {ops} ops in second 1");
        assert_eq!(allocs, 0, "{io:?} on 3 shards: {allocs} allocations");
    }
}

#[test]
fn memcached_hot_paths_do_not_allocate() {
    let _alone = alone();
    if !require("memcached") {
        return;
    }
    let s = server("memcached", |p| {
        vec![
            "-p".into(),
            p.to_string(),
            "-l".into(),
            "127.0.0.1".into(),
            "-U".into(),
            "0".into(),
            "-u".into(),
            "root".into(),
        ]
    });
    for io in [IoBackend::IoUring, IoBackend::Epoll] {
        let (allocs, ops) = steady_state_allocations(MemcacheTextCodec, s.addr, 4, io);
        assert!(ops > 1000, "{ops}");
        assert_eq!(allocs, 0, "{io:?} text protocol: {allocs} allocations");
        let (allocs, ops) = steady_state_allocations(MemcacheBinaryCodec, s.addr, 4, io);
        assert!(ops > 1000, "{ops}");
        assert_eq!(allocs, 0, "{io:?} binary protocol: {allocs} allocations");
    }
}

/// Whether a server bakeoff starts itself is installed (else skipped, but
/// not under CI).
fn installed(available: Result<(), bakeoff_core::error::TargetError>) -> bool {
    match available {
        Ok(()) => true,
        Err(e) => {
            assert!(
                std::env::var("CI")
                    .map(|v| v.is_empty() || v == "false")
                    .unwrap_or(true),
                "{e} under CI"
            );
            eprintln!("skipping: {e}");
            false
        }
    }
}

#[test]
fn postgres_hot_path_does_not_allocate() {
    let _alone = alone();
    if !installed(bakeoff_drivers::postgres::available()) {
        return;
    }
    let (_server, connector) = bakeoff_drivers::postgres::start_with_kv(None).unwrap();
    let driver = CodecDriver::new(PostgresCodec, connector);
    for io in [IoBackend::IoUring, IoBackend::Epoll] {
        for pipeline in [1, 8] {
            let (allocs, ops) = steady_state_allocations_through(&driver, pipeline, io);
            assert!(ops > 500, "the loop was busy: {ops} ops in second 1");
            assert_eq!(
                allocs, 0,
                "{io:?}: {allocs} allocations (pipeline {pipeline})"
            );
        }
    }
}

#[test]
fn mariadb_hot_path_does_not_allocate() {
    let _alone = alone();
    if !installed(bakeoff_drivers::mariadb::available()) {
        return;
    }
    let (_server, connector) = bakeoff_drivers::mariadb::start_with_kv(None).unwrap();
    let driver = CodecDriver::new(MysqlCodec, connector);
    for io in [IoBackend::IoUring, IoBackend::Epoll] {
        for pipeline in [1, 8] {
            let (allocs, ops) = steady_state_allocations_through(&driver, pipeline, io);
            assert!(ops > 500, "the loop was busy: {ops} ops in second 1");
            assert_eq!(
                allocs, 0,
                "{io:?}: {allocs} allocations (pipeline {pipeline})"
            );
        }
    }
}

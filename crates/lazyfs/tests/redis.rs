//! A real server on the mount: redis with an append-only file, SIGKILLed,
//! power-cut and restarted. With `appendfsync always` every acknowledged
//! SET survives; with `appendfsync no` none does (nothing was fsynced and
//! the writeback age was not reached).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bounded, fuse_available, Fixture};

const KEYS: usize = 50;

/// The redis-server binary, or None (with the skip printed) when absent
/// outside CI.
fn redis_server() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("redis-server"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("redis-server not found on PATH and CI is set");
        }
        eprintln!("SKIP redis: redis-server not found on PATH");
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A redis-server we started; killed (SIGKILL, by its pid) on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start(bin: &Path, dir: &Path, log: &Path, port: u16, fsync: &str) -> Redis {
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(dir)
            .args(["--appendonly", "yes", "--appendfsync", fsync])
            .args(["--save", "", "--daemonize", "no"])
            .arg("--logfile")
            .arg(log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let r = Redis { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(reply) = r.try_cmd(&["PING"]) {
                if reply == "+PONG" {
                    return r;
                }
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(log).unwrap_or_default();
                panic!("redis did not answer PING within 20 s; log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends one command (RESP array) on a fresh connection; returns the
    /// reply's first line, or for a bulk string its value.
    fn try_cmd(&self, args: &[&str]) -> std::io::Result<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes())?;
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line)?;
        let line = line.trim_end().to_string();
        if let Some(len) = line.strip_prefix('$') {
            if len == "-1" {
                return Ok("(nil)".into());
            }
            let mut v = String::new();
            r.read_line(&mut v)?;
            return Ok(v.trim_end().to_string());
        }
        Ok(line)
    }

    fn cmd(&self, args: &[&str]) -> String {
        self.try_cmd(args).expect("redis command")
    }

    /// SIGKILL, as bakeoff's crash fault does, and reap it.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes KEYS keys, kills redis, cuts power, restarts it; returns how many
/// keys came back.
fn keys_surviving(bin: &Path, fsync: &str) -> usize {
    let fx = Fixture::new();
    let data = fx.p("redis");
    std::fs::create_dir(&data).unwrap();
    let log = fx
        .backing
        .parent()
        .unwrap()
        .join(format!("redis-{fsync}.log"));
    let port = free_port();
    let r = Redis::start(bin, &data, &log, port, fsync);
    for i in 0..KEYS {
        assert_eq!(r.cmd(&["SET", &format!("k{i}"), &format!("v{i}")]), "+OK");
    }
    r.kill();
    let cut = fx.m().power_cut();
    let stats = fx.m().stats();
    eprintln!("redis appendfsync {fsync}: {cut:?}, {stats:?}");
    let r = Redis::start(bin, &data, &log, port, fsync);
    let mut present = 0;
    for i in 0..KEYS {
        match r.cmd(&["GET", &format!("k{i}")]).as_str() {
            "(nil)" => {}
            v => {
                assert_eq!(v, format!("v{i}"), "a surviving key has its value");
                present += 1;
            }
        }
    }
    r.kill();
    present
}

#[test]
fn redis_aof_always_survives_a_cut_and_aof_no_does_not() {
    if !fuse_available("redis") {
        return;
    }
    let Some(bin) = redis_server() else {
        return;
    };
    bounded("redis", 180, move || {
        assert_eq!(keys_surviving(&bin, "always"), KEYS, "appendfsync always");
        assert_eq!(keys_surviving(&bin, "no"), 0, "appendfsync no");
    });
}

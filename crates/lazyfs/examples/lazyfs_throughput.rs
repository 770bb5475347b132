//! Rough cost of the mount: the same small-write patterns in a plain
//! directory and through a lazy mount of it.
//!
//! ```text
//! cargo run --release -p bakeoff-lazyfs --example lazyfs_throughput -- SCRATCH_DIR
//! ```

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use bakeoff_lazyfs::LazyMount;

/// (4 KiB write + fdatasync)/s, buffered 4 KiB writes/s, 4 KiB reads/s.
fn measure(dir: &Path) -> (f64, f64, f64) {
    let block = vec![0x5au8; 4096];
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(dir.join("sync.dat"))
        .unwrap();
    let n = 2000;
    let t = Instant::now();
    for i in 0..n {
        f.write_all_at(&block, i * 4096).unwrap();
        f.sync_data().unwrap();
    }
    let synced = n as f64 / t.elapsed().as_secs_f64();

    let f = File::create(dir.join("buffered.dat")).unwrap();
    let n = 20_000;
    let t = Instant::now();
    for i in 0..n {
        f.write_all_at(&block, i * 4096).unwrap();
    }
    let buffered = n as f64 / t.elapsed().as_secs_f64();
    drop(f);

    let f = File::open(dir.join("buffered.dat")).unwrap();
    let mut buf = vec![0u8; 4096];
    let t = Instant::now();
    for i in 0..n {
        f.read_exact_at(&mut buf, ((i * 7919) % n) * 4096).unwrap();
    }
    let reads = n as f64 / t.elapsed().as_secs_f64();
    (synced, buffered, reads)
}

fn main() {
    let scratch = std::env::args_os()
        .nth(1)
        .expect("usage: lazyfs_throughput SCRATCH_DIR");
    let scratch = Path::new(&scratch);
    let plain = scratch.join("plain");
    let backing = scratch.join("backing");
    let mnt = scratch.join("mnt");
    for d in [&plain, &backing, &mnt] {
        std::fs::create_dir_all(d).unwrap();
    }
    let p = measure(&plain);
    let m = LazyMount::mount(&backing, &mnt).unwrap();
    let l = measure(&mnt);
    println!("{:<28}{:>14}{:>14}", "", "plain dir", "lazy mount");
    println!(
        "{:<28}{:>14.0}{:>14.0}",
        "4 KiB write+fdatasync /s", p.0, l.0
    );
    println!(
        "{:<28}{:>14.0}{:>14.0}",
        "4 KiB buffered write /s", p.1, l.1
    );
    println!("{:<28}{:>14.0}{:>14.0}", "4 KiB read /s", p.2, l.2);
    println!("{:?}", m.stats());
    drop(m);
    let _ = std::fs::remove_dir_all(scratch);
}

//! Mounts a lazy file system and takes commands on stdin, for trying servers
//! on it by hand:
//!
//! ```text
//! cargo run -p bakeoff-lazyfs --example lazyfs_shell -- BACKING MOUNTPOINT
//! ```
//!
//! Commands: `cut` (power cut, prints what was dropped), `stats`, `quit`
//! (or end of input): unmount and exit.

use std::io::BufRead;
use std::path::PathBuf;

use bakeoff_lazyfs::LazyMount;

fn main() -> std::io::Result<()> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [backing, mnt] = args.as_slice() else {
        eprintln!("usage: lazyfs_shell BACKING MOUNTPOINT");
        std::process::exit(2);
    };
    let m = LazyMount::mount(backing, mnt)?;
    println!("mounted {} at {}", backing.display(), mnt.display());
    for line in std::io::stdin().lock().lines() {
        match line?.trim() {
            "cut" => println!("{:?}", m.power_cut()),
            "stats" => println!("{:?}", m.stats()),
            "quit" => break,
            "" => {}
            other => println!("unknown command {other:?} (cut, stats, quit)"),
        }
    }
    drop(m);
    println!("unmounted");
    Ok(())
}

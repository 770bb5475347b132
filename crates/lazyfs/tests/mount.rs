//! Real FUSE mounts: what survives a power cut, through the mount and in the
//! backing directory.

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Duration;

use bakeoff_lazyfs::{CutReport, Options};
use common::{bounded, fuse_available, Fixture};

fn read(path: &std::path::Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Compares without printing kilobytes of bytes: length, then first mismatch.
fn same(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: first difference at byte {i}: {} != {}",
            got[i], want[i]
        );
    }
}

fn size(path: &std::path::Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

#[test]
fn lazy_mount_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<bakeoff_lazyfs::LazyMount>();
}

#[test]
fn unsynced_data_is_gone_after_cut_and_synced_data_survives() {
    if !fuse_available("cut") {
        return;
    }
    bounded("cut", 60, || {
        let fx = Fixture::new();
        let mut a = File::create(fx.p("a")).unwrap();
        a.write_all(b"durable").unwrap();
        a.sync_all().unwrap();
        let mut b = File::create(fx.p("b")).unwrap();
        b.write_all(b"volatile").unwrap();
        drop(b); // close() does not flush

        // Before the cut the mount shows everything, the backing dir only
        // what was fsynced.
        assert_eq!(read(&fx.p("a")), b"durable");
        assert_eq!(read(&fx.p("b")), b"volatile");
        assert_eq!(size(&fx.p("b")), 8);
        assert_eq!(read(&fx.b("a")), b"durable");
        assert_eq!(read(&fx.b("b")), b"");

        let r = fx.m().power_cut();
        assert_eq!(
            r,
            CutReport {
                bytes_dropped: 8,
                files_touched: 1
            }
        );

        assert_eq!(read(&fx.p("a")), b"durable");
        assert_eq!(size(&fx.p("a")), 7);
        assert_eq!(read(&fx.p("b")), b"", "file exists (metadata) but is empty");
        assert_eq!(size(&fx.p("b")), 0);
        assert_eq!(read(&fx.b("a")), b"durable");
        assert_eq!(size(&fx.b("b")), 0);

        // The still open handle of `a` sees the cut too, and a second cut
        // has nothing left to drop.
        a.write_all(b"+more").unwrap();
        assert_eq!(read(&fx.p("a")), b"durable+more");
        assert_eq!(fx.m().power_cut().bytes_dropped, 5);
        assert_eq!(read(&fx.p("a")), b"durable");
        assert_eq!(fx.m().power_cut(), CutReport::default());
    });
}

#[test]
fn append_fsync_halfway_keeps_exactly_the_synced_prefix() {
    if !fuse_available("append") {
        return;
    }
    bounded("append", 60, || {
        let fx = Fixture::new();
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(fx.p("log"))
            .unwrap();
        let mut expect = Vec::new();
        for i in 0..10u32 {
            let rec = format!("record {i:04} {}\n", "x".repeat(i as usize * 300));
            f.write_all(rec.as_bytes()).unwrap();
            expect.extend_from_slice(rec.as_bytes());
            if i == 4 {
                f.sync_data().unwrap();
            }
        }
        let synced: Vec<u8> = expect
            .split_inclusive(|&c| c == b'\n')
            .take(5)
            .flatten()
            .copied()
            .collect();
        assert_eq!(read(&fx.p("log")), expect);
        let r = fx.m().power_cut();
        assert_eq!(r.bytes_dropped, (expect.len() - synced.len()) as u64);
        assert_eq!(r.files_touched, 1);
        assert_eq!(size(&fx.p("log")), synced.len() as u64);
        assert_eq!(read(&fx.p("log")), synced);
        assert_eq!(read(&fx.b("log")), synced);
        // Appending continues at the synced end.
        f.write_all(b"after\n").unwrap();
        f.sync_all().unwrap();
        let mut want = synced.clone();
        want.extend_from_slice(b"after\n");
        assert_eq!(read(&fx.b("log")), want);
    });
}

#[test]
fn rename_keeps_dirty_data_and_unlink_drops_it() {
    if !fuse_available("rename") {
        return;
    }
    bounded("rename", 60, || {
        let fx = Fixture::new();
        // Write, close, rename into a subdirectory, rename that directory,
        // then fsync the file under its final name.
        fs::create_dir(fx.p("d1")).unwrap();
        fs::write(fx.p("tmp"), b"payload").unwrap();
        fs::write(fx.p("final"), b"old contents that get replaced").unwrap();
        File::open(fx.p("final")).unwrap().sync_all().unwrap();
        fs::rename(fx.p("tmp"), fx.p("d1/x")).unwrap();
        fs::rename(fx.p("d1"), fx.p("d2")).unwrap();
        fs::rename(fx.p("d2/x"), fx.p("final")).unwrap();
        // The replaced file's data was durable; the new one is still dirty.
        assert_eq!(read(&fx.b("final")), b"");
        File::open(fx.p("final")).unwrap().sync_all().unwrap();
        assert_eq!(read(&fx.b("final")), b"payload");

        // Dirty data of a file unlinked (and not open) is gone, not "cut".
        fs::write(fx.p("gone"), b"never synced").unwrap();
        fs::remove_file(fx.p("gone")).unwrap();
        // Dirty data of a file whose name another rename replaced is too.
        fs::write(fx.p("victim"), b"dirty").unwrap();
        fs::write(fx.p("winner"), b"w").unwrap();
        File::open(fx.p("winner")).unwrap().sync_all().unwrap();
        fs::rename(fx.p("winner"), fx.p("victim")).unwrap();
        assert_eq!(fx.m().power_cut(), CutReport::default());
        assert_eq!(read(&fx.p("final")), b"payload");
        assert_eq!(read(&fx.p("victim")), b"w");
        assert!(!fx.p("gone").exists());
        assert!(!fx.b("gone").exists());
    });
}

#[test]
fn unlinked_open_file_still_reads_its_dirty_data() {
    if !fuse_available("unlinked-open") {
        return;
    }
    bounded("unlinked-open", 60, || {
        let fx = Fixture::new();
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(fx.p("t"))
            .unwrap();
        f.write_all_at(b"scratch data", 0).unwrap();
        fs::remove_file(fx.p("t")).unwrap();
        let mut buf = [0u8; 12];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"scratch data");
        assert_eq!(f.metadata().unwrap().len(), 12);
        drop(f);
        // The kernel sends the release after close() returns; once it is
        // handled the data is dropped, and a cut finds nothing either way.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(fx.m().power_cut(), CutReport::default());
        assert_eq!(fs::read_dir(&fx.backing).unwrap().count(), 0);
    });
}

#[test]
fn hard_links_share_dirty_data() {
    if !fuse_available("links") {
        return;
    }
    bounded("links", 60, || {
        let fx = Fixture::new();
        fs::write(fx.p("one"), b"shared").unwrap();
        fs::hard_link(fx.p("one"), fx.p("two")).unwrap();
        assert_eq!(read(&fx.p("two")), b"shared");
        fs::remove_file(fx.p("one")).unwrap();
        // Still reachable through "two": kept, and fsync through it works.
        assert_eq!(read(&fx.p("two")), b"shared");
        File::open(fx.p("two")).unwrap().sync_all().unwrap();
        assert_eq!(fx.m().power_cut(), CutReport::default());
        assert_eq!(read(&fx.b("two")), b"shared");
        std::os::unix::fs::symlink("two", fx.p("sym")).unwrap();
        assert_eq!(fs::read_link(fx.p("sym")).unwrap().to_str(), Some("two"));
        assert_eq!(read(&fx.p("sym")), b"shared");
        let mut names: Vec<String> = fs::read_dir(&fx.mnt)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["sym", "two"]);
        let c = std::ffi::CString::new(fx.mnt.as_os_str().as_encoded_bytes()).unwrap();
        let mut sv = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), sv.as_mut_ptr()) }, 0);
        assert!(
            unsafe { sv.assume_init() }.f_blocks > 0,
            "statfs passes through"
        );
    });
}

/// Deterministic generator for the randomized model test.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One file under test and its two models: what a reader must see now,
/// and what must be left after a cut.
struct Modeled {
    name: String,
    file: File,
    now: Vec<u8>,
    durable: Vec<u8>,
}

#[test]
fn random_writes_truncates_fsyncs_and_cuts_match_a_model() {
    if !fuse_available("model") {
        return;
    }
    bounded("model", 120, || {
        let fx = Fixture::new();
        let mut rng = Rng(0x5EED_1A2F_0000_0001);
        let mut files: Vec<Modeled> = (0..3)
            .map(|i| {
                let name = format!("f{i}");
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(fx.p(&name))
                    .unwrap();
                Modeled {
                    name,
                    file,
                    now: Vec::new(),
                    durable: Vec::new(),
                }
            })
            .collect();
        let max = 40_000u64;
        for step in 0..600 {
            let k = rng.below(files.len() as u64) as usize;
            match rng.below(20) {
                0..=8 => {
                    let off = rng.below(max);
                    let len = 1 + rng.below(9000) as usize;
                    let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    let m = &mut files[k];
                    m.file.write_all_at(&data, off).unwrap();
                    let end = off as usize + len;
                    if m.now.len() < end {
                        m.now.resize(end, 0);
                    }
                    m.now[off as usize..end].copy_from_slice(&data);
                }
                9 | 10 => {
                    // Truncate, by handle or by path: durable at once.
                    let new = rng.below(max) as usize;
                    let m = &mut files[k];
                    if rng.below(2) == 0 {
                        m.file.set_len(new as u64).unwrap();
                    } else {
                        let c = std::ffi::CString::new(
                            fx.p(&m.name).into_os_string().into_encoded_bytes(),
                        )
                        .unwrap();
                        assert_eq!(unsafe { libc::truncate(c.as_ptr(), new as i64) }, 0);
                    }
                    m.now.resize(new, 0);
                    m.durable.resize(new, 0);
                }
                11 | 12 => {
                    let m = &mut files[k];
                    if rng.below(2) == 0 {
                        m.file.sync_all().unwrap();
                    } else {
                        m.file.sync_data().unwrap();
                    }
                    m.durable = m.now.clone();
                    let what = format!("step {step}: backing after fsync");
                    same(&read(&fx.b(&m.name)), &m.durable, &what);
                }
                13 => {
                    fx.m().power_cut();
                    for m in files.iter_mut() {
                        m.now = m.durable.clone();
                        let what = format!("step {step}: backing after cut");
                        same(&read(&fx.b(&m.name)), &m.durable, &what);
                    }
                }
                _ => {
                    let off = rng.below(max + 2000);
                    let len = rng.below(12_000) as usize;
                    let m = &files[k];
                    let mut buf = vec![0u8; len];
                    let mut got = 0;
                    while got < len {
                        let n = m.file.read_at(&mut buf[got..], off + got as u64).unwrap();
                        if n == 0 {
                            break;
                        }
                        got += n;
                    }
                    let lo = (off as usize).min(m.now.len());
                    let hi = (off as usize + len).min(m.now.len());
                    let what = format!("step {step}: read {off}+{len} of {}", m.name);
                    same(&buf[..got], &m.now[lo..hi], &what);
                }
            }
            let m = &files[k];
            assert_eq!(
                m.file.metadata().unwrap().len(),
                m.now.len() as u64,
                "step {step}: size"
            );
        }
        for m in &files {
            same(&read(&fx.p(&m.name)), &m.now, &format!("final {}", m.name));
        }
    });
}

#[test]
fn stats_count_fsyncs_and_writes() {
    if !fuse_available("stats") {
        return;
    }
    bounded("stats", 60, || {
        let fx = Fixture::new();
        let f = File::create(fx.p("s")).unwrap();
        for i in 0..7u64 {
            f.write_all_at(&[b'x'; 100], i * 100).unwrap();
        }
        f.sync_all().unwrap();
        f.sync_data().unwrap();
        f.sync_all().unwrap();
        File::open(&fx.mnt).unwrap().sync_all().unwrap();
        let s = fx.m().stats();
        assert_eq!(s.writes, 7);
        assert_eq!(s.bytes_written, 700);
        assert_eq!(s.fsyncs, 3);
        assert_eq!(s.dir_fsyncs, 1);
    });
}

#[test]
fn data_older_than_the_writeback_age_survives_a_cut() {
    if !fuse_available("writeback") {
        return;
    }
    bounded("writeback", 60, || {
        let fx = Fixture::with(Options {
            writeback_after: Duration::from_millis(500),
            ..Options::default()
        });
        fs::write(fx.p("old"), b"written back").unwrap();
        std::thread::sleep(Duration::from_millis(2500));
        assert_eq!(read(&fx.b("old")), b"written back", "writeback happened");
        fs::write(fx.p("new"), b"fresh").unwrap();
        let r = fx.m().power_cut();
        assert_eq!(r.files_touched, 1);
        assert_eq!(read(&fx.p("old")), b"written back");
        assert_eq!(read(&fx.p("new")), b"");
        assert_eq!(fx.m().stats().fsyncs, 0);
    });
}

#[test]
fn dirty_memory_cap_writes_back_the_oldest() {
    if !fuse_available("cap") {
        return;
    }
    bounded("cap", 60, || {
        let fx = Fixture::with(Options {
            max_dirty_bytes: 1 << 20,
            ..Options::default()
        });
        fs::write(fx.p("first"), vec![1u8; 600 << 10]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // In 64 KiB writes, so that the cap is crossed part way through.
        let second = File::create(fx.p("second")).unwrap();
        for i in 0..(600 / 64 + 1) {
            let at = i * (64 << 10);
            let len = (600u64 << 10).saturating_sub(at).min(64 << 10);
            second.write_all_at(&vec![2u8; len as usize], at).unwrap();
        }
        // Over 1 MiB: the oldest file went to its backing file (and the cache
        // got down to half the cap), the newer one is still dirty.
        assert_eq!(size(&fx.b("first")), 600 << 10);
        let r = fx.m().power_cut();
        assert_eq!(r.files_touched, 1);
        assert_eq!(size(&fx.p("first")), 600 << 10);
        assert_eq!(size(&fx.p("second")), 0);
    });
}

#[test]
fn o_direct_io_is_cached_like_any_write() {
    if !fuse_available("odirect") {
        return;
    }
    bounded("odirect", 60, || {
        let fx = Fixture::new();
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(fx.p("direct"))
            .expect("O_DIRECT open");
        // Aligned buffer, as O_DIRECT users (InnoDB) use.
        let layout = std::alloc::Layout::from_size_align(8192, 4096).unwrap();
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let buf = unsafe { std::slice::from_raw_parts_mut(p, 8192) };
        buf.fill(b'd');
        f.write_all_at(&buf[..4096], 0).unwrap();
        f.sync_data().unwrap();
        f.write_all_at(&buf[4096..], 4096).unwrap();
        buf.fill(0);
        f.read_exact_at(buf, 0).unwrap();
        assert!(buf.iter().all(|&c| c == b'd'));
        assert_eq!(fx.m().power_cut().bytes_dropped, 4096);
        assert_eq!(f.metadata().unwrap().len(), 4096);
        unsafe { std::alloc::dealloc(p, layout) };
    });
}

#[test]
fn fallocate_extends_and_punches() {
    if !fuse_available("fallocate") {
        return;
    }
    bounded("fallocate", 60, || {
        let fx = Fixture::new();
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(fx.p("fa"))
            .unwrap();
        f.write_all_at(&[7u8; 10_000], 0).unwrap();
        // posix_fallocate: the size grows at once (metadata), data stays dirty.
        assert_eq!(unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, 65536) }, 0);
        assert_eq!(f.metadata().unwrap().len(), 65536);
        assert_eq!(size(&fx.b("fa")), 65536);
        let r = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                1000,
                2000,
            )
        };
        if r == 0 {
            let mut buf = vec![0u8; 10_000];
            f.read_exact_at(&mut buf, 0).unwrap();
            assert!(buf[..1000].iter().all(|&c| c == 7));
            assert!(buf[1000..3000].iter().all(|&c| c == 0));
            assert!(buf[3000..].iter().all(|&c| c == 7));
        }
        fx.m().power_cut();
        assert_eq!(f.metadata().unwrap().len(), 65536);
        assert!(read(&fx.p("fa")).iter().all(|&c| c == 0));
    });
}

#[test]
fn shared_mmap_writes_reach_the_cache() {
    if !fuse_available("mmap") {
        return;
    }
    bounded("mmap", 60, || {
        let fx = Fixture::new();
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(fx.p("mm"))
            .unwrap();
        f.set_len(8192).unwrap();
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED, "{}", std::io::Error::last_os_error());
            std::ptr::write_bytes(p as *mut u8, b'm', 4096);
            assert_eq!(libc::msync(p, 8192, libc::MS_SYNC), 0);
            libc::munmap(p, 8192);
        }
        let b = read(&fx.b("mm"));
        assert_eq!(b.len(), 8192);
        assert!(
            b[..4096].iter().all(|&c| c == b'm'),
            "msync made it durable"
        );
        assert!(fx.m().stats().fsyncs >= 1);
    });
}

#[test]
fn drop_with_an_open_file_does_not_hang() {
    if !fuse_available("drop-open") {
        return;
    }
    bounded("drop-open", 60, || {
        let mut fx = Fixture::new();
        let f = File::create(fx.p("held")).unwrap();
        f.write_all_at(b"unsynced", 0).unwrap();
        let t = std::time::Instant::now();
        drop(fx.mount.take());
        assert!(t.elapsed() < Duration::from_secs(15));
        drop(f);
        // A drop writes back what was left, as a clean unmount does.
        assert_eq!(read(&fx.b("held")), b"unsynced");
    });
}

/// Appends, each fsynced, while another thread stats the file: a getattr
/// that read the backing file's size before an fsync wrote the dirty tail
/// back, and answered after, gave the kernel a size from before the last
/// append, and the next `O_APPEND` write landed on top of it. Redis with
/// `appendfsync always` lost acknowledged writes to this under a power cut
/// (whole commands overwritten by the next batch of the same length).
#[test]
fn appends_fsynced_while_stat_runs_beside_them_are_all_kept() {
    if !fuse_available("append-stat") {
        return;
    }
    bounded("append-stat", 120, || {
        let fx = Fixture::new();
        let path = fx.p("aof");
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        const RECORDS: u32 = 10_000;
        let expect: Vec<u8> = (0..RECORDS)
            .flat_map(|i| format!("record {i:08}\n").into_bytes())
            .collect();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        let _ = fs::metadata(&path);
                    }
                });
            }
            for i in 0..RECORDS {
                f.write_all(format!("record {i:08}\n").as_bytes()).unwrap();
                f.sync_data().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        same(&read(&fx.b("aof")), &expect, "the backing file");
    });
}

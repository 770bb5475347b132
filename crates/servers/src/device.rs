//! The block device under a directory, read by its own counters: what the
//! disk wrote (the page cache's writeback, the filesystem's journal and
//! metadata included), the nearest counter to what a server's writes cost.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use bakeoff_core::readings::DeviceCounters;

/// A block device (or partition) holding a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDevice {
    /// Its kernel name: `vda`, `sda1`, `loop0`, `dm-0`.
    pub name: String,
    stat: PathBuf,
}

impl BlockDevice {
    /// The device that holds `dir`; `None` when no block device does
    /// (tmpfs, a FUSE layer, a network filesystem).
    pub fn under(dir: &Path) -> Option<Self> {
        let dev = std::fs::metadata(dir).ok()?.dev();
        Self::numbered(dev).or_else(|| Self::numbered(mount_source_of(dir)?))
    }

    /// The device numbered `dev`, when /sys lists it as a block device.
    fn numbered(dev: u64) -> Option<Self> {
        let sys = PathBuf::from(format!(
            "/sys/dev/block/{}:{}",
            libc::major(dev),
            libc::minor(dev)
        ));
        let stat = sys.join("stat");
        if !stat.exists() {
            return None;
        }
        let name = std::fs::canonicalize(&sys)
            .ok()?
            .file_name()?
            .to_string_lossy()
            .into_owned();
        Some(BlockDevice { name, stat })
    }

    /// Its counters now.
    pub fn read(&self) -> Option<DeviceCounters> {
        DeviceCounters::parse(&self.name, &std::fs::read_to_string(&self.stat).ok()?)
    }
}

/// The device number of the `/dev/…` source of the mount that holds `dir`
/// (a filesystem such as btrfs reports a device number of its own that
/// /sys does not list).
fn mount_source_of(dir: &Path) -> Option<u64> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (_, source) = mounts
        .lines()
        .filter_map(|l| {
            let point = l.split(' ').nth(4)?;
            let source = l.split(" - ").nth(1)?.split(' ').nth(1)?;
            dir.starts_with(point).then_some((point.len(), source))
        })
        .max_by_key(|(len, _)| *len)?;
    source
        .starts_with("/dev/")
        .then(|| std::fs::metadata(source).ok().map(|m| m.rdev()))
        .flatten()
}

/// Writes what the page cache holds of the files under `dir` to their
/// device (`sync_file_range`, file by file: no cache flush, no journal
/// commit forced, and nothing of other processes' files), so that what
/// was written before a measurement is not counted to it; stops between
/// two files once `stop` is set.
pub fn write_back(dir: &Path, stop: &std::sync::atomic::AtomicBool) {
    let go_on = || !stop.load(std::sync::atomic::Ordering::Relaxed);
    crate::each_file(dir, &go_on, &mut |f| {
        // SAFETY: sync_file_range on a descriptor we own, the whole file
        // (length 0: to its end).
        unsafe {
            libc::sync_file_range(
                std::os::unix::io::AsRawFd::as_raw_fd(f),
                0,
                0,
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER,
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a file left in the page cache reaches the device, counted by
    /// it; a stop set before skips it.
    #[test]
    fn write_back_writes_what_the_page_cache_holds() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let device = BlockDevice::under(dir.path()).unwrap();
        std::fs::File::create(dir.path().join("f"))
            .unwrap()
            .write_all(&vec![1u8; 4 << 20])
            .unwrap();
        let stop = std::sync::atomic::AtomicBool::new(true);
        write_back(dir.path(), &stop);
        let before = device.read().unwrap().written_bytes;
        stop.store(false, std::sync::atomic::Ordering::Relaxed);
        write_back(dir.path(), &stop);
        let wrote = device.read().unwrap().written_bytes - before;
        assert!(wrote >= 4 << 20, "the device wrote {wrote} B");
    }

    /// The directory bakeoff's tests run in is on a block device here;
    /// /proc is on none.
    #[test]
    fn finds_the_device_under_a_directory() {
        let d = BlockDevice::under(&std::env::temp_dir()).expect("a block device under /tmp");
        let c = d.read().unwrap();
        assert_eq!(c.name, d.name);
        assert!(c.writes > 0 || c.written_bytes == 0);
        assert_eq!(BlockDevice::under(Path::new("/proc/self")), None);
    }
}

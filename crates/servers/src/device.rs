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

/// Writes everything of the filesystem that holds `dir` still in the page
/// cache to its device (`syncfs`): what was written before a measurement
/// is then not counted to it.
pub fn flush_filesystem(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        // SAFETY: syncfs on a descriptor we own.
        unsafe {
            libc::syncfs(std::os::unix::io::AsRawFd::as_raw_fd(&f));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

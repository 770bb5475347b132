//! Targets opened in-process: the generic target and driver every engine
//! shares, and one module per engine.
//!
//! An engine provides sessions (one per worker thread) that get, put and
//! delete; the shared loop in `bakeoff_core::embedded` does the timing. The
//! target owns the data directory (a fresh temporary one, or the one the
//! preset names with `dir`), and samples the bakeoff process's own CPU, RSS
//! and disk I/O plus the directory's size each second.

pub mod host;
mod kind;
pub mod lmdb;
pub mod rocksdb;
pub mod sqlite;
pub mod tokyo;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bakeoff_core::driver::Driver;
pub use bakeoff_core::embedded::{EmbeddedDriver, Engine, EngineError};
use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Plan, TargetSpec, Workload};
use bakeoff_core::profile::RecordKind;
use bakeoff_core::readings::ProcSnapshot;
use bakeoff_core::result::TargetRecord;
use bakeoff_core::target::{BackgroundWork, Counters, Observed, Target};
use bakeoff_core::workload::OpKind;
pub use kind::EngineKind;

/// Where an engine keeps its files.
pub enum DataDir {
    /// A temporary directory, removed when the run ends.
    Temp(bakeoff_servers::ScratchDir),
    /// A directory the user named; left in place.
    Named(PathBuf),
}

impl DataDir {
    /// The directory named by `dir` in the settings, or a fresh temporary one.
    pub fn new(named: Option<String>, target: &str) -> Result<Self, TargetError> {
        match named {
            Some(d) => {
                std::fs::create_dir_all(&d).map_err(|e| {
                    TargetError::Engine(format!("cannot create directory {d}: {e}"))
                })?;
                Ok(DataDir::Named(PathBuf::from(d)))
            }
            None => bakeoff_servers::ScratchDir::new(target)
                .map(DataDir::Temp)
                .map_err(|e| {
                    TargetError::Engine(format!("cannot create a temporary directory: {e}"))
                }),
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        match self {
            DataDir::Temp(t) => t.path(),
            DataDir::Named(p) => p,
        }
    }
}

/// What opening an engine needs to know of the run.
#[derive(Clone, Debug)]
pub struct OpenHow {
    /// The run loads: start from an empty database.
    pub load: bool,
    /// Records are key-value pairs or profile rows.
    pub record: RecordKind,
    /// Secondary indexes on the profile table.
    pub indexes: bool,
    /// Fields per record (1: a record is one value).
    pub fields: u32,
}

impl OpenHow {
    /// An engine served from a child process (`bakeoff engine-host`): its
    /// files are never emptied, so a restart finds what the engine left.
    pub fn hosted() -> Self {
        OpenHow {
            load: false,
            record: RecordKind::Kv,
            indexes: false,
            fields: 1,
        }
    }

    /// What `workload` asks of the engine.
    pub fn of(workload: &Workload) -> Self {
        OpenHow {
            load: workload.load,
            record: workload.record,
            indexes: workload.indexes,
            fields: workload.fields,
        }
    }
}

/// An engine opened on its directory, with what the result records of it.
pub struct Opened<E: Engine> {
    /// The engine.
    pub engine: E,
    /// Where its files are.
    pub dir: DataDir,
    /// Library and version.
    pub version: String,
    /// Its settings as opened.
    pub settings: BTreeMap<String, String>,
}

/// Opens engine target `spec` for a run of `workload`: in bakeoff's own
/// process, or, for a run with a fault, in a child process of its own
/// ([`host`]), which bakeoff can kill, cut the power of and start again
/// without dying itself.
pub fn open_with<E: Engine>(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
    opened: impl FnOnce(Option<&toml::Table>, &OpenHow) -> Result<Opened<E>, TargetError>,
) -> Result<Box<dyn Target>, TargetError> {
    if workload.fault.is_some() {
        return host::open(spec, plan, workload);
    }
    let o = opened(plan.settings_of(spec), &OpenHow::of(workload))?;
    Ok(Box::new(EmbeddedTarget::new(
        &spec.name,
        o,
        bakeoff_servers::Limits::of(workload),
    )?))
}

/// An embedded engine ready for one run.
pub struct EmbeddedTarget<E: Engine> {
    // Field order is drop order: the engine closes, the directory goes,
    // and only then does bakeoff leave its memory cap and its CPUs.
    driver: EmbeddedDriver<E>,
    dir: DataDir,
    /// Counts this process's fsyncs (the engine's), or why it cannot.
    fsyncs: Result<bakeoff_servers::fsyncs::FsyncCounter, String>,
    device: Option<bakeoff_servers::device::BlockDevice>,
    record: TargetRecord,
    cap: Option<bakeoff_servers::cgroup::MemoryCap>,
    _cpus: Option<bakeoff_servers::cgroup::OwnCpus>,
}

impl<E: Engine> EmbeddedTarget<E> {
    /// Wraps an opened engine; its version and settings go to the result.
    /// With a memory cap or CPUs in the plan, the bakeoff process (where
    /// the engine lives) is held to them for the run.
    pub fn new(
        name: &str,
        opened: Opened<E>,
        limits: bakeoff_servers::Limits,
    ) -> Result<Self, TargetError> {
        let Opened {
            engine,
            dir,
            version,
            mut settings,
        } = opened;
        settings.insert("dir".into(), dir.path().display().to_string());
        let cpus = match limits.cpus {
            Some(n) => {
                let set = bakeoff_servers::cgroup::CpuSet::last(n)?;
                settings.insert("cpus".into(), set.list());
                Some(bakeoff_servers::cgroup::OwnCpus::pin(&set)?)
            }
            None => None,
        };
        let cap = match limits.memory {
            Some(limit) => {
                let mut cap = bakeoff_servers::cgroup::MemoryCap::create(limit, name)?;
                cap.add(std::process::id())?;
                settings.insert("memory_cap".into(), limit.to_string());
                Some(cap)
            }
            None => None,
        };
        // bakeoff itself is the engine's process: it joins a group whose
        // fsyncs are counted, for as long as the engine is open.
        let fsyncs =
            bakeoff_servers::fsyncs::FsyncCounter::create(name, dir.path()).and_then(|c| {
                c.add(std::process::id())
                    .map_err(|e| format!("bakeoff cannot join its fsync group: {e}"))?;
                Ok(c)
            });
        let device = bakeoff_servers::device::BlockDevice::under(dir.path());
        let engine = Arc::new(engine);
        let requests = OpKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), engine.describe(*k)))
            .collect();
        Ok(Self {
            driver: EmbeddedDriver::new(engine),
            dir,
            fsyncs,
            device,
            record: TargetRecord {
                name: name.into(),
                mode: "embedded".into(),
                endpoint: None,
                version: Some(version),
                settings,
                declared: BTreeMap::new(),
                requests,
                skipped: None,
                durable_to: None,
            },
            cap,
            _cpus: cpus,
        })
    }
}

impl<E: Engine> Target for EmbeddedTarget<E> {
    fn background_work(&self) -> Observed<'_, dyn BackgroundWork + '_> {
        match self.driver.engine().background_source() {
            Some(_) => Ok(self),
            None => Err(self.driver.engine().no_background()),
        }
    }

    fn driver(&self) -> &dyn Driver {
        &self.driver
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    fn counters(&self) -> Option<Counters> {
        None
    }

    fn record_count(&self) -> Option<u64> {
        self.driver.engine().count()
    }

    fn keeps_fields(&self) -> bool {
        self.driver.engine().keeps_fields()
    }

    fn flush_disk(&self, stop: &std::sync::atomic::AtomicBool) {
        bakeoff_servers::device::write_back(self.dir.path(), stop);
    }

    fn resources(&self) -> Option<ProcSnapshot> {
        let mut s = bakeoff_servers::proc_snapshot(std::process::id())?;
        s.disk_bytes = bakeoff_servers::dir_size(self.dir.path());
        s.device = self
            .device
            .as_ref()
            .and_then(bakeoff_servers::device::BlockDevice::read);
        match &self.fsyncs {
            Ok(c) => s.fsyncs = Some(c.count()),
            Err(why) => s.fsyncs_unknown = Some(why.clone()),
        }
        if let Some(u) = self.cap.as_ref().and_then(|c| c.usage()) {
            s.cgroup_memory_bytes = Some(u.total);
            s.cgroup_cache_bytes = Some(u.cache);
        }
        Some(s)
    }
}

impl<E: Engine> BackgroundWork for EmbeddedTarget<E> {
    fn source(&self) -> (&'static str, std::time::Duration) {
        // Offered only where the engine names a source (background_work).
        self.driver
            .engine()
            .background_source()
            .unwrap_or(("", std::time::Duration::from_secs(1)))
    }

    fn look(&self) -> Option<bakeoff_core::target::BackgroundLook> {
        self.driver.engine().background()
    }
}

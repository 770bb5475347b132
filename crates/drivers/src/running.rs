//! A server bakeoff started, as a target holds it during a run: shared by
//! the thread that samples its resources each second and the one that
//! injects a fault into it.

use std::sync::{Mutex, MutexGuard};

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::FaultKind;
use bakeoff_core::readings::ProcSnapshot;
use bakeoff_core::target::FaultStruck;
use bakeoff_servers::ManagedServer;

/// A started server behind a lock.
pub struct RunningServer(Mutex<ManagedServer>);

impl RunningServer {
    /// Takes over a started server.
    pub fn new(server: ManagedServer) -> Self {
        Self(Mutex::new(server))
    }

    /// The server, locked.
    pub fn lock(&self) -> MutexGuard<'_, ManagedServer> {
        // A panic while holding the lock leaves the server as it was.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// CPU, RSS, disk I/O and directory size now.
    pub fn snapshot(&self) -> ProcSnapshot {
        self.lock().snapshot()
    }

    /// Kills or stops it and starts it again on its data; see
    /// [`ManagedServer::fault`].
    pub fn fault(&self, kind: FaultKind) -> Result<FaultStruck, TargetError> {
        Ok(self.lock().fault(kind)?)
    }
}

/// [`bakeoff_core::target::Target::fault`] of a target that may hold a
/// started server: an external one cannot be faulted.
pub fn fault(server: Option<&RunningServer>, kind: FaultKind) -> Result<FaultStruck, TargetError> {
    match server {
        Some(s) => s.fault(kind),
        None => Err(TargetError::Client(format!(
            "--fault {}: bakeoff did not start this server",
            kind.name()
        ))),
    }
}

/// The [`Target`](bakeoff_core::target::Target) methods of a target that is
/// one server bakeoff may have started (a field `server:
/// Option<RunningServer>`), perhaps behind a link relay (`relay:
/// Option<Relay>`): its resources, faults, exit and relay, written once
/// for every such target. Invoked inside its `impl Target`.
#[cfg(any(feature = "redis", feature = "memcached", feature = "mariadb"))]
macro_rules! one_server_methods {
    () => {
        fn resources(&self) -> Option<bakeoff_core::readings::ProcSnapshot> {
            self.server.as_ref().map(|s| s.snapshot())
        }

        fn flush_disk(&self, stop: &std::sync::atomic::AtomicBool) {
            if let Some(s) = self.server.as_ref() {
                s.lock().flush_disk(stop);
            }
        }

        fn fault(
            &self,
            kind: bakeoff_core::plan::FaultKind,
        ) -> Result<bakeoff_core::target::FaultStruck, bakeoff_core::error::TargetError> {
            crate::running::fault(self.server.as_ref(), kind)
        }

        fn gone(&self) -> Option<String> {
            self.server.as_ref()?.lock().gone()
        }

        fn stalled(&self) -> Option<String> {
            self.server.as_ref()?.lock().stalled()
        }

        fn link(&self) -> Option<bakeoff_core::readings::LinkSample> {
            self.relay.as_ref().map(|r| r.sample())
        }
    };
}
#[cfg(any(feature = "redis", feature = "memcached", feature = "mariadb"))]
pub(crate) use one_server_methods;

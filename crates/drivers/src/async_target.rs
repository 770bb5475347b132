//! What the targets spoken to through async client libraries (PostgreSQL,
//! MariaDB, MongoDB) share: a target made of an optional managed server, a
//! driver and the record of what was used; a way to run an admin query from
//! the main thread; the profile row's columns.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Mutex;
use std::time::Duration;

use bakeoff_core::async_loop::Sessions;
use bakeoff_core::driver::{Carrier, Driver};
use bakeoff_core::error::ConnectError;
use bakeoff_core::error::TargetError;
use bakeoff_core::plan::TargetSpec;
use bakeoff_core::plan::{FaultKind, Work};
use bakeoff_core::profile::Profile;
use bakeoff_core::readings::{LinkSample, ProcSnapshot};
use bakeoff_core::result::{CounterCheck, TargetRecord};
use bakeoff_core::session::{ReadWrite, Session};
use bakeoff_core::target::{
    compare_counters, BackgroundLook, BackgroundWork, CommandTime, CounterRule, Counters,
    FaultStruck, LoggedWork, Observed, Sent, ServerTime, Target,
};
use bakeoff_servers::ManagedServer;

use crate::running::RunningServer;

/// A driver that can also count the records and read the server's own
/// operation counters.
pub trait AsyncDriver: Driver {
    /// Rows in the workload's table (`kv` or `profile`), if the server answers.
    fn record_count(&self) -> Option<u64>;
    /// The server's own statement counters, if it keeps them.
    fn counters(&self) -> Option<Counters>;
    /// How those counters add up to the operations sent.
    fn counter_rules(&self) -> &'static [CounterRule];
    /// The checks of `sent` against the counters' change: by
    /// [`AsyncDriver::counter_rules`], unless the driver sends requests of
    /// its own besides (a retried upsert).
    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &Sent,
    ) -> Vec<CounterCheck> {
        compare_counters(self.counter_rules(), before, after, sent)
    }
    /// The server's clock, if it tells the time (see `Target::clock`).
    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        None
    }
    /// Empties the workload's table before a full load again (see
    /// `Target::empty`).
    fn empty(&self) -> Result<(), TargetError> {
        Ok(())
    }
    /// Whether it keeps a record's fields apart (see `Target::keeps_fields`).
    fn keeps_fields(&self) -> bool {
        false
    }
    /// The server's own time per statement so far (see
    /// `ServerTime::command_times`).
    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        None
    }
    /// Why the server keeps no time of its own per statement (see
    /// `ServerTime::untimed`).
    fn no_command_times(&self) -> Option<&'static str> {
        None
    }
    /// Where the server tells of its background work and how often to
    /// look (see `BackgroundWork::source`), `managed` when bakeoff
    /// started it (and so owns its log).
    fn background_source(&self, _managed: bool) -> Option<(&'static str, Duration)> {
        None
    }
    /// One look at the server's background work through its own counters
    /// (see `BackgroundWork::look`); `None` where it has none or did not
    /// answer.
    fn background_look(&self) -> Option<BackgroundLook> {
        None
    }
    /// Whether the server logs its background work (see
    /// [`AsyncDriver::logged_background`]).
    fn logs_background(&self) -> bool {
        false
    }
    /// The background work logged in `text`, lines of the server's log
    /// new since the last look, and the bytes of it read (a message not
    /// yet whole is left for the next look).
    fn logged_background(&self, _text: &str) -> (Vec<LoggedWork>, usize) {
        (Vec::new(), 0)
    }
    /// Asks the server to start background work now (see
    /// `Target::provoke`).
    fn provoke(&self, work: Work) -> Result<(), TargetError> {
        Err(TargetError::Client(format!(
            "--provoke {}: bakeoff cannot ask this target for it",
            work.name()
        )))
    }
    /// Why the server tells nothing of its background work (see
    /// `Target::background_work`), `managed` when bakeoff started it.
    fn no_background(&self, _managed: bool) -> Option<&'static str> {
        None
    }
}

/// A target ready for one run.
pub struct AsyncTarget<D: AsyncDriver> {
    // Field order is drop order: the driver and the relay go before the
    // server stops.
    driver: D,
    record: TargetRecord,
    relay: Option<crate::link::Relay>,
    server: Option<RunningServer>,
    /// A server the one above keeps its data in (FerretDB's PostgreSQL):
    /// stopped after it, and counted with it.
    backend: Option<RunningServer>,
    /// How far the looks at background work have read the server's log.
    log_read: Mutex<Option<u64>>,
}

impl<D: AsyncDriver> AsyncTarget<D> {
    /// Records `version` and `settings` (plus the managed server's command
    /// line and what the driver sends for each operation).
    pub fn new(
        spec: &TargetSpec,
        endpoint: Option<String>,
        version: String,
        mut settings: BTreeMap<String, String>,
        server: Option<ManagedServer>,
        driver: D,
    ) -> Self {
        if let Some(s) = &server {
            settings.insert(
                "command_line".into(),
                format!("{} {}", s.binary.display(), s.args.join(" ")),
            );
        }
        let record = TargetRecord::server(
            &spec.name,
            server.is_some(),
            endpoint,
            version,
            settings,
            |k| driver.describe(k),
        );
        Self {
            driver,
            record,
            relay: None,
            server: server.map(RunningServer::new),
            backend: None,
            log_read: Mutex::new(None),
        }
    }

    /// Keeps the server that the target's server keeps its data in: its
    /// resources are added to the server's, a fault strikes it first, and
    /// it stops last.
    pub fn with_backend(mut self, backend: Option<ManagedServer>) -> Self {
        self.backend = backend.map(RunningServer::new);
        self
    }

    /// Keeps the link relay the driver's connections go through.
    pub fn linked(mut self, relay: Option<crate::link::Relay>) -> Self {
        self.relay = relay;
        self
    }

    /// The background work the server logged since the last look, where
    /// bakeoff started it (and so owns its log); `None` otherwise.
    fn logged_background(&self) -> Option<Vec<LoggedWork>> {
        if !self.driver.logs_background() {
            return None;
        }
        let path = self.server.as_ref()?.lock().log_path();
        let mut read = self.log_read.lock().unwrap_or_else(|e| e.into_inner());
        let len = std::fs::metadata(&path).ok()?.len();
        // The first look starts at the log's end: the work before the job
        // is not the job's.
        let from = *read.get_or_insert(len);
        if len <= from {
            // A restarted server's log is appended to, never shorter.
            return Some(Vec::new());
        }
        let mut file = std::fs::File::open(&path).ok()?;
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut bytes = Vec::new();
        file.take(len - from).read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let (logged, used) = self.driver.logged_background(&text);
        *read = Some(from + used as u64);
        Some(logged)
    }
}

impl<D: AsyncDriver> Target for AsyncTarget<D> {
    fn server_time(&self) -> Observed<'_, dyn ServerTime + '_> {
        Ok(self)
    }

    fn background_work(&self) -> Observed<'_, dyn BackgroundWork + '_> {
        let managed = self.server.is_some();
        match self.driver.background_source(managed) {
            Some(_) => Ok(self),
            None => Err(self.driver.no_background(managed)),
        }
    }

    fn driver(&self) -> &dyn Driver {
        &self.driver
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    fn counters(&self) -> Option<Counters> {
        self.driver.counters()
    }

    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &Sent,
    ) -> Vec<CounterCheck> {
        self.driver.counter_checks(before, after, sent)
    }

    fn keeps_fields(&self) -> bool {
        self.driver.keeps_fields()
    }

    fn record_count(&self) -> Option<u64> {
        self.driver.record_count()
    }

    fn provoke(&self, work: Work) -> Result<(), TargetError> {
        self.driver.provoke(work)
    }

    fn empty(&self) -> Result<(), TargetError> {
        self.driver.empty()
    }

    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        self.driver.clock()
    }

    fn flush_disk(&self, stop: &std::sync::atomic::AtomicBool) {
        for s in self.server.iter().chain(self.backend.iter()) {
            s.lock().flush_disk(stop);
        }
    }

    fn resources(&self) -> Option<ProcSnapshot> {
        let mut server = self.server.as_ref()?.snapshot();
        if let Some(b) = &self.backend {
            server.add(&b.snapshot());
        }
        Some(server)
    }

    fn fault(&self, kind: FaultKind) -> Result<FaultStruck, TargetError> {
        // The data's server first: the one in front comes back onto it.
        let first = match &self.backend {
            Some(b) => Some(b.fault(kind)?),
            None => None,
        };
        let struck = crate::running::fault(self.server.as_ref(), kind)?;
        Ok(match first {
            Some(f) => FaultStruck {
                at: f.at,
                back_after: struck.at.duration_since(f.at) + struck.back_after,
            },
            None => struck,
        })
    }

    fn stalled(&self) -> Option<String> {
        if let Some(why) = self.backend.as_ref().and_then(|b| b.lock().stalled()) {
            return Some(format!("the server it keeps its data in: {why}"));
        }
        self.server.as_ref()?.lock().stalled()
    }

    fn gone(&self) -> Option<String> {
        if let Some(why) = self.backend.as_ref().and_then(|b| b.lock().gone()) {
            return Some(format!("the server it keeps its data in: {why}"));
        }
        self.server.as_ref()?.lock().gone()
    }

    fn link(&self) -> Option<LinkSample> {
        self.relay.as_ref().map(|r| r.sample())
    }
}

impl<D: AsyncDriver> ServerTime for AsyncTarget<D> {
    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        self.driver.command_times()
    }

    fn untimed(&self) -> Option<&'static str> {
        self.driver.no_command_times()
    }
}

impl<D: AsyncDriver> BackgroundWork for AsyncTarget<D> {
    fn source(&self) -> (&'static str, Duration) {
        // Offered only where the driver names a source (background_work).
        self.driver
            .background_source(self.server.is_some())
            .unwrap_or(("", Duration::from_secs(1)))
    }

    fn look(&self) -> Option<BackgroundLook> {
        let counted = self.driver.background_look();
        let Some(logged) = self.logged_background() else {
            return counted;
        };
        Some(BackgroundLook {
            logged,
            ..counted.unwrap_or_default()
        })
    }
}

/// The servers a driver's sessions connect to, each reached as an `A`.
#[derive(Clone)]
pub enum Reach<A> {
    /// One server.
    One(A),
    /// A primary and its replica: writes go to `primary`; reads to
    /// `reads` (the replica), or to the primary too when it is `None`.
    Pair {
        /// The primary.
        primary: A,
        /// Where reads go, if not to the primary.
        reads: Option<A>,
    },
}

impl<A> Reach<A> {
    /// The server writes go to.
    pub fn primary(&self) -> &A {
        match self {
            Reach::One(a) | Reach::Pair { primary: a, .. } => a,
        }
    }
}

impl<A> Reach<A> {
    /// A driver of `codec` on the network loop for the same servers, its
    /// connections opened by what `connector` makes of each: writes to the
    /// primary, reads to the replica when there is one to read from.
    pub fn codec_driver<C: bakeoff_core::driver::Codec>(
        &self,
        codec: C,
        connector: impl Fn(&A) -> Result<Box<dyn bakeoff_core::driver::Connector>, TargetError>,
    ) -> Result<bakeoff_core::net::CodecDriver<C>, TargetError> {
        use bakeoff_core::net::{CodecDriver, Route};
        Ok(match self {
            Reach::One(a)
            | Reach::Pair {
                primary: a,
                reads: None,
            } => CodecDriver::new(codec, connector(a)?),
            Reach::Pair {
                primary,
                reads: Some(replica),
            } => CodecDriver::routed(
                codec,
                vec![connector(primary)?, connector(replica)?],
                Route::ReadWrite { reads: 1 },
            ),
        })
    }
}

/// The sessions that carry a job on the async loop, each client's session
/// opened by `open` on the server of `reach` it is given (a [`ReadWrite`]
/// pair of sessions for a primary and its replica).
pub fn sessions_reached<A, S, F, Fut>(reach: &Reach<A>, open: F) -> Box<dyn Carrier>
where
    A: Clone + Send + Sync + 'static,
    S: Session + 'static,
    F: Fn(A) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<S, ConnectError>> + 'static,
{
    match reach.clone() {
        Reach::One(a) => Box::new(Sessions::new(move || open(a.clone()))),
        Reach::Pair { primary, reads } => Box::new(Sessions::new(move || {
            let (open, primary, reads) = (open.clone(), primary.clone(), reads.clone());
            async move {
                let writes = open(primary).await?;
                let reads = match reads {
                    Some(r) => Some(open(r).await?),
                    None => None,
                };
                Ok(ReadWrite { writes, reads })
            }
        })),
    }
}

/// How long setting a server up may take (creating and emptying tables,
/// indexes on an empty table, a replica following): far longer than it
/// should, but not for ever.
pub const SETUP_WITHIN: std::time::Duration = std::time::Duration::from_secs(120);
/// How long a quick admin query may take (probing, counters, counting
/// rows, replication lag).
pub const QUICK_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the set-up work `f` on a fresh single-threaded runtime, within
/// [`SETUP_WITHIN`].
pub fn block<T>(
    f: impl std::future::Future<Output = Result<T, TargetError>>,
) -> Result<T, TargetError> {
    block_within(SETUP_WITHIN, f)
}

/// Runs the quick admin query `f` (probing, counters) on a fresh
/// single-threaded runtime, within [`QUICK_WITHIN`].
pub fn block_quick<T>(
    f: impl std::future::Future<Output = Result<T, TargetError>>,
) -> Result<T, TargetError> {
    block_within(QUICK_WITHIN, f)
}

/// Runs `f` on a fresh single-threaded runtime; a server that has not
/// finished it within `limit` (stalled, or not the server it should be)
/// is an error, not a hang.
pub fn block_within<T>(
    limit: std::time::Duration,
    f: impl std::future::Future<Output = Result<T, TargetError>>,
) -> Result<T, TargetError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| TargetError::Client(format!("cannot start an async runtime: {e}")))?
        .block_on(async {
            tokio::time::timeout(limit, f).await.unwrap_or_else(|_| {
                Err(TargetError::Server(format!(
                    "the server did not finish within {} s: is it stalled, or is something else listening on its port?",
                    limit.as_secs()
                )))
            })
        })
}

/// The profile row's text columns: name, sex, province, city.
pub fn profile_columns(p: &Profile) -> [String; 4] {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    [
        text(&p.name),
        text(std::slice::from_ref(&p.sex)),
        text(&p.province_text()),
        text(&p.city_text()),
    ]
}

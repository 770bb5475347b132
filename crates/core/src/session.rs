//! The call contract of targets that are not byte protocols: a
//! [`Session`] per client turns an operation into a call — on a
//! connection of a client library (PostgreSQL, MariaDB, MongoDB), or into
//! an in-process engine (Tokyo Cabinet, LMDB, RocksDB, SQLite) — and its
//! return into an [`Answer`]. Sessions never read the clock or record.
//!
//! The operation is dispatched to the session's methods in one place,
//! [`perform`], for both loops that run sessions ([`crate::async_loop`] and
//! [`crate::embedded`]), so an operation means the same call everywhere.

use crate::harness::{Harness, Outcome, Request};
use crate::keys::{Key, KeyNaming};
use crate::plan::Workload;
use crate::profile::{Profile, Query, RecordKind};
use crate::recorder::ErrorKind;
use crate::workload::OpKind;

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The server answered with an error; the connection is still usable.
    #[error("server error: {0}")]
    Server(String),
    /// The connection is gone (reset, closed, timed out); the loop opens a
    /// new one.
    #[error("connection lost: {0}")]
    Lost(String),
    /// No reply within the request timeout; the connection, in an unknown
    /// state, is dropped and a new one opened.
    #[error("no reply within {0:?}")]
    TimedOut(std::time::Duration),
}

impl SessionError {
    /// What the server, library or engine said, without bakeoff's words
    /// around it.
    pub fn said(&self) -> String {
        match self {
            SessionError::Server(m) | SessionError::Lost(m) => m.clone(),
            SessionError::TimedOut(_) => self.to_string(),
        }
    }

    /// How the failure is counted: a lost connection is a reset.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SessionError::Server(_) => ErrorKind::ServerError,
            SessionError::Lost(_) => ErrorKind::Reset,
            SessionError::TimedOut(_) => ErrorKind::Timeout,
        }
    }
}

/// What a session's operations return.
pub type SessionResult<T> = Result<T, SessionError>;

/// How a socket error is counted.
pub fn io_error_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as Io;
    match e.kind() {
        Io::TimedOut | Io::WouldBlock => ErrorKind::Timeout,
        Io::ConnectionRefused | Io::AddrNotAvailable | Io::AddrInUse => ErrorKind::Refused,
        Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe | Io::UnexpectedEof => {
            ErrorKind::Reset
        }
        _ => ErrorKind::ServerError,
    }
}

/// What a successful call returned, as far as the harness cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Done as asked.
    Done,
    /// Done, with this many rows returned or written.
    Rows(u64),
    /// A read found its record; the bytes are in the read buffer.
    Found,
    /// No such record.
    Miss,
    /// A scan read this many records, in the read buffer as
    /// [`crate::scan::push_row`] writes them.
    Scanned(u64),
}

/// The outcome the harness records for `result`, whose read bytes (if
/// any) are in `read`.
#[inline]
pub fn outcome<'r>(result: &SessionResult<Answer>, read: &'r [u8]) -> Outcome<'r> {
    match result {
        Ok(Answer::Done) => Outcome::Ok,
        Ok(Answer::Rows(n)) => Outcome::Rows(*n),
        Ok(Answer::Found) => Outcome::Value(read),
        Ok(Answer::Miss) => Outcome::Miss,
        Ok(Answer::Scanned(_)) => Outcome::Scanned(read),
        Err(e) => Outcome::Failed(e.kind()),
    }
}

/// Records `result` of `req` in `h` at `now`: its outcome (read bytes in
/// `read`), and on a failure what the server, library or engine said.
#[inline]
pub fn record(
    h: &mut crate::harness::Harness,
    req: &crate::harness::Request,
    result: &SessionResult<Answer>,
    read: &[u8],
    now: u64,
) {
    match result {
        Err(e) => h.failed_saying_lazily(req, e.kind(), || e.said()),
        // A read-modify-write that went well sent its write too; so did
        // an update's read-merge-write that found its record.
        Ok(_) if req.kind == OpKind::ReadModifyWrite => h.followed_up(req),
        Ok(Answer::Found) if req.kind == OpKind::Update => h.followed_up(req),
        Ok(_) => {}
    }
    h.complete(req, outcome(result, read), now);
}

/// One client's connection or engine handle. Implementations do no timing
/// and no recording. Sessions live on one worker thread (no `Send`); an
/// in-process engine's methods never wait (see [`crate::embedded`]).
#[allow(async_fn_in_trait)] // sessions live on one thread; no Send needed
pub trait Session {
    /// Reads record `key` into `out` (cleared first); `Ok(false)` if absent.
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool>;
    /// Writes record `key`.
    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()>;
    /// Removes record `key`; `Ok(false)` if it was absent.
    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool>;
    /// Stores profile row `id` (key `key`) with `payload` as its payload.
    async fn put_profile(
        &mut self,
        _id: u64,
        _key: &[u8],
        _profile: &Profile,
        _payload: &[u8],
    ) -> SessionResult<()> {
        Err(SessionError::Server(
            "this target has no profile table".into(),
        ))
    }
    /// Writes record `key` into a table the load emptied, so it is known to
    /// be absent. A plain insert where an upsert costs more: FerretDB runs
    /// an upsert as a scan of the whole collection.
    async fn insert(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        self.put(key, value).await
    }
    /// Stores profile row `id`, known to be absent (see `insert`).
    async fn insert_profile(
        &mut self,
        id: u64,
        key: &[u8],
        profile: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        self.put_profile(id, key, profile, payload).await
    }
    /// Runs a search on the profile table; returns the rows it found.
    async fn search(&mut self, _query: &Query) -> SessionResult<u64> {
        Err(SessionError::Server("this target cannot search".into()))
    }
    /// Reads up to `limit` records whose keys are `start` or after, in key
    /// order, into `out` (cleared first) as [`crate::scan::push_row`]
    /// writes them; returns how many.
    async fn scan(&mut self, _start: &[u8], _limit: u32, _out: &mut Vec<u8>) -> SessionResult<u64> {
        Err(SessionError::Server("this target cannot scan".into()))
    }
    /// Whether it keeps the fields of a record of several apart, so that
    /// [`Session::put_field`] writes one (a table of a column per field).
    fn keeps_fields(&self) -> bool {
        false
    }
    /// Writes field `field` of record `key` (a session that keeps fields
    /// apart; an absent record stays absent).
    async fn put_field(&mut self, _key: &[u8], _field: usize, _value: &[u8]) -> SessionResult<()> {
        Err(SessionError::Server(
            "this target keeps a record as one value".into(),
        ))
    }
    /// Writes records `keys[i]` = `values[i]` in one request (batched
    /// load). The plan allows batches only on targets that do this.
    async fn put_batch(&mut self, _keys: &[Key], _values: &[&[u8]]) -> SessionResult<()> {
        Err(SessionError::Server(
            "this target cannot insert in batches".into(),
        ))
    }
    /// The steps of a phased request between connecting and closing
    /// (000-mysql-phases), by name; empty if the target has none.
    fn phase_steps(&self) -> &'static [&'static str] {
        &[]
    }
    /// Runs step `step` of `phase_steps` for a request about record `key`
    /// of `records` (the UPDATE and SELECT take the 10 records from `key`),
    /// named as `naming` says, writing `value`; returns the rows it touched.
    async fn phase_step(
        &mut self,
        _step: usize,
        _key: u64,
        _records: u64,
        _naming: KeyNaming,
        _value: &[u8],
    ) -> SessionResult<u64> {
        Err(SessionError::Server(
            "this target has no phased request".into(),
        ))
    }
    /// Closes the connection politely (a request's last step).
    async fn close(self) -> SessionResult<()>
    where
        Self: Sized,
    {
        Ok(())
    }
    /// How many servers this session spreads its requests over (1 for
    /// one server; see [`ReadWrite`]).
    fn nodes(&self) -> usize {
        1
    }
    /// The server, of [`Session::nodes`], a request of `kind` goes to.
    fn node_of(&self, _kind: OpKind) -> usize {
        0
    }
}

/// One operation as a session sees it: the request and the client's
/// buffers holding its key and value.
pub struct Op<'a> {
    /// The request the harness made.
    pub req: Request,
    /// Its key.
    pub key: &'a [u8],
    /// The value written (empty for reads and deletes).
    pub value: &'a [u8],
    /// The workload's records are profile rows (000-search).
    pub profile: bool,
    /// The load's write of a record the emptied table lacks.
    pub fresh: bool,
    /// The search's parameters.
    pub query: Option<Query>,
    /// Fields per record (1: a record is one value).
    pub fields: u32,
    /// With several: the field an update or a read-modify-write writes
    /// (taken from `value`, the whole record at a new version).
    pub field: usize,
}

/// The buffers of one client of a session loop, sized once for the
/// workload: key, value written, value read.
pub struct OpBuffers {
    /// Key of the current request.
    pub key: Key,
    /// Value of the current write.
    pub value: Vec<u8>,
    /// Bytes of the current read.
    pub read: Vec<u8>,
}

impl OpBuffers {
    /// Buffers for values of `w`.
    pub fn new(w: &Workload) -> Self {
        Self {
            key: KeyNaming::Bakeoff.key(0),
            value: Vec::with_capacity(w.value_size.max()),
            read: Vec::with_capacity(w.value_size.max()),
        }
    }

    /// Fills the key and (for writes) the value of `req`, made by `h`;
    /// returns the operation to perform and the buffer its read lands in.
    #[inline]
    pub fn prepare<'b>(&'b mut self, h: &mut Harness, req: Request) -> (Op<'b>, &'b mut Vec<u8>) {
        let OpBuffers { key, value, read } = self;
        *key = h.job().inputs.workload.key_naming.key(req.key);
        if (req.kind.writes_value() || req.kind == OpKind::ReadModifyWrite)
            && h.job().inputs.workload.fields > 1
        {
            value.clear();
            value.extend_from_slice(h.record(req.client as usize, req.key));
        } else if req.kind.writes_value() || req.kind == OpKind::ReadModifyWrite {
            let (head, payload) = h.value(req.client as usize, req.key);
            value.clear();
            value.extend_from_slice(&head);
            value.extend_from_slice(payload);
        }
        let query = (req.kind == OpKind::Search).then(|| h.query(req.client as usize));
        let fields = h.job().inputs.workload.fields;
        let field = if fields > 1 && matches!(req.kind, OpKind::Update | OpKind::ReadModifyWrite) {
            h.draw_field(req.client as usize)
        } else {
            0
        };
        let job = h.job();
        let op = Op {
            req,
            key,
            value,
            profile: job.inputs.workload.record == RecordKind::Profile,
            fresh: job.kind == crate::driver::JobKind::Load,
            query,
            fields,
            field,
        };
        (op, read)
    }
}

/// Makes one operation on `s`; a read's bytes land in `read`.
#[inline]
pub async fn perform<S: Session>(
    s: &mut S,
    op: &Op<'_>,
    read: &mut Vec<u8>,
) -> SessionResult<Answer> {
    let (key, id) = (op.key, op.req.key);
    match op.req.kind {
        OpKind::Get => s.get(key, read).await.map(found),
        OpKind::Set if op.fresh && op.profile => s
            .insert_profile(id, key, &Profile::of(id), op.value)
            .await
            .map(|()| Answer::Done),
        OpKind::Set if op.fresh => s.insert(key, op.value).await.map(|()| Answer::Done),
        OpKind::Set | OpKind::Update if op.profile => s
            .put_profile(id, key, &Profile::of(id), op.value)
            .await
            .map(|()| Answer::Done),
        OpKind::Update if op.fields > 1 && s.keeps_fields() => s
            .put_field(key, op.field, field_of(op))
            .await
            .map(|()| Answer::Done),
        OpKind::Update if op.fields > 1 => {
            // A read-merge-write of one field: the record read, its field
            // replaced, written back (no record: nothing written, a miss).
            if !s.get(key, read).await? {
                return Ok(Answer::Miss);
            }
            if merge_field(read, op) {
                s.put(key, read).await?;
            }
            Ok(Answer::Found)
        }
        OpKind::Set | OpKind::Update => s.put(key, op.value).await.map(|()| Answer::Done),
        OpKind::Delete => s
            .delete(key)
            .await
            .map(|hit| if hit { Answer::Done } else { Answer::Miss }),
        OpKind::Search => match &op.query {
            Some(q) => s.search(q).await.map(Answer::Rows),
            None => Err(SessionError::Server("search without a query".into())),
        },
        OpKind::Insert => s.put(key, op.value).await.map(|()| Answer::Done),
        OpKind::Scan => s.scan(key, op.req.rows, read).await.map(Answer::Scanned),
        OpKind::ReadModifyWrite => {
            // YCSB's: the read, then the write of the same record, not
            // atomic; the read's bytes are checked like a get's.
            let hit = s.get(key, read).await?;
            if op.fields > 1 && s.keeps_fields() {
                s.put_field(key, op.field, field_of(op)).await?;
            } else if hit && op.fields > 1 && merge_field(read, op) {
                // Of a record of several fields, one field is written.
                s.put(key, read).await?;
            } else {
                s.put(key, op.value).await?;
            }
            Ok(found(hit))
        }
    }
}

/// Field `op.field` of the record `op.value` holds.
fn field_of<'v>(op: &Op<'v>) -> &'v [u8] {
    let len = op.value.len() / op.fields.max(1) as usize;
    &op.value[op.field * len..(op.field + 1) * len]
}

/// Writes field `op.field` of the record `op.value` holds into the record
/// `read` holds, when both are records of `op.fields` fields of one
/// length; `false` (nothing changed) when the read is not such a record,
/// which its check then reports.
fn merge_field(read: &mut [u8], op: &Op) -> bool {
    if read.len() != op.value.len() {
        return false;
    }
    let len = op.value.len() / op.fields.max(1) as usize;
    let at = op.field * len;
    read[at..at + len].copy_from_slice(&op.value[at..at + len]);
    true
}

fn found(hit: bool) -> Answer {
    if hit {
        Answer::Found
    } else {
        Answer::Miss
    }
}

/// A client of a primary and its replica: writes go to the primary
/// (node 0); reads and searches to the replica (node 1) when it has a
/// connection to one, else to the primary too. The async loop counts each
/// request against the node [`ReadWrite::node_of`] names, for the per-node
/// counter checks.
pub struct ReadWrite<S> {
    /// The primary's connection.
    pub writes: S,
    /// The replica's connection, when reads go there.
    pub reads: Option<S>,
}

impl<S> ReadWrite<S> {
    /// The node a request of `kind` goes to: 1 (the replica) for reads
    /// when there is a replica connection, else 0 (the primary).
    #[inline]
    pub fn node_of(&self, kind: OpKind) -> usize {
        usize::from(self.reads.is_some() && !kind.writes())
    }

    fn reader(&mut self) -> &mut S {
        self.reads.as_mut().unwrap_or(&mut self.writes)
    }
}

impl<S: Session> Session for ReadWrite<S> {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool> {
        self.reader().get(key, out).await
    }
    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        self.writes.put(key, value).await
    }
    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool> {
        self.writes.delete(key).await
    }
    async fn put_profile(
        &mut self,
        id: u64,
        key: &[u8],
        profile: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        self.writes.put_profile(id, key, profile, payload).await
    }
    async fn insert(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        self.writes.insert(key, value).await
    }
    async fn insert_profile(
        &mut self,
        id: u64,
        key: &[u8],
        profile: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        self.writes.insert_profile(id, key, profile, payload).await
    }
    async fn search(&mut self, query: &Query) -> SessionResult<u64> {
        self.reader().search(query).await
    }
    async fn put_batch(&mut self, keys: &[Key], values: &[&[u8]]) -> SessionResult<()> {
        self.writes.put_batch(keys, values).await
    }
    fn phase_steps(&self) -> &'static [&'static str] {
        self.writes.phase_steps()
    }
    async fn phase_step(
        &mut self,
        step: usize,
        key: u64,
        records: u64,
        naming: KeyNaming,
        value: &[u8],
    ) -> SessionResult<u64> {
        self.writes
            .phase_step(step, key, records, naming, value)
            .await
    }
    async fn close(self) -> SessionResult<()> {
        let closed = self.writes.close().await;
        match self.reads {
            Some(r) => closed.and(r.close().await),
            None => closed,
        }
    }
    fn nodes(&self) -> usize {
        2
    }
    fn node_of(&self, kind: OpKind) -> usize {
        ReadWrite::node_of(self, kind)
    }
}

//! One client's connection: the key-value, field, profile and search
//! statements through mysql_async, and `--request phases`' steps.

use bakeoff_core::error::ConnectError;
use bakeoff_core::keys::{Key, KeyNaming};
use bakeoff_core::profile::{Profile, Query};
use bakeoff_core::session::{Session, SessionError, SessionResult};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Statement, Value};

use super::server::{connect, connect_kind, Dsn};
use crate::async_target::profile_columns;
use crate::codec::mysql::{DEL, GET, PUT};
use crate::codec::mysql_fields::table as fields_table;
use crate::sql::{batch_insert, search_params, search_statements, SCAN};

pub(super) const PROFILE_PUT: &str =
    "INSERT INTO profile (id, name, sex, province, city, payload) \
     VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), sex = VALUES(sex), \
     province = VALUES(province), city = VALUES(city), payload = VALUES(payload)";

/// The steps of 000-mysql-phases between connect and close.
pub(super) const PHASE_STEPS: &[&str] = &["select_db", "set_charset", "update", "select", "insert"];

/// `bytes` as hexadecimal digits (an SQL `X'…'` literal).
pub(super) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// The keys of the 10 records from `key` (wrapping at `records`), quoted
/// for an `IN (…)` list.
pub(super) fn ten_keys(key: u64, records: u64, naming: KeyNaming) -> String {
    (0..10)
        .map(|i| {
            let k = naming.key((key + i) % records.max(1));
            format!("'{}'", String::from_utf8_lossy(&k))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One client's connection and statements.
pub struct MariaSession {
    pub(super) conn: Conn,
    /// Profile upsert and the four searches (profile workloads only).
    pub(super) profile: Option<(Statement, [Statement; 4])>,
    /// Multi-row upserts by row count (batched loads).
    pub(super) batches: std::collections::HashMap<usize, Statement>,
    /// Records of several fields: the statements on table usertable.
    pub(super) fields: Option<FieldsSql>,
}

/// The statements on table usertable, of a column per field (mysql_async
/// prepares each once per connection, by its text).
pub(super) struct FieldsSql {
    pub(super) get: String,
    pub(super) put: String,
    pub(super) del: String,
    pub(super) scan: String,
    /// Each field's one-column `UPDATE`.
    pub(super) put_field: Vec<String>,
}

impl FieldsSql {
    pub(super) fn new(fields: usize) -> Self {
        let t = fields_table(fields);
        FieldsSql {
            get: t.get(),
            put: t.put(),
            del: t.del(),
            scan: t.scan(),
            put_field: (0..fields).map(|f| t.put_field(f)).collect(),
        }
    }
}

/// A row's columns from `from` on, end to end (a NULL adds nothing); an
/// error names a column that is not bytes.
pub(super) fn columns_end_to_end(
    row: &mysql_async::Row,
    from: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    for i in from..row.len() {
        match row.as_ref(i) {
            Some(Value::Bytes(b)) => out.extend_from_slice(b),
            Some(Value::NULL) => {}
            other => return Err(format!("column {i} of a row is not bytes: {other:?}")),
        }
    }
    Ok(())
}

impl MariaSession {
    /// Statements are prepared on first use (mysql_async caches them per
    /// connection), so a connection per request prepares only what it uses.
    pub(super) async fn open(
        dsn: &Dsn,
        profile: bool,
        phased: bool,
        fields: usize,
    ) -> Result<Self, ConnectError> {
        // A phased request selects its database itself, as a step.
        let mut conn = connect(dsn, (!phased).then_some("bakeoff")).await?;
        let e = |r: Result<Statement, mysql_async::Error>| {
            r.map_err(|e| ConnectError::new(connect_kind(&e), e.to_string()))
        };
        let profile = if profile {
            let upsert = e(conn.prep(PROFILE_PUT).await)?;
            let [a, b, c, d] = search_statements(|_| "?".into());
            Some((
                upsert,
                [
                    e(conn.prep(a).await)?,
                    e(conn.prep(b).await)?,
                    e(conn.prep(c).await)?,
                    e(conn.prep(d).await)?,
                ],
            ))
        } else {
            None
        };
        Ok(MariaSession {
            conn,
            profile,
            batches: Default::default(),
            fields: (fields > 1).then(|| FieldsSql::new(fields)),
        })
    }
}

impl Session for MariaSession {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool> {
        out.clear();
        if let Some(sql) = &self.fields {
            let row: Option<mysql_async::Row> =
                self.conn.exec_first(&sql.get, (key,)).await.map_err(fail)?;
            let Some(row) = row else {
                return Ok(false);
            };
            columns_end_to_end(&row, 0, out).map_err(SessionError::Server)?;
            return Ok(true);
        }
        let row: Option<Vec<u8>> = self.conn.exec_first(GET, (key,)).await.map_err(fail)?;
        match row {
            Some(v) => {
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        let Some(sql) = &self.fields else {
            return self.conn.exec_drop(PUT, (key, value)).await.map_err(fail);
        };
        let fields = sql.put_field.len();
        let mut params = vec![Value::Bytes(key.to_vec())];
        let len = (value.len() / fields).max(1);
        params.extend(value.chunks(len).map(|f| Value::Bytes(f.to_vec())));
        self.conn.exec_drop(&sql.put, params).await.map_err(fail)
    }

    fn keeps_fields(&self) -> bool {
        self.fields.is_some()
    }

    async fn put_field(&mut self, key: &[u8], field: usize, value: &[u8]) -> SessionResult<()> {
        let sql = self
            .fields
            .as_ref()
            .and_then(|sql| sql.put_field.get(field))
            .ok_or_else(|| SessionError::Server(format!("no field {field}")))?;
        // `SET fieldJ = ? WHERE k = ?`: the value binds first.
        self.conn.exec_drop(sql, (value, key)).await.map_err(fail)
    }

    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool> {
        let sql = self.fields.as_ref().map_or(DEL, |sql| &sql.del);
        self.conn.exec_drop(sql, (key,)).await.map_err(fail)?;
        Ok(self.conn.affected_rows() > 0)
    }

    async fn put_profile(
        &mut self,
        id: u64,
        _key: &[u8],
        p: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        let (upsert, _) = self
            .profile
            .as_ref()
            .ok_or_else(|| SessionError::Server("no profile statements".into()))?;
        let [name, sex, province, city] = profile_columns(p);
        self.conn
            .exec_drop(upsert, (id, name, sex, province, city, payload))
            .await
            .map_err(fail)
    }

    async fn put_batch(&mut self, keys: &[Key], values: &[&[u8]]) -> SessionResult<()> {
        let n = keys.len();
        if !self.batches.contains_key(&n) {
            let sql = batch_insert(n, |_| "?".into(), crate::codec::mysql::BATCH_TAIL);
            let st = self.conn.prep(sql).await.map_err(fail)?;
            self.batches.insert(n, st);
        }
        let mut params = Vec::with_capacity(2 * n);
        for (k, v) in keys.iter().zip(values) {
            params.push(mysql_async::Value::Bytes(k.to_vec()));
            params.push(mysql_async::Value::Bytes(v.to_vec()));
        }
        let st = self.batches[&n].clone();
        self.conn.exec_drop(&st, params).await.map_err(fail)
    }

    fn phase_steps(&self) -> &'static [&'static str] {
        PHASE_STEPS
    }

    async fn phase_step(
        &mut self,
        step: usize,
        key: u64,
        records: u64,
        naming: KeyNaming,
        value: &[u8],
    ) -> SessionResult<u64> {
        // Plain text queries, as the PHP client of seed 000 sent them.
        let c = &mut self.conn;
        match PHASE_STEPS[step] {
            "select_db" => c.query_drop("USE bakeoff").await.map(|()| 0),
            "set_charset" => c.query_drop("SET NAMES utf8mb4").await.map(|()| 0),
            "update" => {
                let sql = format!(
                    "UPDATE kv SET v = X'{}' WHERE k IN ({})",
                    hex(value),
                    ten_keys(key, records, naming)
                );
                c.query_drop(sql).await.map(|()| c.affected_rows())
            }
            "select" => {
                // A full scan, as in the seed, whose table had no index on
                // what it searched by: the primary key is not used.
                let sql = format!(
                    "SELECT k, v FROM kv IGNORE INDEX (PRIMARY) WHERE k IN ({})",
                    ten_keys(key, records, naming)
                );
                c.query::<(Vec<u8>, Vec<u8>), _>(sql)
                    .await
                    .map(|rows| rows.len() as u64)
            }
            _ => {
                let k = naming.key(key);
                let sql = format!(
                    "INSERT INTO requests (k, v) VALUES ('{}', X'{}')",
                    String::from_utf8_lossy(&k),
                    hex(value)
                );
                c.query_drop(sql).await.map(|()| 1)
            }
        }
        .map_err(fail)
    }

    async fn close(self) -> SessionResult<()> {
        self.conn.disconnect().await.map_err(fail)
    }

    async fn search(&mut self, q: &Query) -> SessionResult<u64> {
        let (_, searches) = self
            .profile
            .as_ref()
            .ok_or_else(|| SessionError::Server("no profile statements".into()))?;
        let (which, params) = search_params(q);
        let ids: Vec<u64> = self
            .conn
            .exec(&searches[which], params)
            .await
            .map_err(fail)?;
        Ok(ids.len() as u64)
    }

    async fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> SessionResult<u64> {
        out.clear();
        // Rows as they come, their bytes taken as they are: mysql_async's
        // conversion to a tuple panics on a value of another type.
        // A key, then the value or each field.
        let sql = self.fields.as_ref().map_or(SCAN, |sql| &sql.scan);
        let mut record = Vec::new();
        let rows = self
            .conn
            .exec_fold(
                sql,
                (start, limit),
                Ok(0u64),
                |n: Result<u64, String>, row: mysql_async::Row| {
                    let n = n?;
                    let Some(Value::Bytes(k)) = row.as_ref(0) else {
                        return Err(format!("a scan's row has no key: {row:?}"));
                    };
                    record.clear();
                    columns_end_to_end(&row, 1, &mut record)?;
                    bakeoff_core::scan::push_row(out, k, &record);
                    Ok(n + 1)
                },
            )
            .await
            .map_err(fail)?;
        rows.map_err(SessionError::Server)
    }
}

/// A server error leaves the connection usable; anything else (closed,
/// reset, I/O, protocol) loses it.
pub(super) fn fail(e: mysql_async::Error) -> SessionError {
    match e {
        mysql_async::Error::Server(_) => SessionError::Server(e.to_string()),
        e => SessionError::Lost(e.to_string()),
    }
}

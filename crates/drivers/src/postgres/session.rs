//! One client's connection through tokio-postgres: the key-value, field,
//! profile and search statements, prepared once per connection.

use bakeoff_core::error::ConnectError;
use bakeoff_core::keys::Key;
use bakeoff_core::profile::{Profile, Query};
use bakeoff_core::session::{Session, SessionError, SessionResult};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::server::{connect_kind, connect_local, Dsn};
use crate::async_target::profile_columns;
use crate::codec::postgres::{BATCH_TAIL, DEL, GET, PUT};
use crate::codec::postgres_fields::table as fields_table;
use crate::sql::{batch_insert, search_params, search_statements, FieldsTable};

/// The statement in `slot`, prepared from `sql` on first use.
pub(super) async fn prepared<'a>(
    client: &Client,
    slot: &'a mut Option<Statement>,
    sql: &str,
) -> SessionResult<&'a Statement> {
    if slot.is_none() {
        *slot = Some(client.prepare(sql).await.map_err(fail)?);
    }
    Ok(slot.as_ref().expect("prepared above"))
}

/// One client's connection and statements.
pub struct PgSession {
    pub(super) client: Client,
    /// Prepared on first use, so that a connection per request prepares
    /// only what it runs.
    pub(super) get: Option<Statement>,
    pub(super) put: Option<Statement>,
    pub(super) del: Option<Statement>,
    /// [`SCAN`].
    pub(super) scan: Option<Statement>,
    /// Profile upsert and the four searches (profile workloads only).
    pub(super) profile: Option<(Statement, [Statement; 4])>,
    /// Multi-row upserts by row count (batched loads).
    pub(super) batches: std::collections::HashMap<usize, Statement>,
    /// Records of several fields: table usertable, and each field's
    /// one-column `UPDATE` (prepared on first use).
    pub(super) fields: Option<(FieldsTable, Vec<Option<Statement>>)>,
}

impl PgSession {
    pub(super) async fn open(
        dsn: &Dsn,
        profile: bool,
        fields: usize,
    ) -> Result<Self, ConnectError> {
        let client = connect_local(dsn).await?;
        let e = |r: Result<Statement, tokio_postgres::Error>| {
            r.map_err(|e| ConnectError::new(connect_kind(&e), e.to_string()))
        };
        let profile = if profile {
            let upsert = e(client.prepare(PROFILE_PUT).await)?;
            let [a, b, c, d] = search_statements(|n| format!("${n}"));
            Some((
                upsert,
                [
                    e(client.prepare(&a).await)?,
                    e(client.prepare(&b).await)?,
                    e(client.prepare(&c).await)?,
                    e(client.prepare(&d).await)?,
                ],
            ))
        } else {
            None
        };
        Ok(PgSession {
            client,
            get: None,
            put: None,
            del: None,
            scan: None,
            profile,
            batches: Default::default(),
            fields: (fields > 1).then(|| (fields_table(fields), vec![None; fields])),
        })
    }

    /// A read of a record of several fields: every column, end to end.
    pub(super) async fn get_fields(&mut self, k: &str, out: &mut Vec<u8>) -> SessionResult<bool> {
        let Some((t, _)) = &self.fields else {
            unreachable!("called for records of fields")
        };
        let sql = t.get();
        let row = self
            .client
            .query_opt(prepared(&self.client, &mut self.get, &sql).await?, &[&k])
            .await
            .map_err(fail)?;
        let Some(row) = row else {
            return Ok(false);
        };
        for f in 0..row.len() {
            let v: Option<&[u8]> = row.try_get(f).map_err(fail)?;
            out.extend_from_slice(v.unwrap_or_default());
        }
        Ok(true)
    }

    /// A write of a whole record of several fields: every column.
    pub(super) async fn put_fields(&mut self, k: &str, record: &[u8]) -> SessionResult<()> {
        let Some((t, _)) = &self.fields else {
            unreachable!("called for records of fields")
        };
        let (sql, n) = (t.put(), t.fields);
        let len = (record.len() / n).max(1);
        let chunks: Vec<&[u8]> = record.chunks(len).collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&k];
        params.extend(chunks.iter().map(|c| c as &(dyn ToSql + Sync)));
        self.client
            .execute(prepared(&self.client, &mut self.put, &sql).await?, &params)
            .await
            .map(|_| ())
            .map_err(fail)
    }

    /// A scan of records of several fields: each key, its fields end to
    /// end.
    pub(super) async fn scan_fields(
        &mut self,
        k: &str,
        limit: u32,
        out: &mut Vec<u8>,
    ) -> SessionResult<u64> {
        let Some((t, _)) = &self.fields else {
            unreachable!("called for records of fields")
        };
        let sql = t.scan();
        let rows = self
            .client
            .query(
                prepared(&self.client, &mut self.scan, &sql).await?,
                &[&k, &i64::from(limit)],
            )
            .await
            .map_err(fail)?;
        let mut record = Vec::new();
        for row in &rows {
            let key: &str = row.try_get(0).map_err(fail)?;
            record.clear();
            for f in 1..row.len() {
                let v: Option<&[u8]> = row.try_get(f).map_err(fail)?;
                record.extend_from_slice(v.unwrap_or_default());
            }
            bakeoff_core::scan::push_row(out, key.as_bytes(), &record);
        }
        Ok(rows.len() as u64)
    }
}

impl Session for PgSession {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool> {
        out.clear();
        let k = text_key(key)?;
        if self.fields.is_some() {
            return self.get_fields(k, out).await;
        }
        match self
            .client
            .query_opt(prepared(&self.client, &mut self.get, GET).await?, &[&k])
            .await
            .map_err(fail)?
        {
            Some(row) => {
                let v: &[u8] = row.try_get(0).map_err(fail)?;
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        let k = text_key(key)?;
        if self.fields.is_some() {
            return self.put_fields(k, value).await;
        }
        self.client
            .execute(
                prepared(&self.client, &mut self.put, PUT).await?,
                &[&k, &value],
            )
            .await
            .map(|_| ())
            .map_err(fail)
    }

    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool> {
        let k = text_key(key)?;
        let sql = match &self.fields {
            Some((t, _)) => t.del(),
            None => DEL.into(),
        };
        self.client
            .execute(prepared(&self.client, &mut self.del, &sql).await?, &[&k])
            .await
            .map(|n| n > 0)
            .map_err(fail)
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
        self.client
            .execute(
                upsert,
                &[&(id as i64), &name, &sex, &province, &city, &payload],
            )
            .await
            .map(|_| ())
            .map_err(fail)
    }

    async fn put_batch(&mut self, keys: &[Key], values: &[&[u8]]) -> SessionResult<()> {
        let n = keys.len();
        if !self.batches.contains_key(&n) {
            let sql = batch_insert(n, |i| format!("${i}"), BATCH_TAIL);
            let st = self.client.prepare(&sql).await.map_err(fail)?;
            self.batches.insert(n, st);
        }
        let texts: Vec<&str> = keys
            .iter()
            .map(|k| std::str::from_utf8(k).unwrap_or(""))
            .collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(2 * n);
        for (k, v) in texts.iter().zip(values) {
            params.push(k);
            params.push(v);
        }
        self.client
            .execute(&self.batches[&n], &params)
            .await
            .map(|_| ())
            .map_err(fail)
    }

    async fn search(&mut self, q: &Query) -> SessionResult<u64> {
        let (_, searches) = self
            .profile
            .as_ref()
            .ok_or_else(|| SessionError::Server("no profile statements".into()))?;
        let (which, params) = search_params(q);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.client
            .query(&searches[which], &refs)
            .await
            .map(|rows| rows.len() as u64)
            .map_err(fail)
    }

    async fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> SessionResult<u64> {
        out.clear();
        let k = text_key(start)?;
        if self.fields.is_some() {
            return self.scan_fields(k, limit, out).await;
        }
        // LIMIT's parameter is a bigint to PostgreSQL.
        let rows = self
            .client
            .query(
                prepared(&self.client, &mut self.scan, SCAN).await?,
                &[&k, &i64::from(limit)],
            )
            .await
            .map_err(fail)?;
        for row in &rows {
            let key: &str = row.try_get(0).map_err(fail)?;
            let value: &[u8] = row.try_get(1).map_err(fail)?;
            bakeoff_core::scan::push_row(out, key.as_bytes(), value);
        }
        Ok(rows.len() as u64)
    }

    fn keeps_fields(&self) -> bool {
        self.fields.is_some()
    }

    async fn put_field(&mut self, key: &[u8], field: usize, value: &[u8]) -> SessionResult<()> {
        let k = text_key(key)?;
        let Some((t, statements)) = &mut self.fields else {
            return Err(SessionError::Server(
                "table kv keeps a record as one value".into(),
            ));
        };
        let sql = t.put_field(field);
        let slot = statements
            .get_mut(field)
            .ok_or_else(|| SessionError::Server(format!("no field {field}")))?;
        self.client
            .execute(prepared(&self.client, slot, &sql).await?, &[&k, &value])
            .await
            .map(|_| ())
            .map_err(fail)
    }
}

/// The key as the text PostgreSQL's key column holds; a key that is not
/// UTF-8 is refused by the server's rules, so it is the server's error.
fn text_key(key: &[u8]) -> SessionResult<&str> {
    std::str::from_utf8(key).map_err(|e| {
        SessionError::Server(format!(
            "a key of PostgreSQL's text column must be UTF-8: {e}"
        ))
    })
}

/// A database error leaves the connection usable; anything else (closed,
/// reset, I/O) loses it.
pub(super) fn fail(e: tokio_postgres::Error) -> SessionError {
    if e.as_db_error().is_some() {
        SessionError::Server(e.to_string())
    } else {
        SessionError::Lost(e.to_string())
    }
}

/// [`crate::sql::SCAN`] in PostgreSQL's placeholders: the text
/// pg_stat_statements counts it under. bakeoff's keys (`bk:` and 12
/// digits) sort alike under any collation, so `ORDER BY k` is their order.
pub(super) const SCAN: &str = "SELECT k, v FROM kv WHERE k >= $1 ORDER BY k LIMIT $2";

pub(super) const PROFILE_PUT: &str =
    "INSERT INTO profile (id, name, sex, province, city, payload) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, \
     sex = EXCLUDED.sex, province = EXCLUDED.province, city = EXCLUDED.city, \
     payload = EXCLUDED.payload";

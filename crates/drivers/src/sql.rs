//! SQL text shared by the SQL targets (PostgreSQL, MariaDB): the searches
//! of 000-search and what each operation sends.

use bakeoff_core::profile::{Query, SearchKind};
use bakeoff_core::workload::OpKind;

/// The four searches of 000-search, in `SearchKind` order (name, sex,
/// location, all), with placeholders written by `ph(n)` (1-based): the same
/// conditions, hence the same rows, on every SQL target.
pub fn search_statements(ph: impl Fn(usize) -> String) -> [String; 4] {
    [
        format!("SELECT id FROM profile WHERE name LIKE {}", ph(1)),
        format!("SELECT id FROM profile WHERE sex = {}", ph(1)),
        format!(
            "SELECT id FROM profile WHERE province = {} AND city = {}",
            ph(1),
            ph(2)
        ),
        format!(
            "SELECT id FROM profile WHERE name LIKE {} AND sex = {} AND province = {} AND city = {}",
            ph(1),
            ph(2),
            ph(3),
            ph(4)
        ),
    ]
}

/// Which of `search_statements` serves `q`, and its parameters in order.
pub fn search_params(q: &Query) -> (usize, Vec<String>) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let like = format!("%{}%", text(&q.name_part));
    let sex = text(std::slice::from_ref(&q.sex));
    match q.kind {
        SearchKind::Name => (0, vec![like]),
        SearchKind::Sex => (1, vec![sex]),
        SearchKind::Location => (2, vec![text(&q.province), text(&q.city)]),
        SearchKind::All => (3, vec![like, sex, text(&q.province), text(&q.city)]),
    }
}

/// A scan of the key-value table, in every dialect bakeoff speaks
/// (placeholders written `?`).
pub const SCAN: &str = "SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?";

/// What a SQL target sends for each operation (the result's `requests`).
pub fn describe(kind: OpKind, kv: [&str; 3], profile_upsert: &str, profile: bool) -> String {
    match kind {
        OpKind::Get => kv[0].into(),
        OpKind::Set | OpKind::Update | OpKind::Insert if profile => profile_upsert.into(),
        OpKind::Set | OpKind::Update | OpKind::Insert => kv[1].into(),
        OpKind::ReadModifyWrite => format!("{}, then {}", kv[0], kv[1]),
        OpKind::Delete => kv[2].into(),
        OpKind::Scan => SCAN.into(),
        OpKind::Search => "SELECT id FROM profile WHERE <name LIKE ?> / <sex = ?> / <province = ? AND city = ?> / <all three>".into(),
    }
}

/// A multi-row upsert of `rows` records into `kv`: `VALUES (k, v), …`
/// with placeholders written by `ph(n)` (1-based), then `tail` (the
/// dialect's conflict clause).
pub fn batch_insert(rows: usize, ph: impl Fn(usize) -> String, tail: &str) -> String {
    let values: Vec<String> = (0..rows)
        .map(|i| format!("({}, {})", ph(2 * i + 1), ph(2 * i + 2)))
        .collect();
    format!("INSERT INTO kv (k, v) VALUES {} {tail}", values.join(", "))
}

/// Whether the SQL targets' wire codecs on the network loop can run `job`:
/// key-value operations on `kv` (batched loads too, when
/// `batch_fits(rows)` says a request of that many rows fits the protocol),
/// one connection kept per client. Searches, the profile table, a
/// connection per request, phased requests and a measured phase with
/// scans go through the client libraries.
pub fn wire_serves(job: &bakeoff_core::driver::Job, batch_fits: impl Fn(usize) -> bool) -> bool {
    use bakeoff_core::driver::JobKind;
    use bakeoff_core::plan::RequestMode;
    use bakeoff_core::profile::RecordKind;
    let w = job.inputs.workload;
    // The codecs decode one value per reply, not a scan's rows; the load
    // and the read-back of a scan run have none, and stay on the wire.
    let scans = job.kind == JobKind::Measure && w.mix.has(OpKind::Scan);
    w.record == RecordKind::Kv
        && w.request == RequestMode::Op
        && w.mix.weights[OpKind::Search as usize] == 0
        && !scans
        && (job.kind != JobKind::Load || w.batch <= 1 || batch_fits(w.batch as usize))
}

/// The SQL dialects bakeoff writes table usertable in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: `?n` placeholders, `INSERT OR REPLACE`.
    Sqlite,
    /// PostgreSQL: `$n` placeholders, `ON CONFLICT … DO UPDATE`.
    Postgres,
    /// MySQL and MariaDB: `?` placeholders, `ON DUPLICATE KEY UPDATE`.
    Mysql,
}

impl Dialect {
    /// Placeholder `n` (1-based).
    fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Postgres => format!("${n}"),
            Dialect::Mysql => "?".into(),
        }
    }
}

/// Table usertable, of records of several fields (`--fields N`): YCSB's
/// JDBC binding's shape, a column per field (`field0` …), the key in
/// column `k`. A read reads every column in order, the load and a set
/// write them all, an update writes one (`UPDATE … SET fieldJ`).
#[derive(Clone, Copy, Debug)]
pub struct FieldsTable {
    /// Fields per record.
    pub fields: usize,
    /// Whose SQL.
    pub dialect: Dialect,
}

impl FieldsTable {
    /// `field0, field1, …`.
    pub fn columns(&self) -> String {
        (0..self.fields)
            .map(|f| format!("field{f}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The table's `CREATE TABLE IF NOT EXISTS`.
    pub fn create(&self) -> String {
        let (table, key, blob, tail) = match self.dialect {
            Dialect::Sqlite => ("usertable", "TEXT", "BLOB", ""),
            Dialect::Postgres => ("usertable", "TEXT", "BYTEA", ""),
            Dialect::Mysql => (
                "bakeoff.usertable",
                "VARCHAR(32)",
                "LONGBLOB",
                " ENGINE=InnoDB",
            ),
        };
        let columns: Vec<String> = (0..self.fields)
            .map(|f| format!("field{f} {blob}"))
            .collect();
        format!(
            "CREATE TABLE IF NOT EXISTS {table} (k {key} PRIMARY KEY, {}){tail}",
            columns.join(", ")
        )
    }

    /// The read of every field of one record.
    pub fn get(&self) -> String {
        format!(
            "SELECT {} FROM usertable WHERE k = {}",
            self.columns(),
            self.dialect.placeholder(1)
        )
    }

    /// The write of a whole record: an upsert.
    pub fn put(&self) -> String {
        self.insert(1)
    }

    /// An upsert of `rows` whole records (a batched load's for several).
    fn insert(&self, rows: usize) -> String {
        let per_row = self.fields + 1;
        let values: Vec<String> = (0..rows)
            .map(|r| {
                let ps: Vec<String> = (1..=per_row)
                    .map(|i| self.dialect.placeholder(r * per_row + i))
                    .collect();
                format!("({})", ps.join(", "))
            })
            .collect();
        let values = values.join(", ");
        let columns = self.columns();
        let each =
            |f: &dyn Fn(usize) -> String| (0..self.fields).map(f).collect::<Vec<_>>().join(", ");
        match self.dialect {
            Dialect::Sqlite => {
                format!("INSERT OR REPLACE INTO usertable (k, {columns}) VALUES {values}")
            }
            Dialect::Postgres => format!(
                "INSERT INTO usertable (k, {columns}) VALUES {values} ON CONFLICT (k) DO UPDATE SET {}",
                each(&|f| format!("field{f} = EXCLUDED.field{f}"))
            ),
            Dialect::Mysql => format!(
                "INSERT INTO usertable (k, {columns}) VALUES {values} ON DUPLICATE KEY UPDATE {}",
                each(&|f| format!("field{f} = VALUES(field{f})"))
            ),
        }
    }

    /// The write of field `field` alone: its value is the second
    /// parameter and the key the first, except in MySQL, whose
    /// placeholders bind in order of appearance: the value, then the key.
    pub fn put_field(&self, field: usize) -> String {
        let (k, v) = (self.dialect.placeholder(1), self.dialect.placeholder(2));
        format!("UPDATE usertable SET field{field} = {v} WHERE k = {k}")
    }

    /// The delete.
    pub fn del(&self) -> String {
        format!(
            "DELETE FROM usertable WHERE k = {}",
            self.dialect.placeholder(1)
        )
    }

    /// A scan: up to the second parameter's records from the first's key
    /// on, in key order, each key and its fields.
    pub fn scan(&self) -> String {
        format!(
            "SELECT k, {} FROM usertable WHERE k >= {} ORDER BY k LIMIT {}",
            self.columns(),
            self.dialect.placeholder(1),
            self.dialect.placeholder(2)
        )
    }

    /// What each operation sends, for the result's `requests`.
    pub fn describe(&self, kind: OpKind) -> String {
        let one_field = {
            let t = self.put_field(0).replace("field0", "field<j>");
            format!("{t} (one field, drawn uniformly)")
        };
        match kind {
            OpKind::Get => self.get(),
            OpKind::Set | OpKind::Insert => self.put(),
            OpKind::Update => one_field,
            OpKind::ReadModifyWrite => format!("{}, then {one_field}", self.get()),
            OpKind::Scan => self.scan(),
            OpKind::Delete => self.del(),
            OpKind::Search => "not supported".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each dialect's table: the same columns, its own placeholders and
    /// upsert, an update of one column whose parameters bind as the codecs
    /// bind them (MySQL's in order of appearance: the value first).
    #[test]
    fn usertable_in_each_dialect() {
        let t = |dialect| FieldsTable { fields: 2, dialect };
        assert_eq!(
            t(Dialect::Postgres).put(),
            "INSERT INTO usertable (k, field0, field1) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET field0 = EXCLUDED.field0, field1 = EXCLUDED.field1"
        );
        assert_eq!(
            t(Dialect::Mysql).put(),
            "INSERT INTO usertable (k, field0, field1) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE field0 = VALUES(field0), field1 = VALUES(field1)"
        );
        assert_eq!(
            t(Dialect::Sqlite).put(),
            "INSERT OR REPLACE INTO usertable (k, field0, field1) VALUES (?1, ?2, ?3)"
        );
        assert_eq!(
            t(Dialect::Mysql).put_field(1),
            "UPDATE usertable SET field1 = ? WHERE k = ?"
        );
        assert_eq!(
            t(Dialect::Postgres).scan(),
            "SELECT k, field0, field1 FROM usertable WHERE k >= $1 ORDER BY k LIMIT $2"
        );
        assert!(t(Dialect::Mysql).create().starts_with(
            "CREATE TABLE IF NOT EXISTS bakeoff.usertable (k VARCHAR(32) PRIMARY KEY, field0 LONGBLOB, field1 LONGBLOB)"
        ));
        assert_eq!(
            t(Dialect::Postgres).insert(2).matches('$').count(),
            6,
            "three parameters a row"
        );
    }
}

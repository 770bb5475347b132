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
    let w = job.workload;
    // The codecs decode one value per reply, not a scan's rows; the load
    // and the read-back of a scan run have none, and stay on the wire.
    let scans = job.kind == JobKind::Measure && w.mix.has(OpKind::Scan);
    w.record == RecordKind::Kv
        && w.request == RequestMode::Op
        && w.mix.weights[OpKind::Search as usize] == 0
        && !scans
        && (job.kind != JobKind::Load || w.batch <= 1 || batch_fits(w.batch as usize))
}

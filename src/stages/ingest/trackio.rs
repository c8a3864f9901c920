//! trackio projects (PyPI `trackio` 0.43, `trackio/sqlite_storage.py` and `trackio/fragments.py`),
//! read from either storage mode into rows of fixed columns.
//!
//! A source's files may be a project's SQLite database (`{TRACKIO_DIR}/{project}.db`; told by
//! its header, `SQLite format 3`) or the JSON Lines fragments trackio appends when SQLite is
//! unsafe or the Space unreachable (`{TRACKIO_DIR}/inbox/<writer>/<n>.jsonl`, records
//! `{"v": 1, "kind": "metric" | "system_metric" | "alert", "project", "run", "run_id", "metrics",
//! "step", "timestamp", "config", "log_id"}`). Both can be read together: a record is known by
//! its `log_id` (a UUID that trackio gives every log call), and one read again with the same
//! content (a fragment imported into the database but not yet deleted) is read once and counted
//! in a warning; one with the same `log_id` and other content is a violation at its place,
//! naming where the first was read.
//!
//! - `trackio-metrics`: table `metrics` / records of kind `metric`, long: one row per (log call,
//!   metric): `run` (`run_name`), `run_id`, `step` (Int64), `timestamp` (ISO 8601 text as
//!   written), `metric`, `value` (Float64), `value_text` (a value that is no number: a string as
//!   found, a boolean, list or object as JSON text), `log_id`. trackio writes non-finite floats
//!   as the strings `"NaN"`, `"Infinity"` and `"-Infinity"` (`utils.serialize_values`): a
//!   metric's value that is one of them is read as that IEEE value.
//! - `trackio-system`: table `system_metrics` / records of kind `system_metric`, long as above
//!   without `step`.
//! - `trackio-runs`: table `configs` / the `config` of `metric` records (trackio sends it with a
//!   run's first log call): `run`, `run_id`, `config` (JSON text, trackio's own `_Username`,
//!   `_Created`, `_Group` keys included), `created_at`.
//!
//! A source's files may also be the Parquet and JSON files trackio exports a project to
//! (`SQLiteStorage.export_for_static_space`: `metrics.parquet`, `aux/system_metrics.parquet`,
//! `aux/configs.parquet`, with the JSON column flattened into one column per key, and
//! `runs.json`): they are read back into the same records, so that an export and the database
//! it came from read together give each log call once. A flattened cell that is null is a key
//! the log call did not have (so a config key logged as `None` is not kept); `runs.json` gives
//! `trackio-runs` rows without a config.
//!
//! In a database, `_source_line` is the row's `id` in its table; in a fragment, the line; in a
//! Parquet export, the row's `id` (else its 1-based row); in `runs.json`, the entry's place.
//! Alerts, traces and artifacts are not read: a source that meets alert records says how many
//! in a warning.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};
use sha2::Digest as _;

use super::convert::{Target, json_text};
use super::evals::ShapeProblems;
use super::files::InputFile;
use super::lenient;
use super::records::Item;
use crate::core::error::{Error, Result};
use crate::core::report::{BuildReport, Position, SourceRef};
use crate::core::spec::Format;

/// The first 16 bytes of every SQLite 3 database file.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Columns of `trackio-metrics` (`with_step`) and `trackio-system`.
pub fn metric_columns(with_step: bool) -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![("run".into(), Target::Str), ("run_id".into(), Target::Str)];
    if with_step {
        c.push(("step".into(), Target::Int64));
    }
    c.extend([
        ("timestamp".into(), Target::Str),
        ("metric".into(), Target::Str),
        ("value".into(), Target::Float64),
        ("value_text".into(), Target::Text),
        ("log_id".into(), Target::Str),
    ]);
    c
}

/// Columns of `trackio-runs`.
pub fn run_columns() -> Vec<(String, Target)> {
    vec![
        ("run".into(), Target::Str),
        ("run_id".into(), Target::Str),
        ("config".into(), Target::JsonObject),
        ("created_at".into(), Target::Str),
    ]
}

/// Whether `path` looks like a trackio project database: a `.db` file whose first bytes are
/// SQLite's header and that has a `metrics` table with trackio's `metrics` column (format
/// `trackio-metrics`, `trackio-system`, `trackio-runs`). A file that cannot be read is not one.
pub fn is_trackio_db(path: &Path) -> bool {
    if path.extension().is_none_or(|e| e != "db") || !has_sqlite_header(path) {
        return false;
    }
    open_db(path).ok().is_some_and(|c| table_columns(&c, "metrics").iter().any(|n| n == "metrics"))
}

/// Why `path`, a `.db` file that [`is_trackio_db`] refuses, is no trackio project: no SQLite
/// database, one SQLite cannot read (a copy cut short: SQLite's own words), or one without
/// trackio's `metrics` table.
pub fn why_no_trackio_db(path: &Path) -> String {
    if !has_sqlite_header(path) {
        return "a `.db` file that is no SQLite database (it does not start with SQLite's header)".into();
    }
    let checked = open_db(path).and_then(|c| {
        let verdict: String = c.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        Ok((verdict, table_columns(&c, "metrics")))
    });
    match checked {
        Err(e) => format!("an SQLite database that SQLite cannot read ({e}): a copy cut short, or damaged"),
        Ok((verdict, _)) if verdict != "ok" => {
            format!("an SQLite database that SQLite finds damaged ({verdict}): a copy cut short?")
        }
        Ok(_) => "a `.db` file that is no trackio project: an SQLite database without a `metrics` table holding a \
                  `metrics` column"
            .into(),
    }
}

/// Whether `path` looks like a trackio JSONL fragment: a `.jsonl` file under a folder named
/// `inbox` whose first line is a record with `"v"` and a `"kind"` trackio writes.
pub fn is_trackio_fragment(path: &Path) -> bool {
    use std::io::{BufRead, Read};
    if path.extension().is_none_or(|e| e != "jsonl") || !path.ancestors().any(|a| a.ends_with("inbox")) {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else { return false };
    let mut line = String::new();
    if std::io::BufReader::new(f.take(1 << 20)).read_line(&mut line).is_err() {
        return false;
    }
    serde_json::from_str::<Map<String, Value>>(&line)
        .is_ok_and(|r| r.contains_key("v") && r.get("kind").and_then(Value::as_str).is_some_and(|k| KINDS.contains(&k)))
}

/// The kinds of fragment record trackio writes.
const KINDS: [&str; 3] = ["metric", "system_metric", "alert"];

fn has_sqlite_header(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == SQLITE_HEADER
}

/// Opens a database read-only and as immutable, so that reading it writes nothing beside it
/// (no `-shm` file).
fn open_db(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    // a URI path: `%`, `?` and `#` would be read as escapes and delimiters
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    rusqlite::Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// The column names of `table` (none when it does not exist).
fn table_columns(c: &rusqlite::Connection, table: &str) -> Vec<String> {
    let Ok(mut st) = c.prepare(&format!("PRAGMA table_info(\"{table}\")")) else { return Vec::new() };
    st.query_map([], |r| r.get::<_, String>(1)).map(|rows| rows.filter_map(|r| r.ok()).collect()).unwrap_or_default()
}

/// A record's content, for telling a repeat from a conflict.
type ContentDigest = [u8; 32];

/// The digest of a record's content, whatever the order of its keys (a database and a
/// fragment write them in other orders).
fn content_digest(r: Map<String, Value>) -> ContentDigest {
    sha2::Sha256::digest(json_text(&sorted(Value::Object(r))).as_bytes()).into()
}

/// Reads the files of one trackio source in order, de-duplicating records by `log_id` across
/// all of them.
pub struct Reader {
    format: Format,
    /// Where each `log_id` was first read, and its content's digest.
    seen: HashMap<String, (SourceRef, ContentDigest)>,
    /// Records read again with the same content: how many, and the first.
    repeats: (u64, Option<SourceRef>),
    /// Alert records met (no format reads them): how many, and the first.
    alerts: (u64, Option<SourceRef>),
    /// Each `run_id` read by `trackio-runs`, with its record's digest: a run read again with
    /// the same content (a copy of the project's database) gives one row.
    runs: HashMap<String, ContentDigest>,
    /// Runs read again with the same content: how many, and the first.
    run_repeats: (u64, Option<SourceRef>),
    /// The runs a project's database gave (read before the fragments), and how many fragment
    /// runs they held already, with the first (the fragments a project imported).
    db_runs: std::collections::HashSet<String>,
    imported: (u64, Option<SourceRef>),
    /// Runs whose config held credentials, replaced by `REDACTED` (as W&B runs' are): their
    /// names, in the order read.
    scrubbed: Vec<String>,
}

impl Reader {
    /// A reader for a source of `format` (one of the trackio formats).
    pub fn new(format: Format) -> Reader {
        Reader {
            format,
            seen: HashMap::new(),
            repeats: (0, None),
            alerts: (0, None),
            runs: HashMap::new(),
            run_repeats: (0, None),
            db_runs: std::collections::HashSet::new(),
            imported: (0, None),
            scrubbed: Vec::new(),
        }
    }

    /// Replaces the credentials a run record's config holds (a token passed in the run's
    /// arguments, a key that names one) by `REDACTED`, as W&B runs' configs are; the run is
    /// named in [`Reader::finish`]'s warning.
    fn scrubbed(&mut self, mut r: Map<String, Value>) -> Map<String, Value> {
        if let Some(config) = r.get_mut("config")
            && super::wandb::values::redact(config, &[]) > 0
        {
            let run = r.get("run").and_then(Value::as_str).unwrap_or("(unnamed)").to_string();
            if !self.scrubbed.contains(&run) {
                self.scrubbed.push(run);
            }
        }
        r
    }

    /// Whether run record `r` (read at `sref`) repeats a run already read with the same
    /// `run_id` and content (counted); one with other content is kept, for the table's key to
    /// judge.
    fn run_read_before(&mut self, r: &Map<String, Value>, sref: &SourceRef) -> bool {
        let Some(id) = r.get("run_id").and_then(Value::as_str) else { return false };
        let digest = content_digest(r.clone());
        match self.runs.get(id) {
            Some(d) if *d == digest => {
                self.run_repeats.0 += 1;
                self.run_repeats.1.get_or_insert_with(|| sref.clone());
                true
            }
            Some(_) => false,
            None => {
                self.runs.insert(id.to_string(), digest);
                false
            }
        }
    }

    /// Reads one file into `sink`: records of the source's kind, in the normal shape
    /// `{run, run_id, step, timestamp, metrics, log_id}` (metrics and system) or `{run, run_id,
    /// config, created_at}` (runs); what cannot be read as one is an [`Item::Bad`].
    ///
    /// Errors: [`Error::Io`] or [`Error::Format`] for a file that cannot be read at all (a
    /// database that is not one, or whose write-ahead log is not empty: it may hold writes not
    /// yet in it).
    pub fn read(&mut self, input: &InputFile, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
        if has_sqlite_header(&input.path) {
            return self.read_db(input, sink);
        }
        match input.path.extension().and_then(|e| e.to_str()) {
            Some("parquet") => return self.read_parquet(input, sink),
            Some("json") if self.format == Format::TrackioRuns => return read_runs_json(input, sink),
            _ => {}
        }
        let mut each = |item: Item| -> Result<()> {
            match item {
                Item::Record(r, at) => match self.fragment_record(r, &input.rel, at) {
                    Some(item) => sink(item),
                    None => Ok(()),
                },
                bad => sink(bad),
            }
        };
        super::records::jsonl(super::files::open(input)?, &input.rel, &mut each)
    }

    /// A fragment record as the source's record; `None` for a record of another kind.
    fn fragment_record(&mut self, mut r: Map<String, Value>, rel: &str, at: Position) -> Option<Item> {
        let kind = r.get("kind").and_then(Value::as_str).map(str::to_string);
        let sref = SourceRef { file: rel.to_string(), at: at.clone() };
        let wanted = match self.format {
            Format::TrackioSystem => "system_metric",
            _ => "metric",
        };
        match (kind.as_deref(), r.get("v")) {
            (Some(k), Some(v)) if KINDS.contains(&k) && v.as_i64() == Some(1) => {}
            (Some(k), Some(v)) if KINDS.contains(&k) => {
                return Some(bad(
                    at,
                    "record",
                    format!("expected fragment version \"v\": 1, found {}", json_text(v)),
                    &r,
                ));
            }
            _ => {
                let found = match (&kind, r.get("kind")) {
                    (Some(k), _) => format!("kind {k:?}"),
                    (None, Some(v)) => format!("kind {}", json_text(v)),
                    (None, None) => "no `kind`".into(),
                };
                return Some(bad(
                    at,
                    "record",
                    format!(
                        "expected a trackio fragment record (`\"v\": 1`, `\"kind\"`: \"metric\", \"system_metric\" or \
                         \"alert\"), found {found}"
                    ),
                    &r,
                ));
            }
        }
        if kind.as_deref() == Some("alert") {
            self.alerts.0 += 1;
            self.alerts.1.get_or_insert(sref);
            return None;
        }
        if kind.as_deref() != Some(wanted) {
            return None;
        }
        if self.format == Format::TrackioRuns {
            // a run's config comes with its first log call only
            let config = r.get("config").filter(|c| !c.is_null())?.clone();
            // a run the project's database holds: its fragments were imported into it (the
            // database's row is the run's, with its own `created_at`)
            if r.get("run_id").and_then(Value::as_str).is_some_and(|id| self.db_runs.contains(id)) {
                self.imported.0 += 1;
                self.imported.1.get_or_insert(sref);
                return None;
            }
            let mut out = Map::new();
            out.insert("run".into(), r.get("run").cloned().unwrap_or(Value::Null));
            out.insert("run_id".into(), r.get("run_id").cloned().unwrap_or(Value::Null));
            out.insert("config".into(), config);
            out.insert("created_at".into(), r.get("timestamp").cloned().unwrap_or(Value::Null));
            return Some(Item::Record(self.scrubbed(out), at));
        }
        for k in ["v", "kind", "project", "config"] {
            r.shift_remove(k);
        }
        self.deduplicated(r, sref)
    }

    /// `r` read at `sref`, or nothing when its `log_id` was read before with the same content
    /// (counted), or a bad item when with other content.
    fn deduplicated(&mut self, r: Map<String, Value>, sref: SourceRef) -> Option<Item> {
        let Some(id) = r.get("log_id").and_then(Value::as_str).map(str::to_string) else {
            return Some(Item::Record(r, sref.at));
        };
        // the same log call in a database and in a fragment: keys in another order
        let mut content = r.clone();
        content.shift_remove("log_id");
        let digest = content_digest(content);
        match self.seen.get(&id) {
            None => {
                self.seen.insert(id, (sref.clone(), digest));
                Some(Item::Record(r, sref.at))
            }
            Some((_, d)) if *d == digest => {
                self.repeats.0 += 1;
                self.repeats.1.get_or_insert(sref);
                None
            }
            Some((first, _)) => {
                let message = format!(
                    "log_id {id:?} was read at {first} with other content; trackio imports the first and ignores \
                     this one (INSERT OR IGNORE): keep one of them"
                );
                Some(bad(sref.at, "duplicate", message, &r))
            }
        }
    }

    fn read_db(&mut self, input: &InputFile, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
        let wal = {
            let mut p = input.path.clone().into_os_string();
            p.push("-wal");
            std::path::PathBuf::from(p)
        };
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            return Err(Error::format(
                &input.rel,
                format!(
                    "the database's write-ahead log {}-wal is not empty: it may hold writes not yet in the \
                     database (trackio still running, or stopped before it closed the project); once no process \
                     writes to it, checkpoint it (`sqlite3 <file> 'PRAGMA wal_checkpoint(TRUNCATE)'`), which empties \
                     the log, and read the database again",
                    input.rel
                ),
            ));
        }
        let failed = |e: rusqlite::Error| Error::format(&input.rel, format!("reading the trackio database: {e}"));
        let c = open_db(&input.path).map_err(failed)?;
        let (table, wanted): (&str, &[&str]) = match self.format {
            Format::TrackioMetrics => {
                ("metrics", &["id", "run_id", "run_name", "step", "timestamp", "metrics", "log_id"])
            }
            Format::TrackioSystem => {
                ("system_metrics", &["id", "run_id", "run_name", "timestamp", "metrics", "log_id"])
            }
            _ => ("configs", &["id", "run_id", "run_name", "config", "created_at"]),
        };
        // a copy cut short reads as a database without tables: SQLite's own words say so
        if let Err(e) = c.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)) {
            return Err(failed(e));
        }
        let have = table_columns(&c, table);
        if have.is_empty() {
            // a project that never logged system metrics has the table all the same; none here
            // means this is no trackio database
            return Err(Error::format(
                &input.rel,
                format!("expected a trackio project database with a table `{table}`, found no such table"),
            ));
        }
        // columns added by later trackio versions (`log_id`) are null in older databases
        let select: Vec<String> = wanted
            .iter()
            .map(|c| if have.iter().any(|h| h == c) { format!("\"{c}\"") } else { "NULL".into() })
            .collect();
        let sql = format!("SELECT {} FROM \"{table}\" ORDER BY \"id\"", select.join(", "));
        let mut st = c.prepare(&sql).map_err(failed)?;
        let mut rows = st.query([]).map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            let mut cells = Map::new();
            for (i, name) in wanted.iter().enumerate() {
                cells.insert(name.to_string(), cell(row.get_ref(i).map_err(failed)?));
            }
            let id = cells.get("id").and_then(Value::as_u64).unwrap_or(0);
            let at = Position::Line(id);
            let sref = SourceRef { file: input.rel.clone(), at: at.clone() };
            let json_column = if self.format == Format::TrackioRuns { "config" } else { "metrics" };
            let parsed = match cells.get(json_column) {
                Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
                    Ok(v @ Value::Object(_)) => Ok(v),
                    Ok(other) => Err(format!("expected a JSON object, found {}", super::path::describe(&other))),
                    Err(e) => Err(format!("expected JSON text, found text that is not JSON ({e})")),
                },
                Some(other) => Err(format!("expected JSON text, found {}", super::path::describe(other))),
                None => Err("expected JSON text, found nothing".into()),
            };
            let value = match parsed {
                Ok(v) => v,
                Err(m) => {
                    let message = format!("column `{json_column}` of table `{table}` (row id {id}): {m}");
                    sink(bad(at, "json", message, &cells))?;
                    continue;
                }
            };
            let mut r = Map::new();
            r.insert("run".into(), cells.shift_remove("run_name").unwrap_or(Value::Null));
            r.insert("run_id".into(), cells.shift_remove("run_id").unwrap_or(Value::Null));
            if self.format == Format::TrackioRuns {
                r.insert("config".into(), value);
                r.insert("created_at".into(), cells.shift_remove("created_at").unwrap_or(Value::Null));
                let r = self.scrubbed(r);
                if let Some(id) = r.get("run_id").and_then(Value::as_str) {
                    self.db_runs.insert(id.to_string());
                }
                if !self.run_read_before(&r, &sref) {
                    sink(Item::Record(r, at))?;
                }
                continue;
            }
            if self.format == Format::TrackioMetrics {
                r.insert("step".into(), cells.shift_remove("step").unwrap_or(Value::Null));
            }
            r.insert("timestamp".into(), cells.shift_remove("timestamp").unwrap_or(Value::Null));
            r.insert("metrics".into(), value);
            r.insert("log_id".into(), cells.shift_remove("log_id").unwrap_or(Value::Null));
            if let Some(item) = self.deduplicated(r, sref) {
                sink(item)?;
            }
        }
        Ok(())
    }

    /// Reads a Parquet export (`trackio.sqlite_storage.SQLiteStorage.export_for_static_space`:
    /// `metrics.parquet`, `aux/system_metrics.parquet`, `aux/configs.parquet`), whose JSON
    /// column is flattened into one column per key: the table's own columns are known by name,
    /// every other column is a metric (or a config key), and a null cell is a key the log call
    /// did not have. Non-finite floats are given trackio's strings, so that a record read both
    /// from the database and from its export has one content.
    fn read_parquet(&mut self, input: &InputFile, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
        let (own, json_column, needed): (&[&str], &str, &[&str]) = match self.format {
            Format::TrackioMetrics => (
                &["id", "run_id", "timestamp", "run_name", "step", "log_id", "space_id"],
                "metrics",
                &["run_name", "step"],
            ),
            Format::TrackioSystem => (
                &["id", "run_id", "timestamp", "run_name", "log_id", "space_id"],
                "metrics",
                &["run_name", "timestamp"],
            ),
            _ => (&["id", "run_id", "run_name", "created_at"], "config", &["run_name", "created_at"]),
        };
        let mut columns_checked = false;
        let mut row_no = 0u64;
        super::lighteval::read_rows(input, &mut |obj: Map<String, Value>| {
            if !columns_checked {
                columns_checked = true;
                let missing: Vec<&&str> = needed.iter().filter(|c| !obj.contains_key(**c)).collect();
                if !missing.is_empty() {
                    let found: Vec<&str> = obj.keys().map(String::as_str).take(8).collect();
                    return Err(Error::format(
                        &input.rel,
                        format!(
                            "expected a trackio {} export (columns {needed:?} and one per {}), missing {missing:?}; \
                             found columns {found:?}",
                            match self.format {
                                Format::TrackioMetrics => "metrics",
                                Format::TrackioSystem => "system metrics",
                                _ => "configs",
                            },
                            if json_column == "config" { "config key" } else { "metric" }
                        ),
                    ));
                }
            }
            row_no += 1;
            let id = obj.get("id").and_then(Value::as_u64).unwrap_or(row_no);
            let at = Position::Line(id);
            let mut rest = Map::new();
            let mut cells = Map::new();
            for (k, v) in obj {
                if own.contains(&k.as_str()) {
                    cells.insert(k, v);
                } else if !v.is_null() {
                    rest.insert(k, trackio_nonfinite(v));
                }
            }
            let mut r = Map::new();
            r.insert("run".into(), cells.shift_remove("run_name").unwrap_or(Value::Null));
            r.insert("run_id".into(), cells.shift_remove("run_id").unwrap_or(Value::Null));
            if self.format == Format::TrackioRuns {
                r.insert("config".into(), Value::Object(rest));
                r.insert("created_at".into(), cells.shift_remove("created_at").unwrap_or(Value::Null));
                let sref = SourceRef { file: input.rel.clone(), at: at.clone() };
                let r = self.scrubbed(r);
                return if self.run_read_before(&r, &sref) { Ok(()) } else { sink(Item::Record(r, at)) };
            }
            if self.format == Format::TrackioMetrics {
                r.insert("step".into(), cells.shift_remove("step").unwrap_or(Value::Null));
            }
            r.insert("timestamp".into(), cells.shift_remove("timestamp").unwrap_or(Value::Null));
            r.insert("metrics".into(), Value::Object(rest));
            r.insert("log_id".into(), cells.shift_remove("log_id").unwrap_or(Value::Null));
            let sref = SourceRef { file: input.rel.clone(), at };
            match self.deduplicated(r, sref) {
                Some(item) => sink(item),
                None => Ok(()),
            }
        })
    }

    /// Says in `report` what the source's files held that gives no row (records read again,
    /// same `log_id` and content; alerts), and the runs whose config had credentials replaced.
    pub fn finish(self, table: &str, report: &mut BuildReport) {
        if !self.scrubbed.is_empty() {
            let names: Vec<&str> = self.scrubbed.iter().map(String::as_str).collect();
            report.warn(
                table,
                "credentials",
                None,
                format!(
                    "{} run{} credentials (access tokens, a key that names one) in {} config, replaced by REDACTED: {}",
                    names.len(),
                    if names.len() == 1 { " holds" } else { "s hold" },
                    if names.len() == 1 { "its" } else { "their" },
                    crate::core::report::first_names(&names, 5)
                ),
            );
        }
        let mut counted = |kind: &str, (n, first): (u64, Option<SourceRef>), (one, many): (&str, &str), rest: &str| {
            if n > 0 {
                let what = if n == 1 { one } else { many };
                report.warn(table, kind, first, format!("{} {what}{rest}", crate::core::numbers::group_digits(n)));
            }
        };
        counted(
            "duplicate-log-id",
            self.repeats,
            ("record repeats", "records repeat"),
            " a log_id already read with the same content (a fragment already imported into the database, or a copy \
             of the project?): read once",
        );
        counted(
            "duplicate-run",
            self.run_repeats,
            ("run repeats", "runs repeat"),
            " a run already read with the same run_id and config (a copy of the project's database?): read once",
        );
        counted(
            "duplicate-run",
            self.imported,
            ("run", "runs"),
            " in fragments the project's database holds too (fragments it imported): read from the database",
        );
        counted(
            "trackio-alerts",
            self.alerts,
            ("alert record is", "alert records are"),
            " of the fragments not read (runpack reads trackio's metrics, system metrics and configs)",
        );
    }
}

/// `inputs` in the order a [`Reader`] reads them: a project's databases first, so that the
/// runs its fragments carry again are known when the fragments are read; otherwise as given.
pub fn databases_first(inputs: &[InputFile]) -> Vec<InputFile> {
    let mut ordered = inputs.to_vec();
    // (each file's first bytes read once)
    ordered.sort_by_cached_key(|i| !is_trackio_db(&i.path));
    ordered
}

/// `v` with the keys of every object in sorted order.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut pairs: Vec<(String, Value)> = m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// A bad item at `at` whose reject keeps `r`.
fn bad(at: Position, rule: &'static str, message: String, r: &Map<String, Value>) -> Item {
    Item::Bad { at, rule, message, raw: Some(json_text(&Value::Object(r.clone()))) }
}

/// A SQLite value as JSON: text as a string, integers and reals as numbers (SQLite keeps no
/// NaN: it stores null), a blob of UTF-8 text as that text (trackio stores its JSON columns
/// as the bytes `orjson` writes), any other blob as a note of its length.
fn cell(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => match std::str::from_utf8(b) {
            Ok(text) => Value::String(text.to_string()),
            Err(_) => Value::String(format!("(a blob of {} bytes that is not UTF-8 text)", b.len())),
        },
    }
}

/// `runs.json` of a static export (`[{id, name, created_at, last_step, log_count}]`) as
/// `trackio-runs` records: `run`, `run_id`, `created_at`, and no config (the export keeps the
/// configs in `aux/configs.parquet`), at the entry's 1-based place in the list (as a
/// database's rows are at their id). An entry that is no object is an [`Item::Bad`].
fn read_runs_json(input: &InputFile, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
    let place = |at: Position| match &at {
        Position::Pointer(p) => {
            p.strip_prefix('/').and_then(|i| i.parse::<u64>().ok()).map(|i| Position::Line(i + 1)).unwrap_or(at)
        }
        Position::Line(_) => at,
    };
    let mut each = |item: Item| -> Result<()> {
        match item {
            Item::Bad { at, rule, message, raw } => sink(Item::Bad { at: place(at), rule, message, raw }),
            Item::Record(r, at) => {
                let at = place(at);
                let mut out = Map::new();
                out.insert("run".into(), r.get("name").cloned().unwrap_or(Value::Null));
                out.insert("run_id".into(), r.get("id").cloned().unwrap_or(Value::Null));
                out.insert("created_at".into(), r.get("created_at").cloned().unwrap_or(Value::Null));
                sink(Item::Record(out, at))
            }
        }
    };
    super::records::json(super::files::open(input)?, &input.rel, "", &mut each)
}

/// A value read from Parquet with its non-finite floats (runpack's marks) written as trackio
/// writes them in its JSON (`"NaN"`, `"Infinity"`, `"-Infinity"`), inside lists and objects too.
fn trackio_nonfinite(v: Value) -> Value {
    match v {
        Value::String(s) => match lenient::special(&s) {
            Some(sp) if sp.is_nonfinite() => Value::String(sp.token().to_string()),
            _ => Value::String(s),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(trackio_nonfinite).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, trackio_nonfinite(v))).collect()),
        other => other,
    }
}

/// A trackio non-finite string (`"NaN"`, `"Infinity"`, `"-Infinity"`, as `serialize_values`
/// writes them) as runpack's mark for the bare token; other values as they are.
fn nonfinite(v: Value) -> Value {
    match v {
        Value::String(s) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") => {
            Value::String(format!("{}{s}", lenient::MARK))
        }
        other => other,
    }
}

/// Long rows of one metrics record (`{run, run_id, step?, timestamp, metrics, log_id}`): one
/// per metric. A log call without metrics gives no row.
///
/// Errors: `metrics` is not an object.
pub fn metric_rows(r: &Map<String, Value>, with_step: bool) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let metrics = match r.get("metrics") {
        Some(Value::Object(m)) => m,
        other => {
            let found = other.map(super::path::describe).unwrap_or_else(|| "nothing".into());
            return Err(vec![("$.metrics".into(), format!("expected an object of metric values, found {found}"))]);
        }
    };
    let mut rows = Vec::with_capacity(metrics.len());
    for (k, v) in metrics {
        let mut row = Map::with_capacity(8);
        for c in ["run", "run_id"] {
            row.insert(c.into(), r.get(c).cloned().unwrap_or(Value::Null));
        }
        if with_step {
            row.insert("step".into(), r.get("step").cloned().unwrap_or(Value::Null));
        }
        row.insert("timestamp".into(), r.get("timestamp").cloned().unwrap_or(Value::Null));
        row.insert("metric".into(), Value::String(k.clone()));
        let (value, text) = super::tinker::value_columns(nonfinite(v.clone()));
        row.insert("value".into(), value);
        row.insert("value_text".into(), text);
        row.insert("log_id".into(), r.get("log_id").cloned().unwrap_or(Value::Null));
        rows.push(row);
    }
    Ok(rows)
}

/// The row of one run's config record.
///
/// Errors: `config` is not an object.
pub fn run_row(r: &Map<String, Value>) -> Result<Map<String, Value>, ShapeProblems> {
    // a run list (`runs.json`) holds no config: its records have none
    if !matches!(r.get("config"), Some(Value::Object(_)) | None) {
        let found = r.get("config").map(super::path::describe).unwrap_or_else(|| "nothing".into());
        return Err(vec![("$.config".into(), format!("expected an object, found {found}"))]);
    }
    Ok(r.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn metrics_go_long_with_nonfinite_strings_as_numbers() {
        let rows = metric_rows(
            &obj(r#"{"run": "a", "run_id": "x", "step": 2, "timestamp": "t", "metrics": {"loss": "NaN", "acc": 0.5, "note": "hi", "inf": "-Infinity"}, "log_id": "l1"}"#),
            true,
        )
        .unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(lenient::special(rows[0]["value"].as_str().unwrap()).unwrap().token(), "NaN");
        assert_eq!(rows[1]["value"], 0.5);
        assert_eq!((&rows[2]["value"], rows[2]["value_text"].as_str()), (&Value::Null, Some("hi")));
        assert_eq!(lenient::special(rows[3]["value"].as_str().unwrap()).unwrap().token(), "-Infinity");
        assert_eq!(rows[3]["log_id"], "l1");
        let e = metric_rows(&obj(r#"{"metrics": [1]}"#), true).unwrap_err();
        assert_eq!(e[0].1, "expected an object of metric values, found an array");
    }

    #[test]
    fn a_log_id_read_again_is_read_once_unless_it_differs() {
        let mut reader = Reader::new(Format::TrackioMetrics);
        let rec = |v: f64| {
            obj(&format!(
                r#"{{"v": 1, "kind": "metric", "project": "p", "run": "a", "run_id": "x", "metrics": {{"loss": {v}}}, "step": 0, "timestamp": "t", "config": null, "log_id": "l1"}}"#
            ))
        };
        assert!(matches!(reader.fragment_record(rec(1.0), "f.jsonl", Position::Line(1)), Some(Item::Record(..))));
        assert!(reader.fragment_record(rec(1.0), "g.jsonl", Position::Line(4)).is_none());
        assert_eq!(reader.repeats.0, 1);
        match reader.fragment_record(rec(2.0), "g.jsonl", Position::Line(5)) {
            Some(Item::Bad { rule, message, .. }) => {
                assert_eq!(rule, "duplicate");
                assert!(message.starts_with("log_id \"l1\" was read at f.jsonl:1 with other content"), "{message}");
            }
            _ => panic!("a conflict"),
        }
        match reader.fragment_record(obj(r#"{"v": 2, "kind": "metric"}"#), "g.jsonl", Position::Line(6)) {
            Some(Item::Bad { message, .. }) => assert_eq!(message, "expected fragment version \"v\": 1, found 2"),
            _ => panic!("a bad version"),
        }
        assert!(
            reader.fragment_record(obj(r#"{"v": 1, "kind": "alert", "title": "t"}"#), "g", Position::Line(7)).is_none()
        );
        assert_eq!(reader.alerts.0, 1);
    }
}

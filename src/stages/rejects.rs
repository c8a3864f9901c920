//! The rejects files of a release: `rejects/<name>.jsonl`.
//!
//! In: rows that a build chose not to keep (validation failures with `--on-invalid=reject`,
//! rows superseded by a duplicate-key rule). Out: one JSON Lines file per source or table,
//! one line per row:
//!
//! ```json
//! {"_source_file": "metrics.jsonl", "_source_line": 5, "_reasons": ["…"], "record": {…}}
//! ```
//!
//! `_source_line` is the 1-based line (JSONL, CSV) or the JSON pointer of the record (JSON
//! documents); `record` holds the row as read (or as the table query produced it), and `raw`
//! replaces it when the line could not be parsed at all. A JSON document that could not be
//! parsed as one record has neither (its reason says the line and column, the file is in the
//! raw inputs).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::core::error::{Error, Result};
use crate::core::report::{Position, SourceRef};

/// Writer of the rejects files.
pub struct Rejects {
    dir: PathBuf,
    files: BTreeMap<String, BufWriter<File>>,
    /// Rows written, by name.
    pub counts: BTreeMap<String, u64>,
    /// Rows written, by the input file they came from (rows of no file are not counted).
    pub by_file: BTreeMap<String, u64>,
}

impl Rejects {
    /// Rejects written under `dir` (created on first use).
    pub fn new(dir: PathBuf) -> Self {
        Rejects { dir, files: BTreeMap::new(), counts: BTreeMap::new(), by_file: BTreeMap::new() }
    }

    /// Writes one rejected row of `name`.
    pub fn add(&mut self, name: &str, source: Option<&SourceRef>, reasons: &[String], body: RejectBody) -> Result<()> {
        if !self.files.contains_key(name) {
            std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
            let path = self.dir.join(format!("{name}.jsonl"));
            let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
            self.files.insert(name.to_string(), BufWriter::new(f));
        }
        let (record, raw) = match &body {
            RejectBody::Record(v) => (Some(Record::Value(v)), None),
            RejectBody::RecordText(t) => (Some(Record::Text(t)), None),
            RejectBody::Raw(s) => (None, Some(s.as_str())),
            RejectBody::Unread => (None, None),
        };
        // the reasons quote the data as found, as the record beside them keeps it: a release's
        // bytes do not depend on the environment's token (messages on stderr hide it)
        let line = Line {
            source_file: source.map(|s| s.file.as_str()),
            source_line: match source.map(|s| &s.at) {
                Some(Position::Line(n)) => json!(n),
                Some(Position::Pointer(p)) => json!(p),
                None => Value::Null,
            },
            reasons,
            record,
            raw,
        };
        let path = self.dir.join(format!("{name}.jsonl"));
        let mut text = serde_json::to_string(&line).map_err(|e| Error::io(&path, e.into()))?;
        text.push('\n');
        let w = self.files.get_mut(name).expect("opened");
        w.write_all(text.as_bytes()).map_err(|e| Error::io(&path, e))?;
        *self.counts.entry(name.to_string()).or_default() += 1;
        if let Some(s) = source {
            *self.by_file.entry(s.file.clone()).or_default() += 1;
        }
        Ok(())
    }

    /// Takes over the files and counts of `other`, a writer of other names under the same
    /// folder (rows of a source read on another thread).
    pub fn adopt(&mut self, other: Rejects) {
        for (name, w) in other.files {
            self.files.insert(name, w);
        }
        for (name, n) in other.counts {
            *self.counts.entry(name).or_default() += n;
        }
        for (file, n) in other.by_file {
            *self.by_file.entry(file).or_default() += n;
        }
    }

    /// Forgets the rows written for `name` and deletes its file (a table that is built again).
    ///
    /// Errors: [`Error::Io`] when the file cannot be deleted.
    pub fn discard(&mut self, name: &str) -> Result<()> {
        self.counts.remove(name);
        if self.files.remove(name).is_some() {
            let path = self.dir.join(format!("{name}.jsonl"));
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        }
        Ok(())
    }

    /// Deletes every file this writer wrote.
    ///
    /// Errors: [`Error::Io`] when a file cannot be deleted.
    pub fn abandon(mut self) -> Result<()> {
        let names: Vec<String> = self.files.keys().cloned().collect();
        for n in names {
            self.discard(&n)?;
        }
        Ok(())
    }

    /// Flushes every file.
    pub fn finish(mut self) -> Result<BTreeMap<String, u64>> {
        for (name, w) in self.files.iter_mut() {
            w.flush().map_err(|e| Error::io(self.dir.join(format!("{name}.jsonl")), e))?;
        }
        Ok(self.counts)
    }
}

/// One line of a rejects file, members in this order.
#[derive(serde::Serialize)]
struct Line<'a> {
    #[serde(rename = "_source_file")]
    source_file: Option<&'a str>,
    #[serde(rename = "_source_line")]
    source_line: Value,
    #[serde(rename = "_reasons")]
    reasons: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<Record<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
}

/// The `record` member of a rejects line.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Record<'a> {
    Value(&'a Value),
    Text(&'a serde_json::value::RawValue),
}

/// What a rejects line carries besides its place and reasons.
pub enum RejectBody {
    /// The row as a JSON object.
    Record(Value),
    /// The row as JSON text, written as it is (so that integers beyond 64 bits keep their
    /// digits; see [`crate::stages::ingest::convert::json_raw`]).
    RecordText(Box<serde_json::value::RawValue>),
    /// The raw text of a line that could not be parsed.
    Raw(String),
    /// A record whose text is not kept: a whole JSON document read as one record that could
    /// not be parsed (its reason says the line and column).
    Unread,
}

//! The release format: `releases/<name>/<version>/`.
//!
//! In: the files a build wrote and what it learned. Out: `manifest.json` and `SHA256SUMS`, and
//! the atomic move of the finished folder into place.
//!
//! Layout of a release:
//!
//! ```text
//! README.md                 dataset card (YAML front matter + Markdown)
//! manifest.json             this module's Manifest, pretty-printed, keys in fixed order
//! SHA256SUMS                `<sha256>  <path>` per file (every file but itself), sorted by path;
//!                           `sha256sum -c SHA256SUMS` checks it
//! data/<table>.parquet      or data/<table>-00000-of-0000N.parquet when sharded
//! jsonl/<table>.jsonl       same rows, same shards, for tables whose `formats` list "jsonl"
//! rejects/<name>.jsonl      rows set aside (see `rejects`), only when there are any
//! datapackage.json          the tables with JSON Lines copies as a Frictionless Tabular Data
//!                           Package (see [`datapackage`])
//! croissant.json            Croissant 1.1 metadata (see `stages::croissant`)
//! ```
//!
//! `manifest.json` fields (version 1):
//!
//! - `manifest_version` (integer): 1.
//! - `name`, `version` (string): the release.
//! - `runpack_version` (string): the runpack that built it.
//! - `created_at` (string or null): RFC 3339 UTC time from `SOURCE_DATE_EPOCH`; null when unset,
//!   so that builds are reproducible.
//! - `pipeline.sha256` (string): SHA-256 of the `SHA256SUMS`-style listing of the pipeline's
//!   definition files; `pipeline.files[]`: `path` (relative to the pipeline folder), `bytes`,
//!   `sha256` of `pipeline.toml`, its SQL files, schemas and card metadata.
//! - `build` (object): the options that shape the output (`on_invalid`, `max_shard_bytes`,
//!   `row_group_bytes`, `row_group_rows`, `zstd_level`, `large_cell_bytes`, the
//!   `on_duplicate_key` override, and the `sources` in order).
//! - `inputs[]`: every raw file read: `path` (relative to the pipeline folder), `bytes`,
//!   `sha256`, `sources` (the sources that read it).
//! - `tables[]`: `name`, `rows` (rows written), `rejected_rows`, `duplicates_dropped`,
//!   `schema` (the Frictionless Table Schema the rows conform to; declared, or inferred and
//!   written out), `arrow_schema[]` (`name`, `type` as in `Int64`, `List<Utf8>`), `files[]`
//!   (the table's data paths), `splits[]` (`name`, `rows`, `files`), `formats` (`parquet`,
//!   and `jsonl` when the table has copies), `nonfinite_values` (NaN and infinities by
//!   column, only columns that hold some).
//! - `files[]`: every file of the release except `manifest.json` and `SHA256SUMS`: `path`,
//!   `bytes`, `sha256`, `kind` (`parquet`, `jsonl`, `rejects`, `card`, `datapackage`,
//!   `croissant`),
//!   `table`, `rows` (for data and rejects files).
//! - `report`: counts from the build: `warnings`, `nonfinite_values` and `coerced_values` by
//!   source, `rejected_rows` (lines of each rejects file: for a table, its `rejected_rows`
//!   plus its `duplicates_dropped`, which share the file) and `duplicates_dropped` by source
//!   or table.
//!
//! Row order: the rows of a table's files (each split's, in shard order) are in ascending
//! order of [`row_order`](crate::core::schema::row_order) (nulls last; strings by their UTF-8 bytes, floats in IEEE total
//! order, JSON Pointers in `_source_line` in document order).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::core::error::{Error, Result};
use crate::core::schema::TableSchema;

/// What [`secret_held`] found in a release: the token this process holds, or text of a form
/// tokens are given out in ([`crate::core::secrets::token_forms_pattern`]), with the form's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// A secret this process holds ([`crate::core::secrets::finders`]: the Hub token).
    Token,
    /// Text of a token's form (`hf_…` of 20 characters or more, `sk-…`): its form's name.
    LooksLike(&'static str),
}

/// The first place where the files `rels` of the release folder `dir` hold a secret this
/// process holds ([`crate::core::secrets::finders`]: the Hub token), or, with `forms`, text of
/// a token's form: `path:line` in a text file, `path: column c, row r` (1-based) in a Parquet
/// file's text. Parquet files are read in record batches, their text columns (in lists and
/// structs too) searched whole; other files 1 MiB at a time.
///
/// Errors: [`Error::Io`] for a file that cannot be read; [`Error::Format`] for a Parquet file
/// that does not read.
pub fn secret_held(dir: &Path, rels: &[String], forms: bool) -> Result<Option<(String, Held)>> {
    let finders = crate::core::secrets::finders();
    if finders.is_empty() && !forms {
        return Ok(None);
    }
    // a column's values written one after the other: a form is looked for without its word
    // boundaries, and each value then on its own
    let anywhere = |bytes: &[u8]| -> bool {
        finders.iter().any(|(f, _)| f.find(bytes).is_some())
            || (forms && crate::core::secrets::token_forms_anywhere().is_match(bytes))
    };
    let found = |bytes: &[u8]| -> Option<(usize, Held)> {
        let token = finders.iter().filter_map(|(f, _)| f.find(bytes)).min().map(|at| (at, Held::Token));
        let like = if forms {
            crate::core::secrets::token_forms()
                .find(bytes)
                .map(|m| (m.start(), Held::LooksLike(crate::core::secrets::token_form_name(m.as_bytes()))))
        } else {
            None
        };
        match (token, like) {
            (Some(t), Some(l)) => Some(if l.0 < t.0 { l } else { t }),
            (t, l) => t.or(l),
        }
    };
    // the longest text a match needs whole, where 1 MiB pieces meet (a JSON Web Token may be
    // longer: its start is found all the same)
    let longest = finders.iter().map(|(f, _)| f.needle().len()).max().unwrap_or(0).max(4096);
    for rel in rels {
        let path = dir.join(rel);
        let place = if rel.ends_with(".parquet") {
            secret_in_parquet(&path, rel, &anywhere, &found)?
        } else {
            secret_in_text(&path, &found, longest)?
        };
        if let Some((place, held)) = place {
            return Ok(Some((format!("{rel}{place}"), held)));
        }
    }
    Ok(None)
}

/// What a search of bytes found: where, and what.
type Found<'a> = &'a dyn Fn(&[u8]) -> Option<(usize, Held)>;

/// `:line` of the first secret `found` finds in the file at `path`, and what, read 1 MiB at a
/// time (each piece with the `longest - 1` bytes before it, so that none is missed where
/// pieces meet).
fn secret_in_text(path: &Path, found: Found<'_>, longest: usize) -> Result<Option<(String, Held)>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let keep = longest.saturating_sub(1);
    let mut buf: Vec<u8> = Vec::with_capacity((1 << 20) + keep);
    // lines ended before `buf`'s first byte
    let mut lines = 0u64;
    loop {
        let start = buf.len();
        buf.resize(start + (1 << 20), 0);
        let n = f.read(&mut buf[start..]).map_err(|e| Error::io(path, e))?;
        buf.truncate(start + n);
        if let Some((at, held)) = found(&buf) {
            let line = lines + memchr::memchr_iter(b'\n', &buf[..at]).count() as u64 + 1;
            return Ok(Some((format!(":{line}"), held)));
        }
        if n == 0 {
            return Ok(None);
        }
        let cut = buf.len().saturating_sub(keep);
        lines += memchr::memchr_iter(b'\n', &buf[..cut]).count() as u64;
        buf.drain(..cut);
    }
}

/// `: column c, row r` of the first text value of the Parquet file at `path` in which `found`
/// finds a secret (by each row's text, for lists and structs), and what.
fn secret_in_parquet(
    path: &Path,
    rel: &str,
    anywhere: &dyn Fn(&[u8]) -> bool,
    found: Found<'_>,
) -> Result<Option<(String, Held)>> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::DataType;
    // (only the columns that hold text, in lists and structs too: numbers are not decoded)
    fn has_text(dt: &DataType) -> bool {
        match dt {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView => true,
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => has_text(f.data_type()),
            DataType::Struct(fs) => fs.iter().any(|f| has_text(f.data_type())),
            DataType::Dictionary(_, v) => has_text(v),
            DataType::Map(f, _) => has_text(f.data_type()),
            _ => false,
        }
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::format(rel, e))?;
    let text: Vec<usize> =
        builder.schema().fields().iter().enumerate().filter(|(_, f)| has_text(f.data_type())).map(|(i, _)| i).collect();
    if text.is_empty() {
        return Ok(None);
    }
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), text);
    let reader = builder.with_projection(mask).build().map_err(|e| Error::format(rel, e))?;
    // whether any text in `data` (its buffers, and its children's) may hold a secret
    fn holds(data: &arrow::array::ArrayData, anywhere: &dyn Fn(&[u8]) -> bool) -> bool {
        let buffers = data.buffers();
        // a view of 12 bytes or fewer is inline, too short for a secret: the data buffers hold the rest
        let searched = match data.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                buffers.get(1..2).unwrap_or(&[])
            }
            DataType::Utf8View | DataType::BinaryView => buffers.get(1..).unwrap_or(&[]),
            _ => &[],
        };
        searched.iter().any(|b| anywhere(b.as_slice())) || data.child_data().iter().any(|c| holds(c, anywhere))
    }
    let mut first_row = 1u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::format(rel, e))?;
        for (i, col) in batch.columns().iter().enumerate() {
            if !holds(&col.to_data(), anywhere) {
                continue;
            }
            let name = batch.schema().field(i).name().clone();
            // the row: of a text column by its values, of a list or struct by each row's text
            let hit = match arrow::compute::cast(col, &DataType::Utf8) {
                Ok(t) => (0..t.len())
                    .filter(|&r| t.is_valid(r))
                    .find_map(|r| found(t.as_string::<i32>().value(r).as_bytes()).map(|(_, h)| (r, h))),
                Err(_) => {
                    arrow::util::display::ArrayFormatter::try_new(col.as_ref(), &Default::default()).ok().and_then(
                        |f| (0..col.len()).find_map(|r| found(f.value(r).to_string().as_bytes()).map(|(_, h)| (r, h))),
                    )
                }
            };
            // (values written one after the other that only together look like a token)
            let Some((r, held)) = hit else { continue };
            let place = format!(": column {name}, row {}", first_row + r as u64);
            return Ok(Some((place, held)));
        }
        first_row += batch.num_rows() as u64;
    }
    Ok(None)
}

/// Current manifest format version.
pub const MANIFEST_VERSION: u32 = 1;

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version (1).
    pub manifest_version: u32,
    /// Release name.
    pub name: String,
    /// Release version.
    pub version: String,
    /// runpack version that wrote it.
    pub runpack_version: String,
    /// Build time from `SOURCE_DATE_EPOCH` (RFC 3339 UTC), else null.
    pub created_at: Option<String>,
    /// The pipeline definition.
    pub pipeline: PipelineInfo,
    /// Options that shaped the output.
    pub build: BTreeMap<String, serde_json::Value>,
    /// Raw inputs.
    pub inputs: Vec<InputEntry>,
    /// Tables.
    pub tables: Vec<TableEntry>,
    /// Every file of the release except `manifest.json` and `SHA256SUMS`.
    pub files: Vec<FileEntry>,
    /// Counts from the build.
    pub report: ReportSummary,
}

/// `manifest.pipeline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineInfo {
    /// SHA-256 of the listing of `files` (`<sha256>  <path>\n` lines).
    pub sha256: String,
    /// Definition files.
    pub files: Vec<HashedPath>,
}

/// A path with its size and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashedPath {
    /// Relative path, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
}

/// `manifest.inputs[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputEntry {
    /// Path relative to the pipeline folder.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
    /// Sources that read it.
    pub sources: Vec<String>,
}

/// `manifest.tables[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    /// Table name (= card config name).
    pub name: String,
    /// Rows written.
    pub rows: u64,
    /// Rows in `rejects/<name>.jsonl` because they failed validation.
    pub rejected_rows: u64,
    /// Rows dropped by the duplicate-key rule (also in the rejects file).
    pub duplicates_dropped: u64,
    /// Duplicate-key rule used (`error`, `keep-last`, `keep-first`).
    pub on_duplicate_key: String,
    /// The schema the rows conform to.
    pub schema: TableSchema,
    /// Arrow view of the schema.
    pub arrow_schema: Vec<ArrowField>,
    /// Data files (Parquet), relative to the release.
    pub files: Vec<String>,
    /// The table's splits (one `train` split unless the table has a split column).
    pub splits: Vec<SplitEntry>,
    /// The column whose value names each row's split (the pipeline's `split_column`), when
    /// the table has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_column: Option<String>,
    /// The formats the table is written in: `parquet`, and `jsonl` when it has JSON Lines
    /// copies. A manifest written before copies were a choice has every table in both.
    #[serde(default = "both_formats")]
    pub formats: Vec<String>,
    /// NaN, +Infinity and -Infinity values in the table's Parquet files, by column (columns
    /// without any left out). The JSON Lines copies hold `null` in their place.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nonfinite_values: BTreeMap<String, crate::stages::write::NonFiniteCount>,
}

fn both_formats() -> Vec<String> {
    vec!["parquet".into(), "jsonl".into()]
}

impl TableEntry {
    /// Whether the table has JSON Lines copies (`jsonl/`).
    pub fn has_copies(&self) -> bool {
        self.formats.iter().any(|f| f == "jsonl")
    }
}

/// `manifest.tables[].splits[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitEntry {
    /// Split name (`train`, `eval_gsm8k`, `test.v2`).
    pub name: String,
    /// Rows in the split.
    pub rows: u64,
    /// The split's Parquet files.
    pub files: Vec<String>,
}

/// One Arrow field, for readers that do not speak Table Schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrowField {
    /// Column name.
    pub name: String,
    /// Arrow type (`Int64`, `List<Utf8>`, `Timestamp(Microsecond, "UTC")`).
    #[serde(rename = "type")]
    pub data_type: String,
}

/// `manifest.files[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the release folder.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
    /// `parquet`, `jsonl`, `rejects`, `card`, `datapackage` or `croissant`.
    pub kind: String,
    /// Table or source the file belongs to.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub table: Option<String>,
    /// Rows (data and rejects files).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rows: Option<u64>,
}

/// `manifest.report`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportSummary {
    /// Warnings issued.
    pub warnings: u64,
    /// Non-finite values read, by source.
    pub nonfinite_values: BTreeMap<String, u64>,
    /// Strings coerced (opt-in): to numbers, or to null by a field's `missingValues`, by source.
    pub coerced_values: BTreeMap<String, u64>,
    /// Lines of each rejects file (`rejects/<name>.jsonl`), by source or table: for a table,
    /// the rows that failed validation ([`TableEntry::rejected_rows`]) plus the rows a
    /// duplicate-key rule superseded ([`TableEntry::duplicates_dropped`]), which share the file.
    pub rejected_rows: BTreeMap<String, u64>,
    /// Rows dropped by duplicate-key rules, by table.
    pub duplicates_dropped: BTreeMap<String, u64>,
}

impl Manifest {
    /// Reads `<dir>/manifest.json`.
    ///
    /// Errors: [`Error::Io`] when missing, [`Error::Config`] with line and column when it is
    /// not a valid manifest, or with the JSON pointer of a table's schema that is no schema
    /// runpack writes (an unknown type, a key naming no field: [`TableSchema::check`]), so that
    /// nothing reads a table by a schema it cannot hold, or at `/manifest_version` when it is
    /// not [`MANIFEST_VERSION`].
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| Error::json_file(path.display(), &e))?;
        // another version's fields may mean other things: read as this one's, they would mislead
        if m.manifest_version != MANIFEST_VERSION {
            return Err(Error::config(
                format!("{}:/manifest_version", path.display()),
                format!(
                    "manifest version {} is not the one this runpack reads ({MANIFEST_VERSION}); read the release with \
                     the runpack that wrote it",
                    m.manifest_version
                ),
            ));
        }
        for (i, t) in m.tables.iter().enumerate() {
            t.schema.check_at().map_err(|(at, e)| {
                Error::config(format!("{}:/tables/{i}/schema{at}", path.display()), format!("table {}: {e}", t.name))
            })?;
        }
        Ok(m)
    }

    /// The manifest as written: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("serializable");
        s.push('\n');
        s
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Option<&TableEntry> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// `datapackage.json`: the release's tables as a Frictionless Tabular Data Package (Data
/// Package spec v1, <https://specs.frictionlessdata.io/tabular-data-package/>), so that
/// Frictionless tools (`frictionless validate datapackage.json`) can check the JSON Lines copies
/// against the schemas, primary and foreign keys included.
///
/// One resource per table with JSON Lines copies, named after it, in the manifest's table
/// order (a table written as Parquet alone is left out: Frictionless does not read its nested
/// columns from Parquet). `path` is the table's
/// JSON Lines file (a list of its shards or split files, in path order; empty files left out),
/// `format` `jsonl`, and `schema` the table's Table Schema with `missingValues: []` (a null is
/// JSON `null`; the empty string is a value, such as the JSON pointer of a whole document in
/// `_source_line`). A table without rows gets inline `data` of its header row alone instead of
/// a path. `title` is the card's `pretty_name`,
/// `licenses` its `license` (a Hugging Face license id), when given.
pub fn datapackage(manifest: &Manifest, title: Option<&str>, license: Option<&str>) -> String {
    use serde_json::{Map, Value, json};
    let mut pkg = Map::new();
    pkg.insert("profile".into(), "tabular-data-package".into());
    pkg.insert("name".into(), manifest.name.clone().into());
    pkg.insert("version".into(), manifest.version.clone().into());
    if let Some(t) = title {
        pkg.insert("title".into(), t.into());
    }
    if let Some(l) = license {
        pkg.insert("licenses".into(), json!([{ "name": l }]));
    }
    let resources: Vec<Value> = manifest
        .tables
        .iter()
        .filter(|t| t.has_copies())
        .map(|t| {
            let mut r = Map::new();
            r.insert("name".into(), t.name.clone().into());
            r.insert("profile".into(), "tabular-data-resource".into());
            let paths: Vec<&str> = manifest
                .files
                .iter()
                .filter(|f| f.kind == "jsonl" && f.table.as_deref() == Some(t.name.as_str()) && f.rows != Some(0))
                .map(|f| f.path.as_str())
                .collect();
            match paths.as_slice() {
                [] => {
                    // inline data: the header row alone
                    let header: Vec<Value> = t.schema.fields.iter().map(|f| Value::from(f.name.as_str())).collect();
                    r.insert("data".into(), json!([header]));
                }
                [one] => {
                    r.insert("path".into(), (*one).into());
                }
                many => {
                    r.insert("path".into(), many.iter().map(|p| Value::from(*p)).collect());
                }
            }
            if !paths.is_empty() {
                r.insert("format".into(), "jsonl".into());
                r.insert("encoding".into(), "utf-8".into());
            }
            r.insert("schema".into(), resource_schema(manifest, t));
            Value::Object(r)
        })
        .collect();
    pkg.insert("resources".into(), resources.into());
    serde_json::to_string_pretty(&Value::Object(pkg)).expect("JSON values serialize") + "\n"
}

/// The Table Schema of table `t`'s resource in the data package of `manifest`: its
/// [`package_schema`], without the foreign keys to tables the package leaves out (tables
/// without JSON Lines copies), which Frictionless could not resolve.
pub fn resource_schema(manifest: &Manifest, t: &TableEntry) -> serde_json::Value {
    let mut schema = t.schema.clone();
    schema.foreign_keys.retain(|fk| {
        fk.reference.resource.is_empty()
            || fk.reference.resource == t.name
            || manifest.table(&fk.reference.resource).is_some_and(TableEntry::has_copies)
    });
    package_schema(&schema)
}

/// The Table Schema of a data package resource over a table's JSON Lines copies: the
/// table's schema with `"missingValues": []` (an empty string is a value), and without the
/// `enum` of a column kept as JSON text (`any`, `object` without `fields`): such a column is a
/// string in the copies, which Frictionless readers would hold against the enum's values,
/// where runpack checks the enum by JSON value.
pub fn package_schema(schema: &crate::core::schema::TableSchema) -> serde_json::Value {
    let mut described = schema.clone();
    for f in &mut described.fields {
        if f.is_json_text() {
            f.constraints.enum_values = None;
        }
        if let Some(items) = f.items.as_deref_mut().filter(|i| i.is_json_text()) {
            items.constraints.enum_values = None;
        }
    }
    package_schema_as_is(&described)
}

/// The table's schema with `"missingValues": []` and nothing left out: what packages held
/// before [`package_schema`] left out the `enum` of JSON text columns (Frictionless refuses
/// them; `verify` says so).
pub fn package_schema_as_is(schema: &crate::core::schema::TableSchema) -> serde_json::Value {
    let mut out = serde_json::to_value(schema).unwrap_or_else(|_| serde_json::json!({}));
    if let serde_json::Value::Object(o) = &mut out {
        o.insert("missingValues".into(), serde_json::json!([]));
    }
    out
}

/// `SHA256SUMS` text for `entries` (`<sha256>  <path>` lines, sorted by path).
pub fn sha256sums(entries: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = entries.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted.iter().map(|(path, sha)| format!("{sha}  {path}\n")).collect()
}

/// Why `path` is no [`safe_relative`] path, for messages: it leaves the release (absolute, or
/// with `..`), or it is not written in the one form a release uses (`.` or empty parts, a
/// backslash or `:`).
pub fn unsafe_path_reason(path: &str) -> &'static str {
    if path.starts_with('/') || path.split(['/', '\\']).any(|s| s == "..") {
        "leaves the release folder"
    } else {
        "is not a plain relative path (`dir/file`, without `.` or empty parts, a backslash or `:`)"
    }
}

/// Whether `dir` is a release folder runpack wrote: it holds `manifest.json` and
/// `SHA256SUMS` (so that a folder of raw files read by `init` or looked at by a build's note of
/// unread files is told from one).
pub fn is_release_folder(dir: &std::path::Path) -> bool {
    dir.join("manifest.json").is_file() && dir.join("SHA256SUMS").is_file()
}

/// True when a manifest path stays inside the release folder (relative, no `..`, no `\`).
pub fn safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains(':')
        && path.split('/').all(|s| !s.is_empty() && s != ".." && s != ".")
}

/// A release being built in a hidden folder beside its final place. Dropped without
/// [`Staging::commit`] (a build that failed), it removes the staging folder and the folders
/// it created to hold it, when they are empty.
///
/// Leftovers of killed builds: a build holds a shared lock (`flock`) on the release name's
/// folder (`releases/<name>/`) from [`Staging::new`] until it ends; the kernel drops it when
/// the process dies, `kill -9` included. A build that can take the lock exclusively is the only
/// build of that release name running, so every hidden `.<version>.building-*` and
/// `.<version>.replaced-*` folder there belongs to a build that is gone: it removes them
/// before it starts. While another build of the name runs they are left for the next build.
/// Where a folder cannot be locked (a platform without `flock` on folders), nothing is removed.
pub struct Staging {
    dir: Option<tempfile::TempDir>,
    target: PathBuf,
    /// Folders that did not exist before this build, deepest first.
    created: Vec<PathBuf>,
    /// The release name's folder, held with a shared lock while this build runs.
    _lock: Option<std::fs::File>,
}

impl Drop for Staging {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        drop(dir);
        for d in &self.created {
            // a folder something else wrote into meanwhile is not empty, and stays
            if std::fs::remove_dir(d).is_err() {
                break;
            }
        }
    }
}

impl Staging {
    /// Prepares `target` (`releases/<name>/<version>`): refuses an existing release unless
    /// `force`, and with `force` one whose folder holds what the release did not write
    /// ([`foreign_entries`]); removes leftovers of builds that were killed (see [`Staging`]),
    /// creates the staging folder.
    pub fn new(target: &Path, force: bool) -> Result<Staging> {
        if target.exists() && !force {
            return Err(Error::Refused(format!(
                "{} already exists; pass --force to replace it, or build another --release-version",
                target.display()
            )));
        }
        refuse_foreign(target)?;
        let parent = target.parent().ok_or_else(|| Error::Refused("release path has no parent".into()))?;
        // the folders this build makes (`releases/`, `releases/<name>/`), deepest first, so that
        // a build that fails leaves none of them behind
        let created: Vec<PathBuf> = parent
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let lock = lock_release_name(parent)?;
        let stem = target.file_name().expect("version").to_string_lossy().to_string();
        let dir = tempfile::Builder::new()
            .prefix(&format!(".{stem}.building-{}-", std::process::id()))
            .tempdir_in(parent)
            .map_err(|e| Error::io(parent, e))?;
        Ok(Staging { dir: Some(dir), target: target.to_path_buf(), created, _lock: lock })
    }

    /// The staging folder.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("not committed").path()
    }

    /// Moves the finished release into place (replacing an old one only when `force`) and
    /// returns its path.
    ///
    /// An existing release is replaced by swapping the two folders in one step
    /// (`renameat2(RENAME_EXCHANGE)` on Linux): at every instant the version's folder holds
    /// either the old release or the new one, whole. The old copy, now under the staging
    /// folder's hidden name, is then removed; a build killed before that is done leaves it to
    /// the next build (see [`Staging`]). Where the swap is not available (other systems, a
    /// file system that refuses it), the old release is renamed to a hidden
    /// `.<version>.replaced-<pid>` folder and the new one renamed into place: a build killed
    /// between the two renames leaves the version missing, its old copy in the hidden folder.
    ///
    /// Errors: [`Error::Refused`] when another build put a release there meanwhile and `force`
    /// is not set (the staging folder is removed); [`Error::Io`] when a rename fails (the
    /// version's folder then holds what it held before).
    pub fn commit(mut self, force: bool) -> Result<PathBuf> {
        if self.target.exists() && !force {
            return Err(Error::Refused(format!(
                "{} appeared while this build ran (another build of the same version?); pass --force to replace it",
                self.target.display()
            )));
        }
        // what appeared meanwhile is never removed
        refuse_foreign(&self.target)?;
        // the release's bytes are on disk before it takes the version's place, and the folder
        // that holds it names it before an old copy is removed: a power loss leaves the old
        // release or the new one whole, as a killed process does
        let staged = self.path().to_path_buf();
        sync_tree(&staged).map_err(|e| Error::io(&staged, e))?;
        let parent = self.target.parent().expect("a release folder has a parent").to_path_buf();
        let dir = self.dir.take().expect("not committed").keep();
        pause_at("commit-staged");
        if !self.target.exists() {
            std::fs::rename(&dir, &self.target).map_err(|e| Error::io(&dir, e))?;
            sync_folder(&parent).map_err(|e| Error::io(&parent, e))?;
            pause_at("commit-renamed");
            return Ok(self.target.clone());
        }
        let old = match exchange(&dir, &self.target) {
            // `dir` now holds the old release
            Ok(true) => {
                pause_at("commit-exchanged");
                dir
            }
            Ok(false) => {
                let old = self.target.with_file_name(format!(
                    ".{}.replaced-{}",
                    self.target.file_name().expect("name").to_string_lossy(),
                    std::process::id()
                ));
                std::fs::rename(&self.target, &old).map_err(|e| Error::io(&self.target, e))?;
                std::fs::rename(&dir, &self.target).map_err(|e| Error::io(&dir, e))?;
                old
            }
            // the old release went away meanwhile: the new one takes its place
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !self.target.exists() => {
                std::fs::rename(&dir, &self.target).map_err(|e| Error::io(&dir, e))?;
                sync_folder(&parent).map_err(|e| Error::io(&parent, e))?;
                return Ok(self.target.clone());
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(Error::io(&self.target, e));
            }
        };
        sync_folder(&parent).map_err(|e| Error::io(&parent, e))?;
        // the new release is in place: an old copy that cannot be removed now is a leftover
        // that the next build removes, not a failed build
        if let Err(e) = remove_entry(&old) {
            tracing::warn!("the replaced release in {} was not removed: {e}", old.display());
        }
        pause_at("commit-old-removed");
        Ok(self.target.clone())
    }
}

/// Writes every file and folder under `dir` to disk (`fsync`), files before the folders that
/// hold them.
fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for e in walkdir::WalkDir::new(dir).contents_first(true) {
        let e = e.map_err(std::io::Error::other)?;
        if e.file_type().is_file() {
            std::fs::File::open(e.path())?.sync_all()?;
        } else if e.file_type().is_dir() {
            sync_folder(e.path())?;
        }
    }
    Ok(())
}

/// Writes folder `dir`'s entries to disk (`fsync` of the folder), where the system allows it.
fn sync_folder(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The files of the release in folder `target`, as its `manifest.json` lists them (or, when
/// that cannot be read, its `SHA256SUMS`), with those two; `None` when neither can be read.
fn release_listing(target: &Path) -> Option<BTreeSet<String>> {
    let mut listed: BTreeSet<String> = ["manifest.json", "SHA256SUMS"].map(String::from).into();
    match Manifest::load(target) {
        Ok(m) => listed.extend(m.files.into_iter().map(|f| f.path)),
        // a manifest that cannot be read: the sums list the same files
        Err(_) => {
            let sums = std::fs::read_to_string(target.join("SHA256SUMS")).ok()?;
            listed.extend(
                sums.lines().filter_map(|l| l.split_once("  ")).map(|(_, p)| p.trim_start_matches('*').to_string()),
            );
        }
    }
    Some(listed)
}

/// What replacing the release in folder `target` would remove that the release did not write:
/// the entries (files, links, folders such as a clone's `.git/`, whole) that neither its
/// `manifest.json` nor its `SHA256SUMS` lists, besides those two, as `/`-separated paths
/// (folders end with `/`), sorted. Every entry of a folder whose listing cannot be read is one.
pub fn foreign_entries(target: &Path) -> Vec<String> {
    let listed = release_listing(target).unwrap_or_default();
    let folders: BTreeSet<String> =
        listed.iter().flat_map(|p| p.match_indices('/').map(|(i, _)| p[..i].to_string()).collect::<Vec<_>>()).collect();
    // every entry but folders is looked at (an empty folder holds nothing to lose); one under a
    // folder the release does not have is named by that folder (`.git/`)
    let mut out: Vec<String> = Vec::new();
    for e in walkdir::WalkDir::new(target).min_depth(1).sort_by_file_name() {
        let (rel, dir) = match &e {
            Ok(e) => (crate::core::names::relative_path(target, e.path()), e.file_type().is_dir()),
            // what cannot be read cannot be told to be the release's
            Err(err) => (err.path().map(|p| crate::core::names::relative_path(target, p)).unwrap_or_default(), false),
        };
        if dir || rel.is_empty() || listed.contains(&rel) {
            continue;
        }
        let ancestors = rel.match_indices('/').map(|(i, _)| &rel[..i]);
        let named = match ancestors.into_iter().find(|a| !folders.contains(*a)) {
            Some(folder) => format!("{folder}/"),
            None => rel.clone(),
        };
        if out.last() != Some(&named) {
            out.push(named);
        }
    }
    out
}

/// Refuses to replace what is at `target` unless it is a release folder that holds only what
/// its release wrote ([`foreign_entries`]): a build removes only the files it wrote.
///
/// Errors: [`Error::Refused`] for a link, a file, a folder whose listing cannot be read, or
/// one that holds other entries (the first ten named).
fn refuse_foreign(target: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(target) else { return Ok(()) };
    let shown = target.display();
    if meta.is_symlink() {
        return Err(Error::Refused(format!(
            "{shown} is a symbolic link; --force replaces only a release folder runpack wrote, not a link or what \
             it points to: remove the link, or build another --release-version"
        )));
    }
    if !meta.is_dir() {
        return Err(Error::Refused(format!(
            "{shown} is no folder; --force replaces only a release folder runpack wrote"
        )));
    }
    let empty = std::fs::read_dir(target).map(|mut d| d.next().is_none()).unwrap_or(false);
    if !empty && release_listing(target).is_none() {
        return Err(Error::Refused(format!(
            "{shown} holds no readable manifest.json or SHA256SUMS, so which of its files the release wrote cannot \
             be told; --force removes nothing else: move the folder away, or build another --release-version"
        )));
    }
    let foreign = foreign_entries(target);
    if foreign.is_empty() {
        return Ok(());
    }
    let first: Vec<&str> = foreign.iter().take(10).map(String::as_str).collect();
    let more = foreign.len() - first.len();
    Err(Error::Refused(format!(
        "{shown} holds what its release did not write: {}{}; --force replaces only the release's own files (those \
         manifest.json and SHA256SUMS list), and removes nothing else: move these out of the folder first",
        first.join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() }
    )))
}

/// Test hook: when the environment variable `RUNPACK_TEST_PAUSE_AT` names `step`, says
/// `runpack: paused at <step>` on stderr and sleeps until the process is killed. The
/// integration tests use it to kill a build (SIGKILL) at each step of a release's commit and
/// check that the release is still there and verifies; users have no use for it. Unset, it
/// does nothing.
fn pause_at(step: &str) {
    if std::env::var_os("RUNPACK_TEST_PAUSE_AT").is_some_and(|s| s == step) {
        // the library prints nothing, but this line is the hook's whole point: the test waits for it
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "runpack: paused at {step}");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// Swaps the folders `a` and `b` in one step: `Ok(true)` when done, `Ok(false)` when this
/// system or file system cannot (the caller renames instead).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: both paths are NUL-terminated strings that live across the call
    let rc =
        unsafe { libc::renameat2(libc::AT_FDCWD, ca.as_ptr(), libc::AT_FDCWD, cb.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // the kernel or the file system has no RENAME_EXCHANGE
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => Ok(false),
        _ => Err(e),
    }
}

/// Swaps the folders `a` and `b` in one step: not available here (the caller renames).
#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<bool> {
    Ok(false)
}

/// Takes the lock of a build on the release name's folder `parent` (see [`Staging`]): first
/// exclusively, to remove the leftovers of builds that are gone when no other build of the name
/// runs, then shared, for the rest of the build. `None` where folders cannot be locked.
///
/// Errors: [`Error::Io`] when waiting for the shared lock fails.
fn lock_release_name(parent: &Path) -> Result<Option<std::fs::File>> {
    let Ok(f) = std::fs::File::open(parent) else { return Ok(None) };
    match f.try_lock() {
        Ok(()) => {
            remove_leftovers(parent);
        }
        // another build of this release name runs: its hidden folders may be in use
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(_)) => return Ok(None),
    }
    // a build that holds the lock exclusively is removing leftovers: wait for it
    f.lock_shared().map_err(|e| Error::io(parent, e))?;
    Ok(Some(f))
}

/// Removes the leftovers of killed builds beside the release `target`
/// (`releases/<name>/<version>`) when no other build of its name runs (see [`Staging`]): what
/// a build that writes nothing does (its release up to date, or refused), as one that writes
/// does before it starts. Does nothing where the folder cannot be locked, or is not there.
pub fn remove_killed_builds(target: &Path) {
    // the lock a build takes, let go at once
    if let Some(parent) = target.parent() {
        let _ = lock_release_name(parent);
    }
}

/// Removes the hidden folders of builds that are gone from the release name's folder:
/// `.<version>.building-<pid>-<random>` (a staging folder, or the old copy a swap left there)
/// and `.<version>.replaced-<pid>` (an old copy renamed away). Called only while no other build
/// of the release name runs.
fn remove_leftovers(parent: &Path) {
    let Ok(rd) = std::fs::read_dir(parent) else { return };
    // only the names a build gives them (`.<version>.building-<pid>-<random>`,
    // `.<version>.replaced-<pid>`): a hidden folder of the user's is never removed
    let leftover =
        regex::Regex::new(r"^\.[^/]+\.(building-[0-9]+-[A-Za-z0-9]+|replaced-[0-9]+)$").expect("static pattern");
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let ours = leftover.is_match(&name);
        if ours && let Err(err) = remove_entry(&e.path()) {
            tracing::warn!("a killed build's folder {} was not removed: {err}", e.path().display());
        }
    }
}

/// Removes `path`, a folder with what it holds, or a file or link (a version's path that was
/// a file, swapped away by a forced build).
fn remove_entry(path: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) }
}

/// True when `path` is a symbolic link (through any number of links) to a regular file in the
/// `blobs/` folder of a Hugging Face cache: a repo's `blobs/<etag>` beside its `snapshots/`, or
/// the cache-wide `blobs/<xx>/<hash>` store of huggingface_hub 2.4 (marked by
/// `.huggingface-shared-blobs`). The files of a snapshot folder are such links (hub-docs
/// `local-cache.md`).
pub fn cache_blob_link(path: &Path) -> bool {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        return false;
    }
    let Ok(target) = std::fs::canonicalize(path) else { return false };
    if !std::fs::metadata(&target).is_ok_and(|m| m.is_file()) {
        return false;
    }
    target.ancestors().skip(1).take(2).any(|a| {
        a.file_name().is_some_and(|n| n == "blobs")
            && a.parent().is_some_and(|r| r.join("snapshots").is_dir() || r.join(".huggingface-shared-blobs").exists())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_across_two_pieces_of_a_text_file_is_found_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "hf_PIECESCANTEST0123456789";
        crate::core::secrets::remember(secret, "<token>");
        // the secret starts 5 bytes before the first MiB ends, on line 3; and in lower case
        let head = format!("a\nb\n{}", "x".repeat((1 << 20) - 9));
        std::fs::write(dir.path().join("f.jsonl"), format!("{head}{secret}\n")).unwrap();
        std::fs::write(dir.path().join("g.md"), format!("one\n{}\n", secret.to_ascii_lowercase())).unwrap();
        std::fs::write(dir.path().join("h.md"), "nothing here\n").unwrap();
        let rels = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let held = |r: &[&str], forms| super::secret_held(dir.path(), &rels(r), forms).unwrap();
        assert_eq!(held(&["h.md", "f.jsonl"], false), Some(("f.jsonl:3".into(), super::Held::Token)));
        assert_eq!(held(&["g.md"], false), Some(("g.md:2".into(), super::Held::Token)));
        assert_eq!(held(&["h.md"], true), None);
        // another token's form, where asked for
        std::fs::write(dir.path().join("k.md"), "a\nkey: sk-proj-abcdefghijklmnopqrstuvwxyz\n").unwrap();
        assert_eq!(held(&["k.md"], false), None);
        assert_eq!(held(&["k.md"], true), Some(("k.md:2".into(), super::Held::LooksLike("an API key (sk-…)"))));
    }

    #[test]
    fn relative_paths_are_checked() {
        assert!(safe_relative("data/a.parquet"));
        assert!(!safe_relative("../x"));
        assert!(!safe_relative("/etc/passwd"));
        assert!(!safe_relative("data/../../x"));
        assert_eq!(sha256sums(&[("b".into(), "2".into()), ("a".into(), "1".into())]), "1  a\n2  b\n");
    }
}

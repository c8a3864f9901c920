//! `verify --data`: every row of a release read back ([`check_data`]).
//!
//! In: a release folder and its manifest. Out: problem lines added to a [`VerifyReport`]: pages
//! that do not decode, statistics that do not bound their values, rows that break their
//! table's schema or key order or split, NaN stored with its sign bit set, and JSON Lines
//! copies that are not their Parquet rows.

use crate::core::progress::{Progress, Unit};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow::array::Array;
use arrow::record_batch::RecordBatch;

use super::{ProblemKind, VerifyReport};
use crate::core::error::{Error, Result};
use crate::core::numbers;
use crate::core::schema::schema_diff;
use crate::stages::ingest::files::lfs_pointer;
use crate::stages::release::{Manifest, safe_relative};

/// Rows per record batch read by [`check_data`], at most.
pub const DATA_BATCH_ROWS: usize = 8192;

/// Uncompressed bytes per record batch read by [`check_data`], about: a row group of large
/// cells is read a few rows at a time (bounded memory, and no string array beyond 2 GiB).
pub const DATA_BATCH_BYTES: u64 = 32 << 20;

/// Reads every row of every table of manifest `m` (each after the tables its foreign keys
/// refer to, as a build orders them), a row group at a time, in record batches of at most [`DATA_BATCH_ROWS`] rows
/// and about [`DATA_BATCH_BYTES`]:
///
/// - each Parquet file's pages are decoded (a page that does not decode is named with the
///   row it starts after), and each row group's statistics of a scalar column must bound its
///   values (min ≤ every value ≤ max, NaN aside, and the null count), as readers that skip
///   row groups by them trust they do;
/// - each table's rows are checked against its Table Schema as a build checks them: types,
///   `required`, constraints (`minimum`, `pattern`, `enum`, `unique`, …), the `primaryKey`
///   and the `foreignKeys` (one that cannot be checked, to a table the manifest does not
///   define or in a cycle, is a problem); rows must come in the table's key order within each
///   split, as a build writes them (so a key given twice in a split is two neighbouring rows,
///   which the key check finds), each row's split must be its file's, and a key given in two
///   splits is found by the keys held (up to [`SPLIT_KEYS_BYTES`]); a violation is named by the
///   row's raw input (`_source_file`, `_source_line`), or, for a table without them, by the
///   Parquet file and row;
/// - each JSON Lines copy (`jsonl/<stem>.jsonl` of `data/<stem>.parquet`) must be,
///   byte for byte, the rows of its Parquet file as a build writes them (`null` for a NaN or
///   infinity): the first line that differs is named, with the row; copies an earlier runpack
///   wrote, with the strings `"NaN"`, `"Infinity"`, `"-Infinity"`, are read as such;
/// - the NaN, +Infinity and -Infinity values of each column of a table's Parquet files must
///   be those the manifest counts (`nonfinite_values`), so that a `null` in a copy stands for
///   exactly the non-finite values the manifest announces.
///
/// Files that are missing, unreadable or whose checksum differs are reported by the other
/// checks; a table with such a file, or whose files' columns are not its schema's, is named
/// as not read. Memory stays bounded by a batch, the primary key's last group and the key
/// sets foreign keys refer to.
///
/// Errors: [`Error::Io`] when the temporary folder the validator needs cannot be made.
///
/// Progress: one `reading rows` step, out of the rows the manifest counts, named after the
/// table being read.
pub fn check_data(dir: &Path, m: &Manifest, rep: &mut VerifyReport, progress: &dyn Progress) -> Result<()> {
    progress.start("reading rows", Unit::Rows, Some(m.tables.iter().map(|t| t.rows).sum()));
    let checked = check_tables(dir, m, rep, progress);
    progress.finish();
    checked
}

/// The checks of [`check_data`].
fn check_tables(dir: &Path, m: &Manifest, rep: &mut VerifyReport, progress: &dyn Progress) -> Result<()> {
    use crate::stages::validate::{KeySet, Validator};
    // the column sets later tables' foreign keys refer to
    let referenced = crate::core::schema::referenced_columns(m.tables.iter().map(|t| (t.name.as_str(), &t.schema)));
    let work = tempfile::tempdir().map_err(|e| Error::io("temporary folder", e))?;
    rep.rows_checked = Some(0);
    let mut key_sets: BTreeMap<(String, Vec<String>), KeySet> = BTreeMap::new();
    for t in referenced_first(m) {
        let files: Vec<&String> = t.files.iter().collect();
        let unreadable = |f: &str| -> Option<&str> {
            if !safe_relative(f) {
                Some("it lies outside the release")
            } else if !dir.join(f).is_file() {
                Some("it is missing or not a regular file")
            } else if lfs_pointer(&dir.join(f)).is_some() {
                Some("it is a Git LFS pointer, not the file")
            } else {
                None
            }
        };
        if let Some((f, why)) = files.iter().find_map(|f| unreadable(f).map(|why| (f, why))) {
            rep.push(ProblemKind::Rows, format!("table {}: rows not read from its file {f}: {why}", t.name));
            continue;
        }
        let schema = checkable_schema(m, t, &key_sets, rep);
        let declared = schema.arrow_schema();
        // rows are placed by their raw input, or else by the release's file and row
        let placed = ["_source_file", "_source_line"].iter().all(|c| declared.field_with_name(c).is_ok());
        let arrow = if placed { declared.clone() } else { with_place_fields(&declared) };
        let mut validator = match Validator::new(
            &t.name,
            &schema,
            arrow.clone(),
            crate::core::spec::DuplicatePolicy::Error,
            crate::stages::ingest::OnInvalid::Fail,
            &key_sets,
            referenced.get(&t.name).cloned().unwrap_or_default(),
        ) {
            Ok(v) => v,
            Err(e) => {
                rep.push(ProblemKind::Rows, format!("table {}: its rows cannot be checked: {e}", t.name));
                continue;
            }
        };
        // each row's split is one of the table's, and the one of the file it is in
        let split_column = t.split_column.as_ref().and_then(|c| declared.index_of(c).ok());
        if let Some(ci) = split_column {
            validator = validator.with_split(ci, t.splits.iter().map(|s| s.name.clone()).collect());
        }
        progress.rename(&format!("reading rows of table {}", t.name));
        let mut scan = TableScan::new(progress, t, &schema, &declared, placed, work.path());
        let mut read = true;
        let split_of = |f: &str| t.splits.iter().find(|s| s.files.iter().any(|x| x == f)).map(|s| s.name.as_str());
        let mut split = None;
        for f in &files {
            // each split's files are in key order on their own
            if split != Some(split_of(f)) {
                split = Some(split_of(f));
                if let Some((check, cols)) = &mut scan.order {
                    *check = crate::stages::sort::OrderCheck::new(&declared, cols.clone());
                }
            }
            let expected = split_column.zip(split_of(f));
            // a damaged page or footer can make the readers panic, or a damaged manifest
            // make the checks fail: the file's problem, with the others found kept
            match crate::core::error::catch_panic(|| scan.read_file(dir, f, expected, &mut validator, rep)) {
                Ok(Ok(r)) => read &= r,
                Ok(Err(e)) => {
                    rep.push(ProblemKind::Unreadable, format!("{f}: rows not all read: {e}"));
                    read = false;
                }
                Err(panic) => {
                    rep.push(
                        ProblemKind::Unreadable,
                        format!("{f}: rows not all read: the Parquet reader stopped on {panic}"),
                    );
                    read = false;
                }
            }
        }
        if !read {
            rep.push(
                ProblemKind::Rows,
                format!("table {}: rows not all read, so not checked against its schema", t.name),
            );
            continue;
        }
        // copies an earlier runpack wrote keep the strings, and their manifest counts nothing
        if !(scan.legacy_copies && t.nonfinite_values.is_empty()) {
            rep.extend(ProblemKind::Rows, nonfinite_differences(&t.name, &scan.nonfinite, &t.nonfinite_values));
        }
        if let Err(e) = validator.finish(&mut scan.report, &mut scan.rejects) {
            rep.push(ProblemKind::Rows, format!("table {}: its rows cannot be checked: {e}", t.name));
            continue;
        }
        for (cols, set) in validator.take_keys() {
            key_sets.insert((t.name.clone(), cols), set);
        }
        if let Err(Error::Invalid { violations, total, .. }) = scan.report.check() {
            // as a build says them: the row's place, the column, the table and key
            rep.extend(ProblemKind::Rows, violations.iter().map(|v| v.to_string()));
            if total > violations.len() {
                rep.push(
                    ProblemKind::Rows,
                    format!(
                        "table {}: {} more rows break its schema",
                        t.name,
                        numbers::group_digits((total - violations.len()) as u64)
                    ),
                );
            }
        }
    }
    Ok(())
}

/// A table's schema without the foreign keys that cannot be checked (their table was not
/// read before this one), each said.
fn checkable_schema(
    m: &Manifest,
    t: &crate::stages::release::TableEntry,
    key_sets: &BTreeMap<(String, Vec<String>), crate::stages::validate::KeySet>,
    rep: &mut VerifyReport,
) -> crate::core::schema::TableSchema {
    let mut schema = t.schema.clone();
    schema.foreign_keys.retain(|fk| {
        let target = if fk.reference.resource.is_empty() { &t.name } else { &fk.reference.resource };
        let known = key_sets.contains_key(&(target.clone(), fk.reference.fields.clone()));
        if !known {
            rep.push(
                ProblemKind::Rows,
                format!(
                    "table {}: foreign key ({}) → {target} ({}) cannot be checked: {}",
                    t.name,
                    fk.fields.join(", "),
                    fk.reference.fields.join(", "),
                    if m.table(target).is_none() {
                        "the manifest defines no such table".to_string()
                    } else if target == &t.name {
                        "a table cannot refer to itself (a build refuses it)".to_string()
                    } else {
                        format!("the rows of table {target} were not read, or the two tables refer to each other")
                    }
                ),
            );
        }
        known
    });
    schema
}

impl<'a> TableScan<'a> {
    /// The scan of table `t`'s rows: `declared` is its schema's Arrow view, `placed` whether
    /// its rows carry their raw place; rejects go under `work`.
    fn new(
        progress: &'a dyn Progress,
        t: &'a crate::stages::release::TableEntry,
        schema: &crate::core::schema::TableSchema,
        declared: &'a arrow::datatypes::SchemaRef,
        placed: bool,
        work: &Path,
    ) -> Self {
        TableScan {
            progress,
            table: &t.name,
            nonfinite: BTreeMap::new(),
            legacy_copies: false,
            declared,
            placed,
            order: key_order(schema, declared)
                .map(|cols| (crate::stages::sort::OrderCheck::new(declared, cols.clone()), cols)),
            report: crate::core::report::BuildReport::new(20),
            rejects: crate::stages::rejects::Rejects::new(work.join("rejects")),
            said: BTreeSet::new(),
            split_keys: (t.split_column.is_some()
                && t.splits.iter().filter(|s| s.rows > 0).count() > 1
                && !schema.primary_key.is_empty())
            .then(|| {
                let columns: Option<Vec<usize>> =
                    schema.primary_key.iter().map(|k| declared.index_of(k).ok()).collect();
                let columns = columns?;
                let fields = columns
                    .iter()
                    .map(|&c| arrow::row::SortField::new(declared.field(c).data_type().clone()))
                    .collect();
                let converter = arrow::row::RowConverter::new(fields).ok()?;
                Some(SplitKeys { converter, columns, seen: Default::default(), bytes: 0 })
            })
            .flatten(),
        }
    }
}

/// The manifest's tables, each after the tables its foreign keys refer to (as a build orders
/// them), in manifest order otherwise; tables that refer to each other in a cycle come last,
/// in manifest order.
fn referenced_first(m: &Manifest) -> Vec<&crate::stages::release::TableEntry> {
    let index = |name: &str| m.tables.iter().position(|t| t.name == name);
    let deps: Vec<BTreeSet<usize>> = m
        .tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.schema.foreign_keys.iter().filter_map(|fk| index(&fk.reference.resource)).filter(|&j| j != i).collect()
        })
        .collect();
    let (order, stuck) = crate::core::schema::dependency_order(&deps);
    order.into_iter().chain(stuck).map(|i| &m.tables[i]).collect()
}

/// The columns whose order a table's rows must keep: its primary key, or else its fields up
/// to the first `_source_line` of JSON pointers (which sort in document order, not as text),
/// with an [`crate::stages::sort::OrderCheck`] of them; `None` when there is nothing to check.
fn key_order(schema: &crate::core::schema::TableSchema, arrow: &arrow::datatypes::SchemaRef) -> Option<Vec<String>> {
    let cols: Vec<String> = if schema.primary_key.is_empty() {
        crate::core::schema::row_order(schema, |_| false)
    } else {
        schema.primary_key.clone()
    };
    let pointer = |c: &String| {
        c == "_source_line"
            && arrow.field_with_name(c).is_ok_and(|f| f.data_type() == &arrow::datatypes::DataType::Utf8)
    };
    let cols: Vec<String> = cols.into_iter().take_while(|c| !pointer(c)).collect();
    (!cols.is_empty() && crate::stages::sort::OrderCheck::new(arrow, cols.clone()).in_order()).then_some(cols)
}

/// How the NaN and infinities found in a table's Parquet files (`found`) differ from the
/// manifest's counts (`listed`), one line per column that differs.
fn nonfinite_differences(
    table: &str,
    found: &BTreeMap<String, crate::stages::write::NonFiniteCount>,
    listed: &BTreeMap<String, crate::stages::write::NonFiniteCount>,
) -> Vec<String> {
    let columns: BTreeSet<&String> = found.keys().chain(listed.keys()).collect();
    let say = |c: Option<&crate::stages::write::NonFiniteCount>| {
        let c = c.copied().unwrap_or_default();
        format!("{} NaN, {} +Infinity, {} -Infinity", c.nan, c.pos_inf, c.neg_inf)
    };
    columns
        .into_iter()
        .filter(|c| found.get(*c).copied().unwrap_or_default() != listed.get(*c).copied().unwrap_or_default())
        .map(|c| {
            format!(
                "table {table}: column {c} holds {} in its Parquet files, the manifest's nonfinite_values say {}",
                say(found.get(c)),
                say(listed.get(c))
            )
        })
        .collect()
}

/// One table's rows being read by [`check_data`].
struct TableScan<'a> {
    /// Told of the rows read.
    progress: &'a dyn Progress,
    table: &'a str,
    /// NaN and infinities of the rows read, by column.
    nonfinite: BTreeMap<String, crate::stages::write::NonFiniteCount>,
    /// Whether a JSON Lines copy holds the strings an earlier runpack wrote for NaN and
    /// infinities.
    legacy_copies: bool,
    /// The columns the files must have (the schema's).
    declared: &'a arrow::datatypes::SchemaRef,
    /// Whether the rows carry their raw input's place (else the file and row are added).
    placed: bool,
    /// The check of the key order, across the table's files, and its columns (`None` once a
    /// row out of order is said).
    order: Option<(crate::stages::sort::OrderCheck, Vec<String>)>,
    report: crate::core::report::BuildReport,
    rejects: crate::stages::rejects::Rejects,
    /// (file, column) whose stored values broke a rule already said.
    said: BTreeSet<(String, String)>,
    /// For a table whose rows are in several splits, with a primary key: the keys seen and the
    /// split each was in (each split is in key order on its own, so a key given in two splits
    /// is not two neighbouring rows); `None` when not checked or once a duplicate is said.
    split_keys: Option<SplitKeys>,
}

/// The primary keys of a table's rows across its splits ([`TableScan::split_keys`]).
struct SplitKeys {
    converter: arrow::row::RowConverter,
    columns: Vec<usize>,
    seen: std::collections::HashMap<Box<[u8]>, String>,
    /// Key bytes held, and the most held before the check gives up (bounded memory).
    bytes: usize,
}

/// Bytes of primary keys `verify --data` holds to compare a table's splits, at most (a table
/// beyond it is not checked across splits).
pub const SPLIT_KEYS_BYTES: usize = 256 << 20;

impl TableScan<'_> {
    /// Decodes Parquet file `rel` a row group at a time, checks its statistics, feeds its rows
    /// to `validator`, checks their order and compares its JSON Lines copy with them; false
    /// when its rows could not all be read.
    fn read_file(
        &mut self,
        dir: &Path,
        rel: &str,
        split: Option<(usize, &str)>,
        validator: &mut crate::stages::validate::Validator,
        rep: &mut VerifyReport,
    ) -> Result<bool> {
        let split_name = split.map(|(_, n)| n.to_string()).unwrap_or_default();
        let mut split = split;
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        use std::io::Read;
        let Some((file, meta)) = self.open_parquet(dir, rel, rep) else { return Ok(false) };
        let open = || -> std::result::Result<_, String> {
            let f = file.try_clone().map_err(|e| e.to_string())?;
            Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta.clone()))
        };
        let metadata = meta.metadata().clone();
        // the JSON Lines copy, when there is one and it is a file (a snapshot's link to a blob
        // too): a named pipe in its place (said as not regular by the files' check) would wait
        // for a writer forever
        let copy_rel =
            rel.strip_prefix("data/").and_then(|s| s.strip_suffix(".parquet")).map(|s| format!("jsonl/{s}.jsonl"));
        let mut copy = copy_rel
            .as_ref()
            .filter(|c| dir.join(c).is_file())
            .and_then(|c| std::fs::File::open(dir.join(c)).ok().map(|f| (c.clone(), std::io::BufReader::new(f))));
        let mut row: u64 = 0;
        let mut bufs = CopyBuffers::default();
        for (g, rg) in metadata.row_groups().iter().enumerate() {
            let rows = rg.num_rows().max(0) as u64;
            let bytes = rg.total_byte_size().max(0) as u64;
            let batch_rows = if rows == 0 || bytes == 0 {
                DATA_BATCH_ROWS
            } else {
                ((DATA_BATCH_BYTES as u128 * rows as u128 / bytes as u128) as usize).clamp(1, DATA_BATCH_ROWS)
            };
            let reader = match open()
                .and_then(|b| b.with_row_groups(vec![g]).with_batch_size(batch_rows).build().map_err(|e| e.to_string()))
            {
                Ok(r) => r,
                Err(e) => {
                    rep.push(ProblemKind::Unreadable, format!("{rel}: row group {g} cannot be read: {e}"));
                    return Ok(false);
                }
            };
            let mut bounds = StatBounds::new(&metadata, g, self.declared);
            for batch in reader {
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        rep.push(
                            ProblemKind::Unreadable,
                            format!("{rel}: cannot be decoded after row {}: {e}", numbers::group_digits(row)),
                        );
                        return Ok(false);
                    }
                };
                // the schema's types, with nullability and metadata as declared
                let batch = match RecordBatch::try_new(self.declared.clone(), batch.columns().to_vec()) {
                    Ok(b) => b,
                    Err(e) => {
                        rep.push(
                            ProblemKind::Schema,
                            format!("{rel}: rows after {} do not fit the table's schema: {e}", row),
                        );
                        return Ok(false);
                    }
                };
                bounds.observe(&batch);
                crate::stages::write::count_nonfinite(&batch, &mut self.nonfinite);
                self.check_values(&batch, rel, row, rep);
                self.check_split_keys(&batch, rel, &split_name, row, rep);
                if let Some((ci, name)) = split
                    && !split_rows_hold(&batch, ci, name, rel, row, rep)
                {
                    split = None;
                }
                self.check_order(&batch, rel, row, rep)?;
                if let Some((c, r)) = copy.as_mut()
                    && !self.compare_copy(&batch, dir, rel, row, (c, r), &mut bufs, rep)?
                {
                    copy = None;
                }
                let n = batch.num_rows();
                let batch = if self.placed { batch } else { with_place(&batch, rel, row)? };
                row += n as u64;
                *rep.rows_checked.get_or_insert(0) += n as u64;
                self.progress.advance(n as u64);
                validator.push(batch, &mut self.report, &mut self.rejects)?;
            }
            rep.extend(ProblemKind::Rows, bounds.problems(rel, g));
        }
        if let Some((c, mut r)) = copy {
            let mut rest = [0u8; 1];
            if r.read(&mut rest).map_err(|e| Error::io(dir.join(c.as_str()), e))? > 0 {
                rep.push(
                    ProblemKind::Rows,
                    format!("{c}:{}: a line beyond the {} rows of {rel}", row + 1, numbers::group_digits(row)),
                );
            }
        }
        Ok(true)
    }

    /// Opens Parquet file `rel` and reads its footer once (each row group then gets a reader
    /// of its own); `None`, said in `rep`, when it is no readable Parquet file or its columns
    /// (by name and type) are not the table's.
    fn open_parquet(
        &self,
        dir: &Path,
        rel: &str,
        rep: &mut VerifyReport,
    ) -> Option<(std::fs::File, parquet::arrow::arrow_reader::ArrowReaderMetadata)> {
        use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
        use parquet::file::metadata::PageIndexPolicy;
        let loaded = std::fs::File::open(dir.join(rel)).map_err(|e| e.to_string()).and_then(|f| {
            // the page index too: its bounds are checked as the row groups' statistics are
            ArrowReaderMetadata::load(&f, ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional))
                .map(|m| (f, m))
                .map_err(|e| e.to_string())
        });
        let (file, meta) = match loaded {
            Ok(x) => x,
            Err(e) => {
                rep.push(ProblemKind::Unreadable, format!("{rel}: not a readable Parquet file: {e}"));
                return None;
            }
        };
        // the columns, by name and type (nullability and field metadata aside)
        let have = meta.schema().clone();
        let same = have.fields().len() == self.declared.fields().len()
            && have
                .fields()
                .iter()
                .zip(self.declared.fields())
                .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
        // readers act on a footer's key-value metadata (pandas' `pandas` entry makes columns
        // its index): a build writes Arrow's schema there, nothing else
        let keys: Vec<String> = meta
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .into_iter()
            .flatten()
            .filter(|kv| kv.key != "ARROW:schema")
            .map(|kv| format!("{:?}", kv.key))
            .collect();
        if !keys.is_empty() {
            rep.push(
                ProblemKind::Schema,
                format!(
                    "{rel}: its footer holds key-value metadata that a build does not write: {} (readers act on it: \
                     pandas' `pandas` entry makes columns its index)",
                    keys.join(", ")
                ),
            );
        }
        if !same {
            rep.push(
                ProblemKind::Schema,
                format!(
                    "{rel}: its columns are not those of table {} ({}), so its rows were not read",
                    self.table,
                    schema_diff(self.declared, &have).join("; ")
                ),
            );
            return None;
        }
        Some((file, meta))
    }
}

impl TableScan<'_> {
    /// Checks that `batch` continues the table's key order; the first row out of order is a
    /// problem, and the check stops there.
    fn check_order(&mut self, batch: &RecordBatch, rel: &str, row: u64, rep: &mut VerifyReport) -> Result<()> {
        if let Some((check, cols)) = self.order.as_mut() {
            check.observe(batch)?;
            if !check.in_order() {
                // the row, counted from 1 in the file, and its raw input when the table keeps it
                let i = check.first_out_of_order().unwrap_or(0);
                let text = |name: &str| {
                    batch.column_by_name(name).and_then(|c| arrow::util::display::array_value_to_string(c, i).ok())
                };
                let input = match (text("_source_file"), text("_source_line")) {
                    (Some(f), Some(l)) if !f.is_empty() => format!(" (from {f}:{l})"),
                    _ => String::new(),
                };
                rep.push(
                    ProblemKind::Rows,
                    format!(
                        "{rel}: row {}{input} is not in the key order of table {} ({}): its key comes before the \
                         row's before it, which a build never writes",
                        numbers::group_digits(row + i as u64 + 1),
                        self.table,
                        cols.join(", ")
                    ),
                );
                self.order = None;
            }
        }
        Ok(())
    }

    /// Compares the next lines of a JSON Lines copy (`c`, read by `r`) with `batch` encoded
    /// as a build writes it (or as an earlier runpack wrote NaN and infinities); false at the
    /// first line that differs or is missing (a problem).
    #[allow(clippy::too_many_arguments)]
    fn compare_copy(
        &mut self,
        batch: &RecordBatch,
        dir: &Path,
        rel: &str,
        row: u64,
        (c, r): (&mut String, &mut std::io::BufReader<std::fs::File>),
        bufs: &mut CopyBuffers,
        rep: &mut VerifyReport,
    ) -> Result<bool> {
        use std::io::BufRead;
        bufs.encoded.clear();
        bufs.ends.clear();
        use crate::core::jsonl::{NonFiniteAs, encode_jsonl_as};
        encode_jsonl_as(batch, &mut bufs.encoded, &mut bufs.ends, NonFiniteAs::Null)?;
        let mut start = 0;
        let mut legacy: Option<(Vec<u8>, Vec<usize>)> = None;
        for (i, &end) in bufs.ends.iter().enumerate() {
            bufs.line.clear();
            let read = r.read_until(b'\n', &mut bufs.line).map_err(|e| Error::io(dir.join(c.as_str()), e))?;
            let n = row + i as u64 + 1;
            let want = &bufs.encoded[start..end];
            // a copy an earlier runpack wrote: NaN and infinities as strings
            let older = read > 0 && bufs.line != want && {
                let (text, at) = legacy.get_or_insert_with(|| {
                    let (mut text, mut at) = (Vec::new(), Vec::new());
                    let _ = encode_jsonl_as(batch, &mut text, &mut at, NonFiniteAs::Strings);
                    (text, at)
                });
                let from = if i == 0 { 0 } else { at.get(i - 1).copied().unwrap_or(0) };
                at.get(i).is_some_and(|&to| text.get(from..to) == Some(bufs.line.as_slice()))
            };
            self.legacy_copies |= older;
            if read == 0 || (bufs.line != want && !older) {
                rep.push(ProblemKind::Rows, line_difference(c, n, rel, want, &bufs.line, read == 0));
                return Ok(false);
            }
            start = end;
        }
        Ok(true)
    }
}

/// Buffers reused by [`TableScan::compare_copy`] across batches.
#[derive(Default)]
struct CopyBuffers {
    encoded: Vec<u8>,
    ends: Vec<usize>,
    line: Vec<u8>,
}

/// Whether every row of `batch` (rows `row + 1…` of `rel`) has split `name` in column `ci`;
/// the first that does not is a problem.
fn split_rows_hold(batch: &RecordBatch, ci: usize, name: &str, rel: &str, row: u64, rep: &mut VerifyReport) -> bool {
    let col = batch.column(ci);
    let other = (0..col.len()).find(|&i| {
        col.is_null(i) || col.as_any().downcast_ref::<arrow::array::StringArray>().is_some_and(|a| a.value(i) != name)
    });
    if let Some(i) = other {
        rep.push(
            ProblemKind::Rows,
            format!(
                "{rel}: row {} has split {}, but the file holds split {name}'s rows",
                numbers::group_digits(row + i as u64 + 1),
                validate_cell(col, i)
            ),
        );
        return false;
    }
    true
}

impl TableScan<'_> {
    /// A primary key given in two splits of the table (the first one met is said).
    fn check_split_keys(&mut self, batch: &RecordBatch, rel: &str, split: &str, before: u64, rep: &mut VerifyReport) {
        let Some(keys) = self.split_keys.as_mut() else { return };
        let cols: Vec<arrow::array::ArrayRef> =
            keys.columns.iter().map(|&c| crate::core::values::positive_nan(batch.column(c))).collect();
        let Ok(rows) = keys.converter.convert_columns(&cols) else {
            self.split_keys = None;
            return;
        };
        for r in 0..rows.num_rows() {
            let key: Box<[u8]> = rows.row(r).as_ref().into();
            match keys.seen.get(&key) {
                Some(first) if first != split => {
                    let shown: Vec<String> = keys
                        .columns
                        .iter()
                        .map(|&c| format!("{}={}", batch.schema().field(c).name(), validate_cell(batch.column(c), r)))
                        .collect();
                    rep.push(
                        ProblemKind::Rows,
                        format!(
                            "{rel}: row {} has the key {} of a row of split {first} too (table {}, rule primaryKey)",
                            numbers::group_digits(before + r as u64 + 1),
                            shown.join(", "),
                            self.table
                        ),
                    );
                    self.split_keys = None;
                    return;
                }
                Some(_) => {}
                None => {
                    keys.bytes += key.len() + split.len() + 48;
                    keys.seen.insert(key, split.to_string());
                }
            }
        }
        if keys.bytes > SPLIT_KEYS_BYTES {
            self.split_keys = None;
        }
    }

    /// What a build guarantees of stored values beyond the schema's checks (which the
    /// validator makes: JSON text, years 1 to 9999): a NaN is stored with its sign bit clear.
    /// The first value breaking it is said, once per column and file.
    fn check_values(&mut self, batch: &RecordBatch, rel: &str, before: u64, rep: &mut VerifyReport) {
        // a NaN with its sign bit set, at any depth: found by what storing would change
        let changed = |a: &arrow::array::ArrayRef| !crate::core::values::positive_nan(a).to_data().ptr_eq(&a.to_data());
        for (i, f) in self.declared.fields().iter().enumerate() {
            let key = (rel.to_string(), f.name().clone());
            if self.said.contains(&key) {
                continue;
            }
            let col = batch.column(i);
            let bad = changed(col)
                .then(|| (0..col.len()).find(|&r| changed(&col.slice(r, 1))))
                .flatten()
                .map(|r| (r, "holds a NaN with its sign bit set (a build stores NaN with it clear)"));
            if let Some((r, what)) = bad {
                rep.push(
                    ProblemKind::Rows,
                    format!(
                        "{rel}: row {}, column {}: {} {what}",
                        numbers::group_digits(before + r as u64 + 1),
                        f.name(),
                        validate_cell(col, r)
                    ),
                );
                self.said.insert(key);
            }
        }
    }
}

/// `schema` with the place columns appended: `_source_file` (Utf8), `_source_line` (Int64).
fn with_place_fields(schema: &arrow::datatypes::SchemaRef) -> arrow::datatypes::SchemaRef {
    use arrow::datatypes::{DataType, Field, FieldRef, Schema};
    let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    fields.push(std::sync::Arc::new(Field::new("_source_file", DataType::Utf8, true)));
    fields.push(std::sync::Arc::new(Field::new("_source_line", DataType::Int64, true)));
    std::sync::Arc::new(Schema::new(fields))
}

/// `batch` with the release's place of each row appended: `_source_file` = `rel`,
/// `_source_line` = the 1-based row number in it (rows before: `before`).
fn with_place(batch: &RecordBatch, rel: &str, before: u64) -> Result<RecordBatch> {
    use arrow::array::{Int64Array, StringArray};
    let n = batch.num_rows();
    let mut columns = batch.columns().to_vec();
    columns.push(std::sync::Arc::new(StringArray::from(vec![rel; n])));
    columns.push(std::sync::Arc::new(Int64Array::from_iter_values((0..n as i64).map(|i| before as i64 + i + 1))));
    RecordBatch::try_new(with_place_fields(&batch.schema()), columns).map_err(|e| Error::format(rel, e))
}

/// The message for JSON Lines file `c` whose line `n` is not row `n` of `rel` (`want`).
fn line_difference(c: &str, n: u64, rel: &str, want: &[u8], line: &[u8], ended: bool) -> String {
    if ended {
        return format!("{c}:{n}: the file ends before row {n} of {rel}");
    }
    if line.strip_suffix(b"\n").is_none() && want.strip_suffix(b"\n") == Some(line) {
        return format!("{c}:{n}: the last line has no line break at its end (a build ends every line)");
    }
    let at = want.iter().zip(line).position(|(a, b)| a != b).unwrap_or(want.len().min(line.len()));
    format!(
        "{c}:{n}: differs from row {n} of {rel} from column {}: the row has {:?}, the line {:?}",
        at + 1,
        excerpt(want, at),
        excerpt(line, at)
    )
}

/// A row group's statistics of its scalar columns, and its pages' in the page index (the
/// ColumnIndex: a min, a max and a null count per page), against the values decoded.
struct StatBounds {
    /// Per checked column: (index in the batch, name, min, max, null count from the file),
    /// and what was seen: values below min, above max (first of each), nulls.
    columns: Vec<Bound>,
    /// Rows of the row group seen so far.
    rows: u64,
}

struct Bound {
    index: usize,
    name: String,
    min: Option<arrow::array::ArrayRef>,
    max: Option<arrow::array::ArrayRef>,
    nulls: Option<u64>,
    below: Option<String>,
    above: Option<String>,
    seen_nulls: u64,
    pages: Option<Pages>,
}

/// A column's pages in a row group's page index, and the first value found outside its page's
/// bounds.
struct Pages {
    /// One entry per page (null where the index gives none, as for a page of nulls only).
    mins: arrow::array::ArrayRef,
    maxes: arrow::array::ArrayRef,
    nulls: arrow::array::UInt64Array,
    /// The row (in the row group) after each page's last.
    ends: Vec<u64>,
    /// Nulls seen in each page.
    seen_nulls: Vec<u64>,
    /// The page the last value seen was in.
    at: usize,
    /// The first value outside its page's bounds: (page, `min` or `max`, the bound, the value).
    outside: Option<(usize, &'static str, String, String)>,
}

impl StatBounds {
    fn new(
        metadata: &parquet::file::metadata::ParquetMetaData,
        g: usize,
        schema: &arrow::datatypes::SchemaRef,
    ) -> Self {
        use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
        let mut columns = Vec::new();
        let rgs = &metadata.row_groups()[g..=g];
        for (index, f) in schema.fields().iter().enumerate() {
            if !crate::core::schema::is_stored_scalar(f.data_type()) {
                continue;
            }
            let Ok(conv) = StatisticsConverter::try_new(f.name(), schema, metadata.file_metadata().schema_descr())
            else {
                continue;
            };
            let one =
                |a: parquet::errors::Result<arrow::array::ArrayRef>| a.ok().filter(|a| a.len() == 1 && a.is_valid(0));
            let nulls = conv
                .row_group_null_counts(rgs.iter())
                .ok()
                .and_then(|a| (a.len() == 1 && a.is_valid(0)).then(|| a.value(0)));
            // a null count the writer did not give is read as 0: only a given one is checked
            let given = rgs[0]
                .columns()
                .iter()
                .position(|c| c.column_path().string() == *f.name())
                .and_then(|i| rgs[0].column(i).statistics())
                .is_some_and(|s| s.null_count_opt().is_some());
            let pages = match (metadata.column_index(), metadata.offset_index()) {
                (Some(ci), Some(oi)) => (|| {
                    let counts = conv.data_page_row_counts(oi, metadata.row_groups(), [&g]).ok()??;
                    let ends: Vec<u64> = counts
                        .iter()
                        .scan(0u64, |end, n| {
                            *end += n.unwrap_or(0);
                            Some(*end)
                        })
                        .collect();
                    let mins = conv.data_page_mins(ci, oi, [&g]).ok()?;
                    let maxes = conv.data_page_maxes(ci, oi, [&g]).ok()?;
                    let nulls = conv.data_page_null_counts(ci, oi, [&g]).ok()?;
                    (mins.len() == ends.len() && maxes.len() == ends.len() && nulls.len() == ends.len()).then(|| {
                        Pages { mins, maxes, nulls, seen_nulls: vec![0; ends.len()], ends, at: 0, outside: None }
                    })
                })(),
                _ => None,
            };
            columns.push(Bound {
                index,
                name: f.name().clone(),
                min: one(conv.row_group_mins(rgs.iter())),
                max: one(conv.row_group_maxes(rgs.iter())),
                nulls: nulls.filter(|_| given),
                below: None,
                above: None,
                seen_nulls: 0,
                pages,
            });
        }
        StatBounds { columns, rows: 0 }
    }

    fn observe(&mut self, batch: &RecordBatch) {
        use arrow::array::AsArray;
        use arrow::datatypes::DataType;
        let first_row = self.rows;
        self.rows += batch.num_rows() as u64;
        for b in &mut self.columns {
            let col = batch.column(b.index);
            if let Some(p) = b.pages.as_mut() {
                p.observe(col, first_row);
            }
            b.seen_nulls += col.null_count() as u64;
            if b.below.is_some() && b.above.is_some() {
                continue;
            }
            let show = |i: usize| validate_cell(col, i);
            // floats: NaN is never in statistics, and -0 equals +0
            if let DataType::Float64 | DataType::Float32 = col.data_type() {
                let as_f64 = |a: &arrow::array::ArrayRef, i: usize| match a.data_type() {
                    DataType::Float64 => a.as_primitive::<arrow::datatypes::Float64Type>().value(i),
                    _ => a.as_primitive::<arrow::datatypes::Float32Type>().value(i) as f64,
                };
                let lo = b.min.as_ref().map(|m| as_f64(m, 0)).filter(|v| !v.is_nan());
                let hi = b.max.as_ref().map(|m| as_f64(m, 0)).filter(|v| !v.is_nan());
                for i in (0..col.len()).filter(|&i| col.is_valid(i)) {
                    let v = as_f64(col, i);
                    if v.is_nan() {
                        continue;
                    }
                    if b.below.is_none() && lo.is_some_and(|lo| v < lo) {
                        b.below = Some(show(i));
                    }
                    if b.above.is_none() && hi.is_some_and(|hi| v > hi) {
                        b.above = Some(show(i));
                    }
                }
                continue;
            }
            let opts = arrow::compute::SortOptions::default();
            let lo = b.min.as_ref().and_then(|m| arrow::array::make_comparator(col.as_ref(), m.as_ref(), opts).ok());
            let hi = b.max.as_ref().and_then(|m| arrow::array::make_comparator(col.as_ref(), m.as_ref(), opts).ok());
            for i in (0..col.len()).filter(|&i| col.is_valid(i)) {
                if b.below.is_none() && lo.as_ref().is_some_and(|c| c(i, 0).is_lt()) {
                    b.below = Some(show(i));
                }
                if b.above.is_none() && hi.as_ref().is_some_and(|c| c(i, 0).is_gt()) {
                    b.above = Some(show(i));
                }
            }
        }
    }

    fn problems(&self, rel: &str, g: usize) -> Vec<String> {
        let mut out = Vec::new();
        for b in &self.columns {
            let stat = |a: &Option<arrow::array::ArrayRef>| a.as_ref().map(|a| validate_cell(a, 0)).unwrap_or_default();
            if let Some(v) = &b.below {
                out.push(format!(
                    "{rel}: row group {g}, column {}: the statistics' min is {}, but the column holds {v} (readers that skip row groups by them would miss rows)",
                    b.name,
                    stat(&b.min)
                ));
            }
            if let Some(v) = &b.above {
                out.push(format!(
                    "{rel}: row group {g}, column {}: the statistics' max is {}, but the column holds {v} (readers that skip row groups by them would miss rows)",
                    b.name,
                    stat(&b.max)
                ));
            }
            if let Some(n) = b.nulls.filter(|n| *n != b.seen_nulls) {
                out.push(format!(
                    "{rel}: row group {g}, column {}: the statistics count {n} nulls, the column holds {}",
                    b.name, b.seen_nulls
                ));
            }
            if let Some(p) = &b.pages {
                out.extend(p.problems(rel, g, &b.name));
            }
        }
        out
    }
}

impl Pages {
    /// Checks the values of `col`, whose first is the row group's row `first_row`, against
    /// their pages' bounds (floats as the row groups' are: NaN in no bound, -0 equal to +0).
    fn observe(&mut self, col: &arrow::array::ArrayRef, first_row: u64) {
        use arrow::array::AsArray;
        use arrow::datatypes::DataType;
        let float = |a: &arrow::array::ArrayRef, i: usize| match a.data_type() {
            DataType::Float64 => Some(a.as_primitive::<arrow::datatypes::Float64Type>().value(i)),
            DataType::Float32 => Some(a.as_primitive::<arrow::datatypes::Float32Type>().value(i) as f64),
            _ => None,
        };
        let opts = arrow::compute::SortOptions::default();
        let lo = arrow::array::make_comparator(col.as_ref(), self.mins.as_ref(), opts).ok();
        let hi = arrow::array::make_comparator(col.as_ref(), self.maxes.as_ref(), opts).ok();
        for i in 0..col.len() {
            let row = first_row + i as u64;
            while self.at + 1 < self.ends.len() && row >= self.ends[self.at] {
                self.at += 1;
            }
            let p = self.at;
            if col.is_null(i) {
                self.seen_nulls[p] += 1;
                continue;
            }
            if self.outside.is_some() {
                continue;
            }
            let (below, above) = match float(col, i) {
                Some(v) if v.is_nan() => (false, false),
                Some(v) => {
                    let bound = |a: &arrow::array::ArrayRef| {
                        a.is_valid(p).then(|| float(a, p)).flatten().filter(|b| !b.is_nan())
                    };
                    (bound(&self.mins).is_some_and(|m| v < m), bound(&self.maxes).is_some_and(|m| v > m))
                }
                None => (
                    self.mins.is_valid(p) && lo.as_ref().is_some_and(|c| c(i, p).is_lt()),
                    self.maxes.is_valid(p) && hi.as_ref().is_some_and(|c| c(i, p).is_gt()),
                ),
            };
            if below || above {
                let (which, bounds) = if below { ("min", &self.mins) } else { ("max", &self.maxes) };
                self.outside = Some((p, which, validate_cell(bounds, p), validate_cell(col, i)));
            }
        }
    }

    /// The first value found outside its page's bounds, and each page whose null count is
    /// not the nulls it holds.
    fn problems(&self, rel: &str, g: usize, column: &str) -> Vec<String> {
        let rows = |p: usize| {
            let start = if p == 0 { 0 } else { self.ends[p - 1] };
            format!(
                "rows {} to {} of the row group",
                numbers::group_digits(start + 1),
                numbers::group_digits(self.ends[p])
            )
        };
        let mut out = Vec::new();
        if let Some((p, which, bound, v)) = &self.outside {
            out.push(format!(
                "{rel}: row group {g}, page {p} ({}), column {column}: the page index's {which} is {bound}, but the \
                 page holds {v} (readers that skip pages by it would miss rows)",
                rows(*p)
            ));
        }
        for (p, seen) in self.seen_nulls.iter().enumerate() {
            if self.nulls.is_valid(p) && self.nulls.value(p) != *seen {
                out.push(format!(
                    "{rel}: row group {g}, page {p} ({}), column {column}: the page index counts {} nulls, the page \
                     holds {seen}",
                    rows(p),
                    self.nulls.value(p)
                ));
                break;
            }
        }
        out
    }
}

/// A cell as JSON text, for messages.
fn validate_cell(a: &arrow::array::ArrayRef, i: usize) -> String {
    crate::stages::validate::cell_json(a, i).to_string()
}

/// Up to 60 bytes of a JSON line from a little before byte `at` (where two lines part), without
/// its line break, marked `…` where cut.
fn excerpt(bytes: &[u8], at: usize) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let start = at.saturating_sub(20).min(bytes.len());
    let end = (start + 60).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[start..end]);
    format!("{}{text}{}", if start > 0 { "…" } else { "" }, if end < bytes.len() { "…" } else { "" })
}

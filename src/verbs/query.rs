//! The `query` verb: a release's tables or raw files registered for SQL.
//!
//! In: a release folder (its `manifest.json` names the tables, their files and schemas), or
//! raw files with an optional Table Schema. Out: a DataFusion session whose tables are checked
//! against the manifest before the first scan, and errors that name the file that broke.
//! Running and printing are [`crate::sql::session`]'s and [`crate::sql::print`]'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::core::error::{Error, Explained, Result};
use crate::sql::session::{reads_table, register_parquet, session, string_views};
use crate::stages::release::Manifest;

/// Registers every table of the release in `dir`. Each table's files are checked when a
/// query first reads the table (missing, a Git LFS pointer, another size or schema than the
/// manifest's), so a damaged table does not keep the others from
/// being queried.
///
/// Errors: [`Error::Io`]/[`Error::Config`] for a missing or bad manifest, [`Error::Refused`]
/// for a table whose data files the manifest does not list.
pub async fn register_release(ctx: &SessionContext, dir: &Path) -> Result<Manifest> {
    register_release_tables(ctx, dir, None).await
}

/// One table of a release, as `query <release>` without SQL lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableListing {
    /// The table's name (its SQL name).
    pub name: String,
    /// Its rows, as the manifest counts them.
    pub rows: u64,
    /// Its columns in order, each with its Arrow type.
    pub columns: Vec<ColumnListing>,
}

/// One column of a [`TableListing`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct ColumnListing {
    /// The column's name.
    pub name: String,
    /// Its Arrow type, as the manifest's `arrow_schema` names it (`Int64`, `Utf8`, …).
    #[serde(rename = "type")]
    pub data_type: String,
}

/// The tables of the release in `dir`, sorted by name, with their row counts and columns,
/// from its manifest (no data file is read).
///
/// Errors: as [`Manifest::load`].
pub fn list_tables(dir: &Path) -> Result<Vec<TableListing>> {
    let manifest = Manifest::load(dir)?;
    let mut tables: Vec<TableListing> = manifest
        .tables
        .into_iter()
        .map(|t| TableListing {
            name: t.name,
            rows: t.rows,
            columns: t
                .arrow_schema
                .into_iter()
                .map(|f| ColumnListing { name: f.name, data_type: f.data_type })
                .collect(),
        })
        .collect();
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tables)
}

/// Registers the tables of the release at `dir` as [`register_release`] does, only those
/// [`reads_table`] finds in `read` when it is given (the others' files need not be there: a
/// release from the Hub downloads only what the SQL reads).
///
/// Errors: as [`register_release`].
pub async fn register_release_tables(
    ctx: &SessionContext,
    dir: &Path,
    read: Option<&std::collections::BTreeSet<String>>,
) -> Result<Manifest> {
    let manifest = Manifest::load(dir)?;
    let mut names = std::collections::BTreeSet::new();
    for t in &manifest.tables {
        if !names.insert(t.name.as_str()) {
            return Err(Error::Refused(format!(
                "{}: manifest.json names table {} twice; run `runpack verify` on the release",
                dir.display(),
                t.name
            )));
        }
        if read.is_some_and(|r| !reads_table(r, &t.name)) {
            continue;
        }
        let files: Vec<PathBuf> = t.files.iter().map(|f| dir.join(f)).collect();
        for rel in &t.files {
            let listed = manifest.files.iter().any(|e| &e.path == rel && e.kind == "parquet");
            if !crate::stages::release::safe_relative(rel) {
                return Err(Error::Refused(format!(
                    "{}: table {} names data file {rel}, whose path {}; refused (run `runpack verify` on the release)",
                    dir.display(),
                    t.name,
                    crate::stages::release::unsafe_path_reason(rel)
                )));
            }
            if !listed {
                return Err(Error::Refused(format!(
                    "{}: table {} names data file {rel}, which is not a Parquet file of the release's manifest; \
                     run `runpack verify` on the release",
                    dir.display(),
                    t.name
                )));
            }
        }
        // the row order is not declared here: DataFusion 55 then groups by a key column with
        // order-preserving merges, slower than hashing (GROUP BY checkpoint: ~40 ms against
        // ~33 ms on 416,000 rows), and sorting a query's result is cheap next to that
        let schema = t.schema.arrow_schema();
        // every column nullable, the required ones too: DataFusion 55 takes a scalar
        // subquery's nullability from its column (one that finds no row gives NULL), and plans
        // `nullif(k, 2) NOT IN (…)` as if a value of non-null columns could not be NULL, so a
        // column said never NULL gave wrong answers
        register_parquet(ctx, &t.name, &files, string_views(&schema), &[], Some(t.rows)).await?;
        let name = datafusion::common::TableReference::bare(t.name.as_str());
        let registered =
            ctx.table_provider(name.clone()).await.map_err(|e| Error::sql(format!("table {}", t.name), e))?;
        let checked = ManifestChecked {
            inner: registered,
            release: dir.display().to_string(),
            root: std::fs::canonicalize(dir).ok(),
            table: t.name.clone(),
            files: t
                .files
                .iter()
                .zip(
                    files
                        .iter()
                        .map(std::path::absolute)
                        .collect::<std::io::Result<Vec<_>>>()
                        .map_err(|e| Error::io(dir, e))?,
                )
                .map(|(rel, path)| {
                    let bytes = manifest.files.iter().find(|e| &e.path == rel).map(|e| e.bytes);
                    (rel.clone(), path, bytes)
                })
                .collect(),
            schema,
            outcome: tokio::sync::OnceCell::new(),
        };
        ctx.deregister_table(name.clone()).map_err(|e| Error::sql(format!("table {}", t.name), e))?;
        let table: Arc<dyn datafusion::catalog::TableProvider> = if crate::sql::engine::is_remote(ctx) {
            // a cluster plans scans of DataFusion's own tables only: checked here, now
            checked.check(&ctx.state()).await.map_err(|e| Error::sql(format!("table {}", t.name), e))?;
            checked.inner
        } else {
            Arc::new(checked)
        };
        ctx.register_table(name, table).map_err(|e| Error::sql(format!("table {}", t.name), e))?;
    }
    Ok(manifest)
}

/// A release table whose files are checked against the manifest before the first scan that
/// reads them: each file's footer must give the manifest's schema (columns, order, types), or
/// the query is refused naming the file. A file rewritten under the same size with another
/// schema would otherwise be read through DataFusion's schema adaptation (a renamed column as
/// nulls, integers cast to text) and answer silently wrong. The footers are read through
/// DataFusion's file metadata cache, so the scan that follows does not parse them again.
#[derive(Debug)]
struct ManifestChecked {
    inner: Arc<dyn datafusion::catalog::TableProvider>,
    /// The release folder (or Hub repository), for messages.
    release: String,
    /// The release folder, its links resolved: a data file lies below it.
    root: Option<PathBuf>,
    table: String,
    /// (path relative to the release, absolute path, size in bytes the manifest gives) of
    /// each data file.
    files: Vec<(String, PathBuf, Option<u64>)>,
    /// The manifest's schema of the table (strings as `Utf8`, as written).
    schema: SchemaRef,
    /// The check's outcome, computed once: the message of the first file that fails.
    outcome: tokio::sync::OnceCell<std::result::Result<(), String>>,
}

impl ManifestChecked {
    /// What keeps data file `rel` (at `path`) from being the manifest's, found without
    /// reading it: missing, a Git LFS pointer (said before its size), or another size than
    /// `bytes` (a truncated or emptied file would read as fewer rows).
    fn file_problem(&self, rel: &str, path: &Path, bytes: Option<u64>) -> Option<String> {
        let verify = format!("run `runpack verify {}`", self.release);
        let what =
            |is: String| Some(format!("{}: data file {rel} of table {} {is}; {verify}", self.release, self.table));
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return what("is missing".into());
        };
        // a link is read only into a Hugging Face cache's blobs (a snapshot's files); a file
        // reached through a linked folder is outside the release too
        if meta.is_symlink() && !crate::stages::release::cache_blob_link(path) {
            let to = std::fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
            return what(format!("is a symbolic link (to {to}), which a release does not hold"));
        }
        let inside = self.root.as_ref().zip(std::fs::canonicalize(path).ok()).is_some_and(|(r, p)| p.starts_with(r));
        if !meta.is_symlink() && !inside {
            return what("is reached through a symbolic link to a folder outside the release".into());
        }
        if !path.is_file() {
            let kind = if path.is_dir() { "a folder" } else { "no regular file (a pipe, socket or device)" };
            return what(format!("is {kind}, not a Parquet file"));
        }
        if let Some(p) = crate::stages::ingest::files::lfs_pointer(path) {
            return Some(crate::stages::ingest::files::lfs_pointer_error(rel, &p).to_string());
        }
        let have = std::fs::metadata(path).map(|m| m.len()).ok();
        if bytes.is_some() && bytes != have {
            return Some(format!(
                "{}: data file {rel} of table {} holds {} bytes, the manifest says {}; {verify}",
                self.release,
                self.table,
                have.map(crate::core::numbers::group_digits).unwrap_or_default(),
                bytes.map(crate::core::numbers::group_digits).unwrap_or_default()
            ));
        }
        None
    }

    async fn check(&self, state: &dyn datafusion::catalog::Session) -> datafusion::error::Result<()> {
        use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
        use datafusion::object_store::ObjectStoreExt;
        let outcome = self
            .outcome
            .get_or_init(|| async {
                let runtime = state.runtime_env();
                let store = runtime
                    .object_store(datafusion::execution::object_store::ObjectStoreUrl::local_filesystem())
                    .map_err(|e| e.to_string())?;
                let cache = runtime.cache_manager.get_file_metadata_cache();
                let hint = format!("\nhint: `runpack verify {}` checks every file of the release", self.release);
                for (rel, path, bytes) in &self.files {
                    if let Some(m) = self.file_problem(rel, path, *bytes) {
                        return Err(m);
                    }
                    let unreadable = |e: &dyn std::fmt::Display| {
                        format!("{rel} (table {}) is not a readable Parquet file: {e}{hint}", self.table)
                    };
                    let location =
                        datafusion::object_store::path::Path::from_filesystem_path(path).map_err(|e| unreadable(&e))?;
                    let meta = store.head(&location).await.map_err(|e| unreadable(&e))?;
                    let schema = DFParquetMetadata::new(store.as_ref(), &meta)
                        .with_file_metadata_cache(Some(cache.clone()))
                        .with_page_index_policy(Some(parquet::file::metadata::PageIndexPolicy::Skip))
                        .fetch_schema()
                        .await
                        .map_err(|e| match e.find_root() {
                            datafusion::error::DataFusionError::ParquetError(p) => unreadable(p),
                            other => unreadable(other),
                        })?;
                    let diffs = crate::core::schema::schema_diff(&self.schema, &schema);
                    if !diffs.is_empty() {
                        return Err(format!(
                            "{rel} (table {}) does not hold the manifest's schema: {}{hint}",
                            self.table,
                            diffs.join("; ")
                        ));
                    }
                }
                Ok(())
            })
            .await;
        outcome.clone().map_err(|m| datafusion::error::DataFusionError::External(Box::new(Error::Refused(m))))
    }
}

#[async_trait::async_trait]
impl datafusion::catalog::TableProvider for ManifestChecked {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> datafusion::datasource::TableType {
        self.inner.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&datafusion::prelude::Expr],
    ) -> datafusion::error::Result<Vec<datafusion::logical_expr::TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[datafusion::prelude::Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        self.check(state).await?;
        self.inner.scan(state, projection, filters, limit).await
    }

    async fn scan_with_args<'a>(
        &self,
        state: &dyn datafusion::catalog::Session,
        args: datafusion::catalog::ScanArgs<'a>,
    ) -> datafusion::error::Result<datafusion::catalog::ScanResult> {
        self.check(state).await?;
        self.inner.scan_with_args(state, args).await
    }
}

/// The Parquet files of a release's tables, each with the name a message gives it
/// (`data/metrics.parquet (table metrics)`), in manifest order.
pub fn release_parquet_files(dir: &Path, manifest: &Manifest) -> Vec<(String, PathBuf)> {
    manifest
        .tables
        .iter()
        .flat_map(|t| t.files.iter().map(move |f| (format!("{f} (table {})", t.name), dir.join(f))))
        .collect()
}

/// `e` with the file that caused it named, when `e` is a query that failed reading Parquet
/// or stopped on a panic (the Parquet reader panics on some corrupt pages): DataFusion's
/// message names no file, or names it without its leading `/`. Every one of `files` (message
/// name, path) whose footer cannot be read is named with the reason, one per line; when every
/// footer reads, the files are decoded in full, one after the other, and the first that fails
/// is named; when all of them decode, the original message is kept. `hint` is added in every
/// case. Any other error is returned unchanged.
pub fn name_broken_file(e: Error, files: &[(String, PathBuf)], hint: &str) -> Error {
    name_broken(e, files, hint, false)
}

/// [`name_broken_file`] for raw files queried as one table: a file that does not read is a
/// violation of its data (exit 1, rule `parquet`), as it is in a build.
pub fn name_broken_raw_file(e: Error, files: &[(String, PathBuf)]) -> Error {
    name_broken(e, files, "", true)
}

fn name_broken(e: Error, files: &[(String, PathBuf)], hint: &str, raw: bool) -> Error {
    // runpack's own refusal from inside a scan (a release table's check) is said as is
    if let Error::Sql { source, .. } = &e
        && let datafusion::error::DataFusionError::External(inner) = source.find_root()
        && let Some(Error::Refused(m)) = inner.downcast_ref::<Error>()
    {
        return Error::Refused(m.clone());
    }
    let context = match &e {
        Error::Sql { source, context } => {
            let from_parquet = matches!(source.find_root(), datafusion::error::DataFusionError::ParquetError(_))
                || ["Parquet error", "Parquet argument error"].iter().any(|m| source.to_string().contains(m));
            if !from_parquet {
                return e;
            }
            context.clone()
        }
        Error::Panicked { context, .. } => context.clone(),
        _ => return e,
    };
    // each file named, with the 1-based row its failing batch starts at when its footer reads
    let mut broken: Vec<(&String, Option<u64>, String)> =
        files.iter().filter_map(|(name, path)| parquet_footer(path).err().map(|why| (name, None, why))).collect();
    if broken.is_empty() {
        broken
            .extend(files.iter().find_map(|(name, path)| parquet_rows(path).err().map(|(row, why)| (name, row, why))));
    }
    if broken.is_empty() {
        let message = format!("{}{hint}", error_text(&e));
        return Error::format(context, Explained { message, cause: Box::new(e) });
    }
    if raw {
        let violations: Vec<crate::core::report::Violation> = broken
            .into_iter()
            .map(|(name, row, why)| {
                let at = row.map_or(crate::core::report::Position::Pointer(String::new()), |r| {
                    crate::core::report::Position::Line(r)
                });
                crate::core::report::Violation::of_source(
                    name,
                    at,
                    "",
                    "parquet",
                    format!("not readable as Parquet: {why}"),
                )
            })
            .collect();
        return Error::invalid(violations);
    }
    let message: Vec<String> =
        broken.into_iter().map(|(name, _, why)| format!("{name} is not a readable Parquet file: {why}")).collect();
    Error::format(context, Explained { message: format!("{}{hint}", message.join("\n")), cause: Box::new(e) })
}

/// `e`'s message without its context (which the caller keeps).
fn error_text(e: &Error) -> String {
    match e {
        Error::Sql { source, .. } => source.to_string(),
        Error::Panicked { message, .. } => format!("stopped on an internal error of a library runpack uses: {message}"),
        other => other.to_string(),
    }
}

/// Reads the footer of the Parquet file at `path` (a panic of the reader is an error too).
fn parquet_footer(path: &Path) -> std::result::Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    crate::core::error::catch_panic(|| {
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).map(|_| ()).map_err(|e| e.to_string())
    })
    .and_then(|r| r)
}

/// Decodes every row of the Parquet file at `path`, a batch at a time, and drops them: the
/// error, or the panic, of the first page that does not decode.
fn parquet_rows(path: &Path) -> std::result::Result<(), (Option<u64>, String)> {
    let f = std::fs::File::open(path).map_err(|e| (None, e.to_string()))?;
    let mut first_row = 1u64;
    let read = crate::core::error::catch_panic(|| -> std::result::Result<(), String> {
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .and_then(|b| b.with_batch_size(8192).build())
            .map_err(|e| e.to_string())?;
        for b in reader {
            first_row += b.map_err(|e| e.to_string())?.num_rows() as u64;
        }
        Ok(())
    })
    .map_err(|panic| format!("the Parquet reader stopped on {panic}"))
    .and_then(|r| r);
    // the batch that failed, and the column that fails there
    read.map_err(|why| (Some(first_row), crate::stages::ingest::parquet::batch_failure(path, first_row, &why)))
}

/// Raw files registered as a table; keeps the temporary data alive while querying.
pub struct RawTable {
    /// The schema the table was registered with.
    pub schema: SchemaRef,
    /// Whether it was inferred from the files (rather than declared).
    pub inferred: bool,
    /// The Parquet files read (each named by its path), empty for JSON Lines (see
    /// [`name_broken_file`]).
    pub parquet_files: Vec<(String, PathBuf)>,
    /// What reading the files said, one line each (`warning: …`): the reader's warnings, and
    /// the strings read as numbers (`"NaN"`, `"Infinity"`, as runpack's own JSON Lines write
    /// them), with the first few places.
    pub warnings: Vec<String>,
    _work: Option<tempfile::TempDir>,
}

/// Checks that every Parquet file of `files` has exactly the columns `declared` names, each of
/// a type that reads as the declared one without losing anything (see [`type_mismatch`]): a
/// declared column a file lacks would read as nulls, a column the schema does not declare
/// would vanish (as JSON Lines keys not in a declared schema are refused), and a cast when
/// read would turn 1.7 into 1, or drop a struct member the schema does not declare.
///
/// Returns the Arrow schema to read the files with: the declared one, except that a timestamp
/// column (or member, or item) stored with a finer unit than runpack's microseconds keeps the
/// finest unit found in the files, so that nanoseconds are not cut when read.
///
/// Errors: [`Error::Invalid`] listing every missing, undeclared and mistyped column by file;
/// the errors of reading a footer.
fn declared_columns_in_files(
    table: &str,
    declared: &crate::core::schema::TableSchema,
    files: &[crate::stages::ingest::files::InputFile],
) -> Result<SchemaRef> {
    let arrow = declared.arrow_schema();
    let mut read_as: Vec<arrow::datatypes::FieldRef> = arrow.fields().iter().cloned().collect();
    let mut violations = Vec::new();
    for f in files {
        let schema = crate::stages::ingest::parquet::file_schema(f)?;
        let mut problem = |column: &str, message: String| {
            violations.push(crate::core::report::Violation {
                scope: crate::core::report::Scope::Table,
                table: table.to_string(),
                source: Some(crate::core::report::SourceRef {
                    file: f.path.display().to_string(),
                    at: crate::core::report::Position::Pointer(String::new()),
                }),
                path: column.to_string(),
                rule: "schema".into(),
                key: None,
                message,
                finding: None,
            })
        };
        for (d, want) in declared.fields.iter().zip(arrow.fields()) {
            let Ok(have) = schema.field_with_name(&d.name) else {
                problem(&d.name, format!("column `{}` is declared in the schema but not in the file", d.name));
                continue;
            };
            if let Some(m) = type_mismatch(have.data_type(), want.data_type()) {
                problem(&d.name, format!("column `{}` (declared {}) {m}", d.name, d.field_type));
            } else if let Some(slot) = read_as.iter_mut().find(|f| f.name() == &d.name) {
                let finer = crate::core::schema::finer_time_units(slot.data_type(), have.data_type());
                *slot = Arc::new(slot.as_ref().clone().with_data_type(finer));
            }
        }
        for c in schema.fields() {
            if !declared.fields.iter().any(|d| &d.name == c.name()) {
                problem(c.name(), format!("column `{}` is in the file but not in the declared schema", c.name()));
            }
        }
    }
    if violations.is_empty() {
        return Ok(Arc::new(arrow::datatypes::Schema::new_with_metadata(read_as, arrow.metadata().clone())));
    }
    Err(Error::invalid(violations))
}

/// Why a Parquet column of type `have` cannot be read as the declared `want`, or `None` when
/// it can without losing anything: both are the same once mapped to runpack's canonical types
/// (any string or dictionary of strings is a string, any width of signed integer an integer,
/// and so on down lists and structs, member by member, in order), or a narrower unsigned
/// integer is declared `uint64`. Decimals are refused (their values need not fit an
/// integer), and so is an integer declared `number` (above 2^53 a float rounds it).
pub fn type_mismatch(have: &DataType, want: &DataType) -> Option<String> {
    let has_decimal = |dt: &DataType| crate::core::schema::type_contains(dt, &|t| t.is_decimal());
    let refused = || {
        Some(format!(
            "is {} in the file, which does not read as {} without loss; declare the file's type, or CAST \
             the column in the SQL",
            crate::core::schema::type_name(have),
            crate::core::schema::type_name(want)
        ))
    };
    if crate::stages::ingest::parquet::has_naive_timestamp(have) {
        return Some(format!(
            "is {} in the file: timestamps without a time zone, which a `datetime` (UTC) would make up a zone \
             for; query the file without --schema (it reads them as they are) or build it with assume_timezone",
            crate::core::schema::type_name(have)
        ));
    }
    // a column (or member, or item) null in every row holds nothing a declared type could lose
    if have == &DataType::Null {
        return None;
    }
    match (have, want) {
        (DataType::List(h), DataType::List(w))
            if crate::core::schema::type_contains(have, &|t| t == &DataType::Null) =>
        {
            return type_mismatch(h.data_type(), w.data_type());
        }
        (DataType::Struct(h), DataType::Struct(w))
            if crate::core::schema::type_contains(have, &|t| t == &DataType::Null)
                && h.len() == w.len()
                && h.iter().zip(w.iter()).all(|(a, b)| a.name() == b.name()) =>
        {
            return h.iter().zip(w.iter()).find_map(|(a, b)| type_mismatch(a.data_type(), b.data_type()));
        }
        _ => {}
    }
    let canonical = match crate::core::schema::canonical(have) {
        Ok(t) => t,
        Err(m) => return Some(m),
    };
    let want_canonical = crate::core::schema::canonical(want).unwrap_or_else(|_| want.clone());
    let unsigned_widened =
        matches!(have, DataType::UInt8 | DataType::UInt16 | DataType::UInt32) && want_canonical == DataType::UInt64;
    if has_decimal(have) || (canonical != want_canonical && !unsigned_widened) { refused() } else { None }
}

/// The files `query` reads in a folder of raw files: Parquet and JSON Lines at any depth (not
/// `.json`: in a folder, that is as often a document, a schema or a config, as lines).
fn folder_patterns() -> Vec<String> {
    std::iter::once("**/*.parquet".to_string())
        .chain(
            ["jsonl", "ndjson"]
                .iter()
                .flat_map(|ext| ["", ".gz", ".zst"].iter().map(move |z| format!("**/*.{ext}{z}"))),
        )
        .collect()
}

/// Whether the folder `dir` holds a file `query` reads as raw input: a Parquet or JSON Lines
/// file (`.jsonl`, `.ndjson`, compressed or not) at any depth.
pub fn holds_raw_files(dir: &Path) -> bool {
    use crate::stages::ingest::files;
    // one pattern at a time: `find` fails over several where one of them matches nothing
    folder_patterns().iter().any(|p| files::find(dir, std::slice::from_ref(p), "query").is_ok_and(|f| !f.is_empty()))
}

/// Registers raw files as table `name`: a Parquet or JSON Lines file, a folder (every
/// `.parquet` file under it, and every `.jsonl` or `.ndjson` file, plain, `.gz` or `.zst`; a
/// `.json` file is read when named or globbed) or a glob. With `schema`
/// the files are read as that Table Schema; without it the schema is inferred from **all** of
/// the files (Parquet: the files must agree; JSON Lines: runpack's whole-input inference),
/// never from a sample. Git LFS pointers are refused before parsing.
pub async fn register_files(
    ctx: &SessionContext,
    name: &str,
    location: &str,
    schema: Option<&crate::core::schema::TableSchema>,
) -> Result<RawTable> {
    let (base, found, parquet) = raw_files(location)?;
    let fmt = if parquet { crate::core::spec::Format::Parquet } else { crate::core::spec::Format::Jsonl };
    let source = crate::core::spec::SourceDef {
        name: name.to_string(),
        path: crate::core::spec::PathPatterns::Many(found.iter().map(|f| f.rel.clone()).collect()),
        format: fmt,
        record_path: None,
        delimiter: None,
        quote: None,
        comment: None,
        header_row: None,
        schema: None,
        columns: crate::core::spec::ColumnsPolicy::Union,
        nonfinite: crate::core::spec::NonFinite::Ieee,
        // runpack's own JSON Lines write NaN and ±Infinity as these strings: read them back
        coerce_nonfinite_strings: true,
        coerce_numeric_strings: false,
        assume_timezone: None,
        fields: vec![],
        layout: crate::core::spec::Layout::Wide,
        id_columns: vec![],
        keep_text: false,
        on_truncated: crate::core::spec::OnTruncated::Error,
        on_invalid: None,
        wandb: None,
    };
    if parquet {
        let arrow = match schema {
            Some(declared) => declared_columns_in_files(name, declared, &found)?,
            None => {
                let fields = crate::stages::ingest::parquet::plan_for_query(&source, &found)?;
                Arc::new(arrow::datatypes::Schema::new(fields))
            }
        };
        let paths: Vec<PathBuf> = found.iter().map(|f| f.path.clone()).collect();
        register_parquet(ctx, name, &paths, arrow.clone(), &[], None).await?;
        if let Some(declared) = schema {
            check_declared_rules(ctx, name, declared, Some((&found, arrow.clone()))).await?;
        }
        let parquet_files = paths.iter().map(|p| (p.display().to_string(), p.clone())).collect();
        return Ok(RawTable {
            schema: arrow,
            inferred: schema.is_none(),
            parquet_files,
            warnings: vec![],
            _work: None,
        });
    }
    // JSON Lines: read through runpack's own reader into Arrow IPC; a file of 0 bytes (an
    // export that failed, a `.gz` never written to) holds no record, said as a build says it
    let empty: Vec<&str> = found
        .iter()
        .filter(|f| std::fs::metadata(&f.path).is_ok_and(|m| m.len() == 0))
        .map(|f| f.rel.as_str())
        .collect();
    let mut table = register_jsonl(ctx, name, base, source, schema).await?;
    if !empty.is_empty() {
        table.warnings.push(format!(
            "warning: table {name}: {} empty file{} (0 bytes, no record): {}",
            empty.len(),
            if empty.len() == 1 { "" } else { "s" },
            crate::core::report::first_names(&empty, 5)
        ));
    }
    Ok(table)
}

/// The raw files `location` names (a file, a folder or a glob), with the folder patterns are
/// relative to, and whether they are Parquet (else JSON Lines).
///
/// Errors: [`Error::Refused`] for a pipe or device, a place that holds no readable file, a
/// file of another kind, a mix of Parquet and JSON Lines, or a Git LFS pointer.
fn raw_files(location: &str) -> Result<(PathBuf, Vec<crate::stages::ingest::files::InputFile>, bool)> {
    use crate::stages::ingest::files;
    let path = Path::new(location);
    // a pipe or a device (`/dev/stdin`, `<(…)`) can be read once, and a raw table is read twice
    // (its whole-input schema, then the query)
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
        && !meta.is_dir()
    {
        return Err(Error::Refused(format!(
            "{location} is a pipe or a device, not a file: query reads a raw input twice (to infer its schema from \
             all of it, then to run the query), so save it to a file first"
        )));
    }
    misplaced_source(path, location)?;
    let (base, patterns): (PathBuf, Vec<String>) = if path.is_dir() {
        (path.to_path_buf(), folder_patterns())
    } else if path.is_file() {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        (parent, vec![path.file_name().expect("file").to_string_lossy().to_string()])
    } else {
        // the glob syntax of a source's path, without its {captures}, which name nothing here
        if let Some(c) = location.chars().find(|c| matches!(c, '[' | ']' | '{' | '}')) {
            return Err(Error::Refused(format!(
                "{location}: no such file or folder, and `{c}` is not glob syntax here (query's globs take `*`, `**` \
                 and `?`, not character classes or {{a,b}} alternatives)"
            )));
        }
        let literal_end = location.find(['*', '?']).unwrap_or(location.len());
        let dir_end = location[..literal_end].rfind('/').map(|i| i + 1).unwrap_or(0);
        let base = if dir_end == 0 { PathBuf::from(".") } else { PathBuf::from(&location[..dir_end - 1]) };
        (base, vec![location[dir_end..].to_string()])
    };
    let mut found = Vec::new();
    for p in &patterns {
        found.extend(files::find(&base, std::slice::from_ref(p), location)?);
    }
    found.sort();
    found.dedup();
    if found.is_empty() {
        return Err(Error::Refused(format!("no Parquet or JSON Lines file found at {location}")));
    }
    for f in &found {
        if let Some(p) = files::lfs_pointer(&f.path) {
            return Err(files::lfs_pointer_error(&f.path.display().to_string(), &p));
        }
    }
    let readable = |rel: &str| {
        let plain = rel.strip_suffix(".gz").or_else(|| rel.strip_suffix(".zst")).unwrap_or(rel);
        rel.ends_with(".parquet") || [".jsonl", ".ndjson", ".json"].iter().any(|ext| plain.ends_with(ext))
    };
    if let Some(f) = found.iter().find(|f| !readable(&f.rel)) {
        return Err(Error::Refused(format!(
            "{}: query reads Parquet (.parquet) and JSON Lines (.jsonl, .ndjson, .json, also .gz or .zst) files, \
             known by their extension (in lower case), and this is neither; a CSV file is read by a pipeline's \
             `csv` source",
            f.path.strip_prefix(".").unwrap_or(&f.path).display()
        )));
    }
    let parquet = found.iter().all(|f| f.rel.ends_with(".parquet"));
    let jsonl = found.iter().all(|f| !f.rel.ends_with(".parquet"));
    if !parquet && !jsonl {
        // a release folder whose manifest is gone holds both: say that, not how to split them
        // (by the files only a release writes: a folder of raw files may have a README.md)
        let release_files = ["SHA256SUMS", "datapackage.json"];
        if path.is_dir() && release_files.iter().any(|f| path.join(f).is_file()) {
            return Err(Error::Refused(format!(
                "{location} looks like a release folder (it holds {}) but has no manifest.json, which names a \
                 release's tables and their files; restore manifest.json (`runpack verify {location}` checks the \
                 release), or query one table's files, such as {location}/data/<table>.parquet",
                release_files.iter().filter(|f| path.join(f).is_file()).copied().collect::<Vec<_>>().join(", ")
            )));
        }
        return Err(Error::Refused(format!(
            "{location} mixes Parquet and JSON Lines files, which one query does not read together; query each \
             kind on its own (a glob such as `{}`), or build a pipeline with a source for each",
            if path.is_dir() { format!("{location}/*.parquet") } else { "*.parquet".to_string() }
        )));
    }
    Ok((base, found, parquet))
}

/// Registers the JSON Lines files of `source` as table `name`, read by runpack's own reader
/// (whole-input inference, or `schema`) into an Arrow IPC file kept with the returned table.
async fn register_jsonl(
    ctx: &SessionContext,
    name: &str,
    base: PathBuf,
    source: crate::core::spec::SourceDef,
    schema: Option<&crate::core::schema::TableSchema>,
) -> Result<RawTable> {
    let work = tempfile::tempdir().map_err(|e| Error::io("temporary folder", e))?;
    let first = read_jsonl(&base, source.clone(), schema, work.path());
    // columns whose values no one type holds (files that type a value differently): read
    // again kept whole, as JSON text, as init declares them (`any`), and said
    let mixed = match &first {
        Err(Error::Invalid { violations, .. }) if schema.is_none() => mixed_types(violations).unwrap_or_default(),
        _ => Vec::new(),
    };
    let ing = if mixed.is_empty() {
        first?
    } else {
        let mut source = source;
        for c in &mixed {
            let any = serde_json::json!({"name": c, "type": "any"});
            source.fields.push(serde_json::from_value(any).map_err(|e| Error::format("(query)", e))?);
        }
        read_jsonl(&base, source, schema, work.path())?
    };
    let read = datafusion::datasource::file_format::options::ArrowReadOptions {
        schema: Some(&ing.schema),
        ..Default::default()
    };
    let table_err = |e| Error::sql(format!("table {name}"), e);
    let rows = ctx.read_arrow(ing.ipc_file.to_string_lossy().as_ref(), read).await.map_err(table_err)?;
    let shadowed = |f: &arrow::datatypes::FieldRef| crate::core::spec::SHADOWED_PROVENANCE.contains(&f.name().as_str());
    let rows = if ing.schema.fields().iter().any(shadowed) {
        rows.select(own_provenance(&ing.schema)).map_err(table_err)?
    } else {
        rows
    };
    let registered: SchemaRef = Arc::new(rows.schema().as_arrow().clone());
    // registered under the name as given (`--table My` is `"My"` in SQL, as a release's tables are)
    ctx.register_table(datafusion::common::TableReference::bare(name), rows.into_view()).map_err(table_err)?;
    if let Some(declared) = schema {
        check_declared_rules(ctx, name, declared, None).await?;
    }
    let mut warnings = read_warnings(name, &ing.found);
    if !mixed.is_empty() {
        warnings.push(format!(
            "warning: table {name}: column{} {} hold{} values no one column type holds (values of several types, a \
             list of mixed elements, nesting deeper than 32 levels): kept whole, as JSON text",
            if mixed.len() == 1 { "" } else { "s" },
            mixed.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "),
            if mixed.len() == 1 { "s" } else { "" }
        ));
    }
    Ok(RawTable { schema: registered, inferred: schema.is_none(), parquet_files: vec![], warnings, _work: Some(work) })
}

/// The columns of a read that failed only because values of a column were of several types,
/// or `None`: each violation a type problem against the type an earlier value decided, or one
/// that typing the values found (a list of a number and a boolean, as lm-eval's `resps`
/// holds; lists nested too deep), each at a top-level column.
fn mixed_types(violations: &[crate::core::report::Violation]) -> Option<Vec<String>> {
    use crate::core::report::Finding;
    let mut columns = Vec::new();
    for v in violations {
        let column = match &v.finding {
            Some(Finding::Type { column, decided_at: Some(_), .. }) => column.clone(),
            None if v.rule == "type" => crate::stages::ingest::path::top_key(&v.path)?,
            _ => return None,
        };
        if column.is_empty() {
            return None;
        }
        if !columns.contains(&column) {
            columns.push(column);
        }
    }
    (!columns.is_empty()).then_some(columns)
}

/// Reads the JSON Lines files of `source` into an Arrow IPC file under `work`.
///
/// Errors: as [`crate::stages::ingest::run`], with a `.json` document said as such.
fn read_jsonl(
    base: &Path,
    source: crate::core::spec::SourceDef,
    schema: Option<&crate::core::schema::TableSchema>,
    work: &Path,
) -> Result<crate::stages::ingest::Ingested> {
    let spec = crate::core::spec::PipelineSpec {
        dir: base.to_path_buf(),
        file: base.join("(query)"),
        text: String::new(),
        def: crate::core::spec::PipelineDef {
            name: "query".into(),
            version: "0".into(),
            card: Default::default(),
            sources: vec![source],
            views: vec![],
            tables: vec![],
            formats: None,
            not_read: None,
            left_out: vec![],
        },
        table_schemas: vec![],
        source_schemas: vec![schema.cloned()],
        untyped_as_text: true,
        // a release's own JSON Lines carry `_source_file` and `_source_line`: those are kept
        data_provenance: true,
    };
    let mut rejects = crate::stages::rejects::Rejects::new(work.join("rejects"));
    let opts = crate::stages::ingest::IngestOptions {
        on_invalid: crate::stages::ingest::OnInvalid::Fail,
        large_cell_bytes: u64::MAX,
        read_digests: None,
        max_errors: 100,
    };
    crate::stages::ingest::run(&spec, 0, work, &opts, &[], &mut rejects)
        .and_then(|mut ing| ing.found.check().map(|_| ing))
        .map_err(|e| in_query_words(json_document(e, base)))
}

/// `e` said in `query`'s words: the columns of a source whose records name none are declared
/// with `--schema`, not a pipeline's `[[source.field]]`.
fn in_query_words(e: Error) -> Error {
    match e {
        Error::Config { location, message } if message.contains(crate::stages::ingest::DECLARED_COLUMNS_READ) => {
            let message = message.replace(
                crate::stages::ingest::DECLARED_COLUMNS_READ,
                "with --schema (a Table Schema file): the records are read with them",
            );
            Error::Config { location, message }
        }
        other => other,
    }
}

/// The lines [`RawTable::warnings`] holds, from what reading the files of table `name` found.
fn read_warnings(name: &str, found: &crate::core::report::BuildReport) -> Vec<String> {
    let mut out: Vec<String> = found.warnings.iter().map(|w| w.to_string()).collect();
    for tally in found.coercions.values() {
        let n = tally.count;
        out.push(format!(
            "warning: table {name}: {n} string{} read as number{}{}",
            if n == 1 { "" } else { "s" },
            if n == 1 { "" } else { "s" },
            if n > tally.examples.len() as u64 { format!(", the first {}:", tally.examples.len()) } else { ":".into() }
        ));
        out.extend(tally.examples.iter().map(|e| format!("  {e}")));
    }
    out
}

/// A read of JSON Lines that failed because a file is one JSON document spread over lines
/// (its line 1 is no whole JSON value: a `.json` file, or one whose line 1 only opens an array
/// or an object, as lm-eval 0.4.0's `.jsonl` samples do), said as such rather than as one
/// violation per line; any other error as it is. File names are relative to `base`.
fn json_document(e: Error, base: &Path) -> Error {
    let Error::Invalid { violations, .. } = &e else { return e };
    let opens = |file: &str| {
        let Ok(f) = std::fs::File::open(base.join(file)) else { return false };
        let mut first = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(std::io::Read::take(f, 4096)), &mut first);
        matches!(first.trim(), "[" | "{")
    };
    let document = violations.iter().find(|v| {
        v.rule == "json"
            && v.source.as_ref().is_some_and(|s| {
                s.at == crate::core::report::Position::Line(1) && (s.file.ends_with(".json") || opens(&s.file))
            })
    });
    match document.and_then(|v| v.source.as_ref()) {
        Some(s) => Error::Refused(format!(
            "{}: line 1 is not a whole JSON value: this looks like one JSON document over several lines, and \
             query reads JSON Lines (one JSON value per line); a pipeline's `json` source reads a document (its \
             record_path names the records)",
            s.file
        )),
        None => e,
    }
}

/// Refuses a query source that names a place next to what was meant: a path that does not
/// exist (and is no glob), the folder of a pipeline's releases (its versions are the
/// releases), a pipeline folder, a release's `data/` or `jsonl/` folder (its tables would be read as one), and a
/// release's own `manifest.json`.
///
/// Errors: [`Error::Refused`] saying what to query instead.
fn misplaced_source(path: &Path, location: &str) -> Result<()> {
    let refuse = |m: String| Err(Error::Refused(m));
    // (glob-like text is said to be glob syntax or not where globs are read)
    if !path.exists() && !location.contains(['*', '?', '[', ']', '{', '}']) {
        return Err(Error::not_found(location));
    }
    if path.is_dir() {
        // releases one or two levels down: `<releases>/<name>/<version>`
        let children = |p: &Path| -> Vec<PathBuf> {
            let mut c: Vec<PathBuf> = std::fs::read_dir(p)
                .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
                .unwrap_or_default();
            c.sort();
            c
        };
        let mut found: Vec<PathBuf> = Vec::new();
        for c in children(path) {
            if c.join("manifest.json").is_file() {
                found.push(c);
            } else {
                found.extend(children(&c).into_iter().filter(|g| g.join("manifest.json").is_file()));
            }
        }
        let versions: Vec<String> =
            found.iter().filter_map(|f| f.strip_prefix(path).ok()).map(|r| r.display().to_string()).collect();
        if let Some(first) = versions.first() {
            return refuse(format!(
                "{location} holds releases ({}), not one: query one of them, such as {}",
                versions.join(", "),
                path.join(first).display()
            ));
        }
        if path.join("pipeline.toml").is_file() {
            return refuse(format!(
                "{location} is a pipeline folder, whose raw files query would read as one table: build it \
                 (`runpack build {location}`) and query the release, or query one source's files"
            ));
        }
        if let Some(release) = path.parent().filter(|r| r.join("manifest.json").is_file())
            && path.file_name().is_some_and(|n| n == "data" || n == "jsonl")
        {
            // (`data` given from inside the release: its parent is the current folder)
            let release = if release.as_os_str().is_empty() { Path::new(".") } else { release };
            return refuse(format!(
                "{location} holds the files of every table of the release {}, which query would read as one \
                 table: query the release (each table under its name), or one table's files",
                release.display()
            ));
        }
    }
    if path.file_name().is_some_and(|n| n == "manifest.json")
        && let Some(release) = path.parent().filter(|r| r.join("SHA256SUMS").is_file() || r.join("data").is_dir())
    {
        return refuse(format!(
            "{location} is a release's manifest, not data: query the release folder {}",
            if release.as_os_str().is_empty() { Path::new(".") } else { release }.display()
        ));
    }
    Ok(())
}

/// Checks the rows of raw table `name` against what `declared` asks beyond types, as a build
/// checks a table: field constraints (`required`, `unique`, `enum`, `pattern`, bounds,
/// lengths) and the primary key (no duplicates, no nulls). The rows are read once more, in key
/// order (the sort spills to disk beyond the session's pool). `foreignKeys` name other tables,
/// which a query of raw files does not have: they are not checked, and a warning says so.
///
/// `parquet`: the table's Parquet files and the schema they are read with; their rows are
/// then placed by file and 1-based row number (JSON Lines rows carry their file and line).
///
/// Errors: [`Error::Invalid`] listing the violations (with the file and line or row of each);
/// [`Error::Sql`] when the rows cannot be read.
async fn check_declared_rules(
    ctx: &SessionContext,
    name: &str,
    declared: &crate::core::schema::TableSchema,
    parquet: Option<(&[crate::stages::ingest::files::InputFile], SchemaRef)>,
) -> Result<()> {
    if !declared.foreign_keys.is_empty() {
        tracing::warn!(
            "table {name}: the schema's foreignKeys are not checked (they name other tables, and a query of raw \
             files reads one)"
        );
    }
    let rules = !declared.primary_key.is_empty() || declared.fields.iter().any(|f| f.has_constraints());
    if !rules {
        return Ok(());
    }
    let schema = crate::core::schema::TableSchema { foreign_keys: vec![], ..declared.clone() };
    use datafusion::prelude::ident;
    let table_err = |e| Error::sql(format!("table {name}"), e);
    let own_place = schema.fields.iter().any(|f| f.name == "_source_file" || f.name == "_source_line");
    let rows = match parquet {
        // each file read alone, in order, on one partition: its rows numbered as stored
        Some((files, arrow)) if !own_place => {
            let one = session();
            let mut parts = Vec::new();
            for (i, f) in files.iter().enumerate() {
                let part = format!("f{i}");
                register_parquet(&one, &part, std::slice::from_ref(&f.path), arrow.clone(), &[], None).await?;
                let file = f.rel.replace('\'', "''");
                parts.push(format!(
                    "SELECT *, '{file}' AS _source_file, CAST(row_number() OVER () AS BIGINT) AS _source_line FROM {part}"
                ));
            }
            one.sql(&parts.join(" UNION ALL ")).await.map_err(table_err)?
        }
        _ => ctx.table(datafusion::common::TableReference::bare(name)).await.map_err(table_err)?,
    };
    // the declared columns in their order (as the checks read them), then each row's place
    let have: Vec<String> = rows.schema().fields().iter().map(|f| f.name().clone()).collect();
    let place = ["_source_file", "_source_line"];
    let mut columns: Vec<_> = schema.fields.iter().map(|f| ident(&f.name)).collect();
    columns.extend(
        place
            .iter()
            .filter(|p| have.iter().any(|h| h == *p) && !schema.fields.iter().any(|f| f.name == **p))
            .map(|p| ident(*p)),
    );
    let order: Vec<_> = schema
        .primary_key
        .iter()
        .map(String::as_str)
        .chain(place.iter().copied().filter(|p| have.iter().any(|h| h == p)))
        .map(|c| ident(c).sort(true, false))
        .collect();
    let mut rows = rows.select(columns).map_err(table_err)?;
    if !schema.primary_key.is_empty() {
        rows = rows.sort(order).map_err(table_err)?;
    }
    let arrow: SchemaRef = Arc::new(rows.schema().as_arrow().clone());
    let refs = std::collections::BTreeMap::new();
    let mut validator = crate::stages::validate::Validator::new(
        name,
        &schema,
        arrow,
        crate::core::spec::DuplicatePolicy::Error,
        crate::stages::ingest::OnInvalid::Fail,
        &refs,
        vec![],
    )?;
    let mut report = crate::core::report::BuildReport::new(100);
    let work = tempfile::tempdir().map_err(|e| Error::io("temporary folder", e))?;
    let mut rejects = crate::stages::rejects::Rejects::new(work.path().join("rejects"));
    let mut stream = rows.execute_stream().await.map_err(table_err)?;
    while let Some(b) = stream.next().await {
        validator.push(b.map_err(table_err)?, &mut report, &mut rejects)?;
    }
    validator.finish(&mut report, &mut rejects)?;
    report.check()
}

/// The columns of a raw JSON Lines table whose files hold `_source_file`/`_source_line` of
/// their own (a table's JSON Lines copy) beside runpack's (under [`crate::core::spec::SHADOWED_PROVENANCE`]):
/// a row with either of its own keeps them; any other row (a file without them, read in the
/// same table, or a row whose own are null) gets runpack's file and line, where the column
/// is text (`_source_file`) or a line number or JSON pointer (`_source_line`); a column of
/// another type is the data's alone. runpack's columns themselves are left out.
fn own_provenance(schema: &SchemaRef) -> Vec<datafusion::prelude::Expr> {
    use datafusion::prelude::{Expr, cast, lit, when};
    let column = |n: &str| Expr::Column(datafusion::common::Column::from_name(n));
    let names = ["_source_file", "_source_line"];
    let own: Vec<&str> = names.into_iter().filter(|n| schema.field_with_name(n).is_ok()).collect();
    let own_row = own.iter().map(|n| column(n).is_not_null()).reduce(Expr::or).unwrap_or(lit(false));
    let mut exprs = Vec::new();
    for f in schema.fields() {
        let n = f.name().as_str();
        if crate::core::spec::SHADOWED_PROVENANCE.contains(&n) {
            continue;
        }
        // runpack's file (text) and line (integer) read as the data's only where its type can hold them
        let holds =
            |i: usize| matches!((i, f.data_type()), (0, DataType::Utf8) | (1, DataType::Utf8 | DataType::Int64));
        exprs.push(match names.iter().position(|p| *p == n).filter(|&i| holds(i)) {
            Some(i) => {
                let runpack = cast(column(crate::core::spec::SHADOWED_PROVENANCE[i]), f.data_type().clone());
                when(own_row.clone(), column(n)).otherwise(runpack).expect("one branch").alias(n)
            }
            None => column(n),
        });
    }
    for (i, n) in names.into_iter().enumerate() {
        if !own.contains(&n) {
            let runpack = column(crate::core::spec::SHADOWED_PROVENANCE[i]);
            exprs.push(
                when(own_row.clone(), lit(datafusion::common::ScalarValue::Null))
                    .otherwise(runpack)
                    .expect("one branch")
                    .alias(n),
            );
        }
    }
    exprs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::print::{PrintFormat, print};
    use crate::sql::session::run_script;
    use arrow::array::RecordBatch;

    #[tokio::test]
    async fn raw_parquet_nanoseconds_read_with_a_schema_keep_their_digits() {
        use arrow::array::{Array, ListArray, TimestampNanosecondArray};
        let dir = tempfile::tempdir().unwrap();
        let ts = TimestampNanosecondArray::from(vec![1_700_000_000_123_456_789, 1_700_000_000_000_000_001])
            .with_timezone("UTC");
        let item = Arc::new(arrow::datatypes::Field::new("item", ts.data_type().clone(), true));
        let list =
            ListArray::new(item.clone(), arrow::buffer::OffsetBuffer::from_lengths([1, 1]), Arc::new(ts.clone()), None);
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new("t", ts.data_type().clone(), true),
            arrow::datatypes::Field::new("ts", DataType::List(item), true),
        ]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ts), Arc::new(list)]).unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let declared: crate::core::schema::TableSchema = serde_json::from_str(
            r#"{"fields":[{"name":"t","type":"datetime"},{"name":"ts","type":"array","items":{"type":"datetime"}}]}"#,
        )
        .unwrap();
        let ctx = session();
        let raw = register_files(&ctx, "t", path.to_str().unwrap(), Some(&declared)).await.unwrap();
        assert_eq!(
            raw.schema.field(0).data_type(),
            &DataType::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, Some("UTC".into()))
        );
        let (schema, batches) =
            run_script(&ctx, "SELECT CAST(t AS VARCHAR) AS t, CAST(ts[1] AS VARCHAR) AS i FROM t ORDER BY t")
                .await
                .unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Csv, &schema, &batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "t,i\n2023-11-14T22:13:20.000000001Z,2023-11-14T22:13:20.000000001Z\n\
             2023-11-14T22:13:20.123456789Z,2023-11-14T22:13:20.123456789Z\n"
        );
    }

    #[test]
    fn a_timestamp_without_a_zone_does_not_read_as_a_datetime() {
        use arrow::datatypes::TimeUnit;
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let m = type_mismatch(&DataType::Timestamp(TimeUnit::Nanosecond, None), &utc).unwrap();
        assert!(m.contains("timestamps without a time zone"), "{m}");
        assert_eq!(type_mismatch(&DataType::Timestamp(TimeUnit::Nanosecond, Some("+02:00".into())), &utc), None);
    }

    #[tokio::test]
    async fn raw_parquet_without_a_schema_keeps_nanoseconds_and_types_runpack_does_not_store() {
        use arrow::array::{Array, Int64Builder, MapBuilder, NullArray, StringBuilder, TimestampNanosecondArray};
        let dir = tempfile::tempdir().unwrap();
        let ts = TimestampNanosecondArray::from(vec![1_700_000_000_123_456_789]).with_timezone("UTC");
        // pyarrow's names for a map's entries
        let names = arrow::array::MapFieldNames { entry: "entries".into(), key: "key".into(), value: "value".into() };
        let mut map = MapBuilder::new(Some(names), StringBuilder::new(), Int64Builder::new());
        map.keys().append_value("k");
        map.values().append_value(7);
        map.append(true).unwrap();
        let map = map.finish();
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new("t", ts.data_type().clone(), true),
            arrow::datatypes::Field::new("n", DataType::Null, true),
            arrow::datatypes::Field::new("m", map.data_type().clone(), true),
        ]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(ts), Arc::new(NullArray::new(1)), Arc::new(map)])
                .unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let ctx = session();
        register_files(&ctx, "t", path.to_str().unwrap(), None).await.unwrap();
        let (schema, batches) = run_script(&ctx, "SELECT CAST(t AS VARCHAR) AS t, n, m FROM t").await.unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Ndjson, &schema, &batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"t\":\"2023-11-14T22:13:20.123456789Z\",\"n\":null,\"m\":[{\"key\":\"k\",\"value\":7}]}\n"
        );
    }

    #[tokio::test]
    async fn release_strings_are_views_inside_sql_and_print_as_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new("k", DataType::Utf8, true),
            arrow::datatypes::Field::new("v", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(arrow::array::StringArray::from(vec![
                    Some("a"),
                    None,
                    Some("a long value past twelve bytes"),
                ])),
                Arc::new(arrow::array::Int64Array::from(vec![1, 2, 3])),
            ],
        )
        .unwrap();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema.clone(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let ctx = session();
        register_parquet(&ctx, "t", &[path], string_views(&schema), &[], None).await.unwrap();
        let (schema, batches) = run_script(
            &ctx,
            "SELECT arrow_typeof(k) AS ty, k, array_agg(k) OVER () AS ks, named_struct('k', k) AS s FROM t ORDER BY v",
        )
        .await
        .unwrap();
        let types: Vec<String> = schema.fields().iter().map(|f| f.data_type().to_string()).collect();
        assert_eq!(types, ["Utf8", "Utf8View", "List(Utf8View)", "Struct(\"k\": Utf8View)"]);
        let mut out = Vec::new();
        print(PrintFormat::Ndjson, &schema, &batches, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                r#"{"ty":"Utf8View","k":"a","ks":["a",null,"a long value past twelve bytes"],"s":{"k":"a"}}"#
            ),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3);
        // a CASE or UNION is typed by its first branch until type coercion: the result keeps
        // the coerced types (here 64-bit integers and floats) next to a view column
        for (sql, expected) in [
            (
                "SELECT k, CASE WHEN v = 1 THEN 0 ELSE v * 10000000000 END AS x, \
                 CASE WHEN v = 1 THEN 0 ELSE v / 4.0 END AS f FROM t ORDER BY v",
                "k,x,f\na,0,0.0\n,20000000000,0.5\na long value past twelve bytes,30000000000,0.75\n",
            ),
            ("SELECT 'first' AS k UNION ALL SELECT k FROM t WHERE v = 1", "k\nfirst\na\n"),
            // (a lone column's null is written "" so that the line is not blank)
            ("SELECT NULL AS k UNION ALL SELECT k FROM t WHERE v = 1", "k\n\"\"\na\n"),
        ] {
            let (schema, batches) = run_script(&ctx, sql).await.unwrap();
            let mut sorted = Vec::new();
            print(PrintFormat::Csv, &schema, &batches, &mut sorted).unwrap();
            let mut lines: Vec<&str> = std::str::from_utf8(&sorted).unwrap().lines().collect();
            lines[1..].sort();
            let mut want: Vec<&str> = expected.lines().collect();
            want[1..].sort();
            assert_eq!(lines, want, "{sql}");
            let mut json = Vec::new();
            print(PrintFormat::Json, &schema, &batches, &mut json).unwrap();
        }
    }
}

//! SQL over releases and over Parquet files.
//!
//! In: a release folder (its `manifest.json` names the tables, their files and schemas) and a
//! SQL statement. Out: Arrow record batches, and their rendering as a table, CSV, JSON or
//! NDJSON. Every table is registered with the schema recorded in the manifest: nothing is
//! inferred from a sample of the data, so a column that only appears in a later file is
//! there, and shards written with another string encoding are read as the declared type.
//! One exception: a release's top-level string columns are read as `Utf8View` (DataFusion's
//! own type for Parquet text, faster to group and compare; see [`string_views`]), which
//! print as any text does. Raw files keep exactly the types given with `--schema`.
//!
//! Parquet min/max statistics leave NaN out, while SQL orders NaN above every number, so a
//! float column's statistics may not be used to skip data (apache/datafusion#15812) nor to
//! answer `max(x)` without reading it. Tables with floating-point columns therefore never
//! give statistics to the planner, and a scan of one prunes row groups and pages by
//! statistics only when none of its filters reads a float column (filters on a run id or a
//! step still skip what they can); filters made while a query runs (top-k, join, aggregate
//! dynamic filters) are turned off for such tables, as their columns are not known in
//! advance.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use crate::core::error::{Error, Result};
use crate::core::options::SQL_RECURSION_LIMIT;
use crate::stages::release::Manifest;

use super::groups;

/// Memory DataFusion may use for sorts, joins and aggregations before spilling to disk, in
/// bytes (256 MiB). A table's final ordering is runpack's own bounded sort, not SQL's.
pub const SQL_MEMORY_LIMIT_BYTES: usize = 256 << 20;

/// A DataFusion session with runpack's settings and SQL functions, for a build. Operators that
/// can spill (sorts, aggregations, joins) spill to temporary files beyond
/// [`SQL_MEMORY_LIMIT_BYTES`], so memory does not grow with the input.
///
/// It runs every plan as one partition: rows then leave each operator in an order fixed by
/// its input (groups in the order they are first met, `array_agg` items in row order), not by
/// which thread finished first, so the same inputs give the same tables and card sections.
/// The build's other stages (parsing, encoding, hashing) keep the other cores busy.
pub fn session() -> SessionContext {
    session_with_partitions(1, false)
}

/// Parses `sql` into statements as the sessions runpack makes do ([`SQL_RECURSION_LIMIT`]).
///
/// Errors: the parser's, for the caller to place in the SQL text.
pub fn parse_statements(
    sql: &str,
) -> std::result::Result<
    std::collections::VecDeque<datafusion::sql::parser::Statement>,
    datafusion::error::DataFusionError,
> {
    datafusion::sql::parser::DFParserBuilder::new(sql)
        .with_recursion_limit(SQL_RECURSION_LIMIT)
        .build()?
        .parse_statements()
}

/// A [`session`] for queries over finished Parquet files (`runpack query`): twice as many
/// partitions as cores. DataFusion splits a scan into contiguous byte ranges of the files, one
/// per partition, and each range takes whole row groups, so two ranges over a few large row
/// groups can differ by one row group (a release's 6 row groups split 188,000 against 228,000
/// rows); finer ranges let the runtime's threads even that out. The build keeps one
/// partition (see [`session`]). A `GROUP BY` of one text column runs its per-partition
/// stage as a [`groups::ViewGroupsExec`].
pub fn query_session() -> SessionContext {
    session_with_partitions(2 * cores(), true)
}

/// The number of cores the process may use (2 when unknown).
fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

pub(super) fn session_with_partitions(partitions: usize, view_groups: bool) -> SessionContext {
    let mut config =
        SessionConfig::new().with_target_partitions(partitions).with_batch_size(8192).with_information_schema(true);
    config.options_mut().execution.parquet.schema_force_view_types = false;
    config.options_mut().execution.time_zone = Some("+00:00".into());
    // errors name where in the SQL text they are
    config.options_mut().sql_parser.collect_spans = true;
    config.options_mut().sql_parser.recursion_limit =
        datafusion::common::config::ConfigNonZeroUsize::try_new(SQL_RECURSION_LIMIT).expect("not zero");
    let mut builder = SessionStateBuilder::new().with_config(config).with_default_features();
    if view_groups {
        builder = builder.with_physical_optimizer_rule(Arc::new(groups::ViewGroupBy));
    }
    match datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
        .with_memory_limit(SQL_MEMORY_LIMIT_BYTES, 1.0)
        .build_arc()
    {
        Ok(runtime) => builder = builder.with_runtime_env(runtime),
        Err(e) => tracing::warn!("no memory limit for SQL: {e}"),
    }
    let mut state = builder.build();
    // after DataFusion's own rules: every plan a session runs passes it
    state.add_analyzer_rule(Arc::new(RefuseSimilarTo));
    let ctx = SessionContext::new_with_state(state);
    crate::sql::udf::register(&ctx);
    ctx
}

/// Refuses a plan with `SIMILAR TO` ([`uses_similar_to`]) when it is analyzed, before it runs:
/// queries, tables and card sections alike.
#[derive(Debug)]
struct RefuseSimilarTo;

impl datafusion::optimizer::AnalyzerRule for RefuseSimilarTo {
    fn analyze(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        _: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<datafusion::logical_expr::LogicalPlan> {
        if uses_similar_to(&plan) {
            return Err(datafusion::error::DataFusionError::Plan(SIMILAR_TO_REFUSED.into()));
        }
        Ok(plan)
    }

    fn name(&self) -> &str {
        "the SIMILAR TO check"
    }
}

fn has_float(dt: &DataType) -> bool {
    crate::core::schema::type_contains(dt, &|t| t.is_floating())
}

/// Registers Parquet `files` as table `name` with `schema`; a table with floating-point
/// columns is registered as a [`NanSafeParquet`] (see the module docs). `order`: columns the
/// rows of each file are known to be sorted by (ascending, nulls last; see [`declared_order`]),
/// so that DataFusion can skip sorts and aggregate groups as they end; empty when unknown.
///
/// Errors: [`Error::Io`] for a path that cannot be made absolute, [`Error::Sql`] when
/// DataFusion refuses the table.
pub async fn register_parquet(
    ctx: &SessionContext,
    name: &str,
    files: &[PathBuf],
    schema: SchemaRef,
    order: &[String],
) -> Result<()> {
    if files.is_empty() {
        // a table without any file (no rows, no split): an empty table of that schema
        let empty = datafusion::datasource::MemTable::try_new(schema, vec![vec![]])
            .map_err(|e| Error::sql(format!("table {name}"), e))?;
        ctx.register_table(datafusion::common::TableReference::bare(name), Arc::new(empty))
            .map_err(|e| Error::sql(format!("table {name}"), e))?;
        return Ok(());
    }
    let urls = files
        .iter()
        .map(|p| {
            let abs = std::path::absolute(p).map_err(|e| Error::io(p, e))?;
            ListingTableUrl::parse(abs.to_string_lossy()).map_err(|e| Error::sql(format!("table {name}"), e))
        })
        .collect::<Result<Vec<_>>>()?;
    let floats: std::collections::BTreeSet<String> =
        schema.fields().iter().filter(|f| has_float(f.data_type())).map(|f| f.name().clone()).collect();
    let listing = |pruning: bool| -> Result<Arc<ListingTable>> {
        let mut options = datafusion::config::TableParquetOptions::default();
        options.global.pruning = pruning;
        options.global.enable_page_index = pruning;
        options.global.schema_force_view_types = false;
        let format = ParquetFormat::default().with_options(options);
        let mut options = ListingOptions::new(Arc::new(format)).with_file_extension(".parquet");
        if !order.is_empty() {
            options = options.with_file_sort_order(vec![sort_exprs(order)]);
        }
        let config = ListingTableConfig::new_with_multi_paths(urls.clone())
            .with_listing_options(options)
            .with_schema(schema.clone());
        Ok(Arc::new(ListingTable::try_new(config).map_err(|e| Error::sql(format!("table {name}"), e))?))
    };
    let table: Arc<dyn datafusion::catalog::TableProvider> = if floats.is_empty() {
        listing(true)?
    } else {
        let state = ctx.state_ref();
        let mut state = state.write();
        let optimizer = &mut state.config_mut().options_mut().optimizer;
        optimizer.enable_dynamic_filter_pushdown = false;
        optimizer.enable_topk_dynamic_filter_pushdown = false;
        optimizer.enable_join_dynamic_filter_pushdown = false;
        optimizer.enable_aggregate_dynamic_filter_pushdown = false;
        Arc::new(NanSafeParquet { pruned: listing(true)?, unpruned: listing(false)?, floats })
    };
    ctx.register_table(datafusion::common::TableReference::bare(name), table)
        .map_err(|e| Error::sql(format!("table {name}"), e))?;
    Ok(())
}

/// Parquet files of a table with floating-point columns, scanned with statistics pruning
/// only when no filter of the scan reads one of those columns.
#[derive(Debug)]
pub struct NanSafeParquet {
    pruned: Arc<ListingTable>,
    unpruned: Arc<ListingTable>,
    /// The top-level columns that hold floats (at any depth).
    floats: std::collections::BTreeSet<String>,
}

impl NanSafeParquet {
    fn pick(&self, filters: &[datafusion::prelude::Expr]) -> &Arc<ListingTable> {
        let reads_float = filters.iter().any(|f| f.column_refs().iter().any(|c| self.floats.contains(&c.name)));
        if reads_float { &self.unpruned } else { &self.pruned }
    }

    /// `state` with file statistics off, so that the planner never takes a float column's
    /// min/max for the data's.
    fn without_statistics(
        state: &dyn datafusion::catalog::Session,
    ) -> datafusion::error::Result<datafusion::execution::SessionState> {
        let mut state = state
            .as_any()
            .downcast_ref::<datafusion::execution::SessionState>()
            .ok_or_else(|| datafusion::error::DataFusionError::Internal("a session state was expected".into()))?
            .clone();
        state.config_mut().options_mut().execution.collect_statistics = false;
        Ok(state)
    }
}

#[async_trait::async_trait]
impl datafusion::catalog::TableProvider for NanSafeParquet {
    fn schema(&self) -> SchemaRef {
        self.unpruned.schema()
    }

    fn table_type(&self) -> datafusion::datasource::TableType {
        datafusion::datasource::TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&datafusion::prelude::Expr],
    ) -> datafusion::error::Result<Vec<datafusion::logical_expr::TableProviderFilterPushDown>> {
        self.unpruned.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[datafusion::prelude::Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        let state = Self::without_statistics(state)?;
        self.pick(filters).scan(&state, projection, filters, limit).await
    }

    async fn scan_with_args<'a>(
        &self,
        state: &dyn datafusion::catalog::Session,
        args: datafusion::catalog::ScanArgs<'a>,
    ) -> datafusion::error::Result<datafusion::catalog::ScanResult> {
        let state = Self::without_statistics(state)?;
        self.pick(args.filters().unwrap_or(&[])).scan_with_args(&state, args).await
    }
}

/// Registers every table of the release in `dir`. Each table's files are checked when a
/// query first reads the table (missing, a Git LFS pointer, another size or schema than the
/// manifest's), so a damaged table does not keep the others from
/// being queried.
///
/// Errors: [`Error::Io`]/[`Error::Config`] for a missing or bad manifest, [`Error::Refused`]
/// for a table whose data files the manifest does not list.
pub async fn register_release(ctx: &SessionContext, dir: &Path) -> Result<Manifest> {
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
        let files: Vec<PathBuf> = t.files.iter().map(|f| dir.join(f)).collect();
        for rel in &t.files {
            let listed = manifest.files.iter().any(|e| &e.path == rel && e.kind == "parquet");
            if !crate::stages::release::safe_relative(rel) || !listed {
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
        register_parquet(ctx, &t.name, &files, string_views(&schema), &[]).await?;
        let name = datafusion::common::TableReference::bare(t.name.as_str());
        let registered =
            ctx.table_provider(name.clone()).await.map_err(|e| Error::sql(format!("table {}", t.name), e))?;
        let checked = ManifestChecked {
            inner: registered,
            release: dir.display().to_string(),
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
        ctx.register_table(name, Arc::new(checked)).map_err(|e| Error::sql(format!("table {}", t.name), e))?;
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
        if !path.is_file() {
            return Some(format!("{}: data file {rel} of table {} is missing; {verify}", self.release, self.table));
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
    let footers: Vec<String> = files
        .iter()
        .filter_map(|(name, path)| {
            parquet_footer(path).err().map(|why| format!("{name} is not a readable Parquet file: {why}"))
        })
        .collect();
    let message = if !footers.is_empty() {
        footers.join("\n")
    } else {
        match files.iter().find_map(|(name, path)| parquet_rows(path).err().map(|why| (name, why))) {
            Some((name, why)) => format!("{name} is not a readable Parquet file: {why}"),
            None => return Error::Format { context, message: format!("{}{hint}", error_text(&e)) },
        }
    };
    Error::Format { context, message: format!("{message}{hint}") }
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
fn parquet_rows(path: &Path) -> std::result::Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    crate::core::error::catch_panic(|| -> std::result::Result<(), String> {
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .and_then(|b| b.build())
            .map_err(|e| e.to_string())?;
        for b in reader {
            b.map_err(|e| e.to_string())?;
        }
        Ok(())
    })
    .map_err(|panic| format!("the Parquet reader stopped on {panic}"))
    .and_then(|r| r)
}

/// `schema` with its top-level `Utf8` columns read as `Utf8View`.
///
/// A view column decodes a dictionary-encoded Parquet column by pointing into the
/// dictionary rather than copying every value, and DataFusion groups and compares views
/// without first gathering their bytes (GROUP BY a checkpoint URI over 416,000 rows: ~16 %
/// faster). Views print as any text does ([`print`](fn@print)), so only SQL that asks for a column's
/// type (`arrow_typeof`, `DESCRIBE`, `information_schema`) sees the difference. Used for
/// release tables in `runpack query`; a build reads earlier tables with their declared
/// types.
pub fn string_views(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8View)),
            _ => f.clone(),
        })
        .collect();
    Arc::new(arrow::datatypes::Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Ascending, nulls-last sort expressions over columns `cols` (the order runpack sorts in).
pub fn sort_exprs(cols: &[String]) -> Vec<datafusion::logical_expr::SortExpr> {
    cols.iter()
        .map(|c| datafusion::prelude::Expr::Column(datafusion::common::Column::from_name(c)).sort(true, false))
        .collect()
}

/// The columns by which the rows of a release table's files are sorted, as far as DataFusion
/// compares them as the build sorted them: [`crate::core::schema::row_order`] up to the first
/// `_source_line` of JSON Pointers (sorted in document order, which is not text order) or
/// the first column that is not a boolean, number, string, date or timestamp.
pub fn declared_order(schema: &crate::core::schema::TableSchema, arrow: &arrow::datatypes::Schema) -> Vec<String> {
    use arrow::datatypes::DataType as T;
    let mut out = Vec::new();
    for c in crate::core::schema::row_order(schema, |c| arrow.field_with_name(c).is_ok()) {
        let Ok(f) = arrow.field_with_name(&c) else { break };
        let comparable = match f.data_type() {
            T::Utf8 | T::LargeUtf8 => c != "_source_line",
            t => {
                t.is_integer() || t.is_floating() || matches!(t, T::Boolean | T::Date32 | T::Date64 | T::Timestamp(..))
            }
        };
        if !comparable {
            break;
        }
        out.push(c);
    }
    out
}

/// What SQL may do in runpack: read. `SET`/`SHOW` statements are allowed when `statements`;
/// DDL (CREATE, DROP) and DML (INSERT, COPY … TO) never are, so a query cannot write files.
pub fn read_only(statements: bool) -> datafusion::execution::context::SQLOptions {
    datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(statements)
}

/// Runs one read-only SQL statement and collects the result.
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let df = match ctx.sql_with_options(sql, read_only(false)).await {
        Ok(df) => df,
        Err(e) => {
            // a table that is not there: the tables that are, and the closest name
            let context = parse_statements(sql)
                .ok()
                .and_then(|mut statements| statements.pop_front())
                .map(|st| unknown_table_context(ctx, "query", &st))
                .unwrap_or_else(|| "query".into());
            return Err(Error::sql(context, e));
        }
    };
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let mut stream = df.execute_stream().await.map_err(|e| Error::sql("query", e))?;
    let mut batches = Vec::new();
    while let Some(b) = stream.next().await {
        batches.push(b.map_err(|e| Error::sql("query", e))?);
    }
    Ok((schema, batches))
}

/// A result batch of `columns` under `schema` holding `rows` rows, as the batch it was made
/// from: a statement without columns (`SET …`) still has its row count.
///
/// Errors: [`Error::Format`] when the columns do not fit the schema.
fn result_batch(schema: SchemaRef, columns: Vec<arrow::array::ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, columns, &options).map_err(|e| Error::format("query result", e))
}

/// How query results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrintFormat {
    /// An aligned text table.
    Table,
    /// CSV with a header row.
    Csv,
    /// One JSON array of objects.
    Json,
    /// One JSON object per line.
    Ndjson,
}

/// `schema` with its repeated column names made unique (`step`, `step_1`, …; a join's
/// `SELECT a.step, b.step` names both `step`), so that JSON objects and CSV headers keep
/// every column: a JSON reader keeps only the last of two equal keys. `None` when every name
/// is already unique.
fn unique_names(schema: &SchemaRef) -> Option<SchemaRef> {
    // every name the query gave is kept by its first column; a suffix never takes one of them
    let given: std::collections::BTreeSet<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut taken: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut renamed = false;
    let mut fields = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let mut name = f.name().clone();
        let mut n = 0;
        while taken.contains(&name) || (n > 0 && given.contains(name.as_str())) {
            n += 1;
            name = format!("{}_{n}", f.name());
        }
        renamed |= name != *f.name();
        taken.insert(name.clone());
        fields.push(f.as_ref().clone().with_name(name));
    }
    renamed.then(|| Arc::new(arrow::datatypes::Schema::new(fields)))
}

/// `batch` with every column in a type the JSON Lines encoder of releases writes
/// ([`crate::stages::write::encode_jsonl`]), so that any query result prints as JSON: smaller
/// integers as `Int64`, `Float16`/`Float32` as the `Float64` of their shortest decimal form
/// (a `REAL` 0.1 prints as 0.1), string views and large strings as `Utf8`, large and
/// fixed-size lists as lists, dictionaries as their values, a map as a list of
/// `{"key", "value"}` objects, and every other type (decimals, times, durations, intervals,
/// binary as hex, timestamps in units other than microseconds) as its text in Arrow's
/// display form, a JSON string.
///
/// Errors: [`Error::Format`] when Arrow cannot cast a column to that type.
fn json_ready(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(json_column)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::format("query result", e))?;
    let fields: Vec<_> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| arrow::datatypes::Field::new(f.name(), c.data_type().clone(), true))
        .collect();
    let schema = Arc::new(arrow::datatypes::Schema::new(fields));
    result_batch(schema, columns, batch.num_rows())
}

/// One column of [`json_ready`].
fn json_column(a: &arrow::array::ArrayRef) -> std::result::Result<arrow::array::ArrayRef, arrow::error::ArrowError> {
    use arrow::array::{Array, ArrayRef, AsArray};
    use arrow::datatypes::Field;
    let list = |f: &Arc<Field>, offsets, values: &ArrayRef, nulls| -> Result<ArrayRef, _> {
        let values = json_column(values)?;
        let field = Arc::new(Field::new(f.name(), values.data_type().clone(), true));
        Ok(Arc::new(arrow::array::ListArray::try_new(field, offsets, values, nulls)?) as ArrayRef)
    };
    // a time in UTC is written as the JSON Lines encoder writes it (`…Z`); one without a zone,
    // or in another zone, as the CSV and table formats show it (no `Z` for a time whose zone is
    // unknown, the offset kept)
    let utc = |tz: &Option<Arc<str>>| matches!(tz.as_deref(), Some("UTC" | "+00:00" | "Z"));
    // Arrow's display text, as a JSON string
    let as_text = || -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
        let options = arrow::util::display::FormatOptions::default();
        let shown = arrow::util::display::ArrayFormatter::try_new(a.as_ref(), &options)?;
        let texts: arrow::array::StringArray =
            (0..a.len()).map(|i| a.is_valid(i).then(|| shown.value(i).to_string())).collect();
        Ok(Arc::new(texts))
    };
    match a.data_type() {
        DataType::Timestamp(_, tz) if !utc(tz) => as_text(),
        t if crate::core::schema::is_stored_scalar(t) => Ok(a.clone()),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => {
            arrow::compute::cast(a, &DataType::Int64)
        }
        DataType::Utf8View | DataType::LargeUtf8 => arrow::compute::cast(a, &DataType::Utf8),
        DataType::Float16 | DataType::Float32 => {
            // the shortest decimal that reads back as the same f32 (0.1, not 0.10000000149011612)
            let f = arrow::compute::cast(a, &DataType::Float32)?;
            let f = f.as_primitive::<arrow::datatypes::Float32Type>();
            let wide: arrow::array::Float64Array = f.unary(|x| x.to_string().parse::<f64>().unwrap_or(x as f64));
            Ok(Arc::new(wide))
        }
        DataType::Dictionary(_, v) => json_column(&arrow::compute::cast(a, v)?),
        DataType::List(f) => {
            let l = a.as_list::<i32>();
            list(f, l.offsets().clone(), l.values(), l.nulls().cloned())
        }
        DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            json_column(&arrow::compute::cast(a, &DataType::List(f.clone()))?)
        }
        DataType::Map(f, _) => {
            let m = a.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            list(f, m.offsets().clone(), &entries, m.nulls().cloned())
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let columns = s.columns().iter().map(json_column).collect::<std::result::Result<Vec<_>, _>>()?;
            let fields: Vec<Field> = s
                .fields()
                .iter()
                .zip(&columns)
                .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
                .collect();
            // a field name given twice (`named_struct('a', 1, 'a', 2)`) would be a JSON key
            // that hides another: the later ones get suffixes, as repeated columns do
            let fields = match unique_names(&Arc::new(arrow::datatypes::Schema::new(fields.clone()))) {
                Some(unique) => unique.fields().iter().map(|f| f.as_ref().clone()).collect(),
                None => fields,
            };
            Ok(Arc::new(arrow::array::StructArray::try_new_with_length(
                fields.into(),
                columns,
                s.nulls().cloned(),
                s.len(),
            )?))
        }
        _ => as_text(),
    }
}

/// `batch` with the control characters of its text columns and column names escaped (`\t`, `\n`,
/// `\u{1b}`), for the table format: a tab or line break would break the table's layout, and
/// an escape sequence would reach the terminal; non-finite floats as `NaN`, `Infinity`,
/// `-Infinity` ([`nonfinite_as_words`]).
///
/// Errors: [`Error::Format`] when the new batch cannot be assembled.
fn table_ready(batch: &RecordBatch, explain: bool) -> Result<RecordBatch> {
    use arrow::array::{Array, AsArray};
    let batch = &nonfinite_as_words(batch)?;
    // an EXPLAIN's plans keep their line breaks: the table shows them as lines
    let names: Vec<&str> = batch.schema_ref().fields().iter().map(|f| f.name().as_str()).collect();
    let plans = explain && names == ["plan_type", "plan"];
    let escape = |v: &str, column: usize| -> String {
        if plans && column == 1 {
            v.split('\n').map(crate::core::error::escape_control).collect::<Vec<_>>().join("\n")
        } else {
            crate::core::error::escape_control(v)
        }
    };
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (i, c) in batch.columns().iter().enumerate() {
        let texts: Option<Vec<Option<&str>>> = match c.data_type() {
            DataType::Utf8 => Some(c.as_string::<i32>().iter().collect()),
            DataType::LargeUtf8 => Some(c.as_string::<i64>().iter().collect()),
            DataType::Utf8View => Some(c.as_string_view().iter().collect()),
            _ => None,
        };
        match texts {
            Some(t) if t.iter().flatten().any(|v| v.chars().any(char::is_control)) => {
                let escaped: arrow::array::StringArray = t.iter().map(|v| v.map(|v| escape(v, i))).collect();
                let escaped =
                    arrow::compute::cast(&escaped, c.data_type()).map_err(|e| Error::format("query result", e))?;
                debug_assert_eq!(escaped.len(), c.len());
                columns.push(escaped);
            }
            // a list, struct or map shows the text inside it as it is: written out as the
            // table would show it, and escaped, when some of it holds a control character
            None if c.data_type().is_nested() => {
                // the printer's options (see `print_stream`)
                let options = arrow::util::display::FormatOptions::default().with_null("NULL");
                let f = arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &options)
                    .map_err(|e| Error::format("query result", e))?;
                let shown: Vec<Option<String>> =
                    (0..c.len()).map(|r| c.is_valid(r).then(|| f.value(r).to_string())).collect();
                if shown.iter().flatten().any(|v| v.chars().any(char::is_control)) {
                    let escaped: arrow::array::StringArray =
                        shown.iter().map(|v| v.as_deref().map(crate::core::error::escape_control)).collect();
                    columns.push(Arc::new(escaped));
                } else {
                    columns.push(c.clone());
                }
            }
            _ => columns.push(c.clone()),
        }
    }
    // column names too: a key may hold any character
    let fields: Vec<arrow::datatypes::FieldRef> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| {
            let name = crate::core::error::escape_control(f.name());
            Arc::new(f.as_ref().clone().with_name(name).with_data_type(c.data_type().clone()))
        })
        .collect();
    result_batch(Arc::new(arrow::datatypes::Schema::new(fields)), columns, batch.num_rows())
}

/// `batch` with each float column (or dictionary of floats) that holds a NaN or an infinity
/// as text: `NaN`, `Infinity`, `-Infinity` (the words the JSON formats and runpack's JSON
/// Lines write, where Arrow's display writes `inf`), every finite value in Arrow's display
/// form and nulls kept. Other columns, nested ones included, and float columns of finite
/// values only, are left as they are.
///
/// Errors: [`Error::Format`] when the new batch cannot be assembled.
fn nonfinite_as_words(batch: &RecordBatch) -> Result<RecordBatch> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float16Type, Float32Type, Float64Type};
    let nonfinite = |c: &arrow::array::ArrayRef| -> bool {
        match c.data_type() {
            DataType::Float16 => c.as_primitive::<Float16Type>().iter().flatten().any(|v| !v.is_finite()),
            DataType::Float32 => c.as_primitive::<Float32Type>().iter().flatten().any(|v| !v.is_finite()),
            DataType::Float64 => c.as_primitive::<Float64Type>().iter().flatten().any(|v| !v.is_finite()),
            _ => false,
        }
    };
    // a dictionary of floats is read through its values
    let unpacked = |c: &arrow::array::ArrayRef| -> Result<arrow::array::ArrayRef> {
        match c.data_type() {
            DataType::Dictionary(_, v) if v.is_floating() => {
                arrow::compute::cast(c, v).map_err(|e| Error::format("query result", e))
            }
            _ => Ok(c.clone()),
        }
    };
    let unpacked: Vec<arrow::array::ArrayRef> = batch.columns().iter().map(unpacked).collect::<Result<_>>()?;
    if !unpacked.iter().any(nonfinite) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for ((f, c), plain) in batch.schema().fields().iter().zip(batch.columns()).zip(&unpacked) {
        if !nonfinite(plain) {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
            continue;
        }
        let c = plain;
        let shown = arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &Default::default())
            .map_err(|e| Error::format("query result", e))?;
        let as_f64 = arrow::compute::cast(c, &DataType::Float64).map_err(|e| Error::format("query result", e))?;
        let values = as_f64.as_primitive::<Float64Type>();
        let texts: arrow::array::StringArray = (0..c.len())
            .map(|i| {
                c.is_valid(i).then(|| match values.value(i) {
                    v if v.is_nan() => "NaN".to_string(),
                    v if v == f64::INFINITY => "Infinity".to_string(),
                    v if v == f64::NEG_INFINITY => "-Infinity".to_string(),
                    _ => shown.value(i).to_string(),
                })
            })
            .collect();
        fields.push(arrow::datatypes::Field::new(f.name(), DataType::Utf8, true));
        columns.push(Arc::new(texts) as arrow::array::ArrayRef);
    }
    result_batch(Arc::new(arrow::datatypes::Schema::new(fields)), columns, batch.num_rows())
}

/// `batch` with its nested columns (lists, structs, maps), which CSV has no form for, as
/// JSON text in one cell each (written as [`json_ready`] and the JSON formats write them),
/// and non-finite floats as `NaN`, `Infinity`, `-Infinity` ([`nonfinite_as_words`]).
///
/// Errors: [`Error::Format`] when a column cannot be made ready for JSON.
fn csv_ready(batch: &RecordBatch) -> Result<RecordBatch> {
    let batch = &nonfinite_as_words(batch)?;
    let nested = |t: &DataType| t.is_nested();
    if !batch.schema().fields().iter().any(|f| nested(f.data_type())) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        if !nested(f.data_type()) {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
            continue;
        }
        let ready = json_column(c).map_err(|e| Error::format("query result", e))?;
        let texts: arrow::array::StringArray = crate::stages::write::json_values(&ready)?.into_iter().collect();
        fields.push(arrow::datatypes::Field::new(f.name(), DataType::Utf8, true));
        columns.push(Arc::new(texts) as arrow::array::ArrayRef);
    }
    result_batch(Arc::new(arrow::datatypes::Schema::new(fields)), columns, batch.num_rows())
}

/// Checks that every date, time, timestamp and duration of `batch` (nested ones included) can
/// be printed: Arrow's display, and with it every print format, reaches only the dates of
/// chrono (years -262143 to 262142), times of day within 24 hours, and durations in seconds
/// or milliseconds that fit in 64-bit milliseconds. `first_row` is the number of rows printed
/// before `batch`, so that the row named counts from the start of the result.
///
/// Errors: [`Error::Format`] naming the column (with its path inside a nested value), the row
/// (from 1), the stored integer and its Arrow type.
fn printable(batch: &RecordBatch, first_row: usize) -> Result<()> {
    use arrow::array::temporal_conversions::{as_date, as_datetime, as_duration, as_time};
    use arrow::array::{Array, ArrayRef, AsArray};
    use arrow::datatypes::*;
    /// Whether the timestamp `v` of type `T` is a date and time chrono holds, in UTC and, in
    /// zone `tz`, as local time.
    fn shown<T: ArrowPrimitiveType>(v: i64, tz: Option<&arrow::array::timezone::Tz>) -> bool {
        use chrono::{Offset, TimeZone};
        let Some(utc) = as_datetime::<T>(v) else { return false };
        tz.is_none_or(|tz| utc.checked_add_offset(tz.offset_from_utc_datetime(&utc).fix()).is_some())
    }
    /// The index (in `a`) of the first value that cannot be printed, and that value.
    fn first_bad(a: &ArrayRef) -> Option<(usize, i64)> {
        macro_rules! find {
            ($t:ty, $ok:expr) => {{
                let p = a.as_primitive::<$t>();
                (0..p.len()).find(|&i| p.is_valid(i) && !$ok(p.value(i) as i64)).map(|i| (i, p.value(i) as i64))
            }};
        }
        match a.data_type() {
            DataType::Date32 => find!(Date32Type, |v| as_date::<Date32Type>(v).is_some()),
            DataType::Date64 => find!(Date64Type, |v| as_date::<Date64Type>(v).is_some()),
            DataType::Timestamp(unit, tz) => {
                // in a zone, the local time must be a date too (UTC+14:00 of the last instant is not)
                let tz: Option<arrow::array::timezone::Tz> = tz.as_deref().and_then(|t| t.parse().ok());
                match unit {
                    TimeUnit::Second => find!(TimestampSecondType, |v| shown::<TimestampSecondType>(v, tz.as_ref())),
                    TimeUnit::Millisecond => {
                        find!(TimestampMillisecondType, |v| shown::<TimestampMillisecondType>(v, tz.as_ref()))
                    }
                    TimeUnit::Microsecond => {
                        find!(TimestampMicrosecondType, |v| shown::<TimestampMicrosecondType>(v, tz.as_ref()))
                    }
                    TimeUnit::Nanosecond => {
                        find!(TimestampNanosecondType, |v| shown::<TimestampNanosecondType>(v, tz.as_ref()))
                    }
                }
            }
            DataType::Time32(TimeUnit::Second) => find!(Time32SecondType, |v| as_time::<Time32SecondType>(v).is_some()),
            DataType::Time32(TimeUnit::Millisecond) => {
                find!(Time32MillisecondType, |v| as_time::<Time32MillisecondType>(v).is_some())
            }
            DataType::Time64(TimeUnit::Microsecond) => {
                find!(Time64MicrosecondType, |v| as_time::<Time64MicrosecondType>(v).is_some())
            }
            DataType::Time64(TimeUnit::Nanosecond) => {
                find!(Time64NanosecondType, |v| as_time::<Time64NanosecondType>(v).is_some())
            }
            DataType::Duration(TimeUnit::Second) => {
                find!(DurationSecondType, |v| as_duration::<DurationSecondType>(v).is_some())
            }
            DataType::Duration(TimeUnit::Millisecond) => {
                find!(DurationMillisecondType, |v| as_duration::<DurationMillisecondType>(v).is_some())
            }
            _ => None,
        }
    }
    /// The first value of `a` (or of its children) that cannot be printed: its path below
    /// the column, the index in `a` of the row holding it, the value and its type.
    fn walk(a: &ArrayRef) -> Option<(String, usize, i64, DataType)> {
        if let Some((i, v)) = first_bad(a) {
            return Some((String::new(), i, v, a.data_type().clone()));
        }
        // the row of `a` holding child index `j`, for list-like children
        let row_of = |offsets: &[i32], j: usize| offsets.partition_point(|&o| (o as usize) <= j).saturating_sub(1);
        match a.data_type() {
            DataType::List(_) => {
                let l = a.as_list::<i32>();
                let (path, j, v, t) = walk(l.values())?;
                Some((format!("[]{path}"), row_of(l.value_offsets(), j), v, t))
            }
            DataType::LargeList(f)
            | DataType::FixedSizeList(f, _)
            | DataType::ListView(f)
            | DataType::LargeListView(f) => walk(&arrow::compute::cast(a, &DataType::List(f.clone())).ok()?),
            DataType::Map(..) => {
                let m = a.as_map();
                let entries: ArrayRef = Arc::new(m.entries().clone());
                let (path, j, v, t) = walk(&entries)?;
                Some((format!("[]{path}"), row_of(m.value_offsets(), j), v, t))
            }
            DataType::Struct(fields) => {
                let s = a.as_struct();
                fields.iter().zip(s.columns()).find_map(|(f, c)| {
                    let (path, i, v, t) = walk(c)?;
                    Some((format!(".{}{path}", f.name()), i, v, t))
                })
            }
            DataType::Dictionary(_, value) => {
                let values = arrow::compute::cast(a, value).ok()?;
                walk(&values)
            }
            _ => None,
        }
    }
    // (a dictionary's values are not looked into here: it is walked whatever it holds)
    let temporal = |t: &DataType| t.is_temporal() || matches!(t, DataType::Duration(_) | DataType::Dictionary(..));
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        // only columns that hold such values are walked (no cast of a dictionary or list of others)
        if !crate::core::schema::type_contains(f.data_type(), &temporal) {
            continue;
        }
        if let Some((path, i, v, t)) = walk(c) {
            use chrono::Datelike;
            return Err(Error::format(
                "query result",
                format!(
                    "column {:?}{path}, row {}: {v} (a {t} value) is outside what can be printed \
                     (dates of years {} to {}, times of day within 24 hours)",
                    f.name(),
                    first_row + i + 1,
                    chrono::NaiveDate::MIN.year(),
                    chrono::NaiveDate::MAX.year(),
                ),
            ));
        }
    }
    Ok(())
}

/// Writes `batches` to `out` in `format` (CSV: nested values as JSON text, see
/// `csv_ready`; JSON formats: see `json_ready` for how each Arrow type is written).
///
/// Errors: [`Error::Io`] naming `<stdout>` when `out` refuses the bytes (a closed pipe among
/// them), [`Error::Format`] for a value that cannot be printed.
pub fn print(
    format: PrintFormat,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let mut printer = Printer::new(format, schema.clone(), false);
    for b in batches {
        printer.push(b, out)?;
    }
    printer.finish(out)
}

/// Whether the last statement of `sql` is an `EXPLAIN` (its result is plans, whose line breaks
/// the table format keeps); `false` for SQL that does not parse.
pub fn is_explain(sql: &str) -> bool {
    parse_statements(sql)
        .ok()
        .and_then(|statements| statements.back().map(|st| matches!(st, datafusion::sql::parser::Statement::Explain(_))))
        .unwrap_or(false)
}

/// Writes the batches of `stream` to `out` in `format` as they come: CSV, NDJSON and JSON hold
/// one batch at a time; the table format waits for all of them (its column widths depend on
/// every row). With `explain` (see [`is_explain`]), the table format prints the plans' lines
/// as lines; other text has its control characters escaped.
///
/// Errors: as [`print`](fn@print), and [`Error::Sql`] named `context` (see [`run_script_stream`]) when
/// the query fails while it runs.
pub async fn print_stream(
    format: PrintFormat,
    schema: &SchemaRef,
    mut stream: datafusion::physical_plan::SendableRecordBatchStream,
    context: &str,
    explain: bool,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    // a statement without a result (`SET …`) runs, and prints nothing (JSON: an empty array)
    let nothing = schema.fields().is_empty();
    let mut printer = Printer::new(format, schema.clone(), explain);
    while let Some(b) = stream.next().await {
        let b = b.map_err(|e| Error::sql(context, e))?;
        if !nothing {
            printer.push(&b, out)?;
        }
    }
    match (nothing, format) {
        (true, PrintFormat::Json) => writeln!(out, "[]").map_err(|e| Error::io("stdout", e)),
        (true, _) => Ok(()),
        (false, _) => printer.finish(out),
    }
}

/// A result being printed batch by batch.
struct Printer {
    format: PrintFormat,
    /// The result's schema, its repeated column names made unique for CSV and JSON
    /// ([`unique_names`]).
    schema: SchemaRef,
    /// Whether the batches take `schema`'s names (some were repeated).
    renamed: bool,
    /// Rows printed so far (JSON: a comma goes before every row but the first).
    rows: usize,
    /// CSV: whether the header is written.
    header: bool,
    /// The table format's batches, printed at the end.
    held: Vec<RecordBatch>,
    /// Whether the result is an `EXPLAIN`'s plans (the table format keeps their line breaks).
    explain: bool,
}

impl Printer {
    fn new(format: PrintFormat, schema: SchemaRef, explain: bool) -> Self {
        let unique = (format != PrintFormat::Table).then(|| unique_names(&schema)).flatten();
        let renamed = unique.is_some();
        Printer { format, schema: unique.unwrap_or(schema), renamed, rows: 0, header: false, held: Vec::new(), explain }
    }

    fn push(&mut self, b: &RecordBatch, out: &mut dyn std::io::Write) -> Result<()> {
        let io = |e: std::io::Error| Error::io("<stdout>", e);
        printable(b, self.rows)?;
        let renamed;
        let b = if self.renamed {
            renamed = RecordBatch::try_new(self.schema.clone(), b.columns().to_vec())
                .map_err(|e| Error::format("query result", e))?;
            &renamed
        } else {
            b
        };
        match self.format {
            PrintFormat::Table => self.held.push(b.clone()),
            PrintFormat::Csv if b.num_rows() > 0 => self.csv(b, out)?,
            PrintFormat::Csv => {}
            PrintFormat::Ndjson | PrintFormat::Json => {
                let mut buf = Vec::new();
                let mut ends = Vec::new();
                crate::stages::write::encode_jsonl(&json_ready(b)?, &mut buf, &mut ends)?;
                if self.format == PrintFormat::Ndjson {
                    out.write_all(&buf).map_err(io)?;
                } else {
                    let mut start = 0;
                    for (i, end) in ends.iter().enumerate() {
                        out.write_all(if self.rows + i == 0 { b"[" } else { b",\n" }).map_err(io)?;
                        out.write_all(&buf[start..end - 1]).map_err(io)?;
                        start = *end;
                    }
                }
            }
        }
        self.rows += b.num_rows();
        Ok(())
    }

    /// Writes `b` as CSV, after the header if it is not written yet. Each batch is formatted
    /// in memory, so that a closed pipe is an I/O error like with the other formats.
    fn csv(&mut self, b: &RecordBatch, out: &mut dyn std::io::Write) -> Result<()> {
        let mut buf = Vec::new();
        let mut w = arrow::csv::WriterBuilder::new().with_header(!self.header).build(&mut buf);
        w.write(&csv_ready(b)?).map_err(|e| Error::format("query", e))?;
        drop(w);
        self.header = true;
        out.write_all(&buf).map_err(|e| Error::io("<stdout>", e))
    }

    fn finish(mut self, out: &mut dyn std::io::Write) -> Result<()> {
        let io = |e: std::io::Error| Error::io("<stdout>", e);
        match self.format {
            PrintFormat::Table => {
                let mut all = std::mem::take(&mut self.held);
                if all.is_empty() {
                    all.push(RecordBatch::new_empty(self.schema.clone()));
                }
                let all = all.iter().map(|b| table_ready(b, self.explain)).collect::<Result<Vec<_>>>()?;
                // NULL is said, so that it differs from the empty string (also inside lists)
                let options = arrow::util::display::FormatOptions::default().with_null("NULL");
                let t = arrow::util::pretty::pretty_format_batches_with_options(&all, &options)
                    .map_err(|e| Error::format("query", e))?;
                writeln!(out, "{t}").map_err(io)?;
            }
            // a result without rows still has its header
            PrintFormat::Csv if !self.header => self.csv(&RecordBatch::new_empty(self.schema.clone()), out)?,
            PrintFormat::Json => out.write_all(if self.rows == 0 { b"[]\n" } else { b"]\n" }).map_err(io)?,
            PrintFormat::Csv | PrintFormat::Ndjson => {}
        }
        out.flush().map_err(io)
    }
}

/// Runs every statement of `sql` in order (`SET …; SELECT …`) and returns the last result.
/// Statements that would write (DDL, DML such as `COPY … TO`) are refused.
///
/// Errors: [`Error::Config`] for an empty script, [`Error::Sql`] naming the statement (`query`
/// for a script of one, `query, statement 2 of 3` otherwise) that failed to plan or run.
pub async fn run_script(ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let (schema, stream, context) = run_script_stream(ctx, sql).await?;
    let batches = datafusion::physical_plan::common::collect(stream).await.map_err(|e| Error::sql(context, e))?;
    Ok((schema, batches))
}

/// Runs every statement of `sql` but the last to its end, and returns the last one's result
/// as a stream of record batches (with the executed plan's schema), and the name its errors
/// go by. See [`run_script`].
pub async fn run_script_stream(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(SchemaRef, datafusion::physical_plan::SendableRecordBatchStream, String)> {
    let mut statements: Vec<_> = parse_statements(sql).map_err(|e| Error::sql_parse("query", e, sql))?.into();
    let count = statements.len();
    let context = |i: usize| if count == 1 { "query".to_string() } else { format!("query, statement {i} of {count}") };
    let Some(last) = statements.pop() else {
        return Err(Error::config("query", "no SQL statement given"));
    };
    for (i, st) in statements.into_iter().enumerate() {
        let (_, stream) = start_statement(ctx, st, &context(i + 1)).await?;
        datafusion::physical_plan::common::collect(stream).await.map_err(|e| Error::sql(context(i + 1), e))?;
    }
    let (schema, stream) = start_statement(ctx, last, &context(count)).await?;
    Ok((schema, stream, context(count)))
}

/// `context` with what helps when statement `st` names a table there is not (it failed to
/// plan): the tables there are, and the one meant when a name is close (or differs only in
/// case, as SQL folds an unquoted name to lower case); `context` as it is otherwise.
fn unknown_table_context(ctx: &SessionContext, context: &str, st: &datafusion::sql::parser::Statement) -> String {
    let mut tables: Vec<String> =
        ctx.catalog("datafusion").and_then(|c| c.schema("public")).map(|s| s.table_names()).unwrap_or_default();
    tables.sort();
    let Ok((refs, _)) = datafusion::sql::resolve::resolve_table_references(st, true) else {
        return context.to_string();
    };
    let Some(unknown) = refs.iter().find(|r| !tables.iter().any(|t| t == r.table())) else {
        return context.to_string();
    };
    let name = unknown.table();
    if tables.is_empty() {
        return context.to_string();
    }
    let quoted = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let hint = if let Some(t) = tables.iter().find(|t| t.to_lowercase() == name && t.as_str() != name) {
        format!("; did you mean {}? SQL reads a name without quotes in lower case", quoted(t))
    } else {
        let close = tables
            .iter()
            .map(|t| (strsim::jaro_winkler(&t.to_lowercase(), &name.to_lowercase()), t))
            .filter(|(score, _)| *score > 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        close.map(|(_, t)| format!("; did you mean {t}?")).unwrap_or_default()
    };
    format!("{context} (the tables: {}{hint})", tables.join(", "))
}

/// Plans one statement (refusing any that would write) and starts it.
async fn start_statement(
    ctx: &SessionContext,
    st: datafusion::sql::parser::Statement,
    context: &str,
) -> Result<(SchemaRef, datafusion::physical_plan::SendableRecordBatchStream)> {
    let sql_err = |e| Error::sql(context, e);
    // kept to say which table a failed plan names that is not there
    let statement = st.clone();
    let plan = match ctx.state().statement_to_plan(st).await {
        Ok(p) => p,
        // DataFusion plans no `SET TIME ZONE`: say what it does plan instead of its AST
        Err(e) if e.to_string().contains("SET variant not implemented yet: SetTimeZone") => {
            return Err(Error::Refused(format!(
                "{context}: SET TIME ZONE is not part of DataFusion's SQL; write SET datafusion.execution.time_zone \
                 = '+05:00' (an offset; times are shown in UTC, +00:00, unless set)"
            )));
        }
        Err(e) => return Err(Error::sql(unknown_table_context(ctx, context, &statement), e)),
    };
    read_only(true).verify_plan(&plan).map_err(sql_err)?;
    let df = ctx.execute_logical_plan(plan).await.map_err(sql_err)?;
    let task = Arc::new(df.task_ctx());
    // the executed plan's schema: the logical plan's may predate type coercion (a CASE or
    // UNION typed by its first branch)
    let physical = df.create_physical_plan().await.map_err(sql_err)?;
    let schema = physical.schema();
    let stream = datafusion::physical_plan::execute_stream(physical, task).map_err(sql_err)?;
    Ok((schema, stream))
}

/// Why a query with `SIMILAR TO` is refused (see [`uses_similar_to`]).
pub(crate) const SIMILAR_TO_REFUSED: &str = "SIMILAR TO is read by DataFusion as a regular expression that may match \
     anywhere in the text, not as SQL's whole-value pattern, so its answers would be wrong; write `x ~ '^(…)$'` (a \
     regular expression, anchored) or LIKE";

/// Whether `plan` (or a subquery of it) has a `SIMILAR TO`, which DataFusion 55 matches as an
/// unanchored regular expression (`'abc' SIMILAR TO 'b'` is true), not as SQL's pattern over
/// the whole value.
pub(crate) fn uses_similar_to(plan: &datafusion::logical_expr::LogicalPlan) -> bool {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let mut found = false;
    let _ = plan.apply_with_subqueries(|node| {
        found = node
            .expressions()
            .iter()
            .any(|e| e.exists(|e| Ok(matches!(e, datafusion::logical_expr::Expr::SimilarTo(_)))).unwrap_or(false));
        Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    found
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
    let total = violations.len();
    Err(Error::Invalid { violations, total })
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
        (
            path.to_path_buf(),
            std::iter::once("**/*.parquet".to_string())
                // not `.json`: in a folder, that is as often a document (a schema, a config) as lines
                .chain(
                    ["jsonl", "ndjson"]
                        .iter()
                        .flat_map(|ext| ["", ".gz", ".zst"].iter().map(move |z| format!("**/*.{ext}{z}"))),
                )
                .collect(),
        )
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
    let fmt = if parquet { crate::core::spec::Format::Parquet } else { crate::core::spec::Format::Jsonl };
    let source = crate::core::spec::SourceDef {
        name: name.to_string(),
        path: crate::core::spec::PathPatterns::Many(found.iter().map(|f| f.rel.clone()).collect()),
        format: fmt,
        record_path: None,
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
        register_parquet(ctx, name, &paths, arrow.clone(), &[]).await?;
        if let Some(declared) = schema {
            check_declared_rules(ctx, name, declared, Some((&found, arrow.clone()))).await?;
        }
        let parquet_files = paths.iter().map(|p| (p.display().to_string(), p.clone())).collect();
        return Ok(RawTable { schema: arrow, inferred: schema.is_none(), parquet_files, _work: None });
    }
    // JSON Lines: read through runpack's own reader into Arrow IPC
    let work = tempfile::tempdir().map_err(|e| Error::io("temporary folder", e))?;
    let spec = crate::core::spec::PipelineSpec {
        dir: base.clone(),
        file: base.join("(query)"),
        def: crate::core::spec::PipelineDef {
            name: "query".into(),
            version: "0".into(),
            card: Default::default(),
            sources: vec![source],
            views: vec![],
            tables: vec![],
        },
        table_schemas: vec![],
        source_schemas: vec![schema.cloned()],
        untyped_as_text: true,
        // a release's own JSON Lines carry `_source_file` and `_source_line`: those are kept
        data_provenance: true,
    };
    let mut report = crate::core::report::BuildReport::new(100);
    let mut rejects = crate::stages::rejects::Rejects::new(work.path().join("rejects"));
    let opts = crate::stages::ingest::IngestOptions {
        on_invalid: crate::stages::ingest::OnInvalid::Fail,
        large_cell_bytes: u64::MAX,
        read_digests: None,
    };
    let ing = crate::stages::ingest::run(&spec, 0, work.path(), &opts, &[], &mut report, &mut rejects)
        .and_then(|ing| report.check().map(|_| ing))
        .map_err(json_document)?;
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
    Ok(RawTable { schema: registered, inferred: schema.is_none(), parquet_files: vec![], _work: Some(work) })
}

/// A read of JSON Lines that failed because a `.json` file is one JSON document spread over
/// lines (its line 1 is no whole JSON value), said as such rather than as one violation per
/// line; any other error as it is.
fn json_document(e: Error) -> Error {
    let Error::Invalid { violations, .. } = &e else { return e };
    let document = violations.iter().find(|v| {
        v.rule == "json"
            && v.source
                .as_ref()
                .is_some_and(|s| s.at == crate::core::report::Position::Line(1) && s.file.ends_with(".json"))
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
        return refuse(format!("{location}: no such file or folder"));
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
                register_parquet(&one, &part, std::slice::from_ref(&f.path), arrow.clone(), &[]).await?;
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

    #[test]
    fn repeated_names_get_suffixes_no_query_gave() {
        use arrow::datatypes::{Field, Schema};
        let schema = Arc::new(Schema::new(
            ["step", "step", "step_1", "a", "a", "a"]
                .iter()
                .map(|n| Field::new(*n, DataType::Int64, true))
                .collect::<Vec<_>>(),
        ));
        let names: Vec<String> = unique_names(&schema).unwrap().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["step", "step_2", "step_1", "a", "a_1", "a_2"]);
        let plain = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        assert!(unique_names(&plain).is_none());
    }

    #[test]
    fn the_table_format_escapes_control_characters() {
        let schema =
            Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new("a", DataType::Utf8View, true)]));
        let col = arrow::array::StringViewArray::from(vec![Some("x\u{1b}[31mred\tz"), None, Some("plain")]);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(col)]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Table, &schema, &[b], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| x\\u{1b}[31mred\\tz |"), "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\t'), "{text}");
        // a null is said, unlike the empty string
        assert!(text.contains("| NULL "), "{text}");
        // text inside a list is escaped too; a list without control characters is left alone
        let item = Arc::new(arrow::datatypes::Field::new("item", DataType::Utf8, true));
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new(
            "l",
            DataType::List(item),
            true,
        )]));
        let mut lists = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new());
        lists.values().append_value("a\nb\u{1b}");
        lists.values().append_null();
        lists.append(true);
        lists.append(false);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(lists.finish())]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Table, &schema, &[b], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| [a\\nb\\u{1b}, NULL] |"), "{text}");
        assert!(text.contains("| NULL "), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn csv_and_table_write_nonfinite_floats_as_the_json_formats_do() {
        use arrow::datatypes::Field;
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("x", DataType::Float64, true),
            Field::new("y", DataType::Float32, true),
            Field::new("z", DataType::Float64, true),
        ]));
        let x = arrow::array::Float64Array::from(vec![Some(1.5), Some(f64::NAN), Some(f64::INFINITY), None]);
        let y = arrow::array::Float32Array::from(vec![Some(0.1), Some(f32::NEG_INFINITY), None, Some(2.0)]);
        let z = arrow::array::Float64Array::from(vec![Some(0.25), None, Some(1e300), Some(-3.0)]);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(x), Arc::new(y), Arc::new(z)]).unwrap();
        let text = |format| {
            let mut out = Vec::new();
            print(format, &schema, std::slice::from_ref(&b), &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        // finite values as Arrow writes them, in every column
        assert_eq!(text(PrintFormat::Csv), "x,y,z\n1.5,0.1,0.25\nNaN,-Infinity,\nInfinity,,1e300\n,2.0,-3.0\n");
        let table = text(PrintFormat::Table);
        assert!(table.contains("| Infinity | NULL      | 1e300 |"), "{table}");
        assert!(table.contains("| NaN      | -Infinity | NULL  |"), "{table}");
        let json = text(PrintFormat::Ndjson);
        assert!(json.contains(r#"{"x":"NaN","y":"-Infinity","z":null}"#), "{json}");
        // a dictionary of floats too
        let values = arrow::array::Float64Array::from(vec![f64::INFINITY, 1.5]);
        let keys = arrow::array::Int32Array::from(vec![Some(0), Some(1), None]);
        let dict = arrow::array::DictionaryArray::try_new(keys, Arc::new(values)).unwrap();
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![Field::new(
            "d",
            arrow::array::Array::data_type(&dict).clone(),
            true,
        )]));
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(dict)]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Csv, &schema, &[b], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "d\nInfinity\n1.5\n\"\"\n");
    }

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
        register_parquet(&ctx, "t", &[path], string_views(&schema), &[]).await.unwrap();
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

    #[tokio::test]
    async fn repeated_column_names_are_made_unique_in_json_and_csv() {
        let ctx = session();
        let sql = "SELECT a.x, b.x, 9 AS x_1 FROM (VALUES (1)) a(x) CROSS JOIN (VALUES (2)) b(x)";
        let (schema, batches) = run_script(&ctx, sql).await.unwrap();
        for (format, expected) in
            // the name the query gave (`x_1`) stays its column's; the repeated `x` takes the next
            [(PrintFormat::Ndjson, "{\"x\":1,\"x_2\":2,\"x_1\":9}\n"), (PrintFormat::Csv, "x,x_2,x_1\n1,2,9\n")]
        {
            let mut out = Vec::new();
            print(format, &schema, &batches, &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[tokio::test]
    async fn every_result_type_prints_as_json() {
        let ctx = session();
        let sql = "SELECT length('abc') AS i32, CAST(0.1 AS REAL) AS f32, CAST(2.5 AS DECIMAL(5,2)) AS dec, \
                   CAST('hi' AS BYTEA) AS bin, map(['k'], [arrow_cast(1, 'Int8')]) AS m, \
                   arrow_cast([1, 2], 'LargeList(Int32)') AS ll, arrow_cast('v', 'Dictionary(Int32, Utf8)') AS dict, \
                   CAST('12:30:00' AS TIME) AS t, named_struct('n', CAST(NULL AS DECIMAL(5,2))) AS s";
        let (schema, batches) = run_script(&ctx, sql).await.unwrap();
        for (format, expected) in [
            (
                PrintFormat::Ndjson,
                r#"{"i32":3,"f32":0.1,"dec":"2.50","bin":"6869","m":[{"key":"k","value":1}],"ll":[1,2],"dict":"v","t":"12:30:00","s":{"n":null}}"#.to_string() + "\n",
            ),
            (
                PrintFormat::Json,
                r#"[{"i32":3,"f32":0.1,"dec":"2.50","bin":"6869","m":[{"key":"k","value":1}],"ll":[1,2],"dict":"v","t":"12:30:00","s":{"n":null}}]"#.to_string() + "\n",
            ),
        ] {
            let mut out = Vec::new();
            print(format, &schema, &batches, &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
        // CSV writes nested values as JSON text in one cell
        let mut out = Vec::new();
        print(PrintFormat::Csv, &schema, &batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "i32,f32,dec,bin,m,ll,dict,t,s\n3,0.1,2.50,6869,\"[{\"\"key\"\":\"\"k\"\",\"\"value\"\":1}]\",\"[1,2]\",v,12:30:00,\"{\"\"n\"\":null}\"\n"
        );
    }
}

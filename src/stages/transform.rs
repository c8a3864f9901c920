//! The transform stage: a table's SQL → conformed, ordered batches, written per split.
//!
//! In: the sources and earlier tables registered in a DataFusion session, one table of the
//! pipeline, and (for a source streamed into it) the source's rows as they are read. Out: the
//! table's rows conformed to its declared schema (or to the canonical form of the query's
//! types), sorted by primary key (then by `_source_file`, `_source_line`; by every column when
//! there is no key), validated and written as Parquet and JSON Lines, one set of files per
//! split, with the keys later tables' foreign keys check against.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use futures::StreamExt;

use crate::core::error::{Error, Result};
use crate::core::options::BuildOptions;
use crate::core::progress::Progress;
use crate::core::report::BuildReport;
use crate::core::schema::{TableSchema, type_name};
use crate::core::spec::{DuplicatePolicy, PipelineSpec};
use crate::stages::ingest::{self, IngestOptions, OnInvalid};
use crate::stages::rejects::Rejects;
use crate::stages::validate::{KeySet, Validator};
use crate::stages::write::{TableWriter, WriteOptions};

/// Memory a table's sort may buffer before writing sorted runs to disk, in bytes (128 MiB).
pub const SORT_BUDGET_BYTES: usize = 128 << 20;

/// Whether `plan` yields its rows as one stream already in ascending `sort_cols` order
/// (nulls last), as DataFusion can tell from the orders of the sources it reads.
fn plan_in_order(plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>, sort_cols: &[String]) -> bool {
    use datafusion::physical_expr::PhysicalSortExpr;
    use datafusion::physical_plan::ExecutionPlanProperties;
    if plan.output_partitioning().partition_count() != 1 {
        return false;
    }
    let schema = plan.schema();
    let exprs: Option<Vec<PhysicalSortExpr>> = sort_cols
        .iter()
        .map(|c| {
            let expr = datafusion::physical_expr::expressions::col(c, &schema).ok()?;
            Some(PhysicalSortExpr::new(expr, arrow::compute::SortOptions { descending: false, nulls_first: false }))
        })
        .collect();
    exprs.is_some_and(|e| plan.equivalence_properties().ordering_satisfy(e).unwrap_or(false))
}

/// The table names a SQL text reads (tables, views or sources; each once).
fn sql_references(sql: &str, context: impl Fn() -> String) -> Result<Vec<String>> {
    let statements = crate::sql::session::parse_statements(sql).map_err(|e| Error::sql_parse(context(), e, sql))?;
    let mut out = Vec::new();
    for st in statements {
        let (refs, _) =
            datafusion::sql::resolve::resolve_table_references(&st, true).map_err(|e| Error::sql(context(), e))?;
        for r in refs {
            if !out.iter().any(|n: &String| n == r.table()) {
                out.push(r.table().to_string());
            }
        }
    }
    Ok(out)
}

/// The sources that can be streamed into the table that reads them (source index → table
/// index and the schema of its rows): exactly one table's SQL and no view's or card section's
/// names the source, and its schema is known before it is read ([`ingest::stream_schema`]).
pub(crate) fn streamable_sources(spec: &PipelineSpec) -> Result<BTreeMap<usize, (usize, SchemaRef)>> {
    let readers = readers(spec)?;
    let mut out = BTreeMap::new();
    for (s, src) in spec.def.sources.iter().enumerate() {
        if let Some([Some(t)]) = readers.get(&src.name).map(|r| r.as_slice())
            && let Some(schema) = ingest::stream_schema(spec, s)
        {
            out.insert(s, (*t, schema));
        }
    }
    Ok(out)
}

/// What reads each name (source, view or table): the tables (by index) whose SQL names it,
/// and `None` for each view or `[card]` section's query that does.
///
/// Errors: [`Error::Sql`] for a table's or view's SQL that does not parse.
pub(crate) fn readers(spec: &PipelineSpec) -> Result<BTreeMap<String, Vec<Option<usize>>>> {
    let mut readers: BTreeMap<String, Vec<Option<usize>>> = BTreeMap::new();
    for i in 0..spec.def.tables.len() {
        let sql = spec.table_sql(i)?;
        for r in sql_references(&sql, || format!("table {} ({})", spec.def.tables[i].name, sql_origin(spec, i)))? {
            readers.entry(r).or_default().push(Some(i));
        }
    }
    for (i, v) in spec.def.views.iter().enumerate() {
        let sql = spec.view_sql(i)?;
        for r in sql_references(&sql, || format!("view {}", v.name))? {
            readers.entry(r).or_default().push(None);
        }
    }
    // the card's sections run after the tables, over everything the build registered
    for section in &spec.def.card.sections {
        if let Some(q) = &section.query
            && let Ok(refs) = sql_references(q, || format!("[card] section {:?}", section.title))
        {
            for r in refs {
                readers.entry(r).or_default().push(None);
            }
        }
    }
    Ok(readers)
}

/// What building a table needs from the build around it.
pub(crate) struct TableCx<'a> {
    pub(crate) ctx: &'a datafusion::prelude::SessionContext,
    pub(crate) spec: &'a PipelineSpec,
    pub(crate) index: usize,
    pub(crate) opts: &'a BuildOptions,
    pub(crate) key_sets: &'a BTreeMap<(String, Vec<String>), KeySet>,
    pub(crate) referenced: &'a BTreeMap<String, Vec<Vec<String>>>,
    pub(crate) root: &'a Path,
    pub(crate) work: &'a Path,
    pub(crate) progress: &'a dyn Progress,
    /// Turns true when the files of the table before, still being finished, fail: this table
    /// then stops, since the build fails with that error ([`PendingFiles::failed`]).
    pub(crate) before_failed: Option<tokio::sync::watch::Receiver<bool>>,
}

/// A table's query planned, with the schemas its rows are checked against.
pub(crate) struct TablePlan {
    table_schema: TableSchema,
    target_schema: SchemaRef,
    result_schema: SchemaRef,
    sort_cols: Vec<String>,
    policy: DuplicatePolicy,
    plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    /// The plan yields its rows in key order already.
    in_order: bool,
    /// The sort may hand on groups of the first key column before the input ends
    /// ([`crate::stages::sort::ExternalSort::push_to`]).
    pub(crate) early_groups: bool,
    /// The one table or source the query keeps every row of ([`rows_kept_from`]).
    rows_of: Option<String>,
}

/// The name the query `plan` keeps every row of: projections, windows, aliases and sorts
/// without a limit over one scan without filters or a limit. `None` for any other plan
/// (a filter, an aggregate, a join, a union, an unnest change the count).
fn rows_kept_from(plan: &datafusion::logical_expr::LogicalPlan) -> Option<String> {
    use datafusion::logical_expr::LogicalPlan as P;
    match plan {
        P::Projection(p) => rows_kept_from(&p.input),
        P::Window(w) => rows_kept_from(&w.input),
        P::SubqueryAlias(a) => rows_kept_from(&a.input),
        P::Sort(s) if s.fetch.is_none() => rows_kept_from(&s.input),
        P::TableScan(t) if t.filters.is_empty() && t.fetch.is_none() => Some(t.table_name.table().to_string()),
        _ => None,
    }
}

/// The files of a table, by split, each with its digest.
pub(crate) type SplitFiles = Vec<(String, Vec<crate::stages::write::WrittenFile>)>;

/// The files of a table whose rows have all been handed to its writers, while the writers'
/// threads encode, write and hash what they still hold and give the files their final names:
/// the next table can start meanwhile ([`PendingFiles::wait`] for them). Dropped, it waits
/// for the writers too, so that none writes in the release once the build has let it go.
pub(crate) struct PendingFiles {
    thread: Option<std::thread::JoinHandle<Result<SplitFiles>>>,
    failed: tokio::sync::watch::Receiver<bool>,
}

impl PendingFiles {
    /// Finishes `writers` on a thread of its own.
    fn start(writers: SplitWriters) -> Self {
        let (tx, failed) = tokio::sync::watch::channel(false);
        let thread = std::thread::spawn(move || {
            let files = writers.finish();
            if files.is_err() {
                let _ = tx.send(true);
            }
            files
        });
        PendingFiles { thread: Some(thread), failed }
    }

    /// A signal that turns true as soon as the writers fail (it stays false when they
    /// succeed).
    pub(crate) fn failed(&self) -> tokio::sync::watch::Receiver<bool> {
        self.failed.clone()
    }

    /// The table's files, once written and named.
    ///
    /// Errors: what the writers met (a single row above `--max-shard-bytes`, a write that
    /// failed).
    pub(crate) fn wait(mut self) -> Result<SplitFiles> {
        let thread = self.thread.take().expect("waited once");
        thread.join().unwrap_or_else(|_| Err(Error::format("table writer", "the writer thread panicked")))
    }
}

impl Drop for PendingFiles {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A table written.
pub(crate) struct TableBuilt {
    pub(crate) rows: u64,
    pub(crate) keys: Vec<(Vec<String>, KeySet)>,
    /// Its files, still being finished.
    pub(crate) split_files: PendingFiles,
    pub(crate) policy: DuplicatePolicy,
    pub(crate) table_schema: TableSchema,
    pub(crate) target_schema: SchemaRef,
    /// What the table's rows broke (violations, rows set aside, duplicates dropped) and the
    /// warnings of its build, for the build's report.
    pub(crate) found: BuildReport,
}

/// What a table's "no field named" error says when a CSV source read without `comment` has a
/// column whose name starts with `#` (`# sweep summary`): a comment line taken for the header,
/// likely, which makes the real header a row.
fn comment_header_hint(spec: &PipelineSpec, e: &datafusion::error::DataFusionError) -> String {
    use datafusion::common::SchemaError;
    use datafusion::error::DataFusionError;
    let DataFusionError::SchemaError(err, _) = e.find_root() else { return String::new() };
    let SchemaError::FieldNotFound { valid_fields, .. } = err.as_ref() else { return String::new() };
    let Some((source, name)) = valid_fields.iter().find_map(|c| {
        let source = spec.def.sources.iter().find(|s| {
            s.format == crate::core::spec::Format::Csv
                && s.comment.is_none()
                && s.header_row.is_none()
                && c.relation.as_ref().is_some_and(|r| r.table() == s.name)
        })?;
        c.name.starts_with('#').then_some((source, &c.name))
    }) else {
        return String::new();
    };
    format!(
        " (source {} has a column named {name:?} from its header line: a comment line read as the header? set \
         comment = \"#\" on the source to skip lines that start with it, or header_row to the header's line)",
        source.name
    )
}

/// Plans table `cx.index`'s query over what the session holds now.
pub(crate) async fn plan_table(cx: &TableCx<'_>) -> Result<TablePlan> {
    let (spec, i) = (cx.spec, cx.index);
    let t = &spec.def.tables[i];
    let sql = spec.table_sql(i)?;
    let df = cx.ctx.sql_with_options(&sql, crate::sql::session::read_only(false)).await.map_err(|e| {
        let hint = comment_header_hint(spec, &e);
        Error::sql(format!("table {} ({}){hint}", t.name, sql_origin(spec, i)), e)
    })?;
    if let Some(e) = crate::sql::session::check_written(&sql, df.logical_plan()) {
        return Err(Error::sql(format!("table {} ({})", t.name, sql_origin(spec, i)), e));
    }
    let rows_of = rows_kept_from(df.logical_plan());
    let result_schema: Schema = df.schema().as_arrow().clone();
    let table_schema = match &spec.table_schemas[i] {
        Some(s) => s.clone(),
        None => inferred_schema(&t.name, &result_schema)?,
    };
    let target_schema = table_schema.arrow_schema();
    let schema_file = t.schema.as_ref().map(|p| spec.dir.join(p).display().to_string());
    check_columns(&t.name, schema_file.as_deref(), &result_schema, &table_schema, &target_schema)?;
    let sort_cols = crate::core::schema::row_order(&table_schema, |c| result_schema.field_with_name(c).is_ok());
    let policy = cx.opts.on_duplicate_key.unwrap_or(t.on_duplicate_key);
    if policy != DuplicatePolicy::Error
        && (result_schema.field_with_name("_source_file").is_err()
            || result_schema.field_with_name("_source_line").is_err())
    {
        // the option sets the rule of every table: the table's own rule may be the one to set
        let option = match cx.opts.on_duplicate_key {
            Some(_) if t.on_duplicate_key != policy => format!(
                "; --on-duplicate-key sets the rule of every table: leave it out and set \
                 `on_duplicate_key = \"{}\"` on the tables that need it in {}",
                policy.as_str(),
                spec.file.display()
            ),
            _ => String::new(),
        };
        return Err(Error::config(
            format!("table {} ({})", t.name, sql_origin(spec, i)),
            format!(
                "the keep-last and keep-first duplicate-key rules need the input order of the rows: select \
                 `_source_file` and `_source_line` in the query (and declare them in the schema){option}"
            ),
        ));
    }
    let plan = df
        .create_physical_plan()
        .await
        .map_err(|e| Error::sql(format!("table {} ({})", t.name, sql_origin(spec, i)), e))?;
    // rows the query yields in key order already (a source ingest found in that order,
    // read as it was written) go straight on; any others through the sort
    let in_order = plan_in_order(&plan, &sort_cols);
    Ok(TablePlan {
        table_schema,
        target_schema,
        result_schema: Arc::new(result_schema),
        sort_cols,
        policy,
        plan,
        in_order,
        early_groups: true,
        rows_of,
    })
}

/// Sets aside the rows of `conformed` (the query's batch `b` conformed to the table's
/// schema) holding a value that does not fit its column (`problems`):
/// violations of the build, or rejects with every reason of the row; returns the other rows.
fn set_aside_unfit(
    table: &str,
    b: &RecordBatch,
    conformed: RecordBatch,
    problems: Vec<CellProblem>,
    on_invalid: OnInvalid,
    report: &mut BuildReport,
    rejects: &mut Rejects,
) -> Result<RecordBatch> {
    let sources = crate::stages::validate::SourceColumn::find(b);
    let mut bad_rows: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    // a row with a value that does not fit goes no further in either mode: its null
    // would only add a false `required` (or key) violation to the one reported here
    for CellProblem { row, column, key, message } in problems {
        match on_invalid {
            OnInvalid::Fail => {
                bad_rows.entry(row).or_default();
                report.violation(crate::core::report::Violation {
                    scope: crate::core::report::Scope::Table,
                    table: table.to_string(),
                    source: sources.at(row),
                    path: column,
                    rule: "type".into(),
                    key,
                    message,
                    finding: None,
                })
            }
            OnInvalid::Reject => bad_rows.entry(row).or_default().push(format!("{column}: {message}")),
        }
    }
    // one reject per row, with every reason
    for (&row, reasons) in bad_rows.iter().filter(|(_, reasons)| !reasons.is_empty()) {
        rejects.add(
            table,
            sources.reject_at(row).as_ref(),
            reasons,
            crate::stages::rejects::RejectBody::Record(crate::stages::validate::row_json(b, row)),
        )?;
    }
    if bad_rows.is_empty() {
        return Ok(conformed);
    }
    let keep: arrow::array::BooleanArray =
        (0..conformed.num_rows()).map(|r| Some(!bad_rows.contains_key(&r))).collect();
    arrow::compute::filter_record_batch(&conformed, &keep).map_err(|e| Error::format(table, e))
}

/// Runs a planned table query: conforms, sorts (unless the rows come in key order),
/// validates and writes its rows. Violations and warnings go to `report`, set-aside rows to
/// `rejects`.
///
/// `None` when the sort handed on groups of the first key column early and later rows broke
/// that column's order: nothing of the attempt is left, and the table is to be planned and
/// run again with [`TablePlan::early_groups`] off (from staged sources, for streamed ones).
pub(crate) async fn run_table(cx: &TableCx<'_>, tp: TablePlan, rejects: &mut Rejects) -> Result<Option<TableBuilt>> {
    let t = &cx.spec.def.tables[cx.index];
    let mut found = BuildReport::new(cx.opts.max_errors);
    let report = &mut found;
    let opts = cx.opts;
    let TablePlan {
        table_schema,
        target_schema,
        result_schema,
        sort_cols,
        policy,
        plan,
        in_order,
        early_groups,
        rows_of,
    } = tp;
    // a time without a zone is read as UTC: said, as sources refuse such times unless told
    for f in result_schema.fields() {
        if matches!(f.data_type(), DataType::Timestamp(_, None)) && target_schema.field_with_name(f.name()).is_ok() {
            report.warn(
                &t.name,
                "time-without-zone",
                None,
                format!(
                    "table {}, column `{}`: the query gives times without a time zone, stored as UTC times; if \
                     they are local times, name their zone in the query (`… AT TIME ZONE 'Europe/Paris'`)",
                    t.name,
                    f.name()
                ),
            );
        }
    }
    let columns = crate::stages::write::leaf_columns(&target_schema);
    if columns > crate::stages::write::VIEWER_MAX_COLUMNS {
        report.warn(
            &t.name,
            "wide-table",
            None,
            format!(
                "table {} has {columns} columns, above the dataset viewer's limit of {}; use a long layout \
                 (one row per key and value, as the tinker-metrics format does) or a map column",
                t.name,
                crate::stages::write::VIEWER_MAX_COLUMNS
            ),
        );
    }
    let mut validator = Validator::new(
        &t.name,
        &table_schema,
        target_schema.clone(),
        policy,
        opts.on_invalid,
        cx.key_sets,
        cx.referenced.get(&t.name).cloned().unwrap_or_default(),
    )
    .map_err(|e| match (e, &t.schema) {
        // a problem of the declared schema (a pattern, a foreign key) names its file
        (Error::Config { location, message }, Some(file)) if location == format!("table {}", t.name) => {
            Error::config(format!("{} (table {})", cx.spec.dir.join(file).display(), t.name), message)
        }
        (e, _) => e,
    })?
    // a problem of the table's `record_columns` is pipeline.toml's, at its line
    .with_record_columns(&t.record_columns)
    .map_err(|e| match e {
        Error::Config { message, .. } => {
            Error::config(cx.spec.place(&format!("table {}#record_columns", t.name)), message)
        }
        e => e,
    })?
    .with_order_by(t.order_by.as_deref())
    .map_err(|e| match e {
        Error::Config { message, .. } => Error::config(cx.spec.place(&format!("table {}#order_by", t.name)), message),
        e => e,
    })?;
    let mut writer = SplitWriters::new(
        &t.name,
        t.split_column.as_deref(),
        &t.splits,
        target_schema.clone(),
        cx.root,
        opts.write,
        cx.spec.jsonl_copies(cx.index),
    )?;
    if let Some(ci) = writer.column {
        validator = validator.with_split(ci, t.splits.clone());
    }
    // runpack sorts the query's rows itself, in bounded memory, stably (equal keys keep
    // the query's order, then file and line order)
    let keys: Vec<usize> = sort_cols.iter().map(|c| result_schema.index_of(c).expect("checked")).collect();
    let mut sorter = crate::stages::sort::ExternalSort::new(
        result_schema.clone(),
        keys,
        sort_budget(),
        cx.work.join(format!("sort-{}", t.name)),
    )?;
    if early_groups {
        sorter = sorter.with_early_groups();
    }
    let started = Instant::now();
    let task = cx.ctx.task_ctx();
    let ran = plan.clone();
    let mut stream = datafusion::physical_plan::execute_stream(plan, task)
        .map_err(|e| Error::sql(format!("table {}", t.name), e))?;
    // a float column stored as integers: its -0.0 become 0, which has no sign (counted, said)
    let float_to_int: Vec<(usize, String)> = target_schema
        .fields()
        .iter()
        .filter(|f| f.data_type().is_integer())
        .filter_map(|f| result_schema.index_of(f.name()).ok().map(|i| (i, f.name().clone())))
        .filter(|(i, _)| result_schema.field(*i).data_type().is_floating())
        .collect();
    let mut negative_zeros: Vec<u64> = vec![0; float_to_int.len()];
    let mut sink = |b: RecordBatch| -> Result<()> {
        for ((i, _), n) in float_to_int.iter().zip(negative_zeros.iter_mut()) {
            *n += count_negative_zeros(b.column(*i));
        }
        let (mut conformed, problems) = conform_batch(&t.name, &table_schema.primary_key, &b, &target_schema)?;
        if !problems.is_empty() {
            conformed = set_aside_unfit(&t.name, &b, conformed, problems, opts.on_invalid, report, rejects)?;
        }
        if let Some(out) = validator.push(conformed, report, rejects)? {
            writer.write(&out, report)?;
        }
        Ok(())
    };
    let mut rows_in: u64 = 0;
    let mut before_failed = cx.before_failed.clone();
    loop {
        let next = match &mut before_failed {
            None => stream.next().await,
            Some(failed) => tokio::select! {
                b = stream.next() => b,
                () = turns_true(failed) => {
                    return Err(Error::format(format!("table {}", t.name), "stopped: the files of the table before failed"));
                }
            },
        };
        let Some(b) = next else { break };
        let b = b.map_err(|e| Error::sql(format!("table {}", t.name), e))?;
        rows_in += b.num_rows() as u64;
        cx.progress.advance(b.num_rows() as u64);
        if in_order {
            sink(b)?
        } else if sorter.push_to(b, &mut sink)? == crate::stages::sort::Pushed::Disordered {
            // groups handed on early are out of order with these rows: nothing of this
            // attempt stays (its files are unfinished, its rejects go), and the caller runs
            // the table again without early groups
            tracing::info!("table {}: rows not grouped by the first key column after all; sorting again", t.name);
            drop(stream);
            drop(writer);
            crate::stages::write::remove_unfinished(cx.root, &t.name)?;
            rejects.discard(&t.name)?;
            return Ok(None);
        }
    }
    drop(stream);
    // a cluster's result read once, whole (see crate::sql::engine::check_result)
    crate::sql::engine::check_result(cx.ctx, &ran).await.map_err(|e| match e {
        Error::Refused(m) => Error::Refused(format!("table {}: {m}", t.name)),
        e => e,
    })?;
    if let Some(scanned) = &rows_of {
        crate::sql::engine::check_rows_kept(cx.ctx, &t.name, scanned, rows_in)?;
    }
    if in_order {
        tracing::info!("table {}: query in key order, not sorted", t.name);
    } else {
        tracing::info!("table {}: query and sort input in {:.2} s", t.name, started.elapsed().as_secs_f64());
        if sorter.early_rows() > 0 {
            tracing::info!(
                "table {}: {} rows sorted group by group before the input ended",
                t.name,
                sorter.early_rows()
            );
        }
        // the sorted rows are validated and written now: a step of its own, out of the rows
        // the query returned
        cx.progress.start(&format!("writing table {}", t.name), crate::core::progress::Unit::Rows, Some(rows_in));
        sorter.finish(&mut |b: RecordBatch| {
            cx.progress.advance(b.num_rows() as u64);
            sink(b)
        })?;
    }
    for ((_, column), n) in float_to_int.iter().zip(&negative_zeros) {
        if *n > 0 {
            report.warn(
                &t.name,
                "negative-zero",
                None,
                format!(
                    "table {}, column `{column}`: {n} negative zero{} (-0.0) stored as the integer 0, which has no \
                     sign",
                    t.name,
                    if *n == 1 { "" } else { "s" }
                ),
            );
        }
    }
    if let Some(out) = validator.finish(report, rejects)? {
        writer.write(&out, report)?;
    }
    let rows = validator.rows_kept;
    let keys = validator.take_keys();
    drop(validator);
    let split_files = PendingFiles::start(writer);
    Ok(Some(TableBuilt {
        rows,
        keys: keys.into_iter().collect(),
        split_files,
        policy,
        table_schema,
        target_schema,
        found,
    }))
}

/// Resolves when `signal` turns true; never, when its sender goes without.
async fn turns_true(signal: &mut tokio::sync::watch::Receiver<bool>) {
    if signal.wait_for(|&v| v).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The error of a table whose sort stopped unfinished ([`run_table`] gave `None`) where it
/// cannot: no groups were handed on early, or the attempt was sent back to be read again.
pub(crate) fn unfinished(table: &str) -> Error {
    Error::format(format!("table {table}"), "the sort stopped unfinished")
}

/// The memory a table's sort buffers, in bytes: [`SORT_BUDGET_BYTES`], or the test hook
/// `RUNPACK_TEST_SORT_BUDGET` (bytes), with which tests reach runs and early groups with
/// small inputs.
fn sort_budget() -> usize {
    std::env::var("RUNPACK_TEST_SORT_BUDGET").ok().and_then(|v| v.parse().ok()).unwrap_or(SORT_BUDGET_BYTES)
}

/// How building a table over streamed sources ended.
pub(crate) enum Streaming {
    /// The table is written; each streamed source's index, the files it read and what
    /// reading it found.
    Built(Box<TableBuilt>, Vec<(usize, Vec<ingest::files::InputFile>, BuildReport)>),
    /// A streamed source broke the rules: each source's index and what reading it found.
    Invalid(Vec<(usize, BuildReport)>),
    /// Reading streamed source `.0` failed.
    SourceError(usize, Error),
    /// The sources must be staged and the table built from them: its query reads a source
    /// more than once. Nothing of the attempt is left in the report, the rejects or the
    /// release folder.
    Restage,
    /// The rows broke the key order the plan counted on: the sources are to be streamed
    /// again into a plan that sorts them (`speculate` off). Nothing of the attempt is left.
    Unordered,
    /// The rows broke the order of the first key column after the sort handed on groups of
    /// it: the sources are to be streamed again into a sort of everything (`early_groups`
    /// off). Nothing of the attempt is left.
    Regroup,
}

/// Builds table `cx.index` while its `streamed` sources (index, schema) are read into it.
/// `speculate`: a source whose rows may come in the table's key order is declared so, and
/// checked as it is read (the table then needs no sort). `early_groups`: see
/// [`TablePlan::early_groups`].
pub(crate) async fn build_streamed(
    cx: &TableCx<'_>,
    spec: &Arc<PipelineSpec>,
    streamed: &[(usize, SchemaRef)],
    ingest_opts: &IngestOptions,
    rejects: &mut Rejects,
    (speculate, early_groups): (bool, bool),
) -> Result<Streaming> {
    use datafusion::catalog::streaming::StreamingTable;
    let t = &spec.def.tables[cx.index];
    let name = |s: usize| spec.def.sources[s].name.as_str();
    // the table's key order, declared for each source that has its columns, to be checked
    // as the rows go by
    let checks: Vec<Option<crate::stages::sort::OrderCheck>> = streamed
        .iter()
        .map(|(_, schema)| {
            let table_schema = spec.table_schemas[cx.index].as_ref()?;
            let cols = crate::core::schema::row_order(table_schema, |c| schema.index_of(c).is_ok());
            let check = crate::stages::sort::OrderCheck::new(schema, cols);
            (speculate && check.in_order()).then_some(check)
        })
        .collect();
    let feeds: Vec<_> = streamed.iter().map(|(_, schema)| crate::stages::feed::Feed::new(schema.clone())).collect();
    let register = |declare: bool| -> Result<()> {
        for (((s, schema), (feed, _)), check) in streamed.iter().zip(&feeds).zip(&checks) {
            let mut table = StreamingTable::try_new(schema.clone(), vec![feed.clone()])
                .map_err(|e| Error::sql(format!("source {}", name(*s)), e))?;
            if let (true, Some(c)) = (declare, check) {
                table = table.with_sort_order(crate::sql::session::sort_exprs(c.columns()));
            }
            let _ = cx.ctx.deregister_table(name(*s));
            cx.ctx
                .register_table(name(*s), Arc::new(table))
                .map_err(|e| Error::sql(format!("source {}", name(*s)), e))?;
        }
        Ok(())
    };
    register(true)?;
    let mut tp = plan_table(cx).await?;
    let declared = checks.iter().any(|c| c.is_some());
    if !tp.in_order && declared {
        // the order would not spare the sort: plan again without counting on it
        register(false)?;
        tp = plan_table(cx).await?;
    }
    let speculative = tp.in_order && declared;
    tp.early_groups = early_groups;
    if feeds.iter().any(|(feed, _)| !feed.read_once_by(&tp.plan)) {
        tracing::info!("table {}: reads a source more than once; staging it", t.name);
        return Ok(Streaming::Restage);
    }
    let mut running = Vec::new();
    let mut opened = Vec::new();
    for (((s, _), (feed, tx)), check) in streamed.iter().zip(feeds).zip(checks) {
        opened.push(feed);
        running.push(crate::stages::feed::start(
            spec.clone(),
            *s,
            tx,
            if speculative { check } else { None },
            ingest_opts.clone(),
            cx.root.join("rejects"),
        ));
        tracing::info!("source {}: streamed into table {}", name(*s), t.name);
    }
    let result = run_table(cx, tp, rejects).await;
    // groups handed on early that later rows broke: streamed again into a whole sort
    let regroup = matches!(result, Ok(None));
    // a query that failed before it ran, or never read a source, must not keep its reader waiting
    for feed in &opened {
        feed.close();
    }
    let readings: Vec<crate::stages::feed::Reading> = running.into_iter().map(|r| r.join()).collect();
    for (s, _) in streamed {
        let _ = cx.ctx.deregister_table(name(*s));
    }
    let reread = opened.iter().any(|f| f.reread());
    if reread || regroup || readings.iter().any(|r| r.disordered) {
        if reread {
            tracing::info!("table {}: reads a source more than once; staging it", t.name);
        } else if regroup {
            tracing::info!("table {}: streaming the sources again to a sort of every row", t.name);
        } else {
            tracing::info!("table {}: a streamed source is not in key order; streaming it again to the sort", t.name);
        }
        if let Ok(Some(built)) = result {
            // (files a writer failed on are left unfinished, and removed below)
            for (_, files) in built.split_files.wait().unwrap_or_default() {
                for f in files {
                    let path = cx.root.join(&f.path);
                    std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                }
            }
        }
        crate::stages::write::remove_unfinished(cx.root, &t.name)?;
        rejects.discard(&t.name)?;
        for r in readings {
            r.rejects.abandon()?;
        }
        return Ok(if reread {
            Streaming::Restage
        } else if regroup {
            Streaming::Regroup
        } else {
            Streaming::Unordered
        });
    }
    let mut read = Vec::new();
    let mut adopted = Vec::new();
    for r in readings {
        let files = match r.result {
            Ok(f) => f,
            Err(e) => return Ok(Streaming::SourceError(r.source, e)),
        };
        adopted.push(r.rejects);
        read.push((r.source, files.inputs, files.found));
    }
    if read.iter().any(|(_, _, found)| found.violations_total > 0) {
        return Ok(Streaming::Invalid(read.into_iter().map(|(s, _, found)| (s, found)).collect()));
    }
    // (an unfinished table was sent back above, to be read again)
    let built = result?.ok_or_else(|| unfinished(&t.name))?;
    for r in adopted {
        rejects.adopt(r);
    }
    Ok(Streaming::Built(Box::new(built), read))
}

/// Routes a table's rows to one writer per split.
struct SplitWriters {
    table: String,
    column: Option<usize>,
    allowed: Vec<String>,
    writers: BTreeMap<String, TableWriter>,
    schema: SchemaRef,
    root: PathBuf,
    opts: WriteOptions,
    /// Whether the table gets JSON Lines copies.
    copies: bool,
}

impl SplitWriters {
    fn new(
        table: &str,
        column: Option<&str>,
        allowed: &[String],
        schema: SchemaRef,
        root: &Path,
        opts: WriteOptions,
        copies: bool,
    ) -> Result<Self> {
        let column = match column {
            Some(c) => Some(schema.index_of(c).map_err(|_| {
                Error::config(format!("table {table}"), format!("split_column `{c}` is not a column of the table"))
            })?),
            None => None,
        };
        let mut w = SplitWriters {
            table: table.to_string(),
            column,
            allowed: allowed.to_vec(),
            writers: BTreeMap::new(),
            schema,
            root: root.to_path_buf(),
            opts,
            copies,
        };
        let names: Vec<String> = if w.column.is_none() { vec!["train".into()] } else { allowed.to_vec() };
        for n in names {
            w.writer(&n)?;
        }
        Ok(w)
    }

    fn writer(&mut self, split: &str) -> Result<&mut TableWriter> {
        if !self.writers.contains_key(split) {
            let name = if self.column.is_some() { format!("{}/{split}", self.table) } else { self.table.clone() };
            let w = TableWriter::new(&name, self.schema.clone(), &self.root, self.opts, self.copies)?;
            self.writers.insert(split.to_string(), w);
        }
        Ok(self.writers.get_mut(split).expect("inserted"))
    }

    fn write(&mut self, b: &RecordBatch, report: &mut BuildReport) -> Result<()> {
        let Some(ci) = self.column else { return self.writer("train")?.write(b) };
        let col = arrow::compute::cast(b.column(ci), &DataType::Utf8).map_err(|e| Error::format(&self.table, e))?;
        let col = col.as_any().downcast_ref::<arrow::array::StringArray>().expect("utf8");
        let sources = crate::stages::validate::SourceColumn::find(b);
        let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for r in 0..b.num_rows() {
            let name = if arrow::array::Array::is_valid(col, r) { col.value(r).to_string() } else { String::new() };
            // the validator has checked these rows already (Validator::with_split): a row with
            // a bad split name was rejected there, or reported there and fails the build; it is
            // kept out of the files here, never written under a name it cannot have
            match crate::core::names::split_problem(Some(&name), &self.allowed) {
                Some(_) if report.violations_total > 0 => {}
                Some(message) => report.violation(crate::core::report::Violation {
                    scope: crate::core::report::Scope::Table,
                    table: self.table.clone(),
                    source: sources.at(r),
                    path: self.schema.field(ci).name().clone(),
                    rule: "split".into(),
                    key: None,
                    message,
                    finding: None,
                }),
                None => groups.entry(name).or_default().push(r as u32),
            }
        }
        for (name, rows) in groups {
            let idx = arrow::array::UInt32Array::from(rows);
            let part = arrow::compute::take_record_batch(b, &idx).map_err(|e| Error::format(&self.table, e))?;
            self.writer(&name)?.write(&part)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<SplitFiles> {
        let mut out = Vec::new();
        for (name, w) in self.writers {
            out.push((name, w.finish()?));
        }
        Ok(out)
    }
}

fn sql_origin(spec: &PipelineSpec, i: usize) -> String {
    let t = &spec.def.tables[i];
    origin(spec, t.sql.as_deref(), "table", &t.name)
}

/// Where the SQL of a `[[table]]` or `[[view]]` (`section`) named `name` is: its file, or the
/// line of pipeline.toml where the SQL of its inline `query` starts.
pub(crate) fn origin(spec: &PipelineSpec, sql: Option<&str>, section: &str, name: &str) -> String {
    match sql {
        Some(p) => spec.dir.join(p).display().to_string(),
        None => match spec.inline_query_line(section, name) {
            Some(line) => format!("inline query whose SQL line 1 is {}:{line}", spec.file.display()),
            None => "inline query".into(),
        },
    }
}

/// Tables in an order where each comes after the tables its SQL reads, and for each table
/// (by index) the tables it needs first: those its SQL reads and those its foreign keys name.
///
/// Errors: [`Error::Config`] for a table that reads itself or tables that read each other in
/// a cycle; a table's SQL that does not parse.
pub(crate) fn table_order(spec: &PipelineSpec) -> Result<(Vec<usize>, Vec<BTreeSet<usize>>)> {
    let names: BTreeMap<&str, usize> = spec.def.tables.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    let mut deps: Vec<BTreeSet<usize>> = Vec::new();
    for (i, t) in spec.def.tables.iter().enumerate() {
        let sql = spec.table_sql(i)?;
        let mut set = BTreeSet::new();
        for r in sql_references(&sql, || format!("table {} ({})", t.name, sql_origin(spec, i)))? {
            if let Some(&j) = names.get(r.as_str()) {
                if j == i {
                    return Err(Error::config(sql_origin(spec, i), format!("table {} reads itself", t.name)));
                }
                set.insert(j);
            }
        }
        // foreign keys also need the referenced table first
        if let Some(s) = &spec.table_schemas[i] {
            for fk in &s.foreign_keys {
                if let Some(&j) = names.get(fk.reference.resource.as_str())
                    && j != i
                {
                    set.insert(j);
                }
            }
        }
        deps.push(set);
    }
    let (order, stuck) = crate::core::schema::dependency_order(&deps);
    if !stuck.is_empty() {
        let stuck: Vec<&str> = stuck.iter().map(|&i| spec.def.tables[i].name.as_str()).collect();
        return Err(Error::config(
            spec.file.display().to_string(),
            format!("tables read each other in a cycle: {}", stuck.join(", ")),
        ));
    }
    Ok((order, deps))
}

/// The schema a table without a declared one gets from its query's result: each column of
/// its canonical type, nullable (also what `init` writes as the table's declared schema).
///
/// Errors: [`Error::Config`] naming the table and column for a name or type a release cannot hold.
pub fn inferred_schema(table: &str, result: &Schema) -> Result<TableSchema> {
    let mut fields = Vec::new();
    for f in result.fields() {
        crate::core::schema::column_name(f.name()).map_err(|m| Error::config(format!("table {table}"), m))?;
        let dt = crate::core::schema::canonical(f.data_type())
            .map_err(|m| Error::config(format!("table {table}"), format!("column `{}` {m}", f.name())))?;
        fields.push(Field::new(f.name(), dt, true));
    }
    Ok(TableSchema::from_arrow(&Schema::new(fields)))
}

/// Checks that the query's columns are the schema's and can be cast to its types.
/// `schema_file` is the declared schema's path, for the messages (`None`: inferred).
fn check_columns(
    table: &str,
    schema_file: Option<&str>,
    result: &Schema,
    schema: &TableSchema,
    target: &Schema,
) -> Result<()> {
    let ctx = format!("table {table}");
    for f in target.fields() {
        let Ok(found) = result.field_with_name(f.name()) else {
            let have: Vec<&str> = result.fields().iter().map(|f| f.name().as_str()).collect();
            return Err(Error::config(
                ctx,
                format!(
                    "the schema declares `{}` but the query returns no such column (it returns: {})",
                    f.name(),
                    have.join(", ")
                ),
            ));
        };
        if !castable(found.data_type(), f.data_type()) {
            let declared = schema.field(f.name());
            let nested = matches!(
                found.data_type(),
                DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) | DataType::Map(..)
            );
            // SQL has no cast of a struct or list to JSON text: the schema says how to keep it
            let fix: std::borrow::Cow<str> = if nested && matches!(f.data_type(), DataType::Utf8) {
                "SQL cannot cast a struct or a list to JSON text: declare the field as an `object` with `fields` \
                 (a struct) or an `array` with `items` (a list) to keep it as it is"
                    .into()
            } else if matches!(found.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
                && f.data_type().is_floating()
            {
                // SQL's CAST reads 1e-400 as 0 and 1e400 as infinite, without a word
                "declare the source's field a number (`[[source.field]]` with `type = \"number\"`), which \
                 checks each value as it is read; a CAST in the SQL reads 1e-400 as 0 and 1e400 as infinite"
                    .into()
            } else if let Some(m) = missing_member(found.data_type(), f.data_type()) {
                let (inside, name) = match m.rsplit_once('.') {
                    Some((outer, name)) => (format!(" inside `{outer}`'s named_struct"), name.to_string()),
                    None => (String::new(), m.clone()),
                };
                format!(
                    "the query's struct has no member `{m}`: add it{inside} (`named_struct(…, '{name}', CAST(NULL AS \
                     …))` where it is null), or take it out of the schema"
                )
                .into()
            } else {
                "CAST it in the SQL, or declare the type the query gives in the schema".into()
            };
            return Err(Error::config(
                ctx,
                format!(
                    "column `{}` is {} in the query but the schema{} declares it {}{} ({}); {fix}",
                    f.name(),
                    type_name(found.data_type()),
                    schema_file.map(|p| format!(" ({p})")).unwrap_or_default(),
                    declared.map(|d| d.field_type.as_str()).unwrap_or("of another type"),
                    declared.and_then(|d| d.format.as_deref()).map(|f| format!(" of format {f}")).unwrap_or_default(),
                    type_name(f.data_type())
                ),
            ));
        }
    }
    for f in result.fields() {
        if schema.field(f.name()).is_none() {
            return Err(Error::config(
                ctx,
                format!("the query returns column `{}`, which the schema does not declare", f.name()),
            ));
        }
    }
    Ok(())
}

/// The values of a float column that are -0.0 (nulls aside).
fn count_negative_zeros(a: &arrow::array::ArrayRef) -> u64 {
    use arrow::array::AsArray;
    let Ok(f) = arrow::compute::cast(a, &DataType::Float64) else { return 0 };
    let f = f.as_primitive::<arrow::datatypes::Float64Type>();
    f.iter().flatten().filter(|v| *v == 0.0 && v.is_sign_negative()).count() as u64
}

fn castable(from: &DataType, to: &DataType) -> bool {
    if from == to || *from == DataType::Null {
        return true;
    }
    let Ok(c) = crate::core::schema::canonical(from) else { return false };
    if &c == to {
        return true;
    }
    match (&c, to) {
        (DataType::Int64, DataType::Float64 | DataType::UInt64)
        | (DataType::UInt64, DataType::Float64 | DataType::Int64)
        | (DataType::Float64, DataType::Int64 | DataType::UInt64) => true,
        (DataType::List(a), DataType::List(b)) => castable(a.data_type(), b.data_type()),
        // every member of one is a member of the other: a member the query leaves out would be
        // null in every row, as a column it leaves out would be missing
        (DataType::Struct(a), DataType::Struct(b)) => {
            a.len() == b.len()
                && a.iter().all(|f| {
                    b.iter().find(|g| g.name() == f.name()).is_some_and(|g| castable(f.data_type(), g.data_type()))
                })
        }
        _ => false,
    }
}

/// The first member `declared` has and the struct `found` lacks, at any depth of structs and
/// lists, as a dotted path from the column (`b`, `inner.b`).
fn missing_member(found: &DataType, declared: &DataType) -> Option<String> {
    match (found, declared) {
        (DataType::List(a) | DataType::LargeList(a), DataType::List(b)) => missing_member(a.data_type(), b.data_type()),
        (DataType::Struct(a), DataType::Struct(b)) => {
            b.iter().find_map(|g| match a.iter().find(|f| f.name() == g.name()) {
                None => Some(g.name().clone()),
                Some(f) => missing_member(f.data_type(), g.data_type()).map(|m| format!("{}.{m}", g.name())),
            })
        }
        _ => None,
    }
}

/// A value of a query's result that does not fit the table.
struct CellProblem {
    /// The row in the query's batch.
    row: usize,
    column: String,
    /// The row's primary key (`id=2, split=test`), when the table has one.
    key: Option<String>,
    message: String,
}

/// Conforms a query batch to the table's schema. Values that cannot be stored as the declared
/// type without change (a fraction into an integer column, an integer out of range) become
/// [`CellProblem`]s, named by the row's `primary_key`, and null values; the caller reports or
/// rejects their rows.
fn conform_batch(
    table: &str,
    primary_key: &[String],
    b: &RecordBatch,
    target: &SchemaRef,
) -> Result<(RecordBatch, Vec<CellProblem>)> {
    let mut cols = Vec::with_capacity(target.fields().len());
    let mut problems = Vec::new();
    // the key as the query gave it (a key column may be the value that does not fit)
    let key = |r: usize| -> Option<String> {
        let idx: Vec<usize> = primary_key.iter().map(|k| b.schema().index_of(k).ok()).collect::<Option<_>>()?;
        (!idx.is_empty()).then(|| crate::stages::validate::render_key(primary_key, &idx, b, r))
    };
    let schema = b.schema();
    for (i, f) in target.fields().iter().enumerate() {
        // the query's columns are mostly in the target's order: a lookup by name for each of
        // thousands of columns would scan them all each time
        let c = match schema.fields().get(i) {
            Some(g) if g.name() == f.name() => b.column(i),
            _ => b.column_by_name(f.name()).expect("checked"),
        };
        let from = c.data_type().clone();
        match crate::core::schema::conform(c, f.data_type()) {
            Ok(a) => cols.push(a),
            Err(_)
                if from.is_numeric()
                    || from.is_temporal()
                    || matches!(from, DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_)) =>
            {
                // value by value: keep what fits exactly, name what does not
                let (out, lost) = crate::core::schema::conform_each(c, f.data_type())
                    .map_err(|e| Error::format(format!("table {table}, column `{}`", f.name()), e))?;
                for r in (0..c.len()).filter(|&r| lost[r]) {
                    let shown = arrow::util::display::array_value_to_string(c, r).unwrap_or_default();
                    problems.push(CellProblem {
                        row: r,
                        column: f.name().clone(),
                        key: key(r),
                        message: format!(
                            "value {shown} cannot be stored as {} without changing it",
                            type_name(f.data_type())
                        ),
                    });
                }
                cols.push(out);
            }
            Err(m) => return Err(Error::format(format!("table {table}, column `{}`", f.name()), m)),
        }
    }
    let cols = cols.into_iter().map(|c| crate::core::values::positive_nan(&c)).collect();
    let batch = RecordBatch::try_new(target.clone(), cols).map_err(|e| Error::format(format!("table {table}"), e))?;
    Ok((batch, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_query_keeps_the_rows_of_its_one_scan_only_through_projections_windows_and_sorts() {
        let ctx = datafusion::prelude::SessionContext::new();
        let schema =
            Arc::new(Schema::new(vec![Field::new("g", DataType::Utf8, true), Field::new("x", DataType::Int64, true)]));
        let t = datafusion::datasource::MemTable::try_new(schema, vec![vec![]]).unwrap();
        ctx.register_table("rows", Arc::new(t)).unwrap();
        let kept = |sql: &'static str| {
            let ctx = ctx.clone();
            async move { rows_kept_from(ctx.sql(sql).await.unwrap().logical_plan()) }
        };
        let rows = Some("rows".to_string());
        assert_eq!(kept("SELECT g, x + 1 AS y FROM rows").await, rows);
        assert_eq!(
            kept("SELECT g, row_number() OVER (PARTITION BY g ORDER BY x) AS r FROM rows ORDER BY g").await,
            rows
        );
        assert_eq!(kept("SELECT * FROM rows AS r").await, rows);
        for changed in [
            "SELECT * FROM rows WHERE x > 1",
            "SELECT g, count(*) FROM rows GROUP BY g",
            "SELECT * FROM rows LIMIT 3",
            "SELECT * FROM rows ORDER BY x LIMIT 3",
            "SELECT DISTINCT g FROM rows",
            "SELECT a.g FROM rows a JOIN rows b ON a.g = b.g",
            "SELECT g FROM rows UNION ALL SELECT g FROM rows",
        ] {
            assert_eq!(kept(changed).await, None, "{changed}");
        }
    }
}

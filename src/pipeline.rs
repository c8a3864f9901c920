//! The `build` verb: a pipeline's raw inputs → a release folder.
//!
//! In: a [`PipelineSpec`] and [`BuildOptions`]. Out: `releases/<name>/<version>/` (see
//! [`crate::release`]) and a [`BuildOutcome`] with the manifest and the [`BuildReport`].
//!
//! Steps: every source is ingested into an Arrow IPC file in a hidden staging folder beside
//! the target, except a source that exactly one table reads (and no view), whose schema is
//! known before reading: that one is streamed straight into the table's query while it runs
//! (see [`crate::feed`]; `--stage-sources` stages every source). Each table's SQL
//! (DataFusion) runs over the sources and the tables before it, in dependency order; its rows
//! are conformed to the declared schema (or to the canonical form of the query's types),
//! sorted by primary key (then by `_source_file`, `_source_line`; by every column when there is
//! no key), validated, and written as Parquet and JSON Lines; then hashes, the dataset card, `manifest.json` and `SHA256SUMS` are written and the staging
//! folder is renamed into place. Any error leaves no release behind and an existing release
//! untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use futures::StreamExt;
use serde_json::json;

use crate::error::{Error, Result};
use crate::ingest::{self, IngestOptions, OnInvalid};
use crate::rejects::Rejects;
use crate::release::{
    self, ArrowField, FileEntry, InputEntry, Manifest, PipelineInfo, ReportSummary, Staging, TableEntry,
};
use crate::report::BuildReport;
use crate::schema::{TableSchema, type_name};
use crate::spec::{DuplicatePolicy, PipelineSpec};
use crate::validate::{KeySet, Validator};
use crate::write::{TableWriter, WriteOptions};

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

/// Options of one build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Folder holding releases (`releases/`).
    pub releases_dir: PathBuf,
    /// Release version (default: the pipeline's `version`).
    pub version: Option<String>,
    /// Replace an existing release of the same version.
    pub force: bool,
    /// Fail on invalid rows, or set them aside in `rejects/`.
    pub on_invalid: OnInvalid,
    /// Violations listed at most (the total is always given).
    pub max_errors: usize,
    /// Duplicate-key rule for every table, overriding the pipeline's.
    pub on_duplicate_key: Option<DuplicatePolicy>,
    /// File and row-group sizes.
    pub write: WriteOptions,
    /// Strings longer than this many bytes are reported.
    pub large_cell_bytes: u64,
    /// `SOURCE_DATE_EPOCH` (seconds since the Unix epoch), recorded as `created_at`.
    pub source_date_epoch: Option<i64>,
    /// Stage every source in an Arrow IPC file before any table is built, instead of
    /// streaming a source that one table reads straight into that table's query (the
    /// release is the same either way).
    pub stage_sources: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            releases_dir: PathBuf::from("releases"),
            version: None,
            force: false,
            on_invalid: OnInvalid::Fail,
            max_errors: 100,
            on_duplicate_key: None,
            write: WriteOptions::default(),
            large_cell_bytes: 10_000_000,
            source_date_epoch: None,
            stage_sources: false,
        }
    }
}

/// What a step's progress counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nothing: the step only runs (a spinner).
    None,
    /// Rows written.
    Rows,
    /// Bytes read, hashed or sent.
    Bytes,
}

/// Progress of long steps, reported by the library and shown by the front end.
pub trait Progress: Send + Sync {
    /// A step begins; `total` is its size in `unit`s, the unit of `advance`, when known.
    fn start(&self, step: &str, unit: Unit, total: Option<u64>);
    /// Some of the current step is done.
    fn advance(&self, n: u64);
    /// The current step is done.
    fn finish(&self);
}

/// A [`Progress`] that shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: &str, _: Unit, _: Option<u64>) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// What a successful build returns.
#[derive(Debug)]
pub struct BuildOutcome {
    /// Where the release is.
    pub release_dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Warnings and counts.
    pub report: BuildReport,
    /// The release already existed and its inputs and pipeline had not changed: nothing was
    /// rebuilt.
    pub unchanged: bool,
}

/// Writes `text` as the release file `path` (relative to `root`) and lists it in the
/// manifest's files (sorted by path) with its size, digest and `kind`.
///
/// Errors: [`Error::Io`] when the file cannot be written.
fn write_listed(root: &Path, manifest: &mut Manifest, path: &str, kind: &str, text: &str) -> Result<()> {
    let full = root.join(path);
    std::fs::write(&full, text).map_err(|e| Error::io(&full, e))?;
    manifest.files.push(FileEntry {
        path: path.into(),
        bytes: text.len() as u64,
        sha256: crate::hash::sha256_bytes(text.as_bytes()),
        kind: kind.into(),
        table: None,
        rows: None,
    });
    manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(())
}

/// Builds a release.
///
/// Errors: [`Error::Invalid`] when the data breaks the rules (every violation listed, up to
/// `max_errors`); [`Error::Config`] for pipeline problems; [`Error::Refused`] when the version
/// exists and `force` is not set; [`Error::Io`], [`Error::Sql`] otherwise.
pub async fn build(spec: &PipelineSpec, opts: &BuildOptions, progress: &dyn Progress) -> Result<BuildOutcome> {
    let version = opts.version.clone().unwrap_or_else(|| spec.def.version.clone());
    if !regex::Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$").expect("static").is_match(&version) {
        let from = if opts.version.is_some() {
            "--release-version".to_string()
        } else {
            format!("{} (version)", spec.file.display())
        };
        return Err(Error::config(from, format!("version {version:?} must match [A-Za-z0-9][A-Za-z0-9._+-]*")));
    }
    let target = opts.releases_dir.join(&spec.def.name).join(&version);
    // checks that need no data, before anything is written
    let extra_metadata = crate::card::preflight(spec)?;
    let cache_path = crate::cache::InputCache::path(&opts.releases_dir, spec);
    let mut input_cache = crate::cache::InputCache::load(&cache_path);
    // `force` trusts no cache and rebuilds whatever it says
    let mut stale = None;
    if let Some(existing) = Manifest::load(&target).ok().filter(|_| !opts.force) {
        progress.start("checking whether the release is up to date", Unit::None, None);
        // a different SOURCE_DATE_EPOCH makes a different manifest: not up to date
        stale = if existing.created_at != created_at(opts) {
            Some("SOURCE_DATE_EPOCH changed".to_string())
        } else {
            crate::cache::stale(spec, &target, &existing, &build_settings(spec, opts), &mut input_cache)?
        };
        progress.finish();
        if stale.is_none() {
            // inputs hashed again because only their stamps changed (touched, copied) are
            // not hashed again next time
            if let Err(e) = input_cache.save(&cache_path) {
                tracing::warn!("input cache not saved: {e}");
            }
            return Ok(BuildOutcome {
                release_dir: target,
                manifest: existing,
                report: BuildReport::new(0),
                unchanged: true,
            });
        }
    }
    let staging = Staging::new(&target, opts.force).map_err(|e| match (e, &stale) {
        (Error::Refused(m), Some(why)) => Error::Refused(format!("{m} (what changed: {why})")),
        (e, _) => e,
    })?;
    // each input's stamp before anything reads it: one that differs after the build was
    // changed while it was read, and the release would not hold what its manifest says
    let stamps = crate::cache::input_stamps(spec);
    let root = staging.path().to_path_buf();
    let work = root.join(".work");
    let mut report = BuildReport::new(opts.max_errors);
    let mut rejects = Rejects::new(root.join("rejects"));
    let ctx = crate::query::session();
    // a staged source is read batch by batch only when the scan is not split into byte
    // ranges (a range scan of an Arrow IPC file fetches its whole range at once)
    ctx.state_ref().write().config_mut().options_mut().optimizer.repartition_file_scans = false;

    // sources
    let read_digests = crate::hash::ReadDigests::default();
    let ingest_opts = IngestOptions {
        on_invalid: opts.on_invalid,
        large_cell_bytes: opts.large_cell_bytes,
        read_digests: Some(read_digests.clone()),
    };
    // the orders the tables are sorted in: a source found to be in one already lets a table
    // that reads it in that order skip the sort
    let orders: Vec<Vec<String>> =
        spec.table_schemas.iter().flatten().map(|s| release::row_order(s, |_| true)).collect();
    // sources that one table reads are streamed into it when that table is built
    let mut deferred: BTreeMap<usize, (usize, SchemaRef)> =
        if opts.stage_sources { BTreeMap::new() } else { streamable_sources(spec)? };
    let shared = (!deferred.is_empty()).then(|| Arc::new(spec.clone()));
    let mut inputs: BTreeMap<String, (PathBuf, BTreeSet<String>)> = BTreeMap::new();
    let mut stager = Stager {
        ctx: &ctx,
        spec,
        work: &work,
        opts: &ingest_opts,
        orders: &orders,
        max_errors: opts.max_errors,
        reports: vec![None; spec.def.sources.len()],
    };
    for i in 0..spec.def.sources.len() {
        if !deferred.contains_key(&i)
            && let Err(e) = stager.stage(i, progress, &mut rejects, &mut inputs).await
        {
            return Err(stager.fail(Failure::Source(i, e), &mut deferred, progress, &mut rejects, &mut inputs).await);
        }
    }
    // stop here when the sources already broke the rules: table errors would only repeat them
    if stager.violations() > 0 {
        return Err(stager.fail(Failure::Sources, &mut deferred, progress, &mut rejects, &mut inputs).await);
    }

    // inputs that ingest read to their end were hashed on the way; the others are hashed
    // in the background while the tables are built
    let background: Vec<PathBuf> =
        inputs.values().filter(|(p, _)| read_digests.get(p).is_none()).map(|(p, _)| p.clone()).collect();
    let input_hashing = std::thread::spawn(move || hash_by_path(background));

    // tables, in dependency order; `report` holds what they find (the sources' findings come
    // first in the final report, in source order, however late a streamed source was read)
    let mut order: Vec<usize> = Vec::new();
    let mut table_entries: BTreeMap<String, TableEntry> = BTreeMap::new();
    // (table, file written), each file hashed as it was written
    let mut data_files: Vec<(String, crate::write::WrittenFile)> = Vec::new();
    let tables: std::result::Result<(), Failure> = async {
        for (i, v) in spec.def.views.iter().enumerate() {
            let sql = spec.view_sql(i)?;
            let context = || format!("view {} ({})", v.name, origin(spec, v.sql.as_deref(), "view", &v.name));
            let df = ctx
                .sql_with_options(&sql, crate::query::read_only(false))
                .await
                .map_err(|e| Error::sql(context(), e))?;
            // (the session's analyzer refuses it when a table or section reads the view; here
            // it is named, and refused in a view that nothing reads too)
            if crate::query::uses_similar_to(df.logical_plan()) {
                return Err(Error::config(context(), crate::query::SIMILAR_TO_REFUSED).into());
            }
            ctx.register_table(v.name.as_str(), df.into_view()).map_err(|e| Error::sql(context(), e))?;
        }
        order = table_order(spec)?;
        let referenced = crate::schema::referenced_columns(
            spec.def.tables.iter().zip(&spec.table_schemas).filter_map(|(t, s)| Some((t.name.as_str(), s.as_ref()?))),
        );
        let mut key_sets: BTreeMap<(String, Vec<String>), KeySet> = BTreeMap::new();
        for &i in &order {
            let t = &spec.def.tables[i];
            progress.start(&format!("building table {}", t.name), Unit::Rows, None);
            let started = Instant::now();
            let streamed: Vec<(usize, SchemaRef)> =
                deferred.iter().filter(|(_, (ti, _))| *ti == i).map(|(&s, (_, schema))| (s, schema.clone())).collect();
            let cx = TableCx {
                ctx: &ctx,
                spec,
                index: i,
                opts,
                key_sets: &key_sets,
                referenced: &referenced,
                root: &root,
                work: &work,
                progress,
            };
            let built = if streamed.is_empty() {
                None
            } else {
                let shared = shared.as_ref().expect("set when sources are deferred");
                let outcome = build_streamed(&cx, shared, &streamed, &ingest_opts, &mut report, &mut rejects).await?;
                match outcome {
                    Streaming::Built(built, read) => {
                        for (s, files, found) in read {
                            deferred.remove(&s);
                            stager.reports[s] = Some(found);
                            record_inputs(&mut inputs, &files, &spec.def.sources[s].name);
                        }
                        Some(*built)
                    }
                    Streaming::Invalid(read) => {
                        for (s, found) in read {
                            deferred.remove(&s);
                            stager.reports[s] = Some(found);
                        }
                        return Err(Failure::Sources);
                    }
                    Streaming::SourceError(s, e) => return Err(Failure::Source(s, e)),
                    Streaming::Restage => {
                        for (s, _) in &streamed {
                            deferred.remove(s);
                            if let Err(e) = stager.stage(*s, progress, &mut rejects, &mut inputs).await {
                                return Err(Failure::Source(*s, e));
                            }
                        }
                        if stager.violations() > 0 {
                            return Err(Failure::Sources);
                        }
                        None
                    }
                }
            };
            let built = match built {
                Some(b) => b,
                None => {
                    let plan = plan_table(&cx).await?;
                    run_table(&cx, plan, &mut report, &mut rejects).await?
                }
            };
            let TableBuilt { rows, keys, split_files, policy, table_schema, target_schema } = built;
            for (cols, set) in keys {
                key_sets.insert((t.name.clone(), cols), set);
            }
            progress.finish();
            tracing::info!("table {}: built in {:.2} s", t.name, started.elapsed().as_secs_f64());
            let mut parquet: Vec<String> = Vec::new();
            let mut splits = Vec::new();
            for (split, files) in &split_files {
                let pq: Vec<String> = files.iter().filter(|f| f.format == "parquet").map(|f| f.path.clone()).collect();
                let rows = files.iter().filter(|f| f.format == "parquet").map(|f| f.rows).sum();
                splits.push(release::SplitEntry { name: split.clone(), rows, files: pq.clone() });
                parquet.extend(pq);
                for f in files {
                    data_files.push((t.name.clone(), f.clone()));
                }
            }
            // later tables read this one from what was written
            let paths: Vec<PathBuf> = parquet.iter().map(|p| root.join(p)).collect();
            let order = crate::query::declared_order(&table_schema, &target_schema);
            crate::query::register_parquet(&ctx, &t.name, &paths, target_schema.clone(), &order).await?;
            table_entries.insert(
                t.name.clone(),
                TableEntry {
                    name: t.name.clone(),
                    rows,
                    rejected_rows: 0,
                    duplicates_dropped: report.duplicates_dropped.get(&t.name).map(|t| t.count).unwrap_or(0),
                    on_duplicate_key: serde_json::to_value(policy)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                    schema: table_schema.clone(),
                    arrow_schema: target_schema
                        .fields()
                        .iter()
                        .map(|f| ArrowField { name: f.name().clone(), data_type: type_name(f.data_type()) })
                        .collect(),
                    files: parquet,
                    splits,
                    split_column: t.split_column.clone(),
                },
            );
        }
        Ok(())
    }
    .await;
    if let Err(e) = tables {
        return Err(stager.fail(e, &mut deferred, progress, &mut rejects, &mut inputs).await);
    }
    let mut report = {
        let mut all = stager.sources_report();
        all.absorb(report);
        all
    };
    report.check()?;
    let reject_counts = rejects.finish()?;
    for (name, n) in &reject_counts {
        let dropped = report.duplicates_dropped.get(name).map(|t| t.count).unwrap_or(0);
        if let Some(t) = table_entries.get_mut(name) {
            t.rejected_rows = n - dropped;
        }
        report.rejected_rows.insert(name.clone(), *n);
    }
    // the card's sections may read sources and views, whose staged rows are in the work
    // folder: they run before it goes
    let sections = crate::card::run_sections(&ctx, spec).await?;
    // (absent when every source was streamed and no table needed a sort)
    if work.exists() {
        std::fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    }

    // hashes
    progress.start("hashing", Unit::None, None);
    let started = Instant::now();
    let mut digests = input_hashing.join().map_err(|_| Error::format("inputs", "the hashing thread panicked"))??;
    // inputs of sources read while the tables were built and not read to their end
    let late: Vec<PathBuf> = inputs
        .values()
        .map(|(p, _)| p)
        .filter(|p| read_digests.get(p).is_none() && !digests.contains_key(*p))
        .cloned()
        .collect();
    digests.extend(hash_by_path(late)?);
    let inputs_out: Vec<InputEntry> = inputs
        .iter()
        .map(|(rel, (path, sources))| {
            let d = read_digests.get(path).or_else(|| digests.get(path).cloned()).expect("one digest per input");
            InputEntry {
                path: rel.clone(),
                bytes: d.bytes,
                sha256: d.sha256,
                sources: sources.iter().cloned().collect(),
            }
        })
        .collect();
    unchanged_while_read(&inputs, &stamps, &inputs_out)?;
    input_warnings(spec, &inputs_out, &mut report);
    let mut files: Vec<FileEntry> = data_files
        .into_iter()
        .map(|(table, f)| FileEntry {
            path: f.path,
            bytes: f.digest.bytes,
            sha256: f.digest.sha256,
            kind: f.format.to_string(),
            table: Some(table),
            rows: Some(f.rows),
        })
        .collect();
    let mut to_hash: Vec<(String, String, Option<String>, Option<u64>)> = Vec::new();
    for (name, n) in &reject_counts {
        to_hash.push((format!("rejects/{name}.jsonl"), "rejects".into(), Some(name.clone()), Some(*n)));
    }
    let digests = crate::hash::sha256_files(&to_hash.iter().map(|(p, ..)| root.join(p)).collect::<Vec<_>>())?;
    for ((path, kind, table, rows), d) in to_hash.into_iter().zip(digests) {
        files.push(FileEntry { path, bytes: d.bytes, sha256: d.sha256, kind, table, rows });
    }
    let (def_files, pipeline_sha256) = crate::cache::definition_digest(spec)?;
    progress.finish();
    tracing::info!("inputs and files hashed in {:.2} s", started.elapsed().as_secs_f64());

    let mut manifest = Manifest {
        manifest_version: release::MANIFEST_VERSION,
        name: spec.def.name.clone(),
        version: version.clone(),
        runpack_version: env!("CARGO_PKG_VERSION").to_string(),
        created_at: created_at(opts),
        pipeline: PipelineInfo { sha256: pipeline_sha256, files: def_files },
        build: build_settings(spec, opts),
        inputs: inputs_out,
        tables: order.iter().map(|&i| table_entries.remove(&spec.def.tables[i].name).expect("built")).collect(),
        files,
        report: ReportSummary {
            warnings: report.warnings.len() as u64,
            nonfinite_values: report.nonfinite.iter().map(|(k, v)| (k.clone(), v.count)).collect(),
            coerced_values: report.coercions.iter().map(|(k, v)| (k.clone(), v.count)).collect(),
            rejected_rows: report.rejected_rows.clone(),
            duplicates_dropped: report.duplicates_dropped.iter().map(|(k, v)| (k.clone(), v.count)).collect(),
        },
    };
    // keep the pipeline's table order in the manifest
    let pos = |n: &str| spec.def.tables.iter().position(|t| t.name == n).unwrap_or(usize::MAX);
    manifest.tables.sort_by_key(|t| pos(&t.name));
    manifest.files.sort_by(|a, b| a.path.cmp(&b.path));

    // the tables as a Frictionless data package, over the JSON Lines copies
    let package =
        release::datapackage(&manifest, spec.def.card.pretty_name.as_deref(), spec.def.card.license.as_deref());
    write_listed(&root, &mut manifest, "datapackage.json", "datapackage", &package)?;

    // card
    let card = crate::card::render(spec, &manifest, &report, &sections, extra_metadata.as_ref(), &root)?;
    write_listed(&root, &mut manifest, "README.md", "card", &card)?;
    let mjson = manifest.to_json();
    let mpath = root.join("manifest.json");
    std::fs::write(&mpath, &mjson).map_err(|e| Error::io(&mpath, e))?;
    let mut sums: Vec<(String, String)> = manifest.files.iter().map(|f| (f.path.clone(), f.sha256.clone())).collect();
    sums.push(("manifest.json".into(), crate::hash::sha256_bytes(mjson.as_bytes())));
    let spath = root.join("SHA256SUMS");
    std::fs::write(&spath, release::sha256sums(&sums)).map_err(|e| Error::io(&spath, e))?;
    drop(ctx);
    let release_dir = staging.commit(opts.force)?;
    for (rel, (path, _)) in &inputs {
        if let (Some(i), Some(stamp)) = (manifest.inputs.iter().find(|i| &i.path == rel), stamps.get(path)) {
            input_cache.record(path, *stamp, &i.sha256);
        }
    }
    // the cache only saves work; a build that cannot write it is still a good build
    if let Err(e) = input_cache.save(&cache_path) {
        tracing::warn!("input cache not saved: {e}");
    }
    Ok(BuildOutcome { release_dir, manifest, report, unchanged: false })
}

/// SHA-256 of each of `paths` (on both cores), by path.
fn hash_by_path(paths: Vec<PathBuf>) -> Result<BTreeMap<PathBuf, crate::hash::FileDigest>> {
    let digests = crate::hash::sha256_files(&paths)?;
    Ok(paths.into_iter().zip(digests).collect())
}

/// Stages sources: reads one into an Arrow IPC file and registers it for the tables' SQL; keeps
/// what each source's read found, staged or streamed.
struct Stager<'a> {
    ctx: &'a datafusion::prelude::SessionContext,
    spec: &'a PipelineSpec,
    work: &'a Path,
    opts: &'a IngestOptions,
    orders: &'a [Vec<String>],
    max_errors: usize,
    /// What reading each source found, by source index (`None`: not read yet).
    reports: Vec<Option<BuildReport>>,
}

impl Stager<'_> {
    /// Violations the sources read so far found.
    fn violations(&self) -> usize {
        self.reports.iter().flatten().map(|r| r.violations_total).sum()
    }

    /// What the sources read so far found, in source order (as if read one after the other).
    fn sources_report(&self) -> BuildReport {
        let mut all = BuildReport::new(self.max_errors);
        for r in self.reports.iter().flatten() {
            all.absorb(r.clone());
        }
        all
    }

    /// The error a build that stopped on `failure` gives: the same as if every source had been
    /// read, in order, before any table. A source's error wins over the errors of the sources
    /// after it and over every violation; the sources' violations win over a table's error.
    async fn fail(
        &mut self,
        failure: Failure,
        deferred: &mut BTreeMap<usize, (usize, SchemaRef)>,
        progress: &dyn Progress,
        rejects: &mut Rejects,
        inputs: &mut BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    ) -> Error {
        // the sources not read yet that come first
        let before = match &failure {
            Failure::Source(i, _) => *i,
            _ => usize::MAX,
        };
        let rest: Vec<usize> = deferred.keys().copied().filter(|&s| s < before).collect();
        for s in rest {
            deferred.remove(&s);
            if let Err(e) = self.stage(s, progress, rejects, inputs).await {
                return e;
            }
        }
        match failure {
            Failure::Source(_, e) => e,
            Failure::Table(e) if self.violations() == 0 => e,
            _ => self.sources_report().to_error(),
        }
    }

    /// Reads source `i`, records its files in `inputs` (relative path → absolute path and the
    /// sources that read it) and registers it under its name.
    async fn stage(
        &mut self,
        i: usize,
        progress: &dyn Progress,
        rejects: &mut Rejects,
        inputs: &mut BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    ) -> Result<()> {
        let src = &self.spec.def.sources[i];
        progress.start(&format!("reading source {}", src.name), Unit::None, None);
        let started = Instant::now();
        let mut report = BuildReport::new(self.max_errors);
        let ing = ingest::run(self.spec, i, self.work, self.opts, self.orders, &mut report, rejects);
        self.reports[i] = Some(report);
        let ing = ing?;
        progress.finish();
        tracing::info!("source {}: read in {:.2} s", src.name, started.elapsed().as_secs_f64());
        record_inputs(inputs, &ing.inputs, &src.name);
        let sort_order = ing.sorted_by.iter().map(|cols| crate::query::sort_exprs(cols)).collect();
        let listing = datafusion::datasource::listing::ListingOptions::new(Arc::new(
            datafusion::datasource::file_format::arrow::ArrowFormat,
        ))
        .with_file_extension(".arrow")
        .with_file_sort_order(sort_order);
        let _ = self.ctx.deregister_table(ing.name.as_str());
        self.ctx
            .register_listing_table(
                ing.name.as_str(),
                ing.ipc_file.to_string_lossy().as_ref(),
                listing,
                Some(ing.schema.clone()),
                None,
            )
            .await
            .map_err(|e| Error::sql(format!("source {}", ing.name), e))
    }
}

/// Warns (`empty-input`) of each source that read empty files, and (`identical-inputs`) of
/// each source that read two or more non-empty files with the
/// same bytes (the same SHA-256): a folder linked or copied under a second name is read twice,
/// and its rows come twice, which the source's path pattern cannot tell. `wandb` sources are
/// left out: their run folders hold files that are alike by design (`latest-run/`, logs,
/// `requirements.txt`), and the reader itself says which files it reads.
fn input_warnings(spec: &PipelineSpec, inputs: &[InputEntry], report: &mut BuildReport) {
    let wandb: BTreeSet<&str> =
        spec.def.sources.iter().filter(|s| s.format == crate::spec::Format::Wandb).map(|s| s.name.as_str()).collect();
    let mut seen: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for i in inputs.iter().filter(|i| i.bytes > 0) {
        for s in i.sources.iter().filter(|s| !wandb.contains(s.as_str())) {
            seen.entry((s.as_str(), i.sha256.as_str())).or_default().push(i.path.as_str());
        }
    }
    // an empty file holds no record: an export that failed, or a file still to be written
    let mut empty: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for i in inputs.iter().filter(|i| i.bytes == 0) {
        for s in i.sources.iter().filter(|s| !wandb.contains(s.as_str())) {
            empty.entry(s.as_str()).or_default().push(i.path.as_str());
        }
    }
    for (source, paths) in empty {
        let more = if paths.len() > 5 { format!(" and {} more", paths.len() - 5) } else { String::new() };
        report.warn(
            source,
            "empty-input",
            None,
            format!(
                "source {source} read {} empty file{} (0 bytes, no record): {}{more}",
                paths.len(),
                if paths.len() == 1 { "" } else { "s" },
                paths.iter().take(5).copied().collect::<Vec<_>>().join(", "),
            ),
        );
    }
    for ((source, sha256), paths) in seen.into_iter().filter(|(_, p)| p.len() > 1) {
        let bytes = inputs.iter().find(|i| i.path == paths[0]).map_or(0, |i| i.bytes);
        report.warn(
            source,
            "identical-inputs",
            None,
            format!(
                "source {source} read {} files with the same bytes ({} bytes, sha256 {}…): {}; the rows of each \
                 are read (a folder linked or copied under another name is read once per name)",
                paths.len(),
                crate::hash::group_digits(bytes),
                &sha256[..12],
                paths.join(", "),
            ),
        );
    }
}

/// Checks that every input the build read has the stamp it had before the build began. One
/// whose size and modification time are unchanged but not its other metadata (a `chmod`, a
/// hard link, a `touch` with the same time) is hashed again and compared with the digest the
/// build recorded (`read`, the manifest's inputs).
///
/// Errors: [`Error::Refused`] naming the first input that changed, appeared or went away
/// while the build ran (a log still being written, a file replaced), [`Error::Io`] when one
/// cannot be hashed again.
fn unchanged_while_read(
    inputs: &BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    before: &BTreeMap<PathBuf, crate::cache::FileStamp>,
    read: &[InputEntry],
) -> Result<()> {
    for (rel, (path, _)) in inputs {
        let now = crate::cache::FileStamp::of(path).ok();
        let what = match (before.get(path), now) {
            (Some(b), Some(n)) if *b == n => continue,
            (Some(b), Some(n)) if b.bytes != n.bytes => {
                format!(
                    "its size went from {} to {} bytes",
                    crate::hash::group_digits(b.bytes),
                    crate::hash::group_digits(n.bytes)
                )
            }
            (Some(b), Some(n)) if b.mtime_ns == n.mtime_ns => {
                let used = read.iter().find(|i| &i.path == rel).map(|i| i.sha256.as_str());
                if used == Some(crate::hash::sha256_file(path)?.sha256.as_str()) {
                    continue;
                }
                "it was rewritten or replaced".to_string()
            }
            (Some(_), Some(_)) => "it was rewritten or replaced".to_string(),
            (Some(_), None) => "it went away".to_string(),
            (None, _) => "it appeared after the build began".to_string(),
        };
        return Err(Error::Refused(format!(
            "{rel}: this input changed while the build read it ({what}), so the release would not hold \
             what its manifest says; build again once it is complete (a log still being written can be \
             copied first)"
        )));
    }
    Ok(())
}

/// Records that source `source` read `files`, in the build's inputs (relative path → absolute
/// path and the sources that read it).
fn record_inputs(
    inputs: &mut BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    files: &[ingest::files::InputFile],
    source: &str,
) {
    for f in files {
        inputs.entry(f.rel.clone()).or_insert_with(|| (f.path.clone(), BTreeSet::new())).1.insert(source.to_string());
    }
}

/// Why the tables of a build stopped.
enum Failure {
    /// Reading source `.0` failed.
    Source(usize, Error),
    /// A source broke the rules (its violations are in the [`Stager`]'s reports).
    Sources,
    /// Building a table failed.
    Table(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Table(e)
    }
}

/// The table names a SQL text reads (tables, views or sources; each once).
fn sql_references(sql: &str, context: impl Fn() -> String) -> Result<Vec<String>> {
    let statements = crate::query::parse_statements(sql).map_err(|e| Error::sql_parse(context(), e, sql))?;
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
fn streamable_sources(spec: &PipelineSpec) -> Result<BTreeMap<usize, (usize, SchemaRef)>> {
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

/// What building a table needs from the build around it.
struct TableCx<'a> {
    ctx: &'a datafusion::prelude::SessionContext,
    spec: &'a PipelineSpec,
    index: usize,
    opts: &'a BuildOptions,
    key_sets: &'a BTreeMap<(String, Vec<String>), KeySet>,
    referenced: &'a BTreeMap<String, Vec<Vec<String>>>,
    root: &'a Path,
    work: &'a Path,
    progress: &'a dyn Progress,
}

/// A table's query planned, with the schemas its rows are checked against.
struct TablePlan {
    table_schema: TableSchema,
    target_schema: SchemaRef,
    result_schema: SchemaRef,
    sort_cols: Vec<String>,
    policy: DuplicatePolicy,
    plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    /// The plan yields its rows in key order already.
    in_order: bool,
}

/// A table written.
struct TableBuilt {
    rows: u64,
    keys: Vec<(Vec<String>, KeySet)>,
    split_files: Vec<(String, Vec<crate::write::WrittenFile>)>,
    policy: DuplicatePolicy,
    table_schema: TableSchema,
    target_schema: SchemaRef,
}

/// Plans table `cx.index`'s query over what the session holds now.
async fn plan_table(cx: &TableCx<'_>) -> Result<TablePlan> {
    let (spec, i) = (cx.spec, cx.index);
    let t = &spec.def.tables[i];
    let sql = spec.table_sql(i)?;
    let df = cx
        .ctx
        .sql_with_options(&sql, crate::query::read_only(false))
        .await
        .map_err(|e| Error::sql(format!("table {} ({})", t.name, sql_origin(spec, i)), e))?;
    let result_schema: Schema = df.schema().as_arrow().clone();
    let table_schema = match &spec.table_schemas[i] {
        Some(s) => s.clone(),
        None => inferred_schema(&t.name, &result_schema)?,
    };
    let target_schema = table_schema.arrow_schema();
    let schema_file = t.schema.as_ref().map(|p| spec.dir.join(p).display().to_string());
    check_columns(&t.name, schema_file.as_deref(), &result_schema, &table_schema, &target_schema)?;
    let sort_cols = release::row_order(&table_schema, |c| result_schema.field_with_name(c).is_ok());
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
    })
}

/// Runs a planned table query: conforms, sorts (unless the rows come in key order),
/// validates and writes its rows. Violations and warnings go to `report`, set-aside rows to
/// `rejects`.
async fn run_table(
    cx: &TableCx<'_>,
    tp: TablePlan,
    report: &mut BuildReport,
    rejects: &mut Rejects,
) -> Result<TableBuilt> {
    let t = &cx.spec.def.tables[cx.index];
    let opts = cx.opts;
    let TablePlan { table_schema, target_schema, result_schema, sort_cols, policy, plan, in_order } = tp;
    let columns = crate::write::leaf_columns(&target_schema);
    if columns > crate::write::VIEWER_MAX_COLUMNS {
        report.warn(
            &t.name,
            "wide-table",
            None,
            format!(
                "table {} has {columns} columns, above the dataset viewer's limit of {}; use a long layout \
                 (one row per key and value, as the tinker-metrics format does) or a map column",
                t.name,
                crate::write::VIEWER_MAX_COLUMNS
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
    })?;
    let mut writer =
        SplitWriters::new(&t.name, t.split_column.as_deref(), &t.splits, target_schema.clone(), cx.root, opts.write)?;
    if let Some(ci) = writer.column {
        validator = validator.with_split(ci, t.splits.clone());
    }
    // runpack sorts the query's rows itself, in bounded memory, stably (equal keys keep
    // the query's order, then file and line order)
    let keys: Vec<usize> = sort_cols.iter().map(|c| result_schema.index_of(c).expect("checked")).collect();
    let mut sorter = crate::sort::ExternalSort::new(
        result_schema.clone(),
        keys,
        SORT_BUDGET_BYTES,
        cx.work.join(format!("sort-{}", t.name)),
    )?;
    let started = Instant::now();
    let task = cx.ctx.task_ctx();
    let mut stream = datafusion::physical_plan::execute_stream(plan, task)
        .map_err(|e| Error::sql(format!("table {}", t.name), e))?;
    let mut sink = |b: RecordBatch| -> Result<()> {
        let (mut conformed, problems) = conform_batch(&t.name, &b, &target_schema)?;
        if !problems.is_empty() {
            let sources = crate::validate::SourceColumn::find(&b);
            let mut bad_rows: BTreeMap<usize, Vec<String>> = BTreeMap::new();
            // a row with a value that does not fit goes no further in either mode: its null
            // would only add a false `required` (or key) violation to the one reported here
            for (row, column, message) in problems {
                match opts.on_invalid {
                    OnInvalid::Fail => {
                        bad_rows.entry(row).or_default();
                        report.violation(crate::report::Violation {
                            scope: crate::report::Scope::Table,
                            table: t.name.clone(),
                            source: sources.at(row),
                            path: column,
                            rule: "type".into(),
                            key: None,
                            message,
                        })
                    }
                    OnInvalid::Reject => bad_rows.entry(row).or_default().push(format!("{column}: {message}")),
                }
            }
            // one reject per row, with every reason
            for (&row, reasons) in bad_rows.iter().filter(|(_, reasons)| !reasons.is_empty()) {
                rejects.add(
                    &t.name,
                    sources.reject_at(row).as_ref(),
                    reasons,
                    crate::rejects::RejectBody::Record(crate::validate::row_json(&b, row)),
                )?;
            }
            if !bad_rows.is_empty() {
                let keep: arrow::array::BooleanArray =
                    (0..conformed.num_rows()).map(|r| Some(!bad_rows.contains_key(&r))).collect();
                conformed =
                    arrow::compute::filter_record_batch(&conformed, &keep).map_err(|e| Error::format(&t.name, e))?;
            }
        }
        if let Some(out) = validator.push(conformed, report, rejects)? {
            writer.write(&out, report)?;
        }
        Ok(())
    };
    while let Some(b) = stream.next().await {
        let b = b.map_err(|e| Error::sql(format!("table {}", t.name), e))?;
        cx.progress.advance(b.num_rows() as u64);
        if in_order { sink(b)? } else { sorter.push(b)? }
    }
    drop(stream);
    if in_order {
        tracing::info!("table {}: query in key order, not sorted", t.name);
    } else {
        tracing::info!("table {}: query and sort input in {:.2} s", t.name, started.elapsed().as_secs_f64());
        sorter.finish(&mut sink)?;
    }
    if let Some(out) = validator.finish(report, rejects)? {
        writer.write(&out, report)?;
    }
    let rows = validator.rows_kept;
    let keys = validator.take_keys();
    drop(validator);
    let split_files = writer.finish()?;
    Ok(TableBuilt { rows, keys: keys.into_iter().collect(), split_files, policy, table_schema, target_schema })
}

/// How building a table over streamed sources ended.
enum Streaming {
    /// The table is written; each streamed source's index, the files it read and what
    /// reading it found.
    Built(Box<TableBuilt>, Vec<(usize, Vec<ingest::files::InputFile>, BuildReport)>),
    /// A streamed source broke the rules: each source's index and what reading it found.
    Invalid(Vec<(usize, BuildReport)>),
    /// Reading streamed source `.0` failed.
    SourceError(usize, Error),
    /// The sources must be staged and the table built from them: its query reads a source
    /// more than once, or the rows broke the key order the plan counted on. Nothing of the
    /// attempt is left in the report, the rejects or the release folder.
    Restage,
}

/// Builds table `cx.index` while its `streamed` sources (index, schema) are read into it.
async fn build_streamed(
    cx: &TableCx<'_>,
    spec: &Arc<PipelineSpec>,
    streamed: &[(usize, SchemaRef)],
    ingest_opts: &IngestOptions,
    report: &mut BuildReport,
    rejects: &mut Rejects,
) -> Result<Streaming> {
    use datafusion::catalog::streaming::StreamingTable;
    let t = &spec.def.tables[cx.index];
    let name = |s: usize| spec.def.sources[s].name.as_str();
    // the table's key order, declared for each source that has its columns, to be checked
    // as the rows go by
    let checks: Vec<Option<crate::sort::OrderCheck>> = streamed
        .iter()
        .map(|(_, schema)| {
            let table_schema = spec.table_schemas[cx.index].as_ref()?;
            let cols = release::row_order(table_schema, |c| schema.index_of(c).is_ok());
            let check = crate::sort::OrderCheck::new(schema, cols);
            check.in_order().then_some(check)
        })
        .collect();
    let feeds: Vec<_> = streamed.iter().map(|(_, schema)| crate::feed::Feed::new(schema.clone())).collect();
    let register = |declare: bool| -> Result<()> {
        for (((s, schema), (feed, _)), check) in streamed.iter().zip(&feeds).zip(&checks) {
            let mut table = StreamingTable::try_new(schema.clone(), vec![feed.clone()])
                .map_err(|e| Error::sql(format!("source {}", name(*s)), e))?;
            if let (true, Some(c)) = (declare, check) {
                table = table.with_sort_order(crate::query::sort_exprs(c.columns()));
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
    if feeds.iter().any(|(feed, _)| !feed.read_once_by(&tp.plan)) {
        tracing::info!("table {}: reads a source more than once; staging it", t.name);
        return Ok(Streaming::Restage);
    }
    let mut running = Vec::new();
    let mut opened = Vec::new();
    for (((s, _), (feed, tx)), check) in streamed.iter().zip(feeds).zip(checks) {
        opened.push(feed);
        running.push(crate::feed::start(
            spec.clone(),
            *s,
            tx,
            if speculative { check } else { None },
            ingest_opts.clone(),
            cx.opts.max_errors,
            cx.root.join("rejects"),
        ));
        tracing::info!("source {}: streamed into table {}", name(*s), t.name);
    }
    let mut table_report = BuildReport::new(cx.opts.max_errors);
    let result = run_table(cx, tp, &mut table_report, rejects).await;
    // a query that failed before it ran, or never read a source, must not keep its reader waiting
    for feed in &opened {
        feed.close();
    }
    let readings: Vec<crate::feed::Reading> = running.into_iter().map(|r| r.join()).collect();
    for (s, _) in streamed {
        let _ = cx.ctx.deregister_table(name(*s));
    }
    let reread = opened.iter().any(|f| f.reread());
    if reread || readings.iter().any(|r| r.disordered) {
        if reread {
            tracing::info!("table {}: reads a source more than once; staging it", t.name);
        } else {
            tracing::info!("table {}: a streamed source is not in key order; staging it", t.name);
        }
        if let Ok(built) = &result {
            for (_, files) in &built.split_files {
                for f in files {
                    let path = cx.root.join(&f.path);
                    std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                }
            }
        }
        crate::write::remove_unfinished(cx.root)?;
        rejects.discard(&t.name)?;
        for r in readings {
            r.rejects.abandon()?;
        }
        return Ok(Streaming::Restage);
    }
    let mut read = Vec::new();
    let mut adopted = Vec::new();
    for r in readings {
        let files = match r.result {
            Ok(f) => f,
            Err(e) => return Ok(Streaming::SourceError(r.source, e)),
        };
        adopted.push(r.rejects);
        read.push((r.source, files.inputs, r.report));
    }
    if read.iter().any(|(_, _, found)| found.violations_total > 0) {
        return Ok(Streaming::Invalid(read.into_iter().map(|(s, _, found)| (s, found)).collect()));
    }
    let built = result?;
    for r in adopted {
        rejects.adopt(r);
    }
    report.absorb(table_report);
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
}

impl SplitWriters {
    fn new(
        table: &str,
        column: Option<&str>,
        allowed: &[String],
        schema: SchemaRef,
        root: &Path,
        opts: WriteOptions,
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
            let w = TableWriter::new(&name, self.schema.clone(), &self.root, self.opts)?;
            self.writers.insert(split.to_string(), w);
        }
        Ok(self.writers.get_mut(split).expect("inserted"))
    }

    fn write(&mut self, b: &RecordBatch, report: &mut BuildReport) -> Result<()> {
        let Some(ci) = self.column else { return self.writer("train")?.write(b) };
        let col = arrow::compute::cast(b.column(ci), &DataType::Utf8).map_err(|e| Error::format(&self.table, e))?;
        let col = col.as_any().downcast_ref::<arrow::array::StringArray>().expect("utf8");
        let sources = crate::validate::SourceColumn::find(b);
        let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for r in 0..b.num_rows() {
            let name = if arrow::array::Array::is_valid(col, r) { col.value(r).to_string() } else { String::new() };
            // the validator has checked these rows already (Validator::with_split): a row with
            // a bad split name was rejected there, or reported there and fails the build; it is
            // kept out of the files here, never written under a name it cannot have
            match crate::validate::split_problem(Some(&name), &self.allowed) {
                Some(_) if report.violations_total > 0 => {}
                Some(message) => report.violation(crate::report::Violation {
                    scope: crate::report::Scope::Table,
                    table: self.table.clone(),
                    source: sources.at(r),
                    path: self.schema.field(ci).name().clone(),
                    rule: "split".into(),
                    key: None,
                    message,
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

    fn finish(self) -> Result<Vec<(String, Vec<crate::write::WrittenFile>)>> {
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
fn origin(spec: &PipelineSpec, sql: Option<&str>, section: &str, name: &str) -> String {
    match sql {
        Some(p) => spec.dir.join(p).display().to_string(),
        None => match spec.inline_query_line(section, name) {
            Some(line) => format!("inline query whose SQL line 1 is {}:{line}", spec.file.display()),
            None => "inline query".into(),
        },
    }
}

/// The manifest's `created_at`: `SOURCE_DATE_EPOCH` as RFC 3339 UTC, or none.
fn created_at(opts: &BuildOptions) -> Option<String> {
    opts.source_date_epoch
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

fn build_settings(spec: &PipelineSpec, opts: &BuildOptions) -> BTreeMap<String, serde_json::Value> {
    let mut m = BTreeMap::new();
    m.insert("on_invalid".into(), json!(opts.on_invalid));
    m.insert("max_shard_bytes".into(), json!(opts.write.max_shard_bytes));
    m.insert("row_group_bytes".into(), json!(opts.write.row_group_bytes));
    m.insert("row_group_rows".into(), json!(opts.write.row_group_rows));
    m.insert("zstd_level".into(), json!(opts.write.zstd_level));
    // the card counts the warnings it gives
    m.insert("large_cell_bytes".into(), json!(opts.large_cell_bytes));
    // recorded only when it overrides a table's own rule: `--on-duplicate-key error` on a
    // pipeline whose tables say nothing builds the same release as no option
    if let Some(p) = opts.on_duplicate_key
        && spec.def.tables.iter().any(|t| t.on_duplicate_key != p)
    {
        m.insert("on_duplicate_key".into(), json!(p));
    }
    m.insert("sources".into(), json!(spec.def.sources.iter().map(|s| &s.name).collect::<Vec<_>>()));
    m
}

/// Tables in an order where each comes after the tables its SQL reads.
fn table_order(spec: &PipelineSpec) -> Result<Vec<usize>> {
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
    let (order, stuck) = crate::schema::dependency_order(&deps);
    if !stuck.is_empty() {
        let stuck: Vec<&str> = stuck.iter().map(|&i| spec.def.tables[i].name.as_str()).collect();
        return Err(Error::config(
            spec.file.display().to_string(),
            format!("tables read each other in a cycle: {}", stuck.join(", ")),
        ));
    }
    Ok(order)
}

/// The schema a table without a declared one gets from its query's result: each column of
/// its canonical type, nullable (also what `init` writes as the table's declared schema).
///
/// Errors: [`Error::Config`] naming the table and column for a name or type a release cannot hold.
pub fn inferred_schema(table: &str, result: &Schema) -> Result<TableSchema> {
    let mut fields = Vec::new();
    for f in result.fields() {
        crate::schema::column_name(f.name()).map_err(|m| Error::config(format!("table {table}"), m))?;
        let dt = crate::schema::canonical(f.data_type())
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
            let fix = if nested && matches!(f.data_type(), DataType::Utf8) {
                "SQL cannot cast a struct or a list to JSON text: declare the field as an `object` with `fields` \
                 (a struct) or an `array` with `items` (a list) to keep it as it is"
            } else {
                "CAST it in the SQL"
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

fn castable(from: &DataType, to: &DataType) -> bool {
    if from == to || *from == DataType::Null {
        return true;
    }
    let Ok(c) = crate::schema::canonical(from) else { return false };
    if &c == to {
        return true;
    }
    match (&c, to) {
        (DataType::Int64, DataType::Float64 | DataType::UInt64)
        | (DataType::UInt64, DataType::Float64 | DataType::Int64)
        | (DataType::Float64, DataType::Int64 | DataType::UInt64) => true,
        (DataType::List(a), DataType::List(b)) => castable(a.data_type(), b.data_type()),
        (DataType::Struct(a), DataType::Struct(b)) => a
            .iter()
            .all(|f| b.iter().find(|g| g.name() == f.name()).is_some_and(|g| castable(f.data_type(), g.data_type()))),
        _ => false,
    }
}

/// A value of a query's result that does not fit the table: row, column, message.
type CellProblem = (usize, String, String);

/// Conforms a query batch to the table's schema. Values that cannot be stored as the declared
/// type without change (a fraction into an integer column, an integer out of range) become
/// problems `(row, column, message)` and null values; the caller reports or rejects their rows.
fn conform_batch(table: &str, b: &RecordBatch, target: &SchemaRef) -> Result<(RecordBatch, Vec<CellProblem>)> {
    let mut cols = Vec::with_capacity(target.fields().len());
    let mut problems = Vec::new();
    for f in target.fields() {
        let c = b.column_by_name(f.name()).expect("checked");
        let from = c.data_type().clone();
        match crate::schema::conform(c, f.data_type()) {
            Ok(a) => cols.push(a),
            Err(_)
                if from.is_numeric()
                    || from.is_temporal()
                    || matches!(from, DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_)) =>
            {
                // value by value: keep what fits exactly, name what does not
                let (out, lost) = crate::schema::conform_each(c, f.data_type())
                    .map_err(|e| Error::format(format!("table {table}, column `{}`", f.name()), e))?;
                for r in (0..c.len()).filter(|&r| lost[r]) {
                    let shown = arrow::util::display::array_value_to_string(c, r).unwrap_or_default();
                    problems.push((
                        r,
                        f.name().clone(),
                        format!("value {shown} cannot be stored as {} without changing it", type_name(f.data_type())),
                    ));
                }
                cols.push(out);
            }
            Err(m) => return Err(Error::format(format!("table {table}, column `{}`", f.name()), m)),
        }
    }
    let cols = cols.into_iter().map(|c| crate::sort::positive_nan(&c)).collect();
    let batch = RecordBatch::try_new(target.clone(), cols).map_err(|e| Error::format(format!("table {table}"), e))?;
    Ok((batch, problems))
}

/// Where the release of `spec` at `version` goes.
pub fn release_path(releases_dir: &Path, spec: &PipelineSpec, version: &str) -> PathBuf {
    releases_dir.join(&spec.def.name).join(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_changed_while_the_build_read_it_is_refused() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        std::fs::write(&a, "{\"step\":1}\n").unwrap();
        std::fs::write(&b, "{\"step\":1}\n").unwrap();
        let stamp = |p: &Path| crate::cache::FileStamp::of(p).unwrap();
        let before: BTreeMap<PathBuf, _> = [(a.clone(), stamp(&a)), (b.clone(), stamp(&b))].into();
        let inputs: BTreeMap<String, (PathBuf, BTreeSet<String>)> = [
            ("a.jsonl".to_string(), (a.clone(), BTreeSet::new())),
            ("b.jsonl".to_string(), (b.clone(), BTreeSet::new())),
        ]
        .into();
        unchanged_while_read(&inputs, &before, &[]).unwrap();
        // only its metadata changed (its status change time): hashed again, the same bytes
        let mut perms = std::fs::metadata(&a).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&a, perms).unwrap();
        let read = |rel: &str, text: &[u8]| InputEntry {
            path: rel.into(),
            bytes: text.len() as u64,
            sha256: crate::hash::sha256_bytes(text),
            sources: vec![],
        };
        let digests = [read("a.jsonl", b"{\"step\":1}\n"), read("b.jsonl", b"{\"step\":1}\n")];
        unchanged_while_read(&inputs, &before, &digests).unwrap();
        let mut perms = std::fs::metadata(&a).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&a, perms).unwrap();
        // appended to
        std::fs::OpenOptions::new().append(true).open(&b).unwrap().write_all(b"{\"step\":2}\n").unwrap();
        let e = unchanged_while_read(&inputs, &before, &digests).unwrap_err().to_string();
        assert!(
            e.starts_with("b.jsonl: this input changed while the build read it (its size went from 11 to 22 bytes)"),
            "{e}"
        );
        // rewritten with the same size, its modification time set back
        let mtime = std::fs::metadata(&a).unwrap().modified().unwrap();
        std::fs::write(&a, "{\"step\":2}\n").unwrap();
        std::fs::File::options().write(true).open(&a).unwrap().set_modified(mtime).unwrap();
        let before: BTreeMap<PathBuf, _> = [(a.clone(), before[&a]), (b.clone(), stamp(&b))].into();
        let e = unchanged_while_read(&inputs, &before, &digests).unwrap_err().to_string();
        assert!(
            e.contains("a.jsonl: this input changed while the build read it (it was rewritten or replaced)"),
            "{e}"
        );
        // gone, or not there when the build began
        std::fs::remove_file(&a).unwrap();
        assert!(unchanged_while_read(&inputs, &before, &[]).unwrap_err().to_string().contains("(it went away)"));
        let e = unchanged_while_read(&inputs, &BTreeMap::new(), &[]).unwrap_err().to_string();
        assert!(e.contains("(it appeared after the build began)"), "{e}");
    }
}

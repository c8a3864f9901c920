//! The `build` verb: a pipeline's raw inputs → a release folder.
//!
//! In: a [`PipelineSpec`] and [`BuildOptions`]. Out: `releases/<name>/<version>/` (see
//! [`crate::stages::release`]) and a [`BuildOutcome`] with the manifest and the [`BuildReport`].
//!
//! Steps: every source is ingested into an Arrow IPC file in a hidden staging folder beside
//! the target, except a source that exactly one table reads (and no view), whose schema is
//! known before reading: that one is streamed straight into the table's query while it runs
//! (see [`crate::stages::feed`]; `--stage-sources` stages every source). Each table's SQL
//! (DataFusion) runs over the sources and the tables before it, in dependency order
//! ([`crate::stages::transform`]); its rows
//! are conformed to the declared schema (or to the canonical form of the query's types),
//! sorted by primary key (then by `_source_file`, `_source_line`; by every column when there is
//! no key), validated, and written as Parquet and JSON Lines; then hashes, the dataset card, `manifest.json` and `SHA256SUMS` are written and the staging
//! folder is renamed into place (swapped with an existing release in one step: see
//! [`crate::stages::release::Staging::commit`]). Any error leaves no release behind and an existing release
//! untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use serde_json::json;

use crate::core::error::{Error, Result};
use crate::core::options::BuildOptions;
use crate::core::progress::{Progress, Unit};
use crate::core::report::BuildReport;
use crate::core::schema::type_name;
use crate::core::spec::PipelineSpec;
use crate::stages::ingest::{self, IngestOptions};
use crate::stages::rejects::Rejects;
use crate::stages::release::{
    self, ArrowField, FileEntry, InputEntry, Manifest, PipelineInfo, ReportSummary, Staging, TableEntry,
};
use crate::stages::transform::{
    Streaming, TableBuilt, TableCx, build_streamed, origin, plan_table, run_table, streamable_sources, table_order,
    unfinished,
};
use crate::stages::validate::KeySet;

pub mod cache;
mod share;

use share::Cluster;

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
    /// The files under the pipeline's `raw/` that no source reads ([`unread_raw_files`]).
    pub unread: Vec<String>,
    /// What the build found and the pipeline already handles (a resumed W&B run's steps
    /// logged again, kept by the table's keep rule): said, not recorded in the card.
    pub notes: Vec<String>,
}

/// Takes out of `report` the warnings of a resumed W&B run's steps logged again in its later
/// session's files when every table that reads the source keeps the later session's rows
/// (`keep-last` with `record_columns`, as `runpack init` writes): the notes that say them
/// instead, each naming the table. A warning that still calls for a change stays one.
///
/// Errors: [`Error::Sql`] for a table's SQL that does not parse.
fn handled_repeats(spec: &PipelineSpec, opts: &BuildOptions, report: &mut BuildReport) -> Result<Vec<String>> {
    use crate::stages::ingest::wandb::{REPEATED_ROWS as ROWS, RESUMED_SESSIONS as RESUMED};
    if !report.warnings.iter().any(|w| w.kind == "wandb-repeated-step" && w.message.contains(RESUMED)) {
        return Ok(Vec::new());
    }
    // the tables that read each name (`None`: a view or card section)
    let readers = crate::stages::transform::readers(spec)?;
    let keeps_later = |i: usize| {
        let t = &spec.def.tables[i];
        opts.on_duplicate_key.unwrap_or(t.on_duplicate_key) == crate::core::spec::DuplicatePolicy::KeepLast
            && !t.record_columns.is_empty()
    };
    let mut notes = Vec::new();
    report.warnings.retain(|w| {
        let handled_by = match readers.get(&w.table).map(Vec::as_slice) {
            Some(r) if !r.is_empty() && r.iter().all(|i| i.is_some_and(keeps_later)) => r,
            _ => return true,
        };
        if w.kind != "wandb-repeated-step" || !w.message.contains(RESUMED) {
            return true;
        }
        let found = w.message.split(ROWS).next().unwrap_or(&w.message);
        let tables: Vec<&str> = handled_by.iter().flatten().map(|&i| spec.def.tables[i].name.as_str()).collect();
        notes.push(format!(
            "{}: {}: {found}; table {} keeps the later session's rows of each step (keep-last with record_columns)",
            w.source.as_ref().map(|s| s.file.as_str()).unwrap_or_default(),
            w.table,
            tables.join(", ")
        ));
        false
    });
    Ok(notes)
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
        sha256: crate::stages::hash::sha256_bytes(text.as_bytes()),
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
    // the build's folder in a cluster's share, removed however the build ends
    let mut share = None;
    let built = build_in(spec, opts, progress, &mut share).await;
    // a cluster's errors may quote what an object store was sent
    let built = if share.is_some() { built.map_err(crate::sql::engine::redact_error) } else { built };
    if let Some(c) = share.take()
        && let Err(e) = c.remove().await
    {
        tracing::warn!("the build's folder in the share was not removed: {e}");
    }
    built
}

/// Refuses a build whose sources match files of the pipeline's releases
/// (`<releases_dir>/<name>/`): it would read a release it wrote (a JSON Lines copy, a rejects
/// file) as input, and each build would grow the next.
///
/// Errors: [`Error::Refused`] naming the source, the first such file and the way out.
fn refuse_reading_releases(spec: &PipelineSpec, releases_dir: &Path, target: &Path) -> Result<()> {
    // before the first build: the files a release holds, where this one would be written,
    // matched by a source's path (and not left out by not_read)
    if let Some(rel) = below(&spec.dir, target) {
        let not_read: Vec<String> = spec.def.not_read.as_ref().map(|p| p.list()).unwrap_or_default();
        let left_out = crate::stages::ingest::files::not_read_matcher(&spec.dir, &not_read);
        // each table's files in the formats it is written in, its rejects, the release's own
        let mut written: Vec<String> = ["manifest.json", "README.md"].iter().map(|f| format!("{rel}/{f}")).collect();
        for t in &spec.def.tables {
            let formats = t.formats.as_ref().or(spec.def.formats.as_ref());
            written.push(format!("{rel}/data/{}.parquet", t.name));
            if formats.is_some_and(|f| f.iter().any(|x| x == "jsonl")) {
                written.push(format!("{rel}/jsonl/{}.jsonl", t.name));
            }
            written.push(format!("{rel}/rejects/{}.jsonl", t.name));
        }
        for src in &spec.def.sources {
            let patterns = src.path.list();
            let matches = crate::stages::ingest::files::not_read_matcher(&spec.dir, &patterns);
            if let Some(first) = written.iter().find(|f| matches(f) && !left_out(f)) {
                return Err(Error::Refused(format!(
                    "source {} would read the release this build writes ({first} matches its path {:?}): build \
                     into a folder outside what the sources match (--releases-dir), or add the folder to the \
                     pipeline's not_read",
                    src.name, patterns
                )));
            }
        }
    }
    // a folder not there yet holds no release
    let Ok(releases) = releases_dir.join(&spec.def.name).canonicalize() else { return Ok(()) };
    for (i, src) in spec.def.sources.iter().enumerate() {
        // only a source whose walk starts above or inside the releases (symbolic links
        // resolved) can reach them: its files are listed, the others' are not (every build,
        // an unchanged one too, passes here)
        let reaches =
            src.path.list().iter().filter_map(|p| crate::stages::ingest::files::PathPattern::new(p).ok()).any(|p| {
                spec.dir
                    .join(p.root())
                    .canonicalize()
                    .is_ok_and(|root| releases.starts_with(&root) || root.starts_with(&releases))
            });
        if !reaches {
            continue;
        }
        let files = crate::stages::ingest::files::source_files(spec, i, &src.name).unwrap_or_default();
        let inside: Vec<&str> = files
            .iter()
            .filter(|f| f.path.canonicalize().is_ok_and(|p| p.starts_with(&releases)))
            .map(|f| f.rel.as_str())
            .collect();
        if let Some(first) = inside.first() {
            return Err(Error::Refused(format!(
                "source {} matches {} file{} of the pipeline's releases, in {} ({first}{}): a build would \
                 read the releases it wrote; build into a folder outside what the sources match (--releases-dir), \
                 or add the folder to the pipeline's not_read",
                src.name,
                inside.len(),
                if inside.len() == 1 { "" } else { "s" },
                releases_dir.join(&spec.def.name).display(),
                if inside.len() > 1 { ", …" } else { "" }
            )));
        }
    }
    Ok(())
}

/// `path` relative to `dir` (`raw/releases/x/1`), when it lies below it: both made absolute,
/// the parts of `path` not there yet kept as written.
fn below(dir: &Path, path: &Path) -> Option<String> {
    let dir = dir.canonicalize().ok()?;
    let absolute = std::path::absolute(path).ok()?;
    // the deepest part that exists, with symbolic links resolved, then the rest
    let mut base = absolute.as_path();
    let mut rest = Vec::new();
    let real = loop {
        if let Ok(real) = base.canonicalize() {
            break real;
        }
        rest.push(base.file_name()?.to_os_string());
        base = base.parent()?;
    };
    let mut full = real;
    full.extend(rest.iter().rev());
    let rel = full.strip_prefix(&dir).ok()?;
    Some(rel.to_string_lossy().replace('\\', "/"))
}

/// [`build`], with the build's folder in a cluster's share kept in `share`.
///
/// One piece, on purpose: it reads top to bottom as the build's stages (sources, tables,
/// rejects, card sections, hashes, manifest, card, commit), and what they share lives across
/// all of them (the staging folder, the session, the rejects, the inputs and their stamps,
/// the input cache). Each step is a call; cut in two, the halves would pass a dozen of these
/// to each other. Until the commit at its end, a failure or a kill leaves only the staging
/// folder.
async fn build_in(
    spec: &PipelineSpec,
    opts: &BuildOptions,
    progress: &dyn Progress,
    share: &mut Option<Cluster>,
) -> Result<BuildOutcome> {
    let version = release_version(spec, opts)?;
    let target = opts.releases_dir.join(&spec.def.name).join(&version);
    // a cluster's options are checked before anything else, also when nothing is rebuilt
    let engine = Cluster::engine(opts)?;
    // checks that need no data, before anything is written
    let extra_metadata = crate::stages::card::preflight(spec)?;
    refuse_reading_releases(spec, &opts.releases_dir, &target)?;
    let cache_path = crate::verbs::build::cache::InputCache::path(&opts.releases_dir, spec);
    let mut input_cache = crate::verbs::build::cache::InputCache::load(&cache_path);
    // `force` trusts no cache and rebuilds whatever it says
    let stale = match up_to_date(spec, opts, &target, &mut input_cache, progress)? {
        UpToDate::Yes(manifest) => {
            // inputs hashed again because only their stamps changed (touched, copied) are
            // not hashed again next time
            save_input_cache(&input_cache, &cache_path);
            crate::stages::release::remove_killed_builds(&target);
            return Ok(BuildOutcome {
                release_dir: target,
                unread: unread_raw_files(spec, &manifest.inputs),
                manifest: *manifest,
                report: BuildReport::new(0),
                unchanged: true,
                notes: Vec::new(),
            });
        }
        UpToDate::No(why) => why,
    };
    let staging = Staging::new(&target, opts.force).map_err(|e| {
        // a build refused writes nothing, but clears what killed builds left
        if matches!(e, Error::Refused(_)) {
            crate::stages::release::remove_killed_builds(&target);
        }
        match (e, &stale) {
            (Error::Refused(m), Some(why)) => Error::Refused(format!("{m} (what changed: {why})")),
            (e, _) => e,
        }
    })?;
    // each input's stamp before anything reads it: one that differs after the build was
    // changed while it was read, and the release would not hold what its manifest says
    let stamps = crate::verbs::build::cache::input_stamps(spec);
    let root = staging.path().to_path_buf();
    // on a cluster, what its executors read (staged sources, written tables) goes in a
    // folder of the share of its own, removed when the build ends
    let cluster = match engine {
        Some(e) => {
            *share = Some(Cluster::new(e).await?);
            share.as_ref()
        }
        None => None,
    };
    let work = match &cluster {
        Some(c) => c.work(&root.join(".work")),
        None => root.join(".work"),
    };
    let mut report = BuildReport::new(opts.max_errors);
    let mut rejects = Rejects::new(root.join("rejects"));
    let ctx = build_session(cluster, opts.source_date_epoch)?;

    // sources
    let read_digests = crate::stages::hash::ReadDigests::default();
    let ingest_opts = IngestOptions {
        on_invalid: opts.on_invalid,
        large_cell_bytes: opts.large_cell_bytes,
        read_digests: Some(read_digests.clone()),
        max_errors: opts.max_errors,
    };
    // the orders the tables are sorted in: a source found to be in one already lets a table
    // that reads it in that order skip the sort
    let orders: Vec<Vec<String>> =
        spec.table_schemas.iter().flatten().map(|s| crate::core::schema::row_order(s, |_| true)).collect();
    // sources that one table reads are streamed into it when that table is built
    // (a cluster reads staged sources only: a stream lives in this process)
    let mut deferred: BTreeMap<usize, (usize, SchemaRef)> =
        if opts.stage_sources || cluster.is_some() { BTreeMap::new() } else { streamable_sources(spec)? };
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
        source_bytes: source_bytes(spec),
        parquet: cluster.is_some(),
        cluster,
    };
    let failed = |e: Error, inputs: &BTreeMap<String, (PathBuf, BTreeSet<String>)>| {
        with_input_warnings(e, spec, inputs, &stamps, &read_digests)
    };
    if let Err(e) = stager.stage_all(&mut deferred, progress, &mut rejects, &mut inputs).await {
        return Err(failed(e, &inputs));
    }

    // inputs that ingest read to their end were hashed on the way; the others are hashed
    // in the background while the tables are built
    let background: Vec<PathBuf> =
        inputs.values().filter(|(p, _)| read_digests.get(p).is_none()).map(|(p, _)| p.clone()).collect();
    let input_hashing = std::thread::spawn(move || hash_by_path(background));

    // tables, in dependency order; `report` holds what they find (the sources' findings come
    // first in the final report, in source order, however late a streamed source was read)
    let env = TablesEnv {
        ctx: &ctx,
        spec,
        opts,
        root: &root,
        work: &work,
        cluster,
        shared: shared.as_ref(),
        ingest_opts: &ingest_opts,
        progress,
    };
    let tables = build_tables(&env, &mut stager, &mut deferred, &mut report, &mut rejects, &mut inputs).await;
    let BuiltTables { order, mut table_entries, data_files } = match tables {
        Ok(built) => built,
        Err(mut e) => {
            if let (Some(c), Failure::Table(Error::Sql { context, .. })) = (&cluster, &mut e) {
                // a failure on the cluster (an executor lost, a task failed) names it
                context.push_str(&format!(" on the engine {}", c.engine.address()));
            }
            let e = stager.fail(e, &mut deferred, progress, &mut rejects, &mut inputs).await;
            return Err(failed(e, &inputs));
        }
    };
    let mut report = {
        let mut all = stager.sources_report();
        all.absorb(report);
        all
    };
    report.check().map_err(|e| failed(e, &inputs))?;
    let notes = handled_repeats(spec, opts, &mut report)?;
    report_repeats(&ctx, cluster, spec, opts.source_date_epoch, &mut report).await?;
    let reject_counts = count_rejects(rejects, &mut report, &mut table_entries)?;
    kept_after_rejects(spec, opts, &reject_counts, &mut report)?;
    // the card's sections may read sources and views, whose staged rows are in the work
    // folder: they run before it goes
    let sections = card_sections(&ctx, cluster, spec, opts.source_date_epoch).await?;
    // (absent when every source was streamed and no table needed a sort)
    if work.exists() {
        std::fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    }

    // hashes
    let Hashed { inputs_out, files, def_files, pipeline_sha256 } = hash_release(
        spec,
        &root,
        (input_hashing, &read_digests),
        (&inputs, &stamps),
        data_files,
        &reject_counts,
        &mut report,
        progress,
    )?;

    // a Trainer run saved again since the pipeline was written: its tables stop where the
    // save they read does, said in the card
    let unread = unread_raw_files(spec, &inputs_out);
    for (source, message) in unread_later_saves(&spec.dir, &unread, &inputs_out) {
        report.warn(&source, "unread-save", None, message);
    }
    report.unread_raw = unread.clone();
    let hashed = Hashed { inputs_out, files, def_files, pipeline_sha256 };
    let tables = order.iter().map(|&i| table_entries.remove(&spec.def.tables[i].name).expect("built")).collect();
    let mut manifest = manifest_of(spec, opts, &version, hashed, tables, &report);
    write_release_files(spec, &root, &mut manifest, &report, &sections, extra_metadata.as_ref())?;
    drop(ctx);
    let release_dir = staging.commit(opts.force)?;
    for (rel, (path, _)) in &inputs {
        if let (Some(i), Some(stamp)) = (manifest.inputs.iter().find(|i| &i.path == rel), stamps.get(path)) {
            input_cache.record(path, *stamp, &i.sha256);
        }
    }
    // the release's files as written, so that a later build tells one changed in place
    // without hashing it again
    for f in &manifest.files {
        let path = release_dir.join(&f.path);
        if let Ok(stamp) = crate::verbs::build::cache::FileStamp::of(&path) {
            input_cache.record(&path, stamp, &f.sha256);
        }
    }
    save_input_cache(&input_cache, &cache_path);
    Ok(BuildOutcome { release_dir, manifest, report, unchanged: false, unread, notes })
}

/// The session a build runs its SQL in: embedded, or on `cluster` with its share's object
/// store registered.
/// Its clock reads `epoch` (`SOURCE_DATE_EPOCH`), or is refused ([`crate::sql::clock`]).
fn build_session(cluster: Option<&Cluster>, epoch: Option<i64>) -> Result<datafusion::prelude::SessionContext> {
    let ctx = match cluster {
        Some(c) => c.engine.session(crate::sql::session::query_partitions())?,
        None => crate::sql::session::session(),
    };
    crate::sql::clock::pin_clock(&ctx, epoch);
    if let Some(c) = cluster {
        c.register(&ctx);
    }
    // a staged source is read batch by batch only when the scan is not split into byte
    // ranges (a range scan of an Arrow IPC file fetches its whole range at once)
    ctx.state_ref().write().config_mut().options_mut().optimizer.repartition_file_scans = false;
    Ok(ctx)
}

/// The card's sections, run over what `ctx` holds (on a cluster, over an embedded copy of
/// it: see [`crate::sql::engine::embedded_copy`]).
async fn card_sections(
    ctx: &datafusion::prelude::SessionContext,
    cluster: Option<&Cluster>,
    spec: &PipelineSpec,
    epoch: Option<i64>,
) -> Result<Vec<crate::stages::card::SectionResult>> {
    match cluster {
        Some(c) => {
            let local = crate::sql::engine::embedded_copy(ctx).await?;
            crate::sql::clock::pin_clock(&local, epoch);
            c.register(&local);
            crate::stages::card::run_sections(&local, spec).await
        }
        None => crate::stages::card::run_sections(ctx, spec).await,
    }
}

/// The values of each table's `report_repeats` columns that more than one row holds, as a
/// warning per table (in the card with the others): how many, how many with rows that differ,
/// and the first five with their rows' places.
async fn report_repeats(
    ctx: &datafusion::prelude::SessionContext,
    cluster: Option<&Cluster>,
    spec: &PipelineSpec,
    epoch: Option<i64>,
    report: &mut BuildReport,
) -> Result<()> {
    if spec.def.tables.iter().all(|t| t.report_repeats.is_empty()) {
        return Ok(());
    }
    // (as the card's sections: small queries, run here)
    let local;
    let ctx = match cluster {
        Some(c) => {
            local = crate::sql::engine::embedded_copy(ctx).await?;
            crate::sql::clock::pin_clock(&local, epoch);
            c.register(&local);
            &local
        }
        None => ctx,
    };
    for t in spec.def.tables.iter().filter(|t| !t.report_repeats.is_empty()) {
        // a column refused is named at its key in pipeline.toml
        let found =
            crate::stages::validate::repeated_values(ctx, &t.name, &t.report_repeats).await.map_err(|e| match e {
                Error::Config { message, .. } => {
                    Error::config(spec.place(&format!("table {}#report_repeats", t.name)), message)
                }
                e => e,
            })?;
        let Some(r) = found else { continue };
        let first: Vec<String> = r
            .first
            .iter()
            .map(|(v, places, differ)| {
                let at = if places.is_empty() { String::new() } else { format!(" at {places}") };
                format!("{v}{at}{}", if *differ { " (rows differ)" } else { " (rows alike)" })
            })
            .collect();
        let more = r.values.saturating_sub(first.len() as u64);
        report.warn(
            &t.name,
            "repeated-values",
            None,
            format!(
                "{} value{} of ({}) {} held by more than one row ({} rows; {} with rows that differ in another column): \
                 {}{}; every row is kept (`report_repeats`)",
                crate::core::numbers::group_digits(r.values),
                if r.values == 1 { "" } else { "s" },
                t.report_repeats.join(", "),
                if r.values == 1 { "is" } else { "are" },
                crate::core::numbers::group_digits(r.rows),
                crate::core::numbers::group_digits(r.differing),
                first.join("; "),
                if more > 0 { format!("; and {} more", crate::core::numbers::group_digits(more)) } else { String::new() }
            ),
        );
    }
    Ok(())
}

/// Saves the input cache at `path`; the cache only saves work, so a build that cannot write
/// it is still a good build (said with a warning).
fn save_input_cache(cache: &crate::verbs::build::cache::InputCache, path: &Path) {
    if let Err(e) = cache.save(path) {
        tracing::warn!("input cache not saved: {e}");
    }
}

/// The release's manifest: its name and version, the build's settings, the inputs, tables
/// (in the pipeline's order) and files (by path) with their digests, and the report's counts.
fn manifest_of(
    spec: &PipelineSpec,
    opts: &BuildOptions,
    version: &str,
    hashed: Hashed,
    tables: Vec<TableEntry>,
    report: &BuildReport,
) -> Manifest {
    let Hashed { inputs_out, files, def_files, pipeline_sha256 } = hashed;
    let mut manifest = Manifest {
        manifest_version: release::MANIFEST_VERSION,
        name: spec.def.name.clone(),
        version: version.to_string(),
        runpack_version: env!("CARGO_PKG_VERSION").to_string(),
        created_at: created_at(opts),
        pipeline: PipelineInfo { sha256: pipeline_sha256, files: def_files },
        build: build_settings(spec, opts),
        inputs: inputs_out,
        tables,
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
    manifest
}

/// The release's version: `--release-version`, else the pipeline's `version`.
///
/// Errors: [`Error::Config`] naming where it comes from when it is not
/// `[A-Za-z0-9][A-Za-z0-9._+-]*`, or is a name Windows reserves for a device (`con`, `nul.1`).
fn release_version(spec: &PipelineSpec, opts: &BuildOptions) -> Result<String> {
    let version = opts.version.clone().unwrap_or_else(|| spec.def.version.clone());
    if !regex::Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$").expect("static").is_match(&version) {
        let from = if opts.version.is_some() {
            "--release-version".to_string()
        } else {
            format!("{} (version)", spec.file.display())
        };
        return Err(Error::config(from, format!("version {version:?} must match [A-Za-z0-9][A-Za-z0-9._+-]*")));
    }
    if crate::core::names::windows_device(&version) {
        let from = if opts.version.is_some() {
            "--release-version".to_string()
        } else {
            format!("{} (version)", spec.file.display())
        };
        return Err(Error::config(
            from,
            format!(
                "version {version:?} names the release's folder, and Windows reserves that name for a device (a clone \
                 of the releases fails there); use another, such as \"v{version}\""
            ),
        ));
    }
    Ok(version)
}

/// Closes the rejects files and counts their rows: by table in `report`, and in each table's
/// entry as rejected by validation (rows superseded by a duplicate-key rule apart).
fn count_rejects(
    rejects: Rejects,
    report: &mut BuildReport,
    table_entries: &mut BTreeMap<String, TableEntry>,
) -> Result<BTreeMap<String, u64>> {
    let reject_counts = rejects.finish()?;
    for (name, n) in &reject_counts {
        let dropped = report.duplicates_dropped.get(name).map(|t| t.count).unwrap_or(0);
        if let Some(t) = table_entries.get_mut(name) {
            t.rejected_rows = n - dropped;
        }
        report.rejected_rows.insert(name.clone(), *n);
    }
    Ok(reject_counts)
}

/// A table whose keep rule chose among rows after some were set aside (`--on-invalid
/// reject`, a source's `on_truncated = "reject"`): where the row set aside was the one the
/// rule keeps (the resumed attempt's record of a step), the table keeps another of its key
/// (the stopped attempt's). Each such table gets a warning, which the card always shows. The
/// rows the table's own rules set aside are known one by one ([`BuildReport::kept_instead`]):
/// the warning counts and names them. Rows set aside by a source the table's SQL names are
/// set aside before their keys are known: the warning names the rejects files, for the reader
/// to compare. A source read through a view is not followed.
///
/// Errors: [`Error::Sql`] for a table's SQL that does not parse.
fn kept_after_rejects(
    spec: &PipelineSpec,
    opts: &BuildOptions,
    reject_counts: &BTreeMap<String, u64>,
    report: &mut BuildReport,
) -> Result<()> {
    use crate::core::spec::DuplicatePolicy;
    if reject_counts.is_empty() {
        return Ok(());
    }
    let readers = crate::stages::transform::readers(spec)?;
    for (i, t) in spec.def.tables.iter().enumerate() {
        let policy = opts.on_duplicate_key.unwrap_or(t.on_duplicate_key);
        if policy == DuplicatePolicy::Error {
            continue;
        }
        let which = if policy == DuplicatePolicy::KeepLast { "last" } else { "first" };
        let rule = format!("`on_duplicate_key = \"{}\"`", policy.as_str());
        if let Some(k) = report.kept_instead.get(&t.name).filter(|k| k.count > 0).cloned() {
            let shown: Vec<&str> = k.examples.iter().take(3).map(String::as_str).collect();
            let more = k.count.saturating_sub(shown.len() as u64);
            report.warn(
                &t.name,
                "kept-after-rejects",
                None,
                format!(
                    "{} set aside (rejects/{}.jsonl) {} the {which} of {} key, and {rule} kept another row \
                     instead: {}{}",
                    crate::stages::hash::rows(k.count),
                    t.name,
                    if k.count == 1 { "was" } else { "were each" },
                    if k.count == 1 { "its" } else { "their" },
                    shown.join("; "),
                    if more > 0 { format!("; and {more} more") } else { String::new() }
                ),
            );
        }
        let from_sources: Vec<String> = spec
            .def
            .sources
            .iter()
            .filter(|s| readers.get(&s.name).is_some_and(|r| r.contains(&Some(i))))
            .filter_map(|s| {
                reject_counts
                    .get(&s.name)
                    .filter(|n| **n > 0)
                    .map(|n| format!("{} in rejects/{}.jsonl", crate::stages::hash::rows(*n), s.name))
            })
            .collect();
        if from_sources.is_empty() {
            continue;
        }
        report.warn(
            &t.name,
            "kept-after-rejects",
            None,
            format!(
                "{rule} chose among the rows its sources kept after invalid ones were set aside ({}): where a row \
                 set aside was the {which} of its key, the row kept is another (for a resumed run, the stopped \
                 attempt's record of that step); compare the keys of {} with the table's",
                from_sources.join(", "),
                if from_sources.len() == 1 { "that file" } else { "those files" }
            ),
        );
    }
    Ok(())
}

/// What a build's tables need of the build around them ([`build_tables`]).
struct TablesEnv<'a> {
    ctx: &'a datafusion::prelude::SessionContext,
    spec: &'a PipelineSpec,
    opts: &'a BuildOptions,
    /// The release being written.
    root: &'a Path,
    /// Staged sources and sort runs (in the share, on a cluster).
    work: &'a Path,
    cluster: Option<&'a Cluster>,
    /// The pipeline, for sources streamed into their table.
    shared: Option<&'a Arc<PipelineSpec>>,
    ingest_opts: &'a IngestOptions,
    progress: &'a dyn Progress,
}

/// The tables a build made: their indexes in dependency order, their manifest entries and
/// the files written (each with its table).
struct BuiltTables {
    order: Vec<usize>,
    table_entries: BTreeMap<String, TableEntry>,
    data_files: Vec<(String, crate::stages::write::WrittenFile)>,
}

/// Registers the views, then builds each table in dependency order: sources streamed into
/// it read as it runs (or staged, when that cannot be), its SQL run, its rows conformed,
/// sorted, validated and written, and the table registered for the tables after it. Once a
/// table's rows are all handed to its writers, the next table starts while they finish its
/// files (the last row groups encoded, written and hashed), unless it reads that table or
/// names it in a foreign key; the tables' entries and files are listed in table order all
/// the same.
async fn build_tables(
    env: &TablesEnv<'_>,
    stager: &mut Stager<'_>,
    deferred: &mut BTreeMap<usize, (usize, SchemaRef)>,
    report: &mut BuildReport,
    rejects: &mut Rejects,
    inputs: &mut BTreeMap<String, (PathBuf, BTreeSet<String>)>,
) -> std::result::Result<BuiltTables, Failure> {
    let TablesEnv { ctx, spec, opts, root, work, progress, .. } = *env;
    register_views(ctx, spec, opts.source_date_epoch).await?;
    let (order, deps) = table_order(spec)?;
    let mut table_entries: BTreeMap<String, TableEntry> = BTreeMap::new();
    // (table, file written)
    let mut data_files: Vec<(String, crate::stages::write::WrittenFile)> = Vec::new();
    let referenced = crate::core::schema::referenced_columns(
        spec.def.tables.iter().zip(&spec.table_schemas).filter_map(|(t, s)| Some((t.name.as_str(), s.as_ref()?))),
    );
    let mut key_sets: BTreeMap<(String, Vec<String>), KeySet> = BTreeMap::new();
    // the table before, while its writers finish its files: the next table starts meanwhile,
    // unless it reads that one
    let mut finishing: Option<Finishing> = None;
    let mut done = Done { table_entries: &mut table_entries, data_files: &mut data_files };
    for &i in &order {
        if let Some(f) = finishing.take_if(|f| deps[i].contains(&f.index)) {
            f.complete(env, &mut *report, &mut done).await?;
        }
        let t = &spec.def.tables[i];
        let started = Instant::now();
        let streamed: Vec<(usize, SchemaRef)> =
            deferred.iter().filter(|(_, (ti, _))| *ti == i).map(|(&s, (_, schema))| (s, schema.clone())).collect();
        // a table that reads its sources as they stream in counts the bytes they read
        let read_while_run = BytesOnRows::new(progress, streamed.iter().map(|(s, _)| stager.source_bytes[*s]).sum());
        let progress: &dyn Progress = if streamed.is_empty() {
            progress.start(&format!("running table {}'s SQL", t.name), Unit::Rows, None);
            progress
        } else {
            let names: Vec<&str> = streamed.iter().map(|(s, _)| spec.def.sources[*s].name.as_str()).collect();
            let step = format!("reading source {} into table {}", names.join(", "), t.name);
            progress.start(&step, Unit::Bytes, Some(read_while_run.budget));
            &read_while_run
        };
        let before_failed = finishing.as_ref().map(|f| f.files.failed());
        let cx = TableCx {
            ctx,
            spec,
            index: i,
            opts,
            key_sets: &key_sets,
            referenced: &referenced,
            root,
            work,
            progress,
            before_failed,
        };
        let outcome = run_streamed_or_staged(env, &cx, &streamed, stager, deferred, rejects, inputs).await;
        let built = match outcome {
            Ok(built) => built,
            Err(e) => {
                // the table before failed first, when its files did: its error is the build's
                // (as when tables ran strictly in turn)
                if let Some(f) = finishing.take()
                    && let Err(first) = f.files.wait()
                {
                    return Err(first.into());
                }
                return Err(e);
            }
        };
        let TableBuilt { rows, keys, split_files, policy, table_schema, target_schema, found } = built;
        report.absorb(found);
        for (cols, set) in keys {
            key_sets.insert((t.name.clone(), cols), set);
        }
        progress.finish();
        tracing::info!("table {}: rows written in {:.2} s", t.name, started.elapsed().as_secs_f64());
        let pending = Finishing { index: i, files: split_files, rows, policy, table_schema, target_schema };
        // (on an error, the table just run is waited for as `finishing` drops)
        if let Some(f) = finishing.replace(pending) {
            f.complete(env, &mut *report, &mut done).await?;
        }
    }
    if let Some(f) = finishing.take() {
        f.complete(env, &mut *report, &mut done).await?;
    }
    Ok(BuiltTables { order, table_entries, data_files })
}

/// Runs table `cx.index`: its sources in `streamed` read as it runs (each attempt that finds
/// them out of the order it speculated on reads them again, three at most), or, when that
/// cannot be, staged first; its rows sorted, validated and handed to its writers.
async fn run_streamed_or_staged(
    env: &TablesEnv<'_>,
    cx: &TableCx<'_>,
    streamed: &[(usize, SchemaRef)],
    stager: &mut Stager<'_>,
    deferred: &mut BTreeMap<usize, (usize, SchemaRef)>,
    rejects: &mut Rejects,
    inputs: &mut BTreeMap<String, (PathBuf, BTreeSet<String>)>,
) -> std::result::Result<TableBuilt, Failure> {
    let (spec, progress, t) = (env.spec, cx.progress, &env.spec.def.tables[cx.index]);
    let built = if streamed.is_empty() {
        None
    } else {
        let shared = env.shared.as_ref().expect("set when sources are deferred");
        // (speculate on key order, hand groups on early): each attempt that fails turns one
        // off and reads the sources again, so there are three at most
        let mut mode = (true, true);
        let outcome = loop {
            match build_streamed(cx, shared, streamed, env.ingest_opts, rejects, mode).await? {
                Streaming::Unordered => mode.0 = false,
                Streaming::Regroup => mode = (false, false),
                outcome => break outcome,
            }
        };
        match outcome {
            Streaming::Built(built, read) => {
                for (s, files, found) in read {
                    deferred.remove(&s);
                    stager.reports[s] = Some(found);
                    record_inputs(inputs, &files, &spec.def.sources[s].name);
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
            // (the loop above reads again on Unordered and Regroup; they do not end it)
            Streaming::Restage | Streaming::Unordered | Streaming::Regroup => {
                for (s, _) in streamed {
                    deferred.remove(s);
                    if let Err(e) = stager.stage(*s, progress, true, rejects, inputs).await {
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
    Ok(match built {
        Some(b) => b,
        None => match run_table(cx, plan_table(cx).await?, rejects).await? {
            Some(built) => built,
            None => {
                // the sort's early groups were broken by later rows: sorted whole
                let mut plan = plan_table(cx).await?;
                plan.early_groups = false;
                run_table(cx, plan, rejects).await?.ok_or_else(|| unfinished(&t.name))?
            }
        },
    })
}

/// What [`build_tables`] has of the tables whose files are complete.
struct Done<'a> {
    table_entries: &'a mut BTreeMap<String, TableEntry>,
    /// (table, file written).
    data_files: &'a mut Vec<(String, crate::stages::write::WrittenFile)>,
}

/// A table whose rows are all written, while its writers finish its files
/// ([`crate::stages::transform::PendingFiles`]).
struct Finishing {
    index: usize,
    files: crate::stages::transform::PendingFiles,
    rows: u64,
    policy: crate::core::spec::DuplicatePolicy,
    table_schema: crate::core::schema::TableSchema,
    target_schema: SchemaRef,
}

impl Finishing {
    /// Waits for the table's files, lists them and its manifest entry in `done`, and registers
    /// the table in the session for the tables that read it (from a copy in the share, on a
    /// cluster).
    async fn complete(self, env: &TablesEnv<'_>, report: &mut BuildReport, done: &mut Done<'_>) -> Result<()> {
        let Finishing { index: i, files, rows, policy, table_schema, target_schema } = self;
        let t = &env.spec.def.tables[i];
        let split_files = files.wait()?;
        if let Some(column) = split_files.iter().flat_map(|(_, f)| f).find_map(|f| f.pages_cut_by_size.as_deref()) {
            report.warn(
                &t.name,
                "pages-cut-by-size",
                None,
                format!(
                    "table {}: its Parquet pages are cut by size, not by content: with content-defined pages the \
                     Parquet writer wrote a page of no values in column `{}` (apache/arrow-rs#10929: a column whose \
                     dictionary fills at a page's end, such as text values over 1 MiB), which \
                     pyarrow refuses to read",
                    t.name, column
                ),
            );
        }
        let (parquet, splits, nonfinite) = split_entries(&t.name, &split_files, done.data_files);
        let mut paths: Vec<PathBuf> = parquet.iter().map(|p| env.root.join(p)).collect();
        if let Some(c) = &env.cluster {
            paths = c.share_table(&t.name, &paths).await?;
        }
        let order = crate::sql::session::declared_order(&table_schema, &target_schema);
        // (every column nullable: see crate::verbs::query)
        crate::sql::session::register_parquet(env.ctx, &t.name, &paths, target_schema.clone(), &order, Some(rows))
            .await?;
        crate::sql::engine::know_rows(env.ctx, &t.name, rows);
        let entry =
            table_entry(env.spec, i, report, policy, &table_schema, &target_schema, (rows, parquet, splits, nonfinite));
        done.table_entries.insert(t.name.clone(), entry);
        Ok(())
    }
}

/// Registers the pipeline's views in `ctx`, in order; a view that uses `SIMILAR TO`, or the clock
/// without `epoch` (`SOURCE_DATE_EPOCH`) or `random()`, is refused, named.
async fn register_views(
    ctx: &datafusion::prelude::SessionContext,
    spec: &PipelineSpec,
    epoch: Option<i64>,
) -> Result<()> {
    for (i, v) in spec.def.views.iter().enumerate() {
        let sql = spec.view_sql(i)?;
        let context = || format!("view {} ({})", v.name, origin(spec, v.sql.as_deref(), "view", &v.name));
        let df = ctx
            .sql_with_options(&sql, crate::sql::session::read_only(false))
            .await
            .map_err(|e| Error::sql(context(), e))?;
        // (the session's analyzer refuses it when a table or section reads the view; here
        // it is named, and refused in a view that nothing reads too)
        if crate::sql::session::uses_similar_to(df.logical_plan()) {
            return Err(Error::config(context(), crate::sql::session::SIMILAR_TO_REFUSED));
        }
        if let Some(e) = crate::sql::session::check_written(&sql, df.logical_plan()) {
            return Err(Error::sql(context(), e));
        }
        // the clock and random functions, named at the view rather than at a table reading it
        crate::sql::clock::check(df.logical_plan(), epoch).map_err(|e| Error::sql(context(), e))?;
        ctx.register_table(v.name.as_str(), df.into_view()).map_err(|e| Error::sql(context(), e))?;
    }
    Ok(())
}

/// Whether the release at `target` is what a build would make now ([`up_to_date`]).
enum UpToDate {
    /// Its manifest: nothing to rebuild.
    Yes(Box<Manifest>),
    /// What changed (`None` when there is no release, or `--force`).
    No(Option<String>),
}

/// Whether the release at `target` is up to date with the pipeline, its inputs (by the input
/// cache, hashing inputs whose stamps changed), the build's settings and `SOURCE_DATE_EPOCH`.
fn up_to_date(
    spec: &PipelineSpec,
    opts: &BuildOptions,
    target: &Path,
    input_cache: &mut crate::verbs::build::cache::InputCache,
    progress: &dyn Progress,
) -> Result<UpToDate> {
    if opts.force || !target.exists() {
        return Ok(UpToDate::No(None));
    }
    // a folder there that is no release runpack can read (an empty one, one made by hand)
    let existing = match Manifest::load(target) {
        Ok(m) => m,
        Err(e) => return Ok(UpToDate::No(Some(format!("it is no release runpack can read: {e}")))),
    };
    progress.start("checking whether the release is up to date", Unit::None, None);
    // a different SOURCE_DATE_EPOCH makes a different manifest: not up to date
    let epoch = (existing.created_at != created_at(opts)).then(|| "SOURCE_DATE_EPOCH changed".to_string());
    let others = crate::verbs::build::cache::stale(spec, target, &existing, &build_settings(spec, opts), input_cache)?;
    let stale = match (epoch, others) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    progress.finish();
    Ok(match stale {
        None => UpToDate::Yes(Box::new(existing)),
        why => UpToDate::No(why),
    })
}

/// The digests of a release's inputs and files ([`hash_release`]).
struct Hashed {
    inputs_out: Vec<InputEntry>,
    files: Vec<FileEntry>,
    def_files: Vec<release::HashedPath>,
    pipeline_sha256: String,
}

/// Hashes what the manifest lists: the inputs (hashed while read, in the background thread
/// `input_hashing`, or now), the data files (hashed as written), the rejects files and the
/// pipeline's definition. Inputs that changed while read are refused; input warnings go to
/// `report`.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn hash_release(
    spec: &PipelineSpec,
    root: &Path,
    (input_hashing, read_digests): (
        std::thread::JoinHandle<Result<BTreeMap<PathBuf, crate::stages::hash::FileDigest>>>,
        &crate::stages::hash::ReadDigests,
    ),
    (inputs, stamps): (
        &BTreeMap<String, (PathBuf, BTreeSet<String>)>,
        &BTreeMap<PathBuf, crate::verbs::build::cache::FileStamp>,
    ),
    data_files: Vec<(String, crate::stages::write::WrittenFile)>,
    reject_counts: &BTreeMap<String, u64>,
    report: &mut BuildReport,
    progress: &dyn Progress,
) -> Result<Hashed> {
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
    unchanged_while_read(inputs, stamps, &inputs_out)?;
    // a release names its inputs (manifest.json, the card, `_source_file`): a path that holds
    // the environment's token, or a piece of it, would publish it
    if let Some(i) = inputs_out.iter().find(|i| crate::core::secrets::holds(&i.path)) {
        return Err(Error::Refused(format!(
            "{}: this input's path holds the environment's Hub token (HF_TOKEN, or the token file), and a release \
             names its inputs (manifest.json, the card, _source_file); rename the file or folder",
            crate::core::secrets::hide_pieces(&i.path)
        )));
    }
    input_warnings(spec, &inputs_out, report);
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
    for (name, n) in reject_counts {
        to_hash.push((format!("rejects/{name}.jsonl"), "rejects".into(), Some(name.clone()), Some(*n)));
    }
    let digests = crate::stages::hash::sha256_files(&to_hash.iter().map(|(p, ..)| root.join(p)).collect::<Vec<_>>())?;
    for ((path, kind, table, rows), d) in to_hash.into_iter().zip(digests) {
        files.push(FileEntry { path, bytes: d.bytes, sha256: d.sha256, kind, table, rows });
    }
    let (def_files, pipeline_sha256) = crate::verbs::build::cache::definition_digest(spec)?;
    progress.finish();
    tracing::info!("inputs and files hashed in {:.2} s", started.elapsed().as_secs_f64());

    Ok(Hashed { inputs_out, files, def_files, pipeline_sha256 })
}

/// A table's Parquet files, its splits' entries and the NaN and infinities of its rows, from
/// the files written for each split; every file written is added to `data_files`.
#[allow(clippy::type_complexity)]
fn split_entries(
    table: &str,
    split_files: &[(String, Vec<crate::stages::write::WrittenFile>)],
    data_files: &mut Vec<(String, crate::stages::write::WrittenFile)>,
) -> (Vec<String>, Vec<release::SplitEntry>, BTreeMap<String, crate::stages::write::NonFiniteCount>) {
    let mut parquet: Vec<String> = Vec::new();
    let mut splits = Vec::new();
    let mut nonfinite: BTreeMap<String, crate::stages::write::NonFiniteCount> = BTreeMap::new();
    for f in split_files.iter().flat_map(|(_, files)| files).filter(|f| f.format == "parquet") {
        for (col, n) in &f.nonfinite {
            nonfinite.entry(col.clone()).or_default().add(n);
        }
    }
    for (split, files) in split_files {
        let pq: Vec<String> = files.iter().filter(|f| f.format == "parquet").map(|f| f.path.clone()).collect();
        let rows = files.iter().filter(|f| f.format == "parquet").map(|f| f.rows).sum();
        splits.push(release::SplitEntry { name: split.clone(), rows, files: pq.clone() });
        parquet.extend(pq);
        for f in files {
            data_files.push((table.to_string(), f.clone()));
        }
    }
    (parquet, splits, nonfinite)
}

/// The manifest's entry of table `i` (its rejected rows are counted later, from the rejects).
#[allow(clippy::type_complexity)]
fn table_entry(
    spec: &PipelineSpec,
    i: usize,
    report: &BuildReport,
    policy: crate::core::spec::DuplicatePolicy,
    table_schema: &crate::core::schema::TableSchema,
    target_schema: &SchemaRef,
    (rows, parquet, splits, nonfinite): (
        u64,
        Vec<String>,
        Vec<release::SplitEntry>,
        BTreeMap<String, crate::stages::write::NonFiniteCount>,
    ),
) -> TableEntry {
    let t = &spec.def.tables[i];
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
        formats: if spec.jsonl_copies(i) { vec!["parquet".into(), "jsonl".into()] } else { vec!["parquet".into()] },
        nonfinite_values: nonfinite,
    }
}

/// Writes the release's description files and lists them in `manifest`: `datapackage.json`
/// (the tables with JSON Lines copies), `croissant.json`, the card (`README.md`), then
/// `manifest.json` and `SHA256SUMS`.
fn write_release_files(
    spec: &PipelineSpec,
    root: &Path,
    manifest: &mut Manifest,
    report: &BuildReport,
    sections: &[crate::stages::card::SectionResult],
    extra_metadata: Option<&yaml_serde::Mapping>,
) -> Result<()> {
    // the tables with JSON Lines copies as a Frictionless data package
    let package =
        release::datapackage(manifest, spec.def.card.pretty_name.as_deref(), spec.def.card.license.as_deref());
    write_listed(root, manifest, "datapackage.json", "datapackage", &package)?;
    // and as Croissant metadata, over the data files the manifest lists
    let croissant = crate::stages::croissant::croissant(manifest, &spec.def.card, root)?;
    write_listed(root, manifest, "croissant.json", "croissant", &croissant)?;

    // card
    let card = crate::stages::card::render(spec, manifest, report, sections, extra_metadata, root)?;
    write_listed(root, manifest, "README.md", "card", &card)?;
    let mjson = manifest.to_json();
    let mpath = root.join("manifest.json");
    std::fs::write(&mpath, &mjson).map_err(|e| Error::io(&mpath, e))?;
    let mut sums: Vec<(String, String)> = manifest.files.iter().map(|f| (f.path.clone(), f.sha256.clone())).collect();
    sums.push(("manifest.json".into(), crate::stages::hash::sha256_bytes(mjson.as_bytes())));
    let spath = root.join("SHA256SUMS");
    std::fs::write(&spath, release::sha256sums(&sums)).map_err(|e| Error::io(&spath, e))?;
    Ok(())
}

/// SHA-256 of each of `paths` (on both cores), by path.
fn hash_by_path(paths: Vec<PathBuf>) -> Result<BTreeMap<PathBuf, crate::stages::hash::FileDigest>> {
    let digests = crate::stages::hash::sha256_files(&paths)?;
    Ok(paths.into_iter().zip(digests).collect())
}

/// Stages sources: reads one into an Arrow IPC file (Parquet for a cluster) and registers it for
/// the tables' SQL; keeps what each source's read found, staged or streamed.
struct Stager<'a> {
    ctx: &'a datafusion::prelude::SessionContext,
    spec: &'a PipelineSpec,
    work: &'a Path,
    opts: &'a IngestOptions,
    orders: &'a [Vec<String>],
    max_errors: usize,
    /// What reading each source found, by source index (`None`: not read yet).
    reports: Vec<Option<BuildReport>>,
    /// The size of each source's input files, by source index, before reading.
    source_bytes: Vec<u64>,
    /// Stage sources as Parquet (for a cluster's executors: compressed, read in row groups)
    /// rather than Arrow IPC.
    parquet: bool,
    /// The cluster whose share the staged sources go to.
    cluster: Option<&'a Cluster>,
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
    /// read, in order, before any table. A source that cannot be read on from stops the
    /// reading: its violation follows those of the sources before it, and the error says that
    /// the count stopped there ([`Checked::UpToSource`](crate::core::report::Checked)); its
    /// other errors win over every violation. The sources' violations win over a table's
    /// error, and the tables' rules are not checked then ([`Checked::Sources`](crate::core::report::Checked)).
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
            if let Err(e) = self.stage(s, progress, true, rejects, inputs).await {
                return e;
            }
        }
        match failure {
            // the sources read before it keep their violations; the count stops there
            Failure::Source(_, Error::Invalid { violations, total, .. }) => {
                // the violation that stopped the reading is kept whatever --max-errors leaves out
                let mut all = BuildReport::new(self.max_errors.max(1));
                let kept = violations.len();
                for v in violations {
                    all.violation_shown(v);
                }
                all.violations_total += total - kept;
                all.absorb(self.sources_report());
                all.to_error_checked(crate::core::report::Checked::UpToSource)
            }
            Failure::Source(_, e) => e,
            Failure::Table(e) if self.violations() == 0 => e,
            _ => self.sources_report().to_error_checked(crate::core::report::Checked::Sources),
        }
    }

    /// Reads the sources not `deferred` (streamed into their table later), in order, in one
    /// progress step. Errors: the first source's error, or the sources' violations, after the
    /// deferred sources before it are read too ([`Stager::fail`]).
    async fn stage_all(
        &mut self,
        deferred: &mut BTreeMap<usize, (usize, SchemaRef)>,
        progress: &dyn Progress,
        rejects: &mut Rejects,
        inputs: &mut BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    ) -> Result<()> {
        let staged: Vec<usize> = (0..self.spec.def.sources.len()).filter(|i| !deferred.contains_key(i)).collect();
        if !staged.is_empty() {
            let total = staged.iter().map(|&i| self.source_bytes[i]).sum();
            progress.start("reading sources", Unit::Bytes, Some(total));
        }
        for &i in &staged {
            if let Err(e) = self.stage(i, progress, false, rejects, inputs).await {
                progress.finish();
                return Err(self.fail(Failure::Source(i, e), deferred, progress, rejects, inputs).await);
            }
        }
        if !staged.is_empty() {
            progress.finish();
        }
        // stop here when the sources already broke the rules: table errors would only repeat them
        if self.violations() > 0 {
            return Err(self.fail(Failure::Sources, deferred, progress, rejects, inputs).await);
        }
        Ok(())
    }

    /// Reads source `i`, records its files in `inputs` (relative path → absolute path and the
    /// sources that read it) and registers it under its name. Its bytes read are reported as
    /// they come, in a step of its own (`own_step`) or in the `reading sources` step; in all,
    /// exactly the size its input files had before reading.
    async fn stage(
        &mut self,
        i: usize,
        progress: &dyn Progress,
        own_step: bool,
        rejects: &mut Rejects,
        inputs: &mut BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    ) -> Result<()> {
        let src = &self.spec.def.sources[i];
        let step = format!("reading source {}", src.name);
        if own_step {
            progress.start(&step, Unit::Bytes, Some(self.source_bytes[i]));
        } else {
            progress.rename(&step);
        }
        let started = Instant::now();
        let (spec, work, opts, orders) = (self.spec, self.work, self.opts, self.orders);
        let budget = self.source_bytes[i];
        let ing = read_counting_bytes(progress, budget, || ingest::run(spec, i, work, opts, orders, rejects));
        if own_step {
            progress.finish();
        }
        let mut ing = ing?;
        self.reports[i] = Some(std::mem::take(&mut ing.found));
        tracing::info!("source {}: read in {:.2} s", src.name, started.elapsed().as_secs_f64());
        record_inputs(inputs, &ing.inputs, &src.name);
        let sort_order = ing.sorted_by.iter().map(|cols| crate::sql::session::sort_exprs(cols)).collect();
        let (file, listing) = if self.parquet {
            let file = ing.ipc_file.with_extension("parquet");
            ipc_to_parquet(&ing.ipc_file, &file)?;
            std::fs::remove_file(&ing.ipc_file).map_err(|e| Error::io(&ing.ipc_file, e))?;
            let file = match self.cluster {
                Some(c) => c.place_source(&file).await?,
                None => file,
            };
            // read as written: no statistics pruning (NaN-safe), no view types
            let mut options = datafusion::config::TableParquetOptions::default();
            options.global.pruning = false;
            options.global.schema_force_view_types = false;
            let format = datafusion::datasource::file_format::parquet::ParquetFormat::default().with_options(options);
            (
                file,
                datafusion::datasource::listing::ListingOptions::new(Arc::new(format)).with_file_extension(".parquet"),
            )
        } else {
            let format = datafusion::datasource::file_format::arrow::ArrowFormat;
            (
                ing.ipc_file.clone(),
                datafusion::datasource::listing::ListingOptions::new(Arc::new(format)).with_file_extension(".arrow"),
            )
        };
        let listing = listing.with_file_sort_order(sort_order);
        let _ = self.ctx.deregister_table(ing.name.as_str());
        // (on a cluster, a table that keeps every row of the source is held to its count)
        crate::sql::engine::know_rows(self.ctx, &ing.name, ing.rows);
        self.ctx
            .register_listing_table(
                ing.name.as_str(),
                file.to_string_lossy().as_ref(),
                listing,
                Some(ing.schema.clone()),
                None,
            )
            .await
            .map_err(|e| Error::sql(format!("source {}", ing.name), e))
    }
}

/// Rewrites a staged source's Arrow IPC file as a Parquet file (zstd), batch by batch.
///
/// Errors: [`Error::Io`] or [`Error::Format`] naming the file that cannot be read or written.
fn ipc_to_parquet(ipc: &Path, parquet: &Path) -> Result<()> {
    let f = std::fs::File::open(ipc).map_err(|e| Error::io(ipc, e))?;
    let reader = arrow::ipc::reader::FileReader::try_new(std::io::BufReader::new(f), None)
        .map_err(|e| Error::format(ipc.display().to_string(), e))?;
    let out = std::fs::File::create(parquet).map_err(|e| Error::io(parquet, e))?;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(parquet::basic::ZstdLevel::default()))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(std::io::BufWriter::new(out), reader.schema(), Some(props))
        .map_err(|e| Error::format(parquet.display().to_string(), e))?;
    for batch in reader {
        let batch = batch.map_err(|e| Error::format(ipc.display().to_string(), e))?;
        writer.write(&batch).map_err(|e| Error::format(parquet.display().to_string(), e))?;
    }
    writer.close().map_err(|e| Error::format(parquet.display().to_string(), e))?;
    Ok(())
}

/// The size of each source's input files, by source index, as they are before reading (a
/// source whose files cannot be listed counts 0: reading it fails with the reason).
fn source_bytes(spec: &PipelineSpec) -> Vec<u64> {
    spec.def
        .sources
        .iter()
        .enumerate()
        .map(|(i, src)| {
            ingest::files::source_files(spec, i, &src.name)
                .unwrap_or_default()
                .iter()
                .filter_map(|f| std::fs::metadata(&f.path).ok())
                .map(|m| m.len())
                .sum()
        })
        .collect()
}

/// How often the bytes read are reported while a source is read.
const READ_TICK: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs `read` (a source's ingest) while a second thread reports to `progress` the raw bytes
/// read ([`ingest::files::raw_bytes_read`]), never more than `budget` (the source's input
/// size), and then the rest of `budget`: readers that do not count their bytes (Parquet,
/// SQLite) and files read twice still add up to the input size.
fn read_counting_bytes<T>(progress: &dyn Progress, budget: u64, read: impl FnOnce() -> T) -> T {
    let base = ingest::files::raw_bytes_read();
    let sent = std::sync::atomic::AtomicU64::new(0);
    let report = || {
        let read = ingest::files::raw_bytes_read().saturating_sub(base).min(budget);
        let before = sent.fetch_max(read, std::sync::atomic::Ordering::Relaxed);
        if read > before {
            progress.advance(read - before);
        }
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        let ticker = s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::park_timeout(READ_TICK);
                report();
            }
        });
        let out = read();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        ticker.thread().unpark();
        let _ = ticker.join();
        out
    });
    report();
    let rest = budget.saturating_sub(sent.load(std::sync::atomic::Ordering::Relaxed));
    if rest > 0 {
        progress.advance(rest);
    }
    out
}

/// The progress of a table whose sources stream into its SQL: the rows the SQL returns are
/// reported as the bytes its sources have read by then (out of `budget`, their input size);
/// a step the table starts itself (writing) is passed on as it is.
struct BytesOnRows<'a> {
    inner: &'a dyn Progress,
    base: u64,
    budget: u64,
    sent: std::sync::atomic::AtomicU64,
    own_step: std::sync::atomic::AtomicBool,
}

impl<'a> BytesOnRows<'a> {
    fn new(inner: &'a dyn Progress, budget: u64) -> Self {
        BytesOnRows {
            inner,
            base: ingest::files::raw_bytes_read(),
            budget,
            sent: Default::default(),
            own_step: Default::default(),
        }
    }
}

impl BytesOnRows<'_> {
    /// The sources are read to their end (the SQL returned its last row): the rest of the
    /// budget, once.
    fn read_all(&self) {
        if !self.own_step.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let before = self.sent.swap(self.budget, std::sync::atomic::Ordering::Relaxed);
            if self.budget > before {
                self.inner.advance(self.budget - before);
            }
        }
    }
}

impl Progress for BytesOnRows<'_> {
    fn start(&self, step: &str, unit: Unit, total: Option<u64>) {
        self.read_all();
        self.inner.start(step, unit, total);
    }
    fn advance(&self, n: u64) {
        if self.own_step.load(std::sync::atomic::Ordering::Relaxed) {
            return self.inner.advance(n);
        }
        let read = ingest::files::raw_bytes_read().saturating_sub(self.base).min(self.budget);
        let before = self.sent.fetch_max(read, std::sync::atomic::Ordering::Relaxed);
        if read > before {
            self.inner.advance(read - before);
        }
    }
    fn finish(&self) {
        self.read_all();
        self.inner.finish();
    }
    fn rename(&self, step: &str) {
        self.inner.rename(step);
    }
}

/// Warns (`empty-input`) of each source that read empty files, and (`identical-inputs`) of
/// each source that read two or more non-empty files with the
/// same bytes (the same SHA-256): a folder linked or copied under a second name is read twice,
/// and its rows come twice, which the source's path pattern cannot tell. `wandb` sources are
/// left out: their run folders hold files that are alike by design (`latest-run/`, logs,
/// `requirements.txt`), and the reader itself says which files it reads.
fn input_warnings(spec: &PipelineSpec, inputs: &[InputEntry], report: &mut BuildReport) {
    let wandb: BTreeSet<&str> = spec
        .def
        .sources
        .iter()
        .filter(|s| s.format == crate::core::spec::Format::Wandb)
        .map(|s| s.name.as_str())
        .collect();
    let mut seen: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for i in inputs.iter().filter(|i| i.bytes > 0 && !i.sha256.is_empty()) {
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
        report.warn(
            source,
            "empty-input",
            None,
            format!(
                "source {source} read {} empty file{} (0 bytes, no record): {}",
                paths.len(),
                if paths.len() == 1 { "" } else { "s" },
                crate::core::report::first_names(&paths, 5),
            ),
        );
    }
    // trackio's log calls are read once by their log_id, whichever file holds them
    let by_log_id: BTreeSet<&str> = spec
        .def
        .sources
        .iter()
        .filter(|s| {
            matches!(s.format, crate::core::spec::Format::TrackioMetrics | crate::core::spec::Format::TrackioSystem)
        })
        .map(|s| s.name.as_str())
        .collect();
    // files alike in several sources (a file two formats read) and several sets of files alike
    // in one source are said in one warning: (sources, what) → the sets (sha256, paths)
    let mut alike: BTreeMap<(&str, &[&str]), BTreeSet<&str>> = BTreeMap::new();
    for ((source, _), paths) in seen.iter().filter(|(_, p)| p.len() > 1) {
        let runs =
            spec.def.sources.iter().any(|s| s.name == *source && s.format == crate::core::spec::Format::TrackioRuns);
        let what = if by_log_id.contains(source) {
            "each log call is read once, by its log_id, so the copies add no row"
        } else if runs {
            "each run is read once, by its run_id and config, so the copies add no row"
        } else {
            "the rows of each are read (a folder linked or copied under another name is read once per name)"
        };
        alike.entry((what, paths.as_slice())).or_default().insert(source);
    }
    let mut said: BTreeMap<(Vec<&str>, &str), Vec<&[&str]>> = BTreeMap::new();
    for ((what, paths), sources) in alike {
        said.entry((sources.into_iter().collect(), what)).or_default().push(paths);
    }
    for ((sources, what), sets) in said {
        let who = match sources.as_slice() {
            [one] => format!("source {one}"),
            many => format!("sources {}", many.join(", ")),
        };
        let set = |paths: &[&str]| {
            let i = inputs.iter().find(|i| i.path == paths[0]);
            let (bytes, sha256) = i.map_or((0, ""), |i| (i.bytes, i.sha256.as_str()));
            (crate::core::numbers::group_digits(bytes), sha256.get(..12).unwrap_or(sha256).to_string())
        };
        let message = match sets.as_slice() {
            [paths] => {
                let (bytes, sha) = set(paths);
                format!(
                    "{who} read {} files with the same bytes ({bytes} bytes, sha256 {sha}…): {}; {what}",
                    paths.len(),
                    paths.join(", ")
                )
            }
            _ => {
                const SHOWN: usize = 5;
                let mut listed: Vec<String> = sets
                    .iter()
                    .take(SHOWN)
                    .map(|paths| {
                        let (bytes, sha) = set(paths);
                        format!("{} ({bytes} bytes, sha256 {sha}…)", paths.join(", "))
                    })
                    .collect();
                if sets.len() > SHOWN {
                    listed.push(format!("and {} more sets", sets.len() - SHOWN));
                }
                format!("{who} read files with the same bytes, in {} sets: {}; {what}", sets.len(), listed.join("; "))
            }
        };
        report.warn(sources[0], "identical-inputs", None, message);
    }
}

/// Adds the input warnings ([`input_warnings`]) to a build's [`Error::Invalid`], which comes
/// before the inputs are all hashed; other errors are returned as they are. An input's size is
/// its stamp's from before the build read it; its digest is known when it was read to its
/// end (`read_digests`), and only such inputs are compared for identical bytes. A file read
/// twice is often what broke a primary key.
fn with_input_warnings(
    err: Error,
    spec: &PipelineSpec,
    inputs: &BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    stamps: &BTreeMap<PathBuf, crate::verbs::build::cache::FileStamp>,
    read_digests: &crate::stages::hash::ReadDigests,
) -> Error {
    let Error::Invalid { violations, total, checked, hints, mut warnings } = err else { return err };
    let known: Vec<InputEntry> = inputs
        .iter()
        .filter_map(|(rel, (path, sources))| {
            let (bytes, sha256) = match read_digests.get(path) {
                Some(d) => (d.bytes, d.sha256),
                None => (stamps.get(path)?.bytes, String::new()),
            };
            Some(InputEntry { path: rel.clone(), bytes, sha256, sources: sources.iter().cloned().collect() })
        })
        .collect();
    let mut report = BuildReport::new(0);
    input_warnings(spec, &known, &mut report);
    warnings.extend(report.warnings);
    Error::Invalid { violations, total, checked, hints, warnings }
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
    before: &BTreeMap<PathBuf, crate::verbs::build::cache::FileStamp>,
    read: &[InputEntry],
) -> Result<()> {
    for (rel, (path, _)) in inputs {
        let now = crate::verbs::build::cache::FileStamp::of(path).ok();
        let what = match (before.get(path), now) {
            (Some(b), Some(n)) if *b == n => continue,
            (Some(b), Some(n)) if b.bytes != n.bytes => {
                format!(
                    "its size went from {} to {} bytes",
                    crate::core::numbers::group_digits(b.bytes),
                    crate::core::numbers::group_digits(n.bytes)
                )
            }
            (Some(b), Some(n)) if b.mtime_ns == n.mtime_ns => {
                let used = read.iter().find(|i| &i.path == rel).map(|i| i.sha256.as_str());
                if used == Some(crate::stages::hash::sha256_file(path)?.sha256.as_str()) {
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

/// The manifest's `created_at`: `SOURCE_DATE_EPOCH` as RFC 3339 UTC, or none.
fn created_at(opts: &BuildOptions) -> Option<String> {
    opts.source_date_epoch
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The manifest's record of the Parquet page cutting: the chunker's settings in bytes
/// (`min_chunk_size`, `max_chunk_size`, `norm_level`), or `false` when pages are cut by size.
fn content_defined_chunking(w: &crate::core::options::WriteOptions) -> serde_json::Value {
    match crate::stages::write::cdc_options(w) {
        Some(c) => {
            json!({"min_chunk_size": c.min_chunk_size, "max_chunk_size": c.max_chunk_size, "norm_level": c.norm_level})
        }
        None => json!(false),
    }
}

fn build_settings(spec: &PipelineSpec, opts: &BuildOptions) -> BTreeMap<String, serde_json::Value> {
    let mut m = BTreeMap::new();
    m.insert("on_invalid".into(), json!(opts.on_invalid));
    m.insert("max_shard_bytes".into(), json!(opts.write.max_shard_bytes));
    m.insert("row_group_bytes".into(), json!(opts.write.row_group_bytes));
    m.insert("row_group_rows".into(), json!(opts.write.row_group_rows));
    m.insert("zstd_level".into(), json!(opts.write.zstd_level));
    m.insert("content_defined_chunking".into(), json!(content_defined_chunking(&opts.write)));
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

/// The folder that holds releases when none is given: `releases/` beside the project's
/// `pipelines/` folder (for `<project>/pipelines/<name>/pipeline.toml`, `<project>/releases`),
/// else `releases/` beside the pipeline's folder (for `<dir>/<name>/pipeline.toml`,
/// `<dir>/releases`: never inside the folder whose raw files the pipeline reads). The same
/// folder whatever the current directory: relative when `pipeline_dir` (the folder holding
/// `pipeline.toml`, as given) names it without `.` or `..` at its end, else absolute.
pub fn default_releases_dir(pipeline_dir: &Path) -> PathBuf {
    /// `releases/` for a pipeline folder whose path ends in a name under a named parent.
    fn beside(dir: &Path) -> Option<PathBuf> {
        use std::path::Component;
        let name = |p: &Path| match p.components().next_back() {
            Some(Component::Normal(n)) => Some(n.to_os_string()),
            _ => None,
        };
        name(dir)?;
        let parent = dir.parent()?;
        if name(parent)? == "pipelines" {
            return Some(parent.parent().unwrap_or(Path::new("")).join("releases"));
        }
        Some(parent.join("releases"))
    }
    beside(pipeline_dir)
        .or_else(|| std::fs::canonicalize(pipeline_dir).ok().and_then(|abs| beside(&abs)))
        .unwrap_or_else(|| PathBuf::from("releases"))
}

/// The files under the pipeline's `raw/` folder (the link `runpack init` makes to the raw
/// outputs) that no source reads, though their names are of formats runpack reads (`.json`,
/// `.jsonl`, `.csv`, `.parquet`, `.yaml`, `.db`, `.eval`, compressed or not): files added
/// after the pipeline was written, which its explicit paths do not match. Files the
/// pipeline's `not_read` globs match are left out on purpose. Relative to the pipeline's
/// folder, sorted; hidden entries are not walked into. Empty when the pipeline has no `raw/`
/// folder. `inputs`: the paths the build read (the manifest's inputs).
pub fn unread_raw_files(spec: &PipelineSpec, inputs: &[crate::stages::release::InputEntry]) -> Vec<String> {
    let raw = spec.dir.join("raw");
    if !raw.is_dir() {
        return Vec::new();
    }
    let read: BTreeSet<&str> = inputs.iter().map(|i| i.path.as_str()).collect();
    // left out on purpose: each candidate is matched against the globs (a link or folder the
    // globs would walk into cannot stop them), or equals an entry as written (a name with
    // `*`, `?` or braces in it)
    let not_read: Vec<String> = spec.def.not_read.as_ref().map(|p| p.list()).unwrap_or_default();
    let left_out = crate::stages::ingest::files::not_read_matcher(&spec.dir, &not_read);
    // runpack's own folders under the raw folder (`runpack init .` in a project): the
    // pipelines and schemas beside this pipeline, and releases
    let pipelines = spec.dir.parent().map(Path::to_path_buf).unwrap_or_default();
    let own: Vec<PathBuf> = [pipelines.clone(), pipelines.parent().map(|p| p.join("schemas")).unwrap_or_default()]
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let runpacks = |e: &walkdir::DirEntry| {
        let p = e.path();
        e.file_type().is_dir()
            && (p.join("pipeline.toml").is_file()
                || crate::stages::release::is_release_folder(p)
                || p.canonicalize().is_ok_and(|c| own.contains(&c)))
    };
    let mut out: Vec<String> = walkdir::WalkDir::new(&raw)
        .follow_links(true)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || (!crate::stages::ingest::files::is_hidden(&e.file_name().to_string_lossy()) && !runpacks(e))
        })
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_type().is_file() && crate::stages::ingest::files::named_readable(&e.file_name().to_string_lossy())
        })
        .filter_map(|e| {
            // named as sources name their files: the parts joined with `/` (a `\` in a name is
            // part of it)
            let parts: Option<Vec<&str>> =
                e.path().strip_prefix(&spec.dir).ok()?.components().map(|c| c.as_os_str().to_str()).collect();
            let rel = parts?.join("/");
            (!read.contains(rel.as_str()) && !left_out(&rel)).then_some(rel)
        })
        .collect();
    out.sort();
    out
}

/// The notes of the files the pipeline's tables leave out though other tables read them
/// (`[[left_out]]`, which `runpack init` writes, with the reason it found then): `table
/// wandb_history leaves out raw/wandb/run-a/run-a.wandb, as pipeline.toml says: <reason>`.
pub fn left_out_notes(spec: &PipelineSpec) -> Vec<String> {
    spec.def
        .left_out
        .iter()
        .map(|l| format!("table {} leaves out {}, as pipeline.toml says: {}", l.table, l.file, l.reason))
        .collect()
}

/// A note per table whose card describes none of some columns (provenance columns left out,
/// which the card describes itself): the columns, the first five and how many more, and where
/// to write what each holds.
pub fn undescribed_notes(spec: &PipelineSpec, manifest: &crate::stages::release::Manifest) -> Vec<String> {
    let mut out = Vec::new();
    for t in &manifest.tables {
        let bare: Vec<&str> = t
            .schema
            .fields
            .iter()
            .filter(|f| !f.name.starts_with("_source_"))
            .filter(|f| f.description.as_deref().is_none_or(|d| d.trim().is_empty()))
            .map(|f| f.name.as_str())
            .collect();
        if bare.is_empty() {
            continue;
        }
        let schema = spec.def.tables.iter().find(|d| d.name == t.name).and_then(|d| d.schema.as_deref());
        let what = match schema {
            Some(path) => format!("write what each holds as its `description` in {path}"),
            None => "give the table a schema (`schema` in its [[table]]) with a `description` for each".to_string(),
        };
        out.push(format!(
            "the card says nothing of column{} {} of table {}: {what}",
            if bare.len() == 1 { "" } else { "s" },
            crate::core::report::first_names(&bare, 5),
            t.name
        ));
    }
    out
}

/// The note naming [`unread_raw_files`] (the first five and how many more), or `None` when
/// every file under `raw/` is read or left out on purpose.
pub fn unread_note(unread: &[String]) -> Option<String> {
    let names: Vec<&str> = unread.iter().map(String::as_str).collect();
    let one = names.len() == 1;
    // a Trainer run's states: each save holds the whole log, so one is read per run
    let states = names.iter().any(|n| n.rsplit('/').next() == Some("trainer_state.json"));
    let trainer = if states {
        " (of a Trainer run's `trainer_state.json` files, add one: its output folder's, else its last \
         checkpoint's, as each save holds the whole log; `runpack init` of the folder names them so)"
    } else {
        ""
    };
    (!names.is_empty()).then(|| {
        format!(
            "{} file{} under raw/ {} read by no source (added since the pipeline was written?): {}; add {} to a \
             source's `path` in pipeline.toml{trainer}",
            names.len(),
            if one { "" } else { "s" },
            if one { "is" } else { "are" },
            crate::core::report::first_names(&names, 5),
            if one { "it" } else { "them" }
        )
    })
}

/// The Trainer states among `unread` (see [`unread_raw_files`]) saved at a later step
/// (`global_step`) than the one a source reads of the same run (its output folder, and the
/// same `max_steps`), or that do not read though their checkpoint's number is past that step
/// (cut short while saving): each save holds the run's whole log as far as it goes, so the
/// tables that read the earlier one lack the steps after it. (source, message) for each, the
/// sources that read the earlier save named. Paths relative to `dir`, the pipeline's folder.
pub fn unread_later_saves(
    dir: &Path,
    unread: &[String],
    inputs: &[crate::stages::release::InputEntry],
) -> Vec<(String, String)> {
    use crate::stages::ingest::trainer::{SaveHead, checkpoint_step, is_checkpoint_folder, output_dir, save_head};
    let state = |p: &str| p.rsplit('/').next() == Some("trainer_state.json");
    let mut out = Vec::new();
    for u in unread.iter().filter(|u| state(u)) {
        let run = output_dir(u);
        let Some(read) = inputs.iter().find(|i| state(&i.path) && output_dir(&i.path) == run) else { continue };
        let Ok(theirs) = save_head(&dir.join(&read.path)) else { continue };
        let Some(their_step) = theirs.global_step else { continue };
        let sources: Vec<&str> = read.sources.iter().map(String::as_str).collect();
        let one = sources.len() == 1;
        let read_by = format!(
            "{} (step {their_step}), which {} {} read",
            read.path,
            if one { "source" } else { "sources" },
            sources.join(", ")
        );
        let what = match save_head(&dir.join(u)) {
            // another run written to the same folder (other planned steps) is no later save
            Ok(mine)
                if mine.max_steps.is_some() && theirs.max_steps.is_some() && mine.max_steps != theirs.max_steps =>
            {
                continue;
            }
            Ok(SaveHead { global_step: Some(mine), .. }) if mine > their_step => format!(
                "{u} is a save of the run in {run} at step {mine}, later than {read_by}; no source reads it (saved \
                 since the pipeline was written?): the tables lack the steps logged after {their_step}; name it in \
                 the {} `path` in place of the other (`runpack init` of the folder does so)",
                if one { "source's" } else { "sources'" },
            ),
            // cut short: later by its checkpoint's number, or the output folder's own state
            // beside a checkpoint's read
            Err(e)
                if folder(u).and_then(checkpoint_step).is_some_and(|n| n > their_step)
                    || (folder(&read.path).is_some_and(is_checkpoint_folder)
                        && !folder(u).is_some_and(is_checkpoint_folder)) =>
            {
                format!(
                    "{u}, a save of the run in {run} no source reads, does not read as a Trainer state ({e}; cut \
                     short while saving?), and may be later than {read_by}: the tables stop at step {their_step}"
                )
            }
            _ => continue,
        };
        out.push((sources.first().copied().unwrap_or_default().to_string(), what));
    }
    out
}

/// The name of the folder a relative path's file is in (`a/checkpoint-30/x.json` →
/// `checkpoint-30`).
fn folder(p: &str) -> Option<&str> {
    p.rsplit('/').nth(1)
}

/// Where the release of `spec` at `version` goes.
pub fn release_path(releases_dir: &Path, spec: &PipelineSpec, version: &str) -> PathBuf {
    releases_dir.join(&spec.def.name).join(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unread_note_says_how_to_add_a_trainer_run() {
        let plain = unread_note(&["raw/b/metrics.jsonl".into()]).unwrap();
        assert!(plain.ends_with("add it to a source's `path` in pipeline.toml"), "{plain}");
        let states =
            unread_note(&["raw/c/checkpoint-10/trainer_state.json".into(), "raw/c/trainer_state.json".into()]).unwrap();
        assert!(
            states.contains("of a Trainer run's `trainer_state.json` files, add one: its output folder's"),
            "{states}"
        );
        assert_eq!(unread_note(&[]), None);
    }

    /// The steps a [`Recorder`] saw, each with its unit, total and the sum of its advances.
    fn steps_of(events: &[crate::core::progress::Event]) -> Vec<(String, Unit, Option<u64>, u64)> {
        use crate::core::progress::Event;
        let mut out: Vec<(String, Unit, Option<u64>, u64)> = Vec::new();
        let mut open = false;
        for e in events {
            match e {
                Event::Start(step, unit, total) => {
                    out.push((step.clone(), *unit, *total, 0));
                    open = true;
                }
                Event::Advance(n) => {
                    assert!(open, "an advance outside a step: {events:?}");
                    out.last_mut().expect("a step").3 += n;
                }
                Event::Finish => open = false,
                Event::Rename(_) => assert!(open, "a rename outside a step: {events:?}"),
            }
        }
        assert!(!open, "a step never finished: {events:?}");
        out
    }

    #[test]
    fn progress_names_the_phases_in_order_and_the_bytes_read_add_up_to_the_inputs() {
        use crate::core::progress::{Event, Recorder};
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pipelines/p");
        std::fs::create_dir_all(dir.join("raw")).unwrap();
        // source `a` is read by two tables (staged first), `b` by one (streamed into it)
        let mut a = String::new();
        for i in 0..3000 {
            a.push_str(&format!("{{\"id\": {}, \"x\": {i}.5}}\n", 3000 - i));
        }
        std::fs::write(dir.join("raw/a1.jsonl"), &a).unwrap();
        std::fs::write(dir.join("raw/a2.jsonl"), "{\"id\": 0, \"x\": 1.0}\n").unwrap();
        std::fs::write(dir.join("raw/b.jsonl"), "{\"k\": \"x\"}\n{\"k\": \"y\"}\n").unwrap();
        std::fs::write(
            dir.join("pipeline.toml"),
            "name = \"p\"\n\
             [[source]]\nname = \"a\"\npath = \"raw/a*.jsonl\"\nformat = \"jsonl\"\n\
             [[source]]\nname = \"b\"\npath = \"raw/b.jsonl\"\nformat = \"jsonl\"\nschema = \"b.json\"\n\
             [[table]]\nname = \"ids\"\nquery = \"SELECT id, x FROM a\"\n\
             [[table]]\nname = \"big\"\nquery = \"SELECT id FROM a WHERE x > 10\"\n\
             [[table]]\nname = \"ks\"\nquery = \"SELECT k FROM b\"\n",
        )
        .unwrap();
        std::fs::write(dir.join("b.json"), r#"{"fields": [{"name": "k", "type": "string"}]}"#).unwrap();
        let size = |f: &str| std::fs::metadata(dir.join("raw").join(f)).unwrap().len();
        let spec = PipelineSpec::load(&dir).unwrap();
        let opts = BuildOptions { releases_dir: tmp.path().join("releases"), ..BuildOptions::default() };
        let rec = Recorder::default();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let outcome = rt.block_on(build(&spec, &opts, &rec)).unwrap();
        let events = rec.events();
        let steps = steps_of(&events);
        let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "reading sources",
                "running table ids's SQL",
                "writing table ids",
                "running table big's SQL",
                "writing table big",
                "reading source b into table ks",
                "writing table ks",
                "hashing",
            ],
            "{events:?}"
        );
        // the sources' input bytes, known before reading, and read in full
        assert_eq!(steps[0].1, Unit::Bytes);
        assert_eq!(steps[0].2, Some(size("a1.jsonl") + size("a2.jsonl")));
        assert_eq!(steps[0].3, size("a1.jsonl") + size("a2.jsonl"));
        assert!(events.contains(&Event::Rename("reading source a".into())), "{events:?}");
        assert_eq!((steps[5].1, steps[5].2, steps[5].3), (Unit::Bytes, Some(size("b.jsonl")), size("b.jsonl")));
        // the rows written, out of those the SQL returned
        assert_eq!((steps[1].1, steps[1].3), (Unit::Rows, 3001));
        assert_eq!((steps[2].1, steps[2].2, steps[2].3), (Unit::Rows, Some(3001), 3001));
        assert_eq!((steps[6].2, steps[6].3), (Some(2), 2));
        let rows = |t: &str| outcome.manifest.table(t).unwrap().rows;
        assert_eq!((rows("ids"), rows("big"), rows("ks")), (3001, 2990, 2));

        // verify: the bytes hashed out of the release's, then the rows read out of its rows
        let rec = Recorder::default();
        let rep = crate::verbs::verify::run_with_progress(&outcome.release_dir, true, &rec).unwrap();
        assert!(rep.ok(), "{:?}", rep.problems);
        let events = rec.events();
        let steps = steps_of(&events);
        let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(names, ["hashing", "reading rows"], "{events:?}");
        let hashed: u64 = outcome.manifest.files.iter().map(|f| f.bytes).sum();
        assert_eq!((steps[0].1, steps[0].2, steps[0].3), (Unit::Bytes, Some(hashed), hashed));
        assert_eq!((steps[1].1, steps[1].2, steps[1].3), (Unit::Rows, Some(3001 + 2990 + 2), 3001 + 2990 + 2));
        assert!(events.contains(&Event::Rename("reading rows of table big".into())), "{events:?}");
    }

    #[test]
    fn releases_go_beside_the_pipelines_folder() {
        let d = |p: &str| default_releases_dir(Path::new(p));
        assert_eq!(d("pipelines/demo"), PathBuf::from("releases"));
        assert_eq!(d("../proj/pipelines/demo"), PathBuf::from("../proj/releases"));
        assert_eq!(d("/srv/proj/pipelines/demo"), PathBuf::from("/srv/proj/releases"));
        // not in a pipelines/ folder: beside the pipeline's own folder
        assert_eq!(d("work/demo"), PathBuf::from("work/releases"));
        assert_eq!(d("/srv/demo"), PathBuf::from("/srv/releases"));
        // `.`, `..` or a bare name: resolved from the absolute path
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("proj/pipelines/demo");
        std::fs::create_dir_all(&dir).unwrap();
        let abs = std::fs::canonicalize(tmp.path()).unwrap();
        assert_eq!(d(&format!("{}/.", dir.display())), abs.join("proj/releases"));
        assert_eq!(d("./pipelines/demo/"), PathBuf::from("./releases"));
    }

    #[test]
    fn an_input_changed_while_the_build_read_it_is_refused() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        std::fs::write(&a, "{\"step\":1}\n").unwrap();
        std::fs::write(&b, "{\"step\":1}\n").unwrap();
        let stamp = |p: &Path| crate::verbs::build::cache::FileStamp::of(p).unwrap();
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
            sha256: crate::stages::hash::sha256_bytes(text),
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

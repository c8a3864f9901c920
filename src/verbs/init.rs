//! The `init` verb: a folder of raw outputs → a pipeline that builds.
//!
//! In: a folder (Tinker and tinker-cookbook logs, W&B run folders and exports, trackio
//! projects, Inspect, lm-eval and other evaluation outputs, plain JSON, JSON Lines, YAML, CSV
//! and Parquet files, in any layout). Out: `pipelines/<name>/pipeline.toml`,
//! a link `pipelines/<name>/raw` to the folder, one Frictionless Table Schema per table under
//! `schemas/<name>/` (beside the pipelines folder), and an [`InitOutcome`] saying what was
//! found, what was written and which files could not be read and why.
//!
//! Steps:
//! 1. Every file under the folder is looked at (hidden files and folders, `.*`, are skipped):
//!    its format is told from its name and its first record (a JSON document's outline is
//!    read without holding its values). The formats are those of [`crate::core::spec::Format`].
//! 2. Files become sources: the Tinker and evaluation formats by their file name pattern, with
//!    a `{run}`, `{bench}`, `{ckpt}` or `{checkpoint}` capture where the path names the run;
//!    every W&B file one source per standard table (`runs`, `history`, `system`, `histograms`);
//!    a file that several formats read (a trackio database, an Inspect log, rollout summaries)
//!    one source per format, shared with the files its reader takes together (a database and
//!    its fragments, read once by `log_id`);
//!    plain files of one folder and format whose columns mostly agree (at least half of the
//!    keys shared) one source; a JSON or YAML document's arrays of records each their own source
//!    (`record_path`), the rest of the document another.
//! 3. Each source is read in full, as `build` reads it ([`crate::stages::ingest::stream`]): types are
//!    inferred from all of the data, never a sample. A column whose values have more than one
//!    type, or none, is declared `any` (JSON text; `string` in CSV) with a `[[source.field]]`;
//!    a file that still breaks a rule (a torn line, a bad shape) is left out and named with
//!    the first problem found in it.
//! 4. Each source gets one table that selects its columns (`SELECT … FROM <source>`), with a
//!    schema holding the types the build would infer, and a primary key where the format makes
//!    one evident (run and step and metric for Tinker metrics, the run id for W&B runs, …)
//!    and the data holds no null and no duplicate of it.
//!
//! Nothing is written until every source has been read, and nothing that exists is
//! overwritten: each file is written beside its place and then linked to its name, which fails
//! when the name is taken (the files written before are removed again).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::core::error::{Error, Result};
use crate::core::progress::{Progress, Unit};
use crate::core::schema::TableSchema;
use crate::core::spec::{Format, LeftOut, PipelineDef, PipelineSpec};
use crate::stages::ingest::files::InputFile;
use crate::stages::ingest::files::is_hidden;
use crate::stages::ingest::{IngestOptions, OnInvalid};

/// What `init` is asked to do.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// The folder of raw outputs.
    pub folder: PathBuf,
    /// Pipeline (and release) name; default: the folder's name, made a valid release name.
    pub name: Option<String>,
    /// Folder of pipelines (`pipelines`); the schemas go to `schemas/` beside it.
    pub pipelines_dir: PathBuf,
}

/// What `init` found, wrote and could not read.
#[derive(Debug, Clone, Serialize)]
pub struct InitOutcome {
    /// The folder read, as given.
    pub folder: String,
    /// The pipeline's name.
    pub name: String,
    /// The pipeline folder written (`pipelines/<name>`).
    pub pipeline: String,
    /// Files looked at: how many, and how many of each format (`json`, `tinker-metrics`,
    /// `wandb`, …; a file read by several formats, such as a trackio database, counts under
    /// each; files that could not be read are not counted here).
    pub found: Found,
    /// The sources written, in pipeline order.
    pub sources: Vec<SourceOut>,
    /// The tables written, in pipeline order.
    pub tables: Vec<TableOut>,
    /// Files not read, each with the reason, sorted by path.
    pub not_read: Vec<NotRead>,
    /// Sources that were not written although their files were read (a W&B table without
    /// rows), each with the reason.
    pub notes: Vec<String>,
    /// Paths written, in the order they were written.
    pub written: Vec<String>,
    /// What a person still has to write in `pipeline.toml` (the `TODO`s).
    pub todo: Vec<String>,
}

/// The files `init` looked at.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// Files under the folder (hidden ones not counted).
    pub files: usize,
    /// Files read, by format name.
    pub formats: BTreeMap<String, usize>,
    /// Hidden files and folders (`.*`) skipped.
    pub hidden_skipped: usize,
    /// Those files and folders, relative to the folder, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
}

/// One source of the written pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct SourceOut {
    /// Source name.
    pub name: String,
    /// Format name (`tinker-metrics`, `json`, …).
    pub format: String,
    /// The path patterns, relative to the pipeline folder.
    pub path: Vec<String>,
    /// `record_path` of a JSON document, when not the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_path: Option<String>,
    /// `delimiter` of a CSV source whose cells are not separated by commas (`"\t"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// `comment` of a CSV source whose files have comment lines (`"#"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `header_row` of a CSV source whose header is below notes and starts with `#`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_row: Option<u64>,
    /// The standard W&B table, for `format = "wandb"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wandb_table: Option<String>,
    /// The files read, relative to the folder.
    pub files: Vec<String>,
    /// Columns declared `any` (or `string`), with why.
    pub declared: Vec<Declared>,
}

/// A column given a type by a `[[source.field]]`.
#[derive(Debug, Clone, Serialize)]
pub struct Declared {
    /// Column name.
    pub column: String,
    /// Table Schema type given (`any`, `string`).
    #[serde(rename = "type")]
    pub field_type: String,
    /// Why: the first problem found with the inferred type.
    pub reason: String,
    /// The texts read as null in the column (`missingValues`): `"n/a"` among numbers.
    #[serde(rename = "missingValues", skip_serializing_if = "Vec::is_empty")]
    pub missing_values: Vec<String>,
    /// Where the first of `missing_values` was found (`results.csv:2`), which `reason` names.
    #[serde(skip)]
    pub missing_at: String,
}

/// One table of the written pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct TableOut {
    /// Table name.
    pub name: String,
    /// The source it selects from.
    pub source: String,
    /// Rows it will have (all of the source's rows).
    pub rows: u64,
    /// Its columns (provenance and captures included).
    pub columns: Vec<String>,
    /// Primary key, when one was evident and holds.
    pub primary_key: Vec<String>,
    /// `keep-last` when the key holds but for rows a resumed run logged again (the table
    /// keeps the last row of each key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_duplicate_key: Option<String>,
    /// The schema file, relative to the current folder.
    pub schema: String,
    /// Files of its source that it leaves out for what reading them found, each with the
    /// problems that left it out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<NotRead>,
}

/// A file `init` could not read.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct NotRead {
    /// Path relative to the folder.
    pub file: String,
    /// Why (the first problem, and how many more there are).
    pub reason: String,
    /// Every problem found in the file, when there is more than one (as many as the check
    /// lists: `max_errors`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Rows of one file (of a source, when the key does not start with the path's captures) past
/// which a candidate primary key is not checked: the check holds a 16-byte hash of each row's
/// key in memory (about 100 MiB at this count). Such a table gets no key.
pub const KEY_CHECK_MAX_ROWS: u64 = 4_000_000;

/// The reason given for a document's array of records declared `any` in the source of the rest
/// of the document (the table leaves it out: another source reads its records).
pub const OWN_SOURCE: &str = "an array of records read by a source of its own";

/// Largest first line of a JSON Lines file read to tell its format, in bytes.
const PEEK_LINE_BYTES: u64 = 64 << 20;

/// Lines of a JSON Lines file looked at for a first good record when the first is bad.
const PEEK_BAD_LINES: u64 = 100;

/// The largest number of reads of one source while its columns' types are settled (each read
/// declares at least one column or leaves out at least one file).
const MAX_ROUNDS: usize = 200;

/// A column of numbers or booleans that holds values of another type (`"score": "error:
/// timeout"` among scores) keeps its type when those values' records are at most one in this
/// many of each file's records: they are set aside with `on_invalid = "reject"`. More, and the
/// column keeps every value as JSON text (`any`).
const RARE_OTHER_TYPE: u64 = 10;

/// What [`look_at_files`] found: each file looked at, those that cannot be read, notes (the
/// folders left out), and the number of files.
struct Walked {
    looked: Vec<Looked>,
    not_read: Vec<NotRead>,
    notes: Vec<String>,
    total: usize,
}

/// Walks the raw folder (hidden entries, runpack's own pipelines and schemas and releases
/// left out) and looks at each file to tell its format.
fn look_at_files(raw: &Path, opts: &InitOptions, name: &str) -> Walked {
    let mut not_read: Vec<NotRead> = Vec::new();
    let mut looked: Vec<Looked> = Vec::new();
    let mut total = 0usize;
    // runpack's own folders inside the one read (`runpack init .` in a project) are not raw data
    let schemas_root = schemas_dir(&opts.pipelines_dir, name).parent().map(Path::to_path_buf).unwrap_or_default();
    let own: Vec<PathBuf> =
        [opts.pipelines_dir.clone(), schemas_root].iter().filter_map(|p| p.canonicalize().ok()).collect();
    let mut notes = Vec::new();
    let walk = walkdir::WalkDir::new(raw).follow_links(true).sort_by_file_name().into_iter();
    let mut walk = walk.filter_entry(|e| e.depth() == 0 || !is_hidden(&e.file_name().to_string_lossy()));
    while let Some(entry) = walk.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                // (a dangling link, a link loop: found, and not read)
                total += 1;
                let file = e.path().map(|p| rel_of(raw, p)).unwrap_or_default();
                not_read.push(NotRead { problems: Vec::new(), file, reason: format!("cannot be listed: {e}") });
                continue;
            }
        };
        if entry.file_type().is_dir() {
            let p = entry.path();
            let why = if own.iter().any(|o| p.canonicalize().is_ok_and(|c| &c == o)) {
                Some("runpack's pipelines or schemas")
            } else if entry.depth() > 0 && crate::stages::release::is_release_folder(p) {
                Some("a runpack release")
            } else {
                None
            };
            if let Some(why) = why {
                notes.push(format!("{}/ not looked at: {why}", rel_of(raw, p)));
                walk.skip_current_dir();
            }
            continue;
        }
        total += 1;
        let rel = rel_of(raw, entry.path());
        if !entry.file_type().is_file() {
            not_read.push(NotRead { problems: Vec::new(), file: rel, reason: "not a regular file".into() });
            continue;
        }
        if !crate::stages::ingest::files::is_utf8_below(raw, entry.path()) {
            let reason = "its path is not UTF-8 (shown with \\x escapes); a release names a file by its path as \
                          text: rename it";
            let file = crate::stages::ingest::files::escaped_below(raw, entry.path());
            not_read.push(NotRead { problems: Vec::new(), file, reason: reason.into() });
            continue;
        }
        match look(&rel, entry.path()) {
            Ok(kind) => looked.push(Looked { rel, path: entry.path().to_path_buf(), kind }),
            Err(reason) => not_read.push(NotRead { problems: Vec::new(), file: rel, reason }),
        }
    }
    Walked { looked, not_read, notes, total }
}

/// Why a compressed copy of a file read is left out.
const COMPRESSED_COPY: &str = "the bytes of";

/// Of a file there both plain and compressed (`log.jsonl` beside `log.jsonl.gz`), the compressed
/// copy when it holds the same bytes once decompressed: left out (in `not_read`, with why), as
/// reading both would give each row twice. Copies that differ are both read, and a note says so.
fn compressed_copies(looked: Vec<Looked>, not_read: &mut Vec<NotRead>, notes: &mut Vec<String>) -> Vec<Looked> {
    // (of the bytes a reader of the file gives, decompressed)
    let digest = |l: &Looked| {
        let input = InputFile { rel: l.rel.clone(), path: l.path.clone(), captures: vec![] };
        let r = crate::stages::ingest::files::open(&input).ok()?;
        crate::stages::hash::sha256_reader(r).ok().map(|d| d.sha256)
    };
    let plain: BTreeMap<&str, &Looked> =
        looked.iter().filter(|l| strip_compression(&l.rel) == l.rel).map(|l| (l.rel.as_str(), l)).collect();
    let mut copies: BTreeSet<String> = BTreeSet::new();
    for l in looked.iter().filter(|l| strip_compression(&l.rel) != l.rel) {
        let Some(p) = plain.get(strip_compression(&l.rel)) else { continue };
        if p.kind.format() != l.kind.format() {
            continue;
        }
        match (digest(p), digest(l)) {
            (Some(a), Some(b)) if a == b => {
                copies.insert(l.rel.clone());
                not_read.push(NotRead {
                    problems: Vec::new(),
                    file: l.rel.clone(),
                    reason: format!("{COMPRESSED_COPY} {} beside it, compressed: read there once", p.rel),
                });
            }
            _ => notes.push(format!(
                "{} and {} are one file's name plain and compressed, but hold other records: each is read (a copy \
                 left behind when a log was compressed? remove the one you do not want)",
                p.rel, l.rel
            )),
        }
    }
    looked.into_iter().filter(|l| !copies.contains(&l.rel)).collect()
}

/// A note for each set of files read with the same bytes (a file copied beside itself): each
/// is read as a file of its own, and may make a table of its own. Sizes first; only files of
/// a size shared are hashed.
fn same_bytes(looked: &[&Looked]) -> Vec<String> {
    let mut by_size: BTreeMap<u64, Vec<&Looked>> = BTreeMap::new();
    for &l in looked {
        if let Ok(m) = std::fs::metadata(&l.path)
            && m.len() > 0
        {
            by_size.entry(m.len()).or_default().push(l);
        }
    }
    let mut by_digest: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for files in by_size.values().filter(|f| f.len() > 1) {
        for l in files {
            if let Ok(d) = crate::stages::hash::sha256_file(&l.path) {
                by_digest.entry(d.sha256).or_default().push(&l.rel);
            }
        }
    }
    let mut notes: Vec<String> = by_digest
        .values()
        .filter(|f| f.len() > 1)
        .map(|f| {
            format!(
                "{} have the same bytes: each is read as a file of its own, its rows each time (a copy or a \
                 link you do not want read: remove it; runs that wrote the same bytes: nothing to do)",
                f.join(", ")
            )
        })
        .collect();
    notes.sort();
    notes
}

/// Reads each planned source in full, settling its columns' types and key; sources without
/// rows are noted (their files not read), the others returned with what their reads found.
fn read_sources(
    raw: &Path,
    mut plans: Vec<SourcePlan>,
    looked: &[Looked],
    not_read: &mut Vec<NotRead>,
    notes: &mut Vec<String>,
    left: &mut Vec<LeftOut>,
    progress: &dyn Progress,
) -> Result<Vec<(SourcePlan, Trial)>> {
    let work = tempfile::Builder::new().prefix("runpack-init-").tempdir().map_err(|e| Error::io("temp folder", e))?;
    let mut settled: Vec<(SourcePlan, Trial)> = Vec::new();
    // arrays of records whose own source failed: (record_path, files, table, a file, why)
    let mut lost_arrays: Vec<(String, Vec<String>, String, String, String)> = Vec::new();
    for plan in plans.drain(..) {
        progress.start(&format!("reading {} ({} files)", plan.base, plan.files.len()), Unit::None, None);
        let (base, format) = (plan.base.clone(), plan.format);
        let (record_path, files) = (plan.record_path.clone(), plan.files.clone());
        let before = not_read.len();
        let outcome = settle(raw, plan, work.path(), not_read);
        progress.finish();
        match outcome {
            // a Tinker metrics log with rows logged without a step (tinker-cookbook's
            // `log_summary`: running totals, restated at each call): the training log and the
            // totals are a table each, each with its key
            Settled::Ok(plan, trial) if trial.stepless > 0 && trial.stepless < trial.rows => {
                let mut with = plan.clone();
                with.steps = StepRows::With;
                let mut without = plan.clone();
                without.steps = StepRows::Without;
                without.base = format!("{}_summary", plan.base);
                without.keys = vec![vec!["metric".into()]];
                without.description = "Values a run logged without a step, in long form (tinker-cookbook's \
                                       `log_summary`: running totals such as token counts and cost, each call \
                                       restating them); from {files}."
                    .into();
                let both = [with, without].into_iter().map(|p| read_source(raw, &p, work.path()).map(|t| (p, t)));
                match both.collect::<Result<Vec<_>>>() {
                    Ok(split) if split.iter().all(|(_, t)| t.is_some()) => {
                        settled.extend(split.into_iter().map(|(p, t)| (p, t.expect("checked"))))
                    }
                    _ => settled.push((plan, *trial)),
                }
            }
            Settled::Ok(plan, trial) => settled.push((plan, *trial)),
            Settled::Empty(plan) if plan.format == Format::Wandb => notes.push(format!(
                "W&B table {}: no rows in the W&B files, so no table",
                plan.wandb_table.unwrap_or_default()
            )),
            Settled::Empty(plan) => {
                // a file read by several tables (a trackio database without system metrics): said
                if looked.iter().any(|l| plan.files.contains(&l.rel) && matches!(l.kind, Kind::Many(..))) {
                    notes.push(format!(
                        "{} ({}): no rows in {}, so no table",
                        plan.base,
                        plan.format.name(),
                        plan.files.join(", ")
                    ));
                }
                for f in &plan.files {
                    not_read.push(NotRead { problems: Vec::new(), file: f.clone(), reason: "holds no record".into() });
                }
            }
            Settled::Failed => {
                // an array of records of documents whose own source cannot be read: the
                // source of the rest of each document keeps it, as JSON text (below)
                if let (Some(array), Some(n)) = (&record_path, not_read[before..].first()) {
                    lost_arrays.push((array.clone(), files.clone(), base.clone(), n.file.clone(), n.reason.clone()));
                }
                // a file that another table reads is not in the not-read list: the table
                // left out is said with its reason (W&B files are read by every standard table)
                for n in &not_read[before..] {
                    // (a document split into the rest and its arrays of records is read by each)
                    let split = |k: &Kind| {
                        matches!(k, Kind::Json(Outline::Object(_)) | Kind::Yaml(_, Some(Outline::Object(_))))
                    };
                    if looked
                        .iter()
                        .any(|l| l.rel == n.file && (matches!(l.kind, Kind::Many(..) | Kind::Wandb) || split(&l.kind)))
                    {
                        notes.push(format!(
                            "{base} ({}): no table, as {} cannot be read so: {}",
                            format.name(),
                            n.file,
                            n.reason
                        ));
                        left.push(LeftOut {
                            table: base.clone(),
                            file: n.file.clone(),
                            reason: format!("no table, as it cannot be read so ({}): {}", format.name(), n.reason),
                        });
                    }
                }
            }
        }
    }
    // the rest of those documents selects the array, as JSON text, and says why: never lost
    for (array, files, base, file, why) in lost_arrays {
        let named = |h: &String| format!("/{}", crate::stages::ingest::path::pointer_token(h)) == array;
        let rest = settled.iter_mut().find(|(p, _)| {
            p.record_path.is_none() && p.hidden.iter().any(named) && p.files.iter().any(|f| files.contains(f))
        });
        let Some((plan, _)) = rest else { continue };
        let Some(name) = plan.hidden.iter().find(|h| named(h)).cloned() else { continue };
        plan.hidden.retain(|h| h != &name);
        // the description names the arrays left to tables of their own
        if let Some(i) = plan.description.find(", one row per file, without the ") {
            let rest = match plan.hidden.as_slice() {
                [] => String::new(),
                hidden => format!(
                    ", without the {} {} (each a table of its own)",
                    if hidden.len() == 1 { "array" } else { "arrays" },
                    hidden.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
                ),
            };
            plan.description = format!("{}, one row per file{rest}.", &plan.description[..i]);
        }
        let reason =
            format!("an array of records kept as JSON text: a table of its own cannot read it ({file}: {why})");
        for d in plan.fields.iter_mut().filter(|d| d.column == name) {
            d.reason = reason.clone();
        }
        notes.push(format!(
            "{base} ({}): no table, as {file} cannot be read so: {why}; table {} keeps `{name}` as JSON text",
            plan.format.name(),
            plan.base
        ));
    }
    Ok(settled)
}

/// The number of files read of each format (a file read by several formats' tables counted
/// under each).
fn formats_read(
    looked: &[Looked],
    settled: &[(SourcePlan, Trial)],
    used: &BTreeSet<String>,
) -> BTreeMap<String, usize> {
    let mut formats: BTreeMap<String, usize> = BTreeMap::new();
    for l in looked {
        match &l.kind {
            // counted under each format whose table reads it
            Kind::Many(fs, _) => {
                for f in fs.iter() {
                    if settled.iter().any(|(p, _)| p.format == *f && p.files.contains(&l.rel)) {
                        *formats.entry(f.name().to_string()).or_default() += 1;
                    }
                }
            }
            k if used.contains(&l.rel) => *formats.entry(k.format().name().to_string()).or_default() += 1,
            _ => {}
        }
    }

    formats
}

/// Looks at `opts.folder` and writes a pipeline for it (see the module documentation).
///
/// Errors: [`Error::Refused`] when the folder is no folder, the name is no release name, a
/// file to be written exists already, or no file could be read; [`Error::Io`] when a file
/// cannot be written (those written before are removed).
pub fn init(opts: &InitOptions, progress: &dyn Progress) -> Result<InitOutcome> {
    let folder = &opts.folder;
    let not_there = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => Error::not_found(folder.display()),
        _ => Error::io(folder, e),
    };
    let meta = std::fs::metadata(folder).map_err(not_there)?;
    if !meta.is_dir() {
        return Err(Error::Refused(format!(
            "{}: not a folder; `runpack init` reads a folder of raw outputs",
            folder.display()
        )));
    }
    let raw = folder.canonicalize().map_err(not_there)?;
    let name = match &opts.name {
        Some(n) => check_release_name(n)?,
        None => release_name_of(&raw),
    };
    let pipeline_dir = opts.pipelines_dir.join(&name);
    let toml_path = pipeline_dir.join("pipeline.toml");
    if toml_path.symlink_metadata().is_ok() {
        return Err(exists(&toml_path));
    }

    // 1. look at every file
    progress.start("looking at the files", Unit::None, None);
    let Walked { looked, mut not_read, mut notes, total } = look_at_files(&raw, opts, &name);
    let looked = compressed_copies(looked, &mut not_read, &mut notes);
    progress.finish();
    // hidden entries are not walked into: each counts once (a `.git` folder is one)
    let hidden = hidden_entries(&raw);

    // 2. sources
    let plans = plan_sources(&raw, &looked, &mut not_read)?;

    // 3. read each source in full
    // files a table leaves out though others read them, for pipeline.toml's `[[left_out]]`
    let mut left: Vec<LeftOut> = Vec::new();
    let mut settled = read_sources(&raw, plans, &looked, &mut not_read, &mut notes, &mut left, progress)?;
    // a W&B file is read by every standard table: one that no table kept is not read
    let used: BTreeSet<String> = settled.iter().flat_map(|(p, _)| p.files.iter().cloned()).collect();
    let mut seen_not_read: BTreeSet<String> = BTreeSet::new();
    not_read.retain(|n| !used.contains(&n.file) && seen_not_read.insert(n.file.clone()));
    not_read.sort();
    // a file a source left out but another reads cannot be left out by `not_read`: that
    // source names its files instead of a pattern that matches it
    for (plan, _) in settled.iter_mut().filter(|(p, _)| p.skipped.iter().any(|f| used.contains(f))) {
        (plan.patterns, plan.skipped) = exact_patterns_leaving_out(&raw, &plan.wanted, &plan.files, &not_read);
    }
    // copies among the files read (a W&B `latest-run` link is left out, not read twice)
    let read: Vec<&Looked> = looked.iter().filter(|l| used.contains(&l.rel)).collect();
    notes.extend(same_bytes(&read));
    if settled.is_empty() {
        // nothing is printed beside this error: each file's problems are listed here (the
        // first few), rather than pointed at in `--format json`'s `problems`
        let mut reasons: Vec<String> = Vec::new();
        for n in not_read.iter().take(10) {
            let Some((first, rest)) = n.problems.split_first() else {
                reasons.push(format!("  {}: {}", n.file, n.reason));
                continue;
            };
            reasons.push(format!("  {}: {first}", n.file));
            reasons.extend(rest.iter().take(4).map(|p| format!("    and {p}")));
            if rest.len() > 4 {
                reasons.push(format!("    and {} more problems", rest.len() - 4));
            }
        }
        return Err(Error::Refused(
            format!(
                "{}: no file runpack can read was found ({} file{}{}){}",
                folder.display(),
                total,
                if total == 1 { "" } else { "s" },
                if reasons.is_empty() { String::new() } else { format!("; not read:\n{}", reasons.join("\n")) },
                if not_read.len() > 10 { format!("\n  … and {} more", not_read.len() - 10) } else { String::new() },
            ) + &notes.iter().map(|n| format!("\nnote: {n}")).collect::<String>(),
        ));
    }
    let formats = formats_read(&looked, &settled, &used);

    // 4. names, tables, schemas
    let mut names = Names::default();
    let mut tables: Vec<TablePlan> = Vec::new();
    for (plan, trial) in settled {
        // the first folder of the source's path, when it names no capture
        let folder = plan
            .patterns
            .first()
            .and_then(|p| p.split_once('/'))
            .map(|(f, _)| f)
            .filter(|f| !f.contains(['{', '*', '?', '[']));
        let table = names.take(&plan.base, folder);
        // a file of the table's source left out for what reading it found (or that another
        // table reads): said, and a `[[left_out]]` entry, so that each build and the card say
        // what the table lacks
        for n in &plan.left_out {
            let mend = if plan.skipped.contains(&n.file) {
                "the pipeline's `not_read` lists it: take it out of there once mended"
            } else {
                "not in the source's `path`: add it there once mended"
            };
            let all = if n.problems.is_empty() {
                ""
            } else {
                "; `--format json` lists every problem under the table's `left_out`"
            };
            notes.push(format!("table {table} leaves out {} ({mend}): {}{all}", n.file, n.reason));
            left.push(LeftOut { table: table.clone(), file: n.file.clone(), reason: n.reason.clone() });
        }
        // a file the source's `path` matches that init could not read at all (a database cut
        // short): the pipeline's `not_read` leaves it out, and the table says so too
        for f in plan.skipped.iter().filter(|f| !plan.left_out.iter().any(|n| &n.file == *f)) {
            // (a compressed copy of a file read lacks nothing)
            if let Some(n) = not_read.iter().find(|n| &n.file == f && !n.reason.starts_with(COMPRESSED_COPY)) {
                let reason = n.reason.clone();
                notes.push(format!(
                    "table {table} leaves out {f} (the pipeline's `not_read` lists it: take it out of there once \
                     mended): {reason}"
                ));
                left.push(LeftOut { table: table.clone(), file: f.clone(), reason });
            }
        }
        // a run's Trainer state that could not be read at all (cut short while saved): its
        // run's log is read from an earlier save, and the table lacks what it held after
        if plan.format == Format::TrainerState {
            use crate::stages::ingest::trainer::output_dir;
            let runs: BTreeMap<String, &String> = plan.files.iter().map(|f| (output_dir(f), f)).collect();
            for n in not_read.iter() {
                let state = n.file.rsplit('/').next() == Some("trainer_state.json");
                let by_choice = n.reason.starts_with(EARLIER_SAVE);
                // a branch the run went back from, or an earlier run written over by another:
                // what they logged is in no table, said on the card
                let abandoned = n.reason.starts_with(ABANDONED) || n.reason.starts_with(OTHER_RUN);
                if let Some(read) = runs.get(&output_dir(&n.file)).filter(|_| state && !by_choice) {
                    let reason = if abandoned {
                        n.reason.clone()
                    } else {
                        format!("{}; its run's log is read from {read}, saved earlier", n.reason)
                    };
                    notes.push(format!("table {table} leaves out {}: {reason}", n.file));
                    left.push(LeftOut { table: table.clone(), file: n.file.clone(), reason });
                }
            }
        }
        if trial.key.is_empty() && trial.key_unchecked {
            notes.push(format!(
                "table {table}: no primary key, as a key is checked over at most {} rows (of one file, or of the \
                 source) and this table has more; declare `primaryKey` in its schema if you know one (each build \
                 checks it)",
                crate::core::numbers::group_digits(KEY_CHECK_MAX_ROWS)
            ));
        }
        if let Some(why) = &trial.key_note {
            // an Inspect log without results (a run that failed) gives a row without scorer
            let how = if plan.format == Format::InspectEvals && why.contains("is null at") {
                " (a log without results, of a run that failed, has none: `WHERE \"status\" = 'success'` in the \
                 table's SQL keeps such logs out)"
            } else {
                ""
            };
            if trial.report_repeats.is_some() {
                notes.push(format!(
                    "table {table}: no primary key, so rows are not checked for duplicates: {why}; if a row should be \
                     one per these columns, uncomment its `report_repeats` (each build then counts and names the rows \
                     that repeat them, in the card too), or settle them and declare `primaryKey` in its schema"
                ));
            } else {
                notes.push(format!(
                    "table {table}: no primary key, so rows are not checked for duplicates: {why}; declare \
                     `primaryKey` in its schema once the table's SQL makes one hold{how}"
                ));
            }
        }
        // records each build sets aside, by the source's choice: said here, as the pipeline's
        // comments say them
        if let Some((why, _)) = &plan.reject_invalid {
            notes.push(format!("table {table}: {why} (on_invalid = \"reject\")"));
        }
        if let Some(why) = &plan.reject_truncated {
            notes.push(format!("table {table}: {why} (on_truncated = \"reject\")"));
        }
        for n in &trial.number_texts {
            notes.push(format!("table {table}: {}", n.note()));
        }
        for n in &plan.dot_thousands {
            notes.push(format!("table {table}: {n}"));
        }
        let t = TablePlan { source: format!("{table}_raw"), table, plan, trial };
        for s in &t.trial.spliced {
            notes.push(format!("table {}: {s}", t.table));
        }
        notes.extend(t.text_notes());
        if let Some((at, n)) = &t.trial.keep_last {
            notes.push(format!(
                "table {}: key ({}) repeats in {} row{} ({at}: {}); the table keeps the last row of each key \
                 (on_duplicate_key = \"keep-last\"), and each build names the rows set aside",
                t.table,
                t.trial.key.join(", "),
                crate::core::numbers::group_digits(*n),
                if *n == 1 { "" } else { "s" },
                t.why_repeated()
            ));
        }
        for (from, to) in t.renamed() {
            notes.push(format!(
                "table {}: column {from:?} is named {to:?} in the table's SQL (a column name cannot begin or end with \
                 a blank, nor hold a NUL: readers trim or cut it)",
                t.table
            ));
        }
        tables.push(t);
    }

    // 5. write
    let written = write_pipeline(&raw, folder, &name, &opts.pipelines_dir, &tables, &not_read, &left)?;
    if written.recovered > 0 {
        notes.push(format!(
            "an init of {name} that did not finish writing had left {} files and links: removed first",
            written.recovered
        ));
    }
    let schemas_rel = schemas_dir(&opts.pipelines_dir, &name);
    let sources = tables
        .iter()
        .map(|t| SourceOut {
            name: t.source.clone(),
            format: t.plan.format.name().to_string(),
            path: t.plan.patterns.iter().map(|p| format!("{}{p}", written.prefix)).collect(),
            record_path: t.plan.record_path.clone(),
            delimiter: t.plan.csv.delimiter.map(|d| (d as char).to_string()),
            comment: t.plan.csv.comment.map(|c| (c as char).to_string()),
            header_row: t.plan.csv.header_row,
            wandb_table: t.plan.wandb_table.map(String::from),
            files: t.plan.files.clone(),
            declared: t.plan.fields.clone(),
        })
        .collect();
    let table_outs = tables
        .iter()
        .map(|t| TableOut {
            name: t.table.clone(),
            source: t.source.clone(),
            rows: t.trial.rows - t.trial.keep_last.as_ref().map_or(0, |(_, n)| *n),
            columns: t.columns().iter().map(|c| t.name_of(c)).collect(),
            primary_key: t.trial.key.iter().map(|c| t.name_of(c)).collect(),
            on_duplicate_key: t.trial.keep_last.as_ref().map(|_| "keep-last".to_string()),
            schema: schemas_rel.join(format!("{}.json", t.table)).display().to_string(),
            left_out: t.plan.left_out.clone(),
        })
        .collect();
    Ok(InitOutcome {
        folder: folder.display().to_string(),
        name,
        pipeline: pipeline_dir.display().to_string(),
        found: Found { files: total, formats, hidden_skipped: hidden.len(), hidden },
        sources,
        tables: table_outs,
        not_read,
        notes,
        written: written.paths,
        todo: vec![
            "card.license: the data's licence, as a Hub licence id (apache-2.0, mit, cc-by-4.0, other, …)".into(),
            "card.description: what the runs are, where the files come from and how they were made".into(),
        ],
    })
}

/// The error for a file `init` would have to overwrite.
fn exists(path: &Path) -> Error {
    Error::Refused(format!(
        "{} exists already; init never overwrites a file it did not just create (choose another --name, or \
         move the file away)",
        path.display()
    ))
}

/// `name` if it is a release name (`[a-z0-9][a-z0-9._-]*`, at most 200 bytes).
fn check_release_name(name: &str) -> Result<String> {
    let re = regex::Regex::new(r"^[a-z0-9][a-z0-9._-]*$").expect("static pattern");
    if re.is_match(name) && name.len() <= crate::core::spec::MAX_NAME_BYTES && !name.ends_with('\n') {
        Ok(name.to_string())
    } else {
        Err(Error::Refused(format!(
            "--name {name:?} is not a release name: lower-case letters, digits, `.`, `_` and `-`, starting with a \
             letter or digit (at most {} bytes)",
            crate::core::spec::MAX_NAME_BYTES
        )))
    }
}

/// A release name made of a folder's name: lower case, other characters as `-`.
fn release_name_of(folder: &Path) -> String {
    let raw = folder.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    let mut out = String::new();
    for c in raw.chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-') { c } else { '-' };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    let out = out.trim_start_matches(['.', '_', '-']).trim_end_matches('-');
    let out: String = out.chars().take(64).collect();
    if out.is_empty() { "dataset".into() } else { out }
}

/// `path` relative to `base`, with `/` separators.
fn rel_of(base: &Path, path: &Path) -> String {
    crate::core::names::relative_path(base, path)
}

/// Hidden entries (see [`is_hidden`]) anywhere under `dir`, relative to it, sorted; not walked
/// into (a `.git` counts once).
fn hidden_entries(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(dir).follow_links(true).into_iter();
    for e in walk.filter_entry(|e| e.depth() == 0 || !is_hidden(&e.file_name().to_string_lossy())).flatten() {
        if e.file_type().is_dir()
            && let Ok(rd) = std::fs::read_dir(e.path())
        {
            for c in rd.flatten().filter(|c| is_hidden(&c.file_name().to_string_lossy())) {
                out.push(rel_of(dir, &c.path()));
            }
        }
    }
    out.sort();
    out
}

// ------------------------------------------------------------------ telling formats

/// A file looked at.
#[derive(Debug, Clone)]
struct Looked {
    rel: String,
    path: PathBuf,
    kind: Kind,
}

/// What a file is.
#[derive(Debug, Clone)]
enum Kind {
    /// One of the formats whose columns are fixed (Tinker, evaluation), with the path pattern
    /// that names its run (`raw/{run}_metrics.jsonl`).
    Fixed(Format, String),
    /// A file read by several formats of fixed columns, one table each (a trackio database:
    /// metrics, system metrics, runs; an Inspect log: evaluations, samples), with its pattern.
    Many(&'static [Format], String),
    /// A W&B export or run-folder file.
    Wandb,
    /// A plain JSON Lines file: the first record's keys.
    Jsonl(Vec<String>),
    /// A JSON document.
    Json(Outline),
    /// A YAML document: the first record's keys, and the root mapping's outline (none for a
    /// root sequence of records).
    Yaml(Vec<String>, Option<Outline>),
    /// A CSV file: its header, and how it is written where that is not RFC 4180's way (tabs
    /// between the cells of a `.tsv` file; comment lines above the header).
    Csv(Vec<String>, CsvWriting),
    /// A Parquet file: its columns.
    Parquet(Vec<String>),
}

impl Kind {
    fn format(&self) -> Format {
        match self {
            Kind::Fixed(f, _) => *f,
            Kind::Many(fs, _) => fs[0],
            Kind::Wandb => Format::Wandb,
            Kind::Jsonl(_) => Format::Jsonl,
            Kind::Json(_) => Format::Json,
            Kind::Yaml(..) => Format::Yaml,
            Kind::Csv(..) => Format::Csv,
            Kind::Parquet(_) => Format::Parquet,
        }
    }
}

/// The folder names of W&B run folders, as the W&B reader knows them
/// (`ingest::wandb::run_dir`): `run-<YYYYmmdd_HHMMSS>-<id>`, `offline-run-…`.
fn is_run_dir(name: &str) -> bool {
    static RUN_DIR: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(offline-)?run-\d{8}_\d{6}-[A-Za-z0-9_-]+$").expect("static pattern")
    });
    RUN_DIR.is_match(name)
}

/// The tables of an Inspect log (`.eval` or `.json`).
const INSPECT: &[Format] = &[Format::InspectEvals, Format::InspectSamples];
/// The tables of a trackio project database (`{project}.db`).
const TRACKIO_DB: &[Format] = &[Format::TrackioMetrics, Format::TrackioSystem, Format::TrackioRuns];
/// The tables of tinker-cookbook rollout summaries: trajectories and their steps.
const ROLLOUTS: &[Format] = &[Format::TinkerRollouts, Format::TinkerRolloutSteps];

/// A file name without the compression ending the readers undo (`.gz`, `.zst`, any case:
/// [`crate::stages::ingest::files::compression_named`]).
fn strip_compression(name: &str) -> &str {
    let ending = crate::stages::ingest::files::compression_named(name).map_or(0, |(x, _)| x.len());
    &name[..name.len() - ending]
}

/// What file `rel` (at `path`) is, or why it cannot be read.
fn look(rel: &str, path: &Path) -> std::result::Result<Kind, String> {
    if rel.contains(['*', '?', '{', '}']) {
        return Err(
            "its path holds `*`, `?`, `{` or `}`, which a source path cannot name as they are; rename it".into()
        );
    }
    let segments: Vec<&str> = rel.split('/').collect();
    let name = segments[segments.len() - 1];
    let base = strip_compression(name);
    let lower = base.to_ascii_lowercase();
    let input = InputFile { rel: rel.to_string(), path: path.to_path_buf(), captures: vec![] };
    if segments[..segments.len() - 1].iter().any(|s| is_run_dir(s)) || lower.ends_with(".wandb") {
        return Ok(Kind::Wandb);
    }
    if crate::stages::ingest::tensorboard::is_event_file(name) {
        return crate::stages::ingest::tensorboard::first_record_ok(path, rel)
            .map(|()| Kind::Fixed(Format::Tensorboard, run_pattern(rel, Format::Tensorboard)));
    }
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "jsonl" | "ndjson" => look_jsonl(&input, base, true),
        "json" => look_json(&input, base, true),
        "eval" if name == base => {
            if crate::stages::ingest::inspect::is_inspect_log(path) {
                Ok(Kind::Many(INSPECT, run_pattern(rel, Format::InspectEvals)))
            } else if let Err(e) =
                std::fs::File::open(path).map(zip::ZipArchive::new).and_then(|z| z.map_err(std::io::Error::other))
            {
                Err(format!("a `.eval` file that is no ZIP archive ({e}): an Inspect log cut short, or no Inspect log"))
            } else {
                Err("a `.eval` file that is no Inspect log: expected a ZIP archive with a `header.json` or \
                     `_journal/start.json` member"
                    .into())
            }
        }
        "db" if name == base => {
            if crate::stages::ingest::trackio::is_trackio_db(path) {
                Ok(Kind::Many(TRACKIO_DB, rel.to_string()))
            } else {
                Err(crate::stages::ingest::trackio::why_no_trackio_db(path))
            }
        }
        "yaml" | "yml" => look_yaml(&input),
        "csv" => look_csv(&input),
        "tsv" => look_tsv(&input),
        "parquet" => {
            // the file is named by the caller: the message alone
            let schema = crate::stages::ingest::parquet::file_schema(&input).map_err(|e| match e {
                Error::Invalid { violations, .. } if violations.len() == 1 => violations[0].message.clone(),
                e => e.to_string(),
            })?;
            let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            // a runpack release's own Parquet: its provenance columns are the ones a source adds
            if let Some(c) = columns.iter().find(|c| *c == "_source_file" || *c == "_source_line") {
                return Err(format!(
                    "it has a column `{c}`, which runpack adds to every source's rows itself (a runpack release's \
                     file?): it cannot be a source yet"
                ));
            }
            // lighteval's details: named so, with its Detail's three struct columns
            if crate::stages::ingest::lighteval::is_details_file(path)
                && ["doc", "metric", "model_response"].iter().all(|c| columns.iter().any(|n| n == c))
            {
                let f = Format::LightevalDetails;
                return Ok(Kind::Fixed(f, run_pattern(rel, f)));
            }
            // trackio's export of a project: its tables, the JSON column flattened
            let has = |c: &str| columns.iter().any(|n| n == c);
            let trackio = match lower.as_str() {
                "metrics.parquet" if has("run_name") && has("step") && has("log_id") => Some(Format::TrackioMetrics),
                "system_metrics.parquet" if has("run_name") && has("log_id") => Some(Format::TrackioSystem),
                "configs.parquet" if has("run_name") && has("created_at") => Some(Format::TrackioRuns),
                _ => None,
            };
            if let Some(f) = trackio {
                return Ok(Kind::Fixed(f, rel.to_string()));
            }
            Ok(Kind::Parquet(columns))
        }
        _ => Err(companion(path, name).unwrap_or_else(|| {
            "not a format runpack reads (JSON, JSON Lines, YAML, CSV, TSV, Parquet, Tinker logs, W&B exports, trackio \
                  projects, evaluation outputs)"
                .into()
        })),
    }
}

/// Why a file that is no format runpack reads is left out, when it is a known companion of
/// one that is: SQLite's working files and trackio's lock beside a project's database, and
/// tinker-cookbook's copy of a run's `metrics.jsonl` made when the run resumed.
fn companion(path: &Path, name: &str) -> Option<String> {
    let beside = |other: &str| path.with_file_name(other).is_file().then(|| other.to_string());
    for ending in ["-wal", "-shm", "-journal"] {
        if name.strip_suffix(ending).filter(|d| d.ends_with(".db")).and_then(beside).is_some() {
            return Some(
                "SQLite's working file of the database beside it (a `-wal` file that holds writes is said when the \
                 database is read)"
                    .into(),
            );
        }
    }
    if name.strip_suffix(".lock").and_then(|stem| beside(&format!("{stem}.db"))).is_some() {
        return Some("trackio's lock of the project database beside it".into());
    }
    let (log, from_step) = name.split_once(".pre_resume_")?;
    Some(format!(
        "tinker-cookbook's copy of {log} as it was when the run resumed from step {from_step}: the steps from there \
         on were logged again in {log}, which is read"
    ))
}

/// The run-naming pattern of a file of a fixed format: `dir/{run}_metrics.jsonl` for
/// `dir/a_metrics.jsonl`, `{run}/metrics.jsonl` for `a/metrics.jsonl`; the path itself when
/// nothing in it names the run.
fn run_pattern(rel: &str, format: Format) -> String {
    let (dir, name) = match rel.rsplit_once('/') {
        Some((d, n)) => (d, n),
        None => ("", rel),
    };
    let join = |d: &str, n: &str| if d.is_empty() { n.to_string() } else { format!("{d}/{n}") };
    let parent = |d: &str| d.rsplit_once('/').map(|(p, _)| p.to_string()).unwrap_or_default();
    let suffix = &name[strip_compression(name).len()..];
    let base = strip_compression(name);
    // (file name, capture of the folder above it) and (`<x><sep><stem>`, capture of <x>)
    let (whole, folder_capture, stem, capture): (&str, &str, &str, &str) = match format {
        Format::TinkerMetrics => ("metrics.jsonl", "run", "metrics.jsonl", "run"),
        Format::TinkerCheckpoints => ("checkpoints.jsonl", "run", "checkpoints.jsonl", "run"),
        // an eval store's `runs/<run_id>/<benchmark>/…`: the run and the benchmark captured
        Format::TinkerEvalResult | Format::TinkerEvalTrajectories
            if dir.split('/').rev().nth(2) == Some("runs") && base == name =>
        {
            return join(&parent(&parent(dir)), &format!("{{eval_run}}/{{bench}}/{name}"));
        }
        Format::TinkerEvalResult => ("result.json", "bench", "", ""),
        Format::TinkerEvalTrajectories => ("trajectories.jsonl", "bench", "", ""),
        Format::TinkerEvalRun => ("metadata.json", "eval_run", "", ""),
        Format::TinkerTimings => ("timing_spans.jsonl", "run", "", ""),
        Format::TinkerRollouts | Format::TinkerRolloutSteps => {
            // `<run>/iteration_NNNNNN/<split>_rollout_summaries.jsonl`, or flat in `<run>/`
            let in_iteration = dir.rsplit('/').next().is_some_and(|d| d.starts_with("iteration_"));
            let (run_dir, tail) = if in_iteration {
                (parent(dir), format!("iteration_*/*_rollout_summaries.jsonl{suffix}"))
            } else {
                (dir.to_string(), format!("*_rollout_summaries.jsonl{suffix}"))
            };
            return if run_dir.is_empty() { tail } else { join(&parent(&run_dir), &format!("{{run}}/{tail}")) };
        }
        Format::InspectEvals | Format::InspectSamples => {
            return join(dir, if base.ends_with(".eval") { "*.eval" } else { "*.json" });
        }
        // the run is named by the format's `log_dir`, from the path (`runs/Dec05_12-00-00_host/`,
        // verl's `tensorboard_log/<project>/<experiment>/`, the folder `add_hparams` writes
        // below it): the files below one top folder are one table
        Format::Tensorboard => {
            let top = dir.split('/').next().unwrap_or("");
            return if dir.is_empty() {
                "events.out.tfevents.*".into()
            } else {
                format!("{top}/**/events.out.tfevents.*")
            };
        }
        Format::LmEvalResults | Format::LmEvalSamples => {
            // lm-eval writes `<output_path>/<model>/…`: the folder names the model
            // a run's samples files are named by task and by the date its results file has
            // (`samples_arc_easy_2026-12-04T10-11-12.345678.jsonl`): the date is captured as the
            // results' is, so that samples join their results; the format reads the task
            let dated = base.strip_prefix("samples_").and_then(|b| b.rsplit_once('_')).is_some_and(|(task, date)| {
                !task.is_empty() && date.strip_suffix(".jsonl").is_some_and(|d| !d.is_empty())
            });
            let file = if format == Format::LmEvalResults {
                format!("results_{{date_id}}.json{suffix}")
            } else if dated {
                format!("samples_*_{{date_id}}.jsonl{suffix}")
            } else {
                format!("samples_{{name}}.jsonl{suffix}")
            };
            return if dir.is_empty() { file } else { join(&parent(dir), &format!("{{model}}/{file}")) };
        }
        Format::EvalMetrics => ("", "", "metrics.json", "ckpt"),
        // lighteval writes `<output_dir>/results/<org>/<model>/results_<date>.json` and
        // `<output_dir>/details/<org>/<model>/<date>/details_<task>_<date>.parquet`
        Format::LightevalDetails => return lighteval_pattern(dir, "details", &["{run}"], "details_*.parquet"),
        Format::LightevalResults => {
            // each run of a model writes a results file of its own: its date is captured
            let file = if base.starts_with("results_") && base.ends_with(".json") {
                format!("results_{{date_id}}.json{suffix}")
            } else {
                name.to_string()
            };
            return lighteval_pattern(dir, "results", &[], &file);
        }
        Format::VerlGenerations => return join(dir, &format!("*.jsonl{suffix}")),
        // verl's file logger writes `<project>/<experiment>.jsonl`, or where
        // `VERL_FILE_LOGGER_PATH` says (a run's folder's `metrics.jsonl`)
        Format::VerlMetrics if base == "metrics.jsonl" => ("metrics.jsonl", "experiment", "", ""),
        Format::VerlMetrics if base.ends_with(".jsonl") => {
            return join(dir, &format!("{{experiment}}.jsonl{suffix}"));
        }
        // the run is named by the format's `output_dir`, from the path: one state of each run
        // is read (`trainer_states_left_out`), each named
        Format::TrainerState => return rel.to_string(),
        Format::GraphScoreReport => return join(dir, &format!("*_score_report.jsonl{suffix}")),
        Format::GraphPassResults => ("results.json", "run", "", ""),
        Format::EvalGenerations => {
            let re = regex::Regex::new(r"^([^_]+)_(id|ood)_generations\.jsonl$").expect("static pattern");
            return match re.captures(base) {
                Some(_) => join(dir, &format!("{{checkpoint}}_{{split}}_generations.jsonl{suffix}")),
                None => rel.to_string(),
            };
        }
        _ => return rel.to_string(),
    };
    if !whole.is_empty() && base == whole && !dir.is_empty() {
        return join(&parent(dir), &format!("{{{folder_capture}}}/{name}"));
    }
    if !stem.is_empty() {
        for sep in ['_', '-'] {
            if let Some(x) = base.strip_suffix(&format!("{sep}{stem}"))
                && !x.is_empty()
            {
                return join(dir, &format!("{{{capture}}}{sep}{stem}{suffix}"));
            }
        }
    }
    rel.to_string()
}

/// Of the Trainer states found, the one of each run (its output folder,
/// [`crate::stages::ingest::trainer::output_dir`]) to read: the one saved last (the greatest
/// `global_step`; at equal steps the output folder's own, written by `save_state()`, then the
/// checkpoint saved last). The Trainer saves the whole log with each, so each run's log is
/// read once; the others are returned as files not read, each with why, and by the state
/// read, latest first (the states to read instead, should it not read).
fn trainer_states_left_out(looked: &[Looked]) -> (Vec<NotRead>, BTreeMap<String, Vec<String>>) {
    use crate::stages::ingest::trainer::{checkpoint_step, is_checkpoint_folder, output_dir};
    // run folder → (global step, the output folder's own, checkpoint number, file), and each
    // file's beginning and when it was written
    let mut runs: BTreeMap<String, Vec<(u64, bool, u64, String)>> = BTreeMap::new();
    let mut heads: BTreeMap<String, (StateHead, Option<std::time::SystemTime>)> = BTreeMap::new();
    let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
    for l in looked {
        if !matches!(l.kind, Kind::Fixed(Format::TrainerState, _)) {
            continue;
        }
        let dir = l.rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        let folder = dir.rsplit('/').next().unwrap_or(dir);
        let own = !is_checkpoint_folder(folder);
        let number = checkpoint_step(folder).unwrap_or(0);
        let head = state_head(&l.path, &l.rel).unwrap_or_default();
        let step = head.global_step.unwrap_or(0);
        let written = std::fs::metadata(&l.path).and_then(|m| m.modified()).ok();
        heads.insert(l.rel.clone(), (head, written));
        files.insert(l.rel.clone(), l.path.clone());
        runs.entry(output_dir(&l.rel)).or_default().push((step, own, number, l.rel.clone()));
    }
    let mut out = Vec::new();
    let mut earlier = BTreeMap::new();
    for states in runs.values_mut() {
        states.sort();
        // a run written again into the same folder (another max_steps, another first log
        // entry) leaves states of two runs: those of the run that wrote last are read
        let last = states.iter().max_by_key(|s| heads[&s.3].1).map(|s| s.3.clone()).expect("a run has a state");
        let same = |f: &str| heads[f].0.same_run(&heads[&last].0);
        let (mut states, others): (Vec<_>, Vec<_>) = states.drain(..).partition(|s| same(&s.3));
        let greatest = states.pop().expect("the last state is of its run");
        let mut kept = greatest.3.clone();
        // a run resumed from an earlier checkpoint, saved since and stopped short of where it
        // had been: the save written last logs other values than the greatest one at its own
        // last entry, and is the branch the run went on with; the saves past it are of the
        // branch it went back from
        if last != kept && heads[&last].0.went_back_from(&heads[&kept].0, &files[&kept]) {
            let newer = heads[&last].0.global_step;
            let (abandoned, rest): (Vec<_>, Vec<_>) = states.drain(..).chain([greatest]).partition(|s| {
                s.3 != last
                    && (s.0 > newer.unwrap_or(0) || heads[&s.3].0.went_back_from(&heads[&last].0, &files[&last]))
            });
            for (_, _, _, file) in &abandoned {
                out.push(NotRead {
                    problems: Vec::new(),
                    file: file.clone(),
                    reason: format!(
                        "{ABANDONED} {last}, saved later after the run went back to an earlier checkpoint (their logs \
                         differ at {last}'s last entry)"
                    ),
                });
            }
            states = rest.into_iter().filter(|s| s.3 != last).collect();
            states.sort();
            kept = last.clone();
        }
        for (_, _, _, file) in &others {
            out.push(NotRead {
                problems: Vec::new(),
                file: file.clone(),
                reason: format!(
                    "{OTHER_RUN} (its max_steps or first log entry differ from those of {kept}, of the run that \
                     wrote last): move it to a folder of its own to read it too"
                ),
            });
        }
        for (_, _, _, file) in states.iter() {
            out.push(NotRead { problems: Vec::new(), file: file.clone(), reason: earlier_save(&kept) });
        }
        earlier.insert(kept, states.iter().rev().map(|(.., file)| file.clone()).collect());
    }
    (out, earlier)
}

/// Why an earlier save of a run's Trainer state is not read: `kept` is.
fn earlier_save(kept: &str) -> String {
    format!(
        "{EARLIER_SAVE} {kept}, which holds the log as far or further (the Trainer saves the whole log with each \
         checkpoint, and each run's log is read from one)"
    )
}

/// How the reason a Trainer state of another run in the same folder is not read starts.
const OTHER_RUN: &str = "a Trainer state of another run written into the same output folder";

/// How the reason an earlier save of a run's Trainer state is not read starts.
const EARLIER_SAVE: &str = "a save of its run's Trainer state no later than";

/// How the reason a save of a branch its run went back from is not read starts.
const ABANDONED: &str = "a save of a branch its run went back from: the run went on from";

/// What tells a Trainer state's run: its `global_step`, `max_steps`, and its log's first
/// entry, length and last entry.
#[derive(Debug, Default, serde::Deserialize)]
struct StateHead {
    global_step: Option<u64>,
    max_steps: Option<u64>,
    #[serde(default, deserialize_with = "log_ends")]
    log_history: Option<LogEnds>,
}

/// A log's first entry, how many entries, and its last entry.
#[derive(Debug, Default, PartialEq)]
struct LogEnds {
    first: Option<Value>,
    entries: u64,
    last: Option<Value>,
}

impl StateHead {
    /// Whether `other` is a save of the same run: the same `max_steps` and first log entry
    /// (a save of the run's beginning has none yet, and is taken for one).
    fn same_run(&self, other: &StateHead) -> bool {
        let first = |h: &StateHead| h.log_history.as_ref().and_then(|l| l.first.clone());
        self.max_steps == other.max_steps
            && (first(self).is_none() || first(other).is_none() || first(self) == first(other))
    }

    /// Whether this save, of no more entries than `other` (the state at `other_path`), logs
    /// another last entry than `other` logs at that place: the run went back to an earlier
    /// checkpoint and went on otherwise from there.
    fn went_back_from(&self, other: &StateHead, other_path: &Path) -> bool {
        let (Some(mine), Some(theirs)) = (&self.log_history, &other.log_history) else { return false };
        if mine.entries == 0 || mine.entries > theirs.entries {
            return false;
        }
        let at = mine.entries - 1;
        let there = if at + 1 == theirs.entries { theirs.last.clone() } else { entry_at(other_path, at) };
        there.is_some() && there != mine.last
    }
}

/// The first and last items of a list and how many, the others skipped one at a time.
fn log_ends<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<LogEnds>, D::Error> {
    struct Ends;
    impl<'de> serde::de::Visitor<'de> for Ends {
        type Value = Option<LogEnds>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Option<LogEnds>, A::Error> {
            let mut ends = LogEnds { first: seq.next_element::<Value>()?, ..LogEnds::default() };
            ends.entries = u64::from(ends.first.is_some());
            ends.last = ends.first.clone();
            while let Some(entry) = seq.next_element::<Value>()? {
                ends.entries += 1;
                ends.last = Some(entry);
            }
            Ok(Some(ends))
        }
    }
    d.deserialize_seq(Ends)
}

/// Entry `at` (0-based) of the log of the Trainer state at `path`, the others skipped one
/// at a time; `None` when it cannot be read or has no such entry.
fn entry_at(path: &Path, at: u64) -> Option<Value> {
    struct Nth(u64);
    impl<'de> serde::de::DeserializeSeed<'de> for Nth {
        type Value = Option<Value>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Option<Value>, D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> serde::de::Visitor<'de> for Nth {
        type Value = Option<Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Option<Value>, A::Error> {
            // the other entries are skipped, not built
            let mut found = None;
            let mut i = 0u64;
            loop {
                if i == self.0 {
                    match seq.next_element::<Value>()? {
                        Some(entry) => found = Some(entry),
                        None => break,
                    }
                } else if seq.next_element::<serde::de::IgnoredAny>()?.is_none() {
                    break;
                }
                i += 1;
            }
            Ok(found)
        }
    }
    struct Log(u64);
    impl<'de> serde::de::Visitor<'de> for Log {
        type Value = Option<Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a Trainer state")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Option<Value>, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<String>()? {
                if key == "log_history" {
                    found = map.next_value_seed(Nth(self.0))?;
                } else {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let rel = path.to_string_lossy().into_owned();
    let input = InputFile { rel, path: path.to_path_buf(), captures: vec![] };
    let reader = crate::stages::ingest::files::open(&input).ok()?;
    let mut de = serde_json::Deserializer::from_reader(crate::stages::ingest::lenient::LenientRead::new(reader));
    serde::Deserializer::deserialize_map(&mut de, Log(at)).ok().flatten()
}

/// The [`StateHead`] of the Trainer state at `path` (`rel` names it for its compression),
/// read without holding its log; `None` when it cannot be read.
fn state_head(path: &Path, rel: &str) -> Option<StateHead> {
    let input = InputFile { rel: rel.to_string(), path: path.to_path_buf(), captures: vec![] };
    let reader = crate::stages::ingest::files::open(&input).ok()?;
    serde_json::from_reader(crate::stages::ingest::lenient::LenientRead::new(reader)).ok()
}

/// The pattern of a lighteval file `file` in folder `dir`: below a folder named `top`
/// (`results`, `details`), the model's folders captured as `{org}/{model}` (one folder,
/// `{model}`, for a model without an organisation), then `inner` captures (`{run}`);
/// elsewhere, `dir/file`.
fn lighteval_pattern(dir: &str, top: &str, inner: &[&str], file: &str) -> String {
    let segs: Vec<&str> = dir.split('/').collect();
    for model in [&["{org}", "{model}"][..], &["{model}"][..]] {
        let below = model.len() + inner.len();
        if segs.len() > below && segs[segs.len() - below - 1] == top {
            let mut out: Vec<&str> = segs[..segs.len() - below].to_vec();
            out.extend(model.iter().chain(inner));
            out.push(file);
            return out.join("/");
        }
    }
    if dir.is_empty() { file.to_string() } else { format!("{dir}/{file}") }
}

/// Reads the first record of a JSON Lines file and tells its format.
/// `other_way`: whether a first line that does not read may be one JSON document over several
/// lines ([`look_json`] told so not to come back here).
fn look_jsonl(input: &InputFile, base: &str, other_way: bool) -> std::result::Result<Kind, String> {
    use std::io::{BufRead, Read};
    let mut reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
    crate::stages::ingest::records::refuse_utf16_json(&mut reader, &input.rel)
        .map_err(|e| unreadable_reason(&input.rel, &e))?;
    let mut reader = reader.take(PEEK_LINE_BYTES);
    let mut buf = Vec::new();
    let mut line = 0u64;
    // the first bad line: the file's reason when no good one follows within the lines looked at
    let mut first_bad: Option<String> = None;
    let record = loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| format!("cannot be read: {e}"))?;
        if n == 0 || (first_bad.is_some() && line >= PEEK_BAD_LINES) {
            return Err(first_bad.unwrap_or_else(|| "holds no record (no line but blank ones)".into()));
        }
        line += 1;
        match crate::stages::ingest::records::parse_line(&buf, line) {
            None => continue,
            Some(crate::stages::ingest::records::Item::Record(r, _)) => break r,
            Some(crate::stages::ingest::records::Item::Bad { message, .. }) => {
                // one JSON document over several lines (lm-eval 0.4.0 wrote its samples as one
                // array), under a `.jsonl` name: read as the document it is
                let opens = buf.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| matches!(b, b'[' | b'{'));
                if line == 1
                    && opens
                    && other_way
                    && let Ok(kind) = look_json(input, base, false)
                {
                    return Ok(kind);
                }
                // a bad first line (a header, a line cut by a crash) does not tell the format:
                // the next good one does, and the trial read weighs the bad ones
                first_bad.get_or_insert_with(|| format!("line {line}: {message}"));
            }
        }
    };
    let has = |k: &str| record.contains_key(k);
    let is_array = |k: &str| record.get(k).is_some_and(Value::is_array);
    // (before W&B's run records, which a fragment's `run` and `config` resemble)
    let format = if crate::stages::ingest::trackio::is_trackio_fragment(&input.path) {
        return Ok(Kind::Many(TRACKIO_DB, fragment_pattern(&input.rel)));
    } else if crate::stages::ingest::wandb::api::is_run(&record) {
        return Ok(Kind::Wandb);
    } else if crate::stages::ingest::cookbook::is_rollout_summaries(Path::new(&input.rel))
        && is_array("steps")
        && (has("traj_idx") || has("total_reward"))
    {
        return Ok(Kind::Many(ROLLOUTS, run_pattern(&input.rel, Format::TinkerRollouts)));
    } else if crate::stages::ingest::cookbook::is_timing_spans(Path::new(base)) && has("step") && is_array("spans") {
        Some(Format::TinkerTimings)
    } else if crate::stages::ingest::lmeval::is_lm_eval_output(Path::new(base))
        && has("doc_id")
        && (has("doc_hash") || has("filtered_resps"))
    {
        Some(Format::LmEvalSamples)
    } else if has("name") && (has("state_path") || has("sampler_path")) {
        Some(Format::TinkerCheckpoints)
    } else if has("idx") && record.get("turns").is_some_and(Value::is_array) && has("reward") {
        Some(Format::TinkerEvalTrajectories)
    } else if has("__idx") && (has("gen_answer") || has("exact_match") || has("resp_tokens")) {
        Some(Format::EvalGenerations)
    } else if has("per_file") && has("aggregate") && crate::stages::ingest::graphs::is_score_report(Path::new(base)) {
        Some(Format::GraphScoreReport)
    } else if ["input", "output", "gts", "score", "step"].iter().all(|k| has(k))
        && crate::stages::ingest::verl::is_dump_name(Path::new(base))
    {
        Some(Format::VerlGenerations)
    } else if crate::stages::ingest::verl::is_metrics_line(&record) {
        Some(Format::VerlMetrics)
    } else if base.to_ascii_lowercase().ends_with("metrics.jsonl")
        && record.values().all(|v| !v.is_object() && !v.is_array())
    {
        Some(Format::TinkerMetrics)
    } else {
        None
    };
    Ok(match format {
        Some(f) => Kind::Fixed(f, run_pattern(&input.rel, f)),
        None => Kind::Jsonl(record.keys().cloned().collect()),
    })
}

/// The pattern of trackio's JSONL fragments beside `rel`: `<project dir>/inbox/*/*.jsonl`.
fn fragment_pattern(rel: &str) -> String {
    let segs: Vec<&str> = rel.split('/').collect();
    match segs.iter().rposition(|s| *s == "inbox") {
        Some(i) => {
            let mut out: Vec<&str> = segs[..=i].to_vec();
            out.extend(std::iter::repeat_n("*", segs.len() - i - 2));
            out.push("*.jsonl");
            out.join("/")
        }
        None => rel.to_string(),
    }
}

/// Reads a YAML document and gives the keys of its first record (the root mapping, or the
/// first mapping of a root sequence), and a root mapping's outline, as a JSON document's.
fn look_yaml(input: &InputFile) -> std::result::Result<Kind, String> {
    use crate::stages::ingest::records::Item;
    let reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
    let mut first: Option<std::result::Result<Kind, String>> = None;
    let mut sink = |item: Item| -> Result<()> {
        if first.is_none() {
            first = Some(match item {
                Item::Record(r, crate::core::report::Position::Pointer(p)) if p.is_empty() => {
                    Ok(Kind::Yaml(r.keys().cloned().collect(), Some(outline_of(&r))))
                }
                Item::Record(r, _) => Ok(Kind::Yaml(r.keys().cloned().collect(), None)),
                Item::Bad { at, message, .. } => Err(match at {
                    crate::core::report::Position::Pointer(p) if !p.is_empty() => format!("{p}: {message}"),
                    _ => message,
                }),
            });
        }
        Ok(())
    };
    crate::stages::ingest::yaml::look(reader, &input.rel, &mut sink)
        .map_err(|e| without_file(&input.rel, &e.to_string()))?;
    match first {
        Some(Ok(Kind::Yaml(keys, _))) if keys.is_empty() => Err("an empty mapping: no record".into()),
        Some(Ok(kind)) => Ok(kind),
        Some(Err(e)) => Err(e),
        None => Err("holds no record".into()),
    }
}

/// Reads a CSV header and tells W&B exports from other tables.
fn look_csv(input: &InputFile) -> std::result::Result<Kind, String> {
    // Excel's "Unicode text": said as a build says it
    let mut reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
    crate::stages::ingest::records::refuse_utf16(&mut reader, &input.rel)
        .map_err(|e| unreadable_reason(&input.rel, &e))?;
    let (comment, header_row) = comment_char(input, b',')?;
    let header = match (comment, header_row) {
        (None, None) => {
            crate::stages::ingest::wandb::csv::header(input).map_err(|e| unreadable_reason(&input.rel, &e))?
        }
        // (a W&B export has no comment line)
        _ => {
            let dialect = crate::stages::ingest::records::Dialect {
                comment,
                header_row: header_row.unwrap_or(1),
                ..Default::default()
            };
            let reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
            crate::stages::ingest::records::csv_columns(reader, &input.rel, dialect)
                .map_err(|e| unreadable_reason(&input.rel, &e))?
        }
    };
    if header.iter().all(String::is_empty) {
        return Err("holds no header and no record".into());
    }
    let cols: Vec<&str> = header.iter().map(String::as_str).filter(|h| !h.is_empty()).collect();
    let flavour =
        crate::stages::ingest::wandb::csv::detect(&header, crate::stages::ingest::wandb::WandbTable::Runs).ok();
    use crate::stages::ingest::wandb::csv::CsvKind;
    // the W&B reader's flavours, with a mark that only W&B writes where its own test is loose
    let wandb_mark = |c: &&str| {
        matches!(*c, "_step" | "_runtime" | "_timestamp" | "_wandb" | "createdAt" | "summary" | "config" | "state")
            || c.starts_with("config.")
            || c.starts_with("summary.")
    };
    let is_wandb = match flavour {
        Some(CsvKind::Chart) | Some(CsvKind::UiRuns) => true,
        Some(CsvKind::ApiRuns) | Some(CsvKind::History) => cols.iter().any(wandb_mark),
        None => cols.contains(&"_step") && (cols.contains(&"_runtime") || cols.contains(&"_timestamp")),
    };
    if is_wandb {
        return Ok(Kind::Wandb);
    }
    // one column whose name holds tabs or semicolons: a file of that delimiter, named .csv
    if let [h] = cols.as_slice()
        && let Some((d, _)) = crate::stages::ingest::records::other_delimiter(h, b',')
    {
        let dialect = crate::stages::ingest::records::Dialect {
            delimiter: d,
            comment,
            header_row: header_row.unwrap_or(1),
            ..TAB_SEPARATED
        };
        let reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
        let header = crate::stages::ingest::records::csv_columns(reader, &input.rel, dialect)
            .map_err(|e| unreadable_reason(&input.rel, &e))?;
        let hash_header = header.first().is_some_and(|h| h.starts_with('#'));
        return Ok(Kind::Csv(header, CsvWriting { delimiter: Some(d), comment, hash_header, header_row }));
    }
    let hash_header = header.first().is_some_and(|h| h.starts_with('#'));
    Ok(Kind::Csv(header, CsvWriting { delimiter: None, comment, hash_header, header_row }))
}

/// Why Inspect's `logs.json` is not read.
const INSPECT_LISTING: &str =
    "Inspect's listing of the logs in its folder (each log's header again, by file name): the logs themselves are read";

/// Why Inspect's `eval-set.json` is not read.
const INSPECT_EVAL_SET: &str = "Inspect's record of an eval set (its id and tasks): each task's log is read";

/// Why file `rel` cannot be read, from an error that names it: the message without the
/// file's name, which the list of files not read gives (`a.tsv:1: …` is `line 1: …`).
fn unreadable_reason(rel: &str, e: &Error) -> String {
    without_file(rel, &e.to_string())
}

/// How a CSV file's first lines are comments: `Some(b'#')` when they start with `#` and none
/// looks like a header; the header's line (`header_row`) when the last of them does, the ones
/// above it comments. A header whose first name is `#` or `#id` (`#,run,score`) has no blank
/// in its first cell and as many cells as the first line that does not start with `#`;
/// `# sweep summary, 5-shot` is a comment. Looks at the first 1,000 lines, each read up to
/// 1 MiB.
fn comment_char(input: &InputFile, delimiter: u8) -> std::result::Result<(Option<u8>, Option<u64>), String> {
    use std::io::{BufRead, Read};
    let mut reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
    // the cells of a line, and whether its first cell holds a blank
    let cells = |line: &[u8]| {
        let mut rdr =
            csv::ReaderBuilder::new().has_headers(false).flexible(true).delimiter(delimiter).from_reader(line);
        let record = rdr.byte_records().next().and_then(|r| r.ok());
        let blank = record.as_ref().and_then(|r| r.get(0)).is_none_or(|c| c.iter().any(u8::is_ascii_whitespace));
        (record.map_or(1, |r| r.len()), blank)
    };
    let mut comments: Vec<(usize, bool)> = Vec::new();
    // (the line of each)
    let mut lines: Vec<usize> = Vec::new();
    let mut line = Vec::new();
    for k in 0..1000 {
        line.clear();
        // (a file that cannot be read is said by the reading of its header)
        if (&mut reader).take(1 << 20).read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            break;
        }
        let mut l = line.as_slice();
        if k == 0 {
            l = l.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(l);
        }
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        if l.is_empty() {
            continue;
        }
        if l[0] == b'#' {
            comments.push(cells(l));
            lines.push(k + 1);
            continue;
        }
        let (header, _) = cells(l);
        let header_like = |&(n, blank): &(usize, bool)| n > 1 && n == header && !blank;
        // comment lines above a header that starts with `#` too (`#,model,acc`): `comment`
        // would skip that header with them; the lines above it are skipped instead
        if let [before @ .., last] = comments.as_slice()
            && header_like(last)
            && !before.is_empty()
            && !before.iter().any(header_like)
        {
            return Ok((None, Some(lines[before.len()] as u64)));
        }
        return Ok(((!comments.is_empty() && !comments.iter().any(header_like)).then_some(b'#'), None));
    }
    Ok((None, None))
}

/// A tab-separated file, its cells quoted as in RFC 4180 (pandas' `to_csv(sep="\t")`).
const TAB_SEPARATED: crate::stages::ingest::records::Dialect = crate::stages::ingest::records::Dialect {
    delimiter: b'\t',
    quote: Some(b'"'),
    named: true,
    comment: None,
    header_row: 1,
};

/// Reads the header of a tab-separated file (`.tsv`), a CSV file whose cells are separated by
/// tabs.
fn look_tsv(input: &InputFile) -> std::result::Result<Kind, String> {
    let (comment, header_row) = comment_char(input, b'\t')?;
    let reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
    let dialect =
        crate::stages::ingest::records::Dialect { comment, header_row: header_row.unwrap_or(1), ..TAB_SEPARATED };
    let header = crate::stages::ingest::records::csv_columns(reader, &input.rel, dialect)
        .map_err(|e| unreadable_reason(&input.rel, &e))?;
    if header.is_empty() {
        return Err("holds no header and no record".into());
    }
    let hash_header = header.first().is_some_and(|h| h.starts_with('#'));
    Ok(Kind::Csv(header, CsvWriting { delimiter: Some(b'\t'), comment, hash_header, header_row }))
}

/// How a CSV file is written where that is not RFC 4180's way: what its source sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct CsvWriting {
    /// The byte between cells, when not a comma (`delimiter`).
    delimiter: Option<u8>,
    /// The byte that starts a comment line, when the file has comment lines (`comment`).
    comment: Option<u8>,
    /// The header's first name starts with `#` (`#,run,score`): a file that a source with
    /// `comment` would read wrong, its header taken for a comment.
    hash_header: bool,
    /// The header's line, when lines above it are skipped (`header_row`).
    header_row: Option<u64>,
}

impl CsvWriting {
    /// Whether files written so and as `other` can be one source: the same delimiter, and no
    /// header that the other's comment lines would make a comment.
    fn joins(&self, other: &CsvWriting) -> bool {
        self.delimiter == other.delimiter
            && self.header_row == other.header_row
            && !(self.comment.is_some() && other.hash_header)
            && !(other.comment.is_some() && self.hash_header)
    }

    /// Takes in how `other`'s files are written, joined to these ([`CsvWriting::joins`]).
    fn join(&mut self, other: &CsvWriting) {
        self.comment = self.comment.or(other.comment);
        self.hash_header |= other.hash_header;
    }
}

/// The outline of a JSON document: what its root holds, read without keeping values.
#[derive(Debug, Clone, PartialEq)]
enum Outline {
    /// An object: its keys in order, each with what it holds.
    Object(Vec<(String, Member)>),
    /// An array: whether every element is an object, how many there are, and the keys of the first.
    Array { objects: bool, len: u64, first: Vec<String> },
    /// Any other value.
    Scalar,
}

/// What a member of a root object holds.
#[derive(Debug, Clone, PartialEq)]
enum Member {
    /// An array of objects only (or an empty array), with the keys of the first.
    Records { len: u64, first: Vec<String> },
    /// An object.
    Object,
    /// Anything else.
    Other,
}

impl<'de> serde::Deserialize<'de> for Outline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Outline;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> std::result::Result<Outline, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v: MemberOutline = m.next_value()?;
                    out.push((k, v.0));
                }
                Ok(Outline::Object(out))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, s: A) -> std::result::Result<Outline, A::Error> {
                let (objects, len, first) = elements(s)?;
                Ok(Outline::Array { objects, len, first })
            }
            crate::stages::ingest::records::json_scalars!(Outline, |_| Outline::Scalar);
        }
        d.deserialize_any(V)
    }
}

/// The outline of a document's root mapping read whole (a YAML document's), as
/// [`Outline`]'s reading of a JSON document gives it.
fn outline_of(root: &serde_json::Map<String, serde_json::Value>) -> Outline {
    use serde_json::Value;
    let member = |v: &Value| match v {
        Value::Array(items) if items.iter().all(Value::is_object) => Member::Records {
            len: items.len() as u64,
            first: items.first().and_then(Value::as_object).map(|o| o.keys().cloned().collect()).unwrap_or_default(),
        },
        Value::Object(_) => Member::Object,
        _ => Member::Other,
    };
    Outline::Object(root.iter().map(|(k, v)| (k.clone(), member(v))).collect())
}

/// A member's outline (see [`Member`]).
struct MemberOutline(Member);

impl<'de> serde::Deserialize<'de> for MemberOutline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = MemberOutline;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> std::result::Result<MemberOutline, A::Error> {
                while m.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
                Ok(MemberOutline(Member::Object))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, s: A) -> std::result::Result<MemberOutline, A::Error> {
                let (objects, len, first) = elements(s)?;
                Ok(MemberOutline(if objects { Member::Records { len, first } } else { Member::Other }))
            }
            crate::stages::ingest::records::json_scalars!(MemberOutline, |_| MemberOutline(Member::Other));
        }
        d.deserialize_any(V)
    }
}

/// An array element: an object (with its keys, when asked for) or not.
struct Element(Option<Vec<String>>);

struct ElementSeed(bool);

impl<'de> serde::de::DeserializeSeed<'de> for ElementSeed {
    type Value = Element;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Element, D::Error> {
        struct V(bool);
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Element;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> std::result::Result<Element, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    m.next_value::<serde::de::IgnoredAny>()?;
                    if self.0 {
                        keys.push(k);
                    }
                }
                Ok(Element(Some(keys)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> std::result::Result<Element, A::Error> {
                while s.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Element(None))
            }
            crate::stages::ingest::records::json_scalars!(Element, |_| Element(None));
        }
        d.deserialize_any(V(self.0))
    }
}

/// Walks an array's elements: whether all are objects, how many, the first one's keys.
fn elements<'de, A: serde::de::SeqAccess<'de>>(mut s: A) -> std::result::Result<(bool, u64, Vec<String>), A::Error> {
    let (mut objects, mut len, mut first) = (true, 0u64, Vec::new());
    while let Some(e) = s.next_element_seed(ElementSeed(len == 0))? {
        match e.0 {
            Some(keys) if len == 0 => first = keys,
            Some(_) => {}
            None => objects = false,
        }
        len += 1;
    }
    Ok((objects, len, first))
}

/// Why a model's own file saved beside the results is not read.
const MODEL_FILE: &str = "a model's or tokenizer's own file, saved with each checkpoint (config.json, tokenizer.json, \
                          adapter_config.json, …): not results (a `json` source reads one if you want it as a table)";

/// Whether the JSON document `base`, whose root object has the keys `has` says, is one of
/// the files transformers, tokenizers and PEFT save with a model (`save_pretrained`): its
/// configuration, generation settings, tokenizer, adapter settings or weights' index. Such
/// files are copied into every checkpoint folder; a tokenizer's vocabulary alone is an
/// object of tens of thousands of keys.
fn is_model_file(base: &str, has: &dyn Fn(&str) -> bool) -> bool {
    match base {
        "config.json" => has("model_type") || has("architectures"),
        "generation_config.json" => has("transformers_version") || has("_from_model_config"),
        "tokenizer.json" => has("model") && (has("added_tokens") || has("normalizer") || has("pre_tokenizer")),
        "tokenizer_config.json" => has("tokenizer_class") || has("added_tokens_decoder") || has("model_max_length"),
        "special_tokens_map.json" => ["bos_token", "eos_token", "pad_token", "unk_token"].iter().any(|k| has(k)),
        "adapter_config.json" => has("peft_type"),
        "preprocessor_config.json" | "processor_config.json" => {
            has("processor_class") || has("image_processor_type") || has("feature_extractor_type")
        }
        _ => base.ends_with(".index.json") && has("weight_map"),
    }
}

/// Whether the JSON document `base`, whose root object has `keys`, holds a transformers
/// Trainer's metrics of one split, as `Trainer.save_metrics(split, …)` writes them:
/// `<split>_results.json` (`train_results.json`, `eval_results.json`, and `all_results.json`,
/// the union of the splits saved) with the split's `<split>_…` metrics or the `epoch`.
fn is_trainer_results(base: &str, keys: &[String]) -> bool {
    let Some(split) = results_split(base) else { return false };
    keys.iter().any(|k| k == "epoch" || (k.starts_with(split) && k[split.len()..].starts_with('_')))
}

/// The split a file named as the Trainer's metrics files are is of (`eval_results.json` →
/// `eval`).
fn results_split(base: &str) -> Option<&str> {
    base.strip_suffix("_results.json").filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase()))
}

/// What a metric of the Trainer's `<split>_results.json` is, by its name (`train_loss`,
/// `eval_runtime`); `None` for a metric of the task's own (`eval_accuracy`).
fn trainer_metric(name: &str) -> Option<String> {
    if name == "epoch" {
        return Some("The epoch the metrics were saved at (fractional).".into());
    }
    if name == "total_flos" {
        return Some("Floating-point operations of the whole training, as the Trainer counts them.".into());
    }
    let (split, what) = name.split_once('_')?;
    let text = match what {
        "loss" => "The split's mean loss",
        "runtime" => "Seconds the split took",
        "samples_per_second" => "Samples per second over the split",
        "steps_per_second" => "Steps per second over the split",
        "samples" => "Samples in the split",
        _ => return None,
    };
    Some(format!("{text} (`{split}`), as the Trainer's `save_metrics` wrote it."))
}

/// Why a Trainer's `all_results.json` is not read beside the splits' own files.
const ALL_RESULTS: &str = "the union of the Trainer's metrics files of each split beside it (`save_metrics` writes \
                           train_results.json, eval_results.json, … and this one): those are read";

/// Reads the outline of a JSON document and tells its format.
///
/// `other_way`: whether a document followed by more lines may be JSON Lines ([`look_jsonl`]
/// told so not to come back here: each tried the other way once, not in turn for ever).
fn look_json(input: &InputFile, base: &str, other_way: bool) -> std::result::Result<Kind, String> {
    use std::io::BufRead;
    let mut reader = crate::stages::ingest::files::open(input).map_err(|e| unreadable_reason(&input.rel, &e))?;
    crate::stages::ingest::records::refuse_utf16_json(&mut reader, &input.rel)
        .map_err(|e| unreadable_reason(&input.rel, &e))?;
    // a byte order mark is left out, as the JSON reader leaves it out
    if reader.fill_buf().map_err(|e| format!("cannot be read: {e}"))?.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    let parsed: serde_json::Result<Outline> =
        serde_json::from_reader(crate::stages::ingest::lenient::LenientRead::new(reader));
    // one document per line, under a `.json` name (as some tools write their logs): JSON Lines
    if let Err(e) = &parsed
        && crate::stages::ingest::records::serde_what(e) == "trailing characters"
        && e.line() > 1
        && other_way
        && let Ok(kind) = look_jsonl(input, base, false)
    {
        return Ok(kind);
    }
    let outline: Outline = parsed.map_err(|e| {
        if e.is_eof() && e.line() == 1 && e.column() == 0 {
            "empty: no JSON document in it (a file created and never written?)".to_string()
        } else if e.to_string().starts_with("invalid unicode code point") {
            // said as a build says it
            use crate::stages::ingest::records::{JsonPlace, json_message};
            json_message(&e, JsonPlace::Document)
        } else {
            format!("not JSON: {e}")
        }
    })?;
    let keyed = |keys: &[String]| -> Map<String, Value> { keys.iter().map(|k| (k.clone(), Value::Null)).collect() };
    match &outline {
        Outline::Object(members) => {
            let has = |k: &str| members.iter().any(|(n, _)| n == k);
            if is_model_file(base, &has) {
                return Err(MODEL_FILE.into());
            }
            // Inspect's own index of a log folder (`logs.json`: each log's header again, by
            // file name) and of an eval set (`eval-set.json`): the logs are what is read
            if base == "logs.json"
                && !members.is_empty()
                && members.iter().all(|(n, _)| n.ends_with(".eval") || n.ends_with(".json"))
            {
                return Err(INSPECT_LISTING.into());
            }
            if base == "eval-set.json" && has("eval_set_id") && has("tasks") {
                return Err(INSPECT_EVAL_SET.into());
            }
            // the Trainer's `all_results.json` beside the splits' files holds their metrics again
            let keys: Vec<String> = members.iter().map(|(k, _)| k.clone()).collect();
            if base == "all_results.json" && is_trainer_results(base, &keys) {
                let splits = input.path.parent().and_then(|d| std::fs::read_dir(d).ok()).is_some_and(|entries| {
                    entries.filter_map(|e| e.ok()).any(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        n != "all_results.json" && results_split(&n).is_some()
                    })
                });
                if splits {
                    return Err(ALL_RESULTS.into());
                }
            }
            // an Inspect log: its header's `version` and `eval` at the root
            if has("version")
                && members.iter().any(|(n, m)| n == "eval" && matches!(m, Member::Object))
                && input.rel.ends_with(".json")
                && crate::stages::ingest::inspect::is_inspect_log(&input.path)
            {
                return Ok(Kind::Many(INSPECT, run_pattern(&input.rel, Format::InspectEvals)));
            }
            // the pass rates of dependency-graph scoring: `graph_results/<run>/results.json`
            if base == "results.json"
                && members.len() == 1
                && members.iter().any(|(n, m)| n == "files" && matches!(m, Member::Object))
                && input.rel.split('/').any(|s| s == "graph_results")
            {
                return Ok(Kind::Fixed(Format::GraphPassResults, run_pattern(&input.rel, Format::GraphPassResults)));
            }
            // a transformers Trainer state (the Trainer's and TRL's trainers' log)
            if has("log_history") && has("global_step") {
                return Ok(Kind::Fixed(Format::TrainerState, run_pattern(&input.rel, Format::TrainerState)));
            }
            if has("config_general") && has("results") && base.starts_with("results_") {
                return Ok(Kind::Fixed(Format::LightevalResults, run_pattern(&input.rel, Format::LightevalResults)));
            }
            // lm-eval 0.4 names its results `results_<date>.json`; 0.3 wrote `results`,
            // `versions` and `config` to the path given
            if has("results")
                && (has("versions") || has("n-shot") || has("configs"))
                && (crate::stages::ingest::lmeval::is_lm_eval_output(Path::new(base))
                    || (has("versions") && has("config")))
            {
                return Ok(Kind::Fixed(Format::LmEvalResults, run_pattern(&input.rel, Format::LmEvalResults)));
            }
            if has("run_id")
                && has("benchmarks")
                && crate::stages::ingest::cookbook::is_eval_run_metadata(Path::new(&input.rel))
            {
                return Ok(Kind::Fixed(Format::TinkerEvalRun, run_pattern(&input.rel, Format::TinkerEvalRun)));
            }
            if has("name") && has("score") && has("num_examples") {
                return Ok(Kind::Fixed(Format::TinkerEvalResult, run_pattern(&input.rel, Format::TinkerEvalResult)));
            }
            let split_object = |k: &str| members.iter().any(|(n, m)| n == k && matches!(m, Member::Object));
            if has("checkpoint")
                && (split_object("id") || split_object("ood") || split_object("total"))
                && base.to_ascii_lowercase().ends_with("metrics.json")
            {
                return Ok(Kind::Fixed(Format::EvalMetrics, run_pattern(&input.rel, Format::EvalMetrics)));
            }
            let runs = members.iter().find_map(|(n, m)| match m {
                Member::Records { first, len } if n == "runs" && *len > 0 => Some(first),
                _ => None,
            });
            if let Some(first) = runs
                && crate::stages::ingest::wandb::api::is_run(&keyed(first))
            {
                return Ok(Kind::Wandb);
            }
            if members.is_empty() {
                return Err("an empty object: no record".into());
            }
            Ok(Kind::Json(outline))
        }
        Outline::Array { objects: true, len, first } if *len > 0 => {
            if crate::stages::ingest::wandb::api::is_run(&keyed(first)) {
                return Ok(Kind::Wandb);
            }
            Ok(Kind::Json(outline))
        }
        Outline::Array { len: 0, .. } => Err("an empty array: no record".into()),
        Outline::Array { .. } => Err("an array of values that are not all objects (records)".into()),
        Outline::Scalar => Err("a single value, not a record or an array of records".into()),
    }
}

// ------------------------------------------------------------------ sources

/// A source as planned: its files, how the pipeline names them, and what is declared.
#[derive(Debug, Clone)]
struct SourcePlan {
    /// Name the table would like (made unique later).
    base: String,
    format: Format,
    /// Files read, relative to the raw folder, sorted.
    files: Vec<String>,
    /// Path patterns (relative to the raw folder) matching exactly `files`.
    patterns: Vec<String>,
    /// Candidate patterns tried before a list of the files (the run-naming ones).
    wanted: Vec<String>,
    record_path: Option<String>,
    /// How the files of a CSV source are written, where that is not RFC 4180's way.
    csv: CsvWriting,
    wandb_table: Option<&'static str>,
    /// `[[source.field]]` declarations.
    fields: Vec<Declared>,
    /// Columns read but not selected by the table (arrays of records with sources of their own).
    hidden: Vec<String>,
    /// Candidate primary keys (the path's captures are put first).
    keys: Vec<Vec<String>>,
    /// What the table holds, for the card.
    description: String,
    /// Files of the source left out, with the reason.
    left_out: Vec<NotRead>,
    /// Whether the W&B reader takes the run id from the path's `{run}` (`run_capture`).
    run_capture: bool,
    /// Whether numbers written as `"NaN"`, `"Infinity"`, `"-Infinity"` strings are read as
    /// numbers (`coerce_nonfinite_strings`): a number column held some.
    coerce_nonfinite: Option<String>,
    /// Why numbers written as text (`"0.6011"`) are read as numbers
    /// (`coerce_numeric_strings`): an evaluation's results document held some, which its
    /// format's reader would set aside.
    coerce_numeric: Option<String>,
    /// Notes of the columns kept as text whose numbers a dot may group by thousands (`1.319`
    /// in a file of decimal commas).
    dot_thousands: Vec<String>,
    /// Of a Trainer state read, the run's earlier saves, latest first: read instead when it
    /// does not read.
    earlier: BTreeMap<String, Vec<String>>,
    /// Why a W&B history is read though a run's is incomplete (`on_sampled = "accept"`: its
    /// rows are marked sampled, and the card names the run).
    accept_sampled: Option<String>,
    /// Why a file's last record cut short is set aside rather than the file left out
    /// (`on_truncated = "reject"`: a writer stopped mid-record, its other records read).
    reject_truncated: Option<String>,
    /// Why the source's bad records are set aside rather than their files left out
    /// (`on_invalid = "reject"`: a file holds a few among good ones), and the problems each file
    /// was found with, for a file left out after all (as many of its records bad as good, or more).
    reject_invalid: Option<(String, BTreeMap<String, Vec<String>>)>,
    /// Files `patterns` match that the source leaves out (the pipeline's `not_read` lists
    /// them): a trial read leaves them out too.
    skipped: Vec<String>,
    /// Of a Tinker metrics log, the rows the table takes: all, those of a step, or those
    /// logged without one (tinker-cookbook's `log_summary`: running totals).
    steps: StepRows,
    /// Whether the files, of a shape a tool's format reads, show nothing of that tool (a
    /// `metrics.jsonl` without tinker-cookbook's metric names): the card names no tool.
    other_writer: bool,
}

/// The rows of a Tinker metrics log a table takes, by their `step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepRows {
    All,
    /// Rows of a step: the training log.
    With,
    /// Rows logged without a step (`log_summary`): a run's running totals, each call
    /// restating them.
    Without,
}

impl SourcePlan {
    fn new(base: String, format: Format, files: Vec<String>, description: String) -> SourcePlan {
        SourcePlan {
            base,
            format,
            files,
            patterns: vec![],
            wanted: vec![],
            record_path: None,
            csv: CsvWriting::default(),
            wandb_table: None,
            fields: vec![],
            hidden: vec![],
            keys: vec![],
            description,
            left_out: vec![],
            run_capture: false,
            coerce_nonfinite: None,
            coerce_numeric: None,
            dot_thousands: Vec::new(),
            earlier: BTreeMap::new(),
            accept_sampled: None,
            reject_truncated: None,
            reject_invalid: None,
            skipped: vec![],
            steps: StepRows::All,
            other_writer: false,
        }
    }
}

/// Groups the files looked at into sources: fixed formats first (metrics before what
/// describes them), then W&B's standard tables, then plain files by folder and keys.
fn plan_sources(raw: &Path, looked: &[Looked], not_read: &mut Vec<NotRead>) -> Result<Vec<SourcePlan>> {
    let mut plans = fixed_format_plans(looked, not_read);
    plans.extend(wandb_plans(raw, looked, not_read));
    for c in plain_clusters(looked) {
        plans.extend(cluster_plans(c));
    }
    for p in &mut plans {
        p.patterns = exact_patterns(raw, &p.wanted, &p.files, not_read);
    }
    Ok(plans)
}

/// Sources of the formats runpack knows by name (Tinker, cookbook, trackio, Inspect,
/// lm-eval, lighteval, verl, graph evaluations): one per format and path pattern, joined where
/// one reader takes several patterns together.
fn fixed_format_plans(looked: &[Looked], not_read: &mut Vec<NotRead>) -> Vec<SourcePlan> {
    let mut plans = Vec::new();
    // a run's log, saved with each checkpoint, is read once
    let (earlier, saves) = trainer_states_left_out(looked);
    let left: BTreeSet<String> = earlier.iter().map(|n| n.file.clone()).collect();
    not_read.extend(earlier);
    // fixed formats, by the pattern that names their run
    let mut fixed: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for l in looked.iter().filter(|l| !left.contains(&l.rel)) {
        match &l.kind {
            Kind::Fixed(f, pattern) => {
                fixed.entry((f.name().to_string(), pattern.clone())).or_default().push(l.rel.clone())
            }
            Kind::Many(formats, pattern) => {
                for f in *formats {
                    fixed.entry((f.name().to_string(), pattern.clone())).or_default().push(l.rel.clone());
                }
            }
            _ => {}
        }
    }
    // the metrics first (the card's default table is the first), then what describes them
    let rank = |f: &str| {
        [
            "tinker-metrics",
            "trainer-state",
            "tinker-checkpoints",
            "tinker-eval-result",
            "eval-metrics",
            "tinker-eval-trajectories",
        ]
        .iter()
        .position(|x| *x == f)
        .unwrap_or(6)
    };
    // each fixed format's column names, which a folder's capture may not take
    let mut columns: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in looked {
        let formats = match &l.kind {
            Kind::Many(fs, _) => fs.to_vec(),
            Kind::Fixed(f, _) => vec![*f],
            _ => continue,
        };
        for f in formats {
            columns.entry(f.name().to_string()).or_insert_with(|| {
                crate::stages::ingest::format_columns(f, true)
                    .map(|c| c.into_iter().map(|(n, _)| n).collect())
                    .unwrap_or_default()
            });
        }
    }
    // Trainer states and TensorBoard logs name their run by the folder (`output_dir`,
    // `log_dir`): their folders are not captured
    let by_folder = |f: &str| f == "trainer-state" || f == "tensorboard";
    let states: Vec<(GroupKey, Vec<String>)> =
        fixed.iter().filter(|((f, _), _)| by_folder(f)).map(|(k, v)| (k.clone(), v.clone())).collect();
    fixed.retain(|(f, _), _| !by_folder(f));
    let mut fixed: Vec<(GroupKey, Vec<String>)> = merge_levels(fixed, &columns).into_iter().collect();
    fixed.extend(states);
    // an Inspect folder's `.eval` logs and the `.json` logs of folders beside it
    // (`logs/*.eval`, `{log_dir}/*.json`), a run's compressed log beside folders of plain
    // ones, are one source: the plain folder takes the capture
    covered_by_captures(&mut fixed);
    lighteval_models_of_any_depth(&mut fixed);
    fixed.sort_by_key(|((f, p), _)| (rank(f), p.clone()));
    // files of one format that its reader takes together become one source of several patterns:
    // a trackio project's database, fragments and exports (one `log_id` read once), an Inspect
    // folder's `.eval` and `.json` logs, and both layouts of rollout summaries
    let mut joined: Vec<(String, String, Vec<String>, Vec<String>)> = Vec::new();
    // the formats of which some file is also there compressed, or compressed another way
    let mut copies_compressed = BTreeSet::new();
    let mut plain: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for ((format, _), files) in &fixed {
        for f in files {
            let first = plain.entry((format.as_str(), strip_compression(f))).or_insert(f.as_str());
            if *first != f.as_str() {
                copies_compressed.insert(format.clone());
            }
        }
    }
    for ((format, pattern), files) in fixed {
        let join = match format.as_str() {
            // (a Trainer state's rows name their run by `output_dir`: its files are listed)
            "trackio-metrics"
            | "trackio-system"
            | "trackio-runs"
            | "tinker-rollouts"
            | "tinker-rollout-steps"
            | "trainer-state"
            | "tensorboard" => String::new(),
            // an Inspect log names its eval (`eval_id`): logs at any depth are one table, of
            // several patterns when they capture the same path parts (a source's patterns do)
            "inspect-evals" | "inspect-samples" => {
                let mut captures: Vec<&str> =
                    pattern.split('{').skip(1).filter_map(|c| c.split_once('}').map(|(n, _)| n)).collect();
                captures.sort_unstable();
                captures.join(",")
            }
            // runs whose logs were compressed (`metrics.jsonl.gz`, `.zst`) are runs of the same
            // table, unless a run has its log both ways (two tables then, each building)
            _ if !copies_compressed.contains(&format) => strip_compression(&pattern).to_string(),
            _ => pattern.clone(),
        };
        match joined.iter_mut().find(|(f, j, _, _)| *f == format && *j == join) {
            Some((_, _, patterns, all)) => {
                if !patterns.contains(&pattern) {
                    patterns.push(pattern);
                }
                all.extend(files);
                all.sort();
                all.dedup();
            }
            None => joined.push((format, join, vec![pattern], files)),
        }
    }
    // trackio's files are all project databases (no fragments, no exports): each table of
    // them can capture the project the same way
    let only_databases = joined
        .iter()
        .filter(|(f, ..)| f.starts_with("trackio-"))
        .all(|(_, _, _, files)| files.iter().all(|f| f.ends_with(".db")));
    for (format, _, patterns, files) in joined.iter_mut() {
        // a project's database gives its runs, and its fragments those it did not import yet
        // (read once, by `run_id`); its exports hold the database's runs in another shape, and
        // are left out
        let kept = |f: &String| f.ends_with(".db") || f.ends_with(".jsonl");
        if format == "trackio-runs" && files.iter().any(|f| f.ends_with(".db")) && !files.iter().all(kept) {
            for f in files.iter().filter(|f| !kept(f)) {
                not_read.push(NotRead {
                    problems: Vec::new(),
                    file: f.clone(),
                    reason: "trackio-runs reads the project's database beside it, which holds these runs".into(),
                });
            }
            files.retain(kept);
            patterns.retain(kept);
        }
        // trackio names a project by its database (`{TRACKIO_DIR}/{project}.db`): databases of
        // one folder are read with the project captured, so that two projects' runs stay apart
        if format.starts_with("trackio-") && only_databases {
            let dir = |f: &str| f.rsplit_once('/').map_or(String::new(), |(d, _)| d.to_string());
            let folders: BTreeSet<String> = files.iter().map(|f| dir(f)).collect();
            if let [folder] = folders.into_iter().collect::<Vec<_>>().as_slice() {
                let pattern =
                    if folder.is_empty() { "{project}.db".to_string() } else { format!("{folder}/{{project}}.db") };
                *patterns = vec![pattern];
            }
        }
    }
    for (format, _, patterns, files) in joined {
        let format = looked
            .iter()
            .filter(|l| l.rel == files[0])
            .flat_map(|l| match &l.kind {
                Kind::Many(fs, _) => fs.to_vec(),
                k => vec![k.format()],
            })
            .find(|f| f.name() == format)
            .expect("a file looked at");
        let (base, what, keys) = fixed_format_table(format);
        // a `metrics.jsonl` of flat records is read in long form whoever wrote it: the card
        // names Tinker only where a log holds tinker-cookbook's own metric names, or lies
        // beside a Tinker checkpoint index
        let folder = |rel: &str| rel.rsplit_once('/').map_or(String::new(), |(d, _)| d.to_string());
        let tinker_folders: BTreeSet<String> = looked
            .iter()
            .filter(|l| matches!(l.kind, Kind::Fixed(Format::TinkerCheckpoints, _)))
            .map(|l| folder(&l.rel))
            .collect();
        let other_writer = format == Format::TinkerMetrics
            && !looked
                .iter()
                .filter(|l| files.contains(&l.rel))
                .any(|l| tinker_folders.contains(&folder(&l.rel)) || logs_tinker_cookbook_metrics(&l.rel, &l.path));
        let what = if other_writer {
            "Metrics logs (`metrics.jsonl`) in long form: one row per step and metric"
        } else {
            what
        };
        let mut plan = SourcePlan::new(base.into(), format, files, format!("{what}; from {{files}}."));
        plan.other_writer = other_writer;
        plan.wanted = patterns;
        plan.keys = if keys.is_empty() { vec![] } else { vec![keys.iter().map(|k| k.to_string()).collect()] };
        // lighteval's results of models at every depth: each row's model is its file's
        if format == Format::LightevalResults && plan.wanted.iter().any(|p| p.contains("/**/")) {
            plan.keys = vec![["model_name", "task", "metric"].map(String::from).to_vec()];
        }
        // a trackio project's rows in the order of its runs and steps (a `log_id` is random);
        // a run that logs a metric at a step again (resumed from a checkpoint) keeps the last
        // log call's (see `first_repeating`)
        match format {
            Format::TrackioMetrics => {
                plan.keys.insert(0, ["run_id", "step", "metric"].map(String::from).to_vec());
                plan.keys.insert(1, ["run_id", "step", "log_id", "metric"].map(String::from).to_vec());
            }
            Format::TrackioSystem => {
                plan.keys.insert(0, ["run_id", "timestamp", "log_id", "metric"].map(String::from).to_vec())
            }
            _ => {}
        }
        // logs scored with several epoch reducers give a scorer's metric once per reducer
        if format == Format::InspectEvals {
            plan.keys.push(["eval_id", "scorer", "reducer", "metric"].map(String::from).to_vec());
        }
        if format == Format::TrainerState {
            plan.earlier = plan.files.iter().filter_map(|f| Some((f.clone(), saves.get(f)?.clone()))).collect();
            // the same states, one row each: how far each run got, its best checkpoint, its
            // settings
            let (base, what, keys) = fixed_format_table(Format::TrainerRuns);
            let mut runs = SourcePlan::new(
                base.into(),
                Format::TrainerRuns,
                plan.files.clone(),
                format!("{what}; from {{files}}."),
            );
            runs.wanted = plan.wanted.clone();
            runs.earlier = plan.earlier.clone();
            runs.keys = vec![keys.iter().map(|k| k.to_string()).collect()];
            plans.push(plan);
            plans.push(runs);
            continue;
        }
        plans.push(plan);
    }
    plans
}

/// Whether one of the first records of the metrics log `rel` (at `path`) names a metric as
/// tinker-cookbook's training loops do (`optim/lr`, `progress/done_frac`, `env/all/…`,
/// `train_mean_nll`), not only as any trainer might (`loss`, `learning_rate`).
fn logs_tinker_cookbook_metrics(rel: &str, path: &Path) -> bool {
    use std::io::BufRead;
    let input = InputFile { rel: rel.to_string(), path: path.to_path_buf(), captures: vec![] };
    let Ok(reader) = crate::stages::ingest::files::open(&input) else { return false };
    // the names tinker-cookbook's loops log (`rl/train.py`, `supervised/train.py`), whole
    let named = |k: &str| {
        k.starts_with("env/all/")
            || k.starts_with("test/env/all/")
            || ["optim/lr", "progress/done_frac", "progress/batch", "train_mean_nll", "num_loss_tokens", "test/nll"]
                .contains(&k)
    };
    // the first records (an evaluation's line may come first)
    reader
        .lines()
        .map_while(std::result::Result::ok)
        .filter(|l| !l.trim().is_empty())
        .take(20)
        .filter_map(|line| match crate::stages::ingest::records::parse_line(line.as_bytes(), 1) {
            Some(crate::stages::ingest::records::Item::Record(record, _)) => Some(record),
            _ => None,
        })
        .any(|record| record.keys().any(|k| named(k)))
}

/// A fixed format's source name, what its rows are (for the card) and its primary key.
fn fixed_format_table(format: Format) -> (&'static str, &'static str, Vec<&'static str>) {
    match format {
        Format::TinkerMetrics => (
            "metrics",
            "Tinker metrics logs (`metrics.jsonl`) in long form: one row per step and metric",
            vec!["step", "metric"],
        ),
        Format::TinkerCheckpoints => (
            "checkpoints",
            "Tinker checkpoint indices (`checkpoints.jsonl`): one row per checkpoint saved",
            vec!["name"],
        ),
        Format::TinkerEvalResult => (
            "eval_results",
            "Benchmark results (`result.json` of the tinker-cookbook runner): one row per benchmark",
            vec!["benchmark"],
        ),
        Format::TinkerEvalTrajectories => (
            "eval_trajectories",
            "Benchmark trajectories (`trajectories.jsonl` of the tinker-cookbook runner): one row per sample",
            vec!["benchmark", "idx"],
        ),
        Format::EvalMetrics => (
            "eval_metrics",
            "Per-checkpoint evaluation metrics (`<checkpoint>_metrics.json`): one row per checkpoint and split",
            vec!["checkpoint", "split"],
        ),
        Format::EvalGenerations => (
            "eval_generations",
            "Per-checkpoint generations (`<checkpoint>_{id,ood}_generations.jsonl`): one row per sample",
            vec![],
        ),
        Format::LightevalResults => (
            "lighteval_results",
            "lighteval results (`results_<date>.json`): one row per task and metric",
            vec!["task", "metric"],
        ),
        Format::LightevalDetails => (
            "lighteval_details",
            "lighteval details (`details_<task>_<date>.parquet`): one row per example",
            vec!["task", "date_id", "doc_id"],
        ),
        Format::VerlGenerations => {
            ("verl_generations", "verl validation and rollout dumps (`<step>.jsonl`): one row per sample", vec![])
        }
        Format::VerlMetrics => (
            "verl_metrics",
            "verl metrics logs (the file logger's `{\"step\", \"data\"}` lines) in long form: one row per step and \
             metric",
            vec!["step", "metric"],
        ),
        Format::TrackioMetrics => (
            "trackio_metrics",
            "trackio metrics (a project's database `<project>.db`, its `inbox/` JSONL fragments or its \
             `metrics.parquet` export, each log call read once by its `log_id`) in long form: one row per log \
             call and metric",
            vec!["log_id", "metric"],
        ),
        Format::TrackioSystem => (
            "trackio_system_metrics",
            "trackio system metrics (a project's database, fragments or `system_metrics.parquet` export) in long \
             form: one row per sample and metric",
            vec!["log_id", "metric"],
        ),
        Format::TrackioRuns => (
            "trackio_runs",
            "trackio run configs (a project's database or `configs.parquet` export): one row per run",
            vec!["run_id"],
        ),
        Format::TinkerTimings => (
            "timings",
            "tinker-cookbook timing spans (`timing_spans.jsonl`): one row per step and span",
            vec!["step", "span_index"],
        ),
        Format::TinkerRollouts => (
            "rollouts",
            "tinker-cookbook rollout summaries (`iteration_NNNNNN/<split>_rollout_summaries.jsonl` or the flat \
             `<split>_iteration_NNNNNN_rollout_summaries.jsonl`): one row per trajectory",
            vec!["split", "iteration", "group_idx", "traj_idx"],
        ),
        Format::TinkerRolloutSteps => (
            "rollout_steps",
            "The steps of tinker-cookbook rollout summaries: one row per trajectory and step",
            vec!["split", "iteration", "group_idx", "traj_idx", "step_idx"],
        ),
        Format::TinkerEvalRun => (
            "eval_runs",
            "tinker-cookbook eval store runs (`runs/<run_id>/metadata.json`): one row per evaluation run",
            vec!["run_id"],
        ),
        Format::InspectEvals => (
            "inspect_evals",
            "Inspect AI logs (`.eval` archives and `.json` logs): one row per log, scorer and metric",
            vec!["eval_id", "scorer", "metric"],
        ),
        Format::InspectSamples => (
            "inspect_samples",
            "Inspect AI samples (texts left out): one row per log, sample and epoch",
            vec!["eval_id", "sample_id", "epoch"],
        ),
        Format::LmEvalResults => (
            "lm_eval_results",
            "lm-evaluation-harness results (`results_<date>.json`): one row per task, metric and filter",
            vec!["task", "metric", "filter"],
        ),
        Format::LmEvalSamples => (
            "lm_eval_samples",
            "lm-evaluation-harness samples (`samples_<task>_<date>.jsonl`; documents, prompts and responses left \
             out): one row per document and filter",
            vec!["task", "doc_id", "filter"],
        ),
        Format::GraphPassResults => (
            "graph_pass_rates",
            "Dependency-graph pass rates (`graph_results/<run>/results.json`): one row per file, template, \
             operation count and k",
            vec![],
        ),
        Format::GraphScoreReport => (
            "graph_scores",
            "Dependency-graph score reports (`<generated>_score_report.jsonl`): one row per scoring run and \
             scored file, and per run's aggregate",
            vec![],
        ),
        Format::Tensorboard => (
            "tensorboard",
            "TensorBoard logs (`events.out.tfevents.*`) in long form: one row per run, summary value logged and step",
            vec!["log_dir", "tag", "step", "wall_time"],
        ),
        Format::TrainerState => (
            "trainer_log",
            "transformers Trainer logs (`trainer_state.json`'s `log_history`, as the Trainer and TRL's trainers write \
             it) in long form: one row per run, logged value and entry",
            vec!["output_dir", "step", "metric", "entry"],
        ),
        Format::TrainerRuns => (
            "trainer_runs",
            "transformers Trainer states (`trainer_state.json`): one row per run's state read, with its progress \
             (`global_step` of `max_steps`), its best checkpoint and its settings",
            vec!["output_dir", "global_step"],
        ),
        _ => unreachable!("fixed formats only"),
    }
}

/// W&B files: one source per standard table (runs, history, system, histograms), and one of
/// `run.history()` dumps that do not name their run; files W&B's reader leaves out are said.
fn wandb_plans(raw: &Path, looked: &[Looked], not_read: &mut Vec<NotRead>) -> Vec<SourcePlan> {
    let mut plans = Vec::new();
    let wandb: Vec<&Looked> = looked.iter().filter(|l| matches!(l.kind, Kind::Wandb)).collect();
    if wandb.is_empty() {
        return plans;
    }
    let inputs: Vec<InputFile> =
        wandb.iter().map(|l| InputFile { rel: l.rel.clone(), path: l.path.clone(), captures: vec![] }).collect();
    let mut files = Vec::new();
    match crate::stages::ingest::wandb::run_dir::classify(&inputs, crate::stages::ingest::wandb::WandbTable::Runs) {
        Ok((kinds, _)) => {
            for (k, input) in kinds.iter().zip(&inputs) {
                match k {
                    crate::stages::ingest::wandb::Kind::Ignored(why) => not_read.push(NotRead {
                        problems: Vec::new(),
                        file: input.rel.clone(),
                        reason: format!("W&B: {why}"),
                    }),
                    _ => files.push(input.rel.clone()),
                }
            }
        }
        Err(e) => {
            for input in &inputs {
                not_read.push(NotRead { problems: Vec::new(), file: input.rel.clone(), reason: format!("W&B: {e}") });
            }
        }
    }
    // `run.history()` dumps that do not name their run: the file's name does, captured; a
    // file of a generic name (`wandb_history.csv`) is named by its folder instead
    let mut by_pattern: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in &wandb {
        if files.contains(&l.rel) && unnamed_history(l) {
            by_pattern.entry(dump_pattern(&l.rel)).or_default().push(l.rel.clone());
        }
    }
    for (pattern, dumps) in by_pattern {
        if exact_patterns(raw, std::slice::from_ref(&pattern), &dumps, &[]) != [pattern.clone()] {
            continue;
        }
        files.retain(|f| !dumps.contains(f));
        let mut plan = SourcePlan::new(
            "wandb_history_dumps".into(),
            Format::Wandb,
            dumps,
            "W&B run history dumps (`run.history()` as CSV), the run named by the path: one row per run, step \
             and metric; from {files}."
                .into(),
        );
        plan.wandb_table = Some("history");
        plan.run_capture = true;
        plan.wanted = vec![pattern];
        plan.keys = vec![vec!["step".into(), "metric".into()]];
        plans.push(plan);
    }
    if !files.is_empty() {
        let wanted = wandb_patterns(&files);
        for (table, keys, what) in [
            (
                "runs",
                vec!["run_id"],
                "W&B runs: one row per run (per run folder: a run resumed in another folder has a row for each \
                 session), with its config and summary",
            ),
            ("history", vec!["run_id", "step", "metric"], "W&B run history: one row per run, step and metric"),
            ("system", vec!["run_id", "timestamp", "metric"], "W&B system metrics: one row per run, time and metric"),
            ("histograms", vec!["run_id", "key", "step", "origin"], "W&B histograms: one row per histogram"),
        ] {
            let mut plan = SourcePlan::new(
                format!("wandb_{table}"),
                Format::Wandb,
                files.clone(),
                format!("{what}; from {{files}}."),
            );
            plan.wandb_table = Some(table);
            plan.wanted = wanted.clone();
            plan.keys = vec![keys.iter().map(|k| k.to_string()).collect()];
            if table == "runs" {
                // exports of the UI's runs table name their runs but give no id
                plan.keys.push(vec!["name".into()]);
            }
            plans.push(plan);
        }
    }
    plans
}

/// Plain files of one folder and format that share most of their keys (or one file of
/// one name in sibling folders).
struct Cluster {
    dir: String,
    format: Format,
    /// How its CSV files are written, where that is not RFC 4180's way.
    csv: CsvWriting,
    signature: Vec<String>,
    /// The file name of a kind of file that is a table of its own over the runs whatever its
    /// keys (the Trainer's `train_results.json`).
    named: Option<String>,
    keys: BTreeSet<String>,
    files: Vec<String>,
    outline: Option<Outline>,
    /// The pattern that names the files of sibling folders (`logs/{run}/config.json`).
    wanted: Option<String>,
}

/// Plain files (JSON, JSON Lines, CSV, YAML, Parquet) grouped by folder and format, then by
/// the keys they share; one file of one name in each of several sibling folders (a run's
/// `config.json` in each run folder) is one group, the folder captured.
fn plain_clusters(looked: &[Looked]) -> Vec<Cluster> {
    let mut clusters: Vec<Cluster> = Vec::new();
    for l in looked {
        let mut named = None;
        let (keys, signature, outline): (Vec<String>, Vec<String>, Option<Outline>) = match &l.kind {
            Kind::Jsonl(k) | Kind::Yaml(k, None) | Kind::Csv(k, _) | Kind::Parquet(k) => (k.clone(), vec![], None),
            Kind::Json(o @ Outline::Array { first, .. }) => (first.clone(), vec!["[]".into()], Some(o.clone())),
            Kind::Json(o @ Outline::Object(members)) | Kind::Yaml(_, Some(o @ Outline::Object(members))) => {
                let keys: Vec<String> = members.iter().map(|(k, _)| k.clone()).collect();
                // arrays of records with a record at least: each a source of its own
                let signature: Vec<String> = members
                    .iter()
                    .filter(|(_, m)| matches!(m, Member::Records { len, .. } if *len > 0))
                    .map(|(k, _)| k.clone())
                    .collect();
                // the Trainer's metrics of each split are a table each, over the runs
                let name = l.rel.rsplit('/').next().unwrap_or(&l.rel);
                if is_trainer_results(strip_compression(name), &keys) {
                    named = Some(name.to_string());
                }
                (keys, signature, Some(o.clone()))
            }
            _ => continue,
        };
        let dir = l.rel.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
        let format = l.kind.format();
        let csv = match l.kind {
            Kind::Csv(_, w) => w,
            _ => CsvWriting::default(),
        };
        let keys: BTreeSet<String> = keys.into_iter().collect();
        // a file there both plain and compressed would give each row twice: two tables
        let same_file = |c: &Cluster| c.files.iter().any(|f| strip_compression(f) == strip_compression(&l.rel));
        let fits = |c: &Cluster| {
            c.dir == dir
                && c.format == format
                && c.csv.joins(&csv)
                && arrays_agree(&c.signature, c.outline.as_ref(), &signature, outline.as_ref())
                && c.named == named
                && !same_file(c)
                && {
                    let shared = c.keys.intersection(&keys).count();
                    let all = c.keys.union(&keys).count();
                    all > 0 && shared * 2 >= all
                }
        };
        match clusters.iter_mut().find(|c| fits(c)) {
            Some(c) => {
                c.files.push(l.rel.clone());
                join_arrays(c, &signature, outline.as_ref());
                // files with comment lines beside files without are one table: it skips them
                c.csv.join(&csv);
            }
            None => clusters.push(Cluster {
                dir,
                format,
                csv,
                signature,
                named,
                keys,
                files: vec![l.rel.clone()],
                outline,
                wanted: None,
            }),
        }
    }
    // one file of one name in each of several sibling folders (a run's `config.json` in each
    // run folder): one source, the folder captured
    let parent = |d: &str| d.rsplit_once('/').map(|(p, _)| p.to_string()).unwrap_or_default();
    let file_name = |f: &str| f.rsplit('/').next().unwrap_or(f).to_string();
    let mut merged: Vec<Cluster> = Vec::new();
    for c in clusters {
        let sibling = |m: &Cluster| {
            m.wanted.is_some()
                && c.files.len() == 1
                && !c.dir.is_empty()
                && m.format == c.format
                && m.csv.joins(&c.csv)
                && arrays_agree(&m.signature, m.outline.as_ref(), &c.signature, c.outline.as_ref())
                && m.named == c.named
                && parent(&m.files[0].rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default())
                    == parent(&c.dir)
                // a run's log compressed beside others' plain ones is the same log (one
                // source, a path per compression); one folder's two copies are not
                && strip_compression(&file_name(&m.files[0])) == strip_compression(&file_name(&c.files[0]))
                && !m.files.iter().any(|f| f.rsplit_once('/').map(|(d, _)| d) == Some(c.dir.as_str()))
        };
        if let Some(m) = merged.iter_mut().find(|m| sibling(m)) {
            join_arrays(m, &c.signature, c.outline.as_ref());
            m.csv.join(&c.csv);
            m.files.extend(c.files);
            m.keys.extend(c.keys);
            continue;
        }
        let mut c = c;
        if c.files.len() == 1 && !c.dir.is_empty() {
            c.wanted = Some(String::new());
        }
        merged.push(c);
    }
    // the folders a run's log names by `{run}` (`logs/a` of `logs/{run}/metrics.jsonl`), each
    // with the folder above it: a plain file alone there is that run's too
    let mut run_folders: BTreeMap<String, String> = BTreeMap::new();
    for l in looked {
        // a Trainer state's run is its output folder, whatever the pattern (one state of each
        // run is read, each named)
        if matches!(l.kind, Kind::Fixed(Format::TrainerState, _)) {
            let dir = crate::stages::ingest::trainer::output_dir(&l.rel);
            if dir != "." {
                run_folders.insert(dir.clone(), parent(&dir));
            }
            continue;
        }
        let (Kind::Fixed(_, pattern) | Kind::Many(_, pattern)) = &l.kind else { continue };
        let (Some((pattern_dir, _)), Some((dir, _))) = (pattern.rsplit_once('/'), l.rel.rsplit_once('/')) else {
            continue;
        };
        if pattern_dir == "{run}" || pattern_dir.ends_with("/{run}") {
            run_folders.insert(dir.to_string(), parent(dir));
        }
    }
    let mut clusters = Vec::new();
    for mut c in merged {
        if c.files.len() == 1
            && c.wanted.is_some()
            && !c.keys.contains("run")
            && let Some(above) = run_folders.get(&c.dir)
        {
            let name = strip_compression(&file_name(&c.files[0])).to_string();
            c.wanted =
                Some(if above.is_empty() { format!("{{run}}/{name}") } else { format!("{above}/{{run}}/{name}") });
            c.dir = above.clone();
        } else if c.files.len() > 1 && c.wanted.is_some() {
            // a name no column takes: the document's keys, and those of its arrays' records
            let taken = |k: &str| {
                c.keys.contains(k)
                    || matches!(&c.outline, Some(Outline::Object(members)) if members.iter().any(|(_, m)| {
                        matches!(m, Member::Records { first, .. } if first.iter().any(|f| f == k))
                    }))
            };
            let capture = ["run", "run_dir", "folder"].into_iter().find(|k| !taken(k)).unwrap_or("folder_");
            let above = parent(&c.dir);
            let name = strip_compression(&file_name(&c.files[0])).to_string();
            c.wanted = Some(if above.is_empty() {
                format!("{{{capture}}}/{name}")
            } else {
                format!("{above}/{{{capture}}}/{name}")
            });
            c.dir = above;
        } else if c.files.len() == 1 && c.wanted.is_some() {
            // a file alone in its folder: its path, which one like it in a cousin folder
            // (`trl/a/logs/log.jsonl`, `trl/b/logs/log.jsonl`) makes a pattern of below
            let name = strip_compression(&file_name(&c.files[0])).to_string();
            c.wanted = Some(format!("{}/{name}", c.dir));
        } else {
            c.wanted = None;
        }
        clusters.push(c);
    }
    // sibling folders of runs under sibling folders (`e1/{run_dir}/scores.jsonl`,
    // `e2/{run_dir}/scores.jsonl`): one source, the folder above captured too
    let mut out: Vec<Cluster> = Vec::new();
    // the files alone in their folders, which may join one another
    let alone: Vec<String> = clusters
        .iter()
        .filter(|c| c.files.len() == 1 && c.wanted.as_deref().is_some_and(|w| !w.contains('{')))
        .map(|c| c.files[0].clone())
        .collect();
    for c in clusters {
        let Some(w) = c.wanted.clone() else {
            out.push(c);
            continue;
        };
        let segs: Vec<&str> = w.split('/').collect();
        let level = |m: &Cluster| -> Option<usize> {
            let mw = m.wanted.as_deref()?;
            let o: Vec<&str> = mw.split('/').collect();
            if m.format != c.format
                || !m.csv.joins(&c.csv)
                || !arrays_agree(&m.signature, m.outline.as_ref(), &c.signature, c.outline.as_ref())
                || m.named != c.named
                || o.len() != segs.len()
                || o.last() != segs.last()
            {
                return None;
            }
            // a file alone in its folder joins files of its name in cousin folders only when
            // they share most of their keys
            if !mw.contains('{') || !w.contains('{') {
                let shared = m.keys.intersection(&c.keys).count();
                let all = m.keys.union(&c.keys).count();
                if all == 0 || shared * 2 < all {
                    return None;
                }
            }
            let differ: Vec<usize> = (0..o.len() - 1).filter(|&j| o[j] != segs[j]).collect();
            let j = match differ.as_slice() {
                [j] if !segs[*j].contains(['{', '*']) && !o[*j].contains('*') => *j,
                _ => return None,
            };
            // files alone in their folders join only where the pattern they make reads no
            // file of another group (a run folder with a second log of the name): the pattern
            // would be given up for the files' paths, and their run with it
            if !mw.contains('{') || !w.contains('{') {
                let mut joined = o.clone();
                joined[j] = "{run_}";
                let ours = |f: &str| {
                    m.files.iter().chain(&c.files).chain(&alone).any(|g| strip_compression(g) == strip_compression(f))
                };
                let reads_others = crate::stages::ingest::files::PathPattern::new(&joined.join("/"))
                    .map_or(true, |g| {
                        looked.iter().any(|l| g.captures(strip_compression(&l.rel)).is_some() && !ours(&l.rel))
                    });
                if reads_others {
                    return None;
                }
            }
            Some(j)
        };
        let Some((m, j)) = out.iter_mut().find_map(|m| level(m).map(|j| (m, j))) else {
            out.push(c);
            continue;
        };
        let mw = m.wanted.clone().unwrap_or_default();
        let mut o: Vec<String> = mw.split('/').map(str::to_string).collect();
        if !o[j].starts_with('{') {
            let keys: BTreeSet<&String> = m.keys.iter().chain(&c.keys).collect();
            // the folder that tells files alone in their folders apart names their run; one
            // above runs' folders, their experiment
            let names = if mw.contains('{') {
                ["experiment", "group", "folder", "folder_2"]
            } else {
                ["run", "run_dir", "folder", "folder_2"]
            };
            let name = names
                .into_iter()
                .find(|n| !keys.contains(&n.to_string()) && !mw.contains(&format!("{{{n}}}")))
                .unwrap_or("folder_");
            o[j] = format!("{{{name}}}");
            m.wanted = Some(o.join("/"));
            m.dir = o[..j].join("/");
        }
        join_arrays(m, &c.signature, c.outline.as_ref());
        m.csv.join(&c.csv);
        m.files.extend(c.files);
        m.files.sort();
        m.keys.extend(c.keys);
    }
    // a file alone in its folder that no other joined is read by its path
    for c in &mut out {
        if c.wanted.as_deref().is_some_and(|w| !w.contains('{')) {
            c.wanted = None;
        }
    }
    out
}

/// Whether two documents' arrays of records (`signature`s: the names of those with a record)
/// agree: each array one holds, the other holds too, or holds empty (a run that logged no
/// record yet: `runs: []`), so that one source of the array reads both.
fn arrays_agree(a: &[String], a_outline: Option<&Outline>, b: &[String], b_outline: Option<&Outline>) -> bool {
    let empty_in = |name: &String, outline: Option<&Outline>| {
        matches!(outline, Some(Outline::Object(members))
            if members.iter().any(|(k, m)| k == name && matches!(m, Member::Records { len: 0, .. })))
    };
    a.iter().all(|n| b.contains(n) || empty_in(n, b_outline))
        && b.iter().all(|n| a.contains(n) || empty_in(n, a_outline))
}

/// Joins to cluster `c` the arrays of records of another document ([`arrays_agree`] with
/// them): each array with a record in either is one of the cluster's, its first record's
/// keys those of the document that has one.
fn join_arrays(c: &mut Cluster, signature: &[String], outline: Option<&Outline>) {
    for name in signature {
        if c.signature.contains(name) {
            continue;
        }
        c.signature.push(name.clone());
        let given = match outline {
            Some(Outline::Object(members)) => members.iter().find(|(k, _)| k == name).map(|(_, m)| m.clone()),
            _ => None,
        };
        if let (Some(Outline::Object(members)), Some(given)) = (c.outline.as_mut(), given) {
            for (k, m) in members.iter_mut() {
                if k == name {
                    *m = given.clone();
                }
            }
        }
    }
}

/// The sources of one group of plain files: one, or for JSON documents holding arrays of
/// records, one per array and one of the rest of each document.
fn cluster_plans(c: Cluster) -> Vec<SourcePlan> {
    let mut plans = Vec::new();
    let base = group_name(&c.dir, &c.files);
    // (said of the files finally read: see `TablePlan::description`)
    let shown = "{files}";
    // a captured pattern names the files without their compression: one per compression found
    // (`{run}/log.jsonl`, `{run}/log.jsonl.gz`)
    let wanted: Vec<String> = match &c.wanted {
        Some(w) => {
            let suffixes: BTreeSet<&str> = c
                .files
                .iter()
                .map(|f| {
                    let name = f.rsplit('/').next().unwrap_or(f);
                    &name[strip_compression(name).len()..]
                })
                .collect();
            suffixes.into_iter().map(|sfx| format!("{w}{sfx}")).collect()
        }
        None => glob_of(&c.dir, &c.files).into_iter().collect(),
    };
    let generic_keys = |keys: &BTreeSet<String>| -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let run = ["run_id", "run"].into_iter().find(|k| keys.contains(*k));
        let step = ["step", "_step", "global_step"].into_iter().find(|k| keys.contains(*k));
        if let (Some(r), Some(s)) = (run, step) {
            out.push(vec![r.to_string(), s.to_string()]);
        }
        if let Some(s) = step {
            out.push(vec![s.to_string()]);
        }
        for k in ["id", "run_id", "example_id", "uuid"] {
            if keys.contains(k) {
                out.push(vec![k.to_string()]);
            }
        }
        out
    };
    match (&c.format, &c.outline) {
        (Format::Json | Format::Yaml, Some(Outline::Object(members))) => {
            let arrays: Vec<&String> = c.signature.iter().collect();
            for m in &arrays {
                let first: BTreeSet<String> = match members.iter().find(|(n, _)| n == *m) {
                    Some((_, Member::Records { first, .. })) => first.iter().cloned().collect(),
                    _ => BTreeSet::new(),
                };
                let mut plan = SourcePlan::new(
                    format!("{base}_{}", sanitize(m)),
                    c.format,
                    c.files.clone(),
                    format!("Records of the array `{m}` of {shown}."),
                );
                plan.record_path = Some(format!("/{}", crate::stages::ingest::path::pointer_token(m)));
                plan.wanted = wanted.clone();
                plan.keys = generic_keys(&first);
                plans.push(plan);
            }
            // the rest of the document, when there is any: one record per file
            if members.len() > arrays.len() {
                let mut plan = SourcePlan::new(
                    base.clone(),
                    c.format,
                    c.files.clone(),
                    if arrays.is_empty() {
                        format!("The documents of {shown}, one row per file.")
                    } else {
                        format!(
                            "The documents of {shown}, one row per file, without the {} {} (each a table of its \
                             own).",
                            if arrays.len() == 1 { "array" } else { "arrays" },
                            arrays.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "),
                        )
                    },
                );
                plan.wanted = wanted.clone();
                // one row per file: the path's captures, when there are any
                plan.keys = vec![vec![]];
                plan.keys.extend(generic_keys(&c.keys));
                plan.hidden = arrays.iter().map(|a| a.to_string()).collect();
                plan.fields = arrays
                    .iter()
                    .map(|a| Declared {
                        column: a.to_string(),
                        field_type: "any".into(),
                        reason: OWN_SOURCE.into(),
                        missing_values: Vec::new(),
                        missing_at: String::new(),
                    })
                    .collect();
                plans.push(plan);
            }
        }
        (format, _) => {
            let mut plan = SourcePlan::new(base, *format, c.files.clone(), format!("The records of {shown}."));
            plan.csv = c.csv;
            plan.wanted = wanted;
            plan.keys = generic_keys(&c.keys);
            plans.push(plan);
        }
    }
    plans
}

/// A source of a fixed format: (format name, path pattern).
type GroupKey = (String, String);

/// Sources of one fixed format whose patterns differ in folder names only
/// (`step100/{bench}/result.json`, `step200/{bench}/result.json`; lighteval's
/// `results/Qwen/Qwen3/…` and `results/my-org/sft/…`) become one, each folder that differs
/// captured (`{checkpoint}/{bench}/result.json`, `results/{org}/{model}/…`). A capture is
/// named after what the format's folders usually name, never after one of the format's
/// columns (`columns`: the format's name → its column names).
fn merge_levels(
    mut groups: BTreeMap<GroupKey, Vec<String>>,
    columns: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<GroupKey, Vec<String>> {
    let literal = |s: &str| !s.contains(['{', '*']);
    loop {
        let mut merge: Option<(Vec<GroupKey>, GroupKey)> = None;
        'find: for (format, pattern) in groups.keys() {
            let segs: Vec<&str> = pattern.split('/').collect();
            for (f, other) in groups.keys() {
                let o: Vec<&str> = other.split('/').collect();
                if f != format || other == pattern || o.len() != segs.len() || !same_leaf(format, pattern, other) {
                    continue;
                }
                // the folders that differ, each a plain name in both
                let levels: Vec<usize> = (0..segs.len() - 1).filter(|&j| o[j] != segs[j]).collect();
                if levels.is_empty() || levels.iter().any(|&j| !literal(segs[j]) || !literal(o[j])) {
                    continue;
                }
                // names for the levels, the innermost first
                let mut names: Vec<String> = Vec::new();
                let taken = columns.get(format).map(Vec::as_slice).unwrap_or_default();
                let candidates = capture_names(format)
                    .iter()
                    .map(|n| n.to_string())
                    .chain(std::iter::once("folder".to_string()).chain((2..).map(|i| format!("folder_{i}"))));
                for n in candidates {
                    if names.len() == levels.len() {
                        break;
                    }
                    if !pattern.contains(&format!("{{{n}}}")) && !taken.contains(&n) && !names.contains(&n) {
                        names.push(n);
                    }
                }
                let mut merged: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
                for (&j, n) in levels.iter().rev().zip(&names) {
                    merged[j] = format!("{{{n}}}");
                }
                // every pattern of the format that the merged one covers joins it
                let same: Vec<GroupKey> = groups
                    .keys()
                    .filter(|(f2, p2)| {
                        let q: Vec<&str> = p2.split('/').collect();
                        f2 == format
                            && q.len() == segs.len()
                            && (0..q.len()).all(|j| if levels.contains(&j) { literal(q[j]) } else { q[j] == segs[j] })
                    })
                    .cloned()
                    .collect();
                merge = Some((same, (format.clone(), merged.join("/"))));
                break 'find;
            }
        }
        let Some((same, key)) = merge else { return groups };
        let mut files: Vec<String> = same.iter().flat_map(|k| groups.remove(k).unwrap_or_default()).collect();
        files.extend(groups.remove(&key).unwrap_or_default());
        files.sort();
        files.dedup();
        groups.insert(key, files);
    }
}

/// Whether two patterns of `format` name files of one kind by their last part: the same
/// name, the same but compressed (`metrics.jsonl`, `metrics.jsonl.gz`), or Inspect's `.eval`
/// and `.json` logs, which its reader takes together.
fn same_leaf(format: &str, a: &str, b: &str) -> bool {
    let leaf = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let (a, b) = (leaf(a), leaf(b));
    let inspect = ["inspect-evals", "inspect-samples"].contains(&format);
    strip_compression(&a) == strip_compression(&b)
        || inspect && [a.as_str(), b.as_str()].iter().all(|l| matches!(*l, "*.eval" | "*.json"))
}

/// lighteval's results of models with and without an organisation (`results/{org}/{model}/…`
/// beside `results/{model}/…`: `gpt2` evaluated beside `Qwen/Qwen3-8B`) become one source
/// reading every depth (`results/**/results_{date_id}.json`), each row's model named by its
/// file's `model_name`; a source's patterns capture the same names, so two patterns cannot.
fn lighteval_models_of_any_depth(fixed: &mut Vec<(GroupKey, Vec<String>)>) {
    // (a model of a deeper name, `org/sub/model`, is named by its folders as they are)
    let re = regex::Regex::new(r"^((?:.*/)?results)/[^/]+(?:/[^/]+)*/(results_[^/]+)$").expect("static pattern");
    // (folder of the results, file name) → the group at each depth
    let mut depths: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, ((format, pattern), _)) in fixed.iter().enumerate() {
        if format != "lighteval-results" {
            continue;
        }
        if let Some(c) = re.captures(pattern) {
            depths.entry((c[1].to_string(), c[2].to_string())).or_default().push(i);
        }
    }
    let mut gone: Vec<usize> = Vec::new();
    let mut merged: Vec<(GroupKey, Vec<String>)> = Vec::new();
    for ((top, file), groups) in depths {
        if groups.len() < 2 {
            continue;
        }
        let mut files: Vec<String> = groups.iter().flat_map(|&i| fixed[i].1.clone()).collect();
        files.sort();
        gone.extend(groups);
        merged.push((("lighteval-results".to_string(), format!("{top}/**/{file}")), files));
    }
    gone.sort_unstable();
    for i in gone.into_iter().rev() {
        fixed.remove(i);
    }
    fixed.extend(merged);
}

/// Rewrites the folder of each pattern of a fixed format that another pattern of its format,
/// of a file of the same kind ([`same_leaf`]), covers (a plain folder name where the other
/// has a capture, the rest the same) with the other's folder: `logs/*.eval` beside
/// `{log_dir}/*.json` becomes `{log_dir}/*.eval`, `grpo/{run}/metrics.jsonl.gz` beside
/// `{experiment}/{run}/metrics.jsonl` becomes `{experiment}/{run}/metrics.jsonl.gz`, so that
/// they are read as one source with the same captures. The files stay as they are.
fn covered_by_captures(fixed: &mut Vec<(GroupKey, Vec<String>)>) {
    let folder = |p: &str| p.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
    let all: Vec<GroupKey> = fixed.iter().map(|(k, _)| k.clone()).collect();
    let covers = |wide: &str, narrow: &str| {
        let (w, n): (Vec<&str>, Vec<&str>) = (wide.split('/').collect(), narrow.split('/').collect());
        w.len() == n.len()
            && wide != narrow
            && w.iter().zip(&n).all(|(a, b)| a == b || (a.starts_with('{') && !b.contains(['{', '*'])))
    };
    for ((format, pattern), _) in fixed.iter_mut() {
        let dir = folder(pattern);
        let wide = all.iter().find(|(f, p)| f == format && same_leaf(format, p, pattern) && covers(&folder(p), &dir));
        if let Some((_, p)) = wide {
            let name = pattern.rsplit_once('/').map(|(_, n)| n.to_string()).unwrap_or_else(|| pattern.clone());
            *pattern = format!("{}/{name}", folder(p));
        }
    }
    // two patterns made one: their files together
    let mut merged: Vec<(GroupKey, Vec<String>)> = Vec::new();
    for (k, files) in fixed.drain(..) {
        match merged.iter_mut().find(|(m, _)| *m == k) {
            Some((_, all)) => {
                all.extend(files);
                all.sort();
                all.dedup();
            }
            None => merged.push((k, files)),
        }
    }
    *fixed = merged;
}

/// What the folders above a fixed format's files usually name, the innermost first: the
/// names [`merge_levels`] gives the folders it captures.
fn capture_names(format: &str) -> &'static [&'static str] {
    match format {
        "tinker-metrics" | "tinker-checkpoints" | "tinker-timings" | "tinker-rollouts" | "tinker-rollout-steps" => {
            &["experiment", "group"]
        }
        "tinker-eval-result" | "tinker-eval-trajectories" => &["checkpoint", "model"],
        "verl-generations" => &["phase", "experiment"],
        // `$VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl`
        "verl-metrics" => &["project", "group"],
        "lighteval-results" => &["model", "org"],
        "lighteval-details" => &["run", "model", "org"],
        // Inspect's logs hold the model: their folder is named for what it is
        "inspect-evals" | "inspect-samples" => &["log_dir", "experiment"],
        _ => &["model", "experiment"],
    }
}

/// Whether a W&B file is a `run.history()` CSV dump without a column naming its run.
fn unnamed_history(l: &Looked) -> bool {
    use crate::stages::ingest::wandb::{WandbTable, csv};
    if !strip_compression(&l.rel).to_ascii_lowercase().ends_with(".csv") {
        return false;
    }
    let input = InputFile { rel: l.rel.clone(), path: l.path.clone(), captures: vec![] };
    let Ok(header) = csv::header(&input) else { return false };
    csv::detect(&header, WandbTable::History) == Ok(csv::CsvKind::History)
        && !header.iter().any(|h| h == "run_id" || h == "id")
}

/// Path patterns for W&B files: a run folder's files by the pattern of run folders
/// (`wandb/*run-*/files/config.yaml`), other files by name.
fn wandb_patterns(files: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        let segs: Vec<&str> = f.split('/').collect();
        let p = match segs.iter().rposition(|s| is_run_dir(s)) {
            Some(j) if j + 1 < segs.len() => {
                let mut s: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
                s[j] = "*run-*".into();
                // a run's log is named after the run
                let last = s.len() - 1;
                if j + 1 == last && s[last].ends_with(".wandb") && s[last].starts_with("run-") {
                    s[last] = "run-*.wandb".into();
                }
                s.join("/")
            }
            _ => f.clone(),
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A glob matching files of one folder (`dir/run_*.json`) when they share a beginning or an
/// end; `None` for one file, or none shared.
fn glob_of(dir: &str, files: &[String]) -> Option<String> {
    if files.len() < 2 {
        return None;
    }
    let names: Vec<&str> = files.iter().map(|f| f.rsplit('/').next().unwrap_or(f)).collect();
    let first = names[0];
    let mut prefix = first.len();
    let mut suffix = first.len();
    for n in &names[1..] {
        prefix = prefix.min(first.bytes().zip(n.bytes()).take_while(|(a, b)| a == b).count());
        suffix = suffix.min(first.bytes().rev().zip(n.bytes().rev()).take_while(|(a, b)| a == b).count());
    }
    let shortest = names.iter().map(|n| n.len()).min().unwrap_or(0);
    if prefix + suffix > shortest {
        suffix = shortest - prefix;
    }
    let (mut p, mut s) = (prefix, suffix);
    while !first.is_char_boundary(p) {
        p -= 1;
    }
    while !first.is_char_boundary(first.len() - s) {
        s -= 1;
    }
    // a shared beginning ends before its digits (`run_0*` of `run_00001`…: `run_*`)
    let p = first[..p].trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let glob = format!("{}*{}", &first[..p], &first[first.len() - s..]);
    Some(if dir.is_empty() { glob } else { format!("{dir}/{glob}") })
}

/// The first of `wanted` that matches exactly `files` under `raw` (and whose captures can be
/// read one way only), else the files themselves. A file of `not_read` that a pattern matches
/// does not stop it: the pipeline's `not_read` lists it, and no source reads such a file (a
/// run's log that does not read keeps its folder's `{run}` for the others).
fn exact_patterns(raw: &Path, wanted: &[String], files: &[String], not_read: &[NotRead]) -> Vec<String> {
    exact_patterns_leaving_out(raw, wanted, files, not_read).0
}

/// [`exact_patterns`], and the files of `not_read` the patterns match (which the source
/// leaves out, as the pipeline's `not_read` lists them).
fn exact_patterns_leaving_out(
    raw: &Path,
    wanted: &[String],
    files: &[String],
    not_read: &[NotRead],
) -> (Vec<String>, Vec<String>) {
    let want: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let left_out: BTreeSet<&str> = not_read.iter().map(|n| n.file.as_str()).collect();
    // all wanted patterns together first (W&B: one per kind of file), then each alone
    let mut candidates: Vec<Vec<String>> = vec![wanted.to_vec()];
    candidates.extend(wanted.iter().map(|w| vec![w.clone()]));
    for c in candidates.into_iter().filter(|c| !c.is_empty()) {
        let Ok(found) = crate::stages::ingest::files::find(raw, &c, "init") else { continue };
        let got: BTreeSet<&str> =
            found.iter().map(|f| f.rel.as_str()).filter(|f| !left_out.contains(f) || want.contains(f)).collect();
        let unambiguous = c.iter().all(|p| match crate::stages::ingest::files::PathPattern::new(p) {
            Ok(pat) => found.iter().all(|f| pat.ambiguity(&f.rel).is_none()),
            Err(_) => false,
        });
        if got == want && unambiguous {
            let skipped = found.iter().map(|f| f.rel.clone()).filter(|f| !want.contains(f.as_str())).collect();
            return (c, skipped);
        }
    }
    (files.to_vec(), Vec::new())
}

/// A table name for files of `dir`: the one file's name, the beginning the files share, or
/// the folder's name.
fn group_name(dir: &str, files: &[String]) -> String {
    let stems: Vec<&str> = files
        .iter()
        .map(|f| {
            let n = f.rsplit('/').next().unwrap_or(f);
            let n = strip_compression(n);
            n.rsplit_once('.').map(|(s, _)| s).unwrap_or(n)
        })
        .collect();
    let first = stems[0];
    let mut prefix = first.len();
    for s in &stems[1..] {
        prefix = prefix.min(first.bytes().zip(s.bytes()).take_while(|(a, b)| a == b).count());
    }
    while !first.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let shared = if stems.len() == 1 {
        &first[..prefix]
    } else {
        first[..prefix].trim_end_matches(|c: char| c.is_ascii_digit())
    };
    let shared = sanitize(shared);
    // one file's whole name, or a beginning that says something
    if !shared.is_empty() && (stems.len() == 1 || shared.len() >= 3) {
        return shared;
    }
    let folder = sanitize(dir.rsplit('/').next().unwrap_or(dir));
    if folder.is_empty() { "records".into() } else { folder }
}

/// A table name of `s`: lower-case ASCII letters, digits and `_`, starting with a letter.
fn sanitize(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '_' };
        if !(c == '_' && (out.is_empty() || out.ends_with('_'))) {
            out.push(c);
        }
    }
    let mut out = out.trim_end_matches('_').to_string();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "t_");
    }
    out.chars().take(60).collect::<String>().trim_end_matches('_').to_string()
}

/// Table names given so far (a table `x` and its source `x_raw` share SQL's namespace), and
/// the folder each name's files lie in.
#[derive(Default)]
struct Names(BTreeSet<String>, BTreeMap<String, Option<String>>);

impl Names {
    /// Whether `name` (and its source's `name_raw`) is free.
    fn free(&self, name: &str) -> bool {
        !(self.0.contains(name)
            || self.0.contains(&format!("{name}_raw"))
            || name.ends_with("_raw") && self.0.contains(name.trim_end_matches("_raw")))
    }

    /// A free name: `base`, else `<folder>_<base>` when the files lie in a folder other than
    /// the files named `base` first (`verl_config` beside the runs' `config`), else `base_2`,
    /// `base_3`, ….
    fn take(&mut self, base: &str, folder: Option<&str>) -> String {
        let base = if base.is_empty() { "records" } else { base };
        let mut name = base.to_string();
        let first_folder = self.1.get(base).cloned().flatten();
        if !self.free(&name)
            && let Some(f) = folder.filter(|f| first_folder.as_deref() != Some(*f)).map(sanitize)
            && !f.is_empty()
            && f != base
            && self.free(&format!("{f}_{base}"))
        {
            name = format!("{f}_{base}");
        }
        self.1.entry(base.to_string()).or_insert_with(|| folder.map(str::to_string));
        let mut n = 2;
        while !self.free(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.0.insert(name.clone());
        self.0.insert(format!("{name}_raw"));
        name
    }
}

// ------------------------------------------------------------------ reading sources

/// What reading a source in full found.
#[derive(Debug, Clone)]
struct Trial {
    /// Its rows' schema (provenance columns included).
    schema: SchemaRef,
    rows: u64,
    /// The first candidate key that holds (no null, no duplicate).
    key: Vec<String>,
    /// Whether a candidate was given up past [`KEY_CHECK_MAX_ROWS`] rows, unchecked.
    key_unchecked: bool,
    /// When no key holds: why the most evident candidate does not.
    key_note: Option<String>,
    /// Where `key` repeats, and how many rows repeat an earlier one, when it is a resumable
    /// log's key that holds but for rows a resumed run logged again (the table keeps the last
    /// row of each key).
    keep_last: Option<(String, u64)>,
    /// A hand-made table's columns that name its rows, and where they first repeat, when no
    /// key holds for repeats alone (no null): the table's `report_repeats`, written commented
    /// out (rows that repeat them may be results given twice, or runs a seed tells apart).
    report_repeats: Option<(Vec<String>, String)>,
    /// Rows of a Tinker metrics log without a step (`log_summary`'s), when all are read.
    stepless: u64,
    /// Rows of a W&B history without a `timestamp` (a record without `_timestamp`): the
    /// sessions of a run are ordered by it only when every row has one.
    untimed: u64,
    /// Of a log a run appends to, the files whose last resumed attempt stopped short of where
    /// the attempt before had been (see [`StepOrder::spliced`]).
    spliced: Vec<String>,
    /// Of a trackio project, whether a run logged a metric at a step again without its steps
    /// going back between (one attempt logging it twice): each row is then kept or set aside
    /// on its own, not the stopped attempt's records whole ([`Attempts`]).
    logged_twice: bool,
    /// Text columns of numbers written so that no reader takes them for numbers (`"71.2%"`,
    /// `"1,319"`), with what the note about each says.
    number_texts: Vec<NumberText>,
    /// Number columns of a file whose decimals are written with a comma, read as numbers with a
    /// dot before three digits (`1.319`: thousands there, likely): the column, the note about
    /// it and its description in the schema.
    dot_thousands: Vec<(String, (String, String))>,
    /// Of the files whose records were set aside (`on_invalid = "reject"`), the records set
    /// aside and the records read, by file.
    rejected: BTreeMap<String, (u64, u64)>,
}

enum Settled {
    Ok(SourcePlan, Box<Trial>),
    /// Read without a problem, and without a row.
    Empty(SourcePlan),
    /// Nothing of it can be read (its files are in the not-read list).
    Failed,
}

/// Reads a source until it reads without a problem: declaring columns and leaving out files
/// as the problems found say.
fn settle(raw: &Path, mut plan: SourcePlan, work: &Path, not_read: &mut Vec<NotRead>) -> Settled {
    let fail = |plan: &SourcePlan, why: &str, not_read: &mut Vec<NotRead>| {
        for f in &plan.files {
            // the file is named beside its reason: not in it again (`a.csv: a.csv:1: …`)
            not_read.push(NotRead { problems: Vec::new(), file: f.clone(), reason: without_file(f, why) });
        }
        Settled::Failed
    };
    // a column whose reading as numbers with `coerce_nonfinite_strings` is being tried
    let mut coerce_guess: Option<String> = None;
    // whether the source was read with its bad records set aside
    let mut reject_tried = false;
    // columns whose values of another type that read sets aside (each with why, for `any`)
    let mut other_types: Vec<(String, String)> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        if plan.files.is_empty() {
            return Settled::Failed;
        }
        // a guess whose column was declared text since (by an error naming it) is taken back;
        // one declared a number with its missing values is what the guess settled
        if let Some(col) =
            coerce_guess.take_if(|c| plan.fields.iter().any(|d| &d.column == c && d.missing_values.is_empty()))
        {
            plan.coerce_nonfinite = None;
            tracing::debug!("coerce_nonfinite_strings taken back: {col} is declared");
        }
        (plan.patterns, plan.skipped) = exact_patterns_leaving_out(raw, &plan.wanted, &plan.files, not_read);
        let outcome = read_source(raw, &plan, work);
        let (violations, error) = match outcome {
            // a key that is the empty string names no column: its files are left out
            Ok(Some(trial)) if trial.schema.fields().iter().any(|f| f.name().is_empty()) => {
                return fail(
                    &plan,
                    "a record has a key that is the empty string (\"\"), which cannot name a column: rename it in \
                     the file, or declare the source by hand with a record_path or SQL that leaves it out",
                    not_read,
                );
            }
            Ok(Some(trial))
                if !other_types.is_empty()
                    && trial.rejected.values().any(|(bad, good)| bad.saturating_mul(RARE_OTHER_TYPE) > bad + good) =>
            {
                // values of another type too many to set aside: the columns keep them as JSON text
                for (col, why) in std::mem::take(&mut other_types) {
                    declare(&mut plan.fields, col, "any", why);
                }
                plan.reject_invalid = None;
                reject_tried = false;
                continue;
            }
            // numbers a dot may group by thousands, in a file of decimal commas: kept as text,
            // as written, with the SQL of each reading (a float would publish 1.319 for 1319)
            Ok(Some(trial)) if !trial.dot_thousands.is_empty() => {
                for (c, (note, description)) in &trial.dot_thousands {
                    declare(&mut plan.fields, c.clone(), "string", description.clone());
                    plan.dot_thousands.push(note.clone());
                }
                continue;
            }
            Ok(Some(trial)) if plan.reject_invalid.is_some() => {
                // a file as many of whose records are bad as good, or more, is left out after all
                let worse: Vec<(String, (u64, u64))> = trial
                    .rejected
                    .iter()
                    .filter(|(_, (bad, good))| bad >= good)
                    .map(|(f, n)| (f.clone(), *n))
                    .collect();
                if !worse.is_empty() {
                    let problems = plan.reject_invalid.as_ref().map(|(_, p)| p.clone()).unwrap_or_default();
                    for (f, (bad, good)) in worse {
                        let found = problems.get(&f).cloned().unwrap_or_else(|| {
                            vec![format!("{bad} of its records do not read, and {good} rows do (rule on_invalid)")]
                        });
                        leave_out(&mut plan, not_read, f, found);
                    }
                    continue;
                }
                let bad: u64 = trial.rejected.values().map(|(bad, _)| bad).sum();
                plan.reject_invalid = match (bad, plan.reject_invalid.take()) {
                    (0, _) | (_, None) => None,
                    (n, Some((first, problems))) => Some((
                        format!(
                            "{} bad record{} among good ones, set aside in rejects/ and named in the card; the first: \
                             {first}",
                            crate::core::numbers::group_digits(n),
                            if n == 1 { "" } else { "s" }
                        ),
                        problems,
                    )),
                };
                if trial.rows == 0 {
                    return Settled::Empty(plan);
                }
                return Settled::Ok(plan, Box::new(trial));
            }
            Ok(Some(trial)) => return Settled::Ok(plan, Box::new(trial)),
            Ok(None) => return Settled::Empty(plan),
            Err(Error::Invalid { violations, .. }) => (violations, None),
            Err(e) => (vec![], Some(e)),
        };
        let generic = !plan.format.fixed_columns() && plan.format != Format::Parquet;
        let text_type = if plan.format == Format::Csv { "string" } else { "any" };
        let mut changed = false;
        if let Some(e) = error {
            // an error placed at one of the source's files leaves that file out
            let place = match &e {
                Error::Config { location, .. } => Some(location.clone()),
                Error::Io { path, .. } => Some(rel_of(raw, path)),
                Error::Format { context, .. } => Some(context.clone()),
                _ => None,
            };
            let file = place
                .as_deref()
                .and_then(|p| plan.files.iter().find(|f| p == f.as_str() || p.starts_with(&format!("{f}:"))).cloned());
            if let Some(f) = file
                && plan.files.len() > 1
            {
                let n =
                    NotRead { problems: Vec::new(), file: f.clone(), reason: without_file(&f, &error_reason(raw, &e)) };
                not_read.push(n.clone());
                plan.left_out.push(n);
                plan.files.retain(|x| x != &f);
                forget_untyped(&mut plan.fields);
                continue;
            }
            // columns that no value types: `$.col: …` lines
            if generic && let Error::Config { message, .. } = &e {
                for line in message.lines() {
                    let Some(col) = crate::stages::ingest::path::top_key(line) else { continue };
                    let why = line.split_once(": ").map(|(_, m)| m).unwrap_or(line);
                    // a column null everywhere is text of nulls; a part of one that no value
                    // types keeps the whole column as JSON text
                    let whole =
                        crate::stages::ingest::path::render(&[crate::stages::ingest::path::Seg::Key(col.clone())]);
                    let null_everywhere = line.starts_with(&format!("{whole}: "))
                        && why.starts_with("no input file has a non-null value");
                    let ty = if null_everywhere { "string" } else { text_type };
                    // a part of the column is named: the reason is the part's, not the column's
                    let part = line.split_once(": ").map_or("", |(p, _)| p);
                    let reason = if part.is_empty() || part == whole {
                        first_sentence(why)
                    } else {
                        format!("at {part}, {}", first_sentence(why))
                    };
                    changed |= declare(&mut plan.fields, col, ty, reason);
                }
            }
            if changed {
                continue;
            }
            return fail(&plan, &error_reason(raw, &e), not_read);
        }
        // violations: a column of two types is declared; any other problem leaves its file out
        let mut out_files: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let type_of_column = |v: &&crate::core::report::Violation, col: &str| {
            generic && v.rule == "type" && crate::stages::ingest::path::top_key(&v.path).as_deref() == Some(col)
        };
        // the guess of the round before did not settle its column: taken back, the column is text
        // (a missing value's text, which the column's missingValues reads, settles with it)
        let missing = |v: &&crate::core::report::Violation| {
            matches!(&v.finding, Some(crate::core::report::Finding::Type { missing: Some(_), .. }))
        };
        if let Some(col) = coerce_guess.take()
            && let Some(v) = violations.iter().find(|v| type_of_column(v, &col) && !missing(v))
        {
            plan.coerce_nonfinite = None;
            let at = v.source.as_ref().map(|s| format!(" (at {s})")).unwrap_or_default();
            declare(&mut plan.fields, col, text_type, format!("{}{at}", first_sentence(&v.message)));
            changed = true;
        }
        let coerced_before = plan.coerce_nonfinite.is_some() || changed;
        for v in &violations {
            // a results document's number (or non-finite float) written as text, which an option
            // reads (counted, and said in the card), rather than its metric set aside
            let fixed = plan.format.fixed_columns();
            let read_by = |option: &str, what: &str| -> Option<String> {
                let (found, _) = v.message.split_once(&crate::stages::ingest::evals::option_reads_it(option))?;
                let at = v.source.as_ref().map(|s| format!("{s}: ")).unwrap_or_default();
                fixed.then(|| format!("{at}{}: {found}: {what}", v.path))
            };
            if plan.coerce_numeric.is_none()
                && let Some(why) = read_by("coerce_numeric_strings", "a number written as text")
            {
                plan.coerce_numeric = Some(why);
                changed = true;
                continue;
            }
            if plan.coerce_nonfinite.is_none()
                && let Some(why) = read_by("coerce_nonfinite_strings", "a non-finite float written as text")
            {
                plan.coerce_nonfinite = Some(why);
                changed = true;
                continue;
            }
            // a run's W&B history cut short (a run killed): read as it is, marked, and named in
            // the card, rather than the file left out (a sampled export is left out: the run's
            // whole history may be in other files)
            if plan.format == Format::Wandb
                && v.rule == "wandb-sampled"
                && v.message.contains(crate::stages::ingest::wandb::HISTORY_INCOMPLETE)
            {
                if plan.accept_sampled.is_none() {
                    let first = v.message.split("; the release would look complete").next().unwrap_or(&v.message);
                    plan.accept_sampled =
                        Some(format!("{}: {first}; its rows are marked sampled, and the card names the run", v.path));
                    changed = true;
                }
                continue;
            }
            // a file whose writer was stopped mid-record (a run killed): its other records are
            // read, the cut one set aside and named, rather than the whole file left out
            if v.rule == "truncated" {
                if plan.reject_truncated.is_none() {
                    let at = v.source.as_ref().map(|s| format!("{s}: ")).unwrap_or_default();
                    plan.reject_truncated = Some(format!(
                        "{at}{}; set aside in rejects/, and named in the card",
                        first_sentence(&v.message)
                    ));
                    changed = true;
                }
                continue;
            }
            let col = if generic { crate::stages::ingest::path::top_key(&v.path) } else { None };
            let found_type = match &v.finding {
                Some(crate::core::report::Finding::Type {
                    expected,
                    found,
                    nonfinite_string,
                    decided_at,
                    missing,
                    ..
                }) => {
                    Some((expected.as_str(), found.as_str(), *nonfinite_string, decided_at.as_deref(), missing.clone()))
                }
                _ => None,
            };
            let at = v.source.as_ref().map(|s| format!(" (at {s})")).unwrap_or_default();
            // a value in a part of a column (`$.stats.max`): the reason names the part
            let part = match &col {
                Some(c)
                    if v.path
                        != crate::stages::ingest::path::render(&[crate::stages::ingest::path::Seg::Key(c.clone())]) =>
                {
                    format!("at {}, ", v.path)
                }
                _ => String::new(),
            };
            match (col, found_type) {
                // a column that a "NaN" string typed as text, which numbers broke: read again
                // with such strings as numbers, a guess taken back if it does not settle it
                (Some(col), Some(("string", found, _, decided_at, _)))
                    if !coerced_before
                        && plan.coerce_nonfinite.is_none()
                        && found.starts_with("number ")
                        && matches!(plan.format, Format::Jsonl | Format::Json | Format::Yaml) =>
                {
                    let first = decided_at.map(|p| format!(" (the first at {p})")).unwrap_or_default();
                    plan.coerce_nonfinite = Some(format!("{col} holds numbers and strings such as \"NaN\"{first}"));
                    coerce_guess = Some(col);
                    changed = true;
                }
                // a number column that holds numbers written as "NaN" strings stays one
                (Some(col), Some((_, found, true, _, _))) if !coerced_before => {
                    if plan.coerce_nonfinite.is_none() {
                        plan.coerce_nonfinite = Some(format!("{col} holds numbers and {found}{at}"));
                    }
                    changed = true;
                }
                // a column of numbers or booleans holding a text: a missing value is read as null
                // there (`missingValues`); a few others have their records set aside, weighed by
                // the read with `on_invalid = "reject"` (below); either way the column keeps its type
                (Some(col), Some((expected, _, _, _, missing)))
                    if v.path != "$"
                        && v.rule == "type"
                        && matches!(expected, "number" | "integer" | "boolean")
                        && plan.fields.iter().all(|d| d.column != col || !d.missing_values.is_empty())
                        && (missing.is_some() || (!reject_tried && text_type == "any" && v.source.is_some())) =>
                {
                    let reason = format!("{part}{}{at}", first_sentence(&v.message));
                    match (missing, &v.source) {
                        (Some(text), _) => {
                            let place = v.source.as_ref().map(|s| s.to_string()).unwrap_or_default();
                            // a field's list replaces the source's: a CSV file's empty cell stays null
                            if plan.format == Format::Csv && !text.is_empty() {
                                declare_missing(&mut plan.fields, col.clone(), expected, String::new(), "");
                            }
                            changed |= declare_missing(&mut plan.fields, col, expected, text, &place);
                        }
                        (None, Some(src)) => {
                            if !other_types.iter().any(|(c, _)| c == &col) {
                                other_types.push((col, reason));
                            }
                            out_files.entry(src.file.clone()).or_default().push(reason_of(v));
                        }
                        (None, None) => {}
                    }
                }
                (Some(col), _) if v.path != "$" && v.rule == "type" => {
                    changed |=
                        declare(&mut plan.fields, col, text_type, format!("{part}{}{at}", first_sentence(&v.message)));
                }
                _ => {
                    let Some(src) = &v.source else { continue };
                    out_files.entry(src.file.clone()).or_default().push(reason_of(v));
                }
            }
        }
        if changed {
            continue;
        }
        if out_files.is_empty() {
            let first = violations.first().map(|v| v.to_string()).unwrap_or_else(|| "the source cannot be read".into());
            return fail(&plan, &first, not_read);
        }
        // a few bad records among good ones are set aside rather than their files left out: the
        // source is read again with `on_invalid = "reject"`, and a file as many of whose records
        // are bad as good, or more, is left out then (a Trainer state that does not read has an earlier
        // save to read instead)
        if !reject_tried && out_files.keys().all(|f| !plan.earlier.contains_key(f)) {
            reject_tried = true;
            let first = out_files.iter().next().map(|(f, p)| format!("{f}, {}", p.first().map_or("", |s| s.as_str())));
            plan.reject_invalid = Some((first.unwrap_or_default(), out_files));
            continue;
        }
        for (f, problems) in out_files {
            leave_out(&mut plan, not_read, f, problems);
        }
    }
    fail(&plan, "its columns' types could not be settled", not_read)
}

/// Leaves `f` out of `plan` for the `problems` found in it (the first is the reason; the rest
/// are listed with `--format json`); a Trainer state's earlier save is read instead, when its run
/// has one.
fn leave_out(plan: &mut SourcePlan, not_read: &mut Vec<NotRead>, f: String, problems: Vec<String>) {
    // a run's Trainer state that does not read: its latest earlier save is read instead
    let instead = plan.earlier.remove(&f).filter(|s| !s.is_empty()).map(|mut saves| {
        let save = saves.remove(0);
        not_read.retain(|n| n.file != save);
        for n in not_read.iter_mut().filter(|n| saves.contains(&n.file)) {
            n.reason = earlier_save(&save);
        }
        plan.files.push(save.clone());
        plan.files.sort();
        plan.earlier.insert(save.clone(), saves);
        format!("; its run's log is read from {save}, saved earlier")
    });
    let more = match problems.len() {
        0 | 1 => String::new(),
        // the reason goes to pipeline.toml and the card too: `--format json`'s `problems` lists them
        n => format!(" (and {} more problems in it)", n - 1),
    };
    let reason =
        format!("{}{more}{}", problems.first().map(String::as_str).unwrap_or_default(), instead.unwrap_or_default());
    let problems = if problems.len() > 1 { problems } else { Vec::new() };
    let n = NotRead { file: f.clone(), reason, problems };
    not_read.push(n.clone());
    plan.left_out.push(n);
    plan.files.retain(|x| x != &f);
    forget_untyped(&mut plan.fields);
}

/// Forgets the columns declared text because no value typed them (null in every record read):
/// a file left out may have been what named them (its header), and the next round of reading
/// declares again those that the other files hold.
fn forget_untyped(fields: &mut Vec<Declared>) {
    fields.retain(|d| !(d.field_type == "string" && d.reason.starts_with("no input file has a non-null value")));
}

/// A violation as the reason a file is not read: its place in the file, then what is wrong.
fn reason_of(v: &crate::core::report::Violation) -> String {
    use crate::core::report::Position;
    let mut place = match v.source.as_ref().map(|s| (&s.at, s.file.as_str())) {
        // a `.wandb` log is binary: its places are record numbers
        Some((Position::Line(n), file)) if file.ends_with(".wandb") => format!("record {n}"),
        Some((Position::Line(n), _)) => format!("line {n}"),
        Some((Position::Pointer(p), _)) if !p.is_empty() => format!("record {p}"),
        _ => String::new(),
    };
    if !v.path.is_empty() && v.path != "$" {
        place = if place.is_empty() { v.path.clone() } else { format!("{place}, {}", v.path) };
    }
    let place = if place.is_empty() { String::new() } else { format!("{place}: ") };
    format!("{place}{} (rule {})", v.message, v.rule)
}

/// `reason` without the name of `file` it starts with, which the list of files not read
/// gives: `f.csv:3: …` is `line 3: …`, `f.json: …` is `…`; a reason that does not start with
/// it is kept.
fn without_file(file: &str, reason: &str) -> String {
    let Some(rest) = reason.strip_prefix(file).and_then(|r| r.strip_prefix(':')) else { return reason.to_string() };
    match rest.split_once(':') {
        Some((line, msg)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => {
            format!("line {line}:{msg}")
        }
        _ => rest.trim_start().to_string(),
    }
}

/// The path pattern that names the run of a `run.history()` dump at `rel`: the file's name
/// (`dir/{run}.csv`), or, for a name that says what the file is rather than which run
/// (`wandb_history.csv`, `history_export.csv`), its folder (`{run}/wandb_history.csv`).
fn dump_pattern(rel: &str) -> String {
    let (dir, file) = rel.rsplit_once('/').unwrap_or(("", rel));
    let stem = file.strip_suffix(".csv").unwrap_or(file).to_ascii_lowercase();
    let generic = ["history", "export", "wandb", "metrics"].iter().any(|w| stem.contains(w));
    match (generic, dir.rsplit_once('/')) {
        (true, Some((parent, _))) => format!("{parent}/{{run}}/{file}"),
        (true, None) if !dir.is_empty() => format!("{{run}}/{file}"),
        _ if dir.is_empty() => "{run}.csv".to_string(),
        _ => format!("{dir}/{{run}}.csv"),
    }
}

/// Declares column `col` of type `ty` (`any` or `string`) in `fields`, or makes a column
/// declared `string` `any`; whether anything changed.
fn declare(fields: &mut Vec<Declared>, col: String, ty: &str, reason: String) -> bool {
    match fields.iter_mut().find(|d| d.column == col) {
        // text after all: a column whose missing values did not settle it too
        Some(d) if (d.field_type == "string" && ty == "any") || !d.missing_values.is_empty() => {
            d.field_type = ty.into();
            d.reason = reason;
            d.missing_values.clear();
            true
        }
        Some(_) => false,
        None => {
            fields.push(Declared {
                column: col,
                field_type: ty.into(),
                reason,
                missing_values: Vec::new(),
                missing_at: String::new(),
            });
            true
        }
    }
}

/// Declares `col` of type `ty` with `text`, found at `at` (`file:line`), among its missing
/// values (a column declared so before gains it); false when the column is declared
/// otherwise, or has it already. The reason names every text and where the first was found.
fn declare_missing(fields: &mut Vec<Declared>, col: String, ty: &str, text: String, at: &str) -> bool {
    let d = match fields.iter_mut().position(|d| d.column == col) {
        Some(i) if fields[i].field_type == ty && !fields[i].missing_values.contains(&text) => {
            fields[i].missing_values.push(text);
            &mut fields[i]
        }
        Some(_) => return false,
        None => {
            fields.push(Declared {
                column: col,
                field_type: ty.into(),
                reason: String::new(),
                missing_values: vec![text],
                missing_at: at.to_string(),
            });
            fields.last_mut().expect("pushed")
        }
    };
    if d.missing_at.is_empty() {
        d.missing_at = at.to_string();
    }
    // (the empty text, which a CSV column's list holds so that its empty cells stay null, is
    // said as what it is, not as a text found)
    let mut found: Vec<String> = d.missing_values.iter().filter(|t| !t.is_empty()).map(|t| q(t)).collect();
    if d.missing_values.iter().any(String::is_empty) {
        found.push("empty values".into());
    }
    let first = if d.missing_at.is_empty() { String::new() } else { format!(", the first at {}", d.missing_at) };
    d.reason = format!("{} among {}s read as null, as missingValues says{first}", found.join(", "), ty);
    true
}

/// `text` (a file init writes) with the environment's token hidden in its reasons (see
/// [`crate::core::secrets::redact`]): TOML comments and `reason = "…"` lines, which quote the
/// data; the rest (paths, names, SQL, schemas) is kept as found, as the pipeline reads by it.
fn reasons_redacted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') || trimmed.starts_with("reason = ") {
            out.push_str(&crate::core::secrets::redact(line));
            continue;
        }
        // a comment after a value: the first `#` outside a string
        let mut in_string = false;
        let mut escaped = false;
        let mut comment = None;
        for (i, c) in line.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_string => escaped = true,
                '"' => in_string = !in_string,
                '#' if !in_string => {
                    comment = Some(i);
                    break;
                }
                _ => {}
            }
        }
        match comment {
            Some(i) => {
                out.push_str(&line[..i]);
                out.push_str(&crate::core::secrets::redact(&line[i..]));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The first sentence of a message (up to `;`), for a comment: at most 160 characters, a
/// longer one cut at a word's end.
fn first_sentence(s: &str) -> String {
    cut_at_word(s.split(';').next().unwrap_or(s).trim().replace('\n', " ").as_str(), 160)
}

/// The TOML text of a source (`[[source]]` and its fields), paths prefixed with `prefix`.
fn source_toml(name: &str, plan: &SourcePlan, prefix: &str) -> String {
    let mut t = String::new();
    t.push_str("[[source]]\n");
    t.push_str(&format!("name = {}\n", q(name)));
    let paths: Vec<String> = plan.patterns.iter().map(|p| format!("{prefix}{p}")).collect();
    if paths.len() == 1 {
        t.push_str(&format!("path = {}\n", q(&paths[0])));
    } else {
        t.push_str("path = [\n");
        for p in &paths {
            t.push_str(&format!("    {},\n", q(p)));
        }
        t.push_str("]\n");
    }
    t.push_str(&format!("format = {}\n", q(plan.format.name())));
    if let Some(r) = &plan.record_path {
        t.push_str(&format!("record_path = {}\n", q(r)));
    }
    if let Some(d) = plan.csv.delimiter {
        t.push_str(&format!("delimiter = {}\n", q(&(d as char).to_string())));
    }
    if let Some(c) = plan.csv.comment {
        t.push_str(&format!(
            "comment = {}   # lines that start with it are comments, above the header or among the rows\n",
            q(&(c as char).to_string())
        ));
    }
    if let Some(h) = plan.csv.header_row {
        t.push_str(&format!(
            "header_row = {h}   # the lines above it are notes; the header starts with `#` too, which `comment` would skip\n"
        ));
    }
    if plan.files.len() > 1 && !plan.format.fixed_columns() {
        t.push_str("columns = \"union\"   # a column that a file lacks is null in its rows\n");
    }
    // a format that leaves prompts and responses out unless asked: said where it can be changed
    let text_columns = |keep| crate::stages::ingest::format_columns(plan.format, keep).unwrap_or_default();
    let texts: Vec<String> = text_columns(true)
        .into_iter()
        .map(|(c, _)| c)
        .filter(|c| !text_columns(false).iter().any(|(d, _)| d == c))
        .collect();
    if !texts.is_empty() {
        t.push_str(&format!(
            "keep_text = false   # the texts {} are left out (true reads them: then select them in the table's query and declare them in its schema)\n",
            texts.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(why) = &plan.coerce_nonfinite {
        t.push_str(&format!("coerce_nonfinite_strings = true   # {}\n", why.replace('\n', " ")));
    }
    if let Some(why) = &plan.coerce_numeric {
        t.push_str(&format!("coerce_numeric_strings = true   # {}\n", why.replace('\n', " ")));
    }
    if let Some(why) = &plan.reject_truncated {
        t.push_str(&format!("on_truncated = \"reject\"   # {}\n", why.replace('\n', " ")));
    }
    if let Some((why, _)) = &plan.reject_invalid {
        t.push_str(&format!("on_invalid = \"reject\"   # {}\n", why.replace('\n', " ")));
    }
    if let Some(w) = plan.wandb_table {
        t.push_str(&format!("[source.wandb]\ntable = {}\n", q(w)));
        if plan.run_capture {
            t.push_str("run_capture = \"run\"   # the path's {run} names the run\n");
        }
        if let Some(why) = &plan.accept_sampled {
            t.push_str(&format!("on_sampled = \"accept\"   # {}\n", why.replace('\n', " ")));
        }
    }
    for d in &plan.fields {
        t.push_str(&format!("[[source.field]]   # {}\n", d.reason.replace('\n', " ")));
        t.push_str(&format!("name = {}\ntype = {}\n", q(&d.column), q(&d.field_type)));
        if !d.missing_values.is_empty() {
            let texts: Vec<String> = d.missing_values.iter().map(|m| q(m)).collect();
            t.push_str(&format!("missingValues = [{}]\n", texts.join(", ")));
        }
    }
    t
}

/// The body of a TOML multi-line basic string: backslashes, a run of three quotes and the
/// control characters TOML refuses in it (all but newline and tab: a column name may hold one)
/// escaped.
fn multiline_body(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    // quotes written in a row: the third is escaped, so that no run of three ends the string
    let mut quotes = 0;
    for c in s.chars() {
        match c {
            '"' if quotes == 2 => {
                out.push_str("\\\"");
                quotes = 0;
                continue;
            }
            '"' => out.push(c),
            '\\' => out.push_str("\\\\"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
        quotes = if c == '"' { quotes + 1 } else { 0 };
    }
    out
}

/// A TOML basic string.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// An error of a trial read as a reason a file is not read. An error placed at the source
/// init tries (a file the user never wrote, beside the raw files) gives its message alone.
fn error_reason(raw: &Path, e: &Error) -> String {
    let draft = raw.join("pipeline.toml").display().to_string();
    let text = match e {
        Error::Config { location, message } if location.starts_with(&draft) => message.clone(),
        e => e.to_string(),
    };
    crate::verbs::hub::redact(&text)
}

/// Reads the source of `plan` in full (its paths relative to `raw`): its schema, rows and key;
/// `None` when it holds no row.
fn read_source(raw: &Path, plan: &SourcePlan, work: &Path) -> Result<Option<Trial>> {
    // named as the pipeline will name it, for the messages that name the source
    let name = format!("{}_raw", sanitize(if plan.base.is_empty() { "records" } else { &plan.base }));
    let skipped: Vec<String> = plan.skipped.iter().map(|f| q(f)).collect();
    let text = format!(
        "name = \"init\"\nnot_read = [{}]\n{}[[table]]\nname = \"t\"\nquery = \"SELECT 1\"\n",
        skipped.join(", "),
        source_toml(&name, plan, "")
    );
    let def: PipelineDef = toml::from_str(&text)
        .map_err(|e| Error::config("pipeline.toml (as init writes it)", e.message().to_string()))?;
    let spec = PipelineSpec {
        dir: raw.to_path_buf(),
        file: raw.join("pipeline.toml"),
        text: String::new(),
        def,
        table_schemas: vec![None],
        source_schemas: vec![None],
        untyped_as_text: false,
        data_provenance: false,
    };
    let opts = IngestOptions {
        on_invalid: OnInvalid::Fail,
        large_cell_bytes: u64::MAX,
        read_digests: None,
        max_errors: 10_000,
    };
    let mut rejects = crate::stages::rejects::Rejects::new(work.join("rejects"));
    let captures: Vec<String> = plan
        .patterns
        .first()
        .and_then(|p| crate::stages::ingest::files::PathPattern::new(p).ok())
        .map(|p| p.names)
        .unwrap_or_default();
    let mut keys = Keys::new(&plan.keys, &captures, captures_tell_files_apart(plan));
    // a plain table: the columns that name its rows, after the candidates its column names give
    if matches!(plan.format, Format::Csv | Format::Jsonl | Format::Json | Format::Yaml | Format::Parquet) {
        keys.describe = Some(captures.clone());
        keys.whole = Some(WholeRows::default());
    }
    if plan.format == Format::TrackioMetrics {
        keys.attempts = Some(Attempts::default());
    }
    keys.order = match plan.format {
        Format::TinkerMetrics | Format::VerlMetrics | Format::TinkerTimings => Some(StepOrder::new("step", false)),
        Format::TinkerCheckpoints => Some(StepOrder::new("batch", true)),
        // a plain log of one run's steps per file (`runs/{run}/train_log.jsonl`), which a
        // resumed run appends to as Tinker's metrics log: a file of several runs' rows (a
        // `run` column) goes back at each run, and is not taken for one
        Format::Jsonl | Format::Csv => match plan.keys.first().map(Vec::as_slice) {
            Some([step]) => ["step", "_step", "global_step"]
                .into_iter()
                .find(|s| s == step)
                .map(|s| StepOrder { strict: true, ..StepOrder::new(s, false) }),
            _ => None,
        },
        _ => None,
    };
    let mut schema: Option<SchemaRef> = None;
    let mut rows = 0u64;
    // whether a W&B run's sessions count `_step` from the start again (see `resumable`)
    let mut restarted = false;
    let mut stepless = 0u64;
    let mut untimed = 0u64;
    // records read by file (a metrics line gives a row per metric: its rows share their
    // place), to weigh against the records a file sets aside
    let mut rows_by_file: BTreeMap<String, u64> = BTreeMap::new();
    let mut last_place: Option<(String, String)> = None;
    // a plain table's text columns of numbers written as text alone (`None` once another value
    // came)
    let plain = matches!(plan.format, Format::Csv | Format::Jsonl | Format::Json | Format::Yaml);
    let mut number_texts: BTreeMap<String, Option<NumberText>> = BTreeMap::new();
    // of a CSV file separated by semicolons, its float columns whose values are all at least 1
    // with at most three decimals: (one has three, its place); `None` once another came
    let mut dotted: BTreeMap<String, Option<Option<(f64, String)>>> = BTreeMap::new();
    let mut seen = |rb: &RecordBatch| -> Result<()> {
        if schema.is_none() {
            schema = Some(rb.schema());
        }
        if plan.format == Format::Csv && plan.csv.delimiter == Some(b';') {
            for (f, c) in rb.schema().fields().iter().zip(rb.columns()) {
                let Some(v) = arrow::array::AsArray::as_primitive_opt::<arrow::datatypes::Float64Type>(c) else {
                    continue;
                };
                let entry = dotted.entry(f.name().clone()).or_insert(Some(None));
                let Some(three) = entry.as_mut() else { continue };
                for (r, x) in v.iter().enumerate() {
                    let Some(x) = x else { continue };
                    let shown = x.to_string();
                    let decimals = shown.split_once('.').map_or(0, |(_, d)| d.len());
                    if !(x >= 1.0 && decimals <= 3) {
                        *entry = None;
                        break;
                    }
                    if decimals == 3 && three.is_none() {
                        *three = Some((x, row_place(rb, r)));
                    }
                }
            }
        }
        if plain {
            for (f, c) in rb.schema().fields().iter().zip(rb.columns()) {
                let Some(t) = arrow::array::AsArray::as_string_opt::<i32>(c) else { continue };
                if f.name().starts_with("_source_") || captures.contains(f.name()) {
                    continue;
                }
                let entry = number_texts.entry(f.name().clone()).or_insert_with(|| {
                    Some(NumberText { decimal_comma: plan.csv.delimiter == Some(b';'), ..NumberText::new(f.name()) })
                });
                // (a column given up is not read again, batch after batch)
                let Some(n) = entry.as_mut() else { continue };
                if !t.iter().enumerate().all(|(r, v)| v.is_none_or(|v| n.take(v, || row_place(rb, r)))) {
                    *entry = None;
                }
            }
        }
        if plan.reject_invalid.is_some()
            && let Some(files) =
                rb.column_by_name("_source_file").and_then(|c| arrow::array::AsArray::as_string_opt::<i32>(c))
        {
            let lines = rb.column_by_name("_source_line");
            for (r, f) in files.iter().enumerate() {
                let Some(f) = f else { continue };
                let line =
                    lines.and_then(|l| arrow::util::display::array_value_to_string(l, r).ok()).unwrap_or_default();
                if last_place.as_ref().is_some_and(|(lf, ll)| lf == f && *ll == line) {
                    continue;
                }
                *rows_by_file.entry(f.to_string()).or_default() += 1;
                last_place = Some((f.to_string(), line));
            }
        }
        if plan.format == Format::Wandb {
            untimed += rb.column_by_name("timestamp").map_or(rb.num_rows(), |c| c.null_count()) as u64;
        }
        // a Tinker metrics log's rows of a step, or without one, as the table takes them
        let step = rb.column_by_name("step").filter(|_| plan.format == Format::TinkerMetrics);
        let kept;
        let rb = match (plan.steps, step) {
            (StepRows::All, Some(step)) => {
                stepless += step.null_count() as u64;
                rb
            }
            (StepRows::With | StepRows::Without, Some(step)) => {
                let with = arrow::compute::is_not_null(step).map_err(|e| Error::format("step", e))?;
                let mask = match plan.steps {
                    StepRows::With => with,
                    _ => arrow::compute::not(&with).map_err(|e| Error::format("step", e))?,
                };
                kept = arrow::compute::filter_record_batch(rb, &mask).map_err(|e| Error::format("step", e))?;
                &kept
            }
            _ => rb,
        };
        rows += rb.num_rows() as u64;
        keys.observe(rb);
        Ok(())
    };
    if plan.format == Format::Parquet {
        let mut ingested = crate::stages::ingest::run(&spec, 0, work, &opts, &[], &mut rejects)?;
        ingested.found.check()?;
        let f = std::fs::File::open(&ingested.ipc_file).map_err(|e| Error::io(&ingested.ipc_file, e))?;
        let reader = arrow::ipc::reader::FileReader::try_new(std::io::BufReader::new(f), None)
            .map_err(|e| Error::format(ingested.ipc_file.display().to_string(), e))?;
        for rb in reader {
            seen(&rb.map_err(|e| Error::format(ingested.ipc_file.display().to_string(), e))?)?;
        }
        schema = schema.or(Some(ingested.schema.clone()));
        let _ = std::fs::remove_file(&ingested.ipc_file);
    } else {
        let mut streamed = crate::stages::ingest::stream(&spec, 0, &opts, &mut rejects, &mut seen)?;
        streamed.found.check()?;
        restarted = streamed.found.warnings.iter().any(|w| {
            w.kind == "wandb-repeated-step" && w.message.contains(crate::stages::ingest::wandb::RESTARTED_SESSIONS)
        });
    }
    let rejected: BTreeMap<String, (u64, u64)> =
        rejects.by_file.iter().map(|(f, n)| (f.clone(), (*n, rows_by_file.get(f).copied().unwrap_or(0)))).collect();
    let _ = rejects.abandon();
    if rows == 0 && rejected.is_empty() {
        return Ok(None);
    }
    // a source whose every record was set aside has no batch: the rows are weighed in settle
    let schema = schema.unwrap_or_else(|| std::sync::Arc::new(arrow::datatypes::Schema::empty()));
    // a log a run appends to, resumed from a checkpoint: the steps after that checkpoint are
    // logged again, and the last of each is the run's
    let resumable = matches!(
        plan.format,
        Format::TinkerCheckpoints | Format::TinkerTimings | Format::TinkerMetrics | Format::VerlMetrics
    ) || (matches!(plan.format, Format::Jsonl | Format::Csv) && keys.order.is_some())
        // a W&B run resumed in a folder of its own logs the steps since its checkpoint again
        // there (read folder by folder, the later session's last); sessions that count from the
        // start again are different steps
        || (plan.format == Format::Wandb && plan.wandb_table == Some("history") && !restarted);
    // a trackio project's database holds its log calls in the order they were made, several
    // runs to a file: a metric a run logs at a step again is its resumed attempt's
    let repeating = if plan.format == Format::TrackioMetrics {
        keys.first_repeating()
    } else {
        keys.repeating().filter(|_| resumable)
    };
    let (key, keep_last) = match repeating {
        Some((columns, at, n)) => (columns.to_vec(), Some((at.to_string(), n))),
        None => (keys.first_holding(), None),
    };
    // one row names itself: the columns that name rows are a key over two rows and more
    let key = if rows < 2 && keys.described.contains(&key) { Vec::new() } else { key };
    let key_note = if keys.past_limit || keep_last.is_some() { None } else { keys.why_none() };
    // a table made by hand (results merged from runs or tools that disagree) whose rows should
    // be one per key: each build counts the repeats, and the card says them
    let report_repeats = match (&key_note, keys.said_repeating()) {
        (Some(_), Some((columns, at))) if plan.format == Format::Csv => Some((columns.to_vec(), at.to_string())),
        _ => None,
    };
    let spliced = keys
        .order
        .as_mut()
        .map(|o| {
            o.end_file();
            std::mem::take(&mut o.spliced)
        })
        .unwrap_or_default();
    let number_texts: Vec<NumberText> = number_texts.into_values().flatten().filter(|n| n.kind.is_some()).collect();
    // a file whose decimals are written with a comma writes its thousands with a dot
    let dot_thousands = if number_texts.iter().any(|n| n.kind == Some('d')) {
        dotted
            .into_iter()
            .filter_map(|(c, d)| Some((c, d??)))
            .map(|(c, (x, at))| {
                let id = ident(&c);
                let thousands = (x * 1000.0).round();
                let note = format!(
                    "{c} holds numbers with a dot before three digits ({x} at {at}) in a file whose decimals are \
                     written with a comma, kept as text: if its dot separates thousands there ({x} for {thousands}), \
                     select CAST(replace({id}, '.', '') AS BIGINT) AS {id} in the table's SQL; if it is a decimal dot, \
                     CAST({id} AS DOUBLE) AS {id}; and declare it a number in the table's schema"
                );
                // the schema's description, true of the input whichever reading the table makes
                let description = format!(
                    "numbers with a dot before three digits ({x} at {at}) in a file whose decimals are written with \
                     a comma; `CAST(replace({id}, '.', '') AS BIGINT)` reads the dot as a thousands separator \
                     ({x} as {thousands}), `CAST({id} AS DOUBLE)` as a decimal dot"
                );
                (c, (note, description))
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Some(Trial {
        key,
        key_unchecked: keys.past_limit,
        key_note,
        keep_last,
        report_repeats,
        stepless,
        untimed,
        spliced,
        logged_twice: keys.attempts.as_ref().is_some_and(|a| a.twice),
        number_texts,
        dot_thousands,
        schema,
        rows,
        rejected,
    }))
}

/// Candidate primary keys, checked as the rows go by: a key holds when no row has a null in it
/// and no two rows share it. A key that starts with the path's captures is checked file by file
/// (rows of two files differ in their captures), so that memory follows the largest file.
struct Keys {
    candidates: Vec<KeyCheck>,
    /// Of a log a run appends to, how its steps go, file by file: a key repeated after the
    /// steps went back is a resumed run's; one repeated in a file whose steps never went back
    /// is not.
    order: Option<StepOrder>,
    /// The first key of the first candidate that repeated where no resume explains it, with
    /// why (`step 6 again at a.jsonl:11, past the step …`).
    repeat_forward: Option<String>,
    /// Whether a candidate was given up for its rows' number, not for a null or a duplicate.
    past_limit: bool,
    /// A plain table (a results table merged by hand), with the path's captures: the columns
    /// that name its rows become candidates at its first batch, after those its column names
    /// give ([`describing_columns`]), so that a result given twice is found.
    describe: Option<Vec<String>>,
    /// Columns of short labels left out of the described candidates for an empty cell, each
    /// with the place of its first (`source` at `results.csv:14`): the note says them.
    left_for_null: Vec<(String, String)>,
    /// Whether the note of a table without a key says why its widest candidate is none (the
    /// candidates of [`describing_columns`], each one column more than the one before).
    widest_says: bool,
    /// The candidates [`describing_columns`] gave.
    described: Vec<Vec<String>>,
    /// Of a plain table (a results table merged by hand), rows that repeat an earlier row cell
    /// for cell, which no key can tell apart.
    whole: Option<WholeRows>,
    /// Of a trackio project's metrics, how each run's attempts go.
    attempts: Option<Attempts>,
}

/// Of a trackio project's metrics (several runs to a file, keyed run, `step`, metric), whether
/// every metric a run logs at a step again comes after that run's steps went back: a run
/// resumed from a checkpoint (`trackio.init(resume="must")`), whose stopped attempt's records
/// at those steps are set aside whole. A metric logged again with no going back between is
/// one attempt logging it twice (`twice`).
#[derive(Default)]
struct Attempts {
    /// By the hash of a run's columns, how its attempts go.
    runs: std::collections::HashMap<u64, RunAttempts>,
    /// The rows taken; past [`KEY_CHECK_MAX_ROWS`] the rows are not followed, and are taken
    /// to be `twice` (each row kept or set aside on its own).
    rows: u64,
    twice: bool,
}

/// Of one run: the step of its row before, how many times its steps went back, and by step
/// and the hash of the metric's columns, that count when the metric was last logged there.
#[derive(Default)]
struct RunAttempts {
    previous: i64,
    back: u32,
    logged: std::collections::HashMap<(i64, u64), u32>,
}

impl Attempts {
    /// Takes the rows of `rb`, keyed by `key` (the run's columns, `step`, the metric's).
    fn observe(&mut self, rb: &RecordBatch, key: &[String]) {
        use arrow::array::AsArray;
        let Some(at) = key.iter().position(|c| c == "step") else { return };
        let Some(steps) = rb.column_by_name("step").and_then(|c| c.as_primitive_opt::<arrow::datatypes::Int64Type>())
        else {
            return;
        };
        let rows = |cols: &[String]| -> Option<arrow::row::Rows> {
            let arrays: Vec<arrow::array::ArrayRef> =
                cols.iter().map(|c| rb.column_by_name(c).cloned()).collect::<Option<_>>()?;
            let fields = arrays.iter().map(|a| arrow::row::SortField::new(a.data_type().clone())).collect();
            arrow::row::RowConverter::new(fields).and_then(|c| c.convert_columns(&arrays)).ok()
        };
        let (Some(runs), Some(metrics)) = (rows(&key[..at]), rows(&key[at + 1..])) else { return };
        let h = ahash::RandomState::with_seeds(1, 2, 3, 4);
        for i in 0..rb.num_rows() {
            if self.rows >= KEY_CHECK_MAX_ROWS {
                self.twice = true;
                return;
            }
            self.rows += 1;
            if !steps.is_valid(i) {
                continue;
            }
            let step = steps.value(i);
            let run = self
                .runs
                .entry(h.hash_one(runs.row(i).as_ref()))
                .or_insert_with(|| RunAttempts { previous: i64::MIN, ..Default::default() });
            if step < run.previous {
                run.back += 1;
            }
            run.previous = step;
            // logged before since the steps last went back: the same attempt's second time
            let before = run.logged.insert((step, h.hash_one(metrics.row(i).as_ref())), run.back);
            self.twice |= before == Some(run.back);
        }
    }
}

/// The first row that repeats an earlier one cell for cell (its place columns aside), found
/// over the first [`WHOLE_ROWS_MAX`] rows: a result pasted twice into a table merged by hand.
#[derive(Default)]
struct WholeRows {
    /// Each row's two hashes, and its place: an index into `files` and its line.
    seen: std::collections::HashMap<(u64, u64), (u32, u64)>,
    files: Vec<String>,
    /// `r.csv:5 repeats r.csv:4`.
    repeat: Option<String>,
}

/// How many rows [`WholeRows`] looks at (about 40 MB of hashes and places).
const WHOLE_ROWS_MAX: usize = 1_000_000;

impl WholeRows {
    fn observe(&mut self, rb: &RecordBatch) {
        use arrow::array::AsArray;
        if self.repeat.is_some() || self.seen.len() >= WHOLE_ROWS_MAX {
            return;
        }
        let arrays: Vec<arrow::array::ArrayRef> = rb
            .schema()
            .fields()
            .iter()
            .zip(rb.columns())
            .filter(|(f, _)| !f.name().starts_with("_source_"))
            .map(|(_, a)| a.clone())
            .collect();
        if arrays.is_empty() {
            return;
        }
        let fields = arrays.iter().map(|a| arrow::row::SortField::new(a.data_type().clone())).collect();
        // a column of a type rows cannot be made of is not compared: no repeat is said
        let Ok(rows) = arrow::row::RowConverter::new(fields).and_then(|c| c.convert_columns(&arrays)) else {
            self.seen.clear();
            self.repeat = Some(String::new());
            return;
        };
        let files = rb.column_by_name("_source_file").and_then(|c| c.as_string_opt::<i32>());
        let lines = rb.column_by_name("_source_line").and_then(|c| c.as_primitive_opt::<arrow::datatypes::Int64Type>());
        let (a, b) = (ahash::RandomState::with_seeds(1, 2, 3, 4), ahash::RandomState::with_seeds(5, 6, 7, 8));
        for (i, r) in rows.iter().enumerate() {
            let file = files.filter(|f| f.is_valid(i)).map(|f| f.value(i)).unwrap_or_default();
            let line = lines.filter(|l| l.is_valid(i)).map(|l| l.value(i) as u64).unwrap_or(0);
            if self.files.last().is_none_or(|f| f != file) {
                self.files.push(file.to_string());
            }
            let here = ((self.files.len() - 1) as u32, line);
            let bytes = r.as_ref();
            match self.seen.entry((a.hash_one(bytes), b.hash_one(bytes))) {
                std::collections::hash_map::Entry::Occupied(first) => {
                    let place = |(f, l): (u32, u64)| {
                        let f = &self.files[f as usize];
                        if l == 0 { f.clone() } else { format!("{f}:{l}") }
                    };
                    self.repeat = Some(format!("{} repeats {} cell for cell", place(here), place(*first.get())));
                    return;
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(here);
                }
            }
            if self.seen.len() >= WHOLE_ROWS_MAX {
                return;
            }
        }
    }

    /// The first repeat, once found.
    fn found(&self) -> Option<&str> {
        self.repeat.as_deref().filter(|r| !r.is_empty())
    }
}

/// The key candidates of a table no column name gives a key to, from its first batch `rb`:
/// the text columns that name what a row is about (short text of one line, at most
/// [`DESCRIBING_TEXT_CHARS`] characters, no null), fewest distinct values first (`checkpoint`,
/// `run`, `benchmark`; none whose name says it is a remark, `notes`), then the integer columns
/// without a null whose name says they count what a row is about (`seed`, not `num_correct`),
/// `captures` always first. Each candidate is one more column than the one before, at most
/// six, its columns in the table's order: the first that holds is the fewest columns that name
/// a row, and the widest is last (its repeat is what a note says). None without a text column,
/// or without a column left over for the values.
/// Columns of short labels (one line, at most [`DESCRIBING_TEXT_CHARS`] characters, values that
/// repeat) that [`describing_columns`] leaves out for an empty cell, each with the place of its
/// first: at most three.
fn labels_with_nulls(rb: &RecordBatch, captures: &[String]) -> Vec<(String, String)> {
    use arrow::array::AsArray;
    let mut out = Vec::new();
    for (f, c) in rb.schema().fields().iter().zip(rb.columns()) {
        if f.name().starts_with("_source_") || captures.contains(f.name()) || c.null_count() == 0 {
            continue;
        }
        let DataType::Utf8 = f.data_type() else { continue };
        let t = c.as_string::<i32>();
        let values: Vec<&str> = t.iter().flatten().collect();
        let distinct: BTreeSet<&str> = values.iter().copied().collect();
        let short = values.iter().all(|v| v.chars().count() <= DESCRIBING_TEXT_CHARS && !v.contains('\n'));
        if short && !values.is_empty() && distinct.len() < values.len() && !name_says(f.name(), NOTE_WORDS) {
            let i = (0..t.len()).find(|&i| t.is_null(i)).unwrap_or(0);
            out.push((f.name().clone(), row_place(rb, i)));
        }
    }
    out.truncate(3);
    out
}

fn describing_columns(rb: &RecordBatch, captures: &[String]) -> Vec<Vec<String>> {
    use arrow::array::AsArray;
    let mut text: Vec<(usize, String)> = Vec::new();
    let mut integers: Vec<String> = Vec::new();
    let mut others = 0;
    for (f, c) in rb.schema().fields().iter().zip(rb.columns()) {
        if f.name().starts_with("_source_") || captures.contains(f.name()) {
            continue;
        }
        match f.data_type() {
            // a column with a null is a value left out, never a row's name
            _ if c.null_count() > 0 => others += 1,
            DataType::Utf8 => {
                let t = c.as_string::<i32>();
                let short = t.iter().flatten().all(|v| v.chars().count() <= DESCRIBING_TEXT_CHARS && !v.contains('\n'));
                // numbers written as text (`71.2%`, `1,319`, `0.5`) are results, not names
                // (one other text in ten, and one, is a typo or a remark beside the results)
                let mut n = NumberText::new(f.name());
                let (mut numeric, mut decimals, mut other) = (0usize, 0usize, 0usize);
                // an integer beyond 64 bits (a seed, a hash) is why a column of integers is text
                let mut big = false;
                for v in t.iter().flatten().filter(|v| !crate::core::values::missing_text(v)) {
                    // (a percentage with a decimal comma, `41,5%`, of a file of semicolons)
                    let comma_percent = v.contains(',') && is_percent(&v.replacen(',', ".", 1));
                    if n.take(v, String::new) || is_decimal_comma(v) || comma_percent {
                        numeric += 1;
                        decimals += usize::from(v.contains('.') || is_decimal_comma(v) || comma_percent);
                        let digits = v.trim().trim_start_matches(['-', '+']);
                        big |= !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit())
                            && v.trim().parse::<i64>().is_err();
                    } else {
                        other += 1;
                    }
                }
                let numbers =
                    (n.kind.is_some() || decimals >= 2 || big) && numeric >= 2 && other <= 1 + (numeric + other) / 10;
                if short && !numbers && !name_says(f.name(), NOTE_WORDS) {
                    let distinct: BTreeSet<&str> = t.iter().flatten().collect();
                    text.push((distinct.len(), f.name().clone()));
                } else {
                    others += 1;
                }
            }
            DataType::Int64 if name_says(f.name(), COUNTER_WORDS) => integers.push(f.name().clone()),
            _ => others += 1,
        }
    }
    if (text.is_empty() && captures.is_empty()) || others + integers.len() == 0 {
        return Vec::new();
    }
    // (a stable sort: columns of as many values keep their order)
    text.sort_by_key(|(n, _)| *n);
    let named = text.len() + integers.len();
    let order = text.into_iter().map(|(_, name)| name).chain(integers);
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut key: Vec<String> = captures.to_vec();
    for name in order {
        if key.len() >= 6 {
            break;
        }
        key.push(name);
        out.push(key.clone());
    }
    // every column a key: no value left over
    out.retain(|k| others > 0 || k.len() - captures.len() < named);
    // each key's columns in the table's order (its rows are sorted by them)
    let schema = rb.schema();
    for k in &mut out {
        k[captures.len()..].sort_by_key(|c| schema.index_of(c).unwrap_or(usize::MAX));
    }
    out
}

/// A text column whose values are numbers written so that no reader takes them for numbers:
/// percentages with their sign (`"71.2%"`), or numbers with thousands separators
/// (`"1,319"`), beside texts that stand for a missing value. It stays text, and a note gives
/// the SQL that reads it as numbers (failing on a value it cannot read, never making it null).
#[derive(Debug, Clone)]
struct NumberText {
    column: String,
    /// `%` or `,`: how the numbers are written; `None` until one is met.
    kind: Option<char>,
    /// The first such value, and where it is.
    first: (String, String),
    /// Whether a number has a fractional part.
    fraction: bool,
    /// The texts met that stand for a missing value.
    missing: BTreeSet<String>,
    /// Whether a comma is the decimal mark (a CSV file separated by semicolons, as written
    /// where the comma is: `0,71`), not a thousands separator.
    decimal_comma: bool,
    /// The first number written plainly, and where it is; whether every such number lies in
    /// [-1, 1] (fractions, beside percentages a column on two scales).
    plain: Option<(String, String)>,
    plain_fractions: bool,
    /// Whether a percentage is written with a decimal comma (`41,5%`).
    comma_percent: bool,
    /// Whether a number is written with a decimal comma (`0,71`), and whether every such
    /// number lies in [-1, 1] (fractions, where percentages come beside them: `41,5%`).
    comma_numbers: bool,
    comma_fractions: bool,
}

impl NumberText {
    fn new(column: &str) -> NumberText {
        NumberText {
            column: column.to_string(),
            kind: None,
            first: Default::default(),
            fraction: false,
            missing: BTreeSet::new(),
            decimal_comma: false,
            plain: None,
            plain_fractions: true,
            comma_percent: false,
            comma_numbers: false,
            comma_fractions: true,
        }
    }

    /// Takes value `v` (found at `at()`); false when it is no number of the column's kind.
    fn take(&mut self, v: &str, at: impl Fn() -> String) -> bool {
        if crate::core::values::missing_text(v) {
            self.missing.insert(v.to_string());
            return true;
        }
        let plain = v.trim().parse::<f64>().is_ok_and(f64::is_finite);
        let kind = if is_percent(v) {
            '%'
        } else if self.decimal_comma && is_percent(&v.replacen(',', ".", 1)) {
            // a percentage with a decimal comma (`41,5%`)
            self.comma_percent = true;
            '%'
        } else if self.decimal_comma && is_decimal_comma(v) {
            let fraction = v.trim().replacen(',', ".", 1).parse::<f64>().is_ok_and(|f| f.abs() <= 1.0);
            self.comma_fractions &= fraction;
            self.comma_numbers = true;
            if self.kind == Some('%') {
                // a fraction beside percentages (`0,71` after `41,5%`): the two scales, as with
                // a dot (the SQL reads its comma as a dot)
                if self.plain.is_none() {
                    self.plain = Some((v.to_string(), at()));
                }
                self.plain_fractions &= fraction;
                self.fraction = true;
                return true;
            }
            'd'
        } else if is_grouped(v) && !self.decimal_comma {
            ','
        } else if plain && !(self.decimal_comma && v.contains('.')) {
            // a number written plainly among grouped ones (`999` beside `1,319`) or among
            // percentages (`0.41` beside `41.2%`); one with blanks around it (` 0.6` of a CSV
            // written `task, acc`) makes the column text
            if v.trim() != v && self.kind.is_none() {
                self.kind = Some('b');
                self.first = (v.to_string(), at());
            }
            if self.plain.is_none() {
                self.plain = Some((v.to_string(), at()));
            }
            self.plain_fractions &= v.trim().parse::<f64>().is_ok_and(|f| f.abs() <= 1.0);
            self.fraction |= v.contains('.');
            return true;
        } else {
            return false;
        };
        match self.kind {
            // blanks around a number are trimmed by every reading: the other way of writing
            // the column's numbers (`71%` after `0.71 `) is the one the SQL reads
            Some('b') if kind != 'b' => {
                self.kind = Some(kind);
                self.first = (v.to_string(), at());
            }
            // percentages after numbers with a decimal comma (`0,71` then `41,5%`): those were
            // fractions beside the percentages
            Some('d') if kind == '%' => {
                self.plain = Some(self.plain.take().unwrap_or_else(|| self.first.clone()));
                self.plain_fractions &= self.comma_fractions;
                self.kind = Some(kind);
                self.first = (v.to_string(), at());
            }
            Some(k) if k != kind => return false,
            Some(_) => {}
            None => {
                self.kind = Some(kind);
                self.first = (v.to_string(), at());
            }
        }
        self.fraction |= v.contains('.');
        true
    }

    /// What the note says: the column, its first value, and the SQL that reads it.
    fn note(&self) -> String {
        let (what, beside, sql) = self.reading();
        let (first, at) = &self.first;
        // (a name with blanks around it is trimmed in the table's SQL, as `TablePlan::renamed` says)
        let alias = ident(self.column.trim());
        format!(
            "{} holds {what} ({first:?} at {at}){beside}, kept as text; to read them as numbers, select {sql} AS {alias} in \
             the table's SQL, and declare it a number in the table's schema (a value it cannot read stops the build)",
            if self.column.trim() == self.column { self.column.clone() } else { format!("{:?}", self.column) }
        )
    }

    /// The column's description in the schema (so the card): what its texts are, and the SQL
    /// that reads them as numbers.
    fn description(&self) -> String {
        let (what, beside, sql) = self.reading();
        let (first, at) = &self.first;
        // true of the input whether or not the table reads them as numbers: the note says how
        format!("Written as text in the input: {what} ({first:?} at {at}){beside}; `{sql}` reads them as numbers.")
    }

    /// How the numbers are written, what else the column holds, and the SQL that reads them.
    fn reading(&self) -> (&'static str, String, String) {
        let id = ident(&self.column);
        let x = if self.missing.is_empty() {
            id.clone()
        } else {
            let texts: Vec<String> = self.missing.iter().map(|t| format!("'{}'", t.replace('\'', "''"))).collect();
            format!("CASE WHEN {id} IN ({}) THEN NULL ELSE {id} END", texts.join(", "))
        };
        // a decimal comma read as the dot SQL's CAST reads
        let x = if (self.comma_percent || self.comma_numbers) && self.kind == Some('%') {
            format!("replace({x}, ',', '.')")
        } else {
            x
        };
        match (self.kind, &self.plain) {
            // fractions beside percentages: two scales, which the SQL makes one (a percentage's
            // text read with `e-2`, so that 41.2% reads as the float nearest 0.412, which
            // dividing by 100 would miss)
            (Some('%'), Some((plain, at))) if self.plain_fractions => (
                "percentages written with their sign",
                format!(
                    " beside fractions ({plain:?} at {at}): two scales, which the SQL makes one, reading a \
                     percentage as a fraction (41.2% as 0.412)"
                ),
                format!(
                    "CASE WHEN ends_with(trim({x}), '%') THEN CAST(trim(rtrim(trim({x}), '%')) || 'e-2' AS DOUBLE) \
                     ELSE CAST(trim({x}) AS DOUBLE) END"
                ),
            ),
            // numbers without the sign beside them, not all fractions: said, the scale left to
            // the reader
            (Some('%'), Some((plain, at))) => (
                "percentages written with their sign",
                format!(
                    " beside numbers written without it ({plain:?} at {at}), which the SQL reads as they are: see \
                     that the two are on one scale"
                ),
                format!("CAST(trim(rtrim(trim({x}), '%')) AS DOUBLE)"),
            ),
            (Some('%'), _) => (
                "percentages written with their sign",
                String::new(),
                format!("CAST(trim(rtrim(trim({x}), '%')) AS DOUBLE)"),
            ),
            (Some('d'), _) => (
                "numbers written with a decimal comma",
                String::new(),
                format!("CAST(trim(replace({x}, ',', '.')) AS DOUBLE)"),
            ),
            (Some('b'), _) => (
                "numbers written with blanks around them",
                String::new(),
                format!("CAST(trim({x}) AS {})", if self.fraction { "DOUBLE" } else { "BIGINT" }),
            ),
            _ => (
                "numbers written with thousands separators",
                String::new(),
                format!("CAST(trim(replace({x}, ',', '')) AS {})", if self.fraction { "DOUBLE" } else { "BIGINT" }),
            ),
        }
    }
}

/// `text` if it holds at most `max` characters; else its words that fit, ` …` after them, and
/// the parentheses they leave open closed.
fn cut_at_word(text: &str, max: usize) -> String {
    let Some((at, _)) = text.char_indices().nth(max) else { return text.to_string() };
    let head = text[..at].rsplit_once(' ').map_or(&text[..at], |(h, _)| h).trim_end_matches([',', ' ', '(']);
    let open = head.matches('(').count().saturating_sub(head.matches(')').count());
    format!("{head} …{}", ")".repeat(open))
}

/// The SQL that reads the numbers of text column `column` typed as text for `why` (`expected
/// number, found string "#DIV/0!" …`), as a sentence: `TRY_CAST(…)` gives null where a value
/// is none. `None` where `why` is not about a number.
fn numbers_among_text(why: &str, column: &str) -> Option<String> {
    if hex_identifier(why).is_some() {
        return None;
    }
    let ty = match why.split_whitespace().nth(1).map(|w| w.trim_end_matches(',')) {
        Some("number") => "DOUBLE",
        Some("integer") => "BIGINT",
        _ => return None,
    };
    Some(format!("`TRY_CAST({} AS {ty})` reads the numbers among them (null where a value is none)", ident(column)))
}

/// The value `why` found (`expected integer, found string "989aa79" …`) where it is a
/// hexadecimal identifier, as git writes a commit (`989aa79`): 7 to 64 hexadecimal digits, a
/// letter among them. Such a column holds names, some written with digits alone, not numbers.
fn hex_identifier(why: &str) -> Option<&str> {
    let (_, rest) = why.split_once("found string \"")?;
    let (v, _) = rest.split_once('"')?;
    ((7..=64).contains(&v.len())
        && v.bytes().all(|b| b.is_ascii_hexdigit())
        && v.bytes().any(|b| b.is_ascii_alphabetic()))
    .then_some(v)
}

/// Whether `v` is a number written with thousands separators: `1,319`, `-12,000.5`.
fn is_grouped(v: &str) -> bool {
    let t = v.trim();
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut groups = int.split(',');
    let head = groups.next().unwrap_or_default();
    let digits = |g: &str| g.bytes().all(|b| b.is_ascii_digit());
    int.contains(',')
        && (1..=3).contains(&head.len())
        && digits(head)
        && groups.all(|g| g.len() == 3 && digits(g))
        && digits(frac)
        && (!t.contains('.') || !frac.is_empty())
}

/// Whether `v` is a number written with a decimal comma: `0,71`, `-12,5`.
fn is_decimal_comma(v: &str) -> bool {
    let t = v.trim();
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    let digits = |g: &str| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit());
    t.split_once(',').is_some_and(|(int, frac)| digits(int) && digits(frac))
}

/// Whether `v` is a percentage written with its sign: `71.2%`, `-3 %`, `100%`.
fn is_percent(v: &str) -> bool {
    let Some(n) = v.trim().strip_suffix('%') else { return false };
    let n = n.trim_end();
    let digits = n.strip_prefix(['-', '+']).unwrap_or(n);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && digits.bytes().filter(|b| *b == b'.').count() <= 1
        && digits.bytes().any(|b| b.is_ascii_digit())
}

/// Words of a text column's name that say it holds a remark, not a row's name (`notes`,
/// `comment`): [`describing_columns`] leaves it out of a key.
const NOTE_WORDS: &[&str] =
    &["note", "notes", "comment", "comments", "remark", "remarks", "description", "status", "verdict", "error"];

/// Words of an integer column's name that say it counts what a row is about (`seed`,
/// `epoch`, `n_shot`), not a result (`num_correct`): [`describing_columns`] takes it into a key.
const COUNTER_WORDS: &[&str] = &[
    "seed",
    "step",
    "epoch",
    "fold",
    "shot",
    "shots",
    "idx",
    "index",
    "iteration",
    "iter",
    "trial",
    "rank",
    "round",
    "k",
    "id",
    "version",
    "size",
    "group",
];

/// Whether a word of `name` (split at `_`, `-`, `.`, blanks and lower-to-upper case changes)
/// is one of `words`, in any case.
fn name_says(name: &str, words: &[&str]) -> bool {
    crate::core::schema::snake_words(name)
        .split(|c: char| c == '_' || c == '-' || c == '.' || c.is_whitespace())
        .any(|w| words.iter().any(|x| w.eq_ignore_ascii_case(x)))
}

/// The longest text of a column [`describing_columns`] takes for one that names what a row is
/// about.
const DESCRIBING_TEXT_CHARS: usize = 100;

struct KeyCheck {
    columns: Vec<String>,
    /// Why the key cannot be one, said at the first row that shows it: a null in it, a
    /// column of a type no key has, or more rows than a key is checked over.
    broken: Option<String>,
    /// The first row whose key an earlier row has, said with its values; the key is still
    /// checked for nulls after it.
    repeat: Option<String>,
    /// Rows whose key an earlier row has: counted on for the first candidate alone (the
    /// others stop at the first).
    repeats: u64,
    /// Whether the key starts with every capture of the path (its files cannot share a key).
    per_file: bool,
    /// The file whose keys `seen` holds, when checked file by file.
    file: Option<String>,
    seen: ahash::AHashSet<(u64, u64)>,
}

/// How the steps of a log a run appends to go in the file being read (see [`Keys::order`]).
struct StepOrder {
    /// The column its steps rise by: `step`, a checkpoint's `batch`.
    column: &'static str,
    /// Whether a step met again counts as going back: a checkpoint saved again at the step of
    /// the last (`final` beside `000040`, or the same one after a resume), as a save names its
    /// step once; not a metrics log's records, several of which one step may have.
    ties_go_back: bool,
    /// Whether only a row at a step the run had reached before it last went back is the
    /// resumed attempt's (a plain log's: its evaluation's line at a step logged already, past
    /// that point, is a repeat of its own); else every row after the steps first went back.
    strict: bool,
    file: Option<String>,
    greatest: i64,
    /// The step of the row before, in this file.
    previous: i64,
    /// Whether the steps went back before, in this file.
    resumed: bool,
    /// The file's last going back: where (a row's place), the step gone back to, the greatest
    /// step before it, and the greatest since.
    last_back: Option<(String, i64, i64, i64)>,
    /// Files whose last resumed attempt stopped short of the step the attempt before reached:
    /// its steps between are the stopped attempt's alone (said in a note).
    spliced: Vec<String>,
    /// The steps met since the steps last went back, in this file: a plain log's step met
    /// again there is the same attempt's second record of it (an evaluation's line), no resume.
    since_back: ahash::AHashSet<i64>,
}

impl StepOrder {
    fn new(column: &'static str, ties_go_back: bool) -> StepOrder {
        StepOrder {
            column,
            ties_go_back,
            strict: false,
            file: None,
            greatest: i64::MIN,
            previous: i64::MIN,
            resumed: false,
            last_back: None,
            spliced: Vec::new(),
            since_back: ahash::AHashSet::new(),
        }
    }

    /// Ends the file read: when its last resumed attempt stopped short of the step the attempt
    /// before had reached, says so in [`StepOrder::spliced`].
    fn end_file(&mut self) {
        if let (Some(_), Some((at, back_to, before, since))) = (&self.file, self.last_back.take())
            && since < before
            && since > back_to
            && !self.ties_go_back
        {
            self.spliced.push(format!(
                "the run went back to step {back_to} at {at}, after reaching step {before}, and logged up to \
                 step {since} since: its steps {} to {before} are the stopped attempt's alone (a branch the run went \
                 back from); leave them out in the table's SQL if its history is the last attempt's",
                since + 1
            ));
        }
    }

    /// For each row of `rb`: `None` when a resume explains a repeat of its key there (the
    /// steps went back before it in its file; a row without a step, a summary's, tells
    /// nothing), else why none does, as a note says it. `None` when `rb` has no such column.
    fn went_back(&mut self, rb: &RecordBatch) -> Option<Vec<Option<&'static str>>> {
        use arrow::array::AsArray;
        let files = rb.column_by_name("_source_file").and_then(|c| c.as_string_opt::<i32>());
        // steps that are no integers (text, JSON text) tell no order: no row is a resumed one
        let Some(steps) = rb.column_by_name(self.column)?.as_primitive_opt::<arrow::datatypes::Int64Type>() else {
            return Some(vec![Some("and its steps are text, which tell no order"); rb.num_rows()]);
        };
        let mut out = Vec::with_capacity(rb.num_rows());
        for i in 0..rb.num_rows() {
            let f = files.filter(|f| f.is_valid(i)).map(|f| f.value(i));
            if f != self.file.as_deref() {
                self.end_file();
                let spliced = std::mem::take(&mut self.spliced);
                *self = StepOrder {
                    file: f.map(String::from),
                    spliced,
                    strict: self.strict,
                    ..StepOrder::new(self.column, self.ties_go_back)
                };
            }
            if steps.is_valid(i) {
                let s = steps.value(i);
                // (a step below the one before: the steps went back; after that, up again)
                if s < self.previous {
                    self.last_back = Some((row_place(rb, i), s, self.greatest, s));
                    self.since_back.clear();
                } else if let Some(back) = self.last_back.as_mut() {
                    back.3 = back.3.max(s);
                }
                self.resumed |= s < self.greatest || (self.ties_go_back && s == self.greatest);
                self.greatest = self.greatest.max(s);
                self.previous = s;
            }
            // (a plain log's step met twice by the attempt after the last going back is that
            // attempt's own repeat)
            let again = steps.is_valid(i) && self.last_back.is_some() && !self.since_back.insert(steps.value(i));
            let explained = match (&self.last_back, steps.is_valid(i)) {
                (Some((_, _, before, _)), true) => steps.value(i) <= *before && !again,
                _ => false,
            };
            let past = match (&self.last_back, steps.is_valid(i)) {
                (Some((_, _, before, _)), true) => steps.value(i) > *before,
                _ => false,
            };
            out.push(match (self.strict, &self.last_back) {
                (true, _) if explained => None,
                (true, Some(_)) if again && !past => Some("logged twice by the attempt after its steps went back"),
                (true, Some(_)) => Some("past the step the run had reached before its steps went back"),
                (false, _) if self.resumed || steps.is_null(i) => None,
                _ => Some("where the steps had not gone back"),
            });
        }
        Some(out)
    }
}

impl KeyCheck {
    /// A candidate over `columns`, checked file by file when `per_file`.
    fn new(columns: Vec<String>, per_file: bool) -> KeyCheck {
        KeyCheck { columns, broken: None, repeat: None, repeats: 0, per_file, file: None, seen: Default::default() }
    }

    fn holds(&self) -> bool {
        self.broken.is_none() && self.repeat.is_none()
    }

    fn fail(&mut self, why: String) {
        self.broken = Some(why);
        self.seen = Default::default();
    }

    fn repeated(&mut self, at: String) {
        self.repeat = Some(at);
        self.seen = Default::default();
    }

    /// The key's columns, as a note names them: `(run, step)`.
    fn named(&self) -> String {
        format!("({})", self.columns.join(", "))
    }
}

/// Where row `i` of `rb` was read, as messages say it (`raw/a.jsonl:9`): its provenance
/// columns, or its number in the batch when it has none.
fn row_place(rb: &RecordBatch, i: usize) -> String {
    let cell = |name: &str| {
        rb.column_by_name(name)
            .filter(|c| c.is_valid(i))
            .and_then(|c| arrow::util::display::array_value_to_string(c, i).ok())
    };
    match (cell("_source_file"), cell("_source_line")) {
        (Some(f), Some(l)) if l.is_empty() => f,
        (Some(f), Some(l)) => format!("{f}:{l}"),
        (Some(f), None) => f,
        _ => format!("row {} of a batch", i + 1),
    }
}

/// Whether no two of `plan`'s files have the same path captures, so that a key that starts
/// with the captures can be checked file by file (two lighteval results of one model, in
/// `{org}/{model}/results_*.json`, share theirs).
fn captures_tell_files_apart(plan: &SourcePlan) -> bool {
    let patterns: Vec<crate::stages::ingest::files::PathPattern> =
        plan.patterns.iter().filter_map(|p| crate::stages::ingest::files::PathPattern::new(p).ok()).collect();
    let mut seen = BTreeSet::new();
    plan.files.iter().all(|f| patterns.iter().find_map(|p| p.captures(f)).is_some_and(|c| seen.insert(c)))
}

impl Keys {
    /// The key candidates, each after the path's `captures`; `per_file` when no two files
    /// share their captures.
    fn new(candidates: &[Vec<String>], captures: &[String], per_file: bool) -> Keys {
        let mut all: Vec<Vec<String>> = Vec::new();
        for c in candidates {
            let mut cols: Vec<String> = captures.to_vec();
            cols.extend(c.iter().filter(|k| !captures.contains(k)).cloned());
            if !cols.is_empty() && !all.contains(&cols) {
                all.push(cols);
            }
        }
        Keys {
            candidates: all
                .into_iter()
                .map(|columns| KeyCheck::new(columns, per_file && !captures.is_empty()))
                .collect(),
            past_limit: false,
            order: None,
            repeat_forward: None,
            describe: None,
            widest_says: false,
            described: Vec::new(),
            left_for_null: Vec::new(),
            whole: None,
            attempts: None,
        }
    }

    fn observe(&mut self, rb: &RecordBatch) {
        use arrow::array::AsArray;
        if let Some(captures) = self.describe.take() {
            let candidates: Vec<Vec<String>> = describing_columns(rb, &captures)
                .into_iter()
                .filter(|c| !self.candidates.iter().any(|k| &k.columns == c))
                .collect();
            self.left_for_null = labels_with_nulls(rb, &captures);
            if !candidates.is_empty() {
                // the note says why the widest is none, where no column name gave a candidate
                self.widest_says = self.candidates.is_empty();
                self.described = candidates.clone();
                self.candidates.extend(candidates.into_iter().map(|columns| KeyCheck::new(columns, false)));
            }
        }
        if let Some(w) = self.whole.as_mut() {
            w.observe(rb);
        }
        if let (Some(a), Some(k)) = (self.attempts.as_mut(), self.candidates.first()) {
            a.observe(rb, &k.columns);
        }
        let a = ahash::RandomState::with_seeds(1, 2, 3, 4);
        let b = ahash::RandomState::with_seeds(5, 6, 7, 8);
        let files = rb.column_by_name("_source_file").and_then(|c| c.as_string_opt::<i32>());
        // each row: whether the steps went back before it in its file (a resume)
        let went_back: Option<Vec<Option<&str>>> = self.order.as_mut().and_then(|o| o.went_back(rb));
        for (n, k) in self.candidates.iter_mut().enumerate().filter(|(_, k)| k.broken.is_none()) {
            let mut arrays = Vec::new();
            for c in &k.columns {
                match rb.schema().index_of(c) {
                    Ok(i)
                        if matches!(rb.column(i).data_type(), DataType::Utf8 | DataType::Int64 | DataType::UInt64) =>
                    {
                        arrays.push(rb.column(i).clone())
                    }
                    Ok(i) => {
                        k.fail(format!("`{c}` holds {} values, which a key does not", rb.column(i).data_type()));
                        break;
                    }
                    Err(_) => {
                        k.fail(format!("no column `{c}`"));
                        break;
                    }
                }
            }
            if k.broken.is_some() {
                continue;
            }
            if let Some((c, a)) = k.columns.iter().zip(&arrays).find(|(_, a)| a.null_count() > 0) {
                let i = (0..a.len()).find(|&i| a.is_null(i)).unwrap_or(0);
                k.fail(format!("`{c}` is null at {}", row_place(rb, i)));
                continue;
            }
            if k.repeat.is_some() && n > 0 {
                continue;
            }
            let fields = arrays.iter().map(|a| arrow::row::SortField::new(a.data_type().clone())).collect();
            let rows = match arrow::row::RowConverter::new(fields).and_then(|c| c.convert_columns(&arrays)) {
                Ok(rows) => rows,
                Err(e) => {
                    k.fail(format!("its values cannot be compared: {e}"));
                    continue;
                }
            };
            for (i, r) in rows.iter().enumerate() {
                if k.per_file
                    && let Some(f) = files.filter(|f| f.is_valid(i)).map(|f| f.value(i))
                    && k.file.as_deref() != Some(f)
                {
                    k.file = Some(f.to_string());
                    k.seen.clear();
                }
                let bytes = r.as_ref();
                if k.seen.len() as u64 >= KEY_CHECK_MAX_ROWS {
                    self.past_limit = true;
                    k.fail(format!(
                        "more than {} rows to check it over",
                        crate::core::numbers::group_digits(KEY_CHECK_MAX_ROWS)
                    ));
                    break;
                }
                if !k.seen.insert((a.hash_one(bytes), b.hash_one(bytes))) {
                    k.repeats += 1;
                    let unexplained = went_back.as_ref().and_then(|w| w[i]).filter(|_| n == 0);
                    if k.repeat.is_some() && (unexplained.is_none() || self.repeat_forward.is_some()) {
                        continue;
                    }
                    let values: Vec<String> = k
                        .columns
                        .iter()
                        .zip(&arrays)
                        .map(|(c, a)| {
                            let v = arrow::util::display::array_value_to_string(a, i).unwrap_or_default();
                            let v: String = v.chars().take(60).collect();
                            match a.data_type() {
                                DataType::Utf8 => format!("{c} {v:?}"),
                                _ => format!("{c} {v}"),
                            }
                        })
                        .collect();
                    let at = format!("{} again at {}", values.join(", "), row_place(rb, i));
                    if let Some(why) = unexplained
                        && self.repeat_forward.is_none()
                    {
                        self.repeat_forward = Some(format!("{at}, {why}"));
                    }
                    if k.repeat.is_some() {
                        continue;
                    }
                    if n == 0 {
                        k.repeat = Some(at);
                    } else {
                        k.repeated(at);
                        break;
                    }
                }
            }
        }
    }

    fn first_holding(&self) -> Vec<String> {
        self.candidates.iter().find(|k| k.holds()).map(|k| k.columns.clone()).unwrap_or_default()
    }

    /// When no candidate holds: why the first (the most evident) does not, as a note says it.
    fn why_none(&self) -> Option<String> {
        if self.candidates.iter().any(KeyCheck::holds) {
            return None;
        }
        let k = if self.widest_says { self.candidates.last()? } else { self.candidates.first()? };
        // (a repeat no resume explains, when there is one: it is what makes no key of a log)
        let why = match (&k.broken, &self.repeat_forward) {
            (None, Some(forward)) if !self.widest_says => forward.as_str(),
            _ => k.broken.as_deref().or(k.repeat.as_deref())?,
        };
        // a row given twice whole: no key holds until one of the two goes
        let whole = match self.whole.as_ref().and_then(WholeRows::found) {
            Some(r) => {
                format!("; and {r}, which no key tells apart: drop one of the two (in the file, or in the table's SQL)")
            }
            None => String::new(),
        };
        // a label a key would need, left out for an empty cell
        let nulls: Vec<String> = if k.broken.is_none() && self.described.contains(&k.columns) {
            self.left_for_null.iter().map(|(c, at)| format!("`{c}` (empty at {at})")).collect()
        } else {
            Vec::new()
        };
        let nulls = if nulls.is_empty() {
            String::new()
        } else {
            format!("; {} left out of it, as a key has no empty cell", nulls.join(", "))
        };
        Some(format!("{} is no key: {why}{whole}{nulls}", k.named()))
    }

    /// The first candidate, when no candidate holds and it fails only by keys that repeat
    /// (no null): the key of a log that a resumed run appends to again.
    fn repeating(&self) -> Option<(&[String], &str, u64)> {
        (!self.candidates.iter().any(KeyCheck::holds)).then_some(())?;
        self.first_repeating()
    }

    /// The first candidate, when it fails only by keys that repeat (no null), whether a wider
    /// candidate holds or not (a trackio log call's `log_id` tells apart what a resumed run
    /// logged again, and keeps such a key unique).
    /// The candidate [`Keys::why_none`] names, when it fails only by keys that repeat (no
    /// null), with where it first repeats.
    fn said_repeating(&self) -> Option<(&[String], &str)> {
        let k = if self.widest_says { self.candidates.last()? } else { self.candidates.first()? };
        match (&k.broken, &k.repeat, &self.repeat_forward) {
            (None, Some(at), None) => Some((&k.columns, at)),
            _ => None,
        }
    }

    fn first_repeating(&self) -> Option<(&[String], &str, u64)> {
        let k = self.candidates.first()?;
        if self.repeat_forward.is_some() {
            return None;
        }
        match (&k.broken, &k.repeat) {
            (None, Some(at)) => Some((&k.columns, at, k.repeats)),
            _ => None,
        }
    }
}

// ------------------------------------------------------------------ writing

/// A table to write: its name, its source's, and what reading found.
struct TablePlan {
    table: String,
    source: String,
    plan: SourcePlan,
    trial: Trial,
}

impl TablePlan {
    /// The columns the table selects.
    fn columns(&self) -> Vec<&str> {
        self.trial.schema.fields().iter().map(|f| f.name().as_str()).filter(|n| self.selects(n)).collect()
    }

    /// Whether the table selects column `c`: not one the source reads for another table, nor
    /// the `step` of rows logged without one.
    fn selects(&self, c: &str) -> bool {
        let stepless_step = self.plan.steps == StepRows::Without && c == "step";
        !(self.plan.hidden.iter().any(|h| h == c) || stepless_step)
    }

    /// Why the rows of a key repeat, as init's note and the pipeline's comment say it.
    fn why_repeated(&self) -> &'static str {
        match (self.plan.steps, self.plan.format) {
            (StepRows::Without, _) => "each `log_summary` call restates a run's running totals",
            (_, Format::TrackioMetrics) if self.trial.logged_twice => {
                "a run logs a metric at a step again (resumed from a checkpoint, or logging it twice: its steps did \
                 not go back between)"
            }
            _ => "a run resumed from a checkpoint logs the steps after it again",
        }
    }

    /// Notes of the columns typed as text where numbers were looked for (a value no number
    /// reads, such as Excel's `#DIV/0!`), each with the SQL that reads the numbers among them.
    fn text_notes(&self) -> Vec<String> {
        self.plan
            .fields
            .iter()
            .filter(|d| d.field_type == "string" && !d.reason.is_empty())
            .filter(|d| !self.trial.number_texts.iter().any(|n| n.column == d.column))
            .filter_map(|d| {
                let name = self.name_of(&d.column);
                let why = d.reason.trim_end_matches('.');
                let sql = numbers_among_text(why, &name)?;
                Some(format!("table {}: {name} is kept as text: {why}; {sql}", self.table))
            })
            .collect()
    }

    /// The columns whose names a table cannot keep (a blank at an edge, a NUL), each with the
    /// name the table's SQL gives it: trimmed (NULs made `_`), then `_` added until no other
    /// column has it.
    fn renamed(&self) -> Vec<(String, String)> {
        let columns = self.columns();
        let mut taken: BTreeSet<String> = columns.iter().map(|c| c.to_string()).collect();
        let mut out = Vec::new();
        for c in columns {
            if crate::core::schema::column_name(c).is_ok() {
                continue;
            }
            let mut to = crate::core::schema::trimmed_label(c).replace('\0', "_");
            if to.is_empty() {
                to = "column".into();
            }
            while taken.contains(&to) {
                to.push('_');
            }
            taken.insert(to.clone());
            out.push((c.to_string(), to));
        }
        out
    }

    /// The name column `c` has in the table (see [`TablePlan::renamed`]).
    fn name_of(&self, c: &str) -> String {
        self.renamed().into_iter().find(|(from, _)| from == c).map_or_else(|| c.to_string(), |(_, to)| to)
    }

    /// Its Table Schema: the types the build infers, and the key.
    fn schema(&self, prefix: &str) -> Result<TableSchema> {
        let fields: Vec<arrow::datatypes::Field> = self
            .trial
            .schema
            .fields()
            .iter()
            .filter(|f| self.selects(f.name()))
            .map(|f| f.as_ref().clone().with_name(self.name_of(f.name())))
            .collect();
        let mut schema =
            crate::stages::transform::inferred_schema(&self.table, &arrow::datatypes::Schema::new(fields))?;
        schema.primary_key = self.trial.key.iter().map(|c| self.name_of(c)).collect();
        let captures: Vec<String> = self
            .plan
            .patterns
            .first()
            .and_then(|p| crate::stages::ingest::files::PathPattern::new(p).ok())
            .map(|p| p.names)
            .unwrap_or_default();
        for f in &mut schema.fields {
            let declared = self.plan.fields.iter().find(|d| self.name_of(&d.column) == f.name);
            f.description = if captures.contains(&f.name) {
                Some(format!(
                    "From the file's path: the `{{{}}}` part of `{prefix}{}`{}.",
                    f.name,
                    self.plan.patterns[0],
                    if self.plan.patterns.len() > 1 { " and of the source's other paths" } else { "" }
                ))
            } else if let Some(d) = declared.filter(|d| d.field_type == "any") {
                // kept whole: what the column holds is not the text it looks like, and why
                let why = d.reason.trim_end_matches('.');
                Some(format!("JSON text of each value (`0.5`, `\"N/A\"` with its quotes), kept whole: {why}."))
            } else if let Some(n) = self.trial.number_texts.iter().find(|n| self.name_of(&n.column) == f.name) {
                Some(n.description())
            } else if let Some(d) = declared.filter(|d| d.field_type == "string" && !d.reason.is_empty()) {
                // text where numbers were looked for: why, and how a reader gets the numbers
                let why = d.reason.trim_end_matches('.');
                Some(match (hex_identifier(why), numbers_among_text(why, &f.name)) {
                    (Some(v), _) => format!(
                        "Hexadecimal identifiers such as {v:?} (as git writes commits), kept as text: some are \
                         written with digits alone."
                    ),
                    (None, Some(sql)) => format!("Written as text in the input: {why}. {sql}."),
                    (None, None) => format!("Written as text in the input: {why}."),
                })
            } else if self.plan.format == Format::Json
                && self
                    .plan
                    .files
                    .iter()
                    .all(|p| results_split(strip_compression(p.rsplit('/').next().unwrap_or(p))).is_some())
            {
                trainer_metric(&f.name).or_else(|| {
                    crate::stages::ingest::columns::description(self.plan.format, None, &f.name).map(String::from)
                })
            } else {
                crate::stages::ingest::columns::description(self.plan.format, self.plan.wandb_table, &f.name)
                    .map(String::from)
            };
        }
        Ok(schema)
    }

    /// What the table holds, naming the source's paths as the pipeline writes them (with
    /// `prefix`); no count of files, which a run added later would make stale in the card.
    fn description(&self, prefix: &str) -> String {
        let named: Vec<String> = self.plan.patterns.iter().map(|p| format!("`{prefix}{p}`")).collect();
        let shown = match named.as_slice() {
            [] => "the source's files".to_string(),
            [one] => one.clone(),
            [first @ .., last] if named.len() <= 4 => format!("{} and {last}", first.join(", ")),
            _ => "the files of the source's `path`".to_string(),
        };
        let mut d = self.plan.description.replace("{files}", &shown);
        // a branch a resumed run went back from stays in the table: the card says so
        for s in &self.trial.spliced {
            let s = s.split("; leave them out").next().unwrap_or(s);
            d.push_str(&format!(" Rows of a branch a run went back from stay: {s}."));
        }
        d
    }

    /// The table's SQL.
    fn sql(&self) -> String {
        let renamed = self.renamed();
        let cols: Vec<String> = self
            .columns()
            .iter()
            .map(|c| match renamed.iter().find(|(from, _)| from == c) {
                Some((_, to)) => format!("{} AS {}", ident(c), ident(to)),
                None => ident(c),
            })
            .collect();
        let mut lines = Vec::new();
        let mut line = String::from("SELECT ");
        for (i, c) in cols.iter().enumerate() {
            let piece = if i + 1 < cols.len() { format!("{c}, ") } else { c.clone() };
            if line.len() + piece.len() > 100 && line.len() > 7 {
                lines.push(line.trim_end().to_string());
                line = String::from("       ");
            }
            line.push_str(&piece);
        }
        lines.push(line);
        lines.push(format!("FROM {}", self.source));
        match self.plan.steps {
            StepRows::All => {}
            StepRows::With => lines.push("WHERE \"step\" IS NOT NULL".into()),
            StepRows::Without => lines.push("WHERE \"step\" IS NULL".into()),
        }
        lines.join("\n")
    }
}

/// An SQL identifier: as it is when SQL reads it so, else quoted.
fn ident(name: &str) -> String {
    let plain = regex::Regex::new(r"^[a-z_][a-z0-9_]*$").expect("static pattern").is_match(name);
    let keyword = datafusion::sql::sqlparser::keywords::ALL_KEYWORDS.contains(&name.to_ascii_uppercase().as_str());
    if plain && !keyword { name.to_string() } else { format!("\"{}\"", name.replace('"', "\"\"")) }
}

/// The folder of a pipeline's schemas: `schemas/<name>` beside the pipelines folder.
fn schemas_dir(pipelines_dir: &Path, name: &str) -> PathBuf {
    let parent = match pipelines_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::new(),
    };
    parent.join("schemas").join(name)
}

/// What [`write_pipeline`] wrote.
struct Written {
    /// The prefix of the source paths (`raw/`).
    prefix: String,
    /// The paths written, as the user named the folders.
    paths: Vec<String>,
    /// Files and links an init of the same name that did not finish had left, removed first.
    recovered: usize,
}

/// Files and folders created so far, removed again when a later step fails.
#[derive(Default)]
struct Created {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    /// The journal of what is about to be created, so that an init killed while writing
    /// leaves nothing a later init refuses to overwrite ([`recover`]).
    journal: Option<(PathBuf, std::fs::File)>,
}

/// The journal of an init writing the pipeline folder `pipeline_dir`: while it exists, init
/// has not finished writing. Inside the folder, so that removing the folder removes it too.
fn journal_path(pipeline_dir: &Path) -> PathBuf {
    pipeline_dir.join(".init-unfinished")
}

/// Removes what an init that did not finish (killed while writing) created, as its journal
/// lists it: files and links, the temporary files beside them, then the folders, newest
/// first. Every path listed did not exist before that init (it never overwrites), so nothing
/// else is touched. How many files and links were removed; 0 without a journal.
///
/// Errors: [`Error::Io`] when the journal cannot be read or removed.
fn recover(journal: &Path) -> Result<usize> {
    let bytes = match std::fs::read(journal) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(journal, e)),
    };
    // records: a kind byte (`d` folder, `f` file or link), the path, a NUL; a record cut by
    // the kill is one whose creation never started
    let entries: Vec<(u8, PathBuf)> = bytes
        .split_inclusive(|&b| b == 0)
        .filter(|r| r.len() > 2 && r.ends_with(&[0]))
        .map(|r| (r[0], path_of_bytes(&r[1..r.len() - 1])))
        .collect();
    let temporaries = |dir: &Path| {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_name().as_encoded_bytes().starts_with(b".runpack-init-") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    };
    let mut removed = 0;
    for (kind, path) in entries.iter().rev() {
        match kind {
            b'f' => {
                if std::fs::remove_file(path).is_ok() {
                    removed += 1;
                }
                if let Some(dir) = path.parent() {
                    temporaries(dir);
                }
            }
            _ => {
                temporaries(path);
                let _ = std::fs::remove_dir(path);
            }
        }
    }
    std::fs::remove_file(journal).map_err(|e| Error::io(journal, e))?;
    Ok(removed)
}

/// A path written in a journal as its bytes.
#[cfg(unix)]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
}

/// A path written in a journal as its bytes (WTF-8 here: a path that is not Unicode is not
/// found again, and stays).
#[cfg(not(unix))]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

impl Created {
    /// Starts the journal at `path` (see [`recover`]).
    fn begin(&mut self, path: PathBuf) -> Result<()> {
        let file =
            std::fs::OpenOptions::new().create_new(true).append(true).open(&path).map_err(|e| Error::io(&path, e))?;
        self.journal = Some((path, file));
        Ok(())
    }

    /// Writes `path` in the journal, as about to be created (`kind` `d` or `f`): written before
    /// the path is made, so that no path is made that the journal does not list.
    fn note(&mut self, kind: u8, path: &Path) -> Result<()> {
        let Some((journal, file)) = &mut self.journal else { return Ok(()) };
        let path = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
        let mut record = vec![kind];
        record.extend_from_slice(path.as_os_str().as_encoded_bytes());
        record.push(0);
        std::io::Write::write_all(file, &record).map_err(|e| Error::io(&*journal, e))
    }

    /// Ends the journal: what it lists is complete, or undone.
    fn end(&mut self) -> Result<()> {
        match self.journal.take() {
            Some((path, _)) => std::fs::remove_file(&path).map_err(|e| Error::io(&path, e)),
            None => Ok(()),
        }
    }

    /// Creates `dir` and the folders above it that do not exist, remembering each.
    fn dir(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut d = dir;
        while !d.as_os_str().is_empty() && d.symlink_metadata().is_err() {
            missing.push(d.to_path_buf());
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
        for m in missing.into_iter().rev() {
            self.note(b'd', &m)?;
            std::fs::create_dir(&m).map_err(|e| Error::io(&m, e))?;
            self.dirs.push(m);
        }
        Ok(())
    }

    /// Writes `text` as `path`, which must not exist: written beside it, then linked to its
    /// name (which fails when the name is taken), so that a file that appears is complete.
    fn file(&mut self, path: &Path, text: &str) -> Result<()> {
        if path.symlink_metadata().is_ok() {
            return Err(exists(path));
        }
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut builder = tempfile::Builder::new();
        builder.prefix(".runpack-init-");
        // the mode `File::create` gives (0666 less the umask), not a temporary file's 0600
        #[cfg(unix)]
        builder.permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o666));
        let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
        // a reason quoting the data (a value that broke a type) never carries a token; the
        // paths, names and SQL the pipeline reads by are kept as found, or it would not build
        let text = reasons_redacted(text);
        std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| Error::io(tmp.path(), e))?;
        tmp.as_file().sync_all().map_err(|e| Error::io(tmp.path(), e))?;
        self.note(b'f', path)?;
        match std::fs::hard_link(tmp.path(), path) {
            Ok(()) => {
                self.files.push(path.to_path_buf());
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(exists(path)),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Removes what was created, newest first.
    fn undo(mut self) {
        for f in self.files.iter().rev() {
            let _ = std::fs::remove_file(f);
        }
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
        let _ = self.end();
    }
}

/// A relative path from folder `from` to `to` (both absolute and canonical).
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// Writes the schemas, the link to the raw folder and pipeline.toml (last): all or nothing.
fn write_pipeline(
    raw: &Path,
    folder: &Path,
    name: &str,
    pipelines_dir: &Path,
    tables: &[TablePlan],
    not_read: &[NotRead],
    left: &[LeftOut],
) -> Result<Written> {
    let mut created = Created::default();
    // the pipeline's folder holds the journal: made outside it, removed on failure if empty
    let mut outer = Created::default();
    let result = (|| -> Result<Written> {
        let pipeline_dir = pipelines_dir.join(name);
        outer.dir(&pipeline_dir)?;
        let journal = journal_path(&pipeline_dir);
        let recovered = recover(&journal)?;
        created.begin(journal)?;
        let pipeline_abs = pipeline_dir.canonicalize().map_err(|e| Error::io(&pipeline_dir, e))?;
        // the schemas beside the pipelines folder, as the pipeline's `../../schemas` reaches them
        let schemas_shown = schemas_dir(pipelines_dir, name);
        let schemas_abs = pipeline_abs.join("..").join("..").join("schemas").join(name);
        let mut paths = Vec::new();
        let (prefix, link) = if raw == pipeline_abs {
            (String::new(), None)
        } else if raw.starts_with(&pipeline_abs) {
            (format!("{}/", rel_of(&pipeline_abs, raw)), None)
        } else {
            let link = pipeline_dir.join("raw");
            match link.symlink_metadata() {
                // a link to this very folder (left by an earlier init) is used as it is
                Ok(m) if m.file_type().is_symlink() && link.canonicalize().is_ok_and(|t| t == raw) => {
                    ("raw/".to_string(), None)
                }
                Ok(_) => return Err(exists(&link)),
                Err(_) => ("raw/".to_string(), Some(link)),
            }
        };
        // every schema first, so that a name taken stops init before anything else is written
        for t in tables {
            let path = schemas_abs.join(format!("{}.json", t.table));
            if path.symlink_metadata().is_ok() {
                return Err(exists(&schemas_shown.join(format!("{}.json", t.table))));
            }
        }
        created.dir(&schemas_abs)?;
        for t in tables {
            let schema = t.schema(&prefix)?;
            let text = serde_json::to_string_pretty(&schema).map_err(|e| Error::format("schema", e))? + "\n";
            let shown = schemas_shown.join(format!("{}.json", t.table));
            created.file(&schemas_abs.join(format!("{}.json", t.table)), &text).map_err(|e| match e {
                Error::Refused(_) => exists(&shown),
                e => e,
            })?;
            paths.push(shown.display().to_string());
        }
        if let Some(link) = &link {
            let target = relative_path(&pipeline_abs, raw);
            created.note(b'f', link)?;
            symlink_dir(&target, link)?;
            created.files.push(link.clone());
            paths.push(format!("{} -> {}", link.display(), target.display()));
        }
        let toml = pipeline_toml(folder, name, &prefix, tables, not_read, left);
        // the pipeline as written must load: a mistake here is init's, said before it is left behind
        let toml_path = pipeline_dir.join("pipeline.toml");
        created.file(&toml_path, &toml)?;
        paths.push(toml_path.display().to_string());
        // written: what follows can only undo it, in this process
        created.end()?;
        PipelineSpec::load(&pipeline_dir)?;
        Ok(Written { prefix, paths, recovered })
    })();
    match result {
        Ok(w) => Ok(w),
        Err(e) => {
            created.undo();
            outer.undo();
            Err(e)
        }
    }
}

#[cfg(unix)]
fn symlink_dir(target: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => exists(link),
        _ => Error::io(link, e),
    })
}

#[cfg(windows)]
fn symlink_dir(target: &Path, link: &Path) -> Result<()> {
    std::os::windows::fs::symlink_dir(target, link).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => exists(link),
        _ => Error::io(link, e),
    })
}

/// The entries of pipeline.toml's `not_read` for files `not_read` (each with its reason), of
/// the files `found` in all: those whose names a build would name (see
/// [`crate::stages::ingest::files::named_readable`]), in file order, those of one reason
/// together. Files left out for what
/// they are rather than what they hold (a model's files, a run's earlier Trainer states) are
/// named by globs where a folder's name can be `*` without naming any other file found: the
/// same files of every checkpoint are one entry, and those of checkpoints saved later too.
fn not_read_entries<'n>(not_read: &'n [NotRead], found: &[&str]) -> Vec<(String, &'n str)> {
    use crate::stages::ingest::files::{PathPattern, named_readable};
    let listed: Vec<&NotRead> =
        not_read.iter().filter(|n| named_readable(n.file.rsplit('/').next().unwrap_or(&n.file))).collect();
    // a run's earlier Trainer states are named one by one: a checkpoint saved after the state
    // read (a run resumed and not yet ended) may hold more, and a build names it
    let by_kind = |reason: &str| reason == MODEL_FILE || reason == ALL_RESULTS;
    let mut out: Vec<(String, &str)> = Vec::new();
    let mut covered: BTreeSet<&str> = BTreeSet::new();
    // a numbered folder keeps its word (`checkpoint-*`, `global_step_*`, not `*`): a folder
    // added later by another tool (an experiment's own `config.json`) is not left out with
    // the checkpoints' files
    static NUMBERED: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let numbered =
        NUMBERED.get_or_init(|| regex::Regex::new(r"^([A-Za-z_-]*[A-Za-z][-_])[0-9]+$").expect("static pattern"));
    for n in &listed {
        if covered.contains(n.file.as_str()) {
            continue;
        }
        if !by_kind(&n.reason) {
            out.push((n.file.clone(), n.reason.as_str()));
            continue;
        }
        let same: BTreeSet<&str> = listed.iter().filter(|m| m.reason == n.reason).map(|m| m.file.as_str()).collect();
        let mut segs: Vec<String> = n.file.split('/').map(str::to_string).collect();
        // the deepest folder first: checkpoints' names differ more than runs'. A folder of
        // another name is `*` only where files of this reason differ there (two runs' model
        // files): one run's `raw/trl/<run>/config.json` is no `raw/*/*/config.json`, which
        // would leave out an experiment's own config added later
        let matching = |segs: &[String]| {
            PathPattern::new(&segs.join("/")).map_or(0, |g| same.iter().filter(|f| g.captures(f).is_some()).count())
        };
        for i in (0..segs.len() - 1).rev() {
            let (wanted, gains) = match numbered.captures(&segs[i]) {
                Some(c) => (format!("{}*", &c[1]), false),
                None => ("*".to_string(), true),
            };
            let before = if gains { matching(&segs) } else { 0 };
            let old = std::mem::replace(&mut segs[i], wanted);
            let holds = PathPattern::new(&segs.join("/"))
                .is_ok_and(|g| found.iter().all(|f| same.contains(f) || g.captures(f).is_none()))
                && (!gains || matching(&segs) > before);
            if !holds {
                segs[i] = old;
            }
        }
        let entry = segs.join("/");
        match PathPattern::new(&entry) {
            Ok(g) if entry != n.file => covered.extend(same.iter().filter(|f| g.captures(f).is_some())),
            _ => {
                covered.insert(n.file.as_str());
            }
        }
        out.push((entry, n.reason.as_str()));
    }
    // the entries of each reason together, reasons in the order they first come
    let first: Vec<&str> = out.iter().map(|(_, r)| *r).collect();
    out.sort_by_key(|(_, r)| first.iter().position(|x| x == r));
    out
}

/// The text of pipeline.toml.
fn pipeline_toml(
    folder: &Path,
    name: &str,
    prefix: &str,
    tables: &[TablePlan],
    not_read: &[NotRead],
    left: &[LeftOut],
) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "# {name}: written by `runpack init` from {} (read through {}).\n\
         # Edit it as you like: rename tables, change their SQL, add views and card sections.\n",
        folder.display(),
        prefix.trim_end_matches('/')
    ));
    t.push_str(&format!("name = {}\nversion = \"0.1.0\"\n", q(name)));
    // the files left out, so that a build names only files added since (an entry matches
    // as a glob or as written: a name with `*`, `?` or braces is matched as written); a
    // build names only files of the kinds init reads, so the others are not listed
    let found: Vec<&str> = not_read
        .iter()
        .map(|n| n.file.as_str())
        .chain(tables.iter().flat_map(|t| t.plan.files.iter().map(String::as_str)))
        .collect();
    let listed = not_read_entries(not_read, &found);
    if !listed.is_empty() {
        t.push_str(
            "# Files init left out, each with why: a build names the files no source reads but these.\nnot_read = [\n",
        );
        let mut said = "";
        for (entry, reason) in listed {
            // entries of one reason follow each other: the reason is said at the first
            if reason == said {
                t.push_str(&format!("    {},\n", q(&format!("{prefix}{entry}"))));
                continue;
            }
            said = reason;
            let reason: String = reason.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            let reason = cut_at_word(&reason, 240);
            t.push_str(&format!("    {}, # {reason}\n", q(&format!("{prefix}{entry}"))));
        }
        t.push_str("]\n");
    }
    t.push_str(&format!("\n[card]\npretty_name = {}\n", q(name)));
    t.push_str(
        "# TODO: the data's licence, as a Hub licence id (apache-2.0, mit, cc-by-4.0, other, …)\n\
         # license = \"\"\n\
         description = \"\"\"\n\
         TODO: what these runs are, where the files come from and how they were made.\n\
         \"\"\"\n",
    );
    let mut tags: Vec<&str> = Vec::new();
    for tp in tables.iter().filter(|tp| !tp.plan.other_writer) {
        // the evaluation tools by name, beside `evaluation`
        let tool = match tp.plan.format {
            Format::InspectEvals | Format::InspectSamples => Some("inspect-ai"),
            Format::LmEvalResults | Format::LmEvalSamples => Some("lm-evaluation-harness"),
            Format::LightevalResults | Format::LightevalDetails => Some("lighteval"),
            _ => None,
        };
        let tag = match tp.plan.format {
            Format::TinkerMetrics
            | Format::TinkerCheckpoints
            | Format::TinkerTimings
            | Format::TinkerRollouts
            | Format::TinkerRolloutSteps => "tinker",
            Format::TinkerEvalResult
            | Format::TinkerEvalTrajectories
            | Format::TinkerEvalRun
            | Format::EvalMetrics
            | Format::EvalGenerations
            | Format::InspectEvals
            | Format::InspectSamples
            | Format::LmEvalResults
            | Format::LmEvalSamples
            | Format::LightevalResults
            | Format::LightevalDetails => "evaluation",
            Format::TrackioMetrics | Format::TrackioSystem | Format::TrackioRuns => "trackio",
            Format::VerlMetrics | Format::VerlGenerations => "verl",
            Format::TrainerState | Format::TrainerRuns => "transformers",
            Format::Wandb => "wandb",
            Format::Tensorboard => "tensorboard",
            _ => continue,
        };
        for tag in std::iter::once(tag).chain(tool) {
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
    }
    if !tags.is_empty() {
        t.push_str(&format!("tags = [{}]\n", tags.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")));
    }
    t.push_str("\n# ---------------------------------------------------------------- sources\n");
    for tp in tables {
        t.push('\n');
        t.push_str(&source_toml(&tp.source, &tp.plan, prefix));
    }
    t.push_str("\n# ---------------------------------------------------------------- tables\n");
    for tp in tables {
        t.push_str(&format!(
            "\n[[table]]\nname = {}\nschema = {}\ndescription = {}\n",
            q(&tp.table),
            q(&format!("../../schemas/{name}/{}.json", tp.table)),
            q(&tp.description(prefix)),
        ));
        if let Some((columns, at)) = &tp.trial.report_repeats {
            let at: String = at.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            // a suggestion: rows that repeat these may be results given twice, or runs told apart
            // by a column that is no key (a seed with a null)
            t.push_str(&format!(
                "# report_repeats = [{}]   # {at}: if a row should be one per these, uncomment: each build counts \
                 and names the rows that repeat them, and the card says it\n",
                columns.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ")
            ));
        }
        if let Some((at, _)) = &tp.trial.keep_last {
            let at: String = at.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            // W&B sessions are read in their folders' order, which `order_by` does not follow:
            // the second read is not said to be the later
            let at = if tp.plan.format == Format::Wandb { at.replacen(" again at ", " also at ", 1) } else { at };
            t.push_str(&format!(
                "on_duplicate_key = \"keep-last\"   # {at}: {}, and the last row of each key is the run's\n",
                tp.why_repeated()
            ));
            // a step's rows come from its records: a step logged again keeps the later ones.
            // Not of verl's log (a resumed run validates again at the step of its checkpoint,
            // whose training rows stand) nor of a trackio project one of whose runs logged a
            // metric twice in one attempt (its steps did not go back between): there each row
            // is kept or set aside on its own
            if let Some(step) = tp.trial.key.iter().position(|k| k == "step")
                && step + 1 < tp.trial.key.len()
                && tp.plan.format != Format::VerlMetrics
                && !(tp.plan.format == Format::TrackioMetrics && tp.trial.logged_twice)
            {
                let columns: Vec<String> = tp.trial.key[..=step].iter().map(|c| q(c)).collect();
                t.push_str(&format!(
                    "record_columns = [{}]   # a step logged again keeps the later records alone\n",
                    columns.join(", ")
                ));
            }
            // W&B names a session's folder after its start in local time (`offline-run-…` for
            // one offline): the time each record was logged orders sessions where those names
            // do not (another time zone, an online run resumed offline)
            if tp.plan.format == Format::Wandb && tp.trial.schema.index_of("timestamp").is_ok() && tp.trial.untimed == 0
            {
                t.push_str(
                    "order_by = \"timestamp\"   # the later session by when it logged, not by its folder's name\n",
                );
            }
        }
        for s in &tp.trial.spliced {
            let s: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            t.push_str(&format!("# {s}\n"));
        }
        t.push_str(&format!("query = \"\"\"\n{}\n\"\"\"\n", multiline_body(&tp.sql())));
    }
    if !left.is_empty() {
        t.push_str(
            "\n# ---------------------------------------------------------------- left out\n\
             # Files a table leaves out, for what reading them found: each build says them, and the card.\n",
        );
        for l in left {
            let reason: String = l.reason.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            t.push_str(&format!(
                "\n[[left_out]]\ntable = {}\nfile = {}\nreason = {}\n",
                q(&l.table),
                q(&format!("{prefix}{}", l.file)),
                q(&reason)
            ));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_comment_is_cut_at_a_word_and_says_so() {
        assert_eq!(cut_at_word("move it to a folder", 100), "move it to a folder");
        assert_eq!(cut_at_word("move it to a folder of its own", 21), "move it to a folder …");
        assert_eq!(cut_at_word("émigré café", 8), "émigré …");
        assert_eq!(cut_at_word("abcdefgh", 4), "abcd …");
        assert_eq!(cut_at_word("left out (as it is a copy of b)", 20), "left out (as it is …)");
    }

    #[test]
    fn a_long_reason_is_cut_at_a_word_with_its_parentheses_closed() {
        let long = format!(
            "integer 9007199254740993 cannot be stored (the column holds float values, the type the value at {} decided)",
            "a/".repeat(60)
        );
        let cut = first_sentence(&long);
        assert!(cut.ends_with(" …))") || cut.ends_with(" …)"), "{cut}");
        assert_eq!(cut.matches('(').count(), cut.matches(')').count(), "{cut}");
        assert_eq!(first_sentence("short; the rest"), "short");
    }

    #[test]
    fn the_trainers_metrics_files_are_told_by_name_and_keys_and_described() {
        let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_trainer_results("train_results.json", &keys(&["epoch", "train_loss"])));
        assert!(is_trainer_results("eval_results.json", &keys(&["eval_accuracy"])));
        assert!(!is_trainer_results("eval_results.json", &keys(&["accuracy", "model"])));
        assert!(!is_trainer_results("my-run_results.json", &keys(&["epoch"])));
        assert_eq!(
            trainer_metric("eval_samples_per_second").as_deref(),
            Some("Samples per second over the split (`eval`), as the Trainer's `save_metrics` wrote it.")
        );
        assert_eq!(trainer_metric("eval_accuracy"), None);
    }

    #[test]
    fn a_models_own_files_are_told_from_results_by_name_and_keys() {
        let is = |base: &str, keys: &[&str]| is_model_file(base, &|k: &str| keys.contains(&k));
        assert!(is("config.json", &["architectures", "model_type", "vocab_size"]));
        assert!(is("adapter_config.json", &["peft_type", "r"]));
        assert!(is("tokenizer.json", &["version", "added_tokens", "model"]));
        assert!(is("model.safetensors.index.json", &["metadata", "weight_map"]));
        // an experiment's own configuration, or results named like a model's file, are read
        assert!(!is("config.json", &["lr", "seed", "model"]));
        assert!(!is("tokenizer.json", &["model", "accuracy"]));
        assert!(!is("results.json", &["model_type"]));
    }

    #[test]
    fn files_left_out_for_what_they_are_are_named_by_globs_that_name_no_other_file() {
        let n = |file: &str, reason: &str| NotRead { problems: Vec::new(), file: file.into(), reason: reason.into() };
        let earlier = format!("{EARLIER_SAVE} a/trainer_state.json");
        let not_read = [
            n("a/checkpoint-1/config.json", MODEL_FILE),
            n("a/checkpoint-1/model.safetensors", "not a format runpack reads"),
            n("a/checkpoint-1/trainer_state.json", &earlier),
            n("a/checkpoint-2/config.json", MODEL_FILE),
            n("a/checkpoint-2/trainer_state.json", &earlier),
            n("b/broken.json", "not JSON"),
            n("b/checkpoint-1/config.json", MODEL_FILE),
        ];
        // b's checkpoint-2 state is read: a glob over b's checkpoints would leave it out
        let mut found: Vec<&str> = not_read.iter().map(|n| n.file.as_str()).collect();
        found.extend(["a/trainer_state.json", "b/checkpoint-2/trainer_state.json"]);
        let got: Vec<(String, &str)> = not_read_entries(&not_read, &found);
        let entries: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
        // earlier states one by one: a checkpoint saved after the state read is named by a build
        assert_eq!(
            entries,
            [
                "*/checkpoint-*/config.json",
                "a/checkpoint-1/trainer_state.json",
                "a/checkpoint-2/trainer_state.json",
                "b/broken.json"
            ]
        );
        // an experiment's own config.json in a folder of another name is not covered
        let g = crate::stages::ingest::files::PathPattern::new(entries[0]).unwrap();
        assert!(g.captures("c/exp-7/config.json").is_none() && g.captures("c/checkpoint-9/config.json").is_some());
        // one run's model files: its folders keep their names (`trl/*/config.json` would
        // leave out another tool's config.json added beside it later)
        let not_read = [n("trl/run/config.json", MODEL_FILE), n("trl/run/checkpoint-5/config.json", MODEL_FILE)];
        let found: Vec<&str> = not_read.iter().map(|n| n.file.as_str()).collect();
        let got: Vec<String> = not_read_entries(&not_read, &found).into_iter().map(|(e, _)| e).collect();
        assert_eq!(got, ["trl/run/config.json", "trl/run/checkpoint-*/config.json"]);
    }

    #[test]
    fn sql_in_a_multi_line_string_reads_back_as_written() {
        for sql in [
            "SELECT \"a\"\"\"\" AS b",
            "SELECT '\\' AS \"\"\"\"\"\"",
            "SELECT \"a\u{0}b\" AS \"a_b\", \"\r\u{7f}\u{1b}\" AS c\n\tFROM t",
            "SELECT \"\"",
        ] {
            let text = format!("q = \"\"\"\n{}\n\"\"\"\n", multiline_body(sql));
            let v: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{sql:?}: {e}\n{text}"));
            assert_eq!(v["q"].as_str(), Some(format!("{sql}\n").as_str()), "{text}");
        }
    }

    #[test]
    fn sibling_folders_of_one_format_merge_under_captures_that_are_no_column() {
        let merged = |patterns: &[(&str, &str)]| {
            let groups: BTreeMap<GroupKey, Vec<String>> =
                patterns.iter().map(|(f, p)| ((f.to_string(), p.to_string()), vec![p.to_string()])).collect();
            let columns = BTreeMap::from([("inspect-evals".to_string(), vec!["model".to_string()])]);
            merge_levels(groups, &columns).into_keys().map(|(_, p)| p).collect::<Vec<_>>()
        };
        // one folder's `.eval` and `.json` logs stay as they are (they were read as one source)
        assert_eq!(merged(&[("inspect-evals", "*.eval"), ("inspect-evals", "*.json")]), ["*.eval", "*.json"]);
        assert_eq!(merged(&[("inspect-evals", "l/*.eval"), ("inspect-evals", "l/*.json")]), ["l/*.eval", "l/*.json"]);
        // folders of logs: a capture that is no column of the logs
        assert_eq!(merged(&[("inspect-evals", "a/*.eval"), ("inspect-evals", "b/*.eval")]), ["{log_dir}/*.eval"]);
        // two levels that differ: each captured, the innermost first
        assert_eq!(
            merged(&[
                ("lighteval-results", "r/Qwen/Q3/results_*.json"),
                ("lighteval-results", "r/org/sft/results_*.json")
            ]),
            ["r/{org}/{model}/results_*.json"]
        );
        // files of other names, or of another format, stay apart
        assert_eq!(
            merged(&[("tinker-metrics", "a/{run}/metrics.jsonl"), ("tinker-checkpoints", "b/{run}/metrics.jsonl")])
                .len(),
            2
        );
    }

    #[test]
    fn an_error_placed_at_the_source_init_tries_gives_its_message_alone() {
        let raw = Path::new("/data/raw");
        let e = Error::config("/data/raw/pipeline.toml (source source)", "path capture {x} has the name of a column");
        assert_eq!(error_reason(raw, &e), "path capture {x} has the name of a column");
        assert_eq!(error_reason(raw, &Error::config("a.jsonl:3", "bad")), "a.jsonl:3: bad");
    }

    #[test]
    fn run_patterns_capture_what_names_the_run() {
        assert_eq!(
            run_pattern("o/results/Qwen/Qwen3-0.6B/results_2026.json", Format::LightevalResults),
            "o/results/{org}/{model}/results_{date_id}.json"
        );
        assert_eq!(
            run_pattern("results/local/results_2026.json.gz", Format::LightevalResults),
            "results/{model}/results_{date_id}.json.gz"
        );
        assert_eq!(
            run_pattern("elsewhere/results_2026.json", Format::LightevalResults),
            "elsewhere/results_{date_id}.json"
        );
        assert_eq!(
            run_pattern("o/details/Qwen/Qwen3/2026-01-01/details_gsm8k_2026.parquet", Format::LightevalDetails),
            "o/details/{org}/{model}/{run}/details_*.parquet"
        );
        assert_eq!(
            run_pattern("details/local/2026-01-01/details_gsm8k_2026.parquet", Format::LightevalDetails),
            "details/{model}/{run}/details_*.parquet"
        );
        assert_eq!(run_pattern("logs/a/metrics.jsonl", Format::TinkerMetrics), "logs/{run}/metrics.jsonl");
        assert_eq!(run_pattern("a/metrics.jsonl", Format::TinkerMetrics), "{run}/metrics.jsonl");
        assert_eq!(run_pattern("metrics.jsonl", Format::TinkerMetrics), "metrics.jsonl");
        assert_eq!(run_pattern("r/x_metrics.jsonl.gz", Format::TinkerMetrics), "r/{run}_metrics.jsonl.gz");
        assert_eq!(run_pattern("r/x-checkpoints.jsonl", Format::TinkerCheckpoints), "r/{run}-checkpoints.jsonl");
        assert_eq!(run_pattern("s/gsm8k/result.json", Format::TinkerEvalResult), "s/{bench}/result.json");
        assert_eq!(run_pattern("m/ck-1_metrics.json", Format::EvalMetrics), "m/{ckpt}_metrics.json");
        assert_eq!(
            run_pattern("m/ck-1_ood_generations.jsonl", Format::EvalGenerations),
            "m/{checkpoint}_{split}_generations.jsonl"
        );
        assert_eq!(
            run_pattern("e/runs/r1/gsm8k/result.json", Format::TinkerEvalResult),
            "e/runs/{eval_run}/{bench}/result.json"
        );
        assert_eq!(run_pattern("e/runs/r1/metadata.json", Format::TinkerEvalRun), "e/runs/{eval_run}/metadata.json");
        assert_eq!(run_pattern("logs/a/timing_spans.jsonl", Format::TinkerTimings), "logs/{run}/timing_spans.jsonl");
        assert_eq!(
            run_pattern("logs/a/iteration_000003/train_rollout_summaries.jsonl", Format::TinkerRollouts),
            "logs/{run}/iteration_*/*_rollout_summaries.jsonl"
        );
        assert_eq!(
            run_pattern("logs/a/train_iteration_000003_rollout_summaries.jsonl", Format::TinkerRollouts),
            "logs/{run}/*_rollout_summaries.jsonl"
        );
        assert_eq!(
            run_pattern("iteration_000003/train_rollout_summaries.jsonl", Format::TinkerRolloutSteps),
            "iteration_*/*_rollout_summaries.jsonl"
        );
        assert_eq!(run_pattern("logs/x_arith_y.eval", Format::InspectEvals), "logs/*.eval");
        assert_eq!(
            run_pattern("out/org__m/results_2026-01-01T00-00-00.json", Format::LmEvalResults),
            "out/{model}/results_{date_id}.json"
        );
        assert_eq!(run_pattern("samples_t_2026.jsonl.gz", Format::LmEvalSamples), "samples_*_{date_id}.jsonl.gz");
        assert_eq!(run_pattern("samples_t.jsonl", Format::LmEvalSamples), "samples_{name}.jsonl");
        assert_eq!(fragment_pattern("p/inbox/abc/00000000.jsonl"), "p/inbox/*/*.jsonl");
        assert_eq!(fragment_pattern("inbox/00000000.jsonl"), "inbox/*.jsonl");
        // a checkpoint name with `_` would split two ways: the file is named as it is
        assert_eq!(
            run_pattern("m/step_1_id_generations.jsonl", Format::EvalGenerations),
            "m/step_1_id_generations.jsonl"
        );
    }

    #[test]
    fn names_are_sql_names() {
        assert_eq!(sanitize("Scale GSM8K-qwen3.5"), "scale_gsm8k_qwen3_5");
        assert_eq!(sanitize("2024_runs"), "t_2024_runs");
        assert_eq!(release_name_of(Path::new("/x/My Runs (copy)")), "my-runs-copy");
        assert_eq!(release_name_of(Path::new("/x/__")), "dataset");
        let mut n = Names::default();
        assert_eq!(n.take("metrics", None), "metrics");
        assert_eq!(n.take("metrics", None), "metrics_2");
        assert_eq!(n.take("metrics", Some("verl")), "verl_metrics");
        assert_eq!(n.take("metrics", Some("verl")), "metrics_3");
        assert_eq!(n.take("config", Some("config")), "config");
        assert_eq!(ident("run_id"), "run_id");
        assert_eq!(ident("step"), "\"step\"");
        assert_eq!(ident("group"), "\"group\"");
        assert_eq!(ident("env/all/reward"), "\"env/all/reward\"");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn percentages_written_with_their_sign() {
        for v in ["71.2%", "100%", "-3 %", " 0.5% ", "+7%"] {
            assert!(is_percent(v), "{v:?}");
        }
        for v in ["%", "71.2", "1.2.3%", "a%", "71.2%%", "50% off", ".%"] {
            assert!(!is_percent(v), "{v:?}");
        }
    }

    #[test]
    fn outlines_keep_no_values() {
        let o: Outline =
            serde_json::from_str(r#"{"meta": {"a": 1}, "runs": [{"id": 1, "x": [1]}, {"id": 2}], "n": 3, "e": []}"#)
                .unwrap();
        assert_eq!(
            o,
            Outline::Object(vec![
                ("meta".into(), Member::Object),
                ("runs".into(), Member::Records { len: 2, first: vec!["id".into(), "x".into()] }),
                ("n".into(), Member::Other),
                ("e".into(), Member::Records { len: 0, first: vec![] }),
            ])
        );
        let o: Outline = serde_json::from_str(r#"[{"a": 1}, 2]"#).unwrap();
        assert_eq!(o, Outline::Array { objects: false, len: 2, first: vec!["a".into()] });
    }

    #[test]
    fn globs_of_files_sharing_a_beginning_or_an_end() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(glob_of("r", &f(&["r/run_1.json", "r/run_22.json"])).as_deref(), Some("r/run_*.json"));
        assert_eq!(glob_of("", &f(&["a.json"])), None);
        assert_eq!(glob_of("", &f(&["aa.json", "aab.json"])).as_deref(), Some("aa*.json"));
        assert_eq!(relative_path(Path::new("/a/p/n"), Path::new("/a/raw")), PathBuf::from("../../raw"));
    }
}

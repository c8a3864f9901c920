//! Ingest: raw input files → typed Arrow record batches, with provenance.
//!
//! In: one `[[source]]` of a pipeline (path globs, format, options, optional declared schema).
//! Out: an Arrow IPC file in the build's work folder holding every good row, typed by the
//! declared schema or by inference over the whole input, plus the columns `{capture}` (one
//! per path capture, `Utf8`), `_source_file` (`Utf8`, the path relative to the pipeline) and
//! `_source_line` (`Int64` 1-based line for JSONL/CSV and the Tinker formats; `Utf8` JSON
//! pointer for JSON documents). Problems go to the [`BuildReport`]; with
//! [`OnInvalid::Reject`] bad rows go to the rejects file instead of failing the build.
//!
//! Memory: records are converted in batches of [`BATCH_ROWS`]; a JSON document is streamed
//! record by record. Files are read twice when the schema is inferred (once to infer, once to
//! convert) and once when it is declared.

pub mod columns;
pub mod convert;
pub mod cookbook;
pub mod direct;
pub mod evals;
pub mod files;
pub mod graphs;
pub mod infer;
pub mod inspect;
pub mod lenient;
pub mod lighteval;
pub mod lmeval;
pub mod parquet;
pub mod path;
pub mod records;
pub mod strict;
pub mod tensorboard;
pub mod tinker;
pub mod trackio;
pub mod trainer;
pub mod verl;
pub mod wandb;
pub mod yaml;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde_json::{Map, Value};

use self::convert::{ConvertOptions, Target};
use self::files::InputFile;
use self::records::Item;
use crate::core::error::{Error, Result};
pub use crate::core::options::OnInvalid;
use crate::core::report::{BuildReport, Position, SourceRef, Violation};
use crate::core::spec::{ColumnsPolicy, Format, Layout, OnTruncated, PipelineSpec, SourceDef};
use crate::stages::rejects::{RejectBody, Rejects};

/// Rows converted at a time.
pub const BATCH_ROWS: usize = 8192;

/// Options of the ingest stage that come from the command line.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Fail or reject; a source's own `on_invalid` ([`crate::core::spec::SourceDef::on_invalid`])
    /// wins for its records.
    pub on_invalid: OnInvalid,
    /// Strings longer than this many bytes are reported (the dataset viewer struggles with them).
    pub large_cell_bytes: u64,
    /// Where JSON Lines inputs read to their end leave their SHA-256 (so that the release's
    /// manifest need not read them again); `None` hashes nothing while reading.
    pub read_digests: Option<crate::stages::hash::ReadDigests>,
    /// Violations kept in [`Ingested::found`] for display, at most (all are counted).
    pub max_errors: usize,
}

/// A source after ingest.
#[derive(Debug, Clone)]
pub struct Ingested {
    /// Source name (SQL table name).
    pub name: String,
    /// Schema of the rows, provenance columns included.
    pub schema: SchemaRef,
    /// Arrow IPC file holding the rows.
    pub ipc_file: PathBuf,
    /// Rows kept.
    pub rows: u64,
    /// Raw files read.
    pub inputs: Vec<InputFile>,
    /// The column lists of `orders` (given to [`run`]) by which the kept rows came in
    /// ascending order (nulls last), in the order they were written to `ipc_file`.
    pub sorted_by: Vec<Vec<String>>,
    /// What reading the source found: the rules its rows broke (violations, or rows written
    /// to the rejects), the non-finite and coerced values, and the warnings.
    pub found: BuildReport,
}

/// Reads one source. `orders` are column lists worth knowing the order of (the keys of
/// the tables): each one whose columns the source has is checked as the rows go by, and the
/// ones the kept rows follow are in [`Ingested::sorted_by`].
///
/// Errors: [`Error::Config`] when no file matches, when a column's type cannot be decided
/// (say which and how to declare it) or when a capture collides with a column; [`Error::Io`]
/// for unreadable files. Data problems are in [`Ingested::found`] (rows set aside are written
/// to `rejects` as well).
pub fn run(
    spec: &PipelineSpec,
    index: usize,
    work: &std::path::Path,
    opts: &IngestOptions,
    orders: &[Vec<String>],
    rejects: &mut Rejects,
) -> Result<Ingested> {
    let mut found = BuildReport::new(opts.max_errors);
    let read = read_source(spec, index, work, opts, orders, &mut found, rejects);
    let ingested = with_earlier(&found, read)?;
    Ok(Ingested { found, ..ingested })
}

/// `result`, with the violations `found` holds put before those of an error that stopped the
/// reading (a file that cannot be read on from): the records read before it were checked,
/// and their problems are said with it.
fn with_earlier<T>(found: &BuildReport, result: Result<T>) -> Result<T> {
    match result {
        Err(Error::Invalid { violations, total, checked, hints, warnings }) if found.violations_total > 0 => {
            let mut all = found.violations.clone();
            all.extend(violations);
            Err(Error::Invalid { violations: all, total: total + found.violations_total, checked, hints, warnings })
        }
        other => other,
    }
}

/// [`run`], recording what it finds in `report`.
fn read_source(
    spec: &PipelineSpec,
    index: usize,
    work: &std::path::Path,
    opts: &IngestOptions,
    orders: &[Vec<String>],
    report: &mut BuildReport,
    rejects: &mut Rejects,
) -> Result<Ingested> {
    let src = &spec.def.sources[index];
    let (inputs, capture_names) = find_inputs(spec, index)?;
    if src.format == Format::Parquet {
        return run_parquet(spec, index, inputs, capture_names, work, opts, orders, report, rejects);
    }
    let prepared = prepare(spec, index, inputs, capture_names, opts.on_invalid, report)?;
    std::fs::create_dir_all(work).map_err(|e| Error::io(work, e))?;
    let ipc_file = work.join(format!("{}.arrow", src.name));
    let mut writer = crate::stages::sort::staging_file(&ipc_file, &prepared.schema)?;
    let mut checks = order_checks(&prepared.schema, orders);
    // runs of a few rows (files of one line each, a run of lines per file) are written
    // together: thousands of one-row batches of thousands of union columns made a staging
    // file that took gigabytes to read back
    let mut pending: Vec<RecordBatch> = Vec::new();
    let (mut pending_rows, mut pending_bytes) = (0usize, 0usize);
    let write_pending =
        |pending: &mut Vec<RecordBatch>, writer: &mut arrow::ipc::writer::FileWriter<_>| -> Result<()> {
            let fail = |e| Error::format(ipc_file.display().to_string(), e);
            match pending.len() {
                0 => {}
                1 => writer.write(&pending[0]).map_err(fail)?,
                _ => writer
                    .write(&arrow::compute::concat_batches(&prepared.schema, pending.iter()).map_err(fail)?)
                    .map_err(fail)?,
            }
            pending.clear();
            Ok(())
        };
    let mut out = |rb: &RecordBatch| -> Result<()> {
        for c in &mut checks {
            c.observe(rb)?;
        }
        pending.push(rb.clone());
        pending_rows += rb.num_rows();
        pending_bytes += rb.get_array_memory_size();
        if pending_rows >= COALESCE_ROWS || pending_bytes >= COALESCE_BYTES {
            (pending_rows, pending_bytes) = (0, 0);
            write_pending(&mut pending, &mut writer)?;
        }
        Ok(())
    };
    let rows = convert(spec, index, &prepared, opts, report, rejects, &mut out)?;
    write_pending(&mut pending, &mut writer)?;
    let sorted_by = sorted_by(checks);
    writer.finish().map_err(|e| Error::format(ipc_file.display().to_string(), e))?;
    let Prepared { schema, inputs, .. } = prepared;
    Ok(Ingested { name: src.name.clone(), schema, ipc_file, rows, inputs, sorted_by, found: BuildReport::default() })
}

/// A source read straight into a consumer by [`stream`].
#[derive(Debug, Clone)]
pub struct Streamed {
    /// Rows kept.
    pub rows: u64,
    /// Raw files read.
    pub inputs: Vec<InputFile>,
    /// What reading the source found, as [`Ingested::found`].
    pub found: BuildReport,
}

/// The schema of a source's rows (provenance columns included) when it is known without
/// reading any data: the source declares its schema, or its format fixes its columns. `None`
/// for sources whose columns are inferred from the data, W&B runs and Parquet files, and
/// whenever finding the source's files fails (the error is raised when it is read).
pub fn stream_schema(spec: &PipelineSpec, index: usize) -> Option<SchemaRef> {
    let src = &spec.def.sources[index];
    let fixed = matches!(
        src.format,
        Format::TinkerMetrics
            | Format::VerlMetrics
            | Format::TinkerCheckpoints
            | Format::TinkerEvalResult
            | Format::TinkerEvalTrajectories
            | Format::EvalMetrics
            | Format::EvalGenerations
            | Format::TinkerTimings
            | Format::TinkerRollouts
            | Format::TinkerRolloutSteps
            | Format::TinkerEvalRun
            | Format::TrackioMetrics
            | Format::TrackioSystem
            | Format::TrackioRuns
            | Format::InspectEvals
            | Format::InspectSamples
            | Format::LmEvalResults
            | Format::LmEvalSamples
            | Format::LightevalResults
            | Format::LightevalDetails
            | Format::VerlGenerations
            | Format::TrainerState
            | Format::TrainerRuns
            | Format::Tensorboard
            | Format::GraphPassResults
            | Format::GraphScoreReport
    );
    let declared = matches!(src.format, Format::Jsonl | Format::Json | Format::Yaml | Format::Csv)
        && spec.source_schemas[index].is_some();
    if !(fixed || declared) {
        return None;
    }
    let (inputs, capture_names) = find_inputs(spec, index).ok()?;
    let mut scratch = BuildReport::new(0);
    prepare(spec, index, inputs, capture_names, OnInvalid::Fail, &mut scratch).ok().map(|p| p.schema)
}

/// Reads a source whose schema [`stream_schema`] knows and hands each record batch of kept
/// rows, in input order, to `out` instead of a staging file. Finds and rejects as [`run`]
/// does ([`Streamed::found`]); an error from `out` stops the read and is returned.
pub fn stream(
    spec: &PipelineSpec,
    index: usize,
    opts: &IngestOptions,
    rejects: &mut Rejects,
    out: &mut dyn FnMut(&RecordBatch) -> Result<()>,
) -> Result<Streamed> {
    let mut found = BuildReport::new(opts.max_errors);
    let (inputs, capture_names) = find_inputs(spec, index)?;
    let prepared = prepare(spec, index, inputs, capture_names, opts.on_invalid, &mut found)?;
    let converted = convert(spec, index, &prepared, opts, &mut found, rejects, out);
    let rows = with_earlier(&found, converted)?;
    Ok(Streamed { rows, inputs: prepared.inputs, found })
}

/// The files of a source and the names of its path captures. Errors: [`Error::Config`] when
/// no file matches.
fn find_inputs(spec: &PipelineSpec, index: usize) -> Result<(Vec<InputFile>, Vec<String>)> {
    let src = &spec.def.sources[index];
    let context = spec.place(&format!("source {}#path", src.name));
    let inputs = files::source_files(spec, index, &context)?;
    if inputs.is_empty() {
        // files that match, every one of them left out by the pipeline's `not_read`
        let matched = files::find(&spec.dir, &src.path.list(), &context)?;
        if let Some(first) = matched.first() {
            return Err(Error::config(
                context,
                format!(
                    "the pipeline's not_read leaves out every file {:?} matches ({} file{}, {}{}): no file is left \
                     to read; take the source out, or the pattern that leaves them out out of not_read",
                    src.path.list(),
                    matched.len(),
                    if matched.len() == 1 { "" } else { "s" },
                    first.rel,
                    if matched.len() > 1 { ", …" } else { "" }
                ),
            ));
        }
        // a folder named as a path matches no file: say how to name its files
        let folder = src.path.list().into_iter().find(|p| spec.dir.join(p).is_dir());
        let hint = match folder {
            Some(f) => {
                let f = f.trim_end_matches('/');
                let ext = match src.format {
                    Format::Json
                    | Format::TinkerEvalResult
                    | Format::EvalMetrics
                    | Format::TinkerEvalRun
                    | Format::LmEvalResults
                    | Format::LightevalResults
                    | Format::TrainerState
                    | Format::TrainerRuns
                    | Format::GraphPassResults => "*.json",
                    Format::Csv if src.delimiter_byte() == b'\t' => "*.tsv",
                    Format::Csv => "*.csv",
                    Format::Yaml => "*.yaml",
                    Format::Parquet | Format::LightevalDetails => "*.parquet",
                    Format::Wandb => "*",
                    Format::InspectEvals | Format::InspectSamples => "*.eval",
                    Format::Tensorboard => "events.out.tfevents.*",
                    _ => "*.jsonl",
                };
                format!(
                    "; {f} is a folder: name its files with a glob, such as \"{f}/{ext}\" (or \"{f}/**/{ext}\" for every level)"
                )
            }
            None => String::new(),
        };
        return Err(Error::config(
            context,
            format!(
                "no file matches {:?} under {}{hint}{}",
                src.path.list(),
                spec.dir.display(),
                files::literal_brackets_hint(&src.path.list())
            ),
        ));
    }
    let mut inputs = inputs;
    // lm-eval names its samples files by task: the task is a column, as a capture would give it
    // (lm-eval's task names hold `_`, which a path pattern cannot split off the date)
    if src.format == Format::LmEvalSamples && !inputs[0].captures.iter().any(|(n, _)| n == "task") {
        let tasks: Option<Vec<String>> = inputs.iter().map(|i| lmeval::task_of_samples_file(&i.rel)).collect();
        if let Some(tasks) = tasks {
            for (input, task) in inputs.iter_mut().zip(tasks) {
                input.captures.push(("task".into(), task));
            }
        }
    }
    let capture_names: Vec<String> = inputs[0].captures.iter().map(|(n, _)| n.clone()).collect();
    Ok((inputs, capture_names))
}

/// A source's columns decided, before its rows are read.
struct Prepared {
    inputs: Vec<InputFile>,
    columns: Vec<(String, Target)>,
    conv: ConvertOptions,
    wandb_plan: Option<wandb::Plan>,
    schema: SchemaRef,
}

/// The columns a format fixes (the Tinker, evaluation, trackio and graph formats), with the
/// text columns when `keep_text`; `None` for W&B (its columns depend on the table it reads)
/// and for the plain formats (declared or inferred).
pub fn format_columns(format: Format, keep_text: bool) -> Option<Vec<(String, Target)>> {
    match format {
        Format::TinkerMetrics => Some(tinker::metrics_columns()),
        Format::VerlMetrics => Some(verl::metrics_columns()),
        Format::TinkerCheckpoints => Some(tinker::checkpoints_columns()),
        Format::TinkerEvalResult => Some(evals::result_columns()),
        Format::TinkerEvalTrajectories => Some(evals::trajectory_columns(keep_text)),
        Format::EvalMetrics => Some(evals::metrics_columns()),
        Format::EvalGenerations => Some(evals::generation_columns(keep_text)),
        Format::TinkerTimings => Some(cookbook::timing_columns()),
        Format::TinkerRollouts => Some(cookbook::rollout_columns()),
        Format::TinkerRolloutSteps => Some(cookbook::rollout_step_columns()),
        Format::TinkerEvalRun => Some(cookbook::eval_run_columns()),
        Format::TrackioMetrics => Some(trackio::metric_columns(true)),
        Format::TrackioSystem => Some(trackio::metric_columns(false)),
        Format::TrackioRuns => Some(trackio::run_columns()),
        Format::InspectEvals => Some(inspect::eval_columns()),
        Format::InspectSamples => Some(inspect::sample_columns(keep_text)),
        Format::LmEvalResults => Some(lmeval::result_columns()),
        Format::LmEvalSamples => Some(lmeval::sample_columns(keep_text)),
        Format::LightevalResults => Some(lighteval::result_columns()),
        Format::LightevalDetails => Some(lighteval::detail_columns(keep_text)),
        Format::VerlGenerations => Some(verl::columns(keep_text)),
        Format::TrainerState => Some(trainer::columns()),
        Format::TrainerRuns => Some(trainer::run_columns()),
        Format::Tensorboard => Some(tensorboard::columns()),
        Format::GraphPassResults => Some(graphs::pass_columns()),
        Format::GraphScoreReport => Some(graphs::report_columns()),
        _ => None,
    }
}

/// Decides a source's columns (declared, fixed by the format, or inferred from the data) and
/// the schema of its rows. `on_invalid` is the build's rule for bad records (the source's own
/// wins).
fn prepare(
    spec: &PipelineSpec,
    index: usize,
    inputs: Vec<InputFile>,
    capture_names: Vec<String>,
    on_invalid: OnInvalid,
    report: &mut BuildReport,
) -> Result<Prepared> {
    let src = &spec.def.sources[index];
    let context = spec.place(&format!("source {}", src.name));
    let mut conv = convert_options(spec, index);
    let mut wandb_plan = None;
    let columns: Vec<(String, Target)> = match src.format {
        Format::Wandb => {
            // a histogram this source skips is read by another one of the pipeline
            let histograms_elsewhere = spec
                .def
                .sources
                .iter()
                .any(|s| s.wandb.as_ref().is_some_and(|w| w.table == crate::core::spec::WandbTable::Histograms));
            let plan = wandb::prepare(src, &inputs, &context, histograms_elsewhere, report)
                .map_err(|e| name_table(e, &src.name))?;
            let columns = wandb::columns(&plan.opts);
            wandb_plan = Some(plan);
            columns
        }
        format => match format_columns(format, src.keep_text) {
            Some(columns) => columns,
            None => match &spec.source_schemas[index] {
                Some(schema) => {
                    conv.strict_keys = true;
                    conv.boolean_digits = true;
                    schema.fields.iter().map(|f| (f.name.clone(), Target::from_descriptor(f))).collect()
                }
                None => {
                    let reject = src.on_invalid.unwrap_or(on_invalid) == OnInvalid::Reject;
                    conv.reject_unnameable = reject;
                    infer_columns(src, &inputs, &context, &mut conv, spec.untyped_as_text, reject, report)?
                }
            },
        },
    };
    let provenance_names = check_column_names(spec, src, &columns, &capture_names, &conv, &context)?;

    let pointer_lines = matches!(
        src.format,
        Format::Json
            | Format::Yaml
            | Format::TinkerEvalResult
            | Format::EvalMetrics
            | Format::TinkerEvalRun
            | Format::InspectEvals
            | Format::InspectSamples
            | Format::LmEvalResults
            | Format::LightevalResults
            | Format::TrainerState
            | Format::TrainerRuns
            | Format::GraphPassResults
    );
    let mut fields: Vec<Field> = columns.iter().map(|(n, t)| Field::new(n, t.arrow_type(), true)).collect();
    for c in &capture_names {
        fields.push(Field::new(c, DataType::Utf8, true));
    }
    fields.push(Field::new(provenance_names[0], DataType::Utf8, false));
    fields.push(Field::new(provenance_names[1], if pointer_lines { DataType::Utf8 } else { DataType::Int64 }, false));
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    Ok(Prepared { inputs, columns, conv, wandb_plan, schema })
}

/// How a source's values are converted, from its format and options (a CSV source's
/// missing values from its schema, default: the empty cell).
fn convert_options(spec: &PipelineSpec, index: usize) -> ConvertOptions {
    let src = &spec.def.sources[index];
    let missing_values = match src.format {
        Format::Csv => spec.source_schemas[index]
            .as_ref()
            .and_then(|s| s.missing_values.clone())
            .unwrap_or_else(|| vec![String::new()]),
        _ => Vec::new(),
    };
    // a field's own missing values, from [[source.field]] or the source's schema
    let schema_fields = spec.source_schemas[index].iter().flat_map(|s| s.fields.iter());
    let field_missing = schema_fields
        .chain(src.fields.iter())
        .filter_map(|f| f.missing_values.clone().map(|m| (f.name.clone(), m)))
        .collect();
    ConvertOptions {
        textual: src.format == Format::Csv,
        missing_values,
        field_missing,
        nonfinite: src.nonfinite,
        coerce_nonfinite_strings: src.coerce_nonfinite_strings,
        coerce_numeric_strings: src.coerce_numeric_strings,
        fixed_columns: src.format.fixed_columns(),
        coerce_options: src.format.takes_coerce(),
        assume_timezone: src.assume_timezone.as_ref().map(|t| t.parse().expect("checked at load")),
        strict_keys: false,
        reject_unnameable: false,
        boolean_digits: false,
        boolean_digit_fields: src.fields.iter().filter(|f| f.field_type == "boolean").map(|f| f.name.clone()).collect(),
        first_seen: BTreeMap::new(),
    }
}

/// Refuses a column of the data that has the name of a path capture or of runpack's
/// provenance columns (named where the data first holds it, else at `context`); returns
/// the names of runpack's provenance columns for this source (shadowed names when the data
/// keeps its own `_source_file`/`_source_line`).
fn check_column_names(
    spec: &PipelineSpec,
    src: &crate::core::spec::SourceDef,
    columns: &[(String, Target)],
    capture_names: &[String],
    conv: &ConvertOptions,
    context: &str,
) -> Result<[&'static str; 2]> {
    // a data column that clashes is named where the data first holds it (inferred columns),
    // else at the source: (location, note for the message)
    let clash_at = |c: &str| match conv.first_seen.get(&path::render(&[path::Seg::Key(c.to_string())])) {
        Some((_, at)) => (at.to_string(), format!(" (first here, source {})", src.name)),
        None => (context.to_string(), String::new()),
    };
    for c in capture_names {
        if columns.iter().any(|(n, _)| n == c) {
            let (place, seen) = clash_at(c);
            return Err(Error::config(
                place,
                format!(
                    "path capture {{{c}}} has the name of a column in the data{seen}; rename the capture in \
                     the source's path"
                ),
            ));
        }
    }
    // the data's own provenance columns, when the caller keeps them: runpack's go under other names
    let own_provenance =
        spec.data_provenance && columns.iter().any(|(n, _)| n == "_source_file" || n == "_source_line");
    let provenance_names =
        if own_provenance { crate::core::spec::SHADOWED_PROVENANCE } else { ["_source_file", "_source_line"] };
    if own_provenance
        && let Some(c) =
            columns.iter().map(|(n, _)| n).find(|n| crate::core::spec::SHADOWED_PROVENANCE.contains(&n.as_str()))
    {
        let (place, seen) = clash_at(c);
        return Err(Error::config(
            place,
            format!(
                "the data has a column named {}{seen}, a name runpack keeps for its own file and line beside the \
                 data's `_source_file`/`_source_line`; rename the column in the input",
                crate::core::error::escape_control(c)
            ),
        ));
    }
    for c in ["_source_file", "_source_line"] {
        if capture_names.iter().any(|n| n == c) {
            return Err(Error::config(
                context,
                format!("path capture {{{c}}} has the name of a column runpack adds itself; rename the capture"),
            ));
        }
        if !own_provenance && columns.iter().any(|(n, _)| n == c) {
            let (place, seen) = clash_at(c);
            return Err(Error::config(
                place,
                format!(
                    "the data has a column named {c}{seen}, which runpack adds to every source's rows (the \
                     file and line each row comes from); rename the column in the input"
                ),
            ));
        }
    }

    Ok(provenance_names)
}

/// Converts the records of a source read record by record (W&B, trackio, JSON, YAML, CSV,
/// Parquet, evaluation logs), in batches of [`BATCH_ROWS`], handing each to `applier`.
fn convert_records(
    chunk_spec: &ChunkSpec,
    inputs: &[InputFile],
    wandb_plan: Option<&wandb::Plan>,
    mut trackio_reader: Option<&mut trackio::Reader>,
    applier: &mut Applier,
) -> Result<()> {
    let (src, conv) = (chunk_spec.src, chunk_spec.conv);
    let mut batch: Vec<Pending> = Vec::with_capacity(BATCH_ROWS);
    let mut bad: Vec<BadLine> = Vec::new();
    // files whose comment lines among the rows were skipped (a row whose first cell starts
    // with the comment character is one): said, as a row never goes without a word
    let mut commented: Vec<(String, records::CommentLines)> = Vec::new();
    for (k, input) in inputs.iter().enumerate() {
        let file = input.rel.clone();
        let captures = input.captures.clone();
        let mut sink = |item: Item| -> Result<()> {
            match item {
                Item::Record(mut obj, at) => {
                    missing_to_null(&mut obj, conv);
                    let sref = SourceRef { file: file.clone(), at };
                    shape_into(src, obj, sref, &captures, &mut batch, &mut bad);
                }
                Item::Bad { at, rule, message, raw } => bad.push((
                    SourceRef { file: file.clone(), at },
                    rule,
                    vec![("$".into(), message)],
                    unparsed_body(src, raw),
                )),
            }
            if batch.len() >= BATCH_ROWS {
                let chunk = chunk_spec.convert(std::mem::take(&mut batch), std::mem::take(&mut bad))?;
                applier.apply(chunk)?;
            }
            Ok(())
        };
        let read = match (wandb_plan, trackio_reader.as_deref_mut()) {
            (Some(plan), _) => wandb::read(plan, k, &mut sink),
            (None, Some(reader)) => reader.read(input, &mut sink),
            (None, None) => read_file(src, input, files::open(input)?, &mut sink).map(|c| {
                if c.count > 0 {
                    commented.push((file.clone(), c));
                }
            }),
        };
        if let Err(e) = read {
            // the records read before the file could not be read on are checked first: their
            // problems are said before the one that stopped the reading
            if !batch.is_empty() || !bad.is_empty() {
                let chunk = chunk_spec.convert(std::mem::take(&mut batch), std::mem::take(&mut bad))?;
                applier.apply(chunk)?;
            }
            return Err(name_table(e, &src.name));
        }
    }
    if !batch.is_empty() || !bad.is_empty() {
        let chunk = chunk_spec.convert(batch, bad)?;
        applier.apply(chunk)?;
    }
    if let Some((first_file, first)) = commented.first() {
        let total: u64 = commented.iter().map(|(_, c)| c.count).sum();
        // each file named, with its first lines; a line above the header with its text (how
        // the file was made) where the build runs, not in the card
        let files = |quote: bool| -> Vec<String> {
            commented
                .iter()
                .take(10)
                .map(|(f, c)| {
                    let lines: Vec<String> = c
                        .first
                        .iter()
                        .take(3)
                        .map(|l| match c.above_header.iter().find(|(a, _)| a == l) {
                            Some((_, text)) if quote => format!("{l} ({text:?})"),
                            _ => l.to_string(),
                        })
                        .collect();
                    let more = c.count - lines.len() as u64;
                    format!(
                        "{f} line{} {}{}",
                        if c.count == 1 { "" } else { "s" },
                        lines.join(", "),
                        if more > 0 { format!(" and {more} more") } else { String::new() }
                    )
                })
                .collect()
        };
        let more_files = commented.len().saturating_sub(10);
        let message = |files: Vec<String>| {
            format!(
                "source {} skipped {total} line{} that start{} with {:?}, as comments (its `comment`): {}{}; a row whose \
                 first cell starts with it is skipped so too (quote that cell to keep the row)",
                src.name,
                if total == 1 { "" } else { "s" },
                if total == 1 { "s" } else { "" },
                src.comment.as_deref().unwrap_or("#"),
                files.join("; "),
                if more_files > 0 { format!("; and {more_files} more files") } else { String::new() }
            )
        };
        let at = Some(SourceRef { file: first_file.clone(), at: Position::Line(first.first[0]) });
        let (public, quoted) = (message(files(false)), message(files(true)));
        if public == quoted {
            applier.report.warn(&src.name, "comment-lines", at, public);
        } else {
            applier.report.warn_quoting(&src.name, "comment-lines", at, public, quoted);
        }
    }
    Ok(())
}

/// Converts a prepared source's rows and hands each batch of kept rows to `out`; the number
/// of rows kept.
fn convert(
    spec: &PipelineSpec,
    index: usize,
    prepared: &Prepared,
    opts: &IngestOptions,
    report: &mut BuildReport,
    rejects: &mut Rejects,
    out: &mut dyn FnMut(&RecordBatch) -> Result<()>,
) -> Result<u64> {
    let src = &spec.def.sources[index];
    let Prepared { inputs, columns, conv, wandb_plan, schema } = prepared;
    let chunk_spec = ChunkSpec {
        src,
        columns,
        conv,
        schema: schema.clone(),
        large_cell_bytes: opts.large_cell_bytes,
        // records as they are (no reshaping), each key a column: Python's NaN tokens and
        // strict keys are handled on the fast path, anything else falls back line run by run
        direct: (src.format == Format::Jsonl
            && src.layout != Layout::Long
            && !conv.textual
            && conv.field_missing.is_empty())
        .then(|| direct::Decoder::new(columns, conv.nonfinite))
        .flatten(),
    };
    // a [[source.field]] whose key no record has (null in every row kept) is most likely a
    // misspelled key: said once read; a key that records have, with null values, is data
    let declared: Vec<(&str, usize)> =
        src.fields.iter().filter_map(|f| schema.index_of(&f.name).ok().map(|i| (f.name.as_str(), i))).collect();
    let mut held = vec![false; declared.len()];
    // Inspect logs that did not finish (status `error`, `cancelled`): their one row has no
    // scorer, which a key on it refuses later; the logs are named once read
    let inspect_status = (src.format == Format::InspectEvals)
        .then(|| {
            Some((
                schema.index_of("status").ok()?,
                schema.index_of("scorer").ok()?,
                schema.index_of("_source_file").ok()?,
            ))
        })
        .flatten();
    let mut unfinished: BTreeSet<(String, String)> = BTreeSet::new();
    // lm-eval tasks run on part of their documents (`--limit`): scores of that part alone,
    // which the rows' numbers tell but no reader of a score looks for; named once read
    let limits = (src.format == Format::LmEvalResults)
        .then(|| {
            Some((
                schema.index_of("task").ok()?,
                schema.index_of("n_samples_original").ok()?,
                schema.index_of("n_samples_effective").ok()?,
                schema.index_of("_source_file").ok()?,
            ))
        })
        .flatten();
    let mut limited: BTreeSet<(String, String, i64, i64)> = BTreeSet::new();
    // lighteval runs on part of each task's documents (`--max-samples`): the files, each with
    // its count
    let max_samples = (src.format == Format::LightevalResults)
        .then(|| Some((schema.index_of("max_samples").ok()?, schema.index_of("_source_file").ok()?)))
        .flatten();
    let mut sampled: BTreeSet<(String, i64)> = BTreeSet::new();
    let mut odd_counts: BTreeSet<(String, String, i64, i64)> = BTreeSet::new();
    // Inspect samples that ended with an error (left out of the eval's metrics) or stopped at
    // a limit (scored on what they had), which a score alone does not tell; counted, the
    // first of each named, and the kinds of limit
    let sample_ends = (src.format == Format::InspectSamples)
        .then(|| {
            Some((
                schema.index_of("error").ok()?,
                schema.index_of("limit").ok()?,
                schema.index_of("_source_file").ok()?,
                schema.index_of("_source_line").ok()?,
            ))
        })
        .flatten();
    let mut errored: (u64, Option<String>) = (0, None);
    let mut stopped: (u64, Option<String>, BTreeSet<String>) = (0, None, BTreeSet::new());
    let mut counted = |rb: &RecordBatch| -> Result<()> {
        for ((_, i), held) in declared.iter().zip(held.iter_mut()) {
            *held = *held || rb.column(*i).null_count() < rb.num_rows();
        }
        if let Some((status, scorer, files)) = inspect_status {
            use arrow::array::Array;
            let (status, scorer) = (rb.column(status).as_string::<i32>(), rb.column(scorer));
            let files = rb.column(files).as_string::<i32>();
            for r in 0..rb.num_rows() {
                let said = if status.is_null(r) { "none" } else { status.value(r) };
                if scorer.is_null(r) && said != "success" {
                    unfinished.insert((files.value(r).to_string(), said.to_string()));
                }
            }
        }
        if let Some((error, limit, files, lines)) = sample_ends {
            use arrow::array::Array;
            let (error, limit) = (rb.column(error), rb.column(limit).as_string::<i32>());
            let place = |r: usize| {
                let file = arrow::util::display::array_value_to_string(rb.column(files), r).unwrap_or_default();
                let line = arrow::util::display::array_value_to_string(rb.column(lines), r).unwrap_or_default();
                format!("{file}:{line}")
            };
            for r in 0..rb.num_rows() {
                if error.is_valid(r) {
                    errored.0 += 1;
                    errored.1.get_or_insert_with(|| place(r));
                }
                if limit.is_valid(r) {
                    stopped.0 += 1;
                    stopped.1.get_or_insert_with(|| place(r));
                    let kind = serde_json::from_str::<serde_json::Value>(limit.value(r))
                        .ok()
                        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string));
                    stopped.2.insert(kind.unwrap_or_else(|| "of no type".into()));
                }
            }
        }
        if let Some((count, files)) = max_samples {
            use arrow::array::Array;
            let (count, files) =
                (rb.column(count).as_primitive::<arrow::datatypes::Int64Type>(), rb.column(files).as_string::<i32>());
            for r in (0..rb.num_rows()).filter(|r| count.is_valid(*r)) {
                sampled.insert((files.value(r).to_string(), count.value(r)));
            }
        }
        if let Some((task, original, effective, files)) = limits {
            use arrow::array::Array;
            use arrow::datatypes::Int64Type;
            let (original, effective) =
                (rb.column(original).as_primitive::<Int64Type>(), rb.column(effective).as_primitive::<Int64Type>());
            let (task, files) = (rb.column(task).as_string::<i32>(), rb.column(files).as_string::<i32>());
            for r in 0..rb.num_rows() {
                if !original.is_valid(r) || !effective.is_valid(r) {
                    continue;
                }
                // counts no run gives: more documents run than the task holds, or fewer than none
                if effective.value(r) > original.value(r) || effective.value(r) < 0 || original.value(r) < 0 {
                    let name = if task.is_null(r) { "" } else { task.value(r) };
                    odd_counts.insert((
                        files.value(r).to_string(),
                        name.to_string(),
                        effective.value(r),
                        original.value(r),
                    ));
                } else if effective.value(r) < original.value(r) {
                    let name = if task.is_null(r) { "" } else { task.value(r) };
                    limited.insert((
                        files.value(r).to_string(),
                        name.to_string(),
                        effective.value(r),
                        original.value(r),
                    ));
                }
            }
        }
        out(rb)
    };
    let mut applier = Applier {
        src,
        opts,
        rows: 0,
        report,
        rejects,
        out: &mut counted,
        text_values: (0, None),
        negative_zeros: (0, None),
        with_items: BTreeSet::new(),
        scrubbed_texts: (0, BTreeMap::new()),
        present: vec![false; columns.len()],
    };
    // de-duplicates a trackio source's records by log_id across its files
    let mut trackio_reader: Option<trackio::Reader> = None;
    let line_format = matches!(
        src.format,
        Format::Jsonl
            | Format::TinkerMetrics
            | Format::VerlMetrics
            | Format::TinkerCheckpoints
            | Format::TinkerEvalTrajectories
            | Format::EvalGenerations
            | Format::TinkerTimings
            | Format::TinkerRollouts
            | Format::TinkerRolloutSteps
            | Format::LmEvalSamples
            | Format::VerlGenerations
            | Format::GraphScoreReport
    );
    if line_format && wandb_plan.is_none() {
        convert_lines_parallel(&chunk_spec, inputs, opts.read_digests.as_ref(), &mut applier)
            .map_err(|e| name_table(e, &src.name))?;
    } else {
        if matches!(src.format, Format::TrackioMetrics | Format::TrackioSystem | Format::TrackioRuns) {
            trackio_reader = Some(trackio::Reader::new(src.format));
        }
        let databases_first: Vec<InputFile>;
        let inputs = if trackio_reader.is_some() {
            databases_first = trackio::databases_first(inputs);
            &databases_first[..]
        } else {
            inputs
        };
        convert_records(&chunk_spec, inputs, wandb_plan.as_ref(), trackio_reader.as_mut(), &mut applier)?;
    }
    let rows = applier.rows;
    let present = std::mem::take(&mut applier.present);
    if (line_format || src.format == Format::Csv) && wandb_plan.is_none() {
        // a file of bytes but no line with a record (blank lines only, a compressed stream of
        // nothing, a CSV header alone) would give no row and no word; files of 0 bytes get the
        // build's own empty-input warning
        let silent: Vec<&str> = inputs
            .iter()
            .filter(|i| !applier.with_items.contains(&i.rel))
            .filter(|i| std::fs::metadata(&i.path).is_ok_and(|m| m.len() > 0))
            .map(|i| i.rel.as_str())
            .collect();
        if !silent.is_empty() {
            applier.report.warn(
                &src.name,
                "empty-input",
                None,
                format!(
                    "source {} read {} file{} with bytes but no record ({}blank lines only, or compressed data of \
                     nothing): {}",
                    src.name,
                    silent.len(),
                    if silent.len() == 1 { "" } else { "s" },
                    if src.format == Format::Csv { "a header alone, " } else { "" },
                    crate::core::report::first_names(&silent, 5)
                ),
            );
        }
    }
    let (texts, first_text) = applier.text_values.clone();
    let (scrubbed, tags) = std::mem::take(&mut applier.scrubbed_texts);
    let (zeros, first_zero) = applier.negative_zeros.clone();
    if let Some((at, path)) = first_zero {
        report.warn(
            &src.name,
            "negative-zero",
            Some(at),
            format!(
                "{} value{} `-0` read as the integer 0 (the first: {path}), as an integer column holds no \
                 negative zero; declare the column `number` (a [[source.field]] in pipeline.toml) to keep -0.0",
                crate::core::numbers::group_digits(zeros),
                if zeros == 1 { "" } else { "s" }
            ),
        );
    }
    if let Some(reader) = trackio_reader {
        reader.finish(&src.name, report);
    }
    if scrubbed > 0 {
        // each tag with where it was first met (a tag may itself hold the credential: the
        // warning is printed and written to the card)
        let named: Vec<String> = tags
            .iter()
            .map(|(tag, at)| {
                let tag = wandb::values::scrub_credentials(tag).unwrap_or_else(|| tag.clone());
                format!("{tag} ({at})")
            })
            .collect();
        let named: Vec<&str> = named.iter().map(String::as_str).collect();
        report.warn(
            &src.name,
            "credentials",
            None,
            format!(
                "{} value{} credentials (access tokens, a URL's password, a flag or key that names one), \
                 replaced by REDACTED in `value_text`; by {}, where first met: {}",
                crate::core::numbers::group_digits(scrubbed),
                if scrubbed == 1 { " holds" } else { "s hold" },
                if src.format == Format::Tensorboard { "tag" } else { "metric" },
                crate::core::report::first_names(&named, 5)
            ),
        );
    }
    if texts > 0 {
        report.warn(
            &src.name,
            "text-values",
            first_text,
            format!(
                "{} metric value{} no float (text, a boolean, a list, an object, or an integer beyond 2^53 that a \
                 float would round): kept in `value_text`, with `value` null (a table that selects only `value` \
                 leaves {})",
                crate::core::numbers::group_digits(texts),
                if texts == 1 { " is" } else { "s are" },
                if texts == 1 { "it out" } else { "them out" }
            ),
        );
    }
    if !unfinished.is_empty() {
        let named: Vec<String> = unfinished.iter().map(|(f, st)| format!("{f} (status {st})")).collect();
        let names: Vec<&str> = named.iter().map(String::as_str).collect();
        report.warn(
            &src.name,
            "inspect-unfinished",
            None,
            format!(
                "{} Inspect log{} without results: {}; each gives one row whose scorer, metric and value are null, \
                 which a primaryKey on them refuses (keep them out in the table's SQL with WHERE status = 'success')",
                unfinished.len(),
                if unfinished.len() == 1 { "" } else { "s" },
                crate::core::report::first_names(&names, 5)
            ),
        );
    }
    // each task with its counts and file, the first five (`gsm8k 100 of 1,319 (results.json)`)
    let counted_tasks = |tasks: &BTreeSet<(String, String, i64, i64)>| -> String {
        let g = |n: i64| {
            let digits = crate::core::numbers::group_digits(n.unsigned_abs());
            if n < 0 { format!("-{digits}") } else { digits }
        };
        let named: Vec<String> =
            tasks.iter().map(|(f, task, eff, orig)| format!("{task} {} of {} ({f})", g(*eff), g(*orig))).collect();
        crate::core::report::first_names(&named.iter().map(String::as_str).collect::<Vec<_>>(), 5)
    };
    if !odd_counts.is_empty() {
        report.warn(
            &src.name,
            "lm-eval-n-samples",
            None,
            format!(
                "{} lm-eval task{} documents run that no run gives (`n-samples`: `effective` above `original`, or \
                 below 0), kept as written in `n_samples_effective` and `n_samples_original`: {}",
                odd_counts.len(),
                if odd_counts.len() == 1 { " counts" } else { "s count" },
                counted_tasks(&odd_counts)
            ),
        );
    }
    if !limited.is_empty() {
        report.warn(
            &src.name,
            "lm-eval-limit",
            None,
            format!(
                "{} lm-eval task{} run on fewer documents than {} (`--limit`): {} scores are of those documents \
                 alone, not comparable with a whole run's (`n_samples_effective` against `n_samples_original`): {}",
                limited.len(),
                if limited.len() == 1 { " was" } else { "s were" },
                if limited.len() == 1 { "it holds" } else { "they hold" },
                if limited.len() == 1 { "its" } else { "their" },
                counted_tasks(&limited)
            ),
        );
    }
    if let (n, Some(first)) = &errored {
        report.warn(
            &src.name,
            "inspect-sample-errors",
            None,
            format!(
                "{} Inspect sample{} ended with an error (the first: {first}): the eval's metrics leave {} out \
                 (`completed_samples` below `total_samples`), and `error` holds {} message",
                crate::core::numbers::group_digits(*n),
                if *n == 1 { "" } else { "s" },
                if *n == 1 { "it" } else { "them" },
                if *n == 1 { "its" } else { "each one's" }
            ),
        );
    }
    if let (n, Some(first), kinds) = &stopped {
        report.warn(
            &src.name,
            "inspect-sample-limits",
            None,
            format!(
                "{} Inspect sample{} stopped at a limit ({}; the first: {first}), scored on what {} had: `limit` \
                 names {}",
                crate::core::numbers::group_digits(*n),
                if *n == 1 { "" } else { "s" },
                kinds.iter().cloned().collect::<Vec<_>>().join(", "),
                if *n == 1 { "it" } else { "they" },
                if *n == 1 { "it" } else { "each" }
            ),
        );
    }
    if !sampled.is_empty() {
        let named: Vec<String> = sampled.iter().map(|(f, n)| format!("{f} (at most {n})")).collect();
        report.warn(
            &src.name,
            "lighteval-max-samples",
            None,
            format!(
                "{} lighteval result file{} run with `--max-samples`, each task on at most that many of its \
                 documents: {} scores are of those documents alone, not comparable with a whole run's (`max_samples`): {}",
                sampled.len(),
                if sampled.len() == 1 { " was" } else { "s were" },
                if sampled.len() == 1 { "its" } else { "their" },
                crate::core::report::first_names(&named.iter().map(String::as_str).collect::<Vec<_>>(), 5)
            ),
        );
    }
    if rows > 0 {
        let absent = |i: usize| !present.get(i).copied().unwrap_or(true);
        for ((name, _), _) in declared.iter().zip(&held).filter(|((_, i), held)| !**held && absent(*i)) {
            report.warn(
                &src.name,
                "declared-field-empty",
                None,
                format!(
                    "[[source.field]] `{name}` is a key no record has: null in all {} rows kept (a misspelled key?)",
                    crate::core::numbers::group_digits(rows)
                ),
            );
        }
    }
    Ok(rows)
}

/// Checks of the `orders` whose columns are all in `schema`.
fn order_checks(schema: &SchemaRef, orders: &[Vec<String>]) -> Vec<crate::stages::sort::OrderCheck> {
    orders
        .iter()
        .filter(|cols| !cols.is_empty() && cols.iter().all(|c| schema.index_of(c).is_ok()))
        .map(|cols| crate::stages::sort::OrderCheck::new(schema, cols.clone()))
        .collect()
}

fn sorted_by(checks: Vec<crate::stages::sort::OrderCheck>) -> Vec<Vec<String>> {
    checks.into_iter().filter(|c| c.in_order()).map(|c| c.columns().to_vec()).collect()
}

#[allow(clippy::too_many_arguments)]
fn run_parquet(
    spec: &PipelineSpec,
    index: usize,
    inputs: Vec<InputFile>,
    capture_names: Vec<String>,
    work: &std::path::Path,
    opts: &IngestOptions,
    orders: &[Vec<String>],
    report: &mut BuildReport,
    rejects: &mut Rejects,
) -> Result<Ingested> {
    let src = &spec.def.sources[index];
    let context = spec.place(&format!("source {}", src.name));
    let data_fields = parquet::plan(src, &inputs, spec.source_schemas[index].as_ref(), &context)
        .map_err(|e| name_table(e, &src.name))?;
    // runpack adds the file and line of each row itself (a release's own Parquet files hold
    // them already): said at the first file that holds one, as for the other formats
    if let Some(c) = data_fields.iter().map(|f| f.name()).find(|n| *n == "_source_file" || *n == "_source_line") {
        let file = inputs
            .iter()
            .find(|i| parquet::file_schema(i).is_ok_and(|s| s.field_with_name(c).is_ok()))
            .map_or(context.clone(), |i| i.rel.clone());
        return Err(Error::config(
            file,
            format!(
                "the data has a column named {c}, which runpack adds to every source's rows (the file and row each \
                 row comes from); rename the column in the input (a runpack release's files hold it: `runpack query` \
                 reads a release)"
            ),
        ));
    }
    let mut fields = data_fields.clone();
    for c in &capture_names {
        fields.push(Field::new(c, DataType::Utf8, true));
    }
    fields.push(Field::new("_source_file", DataType::Utf8, false));
    fields.push(Field::new("_source_line", DataType::Int64, false));
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    std::fs::create_dir_all(work).map_err(|e| Error::io(work, e))?;
    let ipc_file = work.join(format!("{}.arrow", src.name));
    let mut writer = crate::stages::sort::staging_file(&ipc_file, &schema)?;
    let mut rows = 0u64;
    let mut checks = order_checks(&schema, orders);
    for input in &inputs {
        let mut sink = |b: RecordBatch,
                        first_row: u64,
                        problems: Vec<parquet::CastProblem>,
                        nonfinite: Vec<parquet::NonFiniteRead>|
         -> Result<()> {
            let n = b.num_rows();
            for v in nonfinite {
                let sref = SourceRef { file: input.rel.clone(), at: Position::Line(v.row) };
                report.nonfinite.entry(src.name.clone()).or_default().add(|| format!("{sref}:{} {}", v.path, v.found));
            }
            let mut cols: Vec<ArrayRef> = b.columns().to_vec();
            for (_, v) in &input.captures {
                cols.push(Arc::new(StringArray::from(vec![v.as_str(); n])));
            }
            cols.push(Arc::new(StringArray::from(vec![input.rel.as_str(); n])));
            cols.push(Arc::new(Int64Array::from_iter_values((0..n as i64).map(|r| first_row as i64 + r))));
            let mut rb = RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::format(&input.rel, e))?;
            let mut bad: BTreeMap<u64, Vec<String>> = BTreeMap::new();
            let mut found: BTreeMap<u64, Vec<(String, serde_json::Value)>> = BTreeMap::new();
            for parquet::CastProblem { row, column: col, message: msg, found: value } in problems {
                let sref = SourceRef { file: input.rel.clone(), at: Position::Line(row) };
                match src.on_invalid.unwrap_or(opts.on_invalid) {
                    OnInvalid::Fail => report.violation(Violation {
                        scope: crate::core::report::Scope::Source,
                        table: src.name.clone(),
                        source: Some(sref),
                        path: col,
                        rule: "type".into(),
                        key: None,
                        message: msg,
                        finding: None,
                    }),
                    OnInvalid::Reject => {
                        bad.entry(row).or_default().push(format!("{col}: {msg}"));
                        found.entry(row).or_default().push((col, value));
                    }
                }
            }
            if !bad.is_empty() {
                for (row, reasons) in &bad {
                    let r = (row - first_row) as usize;
                    let sref = SourceRef { file: input.rel.clone(), at: Position::Line(*row) };
                    let mut record = crate::stages::validate::row_json(&rb, r);
                    // the values that did not fit as found, not the null that stood for them
                    for (col, value) in found.remove(row).unwrap_or_default() {
                        if let Some(o) = record.as_object_mut() {
                            o.insert(col, value);
                        }
                    }
                    rejects.add(&src.name, Some(&sref), reasons, RejectBody::Record(record))?;
                }
                let keep: BooleanArray = (0..n).map(|r| Some(!bad.contains_key(&(first_row + r as u64)))).collect();
                rb = arrow::compute::filter_record_batch(&rb, &keep).map_err(|e| Error::format(&input.rel, e))?;
            }
            rows += rb.num_rows() as u64;
            for c in &mut checks {
                c.observe(&rb)?;
            }
            writer.write(&rb).map_err(|e| Error::format(ipc_file.display().to_string(), e))
        };
        let assume = src.assume_timezone.as_ref().map(|t| t.parse().expect("checked at load"));
        parquet::read(input, &data_fields, assume, src.nonfinite, &mut sink).map_err(|e| name_table(e, &src.name))?;
    }
    writer.finish().map_err(|e| Error::format(ipc_file.display().to_string(), e))?;
    Ok(Ingested {
        name: src.name.clone(),
        schema,
        ipc_file,
        rows,
        inputs,
        sorted_by: sorted_by(checks),
        found: BuildReport::default(),
    })
}

/// What a rejects file keeps of a record that could not be read: its text as found, except
/// where the line holds texts its row would leave out, since a reject publishes nothing its
/// row would not: a line of generations without `keep_text`, and any line of trajectories
/// (its prompts are never kept, `keep_text` or not).
fn unparsed_body(src: &SourceDef, raw: Option<String>) -> RejectBody {
    let keep = match src.format {
        Format::EvalGenerations | Format::LmEvalSamples | Format::VerlGenerations => src.keep_text,
        Format::TinkerEvalTrajectories | Format::InspectSamples | Format::LightevalDetails => false,
        _ => true,
    };
    match raw {
        Some(text) if keep => RejectBody::Raw(text),
        _ => RejectBody::Unread,
    }
}

/// The rows a record becomes: as is, or reshaped by the format (Tinker) or the layout (long).
///
/// Errors: where the record does not have the format's shape (JSON path, message), with the
/// record given back.
#[allow(clippy::type_complexity)]
fn shape(
    src: &SourceDef,
    obj: Map<String, Value>,
) -> Result<(Vec<Map<String, Value>>, Option<Map<String, Value>>), (evals::ShapeProblems, Map<String, Value>)> {
    // an evaluation format's rows keep their raw record, for the rejects file, without the
    // texts the table leaves out
    let checked = |shaped: Result<Vec<Map<String, Value>>, evals::ShapeProblems>, obj| {
        let obj = evals::without_texts(src.format, obj, src.keep_text);
        match shaped {
            Ok(rows) => Ok((rows, Some(obj))),
            Err(p) => Err((p, obj)),
        }
    };
    let plain = |rows| Ok((rows, None));
    let coerce = evals::Coerce { numbers: src.coerce_numeric_strings, nonfinite: src.coerce_nonfinite_strings };
    match (src.format, src.layout) {
        (Format::TinkerMetrics, _) => plain(tinker::metrics_rows(obj)),
        (Format::TinkerCheckpoints, _) => plain(vec![tinker::checkpoint_row(obj)]),
        (Format::TinkerEvalResult, _) => checked(evals::result_row(&obj).map(|r| vec![r]), obj),
        (Format::TinkerEvalTrajectories, _) => {
            checked(evals::trajectory_row(&obj, src.keep_text).map(|r| vec![r]), obj)
        }
        (Format::EvalMetrics, _) => checked(evals::metrics_rows(&obj), obj),
        (Format::EvalGenerations, _) => checked(evals::generation_row(&obj, src.keep_text).map(|r| vec![r]), obj),
        (Format::TinkerTimings, _) => checked(cookbook::timing_rows(&obj), obj),
        (Format::TinkerRollouts, _) => checked(cookbook::rollout_row(&obj).map(|r| vec![r]), obj),
        (Format::TinkerRolloutSteps, _) => checked(cookbook::rollout_step_rows(&obj), obj),
        (Format::TinkerEvalRun, _) => checked(cookbook::eval_run_row(&obj).map(|r| vec![r]), obj),
        (Format::TrackioMetrics, _) => checked(trackio::metric_rows(&obj, true), obj),
        (Format::TrackioSystem, _) => checked(trackio::metric_rows(&obj, false), obj),
        (Format::TrackioRuns, _) => checked(trackio::run_row(&obj).map(|r| vec![r]), obj),
        (Format::InspectEvals, _) => checked(inspect::eval_rows(&obj), obj),
        (Format::InspectSamples, _) => checked(inspect::sample_row(&obj, src.keep_text).map(|r| vec![r]), obj),
        (Format::LmEvalResults, _) => checked(lmeval::result_rows(&obj, coerce), obj),
        (Format::LmEvalSamples, _) => checked(lmeval::sample_row(&obj, src.keep_text).map(|r| vec![r]), obj),
        (Format::LightevalResults, _) => checked(lighteval::result_rows(&obj, coerce), obj),
        (Format::LightevalDetails, _) => checked(lighteval::detail_row(&obj, src.keep_text).map(|r| vec![r]), obj),
        (Format::VerlGenerations, _) => checked(verl::row(&obj, src.keep_text).map(|r| vec![r]), obj),
        (Format::VerlMetrics, _) => checked(verl::metrics_rows(&obj), obj),
        (Format::TrainerState, _) => checked(trainer::rows(&obj), obj),
        (Format::GraphPassResults, _) => checked(graphs::pass_rows(&obj), obj),
        (Format::GraphScoreReport, _) => checked(graphs::report_rows(&obj), obj),
        (_, Layout::Long) => plain(unpivot(obj, &src.id_columns)),
        _ => plain(vec![obj]),
    }
}

/// The rows of `obj` read at `sref` into `pending`, or, when it does not have its format's
/// shape, the record into `bad` with every problem found.
fn shape_into(
    src: &SourceDef,
    obj: Map<String, Value>,
    sref: SourceRef,
    captures: &[(String, String)],
    pending: &mut Vec<Pending>,
    bad: &mut Vec<BadLine>,
) {
    match shape(src, obj) {
        Ok((rows, raw)) => {
            let raw = raw.map(Arc::new);
            for mut row in rows {
                // a Trainer state's rows name their run's output folder, from the file's path, and
                // their entry's place in `log_history`, from the entry's pointer
                if src.format == Format::TrainerRuns {
                    row.insert("output_dir".into(), Value::String(trainer::output_dir(&sref.file)));
                    row.insert(
                        "checkpoint".into(),
                        trainer::checkpoint_of(&sref.file).map_or(Value::Null, Value::String),
                    );
                }
                if src.format == Format::TrainerState {
                    row.insert("output_dir".into(), Value::String(trainer::output_dir(&sref.file)));
                    let entry = match &sref.at {
                        Position::Pointer(p) => trainer::entry_of(p),
                        _ => None,
                    };
                    row.insert("entry".into(), entry.map_or(Value::Null, Value::from));
                }
                // a TensorBoard row names its writer's folder, from the file's path
                if src.format == Format::Tensorboard {
                    row.insert("log_dir".into(), Value::String(tensorboard::log_dir(&sref.file)));
                }
                // a metrics document's row comes from its split's object: `/id`, `/ood`, `/total`
                let at = match (&sref.at, row.get("split").and_then(Value::as_str)) {
                    (Position::Pointer(p), Some(split)) if src.format == Format::EvalMetrics => {
                        SourceRef { file: sref.file.clone(), at: Position::Pointer(format!("{p}/{split}")) }
                    }
                    // a lighteval results row comes from its task's metric: `/results/<task>/<metric>`
                    (Position::Pointer(p), _) if src.format == Format::LightevalResults => {
                        let token =
                            |k: &str| path::pointer_token(row.get(k).and_then(Value::as_str).unwrap_or_default());
                        let at = format!("{p}/results/{}/{}", token("task"), token("metric"));
                        SourceRef { file: sref.file.clone(), at: Position::Pointer(at) }
                    }
                    // an lm-eval results row comes from its task's metric, under the key the file
                    // gives it: `/results/<task>/acc,none` (lm-eval 0.3: `/results/<task>/acc`)
                    (Position::Pointer(p), _) if src.format == Format::LmEvalResults => {
                        let text = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or_default();
                        let (task, metric, filter) = (text("task"), text("metric"), text("filter"));
                        let entry = |section: &str| raw.as_deref().and_then(|r| r.get(section)?.get(task)?.as_object());
                        // the key the value is under: filtered, lm-eval 0.3's, or, for a
                        // standard error without its metric, the standard error's
                        let mut keys = vec![format!("{metric},{filter}")];
                        if filter == "none" {
                            keys.push(metric.to_string());
                        }
                        keys.push(format!("{metric}_stderr,{filter}"));
                        if filter == "none" {
                            keys.push(format!("{metric}_stderr"));
                        }
                        let (section, key) = keys
                            .iter()
                            .find_map(|k| {
                                ["results", "groups"]
                                    .into_iter()
                                    .find(|s| entry(s).is_some_and(|e| e.contains_key(k)))
                                    .map(|s| (s, k.clone()))
                            })
                            .unwrap_or(("results", keys[0].clone()));
                        let at = format!("{p}/{section}/{}/{}", path::pointer_token(task), path::pointer_token(&key));
                        SourceRef { file: sref.file.clone(), at: Position::Pointer(at) }
                    }
                    // a Trainer state's row comes from its entry's value: `/log_history/<entry>/<metric>`
                    (Position::Pointer(p), _) if src.format == Format::TrainerState => {
                        let metric = path::pointer_token(row.get("metric").and_then(Value::as_str).unwrap_or_default());
                        SourceRef { file: sref.file.clone(), at: Position::Pointer(format!("{p}/{metric}")) }
                    }
                    _ => sref.clone(),
                };
                pending.push((row, at, captures.to_vec(), raw.clone()));
            }
        }
        // a metrics document whose problems all lie inside some of its splits: those splits'
        // objects are rejected, each at its own pointer, and the other splits make their rows
        // (a document with the checkpoint's own `per_template`, which the `total` row or the
        // last split's keeps, is rejected whole: it would go with the split that holds it)
        Err((problems, obj))
            if src.format == Format::EvalMetrics
                && !problems.is_empty()
                && problems.iter().all(|(p, _)| evals::metrics_split_of(p).is_some())
                && obj.get("per_template").is_none_or(Value::is_null) =>
        {
            let bad_splits: BTreeSet<&str> = problems.iter().filter_map(|(p, _)| evals::metrics_split_of(p)).collect();
            let mut rest = obj.clone();
            for s in &bad_splits {
                rest.shift_remove(*s);
            }
            let base = match &sref.at {
                Position::Pointer(p) => Some(p.clone()),
                _ => None,
            };
            if rest.iter().any(|(k, v)| matches!(k.as_str(), "id" | "ood" | "total") && !v.is_null()) {
                shape_into(src, rest, sref.clone(), captures, pending, bad);
            }
            for split in bad_splits {
                let reasons: Vec<(String, String)> =
                    problems.iter().filter(|(p, _)| evals::metrics_split_of(p) == Some(split)).cloned().collect();
                let mut record = Map::new();
                for k in ["checkpoint", split] {
                    if let Some(v) = obj.get(k) {
                        record.insert(k.to_string(), v.clone());
                    }
                }
                let at = match &base {
                    Some(p) => SourceRef { file: sref.file.clone(), at: Position::Pointer(format!("{p}/{split}")) },
                    None => sref.clone(),
                };
                let body = RejectBody::RecordText(convert::json_raw(&Value::Object(record)));
                bad.push((at, "type", reasons, body));
            }
        }
        Err((problems, obj)) => {
            // a results document whose problems all lie in task entries: each metric (or
            // entry) that holds one is rejected at its own pointer, and the other results make
            // their rows
            let sections: &[&str] = match src.format {
                Format::LmEvalResults => &["results", "groups"],
                Format::LightevalResults => &["results"],
                _ => &[],
            };
            if let Some((rest, parts)) = evals::split_results(&obj, &problems, sections) {
                shape_into(src, rest, sref.clone(), captures, pending, bad);
                for part in parts {
                    let at = match &sref.at {
                        Position::Pointer(p) => {
                            SourceRef { file: sref.file.clone(), at: Position::Pointer(format!("{p}{}", part.pointer)) }
                        }
                        _ => sref.clone(),
                    };
                    let body = RejectBody::RecordText(convert::json_raw(&Value::Object(part.record)));
                    bad.push((at, "type", part.problems, body));
                }
                return;
            }
            // each problem is its own violation (or reason of the one reject)
            let problems =
                if problems.is_empty() { vec![("$".into(), "not of the format's shape".into())] } else { problems };
            bad.push((sref, "type", problems, RejectBody::RecordText(convert::json_raw(&Value::Object(obj)))));
        }
    }
}

/// Long layout: one row per key that is not an id column: the id columns, `key`, `value`. A
/// record with no other key gives one row, with `key` and `value` null: it is kept, and its
/// id values are checked like any.
fn unpivot(obj: Map<String, Value>, ids: &[String]) -> Vec<Map<String, Value>> {
    let id_values: Vec<(String, Value)> =
        ids.iter().map(|k| (k.clone(), obj.get(k).cloned().unwrap_or(Value::Null))).collect();
    let mut out = Vec::with_capacity(obj.len());
    for (k, v) in obj {
        if ids.contains(&k) {
            continue;
        }
        let mut row: Map<String, Value> = id_values.iter().cloned().collect();
        row.insert("key".into(), Value::String(k));
        row.insert("value".into(), v);
        out.push(row);
    }
    if out.is_empty() {
        let mut row: Map<String, Value> = id_values.into_iter().collect();
        row.insert("key".into(), Value::Null);
        row.insert("value".into(), Value::Null);
        out.push(row);
    }
    out
}

fn name_table(e: Error, table: &str) -> Error {
    match e {
        Error::Invalid { mut violations, total, checked, hints, warnings } => {
            for v in &mut violations {
                if v.table.is_empty() {
                    v.table = table.to_string();
                }
            }
            Error::Invalid { violations, total, checked, hints, warnings }
        }
        other => other,
    }
}

/// Makes null each top-level text value of `obj` that the source's missing values list (a CSV
/// record's cells; see [`ConvertOptions::missing_values`]), but in a column with its own list
/// (which the conversion applies instead).
fn missing_to_null(obj: &mut Map<String, Value>, conv: &ConvertOptions) {
    if conv.missing_values.is_empty() {
        return;
    }
    for (k, v) in obj.iter_mut() {
        // a field's own missingValues replace the schema's (Table Schema v2)
        if let Value::String(s) = v
            && conv.missing_values.iter().any(|m| m == s)
            && !conv.field_missing.iter().any(|(f, _)| f == k)
        {
            *v = Value::Null;
        }
    }
}

/// Reads one file of `src` record by record into `sink`; the comment lines a CSV file holds
/// among its rows (none for other formats).
fn read_file(
    src: &SourceDef,
    input: &InputFile,
    reader: Box<dyn std::io::BufRead + Send>,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<records::CommentLines> {
    let none = |r: Result<()>| r.map(|()| records::CommentLines::default());
    none(match src.format {
        Format::Jsonl
        | Format::TinkerMetrics
        | Format::VerlMetrics
        | Format::TinkerCheckpoints
        | Format::TinkerEvalTrajectories
        | Format::EvalGenerations
        | Format::TinkerTimings
        | Format::TinkerRollouts
        | Format::TinkerRolloutSteps
        | Format::LmEvalSamples
        | Format::VerlGenerations
        | Format::GraphScoreReport => records::jsonl(reader, &input.rel, sink),
        Format::Json => records::json(reader, &input.rel, src.record_path.as_deref().unwrap_or(""), sink),
        Format::Yaml => yaml::read(reader, &input.rel, src.record_path.as_deref().unwrap_or(""), sink),
        Format::TinkerEvalResult
        | Format::EvalMetrics
        | Format::TinkerEvalRun
        | Format::LmEvalResults
        | Format::LightevalResults
        | Format::GraphPassResults => records::json_record(reader, &input.rel, sink),
        Format::TrainerState => trainer::read(reader, &input.rel, sink),
        Format::TrainerRuns => trainer::read_run(reader, &input.rel, sink),
        Format::Tensorboard => tensorboard::read(reader, &input.rel, sink),
        Format::Csv => {
            // pandas' index: whether its column holds the rows' positions is told from every row
            let positions = records::csv_index_positions(files::open(input)?, src.dialect());
            return records::csv(reader, &input.rel, src.dialect(), positions, sink);
        }
        Format::Parquet => unreachable!("Parquet sources are read by run_parquet"),
        Format::Wandb => unreachable!("W&B sources are read by wandb::read"),
        Format::TrackioMetrics | Format::TrackioSystem | Format::TrackioRuns => {
            unreachable!("trackio sources are read by trackio::Reader")
        }
        Format::InspectEvals | Format::InspectSamples => inspect::read(src.format, src.keep_text, input, sink),
        Format::LightevalDetails => lighteval::read(input, sink),
    })
}

/// Rows of a source gathered before they are written to its staging file as one batch, and
/// the memory they may take meanwhile (a batch of thousands of columns takes much).
const COALESCE_ROWS: usize = 8192;
const COALESCE_BYTES: usize = 4 << 20;

/// Levels of lists and objects a column may nest in an inferred schema (Arrow IPC's reader
/// refuses schemas much deeper than this).
pub const MAX_NESTING: usize = 32;

/// Levels of lists, structs and maps in `t` (0 for a flat type).
fn nesting(t: &arrow::datatypes::DataType) -> usize {
    use arrow::datatypes::DataType as D;
    match t {
        D::List(f) | D::LargeList(f) | D::FixedSizeList(f, _) | D::ListView(f) | D::LargeListView(f) | D::Map(f, _) => {
            1 + nesting(f.data_type())
        }
        D::Struct(fs) => 1 + fs.iter().map(|f| nesting(f.data_type())).max().unwrap_or(0),
        _ => 0,
    }
}

/// What [`observe_files`] found: the keys per file, the number of records that could not be
/// read and the first of them, and the violation that stopped the reading of a file that
/// cannot be read on from (an unclosed CSV quote).
type Observed = (Vec<(String, BTreeSet<String>)>, u64, u64, Option<String>, Option<Error>);

/// The files of a source whose columns are inferred, read once: each record's values
/// observed by `inf` (declared columns as nulls), and each file's keys. A file that cannot be
/// read on from ends the observing there: the conversion meets it again, after the records
/// before it, whose problems it says first.
fn observe_files(
    src: &SourceDef,
    inputs: &[InputFile],
    conv: &ConvertOptions,
    inf: &mut infer::Inference,
    reject: bool,
) -> Result<Observed> {
    let mut per_file: Vec<(String, BTreeSet<String>)> = Vec::new();
    // records that could not be read: when no value gives a column its type, they may be why
    let mut unread = 0u64;
    let mut set_aside = 0u64;
    let mut first_unread: Option<String> = None;
    for input in inputs {
        let reader = files::open(input)?;
        let mut keys = BTreeSet::new();
        let mut records = 0u64;
        let file = input.rel.clone();
        let mut sink = |item: Item| -> Result<()> {
            if let Item::Bad { at, message, rule, .. } = &item {
                // (a record cut short that the source sets aside is never a violation)
                if *rule == "truncated" && src.on_truncated == OnTruncated::Reject {
                    set_aside += 1;
                }
                unread += 1;
                if first_unread.is_none() {
                    first_unread = Some(format!("{}: {message}", SourceRef { file: file.clone(), at: at.clone() }));
                }
            }
            if let Item::Record(mut raw, at) = item {
                missing_to_null(&mut raw, conv);
                records += 1;
                for k in raw.keys() {
                    if !keys.contains(k) {
                        keys.insert(k.clone());
                    }
                }
                // a record without its format's shape is reported when it is converted
                for obj in shape(src, raw).map(|(rows, _)| rows).unwrap_or_default() {
                    // a row a source that rejects sets aside when it is converted (an empty key,
                    // lists and objects nested too deep) makes no column: the other rows' stand
                    if reject && convert::unnameable(&obj, &|k| src.fields.iter().any(|f| f.name == k)).is_some() {
                        continue;
                    }
                    // declared columns keep their place in the column order but take no part in inference
                    let declared: Map<String, Value> = obj
                        .into_iter()
                        .map(|(k, v)| if src.fields.iter().any(|f| f.name == k) { (k, Value::Null) } else { (k, v) })
                        .collect();
                    inf.observe(&declared, &SourceRef { file: file.clone(), at: at.clone() });
                }
            }
            Ok(())
        };
        match read_file(src, input, reader, &mut sink) {
            Ok(_) => {}
            Err(e @ Error::Invalid { .. }) => {
                return Ok((per_file, unread, set_aside, first_unread, Some(name_table(e, &src.name))));
            }
            Err(e) => return Err(name_table(e, &src.name)),
        }
        if records == 0 && src.format == Format::Csv {
            // a CSV header names its columns even when no row follows: they exist, and have
            // no value to take a type from
            let columns = records::csv_columns(files::open(input)?, &input.rel, src.dialect())
                .map_err(|e| name_table(e, &src.name))?;
            if !columns.is_empty() {
                let nulls: Map<String, Value> = columns.iter().map(|c| (c.clone(), Value::Null)).collect();
                inf.observe(&nulls, &SourceRef { file: file.clone(), at: Position::Line(1) });
                per_file.push((input.rel.clone(), columns.into_iter().collect()));
            }
        } else if records > 0 {
            // a file without records has no columns to disagree with
            per_file.push((input.rel.clone(), keys));
        }
    }
    Ok((per_file, unread, set_aside, first_unread, None))
}

/// Reports inferred columns that cannot be staged or selected: a key that is empty, or lists
/// and objects nested deeper than [`MAX_NESTING`] (unless declared); whether there was one.
fn unnameable_columns(
    src: &SourceDef,
    conv: &ConvertOptions,
    fields: &[Field],
    is_declared: &dyn Fn(&str) -> bool,
    report: &mut BuildReport,
) -> bool {
    // Arrow IPC, in which sources are staged, refuses schemas nested much deeper than this;
    // an empty key cannot name a column that SQL could select
    let mut too_deep = false;
    let empty_key = path::render(&[path::Seg::Key(String::new())]);
    let empty_key = empty_key.trim_start_matches('$');
    for (p, (_, at)) in conv.first_seen.iter().filter(|(p, _)| p.ends_with(empty_key)) {
        too_deep = true;
        report.violation(Violation {
            scope: crate::core::report::Scope::Source,
            table: src.name.clone(),
            source: Some(at.clone()),
            path: p.clone(),
            rule: "type".into(),
            key: None,
            message: "the key \"\" (empty) cannot name a column or a field; rename it in the input".into(),
            finding: None,
        });
    }
    for f in fields {
        let depth = nesting(f.data_type());
        if depth > MAX_NESTING && !is_declared(&path::render(&[path::Seg::Key(f.name().clone())])) {
            too_deep = true;
            let p = path::render(&[path::Seg::Key(f.name().clone())]);
            report.violation(Violation {
                scope: crate::core::report::Scope::Source,
                table: src.name.clone(),
                source: conv.first_seen.get(&p).map(|(_, at)| at.clone()),
                path: p,
                rule: "type".into(),
                key: None,
                message: format!(
                    "lists and objects nested {depth} levels deep; runpack reads at most {MAX_NESTING} levels \
                     (declare the column as type \"any\" to keep it as JSON text)"
                ),
                finding: None,
            });
        }
    }
    too_deep
}

/// The columns of a source without a schema, typed from every value read (declared
/// `[[source.field]]` types win); widenings are warned of. `reject`: records that cannot be
/// read are set aside, not violations.
///
/// Errors: a column without a type, or type problems in the data, naming `context`; no
/// column at all, when no record was read (and none is a violation to say).
fn infer_columns(
    src: &SourceDef,
    inputs: &[InputFile],
    context: &str,
    conv: &mut ConvertOptions,
    untyped_as_text: bool,
    reject: bool,
    report: &mut BuildReport,
) -> Result<Vec<(String, Target)>> {
    let mut inf = infer::Inference::new(src.format == Format::Csv);
    inf.nonfinite_strings = src.coerce_nonfinite_strings;
    inf.nonfinite_alone_text = untyped_as_text;
    let (per_file, unread, set_aside, first_unread, stopped) = observe_files(src, inputs, conv, &mut inf, reject)?;
    if src.columns == ColumnsPolicy::Same {
        same_columns(context, &per_file)?;
    }
    // one warning per struct, however many members it gained (a log whose first record holds
    // few of its metrics adds tens at once)
    // (in the order each struct first gained one; a struct of thousands of members is one lookup each)
    let mut by_struct: Vec<(&str, Vec<&infer::Widening>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for w in &inf.widenings {
        let i = *at.entry(&w.parent).or_insert_with(|| {
            by_struct.push((&w.parent, Vec::new()));
            by_struct.len() - 1
        });
        by_struct[i].1.push(w);
    }
    for (parent, ws) in by_struct {
        let message = match ws.as_slice() {
            [w] => format!("struct field {} added (nullable); first seen here", w.path),
            _ => {
                let paths: Vec<&str> = ws.iter().map(|w| w.path.as_str()).collect();
                format!(
                    "struct {parent}: {} fields added after its first value (nullable, null in the rows before): {}; \
                     the first seen here",
                    ws.len(),
                    crate::core::report::first_names(&paths, 3)
                )
            }
        };
        report.warn(&src.name, "widening", Some(ws[0].first.clone()), message);
    }
    let (fields, problems) = inf.fields();
    let mut config_problems = Vec::new();
    let is_declared = |path: &str| {
        src.fields.iter().any(|f| {
            let p = path::render(&[path::Seg::Key(f.name.clone())]);
            path == p || path.starts_with(&format!("{p}.")) || path.starts_with(&format!("{p}["))
        })
    };
    for p in problems.into_iter().filter(|p| !is_declared(&p.path)) {
        match p.at {
            Some(at) => report.violation(Violation {
                scope: crate::core::report::Scope::Source,
                table: src.name.clone(),
                source: Some(at),
                path: p.path,
                rule: "type".into(),
                key: None,
                message: p.message,
                finding: None,
            }),
            // a column without a type: text (of nulls) where that is asked for
            None if untyped_as_text => {}
            None => config_problems.push(format!("{}: {}", p.path, p.message)),
        }
    }
    if !config_problems.is_empty() {
        // columns the rows after a file's break would have typed: the break is what to mend
        if let Some(e) = stopped {
            return Err(e);
        }
        // the record that could not be read comes first: it is likely what to mend
        if let Some(first) = &first_unread {
            config_problems.insert(
                0,
                format!(
                    "{unread} record{} of the input could not be read, the first: {first}; that may be why these \
                     columns have no type:",
                    if unread == 1 { "" } else { "s" }
                ),
            );
        }
        return Err(Error::config(context, config_problems.join("\n")));
    }
    conv.first_seen = infer::first_seen(&inf);
    let too_deep = unnameable_columns(src, conv, &fields, &is_declared, report);
    if too_deep {
        // (the build adds the stopping source's violations to those of the report)
        return Err(report.take_error());
    }
    let declared = |name: &str| {
        src.fields
            .iter()
            .find(|f| f.name == name)
            .map(Target::from_descriptor)
            .or_else(|| (src.layout == Layout::Long && name == "value").then_some(Target::Float64))
    };
    let mut columns: Vec<(String, Target)> = fields
        .iter()
        .map(|f| (f.name().clone(), declared(f.name()).unwrap_or_else(|| Target::from_arrow(f.data_type()))))
        .collect();
    // declared columns that never occur in the data are still part of the source
    for f in &src.fields {
        if !columns.iter().any(|(n, _)| n == &f.name) {
            columns.push((f.name.clone(), Target::from_descriptor(f)));
        }
    }
    // (records that could not be read are violations, said each at its place, unless rejected)
    if columns.is_empty() && !inputs.is_empty() && (reject || unread == set_aside) {
        // a query naming any column would fail on a name the data never gave
        if let Some(e) = stopped {
            return Err(e);
        }
        let plural = |n: u64, noun: &str| format!("{n} {noun}{}", if n == 1 { "" } else { "s" });
        let files = plural(inputs.len() as u64, "file");
        let why = match &first_unread {
            Some(first) => format!(
                "no record could be read from its {files}: {} set aside (the first: {first}). Mend them, or declare",
                plural(unread, "record")
            ),
            // records there, each an object without a key (`{}`)
            None if !per_file.is_empty() => {
                let names: Vec<&str> = per_file.iter().map(|(f, _)| f.as_str()).collect();
                format!(
                    "the records of {} name no key (each is {{}}): declare",
                    crate::core::report::first_names(&names, 3)
                )
            }
            None => {
                let names: Vec<&str> = inputs.iter().map(|i| i.rel.as_str()).collect();
                let verb = if inputs.len() == 1 { "holds" } else { "hold" };
                format!("its {files} {verb} none ({}): declare", crate::core::report::first_names(&names, 3))
            }
        };
        return Err(Error::config(
            context,
            format!(
                "no column: a source's columns come from its records, and {why} its columns \
                 {DECLARED_COLUMNS_READ}"
            ),
        ));
    }
    Ok(columns)
}

/// How a pipeline declares the columns of a source whose records name none, and what that
/// gives (the end of its message, which `query` words in its own options).
pub const DECLARED_COLUMNS_READ: &str =
    "([[source.field]], a name and a type each) to read its records with those columns";

/// Refuses files of one source (name, column names) whose column sets differ, each
/// difference named against the first file, for a source without `columns = "union"`.
///
/// Errors: [`Error::Config`] at `context` listing every difference and the ways out.
fn same_columns(context: &str, per_file: &[(String, BTreeSet<String>)]) -> Result<()> {
    let Some((first_name, first_keys)) = per_file.first() else { return Ok(()) };
    let mut diffs = Vec::new();
    for (name, keys) in &per_file[1..] {
        let extra: Vec<&String> = keys.difference(first_keys).collect();
        let missing: Vec<&String> = first_keys.difference(keys).collect();
        if !extra.is_empty() {
            diffs.push(format!("{name} has {} that {first_name} lacks", list(&extra)));
        }
        if !missing.is_empty() {
            diffs.push(format!("{name} lacks {} that {first_name} has", list(&missing)));
        }
    }
    if diffs.is_empty() {
        return Ok(());
    }
    Err(Error::config(
        context,
        format!(
            "the files of this source have different columns: {}; set columns = \"union\" to combine them \
             (missing columns become null) or split them into separate sources",
            diffs.join("; ")
        ),
    ))
}

fn list(names: &[&String]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// A row to convert: the row, where it was read, the path captures, and the raw record when
/// the format reshaped it (what a rejected row keeps).
type Pending = (Map<String, Value>, SourceRef, Vec<(String, String)>, Option<Arc<Map<String, Value>>>);

/// A line or record that gives no row: where, the rule, the JSON path, the message, and what
/// the rejects file keeps of it.
/// A line or record that gives no row: where, the rule, its problems (JSON path, message)
/// and what the rejects file keeps of it.
type BadLine = (SourceRef, &'static str, Vec<(String, String)>, RejectBody);

/// What converting a run of records produced, before anything is reported or written.
/// Building it touches nothing shared, so it can run on any thread.
struct Chunk {
    /// Every converted row, bad ones included.
    batch: RecordBatch,
    /// Where each row came from.
    srefs: Vec<SourceRef>,
    /// Values that did not fit.
    problems: Vec<convert::Problem>,
    /// Values accepted but counted.
    events: Vec<convert::Event>,
    /// The records of the rows with problems (for the rejects file).
    bad_records: BTreeMap<usize, Box<serde_json::value::RawValue>>,
    /// Strings above the large-cell threshold: (row, column, bytes).
    large: Vec<(usize, String, usize)>,
    /// Lines that were not records, in order.
    bad_lines: Vec<BadLine>,
    /// Per converted column: whether any record had its key.
    present: Vec<bool>,
}

/// What every conversion of one source shares.
struct ChunkSpec<'a> {
    src: &'a SourceDef,
    columns: &'a [(String, Target)],
    conv: &'a ConvertOptions,
    schema: SchemaRef,
    large_cell_bytes: u64,
    /// The fast path for runs of JSON Lines, when the source's rows are records as they are
    /// and its columns are flat.
    direct: Option<direct::Decoder>,
}

impl ChunkSpec<'_> {
    /// Converts `pending` records into a [`Chunk`].
    fn convert(&self, pending: Vec<Pending>, bad_lines: Vec<BadLine>) -> Result<Chunk> {
        let records: Vec<&Map<String, Value>> = pending.iter().map(|(o, ..)| o).collect();
        let mut converted = convert::convert(&records, self.columns, self.conv);
        if self.src.format == Format::TinkerEvalTrajectories {
            evals::correct_from_reward(self.columns, &mut converted.columns);
        }
        // a shaped row's column is named by its place in the raw record; in the long layout,
        // `value` is a number unless the source declares it
        let long_hint = self.src.layout == Layout::Long && !self.src.fields.iter().any(|f| f.name == "value");
        // the path in the raw record of a shaped row's cell, when it has another one
        let raw_path = |row: usize, at: &str| -> Option<String> {
            let column = at.strip_prefix("$.").and_then(|c| c.split(['.', '[']).next())?;
            let rest = &at[2 + column.len()..];
            if column == "pass_at_k"
                && let Some(raw) = pending[row].3.as_deref()
            {
                // the i-th (k, value) pair is the raw object's key of the i-th smallest k
                let i: usize = rest.strip_prefix('[')?.split(']').next()?.parse().ok()?;
                let split = pending[row].0.get("split").and_then(Value::as_str);
                let keys = evals::pass_at_k_raw_key(raw, split, i)?;
                let segs: Vec<path::Seg> = keys.into_iter().map(path::Seg::Key).collect();
                return Some(path::render(&segs));
            }
            let keys = match (self.src.format, self.src.layout, column) {
                (Format::TinkerMetrics | Format::Wandb, _, "value" | "value_text") => {
                    pending[row].0.get("metric").and_then(Value::as_str).map(|k| vec![k.to_string()])
                }
                (Format::TrackioMetrics | Format::TrackioSystem, _, "value" | "value_text") => {
                    pending[row].0.get("metric").and_then(Value::as_str).map(|k| vec!["metrics".into(), k.to_string()])
                }
                // a verl line's metrics are under `data`, but `elapsed_seconds` beside it
                (Format::VerlMetrics, _, "value" | "value_text") => {
                    pending[row].0.get("metric").and_then(Value::as_str).map(|k| {
                        let raw = pending[row].3.as_ref();
                        match raw.and_then(|r| r.get("data")) {
                            Some(Value::Object(d)) if d.contains_key(k) => vec!["data".into(), k.to_string()],
                            _ => vec![k.to_string()],
                        }
                    })
                }
                // a W&B history row's times are the record's own keys
                (Format::Wandb, _, "timestamp" | "runtime_s" | "step") if pending[row].0.contains_key("metric") => {
                    Some(vec![format!("_{}", column.trim_end_matches("_s"))])
                }
                (_, Layout::Long, "value") => {
                    pending[row].0.get("key").and_then(Value::as_str).map(|k| vec![k.to_string()])
                }
                _ => evals::raw_column(self.src.format, pending[row].3.as_deref(), &pending[row].0, column, rest),
            }?;
            let segs: Vec<path::Seg> = keys.into_iter().map(path::Seg::Key).collect();
            Some(format!("{}{rest}", path::render(&segs)))
        };
        for e in converted.events.iter_mut() {
            if let Some(p) = raw_path(e.row, &e.path) {
                e.path = p;
            }
        }
        for p in converted.problems.iter_mut() {
            let value = p.path.strip_prefix("$.").and_then(|c| c.split(['.', '[']).next()) == Some("value");
            if let Some(raw) = raw_path(p.row, &p.path) {
                p.path = raw;
            }
            if long_hint && value {
                p.message.push_str(
                    "; in the long layout `value` is a number unless the source declares its type \
                     ([[source.field]] name = \"value\", e.g. type = \"object\" for JSON text)",
                );
            }
        }
        let mut bad_records = BTreeMap::new();
        for p in &converted.problems {
            let (row, _, _, raw) = &pending[p.row];
            bad_records.entry(p.row).or_insert_with(|| {
                // a metrics document's row is its split's: the reject holds that split's object
                // (with the checkpoint and, in the row that keeps it, its `per_template`)
                let record = match (raw.as_deref(), row.get("split").and_then(Value::as_str)) {
                    (Some(doc), Some(split)) if self.src.format == Format::EvalMetrics => {
                        let mut cut = Map::new();
                        for k in ["checkpoint", split] {
                            if let Some(v) = doc.get(k) {
                                cut.insert(k.to_string(), v.clone());
                            }
                        }
                        let holds = row.get("extra").and_then(|e| e.get("per_template")).is_some_and(|v| !v.is_null());
                        if holds && evals::per_template_from_top(doc, split) {
                            cut.insert("per_template".into(), doc["per_template"].clone());
                        }
                        cut
                    }
                    // a results document's row is its value's: the reject holds that part
                    (Some(doc), _) if matches!(self.src.format, Format::LmEvalResults | Format::LightevalResults) => {
                        let tokens = match &pending[p.row].1.at {
                            Position::Pointer(at) => path::pointer_tokens(at).unwrap_or_default(),
                            _ => Vec::new(),
                        };
                        match tokens.as_slice() {
                            [.., section, task, key] => evals::results_part(doc, section, task, key),
                            _ => doc.clone(),
                        }
                    }
                    (raw, _) => raw.unwrap_or(row).clone(),
                };
                convert::json_raw(&Value::Object(record))
            });
        }
        let captures: Vec<&[(String, String)]> = pending.iter().map(|(_, _, c, _)| c.as_slice()).collect();
        let files: StringArray = pending.iter().map(|(_, s, ..)| Some(s.file.as_str())).collect();
        let line_array: ArrayRef = match self.schema.field(self.schema.fields().len() - 1).data_type() {
            DataType::Int64 => Arc::new(
                pending
                    .iter()
                    .map(|(_, s, ..)| match &s.at {
                        Position::Line(n) => Some(*n as i64),
                        Position::Pointer(_) => None,
                    })
                    .collect::<Int64Array>(),
            ),
            _ => Arc::new(pending.iter().map(|(_, s, ..)| Some(s.at.to_string())).collect::<StringArray>()),
        };
        let provenance = self.provenance(&captures, files, line_array);
        drop(captures);
        let srefs = pending.into_iter().map(|(_, s, ..)| s).collect();
        self.assemble(converted, provenance, srefs, bad_records, bad_lines)
    }

    /// The capture columns (from each row's captures), then `files` and `lines`.
    fn provenance(&self, captures: &[&[(String, String)]], files: StringArray, lines: ArrayRef) -> Vec<ArrayRef> {
        let ncapt = self.schema.fields().len() - self.columns.len() - 2;
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(ncapt + 2);
        for c in 0..ncapt {
            let a: StringArray = captures.iter().map(|caps| Some(caps[c].1.as_str())).collect();
            arrays.push(Arc::new(a));
        }
        arrays.push(Arc::new(files));
        arrays.push(lines);
        arrays
    }

    /// Puts converted columns and their provenance columns together into a [`Chunk`].
    fn assemble(
        &self,
        converted: convert::Converted,
        provenance: Vec<ArrayRef>,
        srefs: Vec<SourceRef>,
        bad_records: BTreeMap<usize, Box<serde_json::value::RawValue>>,
        bad_lines: Vec<BadLine>,
    ) -> Result<Chunk> {
        let name = &self.src.name;
        let mut large = Vec::new();
        for (i, (col, target)) in self.columns.iter().enumerate() {
            if matches!(target, Target::Str | Target::Text | Target::Json | Target::JsonObject) {
                let a = converted.columns[i].as_string::<i32>();
                for (row, v) in a.iter().enumerate() {
                    if let Some(v) = v
                        && v.len() as u64 > self.large_cell_bytes
                    {
                        large.push((row, col.clone(), v.len()));
                    }
                }
            }
        }
        let mut arrays: Vec<ArrayRef> = converted.columns;
        arrays.extend(provenance);
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| Error::format(format!("source {name}"), e))?;
        Ok(Chunk {
            batch,
            srefs,
            problems: converted.problems,
            events: converted.events,
            bad_records,
            large,
            bad_lines,
            present: converted.present,
        })
    }

    /// Parses and converts a run of raw JSON Lines lines of `input`: by the fast path when
    /// the source has one and every line takes it, otherwise record by record.
    fn convert_lines(&self, lines: &records::LineChunk, input: &InputFile) -> Result<Chunk> {
        if let Some(d) = self.direct.as_ref().and_then(|dec| dec.decode(lines)) {
            let n = d.lines.len();
            let caps = input.captures.as_slice();
            let files = StringArray::from_iter_values(std::iter::repeat_n(input.rel.as_str(), n));
            let line_array: ArrayRef = Arc::new(Int64Array::from_iter_values(d.lines.iter().map(|&l| l as i64)));
            let provenance = self.provenance(&vec![caps; n], files, line_array);
            let srefs = d.lines.iter().map(|&l| SourceRef { file: input.rel.clone(), at: Position::Line(l) }).collect();
            let converted =
                convert::Converted { columns: d.columns, problems: Vec::new(), events: d.events, present: d.present };
            return self.assemble(converted, provenance, srefs, BTreeMap::new(), Vec::new());
        }
        let mut pending = Vec::with_capacity(lines.lines.len());
        let mut bad = Vec::new();
        for item in lines.items() {
            match item {
                Item::Record(obj, at) => {
                    let sref = SourceRef { file: input.rel.clone(), at };
                    shape_into(self.src, obj, sref, &input.captures, &mut pending, &mut bad);
                }
                Item::Bad { at, rule, message, raw } => bad.push((
                    SourceRef { file: input.rel.clone(), at },
                    rule,
                    vec![("$".into(), message)],
                    unparsed_body(self.src, raw),
                )),
            }
        }
        self.convert(pending, bad)
    }
}

/// Reports what a chunk found and writes its good rows.
struct Applier<'a> {
    src: &'a SourceDef,
    opts: &'a IngestOptions,
    rows: u64,
    report: &'a mut BuildReport,
    rejects: &'a mut Rejects,
    out: &'a mut dyn FnMut(&RecordBatch) -> Result<()>,
    /// `tinker-metrics` rows kept whose value was logged as text (in `value_text`), and
    /// where the first one was read.
    text_values: (u64, Option<SourceRef>),
    /// Negative zeros read as the integer 0, and where the first one was (record and path).
    negative_zeros: (u64, Option<(SourceRef, String)>),
    /// The files that gave at least one record or bad line.
    with_items: BTreeSet<String>,
    /// TensorBoard values whose credentials were replaced: how many, and each tag's first.
    scrubbed_texts: (u64, BTreeMap<String, SourceRef>),
    /// Per converted column: whether any record had its key (`null` included).
    present: Vec<bool>,
}

impl Applier<'_> {
    fn apply(&mut self, chunk: Chunk) -> Result<()> {
        let name = self.src.name.clone();
        for (seen, here) in self.present.iter_mut().zip(&chunk.present) {
            *seen |= here;
        }
        // the files the rows came from: rows of one file follow each other, so a run whose
        // first and last rows are of one file (a run of JSON Lines) is of that file alone; a run
        // of other records may span several (CSV files of a few rows each), each looked at once
        let one_file = chunk.srefs.first().map(|s| &s.file) == chunk.srefs.last().map(|s| &s.file);
        let rows: &[SourceRef] = if one_file { &chunk.srefs[..chunk.srefs.len().min(1)] } else { &chunk.srefs };
        let mut last: Option<&str> = None;
        for sref in rows.iter().chain(chunk.bad_lines.iter().map(|b| &b.0)) {
            if last != Some(sref.file.as_str()) {
                last = Some(sref.file.as_str());
                if !self.with_items.contains(&sref.file) {
                    self.with_items.insert(sref.file.clone());
                }
            }
        }
        // lines that do not parse and records that do not fit, written to the rejects file
        // together in line order
        let mut rejected: Vec<(SourceRef, Vec<String>, RejectBody)> = Vec::new();
        for (sref, rule, problems, raw) in chunk.bad_lines {
            // a last record cut short, set aside by the source's choice: said, as it is no bad
            // data but data missing
            let cut_short = rule == "truncated" && self.src.on_truncated == OnTruncated::Reject;
            if cut_short {
                for (_, message) in &problems {
                    self.report.warn(
                        &name,
                        "truncated",
                        Some(sref.clone()),
                        format!(
                            "{message}; the record is set aside in rejects/{name}.jsonl (on_truncated = \"reject\")"
                        ),
                    );
                }
            }
            match if cut_short { OnInvalid::Reject } else { self.src.on_invalid.unwrap_or(self.opts.on_invalid) } {
                OnInvalid::Fail => {
                    for (path, message) in problems {
                        self.report.violation(Violation {
                            scope: crate::core::report::Scope::Source,
                            table: name.clone(),
                            source: Some(sref.clone()),
                            path,
                            rule: rule.into(),
                            key: None,
                            message,
                            finding: None,
                        })
                    }
                }
                OnInvalid::Reject => rejected.push((
                    sref,
                    problems
                        .into_iter()
                        .map(|(path, message)| if path == "$" { message } else { format!("{path}: {message}") })
                        .collect(),
                    raw,
                )),
            }
        }
        // negative zeros read as 0: counted, and the earliest named (events come column by column)
        let zeros = chunk.events.iter().filter(|e| e.kind == "negative-zero");
        if self.negative_zeros.1.is_none()
            && let Some(e) = zeros.clone().min_by_key(|e| e.row)
        {
            self.negative_zeros.1 = Some((chunk.srefs[e.row].clone(), e.path.clone()));
        }
        self.negative_zeros.0 += zeros.count() as u64;
        // in the file's order (events come column by column): the examples kept are the first
        let mut events: Vec<_> = chunk.events.iter().filter(|e| e.kind != "negative-zero").collect();
        events.sort_by_key(|e| e.row);
        for e in events {
            let sref = &chunk.srefs[e.row];
            let tally = match e.kind {
                "nonfinite" => self.report.nonfinite.entry(name.clone()).or_default(),
                _ => self.report.coercions.entry(name.clone()).or_default(),
            };
            tally.add(|| format!("{sref}:{} {}", e.path, e.detail));
        }
        let mut bad: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        // the rows one raw record gives (a metrics line's metrics, the long layout's keys)
        // share its problems, met one after the other: each is said once
        let mut previous: Option<(SourceRef, String, String)> = None;
        // the places the source's inference named, before this chunk's problems are said
        let inferred: BTreeSet<(SourceRef, String)> = self
            .report
            .violations
            .iter()
            .filter(|v| v.scope == crate::core::report::Scope::Source && v.table == name)
            .filter_map(|v| Some((v.source.clone()?, v.path.clone())))
            .collect();
        for p in chunk.problems {
            let sref = chunk.srefs[p.row].clone();
            let this = (sref.clone(), p.path.clone(), p.message.clone());
            let repeated = previous.as_ref() == Some(&this);
            previous = Some(this);
            // (a place the source's inference named already, for the same value: said once)
            let named = !inferred.is_empty() && inferred.contains(&(sref.clone(), p.path.clone()));
            match self.src.on_invalid.unwrap_or(self.opts.on_invalid) {
                OnInvalid::Fail if repeated || named => {}
                OnInvalid::Fail => self.report.violation(Violation {
                    scope: crate::core::report::Scope::Source,
                    table: name.clone(),
                    source: Some(sref),
                    path: p.path,
                    rule: "type".into(),
                    key: None,
                    message: p.message,
                    finding: p.finding,
                }),
                OnInvalid::Reject => bad.entry(p.row).or_default().push(format!("{}: {}", p.path, p.message)),
            }
        }
        for (row, reasons) in &bad {
            let mut record =
                chunk.bad_records.get(row).cloned().unwrap_or_else(|| serde_json::value::RawValue::NULL.to_owned());
            // a TensorBoard text keeps no credential in the rejects file either (see below)
            if self.src.format == Format::Tensorboard
                && let Some(clean) = wandb::values::scrub_credentials(record.get())
            {
                record = serde_json::value::RawValue::from_string(clean.clone()).unwrap_or_else(|_| {
                    serde_json::value::to_raw_value(&clean)
                        .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned())
                });
            }
            rejected.push((chunk.srefs[*row].clone(), reasons.clone(), RejectBody::RecordText(record)));
        }
        rejected.sort_by(|a, b| a.0.cmp(&b.0));
        for (sref, reasons, body) in rejected {
            self.rejects.add(&name, Some(&sref), &reasons, body)?;
        }
        for (row, col, len) in chunk.large {
            self.report.warn(
                &name,
                "large-cell",
                Some(chunk.srefs[row].clone()),
                format!(
                    "column `{col}` holds a {}-byte value (above {} bytes); where a table keeps it, the dataset viewer \
                     may truncate it",
                    crate::core::numbers::group_digits(len as u64),
                    crate::core::numbers::group_digits(self.opts.large_cell_bytes)
                ),
            );
        }
        if matches!(
            self.src.format,
            Format::TinkerMetrics | Format::VerlMetrics | Format::TrackioMetrics | Format::TrackioSystem
        ) && let Some(text) = chunk.batch.column_by_name("value_text")
        {
            for r in (0..text.len()).filter(|r| text.is_valid(*r) && !bad.contains_key(r)) {
                self.text_values.0 += 1;
                if self.text_values.1.is_none() {
                    self.text_values.1 = Some(chunk.srefs[r].clone());
                }
            }
        }
        let mut rb = chunk.batch;
        // credentials a TensorBoard or trackio text holds (a token logged with a run's command
        // line or arguments) are replaced, as a W&B run's logged texts are, and said once
        // converted
        let named_by = match self.src.format {
            Format::Tensorboard => Some("tag"),
            Format::TrackioMetrics | Format::TrackioSystem => Some("metric"),
            _ => None,
        };
        if let Some(column) = named_by
            && let Some((clean, rows)) =
                wandb::values::scrub_value_texts(&rb, column).map_err(|e| Error::format(name.clone(), e))?
        {
            for (r, tag) in rows.into_iter().filter(|(r, _)| !bad.contains_key(r)) {
                self.scrubbed_texts.0 += 1;
                self.scrubbed_texts.1.entry(tag).or_insert_with(|| chunk.srefs[r].clone());
            }
            rb = clean;
        }
        if !bad.is_empty() {
            let keep: BooleanArray = (0..rb.num_rows()).map(|r| Some(!bad.contains_key(&r))).collect();
            rb = arrow::compute::filter_record_batch(&rb, &keep)
                .map_err(|e| Error::format(format!("source {name}"), e))?;
        }
        self.rows += rb.num_rows() as u64;
        if rb.num_rows() > 0 {
            (self.out)(&rb)?;
        }
        Ok(())
    }
}

/// Bytes of raw JSON Lines handed to a conversion thread at a time.
const LINE_CHUNK_BYTES: usize = 4 << 20;

/// Reads JSON Lines files on one thread and parses and converts them on every core; chunks are
/// applied in input order, so reports and output are the same as a sequential read.
fn convert_lines_parallel(
    spec: &ChunkSpec,
    inputs: &[InputFile],
    digests: Option<&crate::stages::hash::ReadDigests>,
    applier: &mut Applier<'_>,
) -> Result<()> {
    use std::sync::mpsc::{Receiver, sync_channel};
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).max(1);
    std::thread::scope(|scope| -> Result<()> {
        // at most 2 × threads runs of lines wait, raw or converted, besides the ones being
        // worked on: memory stays bounded when the consumer is the slower side
        let (work_tx, work_rx) = sync_channel::<(u64, usize, records::LineChunk)>(threads);
        let work_rx = std::sync::Arc::new(std::sync::Mutex::new(work_rx));
        let (done_tx, done_rx) = sync_channel::<(u64, Result<Chunk>)>(threads);
        for _ in 0..threads {
            let rx: std::sync::Arc<std::sync::Mutex<Receiver<_>>> = work_rx.clone();
            let tx = done_tx.clone();
            scope.spawn(move || {
                loop {
                    let next = rx.lock().expect("lock").recv();
                    let Ok((seq, file, lines)) = next else { break };
                    let out = spec.convert_lines(&lines, &inputs[file]);
                    if tx.send((seq, out)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        // only the conversion threads take work: once they stop, the reader does too
        drop(work_rx);
        let reader = scope.spawn(move || -> Result<()> {
            let mut seq = 0u64;
            for (i, input) in inputs.iter().enumerate() {
                let r = files::open_hashing(input, digests)?;
                records::jsonl_chunks(r, &input.rel, LINE_CHUNK_BYTES, &mut |chunk| {
                    // a closed channel means the consumer stopped on an error it reports
                    // itself: the rest is not read (nor its digest recorded)
                    work_tx
                        .send((seq, i, chunk))
                        .map_err(|_| Error::format(&input.rel, "reading stopped on an earlier error"))?;
                    seq += 1;
                    Ok(())
                })?;
            }
            Ok(())
        });
        let mut pending: BTreeMap<u64, Result<Chunk>> = BTreeMap::new();
        let mut next = 0u64;
        let mut failed: Option<Error> = None;
        while failed.is_none() {
            let Ok((seq, out)) = done_rx.recv() else { break };
            pending.insert(seq, out);
            while let Some(out) = pending.remove(&next) {
                next += 1;
                if let Err(e) = out.and_then(|c| applier.apply(c)) {
                    failed = Some(e);
                    break;
                }
            }
        }
        // an error stops the conversion threads (their results have nowhere to go), then
        // the reader
        drop(pending);
        drop(done_rx);
        let read = reader.join().expect("reader thread");
        match failed {
            Some(e) => Err(e),
            None => read,
        }
    })
}

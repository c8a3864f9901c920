//! Pipeline definitions: `pipelines/<name>/pipeline.toml`.
//!
//! In: the TOML file. Out: a checked [`PipelineSpec`] with every path resolved against the
//! pipeline folder. Unknown keys, wrong types and bad names are [`Error::Config`] errors that
//! name the file, line and column, and the key.
//!
//! ```toml
//! name = "tinker-rl-bench"        # release name: releases/<name>/<version>/
//! version = "1.0.0"
//! formats = ["parquet", "jsonl"]  # Parquet, and JSON Lines copies (default: ["parquet"])
//!
//! [card]                          # dataset card metadata
//! pretty_name = "…"
//! license = "apache-2.0"          # a Hub licence id
//! description = "…"               # markdown
//! citation = "…"                  # BibTeX, optional
//! tags = ["…"]
//! metadata = "card-metadata.yaml" # optional extra YAML front matter, merged
//! default_table = "training_runs" # the config marked `default: true` (default: first table)
//! [card.rai]                      # Responsible AI fields of croissant.json (see RaiDef)
//! data_collection = "…"
//! [[card.section]]                # extra sections; `query` results are rendered as tables
//! title = "…"
//! text = "…"
//! query = "SELECT …"
//!
//! [[source]]
//! name = "checkpoint_index"       # SQL table name
//! path = "raw/results/{run}_checkpoints.jsonl"   # glob; {capture} segments become columns
//! format = "tinker-checkpoints"   # jsonl | json | yaml | csv | parquet | tinker-metrics | tinker-checkpoints | wandb
//!                                 # | tinker-eval-result | tinker-eval-trajectories | eval-metrics
//!                                 # | eval-generations | tinker-timings | tinker-rollouts
//!                                 # | tinker-rollout-steps | tinker-eval-run | trackio-metrics
//!                                 # | trackio-system | trackio-runs | inspect-evals | inspect-samples
//!                                 # | lm-eval-results | lm-eval-samples | lighteval-results
//!                                 # | lighteval-details | verl-generations | trainer-state | trainer-runs
//!                                 # | graph-pass-results | graph-score-report
//! record_path = "/experiments"    # json and yaml: JSON pointer of the record array (or object)
//! schema = "schemas/x.json"       # optional declared Table Schema (then no inference)
//! columns = "union"               # files with different column sets: same (error) | union
//! nonfinite = "ieee"              # bare NaN/Infinity tokens: ieee | null
//! coerce_nonfinite_strings = false  # "NaN"/"Infinity"/"-Infinity" strings into number columns
//! coerce_numeric_strings = false  # "12" into number/integer columns, counted
//! assume_timezone = "UTC"         # zone for datetimes written without an offset
//! layout = "long"                 # wide (default) | long: id_columns, key, value
//! id_columns = ["_step"]
//! keep_text = false               # evaluation formats: keep generation texts
//! [[source.field]]                # per-column type overrides (Table Schema field descriptors)
//! name = "group"
//! type = "any"
//! [source.wandb]                  # format = "wandb" only: W&B exports into a standard table
//! table = "history"               # runs | history | system | histograms
//!
//! [[view]]                       # shared SQL, not written to the release
//! name = "run_records"
//! sql = "sql/run_records.sql"
//!
//! [[table]]
//! name = "training_runs"
//! schema = "../../schemas/tinker-rl-bench/training_runs.json"
//! sql = "sql/training_runs.sql"   # or: query = "SELECT …"
//! on_duplicate_key = "error"      # error | keep-last | keep-first
//! split_column = "split"          # optional: rows go to the split this column names
//! splits = ["train", "test"]      # the allowed split names, checked up front
//! formats = ["parquet"]           # overrides the release's formats for this table
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::error::{Error, Result};
use crate::core::schema::{FieldDescriptor, TableSchema};

/// A parsed and checked `pipeline.toml`.
#[derive(Debug, Clone)]
pub struct PipelineSpec {
    /// Folder holding `pipeline.toml`; every relative path is resolved against it.
    pub dir: PathBuf,
    /// Path of the TOML file itself.
    pub file: PathBuf,
    /// The file's text as it was loaded, for messages that name a line of it (empty for a
    /// spec made in memory: messages then name the file alone).
    pub text: String,
    /// The raw definition.
    pub def: PipelineDef,
    /// Declared table schemas, by table (same order as `def.tables`); `None` = inferred.
    pub table_schemas: Vec<Option<TableSchema>>,
    /// Declared source schemas, by source (same order as `def.sources`).
    pub source_schemas: Vec<Option<TableSchema>>,
    /// Whether a column no value gives a type (null or absent in every record) is a text column
    /// of nulls, as SQL over raw files wants, rather than an error asking for its type (what a
    /// release wants). False for pipelines.
    pub untyped_as_text: bool,
    /// Whether data columns named `_source_file` or `_source_line` (a runpack release's own
    /// JSON Lines) are kept, with runpack's provenance columns then added under the names
    /// [`SHADOWED_PROVENANCE`] for the caller to drop, rather than refused as a clash (what a
    /// pipeline wants: its rows' provenance must be runpack's). False for pipelines.
    pub data_provenance: bool,
}

/// The names under which runpack adds its `_source_file` and `_source_line` columns when the
/// data has its own and [`PipelineSpec::data_provenance`] keeps them. They start with a control
/// character, so that no real data has them; data that does is refused.
pub const SHADOWED_PROVENANCE: [&str; 2] = ["\u{1}_source_file", "\u{1}_source_line"];

/// The TOML document.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineDef {
    /// Release name (`[a-z0-9][a-z0-9._-]*`).
    pub name: String,
    /// Default release version (overridable on the command line).
    #[serde(default = "default_version")]
    pub version: String,
    /// Dataset card metadata.
    #[serde(default)]
    pub card: CardDef,
    /// Raw inputs.
    #[serde(default, rename = "source")]
    pub sources: Vec<SourceDef>,
    /// Intermediate SQL views (not written to the release).
    #[serde(default, rename = "view")]
    pub views: Vec<ViewDef>,
    /// Output tables.
    #[serde(default, rename = "table")]
    pub tables: Vec<TableDef>,
    /// The file formats of every table of the release (`["parquet"]` or
    /// `["parquet", "jsonl"]`); a table's own `formats` overrides it. Default: Parquet only.
    #[serde(default)]
    pub formats: Option<Vec<String>>,
    /// Files under the pipeline's `raw/` folder that it leaves out on purpose (globs, as a
    /// source's `path`): a build names the other files no source reads in a note.
    #[serde(default)]
    pub not_read: Option<PathPatterns>,
    /// `[[left_out]]`: files a table leaves out (`runpack init` writes one for each file of a
    /// table's source whose rows it could not read, with the reason: a file with a bad record,
    /// a W&B log whose history cannot be read though its run's metadata can).
    /// Each build says them in a note, and the card in its "Data quality" section.
    #[serde(default, rename = "left_out")]
    pub left_out: Vec<LeftOut>,
}

/// `[[left_out]]`: a file left out of a table (see [`PipelineDef::left_out`]).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LeftOut {
    /// The table (or, when it was not made at all, the table it would have been).
    pub table: String,
    /// The file, as a source's `path` names it (`raw/wandb/run-a/run-a.wandb`).
    pub file: String,
    /// Why (what reading it for the table found).
    pub reason: String,
}

/// `[[view]]`: a named SQL query over the sources and earlier views, for tables to share.
/// Views are not written to the release.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewDef {
    /// View name (`[a-z_][a-z0-9_]*`).
    pub name: String,
    /// SQL file (path relative to the pipeline).
    #[serde(default)]
    pub sql: Option<String>,
    /// Inline SQL (instead of `sql`).
    #[serde(default)]
    pub query: Option<String>,
}

fn default_version() -> String {
    "0.1.0".into()
}

/// `[card]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardDef {
    /// Human name of the dataset.
    #[serde(default)]
    pub pretty_name: Option<String>,
    /// Hub licence id (`apache-2.0`, `mit`, `cc-by-4.0`, `other`, …).
    #[serde(default)]
    pub license: Option<String>,
    /// Markdown summary shown at the top of the card.
    #[serde(default)]
    pub description: Option<String>,
    /// Citation (BibTeX or text).
    #[serde(default)]
    pub citation: Option<String>,
    /// Hub tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Extra YAML front matter merged into the card (path relative to the pipeline).
    #[serde(default)]
    pub metadata: Option<String>,
    /// Table whose config is marked `default: true`.
    #[serde(default)]
    pub default_table: Option<String>,
    /// Extra sections.
    #[serde(default, rename = "section")]
    pub sections: Vec<CardSection>,
    /// `[card.rai]`: the Responsible AI fields of `croissant.json`.
    #[serde(default)]
    pub rai: RaiDef,
}

/// What a card without a licence means on the Hub (said by build and publish).
pub const NO_LICENCE: &str = "the card has no licence: the Hub shows the dataset as unlicensed";

impl CardDef {
    /// What the card still lacks before it is published: no licence, or text that still holds
    /// a `TODO` (the placeholders `runpack init` writes). Each item names the key to write in
    /// pipeline.toml; none when the card is complete.
    pub fn unfinished(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.license.as_deref().is_none_or(|l| l.trim().is_empty()) {
            out.push(format!(
                "{NO_LICENCE}; write `[card] license` in pipeline.toml (apache-2.0, mit, cc-by-4.0, other, …)"
            ));
        }
        let todo = |t: &Option<String>| t.as_deref().is_some_and(|t| t.contains("TODO"));
        for (key, text) in
            [("description", &self.description), ("pretty_name", &self.pretty_name), ("citation", &self.citation)]
        {
            if todo(text) {
                out.push(format!("the card's {key} still holds a TODO: write `[card] {key}` in pipeline.toml"));
            }
        }
        out
    }
}

/// `[card.rai]`: the Croissant Responsible AI (`rai:`) properties written into
/// `croissant.json`, each a Markdown or plain text. Every key is optional; a key left out is
/// left out of `croissant.json`.
///
/// ```toml
/// [card.rai]
/// data_collection = "Logs of our own training runs, copied as the trainer wrote them."
/// personal_sensitive_information = "None: the rows hold metrics and checkpoint names."
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaiDef {
    /// `rai:dataCollection`: how the data was collected.
    #[serde(default)]
    pub data_collection: Option<String>,
    /// `rai:dataCollectionType`: the kind of collection (`Logs`, `Experiments`, …).
    #[serde(default)]
    pub data_collection_type: Option<String>,
    /// `rai:dataPreprocessingProtocol`: what was done to the raw data.
    #[serde(default)]
    pub data_preprocessing_protocol: Option<String>,
    /// `rai:dataAnnotationProtocol`: how labels were made, if any.
    #[serde(default)]
    pub data_annotation_protocol: Option<String>,
    /// `rai:dataBiases`: known biases.
    #[serde(default)]
    pub data_biases: Option<String>,
    /// `rai:dataLimitations`: known limitations.
    #[serde(default)]
    pub data_limitations: Option<String>,
    /// `rai:dataUseCases`: uses the data suits, and uses it does not.
    #[serde(default)]
    pub data_use_cases: Option<String>,
    /// `rai:dataSocialImpact`: its possible social impact.
    #[serde(default)]
    pub data_social_impact: Option<String>,
    /// `rai:personalSensitiveInformation`: personal or sensitive data it holds, if any.
    #[serde(default)]
    pub personal_sensitive_information: Option<String>,
    /// `rai:dataReleaseMaintenancePlan`: how the data will be kept up to date.
    #[serde(default)]
    pub data_release_maintenance_plan: Option<String>,
}

impl RaiDef {
    /// The fields that are set, as (Croissant property, text) pairs in a fixed order.
    pub fn properties(&self) -> Vec<(&'static str, &str)> {
        [
            ("rai:dataCollection", &self.data_collection),
            ("rai:dataCollectionType", &self.data_collection_type),
            ("rai:dataPreprocessingProtocol", &self.data_preprocessing_protocol),
            ("rai:dataAnnotationProtocol", &self.data_annotation_protocol),
            ("rai:dataBiases", &self.data_biases),
            ("rai:dataLimitations", &self.data_limitations),
            ("rai:dataUseCases", &self.data_use_cases),
            ("rai:dataSocialImpact", &self.data_social_impact),
            ("rai:personalSensitiveInformation", &self.personal_sensitive_information),
            ("rai:dataReleaseMaintenancePlan", &self.data_release_maintenance_plan),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_deref()?)))
        .collect()
    }
}

/// `[[card.section]]`: prose plus an optional SQL query whose result is shown as a table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardSection {
    /// Section heading.
    pub title: String,
    /// Markdown text (numbers belong in `query`, so that they are computed from the release).
    #[serde(default)]
    pub text: Option<String>,
    /// SQL over the release's tables; the result is rendered as a Markdown table.
    #[serde(default)]
    pub query: Option<String>,
}

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// A JSON document; records are the array (or the object) at `record_path`.
    Json,
    /// A YAML document; records are the sequence (or the mapping) at `record_path` (see
    /// `ingest::yaml`).
    Yaml,
    /// RFC 4180 CSV with a header row.
    Csv,
    /// Apache Parquet files (shards written by other tools).
    Parquet,
    /// Tinker `metrics.jsonl`, read in long form: `step, metric, value, value_text`.
    TinkerMetrics,
    /// Tinker `checkpoints.jsonl`: `name, batch, epoch, final, rolling, state_path,
    /// sampler_path, extra`.
    TinkerCheckpoints,
    /// tinker-cookbook benchmark `result.json` (see `ingest::evals`).
    TinkerEvalResult,
    /// tinker-cookbook benchmark `trajectories.jsonl` (see `ingest::evals`).
    TinkerEvalTrajectories,
    /// Per-checkpoint `<checkpoint>_metrics.json` (see `ingest::evals`).
    EvalMetrics,
    /// Per-checkpoint `<checkpoint>_{id,ood}_generations.jsonl` (see `ingest::evals`).
    EvalGenerations,
    /// tinker-cookbook `timing_spans.jsonl`, one row per span (see `ingest::cookbook`).
    TinkerTimings,
    /// tinker-cookbook rollout summaries (both layouts), one row per trajectory (see
    /// `ingest::cookbook`).
    TinkerRollouts,
    /// tinker-cookbook rollout summaries, one row per step of a trajectory (see
    /// `ingest::cookbook`).
    TinkerRolloutSteps,
    /// tinker-cookbook eval store `runs/<run_id>/metadata.json` (see `ingest::cookbook`).
    TinkerEvalRun,
    /// trackio metrics, long (a project's SQLite database and JSONL fragments; see
    /// `ingest::trackio`).
    TrackioMetrics,
    /// trackio system metrics, long (see `ingest::trackio`).
    TrackioSystem,
    /// trackio run configs (see `ingest::trackio`).
    TrackioRuns,
    /// Inspect AI logs (`.eval` and `.json`), one row per task × scorer × metric (see
    /// `ingest::inspect`).
    InspectEvals,
    /// Inspect AI logs, one row per sample × epoch (see `ingest::inspect`).
    InspectSamples,
    /// lm-evaluation-harness `results_<date>.json`, one row per task × metric × filter (see
    /// `ingest::lmeval`).
    LmEvalResults,
    /// lm-evaluation-harness `samples_<task>_<date>.jsonl`, one row per document × filter (see
    /// `ingest::lmeval`).
    LmEvalSamples,
    /// lighteval `results_<date>.json`, one row per task × metric (see `ingest::lighteval`).
    LightevalResults,
    /// lighteval `details_<task>_<date>.parquet`, one row per example (see
    /// `ingest::lighteval`).
    LightevalDetails,
    /// verl validation and rollout dumps `{step}.jsonl`, one row per sample (see
    /// `ingest::verl`).
    VerlGenerations,
    /// verl's file logger (`{"step", "data"}` lines), read in long form as
    /// `tinker-metrics` is: `step, metric, value, value_text` (see `ingest::verl`).
    VerlMetrics,
    /// transformers Trainer states `trainer_state.json` (the Trainer's and TRL's trainers'
    /// logs), one row per logged value (see `ingest::trainer`).
    TrainerState,
    /// transformers Trainer states `trainer_state.json`, one row per state: its run's
    /// progress, best checkpoint and settings (see `ingest::trainer`).
    TrainerRuns,
    /// TensorBoard event files `events.out.tfevents.*`, one row per summary value (see
    /// `ingest::tensorboard`).
    Tensorboard,
    /// Dependency-graph pass rates `graph_results/<run>/results.json`, one row per file ×
    /// template × operation × k (see `ingest::graphs`).
    GraphPassResults,
    /// Dependency-graph score reports `<generated>_score_report.jsonl`, one row per scored file
    /// and per run's aggregate (see `ingest::graphs`).
    GraphScoreReport,
    /// Weights & Biases exports (UI and API CSVs, run lists, run directories, `.wandb` logs),
    /// read into one of runpack's standard W&B tables chosen with `[source.wandb]` (see
    /// [`crate::stages::ingest::wandb`]).
    Wandb,
}

impl Format {
    /// The name a pipeline gives the format (`jsonl`, `tinker-eval-result`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::TinkerMetrics => "tinker-metrics",
            Format::TinkerCheckpoints => "tinker-checkpoints",
            Format::TinkerEvalResult => "tinker-eval-result",
            Format::TinkerEvalTrajectories => "tinker-eval-trajectories",
            Format::EvalMetrics => "eval-metrics",
            Format::EvalGenerations => "eval-generations",
            Format::TinkerTimings => "tinker-timings",
            Format::TinkerRollouts => "tinker-rollouts",
            Format::TinkerRolloutSteps => "tinker-rollout-steps",
            Format::TinkerEvalRun => "tinker-eval-run",
            Format::TrackioMetrics => "trackio-metrics",
            Format::TrackioSystem => "trackio-system",
            Format::TrackioRuns => "trackio-runs",
            Format::InspectEvals => "inspect-evals",
            Format::InspectSamples => "inspect-samples",
            Format::LmEvalResults => "lm-eval-results",
            Format::LmEvalSamples => "lm-eval-samples",
            Format::LightevalResults => "lighteval-results",
            Format::LightevalDetails => "lighteval-details",
            Format::VerlGenerations => "verl-generations",
            Format::VerlMetrics => "verl-metrics",
            Format::TrainerState => "trainer-state",
            Format::TrainerRuns => "trainer-runs",
            Format::Tensorboard => "tensorboard",
            Format::GraphPassResults => "graph-pass-results",
            Format::GraphScoreReport => "graph-score-report",
            Format::Wandb => "wandb",
        }
    }

    /// Whether `coerce_numeric_strings` and `coerce_nonfinite_strings` apply to the format: all
    /// but the long logs (Tinker's, verl's, trackio's), which keep a string logged as text in
    /// `value_text`.
    pub fn takes_coerce(self) -> bool {
        !matches!(self, Format::TinkerMetrics | Format::VerlMetrics | Format::TrackioMetrics | Format::TrackioSystem)
    }

    /// Whether the format fixes its own columns (the Tinker, evaluation and W&B formats), so
    /// that a declared schema, `[[source.field]]` types and the layout options do not apply.
    pub fn fixed_columns(self) -> bool {
        !matches!(self, Format::Jsonl | Format::Json | Format::Yaml | Format::Csv | Format::Parquet)
    }
}

/// What to do with files of one source whose column sets differ (inferred schemas only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColumnsPolicy {
    /// Fail, listing the columns each file has that others lack.
    #[default]
    Same,
    /// One table with the union of the columns; missing ones are null.
    Union,
}

/// How bare `NaN`, `Infinity` and `-Infinity` tokens are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NonFinite {
    /// As IEEE 754 values (NaN stays NaN, distinct from null).
    #[default]
    Ieee,
    /// As null (counted in the report).
    Null,
}

/// How a CSV file is written (Frictionless CSV Dialect's `delimiter`, `quoteChar` and
/// `commentChar`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// The byte between cells: `b','`, `b'\t'` for tab-separated files.
    pub delimiter: u8,
    /// The byte that quotes a cell (`"` in RFC 4180); `None`: quotes are text, as in
    /// tab-separated files written without quoting (CoNLL, GLUE, `psql -A`).
    pub quote: Option<u8>,
    /// The delimiter was named by the source: a header of one column that holds tabs or
    /// semicolons is then read as it is, not refused as a file of another delimiter.
    pub named: bool,
    /// The byte that starts a comment line (`#`): a line that starts with it, outside a quoted
    /// cell, is no record and runs to the next LF. `None`: no line is a comment.
    pub comment: Option<u8>,
    /// The 1-based line the header is on: the lines above it are skipped, whatever they hold
    /// (Frictionless `headerRows`, its first).
    pub header_row: u64,
}

impl Default for Dialect {
    /// RFC 4180: commas, and cells quoted with `"`.
    fn default() -> Dialect {
        Dialect { delimiter: b',', quote: Some(b'"'), named: false, comment: None, header_row: 1 }
    }
}

/// `[[source]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceDef {
    /// SQL table name of the source (`[a-z_][a-z0-9_]*`).
    pub name: String,
    /// One glob or a list of globs, relative to the pipeline folder; `{name}` segments capture
    /// a path part into a column of that name.
    pub path: PathPatterns,
    /// Input format.
    pub format: Format,
    /// JSON pointer of the records in a `json` document (default: the root).
    #[serde(default)]
    pub record_path: Option<String>,
    /// The character between the cells of a `csv` source (Frictionless CSV Dialect's
    /// `delimiter`): `","` unless set; `"\t"` reads tab-separated files (`.tsv`). One ASCII
    /// character, neither a quote nor a line end.
    #[serde(default)]
    pub delimiter: Option<String>,
    /// The character that quotes a cell of a `csv` source (Frictionless CSV Dialect's
    /// `quoteChar`): `"\""` unless set; `""` reads quotes as text, for tab-separated files
    /// written without quoting (a lone `"` would open a cell that runs to the next one).
    #[serde(default)]
    pub quote: Option<String>,
    /// The character that starts a comment line of a `csv` source (Frictionless CSV Dialect's
    /// `commentChar`): unset, no line is a comment; `"#"` skips the lines that start with `#`
    /// (above the header or among the rows; a build names those among the rows). One ASCII
    /// character other than a line end, the delimiter and the quote.
    #[serde(default)]
    pub comment: Option<String>,
    /// The line of a `csv` source's header, from 1 (Frictionless `headerRows`, its first): the
    /// lines above it are skipped whatever they hold, as notes above a header that starts with
    /// `#` too (`#,model,acc`), which `comment` would skip with them. 1 unless set.
    #[serde(default)]
    pub header_row: Option<u64>,
    /// Declared Table Schema (path relative to the pipeline).
    #[serde(default)]
    pub schema: Option<String>,
    /// Policy for files with different column sets.
    #[serde(default)]
    pub columns: ColumnsPolicy,
    /// Reading of bare non-finite tokens.
    #[serde(default)]
    pub nonfinite: NonFinite,
    /// Read the strings `NaN`, `Infinity`, `-Infinity` (any case) as numbers in number columns.
    #[serde(default)]
    pub coerce_nonfinite_strings: bool,
    /// Read numeric strings (`"12"`) as numbers in declared number/integer columns.
    #[serde(default)]
    pub coerce_numeric_strings: bool,
    /// IANA zone for datetimes without an offset (`UTC`, `Asia/Tokyo`); otherwise they are
    /// violations.
    #[serde(default)]
    pub assume_timezone: Option<String>,
    /// Type overrides for single columns.
    #[serde(default, rename = "field")]
    pub fields: Vec<FieldDescriptor>,
    /// `wide` (one column per key) or `long` (one row per key: the `id_columns`, `key`,
    /// `value`), for wide metric logs beyond the dataset viewer's 1,000-column limit.
    #[serde(default)]
    pub layout: Layout,
    /// Columns kept on every row in the long layout (`["_step"]`).
    #[serde(default)]
    pub id_columns: Vec<String>,
    /// Keep generation texts (evaluation formats); off by default, texts dominate the bytes.
    #[serde(default)]
    pub keep_text: bool,
    /// What a file's last record cut short does to the build (rule `truncated`: a JSON Lines
    /// line without its end, a TensorBoard record without its bytes; the writer was stopped).
    #[serde(default)]
    pub on_truncated: OnTruncated,
    /// What a bad record of this source does to the build (a line that is not JSON, a value
    /// its column cannot hold): `None` follows the build's `--on-invalid`; `reject` sets this
    /// source's bad records aside in `rejects/<source>.jsonl` whatever the build's choice, and
    /// `fail` makes them violations. The table's own rules follow the build's choice.
    #[serde(default)]
    pub on_invalid: Option<crate::core::options::OnInvalid>,
    /// `[source.wandb]`: options of a `format = "wandb"` source (required there).
    #[serde(default)]
    pub wandb: Option<WandbOptions>,
}

impl SourceDef {
    /// The byte between cells of a `csv` source: [`SourceDef::delimiter`]'s, or `,`.
    pub fn delimiter_byte(&self) -> u8 {
        match self.delimiter.as_deref().map(str::as_bytes) {
            Some([b]) => *b,
            _ => b',',
        }
    }

    /// How the files of a `csv` source are written: [`SourceDef::delimiter`],
    /// [`SourceDef::quote`] and [`SourceDef::comment`] (checked when the pipeline is loaded).
    pub fn dialect(&self) -> Dialect {
        let quote = match self.quote.as_deref().map(str::as_bytes) {
            Some([]) => None,
            Some([b]) => Some(*b),
            _ => Some(b'"'),
        };
        let comment = match self.comment.as_deref().map(str::as_bytes) {
            Some([b]) => Some(*b),
            _ => None,
        };
        Dialect {
            delimiter: self.delimiter_byte(),
            quote,
            named: self.delimiter.is_some(),
            comment,
            header_row: self.header_row.unwrap_or(1),
        }
    }

    /// The first option set on this source that its format would not use, as the pipeline
    /// spells it: a `schema`, `[[source.field]]`, `columns`, `layout` or `id_columns` on a
    /// format with fixed columns, and `layout`/`id_columns` on Parquet (read as stored).
    fn ignored_option(&self) -> Option<&'static str> {
        let layout = self.layout != Layout::Wide || !self.id_columns.is_empty();
        if self.format.fixed_columns() {
            if self.schema.is_some() {
                return Some("`schema`");
            }
            if !self.fields.is_empty() {
                return Some("[[source.field]]");
            }
            if self.columns != ColumnsPolicy::Same {
                return Some("`columns`");
            }
        }
        ((self.format.fixed_columns() || self.format == Format::Parquet) && layout)
            .then_some(if self.layout != Layout::Wide { "`layout`" } else { "`id_columns`" })
    }
}

/// Table shape of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// One column per key.
    #[default]
    Wide,
    /// One row per (record, key): id columns, `key` (Utf8), `value` (Float64).
    Long,
}

/// One or several path globs.
#[derive(Debug, Clone)]
pub enum PathPatterns {
    /// A single glob.
    One(String),
    /// Several globs; files matched by more than one are read once.
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for PathPatterns {
    /// A string or a list of strings; anything else is refused with what is expected (serde's
    /// own message names the enum, not the setting).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            One(String),
            Many(Vec<String>),
        }
        match Written::deserialize(d) {
            Ok(Written::One(s)) => Ok(PathPatterns::One(s)),
            Ok(Written::Many(v)) => Ok(PathPatterns::Many(v)),
            Err(_) => Err(serde::de::Error::custom("expected a glob (\"raw/*.jsonl\") or a list of globs")),
        }
    }
}

impl PathPatterns {
    /// The globs as a list.
    pub fn list(&self) -> Vec<String> {
        match self {
            PathPatterns::One(s) => vec![s.clone()],
            PathPatterns::Many(v) => v.clone(),
        }
    }
}

/// Policy for rows that share a primary key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DuplicatePolicy {
    /// Every duplicate is a violation naming all the rows involved.
    #[default]
    Error,
    /// Keep the row that comes last in input order (file, then line); the others are rejected.
    KeepLast,
    /// Keep the row that comes first in input order; the others are rejected.
    KeepFirst,
}

impl DuplicatePolicy {
    /// The rule's name in `pipeline.toml` and on the command line (`keep-last`).
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicatePolicy::Error => "error",
            DuplicatePolicy::KeepLast => "keep-last",
            DuplicatePolicy::KeepFirst => "keep-first",
        }
    }
}

/// `[[table]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableDef {
    /// Table (and card config) name (`[a-z][a-z0-9_]*`).
    pub name: String,
    /// Declared Table Schema (path relative to the pipeline); without it the query's result
    /// types are used.
    #[serde(default)]
    pub schema: Option<String>,
    /// SQL file (path relative to the pipeline).
    #[serde(default)]
    pub sql: Option<String>,
    /// Inline SQL (instead of `sql`).
    #[serde(default)]
    pub query: Option<String>,
    /// Rows that share a primary key.
    #[serde(default)]
    pub on_duplicate_key: DuplicatePolicy,
    /// The primary key's first columns that name a step (`["run", "step"]`): with a keep rule,
    /// a raw record's rows of a step are kept or set aside whole, and with `keep-last` a step
    /// logged again keeps the later records alone. Empty: each row is kept or set aside on its
    /// own.
    #[serde(default)]
    pub record_columns: Vec<String>,
    /// The column whose values order the rows of a key for a keep rule (`"timestamp"`), before
    /// their file and line: `keep-last` keeps the row of the greatest value. None: file, then
    /// line.
    #[serde(default)]
    pub order_by: Option<String>,
    /// Card text for this table (default: the schema's description).
    #[serde(default)]
    pub description: Option<String>,
    /// Column whose value names each row's split (files `data/<table>/<split>.parquet`);
    /// without it every row is in split `train`.
    #[serde(default)]
    pub split_column: Option<String>,
    /// The allowed split names, checked before anything is written (names must match
    /// `^\w+(\.\w+)*$`, as the `datasets` library requires).
    #[serde(default)]
    pub splits: Vec<String>,
    /// The table's file formats (`["parquet"]` or `["parquet", "jsonl"]`), overriding the
    /// release's `formats`.
    #[serde(default)]
    pub formats: Option<Vec<String>>,
    /// Columns that should name one row but may repeat (`["model", "task", "n_shot"]`: a table
    /// merged by hand from sources that disagree): every row is kept, and the build and the
    /// card count and name the values that more than one row holds. Empty: not checked.
    #[serde(default)]
    pub report_repeats: Vec<String>,
}

/// The `pipeline.toml` that `path` names (the file, or the one in the folder) and its folder.
///
/// Errors: [`Error::Config`] when there is no such path (naming the pipelines beside it), a
/// folder without `pipeline.toml` (suggesting `runpack init`), or another file.
fn pipeline_file(path: &Path) -> Result<(PathBuf, PathBuf)> {
    let file = if path.is_dir() { path.join("pipeline.toml") } else { path.to_path_buf() };
    if !path.exists() {
        let mut near: Vec<String> = path
            .parent()
            .map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p })
            .and_then(|p| std::fs::read_dir(p).ok())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.') && e.path().join("pipeline.toml").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        near.sort();
        // a few names help; a long list would bury the message
        const SHOWN: usize = 10;
        if near.len() > SHOWN {
            let more = near.len() - SHOWN;
            near.truncate(SHOWN);
            near.push(format!("and {more} more"));
        }
        let hint = if near.is_empty() { String::new() } else { format!(" (pipelines there: {})", near.join(", ")) };
        return Err(Error::config(
            path.display().to_string(),
            format!("no such pipeline folder or pipeline.toml{hint}"),
        ));
    }
    if path.is_dir() && !file.exists() {
        return Err(Error::config(
            path.display().to_string(),
            format!(
                "no pipeline.toml in this folder: a pipeline is a folder holding pipeline.toml, which names its \
                 sources and tables (see docs/pipeline.md); for a folder of raw outputs, `runpack init {}` \
                 writes one",
                path.display()
            ),
        ));
    }
    if path.is_file() && path.extension().is_none_or(|e| e != "toml") {
        return Err(Error::config(
            path.display().to_string(),
            "a pipeline is a pipeline.toml file or the folder holding it; this is another file (raw inputs are \
             named by the sources of a pipeline.toml)",
        ));
    }
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    Ok((file, dir))
}

/// Checks a source's options against its format (record_path, keep_text, coercions, W&B
/// options, layout and id_columns, time zone).
fn check_source_options(s: &SourceDef, at: &dyn Fn(&str) -> String) -> Result<()> {
    if s.record_path.is_some() && !matches!(s.format, Format::Json | Format::Yaml) {
        return Err(Error::config(
            at(&format!("source {}#record_path", s.name)),
            "`record_path` applies to format = \"json\" and \"yaml\" only",
        ));
    }
    if let Some(p) = s.record_path.as_deref().filter(|p| !p.is_empty() && !p.starts_with('/')) {
        return Err(Error::config(
            at(&format!("source {}#record_path", s.name)),
            format!(
                "expected a JSON pointer (RFC 6901) for `record_path`: \"\" for the document's root, or a path \
                 starting with '/' such as {:?}; found {p:?}",
                format!("/{p}")
            ),
        ));
    }
    if let Some(q) = &s.quote {
        if s.format != Format::Csv {
            return Err(Error::config(
                at(&format!("source {}#quote", s.name)),
                "`quote` applies to format = \"csv\" only (the character that quotes a CSV file's cells)",
            ));
        }
        let ok = match q.as_bytes() {
            [] => true,
            [b] => b.is_ascii() && !matches!(b, b'\n' | b'\r') && *b != s.delimiter_byte(),
            _ => false,
        };
        if !ok {
            return Err(Error::config(
                at(&format!("source {}#quote", s.name)),
                format!(
                    "quote = {q:?}: expected one ASCII character other than a line end and the delimiter (\"\\\"\", \
                     the default, or \"'\"), or \"\" for quotes that are text"
                ),
            ));
        }
    }
    if let Some(h) = s.header_row {
        if s.format != Format::Csv {
            return Err(Error::config(
                at(&format!("source {}#header_row", s.name)),
                "`header_row` applies to format = \"csv\" only (the line of a CSV file's header)",
            ));
        }
        if h == 0 {
            return Err(Error::config(
                at(&format!("source {}#header_row", s.name)),
                "header_row = 0: expected the line of the header, from 1",
            ));
        }
    }
    if let Some(c) = &s.comment {
        if s.format != Format::Csv {
            return Err(Error::config(
                at(&format!("source {}#comment", s.name)),
                "`comment` applies to format = \"csv\" only (the character that starts a CSV file's comment lines)",
            ));
        }
        let quote = s.dialect().quote;
        let ok = matches!(c.as_bytes(), [b] if b.is_ascii()
            && !b.is_ascii_whitespace()
            && *b != s.delimiter_byte()
            && Some(*b) != quote);
        if !ok {
            return Err(Error::config(
                at(&format!("source {}#comment", s.name)),
                format!(
                    "comment = {c:?}: expected one ASCII character other than a blank, a line end, the delimiter \
                     and the quote, such as \"#\""
                ),
            ));
        }
    }
    if let Some(d) = &s.delimiter {
        if s.format != Format::Csv {
            return Err(Error::config(
                at(&format!("source {}#delimiter", s.name)),
                "`delimiter` applies to format = \"csv\" only (the character between a CSV file's cells)",
            ));
        }
        if !matches!(d.as_bytes(), [b] if b.is_ascii() && !matches!(b, b'"' | b'\n' | b'\r')) {
            return Err(Error::config(
                at(&format!("source {}#delimiter", s.name)),
                format!(
                    "delimiter = {d:?}: expected one ASCII character other than a quote or a line end, such as \
                     \",\" (the default), \"\\t\" (tab-separated files), \";\" or \"|\""
                ),
            ));
        }
    }
    if s.keep_text
        && !matches!(
            s.format,
            Format::TinkerEvalTrajectories
                | Format::EvalGenerations
                | Format::InspectSamples
                | Format::LmEvalSamples
                | Format::LightevalDetails
                | Format::VerlGenerations
        )
    {
        return Err(Error::config(
            at(&format!("source {}#keep_text", s.name)),
            "`keep_text` applies to format = \"tinker-eval-trajectories\", \"eval-generations\", \
             \"inspect-samples\", \"lm-eval-samples\", \"lighteval-details\" and \"verl-generations\" only (other formats keep every field they read)",
        ));
    }
    // a logged string is kept as text in the long form's value_text, never coerced
    if !s.format.takes_coerce() && (s.coerce_numeric_strings || s.coerce_nonfinite_strings) {
        let key = if s.coerce_numeric_strings { "coerce_numeric_strings" } else { "coerce_nonfinite_strings" };
        return Err(Error::config(
            at(&format!("source {}#{key}", s.name)),
            format!(
                "coerce_numeric_strings and coerce_nonfinite_strings do not apply to format = {:?}: a \
                 string a log holds is kept as text in value_text (turn it into a number in the table's \
                 query, e.g. TRY_CAST(value_text AS DOUBLE))",
                s.format.name()
            ),
        ));
    }
    if let Some(option) = s.ignored_option() {
        let key = option.trim_matches(['`', '[', ']']).trim_start_matches("source.");
        return Err(Error::config(
            at(&format!("source {}#{key}", s.name)),
            format!(
                "{option} does not apply to format = \"{}\": {}",
                s.format.name(),
                if s.format.fixed_columns() {
                    "its columns are fixed by the format (cast or rename them in the table's query)"
                } else {
                    "a Parquet file's rows are read as they are stored"
                }
            ),
        ));
    }
    match (&s.wandb, s.format == Format::Wandb) {
        (None, true) => {
            return Err(Error::config(
                at(&format!("source {}", s.name)),
                "format = \"wandb\" needs [source.wandb] with table = \"runs\", \"history\", \"system\" or \"histograms\"",
            ));
        }
        (Some(_), false) => {
            return Err(Error::config(
                at(&format!("source {}#wandb", s.name)),
                "[source.wandb] applies to format = \"wandb\" only",
            ));
        }
        (Some(o), true) => o.check().map_err(|m| Error::config(at(&format!("source {}#wandb", s.name)), m))?,
        (None, false) => {}
    }
    if s.layout == Layout::Long && s.id_columns.is_empty() {
        return Err(Error::config(
            at(&format!("source {}#layout", s.name)),
            "layout = \"long\" needs id_columns (the keys kept on every row, e.g. [\"_step\"])",
        ));
    }
    if s.layout == Layout::Wide && !s.id_columns.is_empty() {
        return Err(Error::config(
            at(&format!("source {}#id_columns", s.name)),
            "id_columns applies to layout = \"long\" only (a wide source keeps every key as a column)",
        ));
    }
    if let Some(tz) = &s.assume_timezone {
        tz.parse::<chrono_tz::Tz>().map_err(|_| {
            Error::config(
                at(&format!("source {}#assume_timezone", s.name)),
                format!("unknown time zone `{tz}` (use an IANA name such as UTC or Asia/Tokyo)"),
            )
        })?;
    }
    Ok(())
}

/// Why a source's field may not have its `missingValues`: a format whose values are not read
/// from text (Parquet, the fixed formats), or a field inside a list or object. `None` when it
/// may, or has none.
fn field_missing_values(s: &SourceDef, f: &FieldDescriptor) -> Option<String> {
    let nested = |f: &FieldDescriptor| {
        f.items.iter().map(|i| i.as_ref()).chain(f.fields.iter().flatten()).any(|g| g.missing_values.is_some())
    };
    if nested(f) {
        return Some(format!("field `{}`: missingValues applies to a top-level field", f.name));
    }
    (f.missing_values.is_some() && !matches!(s.format, Format::Csv | Format::Jsonl | Format::Json | Format::Yaml)).then(
        || {
            format!(
                "field `{}`: missingValues applies to the fields of a `csv`, `jsonl`, `json` or `yaml` source (format \
                 = {:?} reads its values as stored)",
                f.name,
                s.format.name()
            )
        },
    )
}

/// Checks a source's options against its format and reads the schema it names (its
/// `[[source.field]]` entries replacing or adding fields); `at` places a message in
/// `pipeline.toml`.
fn check_source(s: &SourceDef, dir: &Path, at: &dyn Fn(&str) -> String) -> Result<Option<TableSchema>> {
    check_source_options(s, at)?;
    // a source is typed, not validated: constraints there would never be checked
    let unchecked = |f: &FieldDescriptor| {
        f.has_constraints().then(|| {
            format!(
                "field `{}`: constraints in a source's schema are not checked (it only types the input); \
                 declare them in the schema of a table that reads the source",
                f.name
            )
        })
    };
    let mut field_names = std::collections::BTreeSet::new();
    for (i, f) in s.fields.iter().enumerate() {
        if f.name.trim().is_empty() {
            return Err(Error::config(
                at(&format!("source {}", s.name)),
                format!("[[source.field]] number {} has no name (name = \"<column>\")", i + 1),
            ));
        }
        let place = at(&format!("source {} field {}", s.name, f.name));
        if !field_names.insert(f.name.as_str()) {
            return Err(Error::config(&place, "this column has two [[source.field]] entries; give it one"));
        }
        f.arrow_type().map_err(|m| Error::config(&place, m))?;
        if let Some(m) = unchecked(f).or_else(|| field_missing_values(s, f)) {
            return Err(Error::config(&place, m));
        }
    }
    Ok(match &s.schema {
        Some(p) => {
            let schema = load_schema(dir, p, &at(&format!("source {} schema#schema", s.name)))?;
            if let Some(m) = schema.fields.iter().find_map(|f| unchecked(f).or_else(|| field_missing_values(s, f))) {
                return Err(Error::config(dir.join(p).display().to_string(), m));
            }
            if !schema.primary_key.is_empty() || !schema.foreign_keys.is_empty() {
                return Err(Error::config(
                    dir.join(p).display().to_string(),
                    "primaryKey and foreignKeys in a source's schema are not checked (it only types the \
                     input); declare them in the schema of a table that reads the source",
                ));
            }
            if schema.missing_values.is_some() && s.format != Format::Csv {
                return Err(Error::config(
                    dir.join(p).display().to_string(),
                    "missingValues applies to the text cells of a `csv` source; this source's values \
                     carry their own nulls",
                ));
            }
            // a [[source.field]] beside the schema replaces its field of that name, or
            // adds one (the schema is read as written otherwise)
            let mut schema = schema;
            for f in &s.fields {
                match schema.fields.iter_mut().find(|g| g.name == f.name) {
                    Some(g) => *g = f.clone(),
                    None => schema.fields.push(f.clone()),
                }
            }
            Some(schema)
        }
        None => None,
    })
}

/// Checks a table's split names and split column, and reads the schema it names.
fn check_table(t: &TableDef, dir: &Path, at: &dyn Fn(&str) -> String) -> Result<Option<TableSchema>> {
    let bad: Vec<String> = t
        .splits
        .iter()
        .filter(|s| !crate::core::names::valid_split_name(s))
        .map(|s| {
            let why = if s.trim() != s.as_str() {
                "has leading or trailing whitespace (names are never trimmed)".to_string()
            } else if s == "all" {
                "is the `datasets` library's name for every split together".to_string()
            } else {
                "is not made of word characters (letters, digits, _) in parts separated by single dots".to_string()
            };
            format!(
                "split name {s:?} {why}; the Hub accepts it but `datasets` cannot load it; use {:?}",
                crate::core::names::suggest_split_name(s)
            )
        })
        .collect();
    if !bad.is_empty() {
        return Err(Error::config(at(&format!("table {}", t.name)), bad.join("\n")));
    }
    if let Some(m) = t.splits.iter().find_map(|s| crate::core::names::split_file_problem(s)) {
        return Err(Error::config(at(&format!("table {}", t.name)), m));
    }
    // the split files are named after the splits: names equal but for case would be
    // one file on a case-insensitive filesystem
    let mut lower = std::collections::BTreeMap::new();
    for sp in &t.splits {
        if let Some(other) = lower.insert(sp.to_lowercase(), sp) {
            return Err(Error::config(
                at(&format!("table {}", t.name)),
                format!(
                    "splits {other:?} and {sp:?} differ only in case (or are the same); give each split its own name"
                ),
            ));
        }
    }
    if !t.splits.is_empty() && t.split_column.is_none() {
        return Err(Error::config(at(&format!("table {}", t.name)), "`splits` needs `split_column`"));
    }
    let schema = match &t.schema {
        Some(p) => {
            let schema = load_schema(dir, p, &at(&format!("table {} schema", t.name)))?;
            if schema.missing_values.is_some() || schema.fields.iter().any(|f| f.missing_values.is_some()) {
                return Err(Error::config(
                    dir.join(p).display().to_string(),
                    "missingValues applies to a source's text, not to a table (its values come typed from \
                     SQL); declare it in the source's schema or [[source.field]]",
                ));
            }
            Some(schema)
        }
        None => None,
    };
    // with a declared schema, a split column that is not one of its fields is known now,
    // before any source is read
    if let (Some(c), Some(Some(schema))) = (&t.split_column, Some(&schema))
        && schema.field(c).is_none()
    {
        let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
        return Err(Error::config(
            at(&format!("table {}", t.name)),
            format!("split_column `{c}` is not a field of the table's schema (its fields: {})", names.join(", ")),
        ));
    }
    Ok(schema)
}

impl PipelineSpec {
    /// Loads `path` (a `pipeline.toml`, or a folder holding one) and every schema it names.
    ///
    /// Errors: [`Error::Io`] for unreadable files; [`Error::Config`] naming file, line, column
    /// and key for TOML errors, and naming the entry for bad names, unknown references,
    /// missing SQL or schema files.
    pub fn load(path: &Path) -> Result<PipelineSpec> {
        let (file, dir) = pipeline_file(path)?;
        let text = read_definition(&file)?;
        let def: PipelineDef = toml::from_str(&text).map_err(|e| {
            let loc = match e.span() {
                Some(span) => {
                    let (line, col) = line_col(&text, span.start);
                    format!("{}:{line}:{col}", file.display())
                }
                None => file.display().to_string(),
            };
            let mut message = e.message().trim().to_string();
            // the names other tools give tab-separated files and their dialect options (any case)
            let lower = message.to_ascii_lowercase();
            let hints: [(&str, &[&str], &str); 3] = [
                (
                    "unknown variant",
                    &["tsv", "tab", "tabular"],
                    "a tab-separated file is read by format = \"csv\" with delimiter = \"\\t\" on the source",
                ),
                (
                    "unknown field",
                    &["sep", "separator", "delim", "field_separator"],
                    "the character between a CSV file's cells is `delimiter` (\"\\t\" for tabs)",
                ),
                (
                    "unknown field",
                    &["quotechar", "quote_char"],
                    "the character that quotes a CSV file's cells is `quote` (\"\" for none)",
                ),
            ];
            for (what, names, hint) in hints {
                if names.iter().any(|n| lower.starts_with(&format!("{what} `{n}`,"))) {
                    message.push_str(&format!("\nhint: {hint}"));
                }
            }
            // what the line the error points at holds: a table header of one pair of brackets
            // where a list of entries is read, or a key whose values are words given another type
            let line = e
                .span()
                .and_then(|span| {
                    let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
                    text[start..].lines().next().map(str::trim)
                })
                .unwrap_or_default();
            let header = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')).filter(|h| !h.starts_with('['));
            if lower.starts_with("invalid type: map, expected a sequence")
                && let Some(h) = header.filter(|h| ["source", "table", "view", "left_out", "source.field"].contains(h))
            {
                message.push_str(&format!("\nhint: write [[{h}]], with two brackets: each one is an entry of a list"));
            }
            let words: [(&str, &str); 7] = [
                ("nonfinite", "\"ieee\" or \"null\""),
                ("on_invalid", "\"fail\" or \"reject\""),
                ("columns", "\"same\" or \"union\""),
                ("layout", "\"wide\" or \"long\""),
                ("on_truncated", "\"error\" or \"reject\""),
                ("on_duplicate_key", "\"error\", \"keep-last\" or \"keep-first\""),
                ("on_sampled", "\"error\" or \"accept\""),
            ];
            let key = line.split('=').next().map(str::trim).unwrap_or_default();
            if lower.starts_with("wanted string or table")
                && let Some((_, values)) = words.iter().find(|(k, _)| *k == key)
            {
                message.push_str(&format!("\nhint: {key} is one of {values}, in quotes"));
            }
            Error::config(loc, message)
        })?;
        // parsed again with the spans of its keys, for the lines of messages
        let spans = toml::de::DeTable::parse(&text).ok();
        let at = |what: &str| place(&file, spans.as_ref().map(|d| (text.as_str(), d.get_ref())), what);

        check_name(&def.name, "release name", &file, r"^[a-z0-9][a-z0-9._-]*$")?;
        let mut names = std::collections::BTreeSet::new();
        let mut source_schemas = Vec::new();
        for s in &def.sources {
            check_name(&s.name, "source name", &file, r"^[a-z_][a-z0-9_]*$")?;
            if !names.insert(s.name.clone()) {
                return Err(twice(&file, &text, &s.name));
            }
            source_schemas.push(check_source(s, &dir, &at)?);
        }
        for v in &def.views {
            check_name(&v.name, "view name", &file, r"^[a-z_][a-z0-9_]*$")?;
            if !names.insert(v.name.clone()) {
                return Err(twice(&file, &text, &v.name));
            }
            check_sql_choice(&dir, &v.sql, &v.query, &at(&format!("view {}", v.name)))?;
        }
        let mut table_schemas = Vec::new();
        for t in &def.tables {
            check_name(&t.name, "table name", &file, r"^[a-z][a-z0-9_]*$")?;
            if !names.insert(t.name.clone()) {
                return Err(twice(&file, &text, &t.name));
            }
            check_sql_choice(&dir, &t.sql, &t.query, &at(&format!("table {}", t.name)))?;
            table_schemas.push(check_table(t, &dir, &at)?);
        }
        if def.tables.is_empty() {
            return Err(Error::config(file.display().to_string(), "no [[table]] is defined"));
        }
        if let Some(f) = &def.formats {
            check_formats(f).map_err(|m| Error::config(at("formats"), m))?;
        }
        for t in &def.tables {
            if let Some(f) = &t.formats {
                check_formats(f).map_err(|m| Error::config(at(&format!("table {} formats", t.name)), m))?;
            }
        }
        check_references(&dir, &def, &table_schemas)?;
        // a file a table leaves out is one of the pipeline's: an entry naming none would put
        // a file that is not there in every build's notes and in the card
        for l in &def.left_out {
            // named as a source's path is: inside the pipeline folder
            if l.file.starts_with('/') || l.file.split(['/', '\\']).any(|s| s == "..") {
                return Err(Error::config(
                    at(&format!("left_out {}#file", l.file)),
                    format!(
                        "[[left_out]] names file {:?}: a file left out is one of the pipeline's folder, named as a source's path names it",
                        l.file
                    ),
                ));
            }
            if !dir.join(&l.file).is_file() {
                return Err(Error::config(
                    at(&format!("left_out {}#file", l.file)),
                    format!(
                        "[[left_out]] names file {:?}, which is not in the pipeline's folder: remove the entry (it \
                         says why table {} leaves the file out), or restore the file",
                        l.file, l.table
                    ),
                ));
            }
        }
        if let Some(d) = &def.card.default_table
            && !def.tables.iter().any(|t| &t.name == d)
        {
            let names: Vec<&str> = def.tables.iter().map(|t| t.name.as_str()).collect();
            return Err(Error::config(
                at("card.default_table"),
                format!("no table named `{d}` (the tables: {})", names.join(", ")),
            ));
        }
        Ok(PipelineSpec {
            dir,
            file,
            text,
            def,
            table_schemas,
            source_schemas,
            untyped_as_text: false,
            data_provenance: false,
        })
    }

    /// The 1-based line of pipeline.toml where the SQL of the inline `query` of the
    /// `[[table]]` or `[[view]]` (`section`) named `name` starts (the line after `query = """`,
    /// whose line break is not part of the string), so that its SQL line n is the file's line
    /// `start + n - 1`; `None` when it cannot be told (the file changed, or the query is not
    /// written as `query = …` in the section).
    pub fn inline_query_line(&self, section: &str, name: &str) -> Option<usize> {
        self.query_line(section, "name", name)
    }

    /// The 1-based line of pipeline.toml where the `query` of the `[[card.section]]` titled
    /// `title` starts, for messages (see [`PipelineSpec::inline_query_line`]).
    pub fn card_section_query_line(&self, title: &str) -> Option<usize> {
        self.query_line("card.section", "title", title)
    }

    /// Where `what` lies in pipeline.toml, for a message: `pipeline.toml:12 (source raw)`.
    /// `what` names an entry (`source raw`, `table t`), a source's field (`source raw field
    /// step`), an entry's key (`table t formats`) or a top-level key (`card.default_table`);
    /// after a `#`, the key the message is about (`source raw#path`), not shown. The text is
    /// the one loaded; the file alone is named where it holds no such place.
    pub fn place(&self, what: &str) -> String {
        let spans = toml::de::DeTable::parse(&self.text).ok();
        place(&self.file, spans.as_ref().map(|d| (self.text.as_str(), d.get_ref())), what)
    }

    fn query_line(&self, section: &str, key: &str, value: &str) -> Option<usize> {
        let text = &self.text;
        let header = format!("[[{section}]]");
        let named = regex::Regex::new(&format!(r#"^\s*{key}\s*=\s*["']{}["']"#, regex::escape(value))).ok()?;
        let query = regex::Regex::new(r"^\s*query\s*=").ok()?;
        let (mut inside, mut is_it, mut at) = (false, false, None);
        for (i, line) in text.lines().enumerate() {
            // a header may end with a comment: `[[table]]  # …`
            let t = line.split('#').next().unwrap_or_default().trim();
            if t.starts_with('[') && t.ends_with(']') && !t.contains('=') {
                if inside && is_it && at.is_some() {
                    return at;
                }
                (inside, is_it, at) = (t == header, false, None);
                continue;
            }
            if inside {
                is_it |= named.is_match(line);
                if at.is_none() && query.is_match(line) {
                    // a multi-line string's first line break is not part of it (TOML 1.0):
                    // `query = """` puts the SQL's first line on the next line of the file
                    // (only a line break right after the delimiter: blanks before it are text)
                    let value =
                        line.split_once('=').map(|(_, v)| v.trim_start().trim_end_matches('\r')).unwrap_or_default();
                    at = Some(if value == "\"\"\"" || value == "'''" { i + 2 } else { i + 1 });
                }
            }
        }
        if inside && is_it { at } else { None }
    }

    /// Whether table `i` gets JSON Lines copies (`jsonl/`) beside its Parquet files: its own
    /// `formats`, else the release's, else not.
    pub fn jsonl_copies(&self, i: usize) -> bool {
        let t = &self.def.tables[i];
        t.formats.as_ref().or(self.def.formats.as_ref()).is_some_and(|f| f.iter().any(|x| x == "jsonl"))
    }

    /// The SQL text of table `i`.
    pub fn table_sql(&self, i: usize) -> Result<String> {
        let t = &self.def.tables[i];
        match (&t.sql, &t.query) {
            (Some(p), _) => read_definition(&self.dir.join(p)),
            (None, Some(q)) => Ok(q.clone()),
            (None, None) => unreachable!("checked at load"),
        }
    }

    /// The SQL text of view `i`.
    pub fn view_sql(&self, i: usize) -> Result<String> {
        let v = &self.def.views[i];
        match (&v.sql, &v.query) {
            (Some(p), _) => read_definition(&self.dir.join(p)),
            (None, Some(q)) => Ok(q.clone()),
            (None, None) => unreachable!("checked at load"),
        }
    }

    /// Every file that defines the pipeline (TOML, SQL, schemas, card metadata), as paths
    /// relative to the pipeline folder, sorted.
    pub fn definition_files(&self) -> Vec<String> {
        let mut out = vec![self.file.file_name().unwrap().to_string_lossy().to_string()];
        for s in &self.def.sources {
            out.extend(s.schema.clone());
        }
        for v in &self.def.views {
            out.extend(v.sql.clone());
        }
        for t in &self.def.tables {
            out.extend(t.schema.clone());
            out.extend(t.sql.clone());
        }
        out.extend(self.def.card.metadata.clone());
        out.sort();
        out.dedup();
        out
    }
}

fn check_sql_choice(dir: &Path, sql: &Option<String>, query: &Option<String>, at: &str) -> Result<()> {
    match (sql, query) {
        (Some(_), Some(_)) => Err(Error::config(at, "give either `sql` (a file) or `query` (inline SQL), not both")),
        (None, None) => Err(Error::config(at, "needs `sql` (a file) or `query` (inline SQL)")),
        (Some(p), None) if dir.join(p).is_dir() => {
            Err(Error::config(at, format!("SQL file {} is a folder, not a file", dir.join(p).display())))
        }
        (Some(p), None) if !dir.join(p).is_file() => {
            Err(Error::config(at, format!("SQL file {} not found", dir.join(p).display())))
        }
        _ => Ok(()),
    }
}

/// The error for `name` given to two sources, views or tables of `file` (text `text`),
/// naming the lines that set it (`name = "…"`).
/// The file formats a release writes: Parquet always, JSON Lines copies on request.
pub const FORMATS: [&str; 2] = ["parquet", "jsonl"];

/// Checks a `formats` list: known names, each once, `parquet` among them.
fn check_formats(formats: &[String]) -> std::result::Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for f in formats {
        if !FORMATS.contains(&f.as_str()) {
            return Err(format!(
                "unknown format {f:?}: expected \"parquet\" and, for JSON Lines copies, \"jsonl\" \
                 (formats = [\"parquet\", \"jsonl\"])"
            ));
        }
        if !seen.insert(f.as_str()) {
            return Err(format!("{f:?} is listed twice; list each format once"));
        }
    }
    if !seen.contains("parquet") {
        return Err(format!(
            "expected \"parquet\" in the list, found [{}]: every table is written as Parquet (the Hub and \
             `datasets` read it); JSON Lines copies come beside it (formats = [\"parquet\", \"jsonl\"])",
            formats.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(())
}

/// Where `what` lies in the pipeline file `file` (`doc`, as the TOML parser read it), for a message:
/// `pipeline.toml:12 (source raw)`. `what` names an entry (`source raw`, `table t`,
/// `view v`, a `[[left_out]]` by its file: `left_out raw/a.jsonl`), a field of a source
/// (`source raw field step`), a key of an entry (`table t formats`) or a top-level key
/// (`formats`, `card.default_table`); after a `#`, the
/// entry's key the message is about (`source raw#quote`), not shown. The line is the key's,
/// else the entry's `name`, from the TOML parser's spans; the file alone where none is found.
fn place(file: &Path, doc: Option<(&str, &toml::de::DeTable)>, what: &str) -> String {
    let (shown, key) = match what.split_once('#') {
        Some((shown, key)) => (shown, Some(key)),
        None => (what, None),
    };
    match doc.and_then(|(text, doc)| place_line(text, doc, shown, key)) {
        Some(line) => format!("{}:{line} ({shown})", file.display()),
        None => format!("{} ({shown})", file.display()),
    }
}

/// The 1-based line in `text` of what [`place`] is given, or `None`.
fn place_line(text: &str, doc: &toml::de::DeTable, what: &str, key: Option<&str>) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    type Found<'a, 'i> = (std::ops::Range<usize>, &'a DeValue<'i>);
    fn get<'a, 'i>(t: &'a DeTable<'i>, k: &str) -> Option<Found<'a, 'i>> {
        t.iter().find(|(name, _)| name.get_ref().as_ref() == k).map(|(name, v)| (name.span(), v.get_ref()))
    }
    // the table of the array `array` whose `name` is `name`
    fn named<'a, 'i>(t: &'a DeTable<'i>, array: &str, name: &str) -> Option<&'a DeTable<'i>> {
        // entries are named by `name`; a `[[left_out]]` entry by its `file`
        let by = if array == "left_out" { "file" } else { "name" };
        let (_, DeValue::Array(entries)) = get(t, array)? else { return None };
        entries.iter().find_map(|e| match e.get_ref() {
            DeValue::Table(e) if get(e, by).and_then(|(_, v)| v.as_str()) == Some(name) => Some(e),
            _ => None,
        })
    }
    if let Some(file) = what.strip_prefix("left_out ") {
        let entry = named(doc, "left_out", file)?;
        let span = key.and_then(|k| get(entry, k)).or_else(|| get(entry, "file"))?.0;
        return Some(text[..span.start].matches('\n').count() + 1);
    }
    let words: Vec<&str> = what.split(' ').collect();
    let span = match words.as_slice() {
        [kind @ ("source" | "table" | "view"), name, rest @ ..] => {
            let entry = named(doc, kind, name)?;
            let inner = match rest {
                ["field", field] => named(entry, "field", field).and_then(|f| get(f, "name")),
                [k] => get(entry, k),
                _ => None,
            };
            key.and_then(|k| get(entry, k)).or(inner).or_else(|| get(entry, "name"))?.0
        }
        [top] => {
            let mut parts = top.split('.');
            let mut found = get(doc, parts.next()?)?;
            for part in parts {
                let DeValue::Table(t) = found.1 else { break };
                match get(t, part) {
                    Some(f) => found = f,
                    None => break,
                }
            }
            found.0
        }
        _ => return None,
    };
    Some(text[..span.start].matches('\n').count() + 1)
}

fn twice(file: &Path, text: &str, name: &str) -> Error {
    let pattern = regex::Regex::new(&format!(r#"^\s*name\s*=\s*["']{}["']\s*(#.*)?$"#, regex::escape(name)))
        .expect("escaped name");
    let lines: Vec<String> =
        text.lines().enumerate().filter(|(_, l)| pattern.is_match(l)).map(|(i, _)| (i + 1).to_string()).collect();
    let location = match lines.first() {
        Some(first) => format!("{}:{first}", file.display()),
        None => file.display().to_string(),
    };
    let places = if lines.len() > 1 { format!(" (lines {})", lines.join(", ")) } else { String::new() };
    Error::config(
        location,
        format!("`{name}` names more than one source, view or table{places}; each needs its own name"),
    )
}

/// Loads the Table Schema at `rel` (relative to the pipeline folder `dir`); a file that cannot
/// be read is said together with `who` (the pipeline.toml entry that names it).
///
/// Errors: [`Error::Config`] at `who` when the file cannot be read, and those of
/// [`TableSchema::load`] otherwise.
fn load_schema(dir: &Path, rel: &str, who: &str) -> Result<TableSchema> {
    let path = dir.join(rel);
    TableSchema::load(&path).map_err(|e| match e {
        Error::Io { source, .. } => {
            Error::config(who, format!("schema {:?} cannot be read: {source}", path.display().to_string()))
        }
        other => other,
    })
}

/// Longest name of a source, view or table, in bytes (see `check_name`).
pub const MAX_NAME_BYTES: usize = 200;

fn check_name(name: &str, what: &str, file: &Path, pattern: &str) -> Result<()> {
    let re = regex::Regex::new(pattern).expect("static pattern");
    // files are named after tables and sources (`data/<name>-00000-of-00002.parquet`, a
    // staging file per source), and a file name holds 255 bytes
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::config(
            file.display().to_string(),
            format!("{what} of {} bytes (at most {MAX_NAME_BYTES}: files are named after it)", name.len()),
        ));
    }
    if re.is_match(name) && !name.ends_with('\n') {
        Ok(())
    } else {
        Err(Error::config(file.display().to_string(), format!("{what} {name:?} must match {pattern}")))
    }
}

/// The text of a file that defines the pipeline (pipeline.toml, SQL, a schema): UTF-8, with a
/// leading byte order mark left out (RFC 8259 §8.1 lets a reader ignore it; editors on
/// Windows write one).
///
/// Errors: [`Error::Io`] when it cannot be read, [`Error::Config`] at the line and column of
/// the first byte that is not UTF-8.
pub fn read_definition(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => {
            let good = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default();
            let (line, col) = line_col(good, good.len());
            Err(Error::config(
                format!("{}:{line}:{col}", path.display()),
                format!("byte 0x{:02x} is not UTF-8 text (save the file as UTF-8)", bytes[e.valid_up_to()]),
            ))
        }
    }
}

/// 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

/// Checks that each foreign key of a declared table schema names a table of the pipeline and,
/// when that table's schema is declared too, columns it has.
///
/// Errors: [`Error::Config`] at the schema file and the JSON pointer of the reference
/// (`steps.json:/foreignKeys/0/reference/fields/0`).
fn check_references(dir: &Path, def: &PipelineDef, schemas: &[Option<TableSchema>]) -> Result<()> {
    for (t, schema) in def.tables.iter().zip(schemas) {
        let (Some(schema), Some(path)) = (schema, &t.schema) else { continue };
        for (k, fk) in schema.foreign_keys.iter().enumerate() {
            // (a reference to the table itself, `"resource": ""`, is refused with the schema)
            let target = fk.reference.resource.as_str();
            let at = |pointer: String| format!("{}:/foreignKeys/{k}/reference/{pointer}", dir.join(path).display());
            let Some(j) = def.tables.iter().position(|o| o.name == target) else {
                let names: Vec<&str> = def.tables.iter().map(|o| o.name.as_str()).collect();
                return Err(Error::config(
                    at("resource".into()),
                    format!("no table named `{target}` (the tables: {})", names.join(", ")),
                ));
            };
            let Some(referenced) = &schemas[j] else { continue };
            for (n, field) in fk.reference.fields.iter().enumerate() {
                if !referenced.fields.iter().any(|f| &f.name == field) {
                    let names: Vec<&str> = referenced.fields.iter().map(|f| f.name.as_str()).collect();
                    return Err(Error::config(
                        at(format!("fields/{n}")),
                        format!("table `{target}` has no column `{field}` (its columns: {})", names.join(", ")),
                    ));
                }
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ `[source.wandb]`

/// `[source.wandb]`: options of a `format = "wandb"` source.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct WandbOptions {
    /// The standard table the source yields.
    pub table: WandbTable,
    /// Name of the path capture holding the run id of history files that do not carry one
    /// (default: a `run_id`/`id` column, else the file name when it is a run id).
    #[serde(default)]
    pub run_capture: Option<String>,
    /// What a history export that looks sampled does to the build.
    #[serde(default)]
    pub on_sampled: OnSampled,
    /// Keys of a run's metadata (`wandb-metadata.json`, or its log's environment record)
    /// replaced by `"REDACTED"` at any depth (default: `["email", "username", "host", "args"]`:
    /// who ran it, where, and a command line that may hold a token).
    #[serde(default = "default_redact")]
    pub redact: Vec<String>,
    /// Entity for exports that do not name one.
    #[serde(default)]
    pub entity: Option<String>,
    /// Project for exports that do not name one.
    #[serde(default)]
    pub project: Option<String>,
    /// Extra `runs` columns taken from the config or summary.
    #[serde(default, rename = "column")]
    pub columns: Vec<ExtraColumn>,
}

fn default_redact() -> Vec<String> {
    ["email", "username", "host", "args"].into_iter().map(String::from).collect()
}

/// `[[source.wandb.column]]`: one scalar of the config or summary as its own `runs` column.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraColumn {
    /// Column name (`[a-z_][a-z0-9_]*`).
    pub name: String,
    /// `config.<key>` or `summary.<key>` (that object, then the export's unassigned columns,
    /// for exports that do not tell config from summary), or a bare key (config, then summary,
    /// then the unassigned columns). A key is looked up literally first, then as a dotted path.
    pub from: String,
    /// Table Schema type: `number`, `integer`, `string`, `boolean` or `any` (JSON text).
    #[serde(rename = "type", default = "default_any")]
    pub kind: String,
}

fn default_any() -> String {
    "any".into()
}

/// The standard tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WandbTable {
    /// One row per run.
    Runs,
    /// One row per (run, step, metric).
    History,
    /// One row per (run, timestamp, system metric).
    System,
    /// One row per histogram value.
    Histograms,
}

/// Policy for history exports that look sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnSampled {
    /// A violation: the build fails.
    #[default]
    Error,
    /// A warning ("sampled export", shown in the card); rows get `sampled = true`.
    Accept,
}

/// Policy for a file's last record cut short (`on_truncated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnTruncated {
    /// A violation: the build fails.
    #[default]
    Error,
    /// The record is set aside in `rejects/<source>.jsonl` (counted in the card) with a
    /// warning that names it; the file's other records are read.
    Reject,
}

/// What a column of a W&B standard table holds (the W&B reader converts to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WandbColumn {
    /// UTF-8 text.
    Text,
    /// A 64-bit integer.
    Integer,
    /// A 64-bit float (NaN and infinities kept).
    Number,
    /// A boolean.
    Boolean,
    /// A timestamp, microseconds UTC.
    Timestamp,
    /// JSON text of any value.
    Json,
    /// JSON text of an object.
    JsonObject,
    /// A list of texts.
    TextList,
    /// A list of numbers.
    NumberList,
}

impl WandbTable {
    /// The table's fixed columns, in order ([`crate::stages::ingest::wandb::columns`] says
    /// what each holds); `runs` then gets the `[[source.wandb.column]]` columns.
    pub fn columns(self) -> Vec<(&'static str, WandbColumn)> {
        match self {
            WandbTable::Runs => vec![
                ("entity", WandbColumn::Text),
                ("project", WandbColumn::Text),
                ("run_id", WandbColumn::Text),
                ("name", WandbColumn::Text),
                ("state", WandbColumn::Text),
                ("group", WandbColumn::Text),
                ("job_type", WandbColumn::Text),
                ("tags", WandbColumn::TextList),
                ("notes", WandbColumn::Text),
                ("created_at", WandbColumn::Timestamp),
                ("runtime_s", WandbColumn::Number),
                ("last_step", WandbColumn::Integer),
                ("history_rows", WandbColumn::Integer),
                ("url", WandbColumn::Text),
                // JSON text written by the conversion, which counts the non-finite numbers inside
                ("config", WandbColumn::JsonObject),
                ("config_raw", WandbColumn::Text),
                ("summary", WandbColumn::JsonObject),
                ("fields", WandbColumn::JsonObject),
                ("metadata", WandbColumn::Json),
                ("source", WandbColumn::Text),
                ("source_files", WandbColumn::TextList),
            ],
            WandbTable::History => vec![
                ("run_id", WandbColumn::Text),
                ("run_name", WandbColumn::Text),
                ("step", WandbColumn::Integer),
                ("timestamp", WandbColumn::Number),
                ("runtime_s", WandbColumn::Number),
                ("metric", WandbColumn::Text),
                ("value", WandbColumn::Number),
                ("value_text", WandbColumn::Json),
                ("value_min", WandbColumn::Number),
                ("value_max", WandbColumn::Number),
                ("x_axis", WandbColumn::Text),
                ("x", WandbColumn::Number),
                ("sampled", WandbColumn::Boolean),
            ],
            WandbTable::System => vec![
                ("run_id", WandbColumn::Text),
                ("timestamp", WandbColumn::Number),
                ("runtime_s", WandbColumn::Number),
                ("metric", WandbColumn::Text),
                ("value", WandbColumn::Number),
                ("value_text", WandbColumn::Json),
            ],
            WandbTable::Histograms => vec![
                ("run_id", WandbColumn::Text),
                ("key", WandbColumn::Text),
                ("step", WandbColumn::Integer),
                ("origin", WandbColumn::Text),
                ("bin_edges", WandbColumn::NumberList),
                ("counts", WandbColumn::NumberList),
            ],
        }
    }
}

impl WandbOptions {
    /// Checks the options (when the pipeline is loaded).
    ///
    /// Errors: a message naming the bad option.
    pub fn check(&self) -> std::result::Result<(), String> {
        let name_ok = regex::Regex::new(r"^[a-z_][a-z0-9_]*$").expect("static pattern");
        let fixed = self.table.columns();
        for c in &self.columns {
            if self.table != WandbTable::Runs {
                return Err("[[source.wandb.column]] applies to table = \"runs\" only".into());
            }
            if !name_ok.is_match(&c.name) {
                return Err(format!("column name {:?} must match [a-z_][a-z0-9_]*", c.name));
            }
            if fixed.iter().any(|(n, _)| *n == c.name) || self.columns.iter().filter(|x| x.name == c.name).count() > 1 {
                return Err(format!("column name {:?} is used twice", c.name));
            }
            if !["number", "integer", "string", "boolean", "any"].contains(&c.kind.as_str()) {
                return Err(format!(
                    "column {}: type {:?} is not one of number, integer, string, boolean, any",
                    c.name, c.kind
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_in_the_pipeline_file_names_the_line_of_its_key() {
        let text = "name = \"d\"\n\n[[source]]\nname = \"a\"\nformat = \"csv\"\nquote = \"ab\"\n\
                    [[source.field]]\nname = \"step\"\n[[table]]\nname = \"t\"\n[card]\ndefault_table = \"x\"\n";
        let doc = toml::de::DeTable::parse(text).unwrap();
        let at = |what: &str| place(Path::new("p.toml"), Some((text, doc.get_ref())), what);
        assert_eq!(at("source a#quote"), "p.toml:6 (source a)");
        // a key the entry does not set: the entry's name
        assert_eq!(at("source a#delimiter"), "p.toml:4 (source a)");
        assert_eq!(at("source a field step"), "p.toml:8 (source a field step)");
        assert_eq!(at("table t"), "p.toml:10 (table t)");
        assert_eq!(at("card.default_table"), "p.toml:12 (card.default_table)");
        // nothing of that name: the file alone
        assert_eq!(at("table nope"), "p.toml (table nope)");
        assert_eq!(place(Path::new("p.toml"), None, "source a#quote"), "p.toml (source a)");
    }

    #[test]
    fn a_name_given_twice_is_named_with_its_lines() {
        let text = "name = \"d\"\n[[source]]\nname = \"a\"\n[[table]]\nname = 'a'  # again\n";
        let e = twice(Path::new("p.toml"), text, "a").to_string();
        assert!(e.starts_with("p.toml:3:"), "{e}");
        assert!(e.contains("`a` names more than one source, view or table (lines 3, 5)"), "{e}");
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pipeline.toml"),
            "name = \"x\"\n[[table]]\nname = \"t\"\nquery = \"SELECT 1\"\nsqll = \"a.sql\"\n",
        )
        .unwrap();
        let e = PipelineSpec::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("pipeline.toml:5:1"), "{e}");
        assert!(e.contains("unknown field `sqll`"), "{e}");
    }

    #[test]
    fn a_foreign_key_names_a_table_and_columns_it_has() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("runs.json", r#"{"fields":[{"name":"run","type":"string"}],"primaryKey":["run"]}"#);
        write(
            "pipeline.toml",
            "name = \"x\"\n[[source]]\nname = \"s\"\npath = \"s.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"runs\"\nschema = \"runs.json\"\nquery = \"SELECT DISTINCT run FROM s\"\n\
             [[table]]\nname = \"steps\"\nschema = \"steps.json\"\nquery = \"SELECT run FROM s\"\n",
        );
        let steps = |resource: &str, field: &str| {
            format!(
                r#"{{"fields":[{{"name":"run","type":"string"}}],"foreignKeys":[{{"fields":["run"],"reference":{{"resource":"{resource}","fields":["{field}"]}}}}]}}"#
            )
        };
        let load = || PipelineSpec::load(dir.path()).map(|_| ()).map_err(|e| e.to_string());
        write("steps.json", &steps("runs", "run"));
        load().unwrap();
        write("steps.json", &steps("runs", "run_id"));
        let e = load().unwrap_err();
        assert!(
            e.contains(
                "steps.json:/foreignKeys/0/reference/fields/0: table `runs` has no column `run_id` (its columns: run)"
            ),
            "{e}"
        );
        write("steps.json", &steps("runz", "run"));
        let e = load().unwrap_err();
        assert!(
            e.contains("steps.json:/foreignKeys/0/reference/resource: no table named `runz` (the tables: runs, steps)"),
            "{e}"
        );
    }

    #[test]
    fn definition_files_are_read_as_utf8_text_and_their_mistakes_found_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        let toml = |table: &str| {
            format!(
                "name = \"x\"\n[[source]]\nname = \"s\"\npath = \"s.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\n{table}"
            )
        };
        let load = || PipelineSpec::load(dir.path()).map(|_| ()).map_err(|e| e.to_string());
        // a byte order mark before the TOML and the schema is left out
        write("t.json", "\u{feff}{\"fields\":[{\"name\":\"a\",\"type\":\"string\"}]}".as_bytes());
        write(
            "pipeline.toml",
            format!("\u{feff}{}", toml("schema = \"t.json\"\nquery = \"SELECT a FROM s\"\n")).as_bytes(),
        );
        load().unwrap();
        // a byte that is not UTF-8, at its line and column
        write("t.json", b"{\"fields\":[\n {\"name\":\"\xe9\",\"type\":\"string\"}]}");
        let e = load().unwrap_err();
        assert!(e.contains("t.json:2:11: byte 0xe9 is not UTF-8 text"), "{e}");
        // a folder named as the SQL file
        std::fs::create_dir(dir.path().join("q.sql")).unwrap();
        write("pipeline.toml", toml("sql = \"q.sql\"\n").as_bytes());
        let e = load().unwrap_err();
        assert!(e.contains("q.sql is a folder, not a file"), "{e}");
        // a split column the declared schema lacks
        write("t.json", b"{\"fields\":[{\"name\":\"a\",\"type\":\"string\"}]}");
        write(
            "pipeline.toml",
            toml("schema = \"t.json\"\nquery = \"SELECT a FROM s\"\nsplit_column = \"splt\"\n").as_bytes(),
        );
        let e = load().unwrap_err();
        assert!(e.contains("split_column `splt` is not a field of the table's schema (its fields: a)"), "{e}");
    }

    #[test]
    fn an_inline_querys_line_in_pipeline_toml_is_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pipeline.toml"),
            "name = \"x\"\n[[source]]\nname = \"s\"\npath = \"s.jsonl\"\nformat = \"jsonl\"\n\
             [[view]]\nname = \"v\"\nquery = \"SELECT 1\"\n\
             [[table]]\nname = \"a\"\nquery = \"SELECT 1\"\n\
             [[table]]  # b\nquery = \"\"\"\nSELECT 2\"\"\"\nname = \"b\"\n\
             [[table]]\nname = \"c\"\nquery = \"\"\"  \nSELECT 3\"\"\"\n",
        )
        .unwrap();
        let spec = PipelineSpec::load(dir.path()).unwrap();
        assert_eq!(spec.inline_query_line("view", "v"), Some(8));
        assert_eq!(spec.inline_query_line("table", "a"), Some(11));
        // `query = """` on line 13: the SQL's first line is the file's line 14
        assert_eq!(spec.inline_query_line("table", "b"), Some(14));
        // blanks after the delimiter are the string's first line: it starts on the query's line
        assert_eq!(spec.inline_query_line("table", "c"), Some(18));
        assert_eq!(spec.inline_query_line("table", "v"), None);
    }

    #[test]
    fn options_a_format_would_ignore_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.json"), r#"{"fields": [{"name": "idx", "type": "string"}]}"#).unwrap();
        let load = |format: &str, options: &str| {
            let toml = format!(
                "name = \"x\"\n[[source]]\nname = \"raw\"\npath = \"r/*\"\nformat = \"{format}\"\n{options}\
                 [[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n"
            );
            std::fs::write(dir.path().join("pipeline.toml"), toml).unwrap();
            PipelineSpec::load(dir.path()).map(|_| ()).map_err(|e| e.to_string())
        };
        let e = load("tinker-eval-trajectories", "schema = \"s.json\"\n").unwrap_err();
        assert!(e.contains("source raw"), "{e}");
        assert!(
            e.contains(
                "`schema` does not apply to format = \"tinker-eval-trajectories\": its columns are fixed by the format"
            ),
            "{e}"
        );
        let e = load("eval-metrics", "[[source.field]]\nname = \"count\"\ntype = \"string\"\n").unwrap_err();
        assert!(e.contains("[[source.field]] does not apply to format = \"eval-metrics\""), "{e}");
        let e = load("tinker-metrics", "coerce_numeric_strings = true\n").unwrap_err();
        assert!(e.contains("do not apply to format = \"tinker-metrics\""), "{e}");
        let e = load("tinker-metrics", "columns = \"union\"\n").unwrap_err();
        assert!(e.contains("`columns` does not apply"), "{e}");
        let e = load("jsonl", "id_columns = [\"step\"]\n").unwrap_err();
        assert!(e.contains("id_columns applies to layout = \"long\" only"), "{e}");
        let e = load("parquet", "layout = \"long\"\nid_columns = [\"a\"]\n").unwrap_err();
        assert!(
            e.contains(
                "`layout` does not apply to format = \"parquet\": a Parquet file's rows are read as they are stored"
            ),
            "{e}"
        );
        let e = load("tinker-checkpoints", "id_columns = [\"a\"]\n").unwrap_err();
        assert!(e.contains("`id_columns` does not apply"), "{e}");
        // a field without a name, or named twice, is no column's type
        for format in ["jsonl", "parquet"] {
            let e = load(format, "[[source.field]]\ntype = \"integer\"\n").unwrap_err();
            assert!(e.contains("(source raw): [[source.field]] number 1 has no name"), "{e}");
            let twice = "[[source.field]]\nname = \"a\"\ntype = \"integer\"\n[[source.field]]\nname = \"a\"\ntype = \"string\"\n";
            let e = load(format, twice).unwrap_err();
            assert!(e.contains("(source raw field a): this column has two [[source.field]] entries"), "{e}");
        }
        // the formats that read declared types take them
        load("jsonl", "schema = \"s.json\"\n").unwrap();
        load("csv", "[[source.field]]\nname = \"a\"\ntype = \"string\"\n").unwrap();
        load("parquet", "columns = \"union\"\n").unwrap();
        load("json", "layout = \"long\"\nid_columns = [\"a\"]\n").unwrap();
    }

    #[test]
    fn formats_name_parquet_and_maybe_jsonl_and_a_table_overrides_the_release() {
        assert_eq!(check_formats(&["parquet".into(), "jsonl".into()]), Ok(()));
        assert!(check_formats(&["jsonl".into()]).unwrap_err().contains("expected \"parquet\" in the list"));
        assert!(check_formats(&["parquet".into(), "csv".into()]).unwrap_err().contains("unknown format \"csv\""));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pipeline.toml"),
            "name = \"x\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"s\"\npath = \"s.jsonl\"\n\
             format = \"jsonl\"\n[[table]]\nname = \"a\"\nquery = \"SELECT * FROM s\"\n[[table]]\nname = \"b\"\n\
             query = \"SELECT * FROM s\"\nformats = [\"parquet\"]\n",
        )
        .unwrap();
        let spec = PipelineSpec::load(dir.path()).unwrap();
        assert!(spec.jsonl_copies(0) && !spec.jsonl_copies(1));
    }
}

//! Command-line front end: argument definitions, dispatch, and everything that prints.
//!
//! In: parsed arguments and the environment (`SOURCE_DATE_EPOCH`, `HF_*`). Out: results on
//! stdout, progress, warnings and errors on stderr, and the exit code.

#![allow(clippy::print_stdout, clippy::print_stderr)]

/// `eprintln!` that never panics: a message to a closed stderr (`2>&1 | head`) is dropped,
/// not turned into a second error. Every secret the process holds is replaced in it
/// ([`crate::core::secrets::redact`]): a token may sit in the data a message quotes.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{}", crate::core::secrets::redact(&format!($($t)*)));
    }};
}

mod cluster;
mod examples;
mod hub;
mod init;
pub mod output;
mod process;

pub use process::main;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::core::error::Error;
use crate::core::options::BuildOptions;
use crate::core::progress::Silent;
use crate::core::spec::{DuplicatePolicy, PipelineSpec};
use crate::sql::print::PrintFormat;
use crate::stages::ingest::OnInvalid;
use crate::stages::write::WriteOptions;

/// runpack turns the raw logs of LLM post-training runs (Tinker metrics and checkpoint
/// indices, W&B exports, evaluation outputs, hand-merged result tables) into a release: typed
/// tables in Parquet (with JSON Lines copies where asked), validated against declared schemas,
/// hashed, and described by a generated dataset card.
#[derive(Debug, Parser)]
#[command(name = "runpack", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Print only results and errors (no progress, no warnings).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// More log output on stderr (-v info, -vv debug); RUST_LOG overrides it.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a release from a pipeline's raw inputs.
    ///
    /// Reads pipelines/<name>/pipeline.toml, ingests its sources, runs each table's SQL,
    /// validates every row against the table's schema, and writes
    /// releases/<name>/<version>/ (Parquet, JSON Lines copies where the pipeline asks for
    /// them, README.md card, manifest.json, SHA256SUMS, datapackage.json, croissant.json, and
    /// rejects/ when rows were set aside). The release appears only when complete. Prints the
    /// release path.
    ///
    /// Exit status: 0 built, 1 the data broke the rules (every violation is listed with its
    /// file and line), 2 any other failure.
    #[command(after_help = examples::BUILD)]
    Build(BuildArgs),
    /// Check a release: hashes, sizes, row counts, schemas and card.
    ///
    /// With hf://datasets/<namespace>/<name>[@<revision>][/<path>], checks what the Hub holds
    /// instead: the remote tree (every page) against the published manifest (or --against a
    /// local release): LFS files by sha256 = lfs.oid and size, regular files by git blob sha1
    /// = the tree's oid (their bytes downloaded and hashed with sha256 too); missing, extra and
    /// differing files are named. Then the checks a local verify makes of the card and the
    /// manifest against the data run on the Hub's files (each Parquet file's footer read by
    /// range requests), and for a release in a folder, the repo's root card is checked to
    /// describe it. --download also fetches and hashes every file's bytes, --data reads every
    /// row. Reads HF_TOKEN (else HF_TOKEN_PATH, else HF_HOME/token), HF_ENDPOINT, HF_HOME,
    /// HF_HUB_CACHE and HF_HUB_OFFLINE (set, it refuses: the check needs the network).
    ///
    /// A snapshot folder of the Hugging Face cache (its files links into blobs/) verifies as
    /// a release folder.
    ///
    /// Prints one line per problem (--format json: one JSON document with `ok`, `problems`,
    /// each a `kind` and its `message`, and `files`, each file with the digest algorithm it
    /// was checked by).
    ///
    /// Exit status: 0 the release is intact, 1 problems were found (each on its own line),
    /// 2 the check could not be made (not a release folder, a bad hf:// address, the Hub
    /// unreachable or refusing).
    #[command(after_help = examples::VERIFY)]
    Verify {
        /// Release folder (releases/<name>/<version>), or
        /// hf://datasets/<namespace>/<name>[@<revision>][/<path>].
        release: PathBuf,
        /// Also read every row of a local release: decode every Parquet page, check the rows
        /// against each table's schema (types, constraints, primary and foreign keys) and
        /// compare each JSON Lines copy, line by line, with the rows it was written from. This
        /// catches a release changed and sealed again (its checksums recomputed) when the change
        /// breaks one of those rules; it reads all of the data, so it takes as long as a scan of
        /// every table.
        #[arg(long)]
        data: bool,
        /// Output format: `text` (one line per problem, then a summary) or `json`.
        #[arg(long, value_enum, default_value = "text")]
        format: hub::ReportFormat,
        #[command(flatten)]
        hub: hub::VerifyHubArgs,
    },
    /// Run SQL over a release's tables, or over raw Parquet / JSON Lines files.
    ///
    /// SOURCE is a release folder (every table is registered under its name with the schema
    /// recorded in the manifest), or a Parquet or JSON Lines file, folder or glob, registered
    /// as one table (named by --table) with the schema given by --schema, or else inferred
    /// from all of the files (never a sample) and printed on stderr.
    ///
    /// SOURCE may also be hf://datasets/<namespace>/<name>[@<revision>][/<path>], a release
    /// published on the Hub: its files are downloaded into the Hugging Face cache (HF_HUB_CACHE,
    /// else HF_HOME/hub), each checked against the manifest's sha256 before use, and reused on
    /// later runs; with HF_HUB_OFFLINE=1 only the cache is read.
    ///
    /// Exit status: 0 the result was printed, 1 raw input files broke their schema (every
    /// violation is listed with its file and line), 2 any other failure (bad SQL, a file that
    /// cannot be read, the Hub).
    #[command(after_help = examples::QUERY)]
    Query {
        /// Release folder, raw files (file, folder or glob), or
        /// hf://datasets/<namespace>/<name>[@<revision>][/<path>].
        source: String,
        /// SQL (DataFusion dialect); several statements separated by `;` run in order and the
        /// last one's result is printed. Quote identifiers holding `/` or `.`. `-` reads the
        /// SQL from standard input (`runpack query REL - < report.sql`); SQL that starts with
        /// `--` (a comment) goes after a `--` argument. Without SQL, a release's tables are
        /// listed, each with its rows and its columns' types.
        sql: Option<String>,
        /// Output format.
        #[arg(short, long, value_enum, default_value = "table")]
        format: PrintFormat,
        /// The table format's rows shown at most (0: all); the rows after them are counted, and
        /// said on stderr. The other formats print every row as it comes.
        #[arg(long, value_name = "N", default_value_t = 40)]
        max_rows: usize,
        /// Table Schema (JSON) to read raw files with.
        #[arg(long, value_name = "FILE")]
        schema: Option<PathBuf>,
        /// Table name for raw files (default `t`), as SQL names it quoted (`--table My` is `"My"`).
        #[arg(long, value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
        table: Option<String>,
        /// Print on stderr how long the SQL took, in seconds: registering the tables,
        /// planning and running the statements (not the process start, not a Hub download,
        /// not printing the result).
        #[arg(long)]
        timing: bool,
        #[command(flatten)]
        hub: hub::QueryHubArgs,
        /// Run the SQL on an Apache DataFusion Ballista cluster, df://HOST:PORT (its
        /// scheduler), instead of in this process: the cluster's executors read the release's
        /// or raw Parquet files by their paths (docs/cluster.md).
        #[arg(long, value_name = "df://HOST:PORT", env = "RUNPACK_ENGINE")]
        engine: Option<String>,
    },
    /// Publish a release to a dataset repo on the Hugging Face Hub, as one commit.
    ///
    /// Checks the release before sending anything (card paths, plain YAML, file sizes), asks
    /// the Hub which files it already holds, uploads the missing LFS objects (basic or
    /// multipart), then makes ONE commit holding every file, with the deletions of files the
    /// release no longer has, on top of the branch head it read (parentCommit); and tags it
    /// with the release version. A release the branch already holds makes no commit.
    /// Transient failures (HTTP 408, 429, 5xx, lost connections) are retried with backoff,
    /// honouring Retry-After and RateLimit; other refusals fail at once with the Hub's message.
    /// A commit whose answer is lost is never re-sent blindly: the branch is read again first.
    ///
    /// Environment: HF_TOKEN (else the file HF_TOKEN_PATH, else HF_HOME/token, default
    /// ~/.cache/huggingface/token), HF_ENDPOINT (default https://huggingface.co);
    /// HF_HUB_OFFLINE set refuses once the release is checked (publishing needs the network).
    ///
    /// Exit status: 0 published (or unchanged), 2 refused or failed (the branch is left as it
    /// was unless the message says otherwise).
    #[command(after_help = examples::PUBLISH)]
    Publish(hub::PublishArgs),
    /// Write a pipeline for a folder of raw outputs.
    ///
    /// Looks at every file under FOLDER (Tinker metrics.jsonl and checkpoints.jsonl, W&B run
    /// folders and exports, evaluation outputs, plain JSON, JSON Lines, CSV and Parquet) and
    /// writes pipelines/<name>/pipeline.toml with one source and one table per kind of file
    /// (the standard tables for W&B), a link pipelines/<name>/raw to FOLDER, and one Table
    /// Schema per table under schemas/<name>/, beside the pipelines folder. Every source is read
    /// in full: the schemas hold the types of all of the data, and `runpack build
    /// pipelines/<name>` builds it without edits. A column of more than one type is kept as
    /// JSON text; a file that cannot be read is left out and named with the reason. The card's
    /// licence and description are left as TODOs.
    ///
    /// Never overwrites a file: a pipeline.toml, link or schema that exists stops it, and
    /// nothing is written.
    ///
    /// Exit status: 0 written, 2 nothing written (a file exists, no file could be read, the
    /// folder is missing).
    #[command(after_help = examples::INIT)]
    Init(init::InitArgs),
    /// Run a process of an Apache DataFusion Ballista cluster that `build` and `query` can
    /// run their SQL on (`--engine df://HOST:PORT`; see docs/cluster.md).
    ///
    /// These are Ballista's own scheduler and executor with runpack's SQL functions
    /// registered: start one scheduler, then executors that name it.
    ///
    /// Exit status: 0 stopped, 2 it could not start (an address in use, a bad option).
    Cluster {
        #[command(subcommand)]
        command: cluster::ClusterCommand,
    },
}

#[derive(Debug, clap::Args)]
struct BuildArgs {
    /// Pipeline folder (holding pipeline.toml) or the pipeline.toml file.
    pipeline: PathBuf,
    /// Release version (default: the pipeline's `version`).
    #[arg(long = "release-version", value_name = "VERSION")]
    release_version: Option<String>,
    /// Folder that holds releases, relative to the current folder [default: `releases/`
    /// beside the project's `pipelines/` folder, else beside the pipeline's folder].
    #[arg(long, value_name = "DIR", env = "RUNPACK_RELEASES_DIR", hide_env_values = true)]
    releases_dir: Option<PathBuf>,
    /// Replace an existing release of the same version: without it, a version once built is
    /// never overwritten (changed inputs need --force or another --release-version), and with
    /// it the build runs even when the inputs look unchanged (same stamps in the input cache:
    /// size, modification and status change times, inode).
    #[arg(long)]
    force: bool,
    /// What to do with rows that break the rules.
    #[arg(long, value_enum, default_value = "fail")]
    on_invalid: OnInvalid,
    /// Violations listed at most (the total count is always given).
    #[arg(long, default_value_t = 100)]
    max_errors: usize,
    /// Rule for rows sharing a primary key, for every table (overrides the pipeline).
    #[arg(long, value_enum)]
    on_duplicate_key: Option<DuplicateArg>,
    /// Largest data file (Parquet or JSON Lines), in bytes; larger tables are sharded, and a
    /// single row that alone makes a larger file is refused (a row is never cut).
    #[arg(long, default_value_t = WriteOptions::default().max_shard_bytes)]
    max_shard_bytes: u64,
    /// Largest Parquet row group, in uncompressed bytes (at least 1).
    #[arg(long, default_value_t = WriteOptions::default().row_group_bytes, value_parser = clap::value_parser!(u64).range(1..))]
    row_group_bytes: u64,
    /// Largest Parquet row group, in rows (at least 1).
    #[arg(long, default_value_t = WriteOptions::default().row_group_rows as u64, value_parser = clap::value_parser!(u64).range(1..))]
    row_group_rows: u64,
    /// Cut Parquet data pages at fixed sizes instead of where the values' content says.
    /// Content-defined pages (the default, the Hub's "Optimized Parquet") let a republished
    /// table that gained rows upload only its changed chunks through Xet.
    #[arg(long)]
    no_content_defined_chunking: bool,
    /// Report string values of the sources longer than this many bytes (as read, with their
    /// file and line; a table that keeps one may be truncated by the dataset viewer).
    #[arg(long, default_value_t = 10_000_000)]
    large_cell_bytes: u64,
    /// Read every source into a staging file before the first table, instead of streaming
    /// a source that one table reads straight into that table's query. The release is the
    /// same; staging costs a write and a read of each source.
    #[arg(long)]
    stage_sources: bool,
    /// Run the tables' SQL (and the views they read) on an Apache DataFusion Ballista
    /// cluster, df://HOST:PORT (its scheduler), instead of in this process; the release is
    /// the same. Needs --engine-share (docs/cluster.md).
    #[arg(long, value_name = "df://HOST:PORT", env = "RUNPACK_ENGINE")]
    engine: Option<String>,
    /// With --engine: a folder this process and every executor reach by the same path
    /// (a shared file system), or an object store prefix (s3://BUCKET/PREFIX,
    /// gs://BUCKET/PREFIX; credentials from the AWS_* or GOOGLE_* variables), where the
    /// build stages its sources and the tables later tables read; the build's own subfolder
    /// is removed when it ends.
    #[arg(long, value_name = "DIR|URL", env = "RUNPACK_ENGINE_SHARE", requires = "engine")]
    engine_share: Option<PathBuf>,
    /// Output format: `text` (the release path on stdout, a summary on stderr) or `json` (one
    /// document on stdout: the release, its tables with rows, files and bytes, rejected rows,
    /// warnings, and the violations with their places when the data broke the rules).
    #[arg(long, value_enum, default_value = "text")]
    format: hub::ReportFormat,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DuplicateArg {
    Error,
    KeepLast,
    KeepFirst,
}

/// What `query` registered: the raw table (kept alive while the query runs) and the Parquet
/// files read, for naming a broken one ([`crate::verbs::query::name_broken_file`]).
struct QuerySource {
    /// The raw table, for raw files; `None` for a release.
    raw: Option<crate::verbs::query::RawTable>,
    parquet_files: Vec<(String, std::path::PathBuf)>,
    hint: String,
}

/// Whether `source` (a `query` argument) names a release: a release folder, or one on the Hub.
fn is_release(source: &str) -> bool {
    hub::is_hub(source) || std::path::Path::new(source).join("manifest.json").is_file()
}

/// Registers what `query` reads: a release folder, or raw files as one table.
async fn register_query_source(
    ctx: &datafusion::prelude::SessionContext,
    source: &str,
    schema: Option<&crate::core::schema::TableSchema>,
    table: &str,
    quiet: bool,
) -> Result<QuerySource, Error> {
    let path = std::path::Path::new(source);
    if path.join("manifest.json").is_file() {
        let manifest = crate::verbs::query::register_release(ctx, path).await?;
        return Ok(QuerySource {
            raw: None,
            parquet_files: crate::verbs::query::release_parquet_files(path, &manifest),
            hint: verify_hint(&path.display().to_string()),
        });
    }
    let raw = crate::verbs::query::register_files(ctx, table, source, schema).await?;
    if !quiet {
        for w in &raw.warnings {
            say!("{w}");
        }
    }
    if raw.inferred && !quiet {
        say!("table {table}, schema inferred from every file:");
        for f in raw.schema.fields() {
            say!(
                "  {}: {}",
                crate::core::error::escape_control(f.name()),
                crate::core::schema::type_name(f.data_type())
            );
        }
    }
    Ok(QuerySource { parquet_files: raw.parquet_files.clone(), raw: Some(raw), hint: String::new() })
}

/// The advice added to a query error that a release's data file caused.
fn verify_hint(release: &str) -> String {
    format!("\nhint: `runpack verify {release}` checks every file of the release")
}

/// `SOURCE_DATE_EPOCH` (reproducible-builds.org): seconds since the Unix epoch, a
/// non-negative integer that a date can hold; unset or empty means none.
///
/// Errors: [`Error::Config`] naming the variable and its value when it is anything else.
fn source_date_epoch() -> Result<Option<i64>, Error> {
    let Some(v) = std::env::var_os("SOURCE_DATE_EPOCH") else { return Ok(None) };
    let v = v.to_string_lossy();
    if v.trim().is_empty() {
        return Ok(None);
    }
    // the last second RFC 3339 writes with four digits of year
    const LAST: i64 = 253_402_300_799;
    match v.trim().parse::<i64>() {
        Ok(s) if (0..=LAST).contains(&s) => Ok(Some(s)),
        Ok(s) if s > LAST => Err(Error::config(
            "SOURCE_DATE_EPOCH",
            format!("{s} is after 9999-12-31T23:59:59Z, the last time an RFC 3339 date can say"),
        )),
        _ => Err(Error::config(
            "SOURCE_DATE_EPOCH",
            format!("{v:?} is not a number of seconds since 1970-01-01 (a non-negative integer)"),
        )),
    }
}

/// Sets up logging on stderr.
pub fn init_tracing(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (_, 0) => "warn",
        (_, 1) => "info",
        _ => "debug",
    };
    // hf-xet warns of every CAS request it retries: shown from -v on (its final error is said)
    let level = if verbose == 0 && !quiet {
        format!("{level},xet=error,xet_client=error,xet_data=error,xet_runtime=error,xet_core_structures=error")
    } else {
        level.to_string()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // colours only for a terminal: a log file or CI capture gets plain text
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .event_format(Plain)
        .try_init();
}

/// Log lines as runpack's other messages read: `warning: …`, `error: …`, `info: …` (`-v`),
/// `debug: …` (`-vv`), without timestamp, level column or module path.
struct Plain;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let prefix = match *event.metadata().level() {
            tracing::Level::ERROR => "error: ",
            tracing::Level::WARN => "warning: ",
            tracing::Level::INFO => "info: ",
            _ => "debug: ",
        };
        write!(writer, "{prefix}")?;
        if event.metadata().fields().field("log.target").is_some() {
            // a line of a library that logs through `log` (Ballista): its message, without
            // the record's module, file and line
            let mut message = LogMessage(String::new());
            event.record(&mut message);
            // (DataFusion's plans at -vv quote the SQL's literals, a token among them)
            write!(writer, "{}", crate::core::secrets::redact(&message.0))?;
        } else {
            let mut text = String::new();
            ctx.field_format().format_fields(tracing_subscriber::fmt::format::Writer::new(&mut text), event)?;
            let text = crate::core::secrets::redact(&text);
            write!(writer, "{text}")?;
            // runpack's own warnings: the JSON document of a command that then fails holds them
            if *event.metadata().level() == tracing::Level::WARN && event.metadata().target().starts_with("runpack") {
                SAID_WARNINGS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(text);
            }
        }
        writeln!(writer)
    }
}

/// runpack's warnings said on stderr so far ([`Plain`]), for [`error_json`].
static SAID_WARNINGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The `message` field of an event (see [`Plain`]).
struct LogMessage(String);

impl tracing::field::Visit for LogMessage {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Cli {
    /// Whether the command is `build`.
    pub fn is_build(&self) -> bool {
        matches!(self.command, Command::Build(_))
    }

    /// Whether the command prints one JSON document (`--format json` of build, verify,
    /// publish and init): an error is then a document too.
    pub fn reports_json(&self) -> bool {
        let json = hub::ReportFormat::Json;
        match &self.command {
            Command::Build(a) => a.format == json,
            Command::Verify { format, .. } => *format == json,
            Command::Publish(a) => a.format() == json,
            Command::Init(a) => a.format() == json,
            _ => false,
        }
    }
}

/// The JSON document of a command that failed with `err` (exit code `code`): `ok` false,
/// `exit_code`, `error`, the message as stderr says it, and `warnings`, what runpack warned of
/// on stderr before it failed (a publish's card gaps when the Hub cannot be reached, a retried
/// request); a token is never in them. A build's document of violations is printed by the
/// build itself.
pub fn error_json(err: &Error, code: u8) -> serde_json::Value {
    let said = SAID_WARNINGS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    serde_json::json!({
        "ok": false,
        "exit_code": code,
        "error": crate::verbs::hub::redact(&err.to_string()),
        "warnings": said.iter().map(|w| crate::verbs::hub::redact(w)).collect::<Vec<_>>(),
    })
}

/// The hints of a build that broke the rules: how to list every violation when `--max-errors`
/// left some out (`kept` of `total`), then the remedies (`hints`).
pub fn build_hints(kept: usize, total: usize, hints: &[String]) -> Vec<String> {
    let mut all = Vec::new();
    // only build lists violations up to a number it is given
    if total > kept {
        all.push(format!("--max-errors {total} lists every violation"));
    }
    all.extend(hints.iter().cloned());
    all
}

/// Prints an error on stderr and returns its exit code. `build`: the command was a build,
/// whose violations leave nothing written (said, as a build that fails keeps no part of a
/// release). `warn`: the build's warnings are said too, as a build that succeeds says them
/// (not with `-q`, nor when its JSON document holds them). `verbose` (`-v`): the causes
/// behind the error follow, one per line.
pub fn report(err: &Error, warn: bool, build: bool, verbose: bool) -> u8 {
    // no token reaches the terminal, whatever a server put in its answer
    let text = crate::verbs::hub::redact(&err.to_string());
    match err {
        Error::Invalid { violations, total, hints, warnings, .. } if build => {
            for w in warnings.iter().filter(|_| warn) {
                say!("{w}");
            }
            say!("{text}; nothing was written");
            for hint in build_hints(violations.len(), *total, hints) {
                say!("hint: {hint}");
            }
        }
        Error::Invalid { .. } => say!("{text}"),
        _ => say!("error: {text}"),
    }
    if verbose {
        for cause in causes(err, &text) {
            say!("  caused by: {cause}");
        }
    }
    // a panic on another thread that came back as this error is said too
    if let Some(p) = crate::core::error::take_panic() {
        say!("note: an internal error came first: {p}");
    }
    err.exit_code()
}

/// The causes behind `err` (its `source()` chain), each redacted, leaving out those whose
/// text the message `said` already holds.
fn causes(err: &Error, said: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut next = std::error::Error::source(err);
    while let Some(cause) = next {
        let text = crate::verbs::hub::redact(&cause.to_string());
        if !said.contains(text.as_str()) && !out.iter().any(|o| o.contains(text.as_str())) {
            out.push(text);
        }
        next = cause.source();
    }
    out
}

/// Stack of each of the async runtime's threads, in bytes: DataFusion evaluates an
/// expression by recursing over its tree on them, and SQL that chains a few hundred `AND`s or
/// `+`s (a generated filter) goes deeper than the 2 MiB a thread gets by default. Only the
/// pages a thread touches take memory.
const RUNTIME_STACK_BYTES: usize = 64 << 20;

/// The async runtime the commands run on (one thread per core).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(RUNTIME_STACK_BYTES)
        .build()
        .map_err(|e| Error::io("tokio runtime", e))
}

/// Most bytes of SQL read from standard input (`query SOURCE -`).
const MAX_SQL_BYTES: u64 = 64 << 20;

/// The SQL given on standard input (`query SOURCE -`): for statements too long for the
/// command line, or kept in a file (`< report.sql`).
///
/// Errors: [`Error::Io`] when it cannot be read, [`Error::Refused`] when it is not UTF-8 or
/// longer than [`MAX_SQL_BYTES`].
fn sql_from_stdin() -> Result<String, Error> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_SQL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("standard input", e))?;
    if bytes.len() as u64 > MAX_SQL_BYTES {
        return Err(Error::Refused(format!(
            "the SQL on standard input is longer than {} bytes",
            crate::core::numbers::group_digits(MAX_SQL_BYTES)
        )));
    }
    // a byte-order mark (a file saved by some editors) is no part of the SQL
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").map(<[u8]>::to_vec).unwrap_or(bytes);
    String::from_utf8(bytes).map_err(|e| {
        Error::Refused(format!("the SQL on standard input is not UTF-8 (byte {} is not)", e.utf8_error().valid_up_to()))
    })
}

/// Runs the command; returns the exit code for outcomes that are not errors.
pub fn run(mut cli: Cli) -> Result<u8, Error> {
    let quiet = cli.quiet;
    hub::remember_tokens();
    // Ballista's log lines go where runpack's do (the filter of -v, -q and RUST_LOG)
    let cluster = match &cli.command {
        Command::Cluster { .. } => true,
        Command::Build(a) => a.engine.is_some(),
        Command::Query { engine, .. } => engine.is_some(),
        _ => false,
    };
    if cluster {
        let _ = tracing_log::LogTracer::init();
    }
    if let Command::Query { sql: Some(sql), .. } = &mut cli.command
        && sql == "-"
    {
        *sql = sql_from_stdin()?;
    }
    match cli.command {
        Command::Build(a) => build(a, quiet),
        Command::Publish(a) => hub::publish(a, quiet),
        Command::Init(a) => init::run(a, quiet),
        Command::Cluster { command } => cluster::run(command),
        Command::Verify { release, hub, data, format } if hub::is_hub(&release) => {
            hub::verify(&release, hub, data, format, quiet)
        }
        Command::Query { source, schema, table, .. }
            if (schema.is_some() || table.is_some()) && is_release(&source) =>
        {
            Err(Error::Refused(format!(
                "--schema and --table name and type raw files; {source} is a release, whose tables have their \
                 own names and the schemas of its manifest"
            )))
        }
        Command::Query { source, sql: None, format, hub, .. } => {
            hub.for_local(std::path::Path::new(&source))?;
            list_tables(&source, format)
        }
        Command::Query { source, engine: Some(_), .. } if hub::is_hub(&source) => Err(Error::Refused(format!(
            "{source}: --engine runs SQL over files the cluster's executors can read; download the release \
             (runpack query without --engine reads it from the Hub) and query its folder"
        ))),
        Command::Query { source, sql: Some(sql), format, max_rows, hub, timing, .. } if hub::is_hub(&source) => {
            hub::query(&source, &sql, shown(format, max_rows), hub, quiet, timing)
        }
        Command::Verify { release, hub, data, format } => verify(&release, hub, data, format, quiet),
        Command::Query { source, sql: Some(sql), format, max_rows, schema, table, timing, hub, engine } => {
            let engine =
                engine.map(|e| crate::sql::engine::Engine::parse(&e, "--engine (or RUNPACK_ENGINE)")).transpose()?;
            let shown = shown(format, max_rows);
            query(&source, &sql, shown, schema.as_deref(), table.as_deref(), timing, hub, engine, quiet)
        }
    }
}

/// The print format and, for the table format, the rows it shows at most (`--max-rows`, 0: all).
fn shown(format: PrintFormat, max_rows: usize) -> crate::sql::print::Shown {
    crate::sql::print::Shown { format, max_rows: (max_rows > 0).then_some(max_rows) }
}

/// Runs `verify` of a local release and prints its problems (or, with `--format json`, one
/// document); exit 1 when it found any.
fn verify(
    release: &std::path::Path,
    hub: hub::VerifyHubArgs,
    data: bool,
    format: hub::ReportFormat,
    quiet: bool,
) -> Result<u8, Error> {
    hub.for_local(release)?;
    let bar = output::progress(quiet || format == hub::ReportFormat::Json);
    let progress = bar.as_ref().map(|p| p as &dyn crate::core::progress::Progress).unwrap_or(&Silent);
    let rep = crate::verbs::verify::run_with_progress(release, data, progress)?;
    drop(bar);
    if format == hub::ReportFormat::Json {
        let files: Vec<serde_json::Value> = rep
            .verified
            .iter()
            .map(|f| serde_json::json!({"path": f, "algorithm": "sha256", "hashed": true}))
            .collect();
        let doc = serde_json::json!({
            "release": release.display().to_string(), "ok": rep.ok(), "problems": rep.problems,
            "rows_checked": rep.rows_checked, "files": files,
        });
        output::print_out(&format!("{doc:#}"))?;
        return Ok(if rep.ok() { 0 } else { 1 });
    }
    for p in &rep.problems {
        output::print_out(&p.to_string())?;
    }
    if rep.ok() {
        if !quiet {
            let rows = match rep.rows_checked {
                Some(n) => format!(
                    ", {} read and checked against their schemas and any JSON Lines copies",
                    crate::stages::hash::rows(n)
                ),
                None => String::new(),
            };
            output::print_out(&format!(
                "ok: {} files verified by sha256{rows} in {}",
                rep.verified.len(),
                release.display()
            ))?;
        }
        Ok(0)
    } else {
        if !quiet {
            say!(
                "{} problem{} found in {}",
                rep.problems.len(),
                if rep.problems.len() == 1 { "" } else { "s" },
                release.display()
            );
        }
        Ok(1)
    }
}

/// Runs `query` over a local release or raw files and prints the result.
#[allow(clippy::too_many_arguments)] // the query's arguments as the command line gives them
fn query(
    source: &str,
    sql: &str,
    shown: crate::sql::print::Shown,
    schema: Option<&std::path::Path>,
    table: Option<&str>,
    timing: bool,
    hub: hub::QueryHubArgs,
    engine: Option<crate::sql::engine::Engine>,
    quiet: bool,
) -> Result<u8, Error> {
    // `query "SELECT …" releases/x`: the two arguments the other way round (a source
    // that reads as SQL and is no path, an SQL argument that is one)
    let reads_as_sql = |t: &str| {
        let word = t.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
        t.contains(char::is_whitespace)
            && ["SELECT", "WITH", "EXPLAIN", "DESCRIBE", "SHOW", "VALUES"].contains(&word.as_str())
    };
    if reads_as_sql(source)
        && !std::path::Path::new(source).exists()
        && (std::path::Path::new(sql).exists() || sql.contains(['*', '?']) || hub::is_hub(sql))
    {
        return Err(Error::Refused(format!(
            "{source}: no such file or folder, and the SQL argument `{sql}` looks like the source: the source \
                 comes first (runpack query <SOURCE> <SQL>)"
        )));
    }
    hub.for_local(std::path::Path::new(source))?;
    let declared = schema.map(crate::core::schema::TableSchema::load).transpose()?;
    runtime()?.block_on(async {
        let ctx = match &engine {
            Some(e) => e.session(crate::sql::session::query_partitions())?,
            None => crate::sql::session::query_session(),
        };
        let started = std::time::Instant::now();
        let table = table.unwrap_or("t");
        let src = register_query_source(&ctx, source, declared.as_ref(), table, quiet).await?;
        run_and_print(&ctx, sql, shown, timing, started)
            .await
            .map_err(|e| match src.raw {
                Some(_) => crate::verbs::query::name_broken_raw_file(e, &src.parquet_files),
                None => crate::verbs::query::name_broken_file(e, &src.parquet_files, &src.hint),
            })
            .map_err(|mut e| {
                // a failure on the cluster (a job that failed, an executor lost) names it
                if let (Some(engine), Error::Sql { context, .. }) = (&engine, &mut e) {
                    context.push_str(&format!(" on the engine {}", engine.address()));
                }
                if engine.is_some() { crate::sql::engine::redact_error(e) } else { e }
            })
    })
}

/// Runs `build` and prints what it built (or, with `--format json`, one document, also when
/// the data broke the rules).
fn build(a: BuildArgs, quiet: bool) -> Result<u8, Error> {
    let json = a.format == hub::ReportFormat::Json;
    let spec = PipelineSpec::load(&a.pipeline)?;
    let opts = BuildOptions {
        releases_dir: a.releases_dir.unwrap_or_else(|| crate::verbs::build::default_releases_dir(&spec.dir)),
        version: a.release_version,
        force: a.force,
        on_invalid: a.on_invalid,
        max_errors: a.max_errors,
        on_duplicate_key: a.on_duplicate_key.map(|d| match d {
            DuplicateArg::Error => DuplicatePolicy::Error,
            DuplicateArg::KeepLast => DuplicatePolicy::KeepLast,
            DuplicateArg::KeepFirst => DuplicatePolicy::KeepFirst,
        }),
        write: WriteOptions {
            max_shard_bytes: a.max_shard_bytes,
            row_group_bytes: a.row_group_bytes,
            row_group_rows: usize::try_from(a.row_group_rows).unwrap_or(usize::MAX),
            content_defined_chunking: !a.no_content_defined_chunking,
            ..WriteOptions::default()
        },
        large_cell_bytes: a.large_cell_bytes,
        stage_sources: a.stage_sources,
        source_date_epoch: source_date_epoch()?,
        engine: a.engine,
        engine_share: a.engine_share,
    };
    let progress = output::progress(quiet || json);
    let built = runtime()?.block_on(crate::verbs::build::build(
        &spec,
        &opts,
        progress.as_ref().map(|p| p as &dyn crate::core::progress::Progress).unwrap_or(&Silent),
    ));
    let outcome = match built {
        Ok(o) => o,
        Err(e) => {
            if json && let Error::Invalid { violations, total, checked, hints, warnings } = &e {
                let version = opts.version.as_deref().unwrap_or(&spec.def.version);
                let doc =
                    output::build_failed_json(&spec.def.name, version, violations, (*total, *checked), hints, warnings);
                // the build's own error is the one said
                let _ = output::print_out(&format!("{doc:#}"));
            }
            return Err(e);
        }
    };
    let mut notes = spec.def.card.unfinished();
    // said of an unchanged release too: the files the tables leave out, and the files no source
    // reads
    let left_out = crate::verbs::build::left_out_notes(&spec);
    notes.extend(left_out.iter().cloned());
    let unread = &outcome.unread;
    let unread_note = crate::verbs::build::unread_note(unread);
    notes.extend(unread_note.clone());
    notes.extend(outcome.notes.iter().cloned());
    notes.extend(crate::verbs::build::undescribed_notes(&spec, &outcome.manifest));
    if json {
        // every file the note counts, where the note names the first few
        output::print_out(&format!("{:#}", output::build_json(&outcome, &notes, unread)))?;
        return Ok(0);
    }
    if outcome.unchanged {
        if !quiet {
            say!(
                "{}: up to date (inputs, pipeline and options unchanged); nothing rebuilt",
                outcome.release_dir.display()
            );
            for n in left_out.iter().chain(&unread_note) {
                say!("note: {n}");
            }
        }
    } else if !quiet {
        for w in &outcome.report.warnings {
            say!("{w}");
        }
        output::summary(&outcome);
        // said, not recorded: the release is complete without them, the Hub's page is not
        for w in &notes {
            say!("note: {w}");
        }
    }
    // the release is written: a closed stdout (`| true`) does not undo that
    output::print_out(&outcome.release_dir.display().to_string())?;
    Ok(0)
}

/// `query <release>` without SQL: prints the release's tables, with their rows and columns.
///
/// Errors: [`Error::Refused`] when `source` is not a release folder (raw files and releases
/// on the Hub need SQL), else as [`crate::verbs::query::list_tables`].
fn list_tables(source: &str, format: PrintFormat) -> Result<u8, Error> {
    if !hub::is_hub(source) && !source.contains(['*', '?', '[']) && !std::path::Path::new(source).exists() {
        return Err(Error::Refused(format!(
            "{source}: no such release folder or file (runpack query <SOURCE> [SQL]: the source comes first)"
        )));
    }
    let dir = std::path::Path::new(source);
    if dir.is_dir() && !dir.join("manifest.json").is_file() && !crate::verbs::query::holds_raw_files(dir) {
        return Err(Error::Refused(format!(
            "{source}: neither a release folder (it has no manifest.json) nor a folder of raw files (no Parquet or \
             JSON Lines file in it)"
        )));
    }
    if !std::path::Path::new(source).join("manifest.json").is_file() {
        let (what, sql) =
            if hub::is_hub(source) { ("a release on the Hub", "SHOW TABLES") } else { ("raw files", "DESCRIBE t") };
        return Err(Error::Refused(format!(
            "{source}: no SQL given; without SQL, query lists the tables of a release folder (one holding \
             manifest.json), and this is {what}: give SQL, such as `runpack query {source} \"{sql}\"`"
        )));
    }
    let tables = crate::verbs::query::list_tables(std::path::Path::new(source))?;
    let text = match format {
        PrintFormat::Json => serde_json::to_string_pretty(&tables).map_err(|e| Error::format("tables", e))? + "\n",
        PrintFormat::Ndjson => tables
            .iter()
            .map(|t| serde_json::to_string(t).map(|l| l + "\n"))
            .collect::<Result<String, _>>()
            .map_err(|e| Error::format("tables", e))?,
        PrintFormat::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let rows = std::iter::once(["table".to_string(), "rows".into(), "column".into(), "type".into()]).chain(
                tables.iter().flat_map(|t| {
                    t.columns.iter().map(|c| [t.name.clone(), t.rows.to_string(), c.name.clone(), c.data_type.clone()])
                }),
            );
            for r in rows {
                w.write_record(&r).map_err(|e| Error::format("tables", e))?;
            }
            String::from_utf8(w.into_inner().map_err(|e| Error::format("tables", e))?).unwrap_or_default()
        }
        PrintFormat::Table => {
            let mut text = String::new();
            for (i, t) in tables.iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                let columns = t.columns.len();
                text.push_str(&format!(
                    "{}: {}, {columns} column{}\n",
                    crate::core::error::escape_control(&t.name),
                    crate::stages::hash::rows(t.rows),
                    if columns == 1 { "" } else { "s" }
                ));
                let width = t.columns.iter().map(|c| c.name.chars().count()).max().unwrap_or(0);
                for c in &t.columns {
                    text.push_str(&format!(
                        "  {:<width$}  {}\n",
                        crate::core::error::escape_control(&c.name),
                        c.data_type
                    ));
                }
            }
            text
        }
    };
    // a closed stdout (`| head`) ends it quietly
    output::print_out(text.strip_suffix('\n').unwrap_or(&text))?;
    Ok(0)
}

/// Runs `sql` and prints its last statement's result on stdout as it comes (with `--timing`,
/// then the seconds since `started` on stderr). A closed stdout (`| head`) ends it with exit 0.
/// A table cut at `--max-rows` is said on stderr, with the rows of the whole result.
async fn run_and_print(
    ctx: &datafusion::prelude::SessionContext,
    sql: &str,
    shown: crate::sql::print::Shown,
    timing: bool,
    started: std::time::Instant,
) -> Result<u8, Error> {
    let run = async {
        let (schema, stream, context) = crate::sql::session::run_script_stream(ctx, sql).await?;
        // buffered: stdout alone flushes at every line break, a write per row
        let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
        let explain = crate::sql::print::is_explain(sql);
        let printed = crate::sql::print::print_stream(shown, &schema, stream, &context, explain, &mut out).await?;
        drop(out);
        if printed.shown < printed.rows {
            eprintln!(
                "note: {} rows; the first {} shown (--max-rows 0 shows every row; --format csv or ndjson prints \
                 them as they come)",
                crate::core::numbers::group_digits(printed.rows as u64),
                crate::core::numbers::group_digits(printed.shown as u64)
            );
        }
        Ok(())
    };
    // a reader that panics on a corrupt file becomes an error (the caller names the file)
    let result = match futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run)).await {
        Ok(r) => r,
        Err(p) => {
            crate::core::error::take_panic();
            Err(Error::Panicked { context: "query".into(), message: crate::core::error::panic_message(p.as_ref()) })
        }
    };
    print_timing(timing, started);
    match result {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        other => other.map(|_| 0),
    }
}

/// With `--timing`, prints the seconds since `started` on stderr.
fn print_timing(timing: bool, started: std::time::Instant) {
    if timing {
        say!("elapsed: {:.4} s", started.elapsed().as_secs_f64());
    }
}

//! Options shared by several floors: what a build does with invalid rows, how files are
//! written, the options of one build, the SQL parser's depth limit.

use std::path::PathBuf;

use crate::core::spec::DuplicatePolicy;

/// How deep SQL may nest (parentheses, subqueries, `CASE` inside `CASE`) for the parser, in
/// levels: DataFusion's default of 50 refuses generated SQL a person would expect to run;
/// planning and evaluating it recurse on threads with large stacks (256 MiB for the command,
/// 64 MiB for the runtime's).
pub const SQL_RECURSION_LIMIT: usize = 500;

/// Memory DataFusion may use for sorts, joins and aggregations before spilling to disk, in
/// bytes (256 MiB); a repartition's batches in flight are counted apart
/// (`sql::memory::SessionPool`). A table's final ordering is runpack's own bounded sort, not SQL's.
pub const SQL_MEMORY_LIMIT_BYTES: usize = 256 << 20;

/// What to do with rows that fail validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OnInvalid {
    /// Fail the build, listing every violation.
    #[default]
    Fail,
    /// Keep going; bad rows go to `rejects/<name>.jsonl` and are counted in the card.
    Reject,
}

/// Writing options.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// Largest data file, in bytes (decimal). Default 500,000,000.
    pub max_shard_bytes: u64,
    /// Largest Parquet row group, in uncompressed bytes. Default 128 MiB.
    pub row_group_bytes: u64,
    /// Largest Parquet row group, in rows. Default 1,048,576.
    pub row_group_rows: usize,
    /// zstd level for Parquet pages. Default 3.
    pub zstd_level: i32,
    /// Cut Parquet data pages where the values' content says (content-defined chunking, the
    /// Hub's "Optimized Parquet"), so that rows added to a table leave the pages before them
    /// byte-identical and a Xet upload sends only the changed chunks. Default on.
    pub content_defined_chunking: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            max_shard_bytes: 500_000_000,
            row_group_bytes: 128 << 20,
            row_group_rows: 1 << 20,
            zstd_level: 3,
            content_defined_chunking: true,
        }
    }
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
    /// The Ballista scheduler to run the SQL on (`df://HOST:PORT`); `None`: in this process.
    pub engine: Option<String>,
    /// With `engine`: a folder the executors reach by the same path, where sources are staged.
    pub engine_share: Option<PathBuf>,
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
            engine: None,
            engine_share: None,
        }
    }
}

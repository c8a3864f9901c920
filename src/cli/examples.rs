//! The examples that end each verb's `--help` (clap's `after_help`), in the style of ripgrep
//! and uv. Every one is a command that works in the project folder: `tests/it/docs.rs` runs
//! them all, in the order init, build, query, publish, verify, against the fake Hub.

/// `runpack build --help`.
pub const BUILD: &str = "Examples:
  runpack build pipelines/tinker-rl-bench                 # releases/tinker-rl-bench/1.0.0
  runpack build pipelines/tinker-rl-bench --format json   # the release, tables, warnings as JSON
  runpack build pipelines/tinker-rl-bench --release-version 1.0.1 --on-invalid reject
  runpack build pipelines/tinker-rl-bench --releases-dir out --force";

/// `runpack verify --help`.
pub const VERIFY: &str = "Examples:
  runpack verify releases/tinker-rl-bench/1.0.0                 # hashes, sizes, rows, card
  runpack verify releases/tinker-rl-bench/1.0.0 --data          # and every row of every table
  runpack verify releases/tinker-rl-bench/1.0.0 --format json   # ok, problems and files as JSON
  runpack verify hf://datasets/acme/rl-bench@1.0.0              # what the Hub holds";

/// `runpack query --help`.
pub const QUERY: &str = "Examples:
  runpack query releases/tinker-rl-bench/1.0.0                  # tables, rows, columns and types
  runpack query releases/tinker-rl-bench/1.0.0 \"DESCRIBE training_runs\"
  runpack query releases/tinker-rl-bench/1.0.0 \"SELECT count(*) FROM metrics\" --format json
  runpack query releases/tinker-rl-bench/1.0.0 \"SELECT * FROM training_runs LIMIT 5\" --format csv
  runpack query 'pipelines/*/raw/experiments/results/*_metrics.jsonl' \"SELECT max(step) FROM t\"";

/// `runpack publish --help`.
pub const PUBLISH: &str = "Examples:
  runpack publish releases/tinker-rl-bench/1.0.0 --repo acme/rl-bench --create --dry-run
  runpack publish releases/tinker-rl-bench/1.0.0 --repo acme/rl-bench --create   # reads HF_TOKEN
  runpack publish releases/tinker-rl-bench/1.0.0 --repo acme/rl-bench --format json";

/// `runpack init --help`.
pub const INIT: &str = "Examples:
  runpack init pipelines/tinker-rl-bench/raw --name my-runs    # pipelines/my-runs, schemas/my-runs
  runpack init pipelines/tinker-rl-bench/raw --name evals --format json   # found, written, not read
  runpack build pipelines/my-runs                              # then build it";

//! runpack: raw LLM post-training logs in, validated, hashed, documented datasets out.
//!
//! The code stands on five floors. A file imports from its own floor and the floors below it,
//! never from one above (`tests/it/layout.rs` checks it):
//!
//! ```text
//! cli      arguments, dispatch, everything printed, the exit code
//!  │
//! verbs    build · verify · query · init · cluster · hub (publish, verify hf://, query hf://)
//!  │
//! stages   ingest → feed → transform → sort → validate → write → hash → rejects → card → release
//!  │
//! sql      session · print · udf · groups · engine
//!  │
//! core     error · report · options · progress · spec · schema · names · values · numbers · jsonl
//! ```
//!
//! The stages, in the order a build runs them:
//!
//! 1. [`ingest`](stages::ingest): raw files (JSON Lines, JSON, CSV, Parquet, Tinker logs, W&B
//!    exports, evaluation outputs) → typed Arrow batches with provenance.
//! 2. [`feed`](stages::feed): a source streamed straight into the one table query that reads it.
//! 3. [`transform`](stages::transform): a table's SQL → conformed batches, per split.
//! 4. [`sort`](stages::sort): rows in key order, spilled to disk past a memory budget.
//! 5. [`validate`](stages::validate): rows × schema → violations, rejects, duplicate-key rules.
//! 6. [`write`](stages::write): batches → Parquet (zstd), and JSON Lines copies where the
//!    pipeline's `formats` ask for them.
//! 7. [`hash`](stages::hash): SHA-256 and git blob SHA-1 of files.
//! 8. [`rejects`](stages::rejects): rows set aside, with the reason, in `rejects/`.
//! 9. [`card`](stages::card): the dataset card (`README.md` with the Hub's YAML metadata).
//! 10. [`release`](stages::release): the release folder, `manifest.json`, `SHA256SUMS`,
//!     `datapackage.json`, [`croissant.json`](stages::croissant), atomic commit.
//!
//! A stage returns what it found with what it made: a source read gives its rows and its
//! findings ([`Ingested::found`](stages::ingest::Ingested::found): violations, rejected rows,
//! warnings), and the build verb adds each stage's findings to the build's report in order.
//! `verify` returns typed [`Problem`](verbs::verify::Problem)s, each of a
//! [`ProblemKind`](verbs::verify::ProblemKind), that the command line prints.
//!
//! The verbs call them: [`init`](verbs::init) writes a pipeline for a folder of raw outputs;
//! [`build`](verbs::build) runs the stages over a pipeline;
//! [`verify`](verbs::verify) re-checks a release folder; [`query`](verbs::query) registers a
//! release or raw files for SQL; [`hub`](verbs::hub) publishes to the Hugging Face Hub and
//! verifies and queries what is there, uploading through Xet storage where the Hub offers it;
//! [`cluster`](verbs::cluster) runs a Ballista scheduler or executor that knows runpack's SQL
//! functions. [`sql`] holds the DataFusion session all of them share, embedded or on a
//! Ballista cluster ([`engine`](sql::engine)); [`core`] the types every floor uses, from [`Error`] to the pipeline
//! definition ([`PipelineSpec`](core::spec::PipelineSpec)).

#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod core;
pub mod sql;
pub mod stages;
pub mod verbs;

pub use crate::core::error::{Error, Result};

//! runpack: raw LLM post-training logs in, validated, hashed, documented datasets out.
//!
//! The stages, one module each:
//!
//! ```text
//! pipeline.toml ─► spec ─► ingest ─► (DataFusion SQL: pipeline) ─► validate ─► write
//!                    │        │                                          │
//!                  schema   report / rejects                      hash ─► card ─► release
//! release ─► verify        release ─► query        release ─► hub (publish, verify, query)
//! ```
//!
//! - [`spec`]: `pipeline.toml` → [`spec::PipelineSpec`].
//! - [`schema`]: Frictionless Table Schema files ↔ Arrow schemas.
//! - [`ingest`]: raw files (JSONL, JSON, CSV, Tinker logs) → typed Arrow batches with provenance.
//! - [`pipeline`]: runs the sources and the tables' SQL in dependency order; the `build` verb.
//! - [`feed`]: a source streamed straight into the one table query that reads it.
//! - [`validate`]: table rows × schema → violations, rejects, duplicate-key rules.
//! - [`write`](mod@write): batches → Parquet (zstd) and JSON Lines shards.
//! - [`hash`]: SHA-256 and git blob SHA-1 of files.
//! - [`card`]: the dataset card (`README.md` with the Hub's YAML metadata).
//! - [`release`]: the release folder, `manifest.json`, `SHA256SUMS`, atomic commit.
//! - [`verify`]: re-checks a release folder.
//! - [`query`]: SQL over a release.
//! - [`init`]: a folder of raw outputs → a pipeline (sources, tables, schemas) that builds.
//! - [`report`], [`rejects`], [`error`]: what a build tells its user.

#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod error;
pub mod hash;
pub mod ingest;
pub mod rejects;
pub mod release;
pub mod report;
pub mod schema;
pub mod sort;
pub mod spec;
pub mod validate;
pub mod write;

pub use error::{Error, Result};
pub mod cache;
pub mod card;
pub mod cli;
pub mod feed;
pub mod hub;
pub mod init;
pub mod pipeline;
pub mod query;
pub mod udf;
pub mod verify;

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
//! - [`spec`](core::spec): `pipeline.toml` → [`PipelineSpec`](core::spec::PipelineSpec).
//! - [`schema`](core::schema): Frictionless Table Schema files ↔ Arrow schemas.
//! - [`ingest`](stages::ingest): raw files (JSONL, JSON, CSV, Tinker logs) → typed Arrow batches with provenance.
//! - [`build`](verbs::build): runs the sources and the tables' SQL in dependency order; the `build` verb.
//! - [`feed`](stages::feed): a source streamed straight into the one table query that reads it.
//! - [`validate`](stages::validate): table rows × schema → violations, rejects, duplicate-key rules.
//! - [`write`](stages::write): batches → Parquet (zstd) and JSON Lines shards.
//! - [`hash`](stages::hash): SHA-256 and git blob SHA-1 of files.
//! - [`card`](stages::card): the dataset card (`README.md` with the Hub's YAML metadata).
//! - [`release`](stages::release): the release folder, `manifest.json`, `SHA256SUMS`, atomic commit.
//! - [`verify`](verbs::verify): re-checks a release folder.
//! - [`query`](sql::session): SQL over a release.
//! - [`report`](core::report), [`rejects`](stages::rejects), [`error`](core::error): what a build tells its user.

#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod core;
pub mod sql;
pub mod stages;
pub mod verbs;

pub use crate::core::error::{Error, Result};

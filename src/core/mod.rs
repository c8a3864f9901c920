//! Core: the types and rules every floor uses (errors, reports, options, progress, the pipeline
//! definition, table schemas, names, values and numbers as messages show them, the secrets
//! kept out of every message). Imports
//! nothing from the floors above it.

pub mod error;
pub mod jsonl;
pub mod names;
pub mod numbers;
pub mod options;
pub mod progress;
pub mod report;
pub mod schema;
pub mod secrets;
pub mod spec;
#[cfg(test)]
pub(crate) mod testing;
pub mod values;

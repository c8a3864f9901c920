//! Core: the types and rules every floor uses (errors, reports, the pipeline definition, table
//! schemas). Imports nothing from the floors above it.

pub mod error;
pub mod report;
pub mod schema;
pub mod spec;

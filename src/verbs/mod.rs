//! Verbs: what a user can do (build, verify, query, publish), each a sequence of stage calls.

pub mod build;
pub mod cluster;
pub mod hub;
pub mod init;
pub mod query;
pub mod verify;

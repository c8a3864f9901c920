//! Stages: the pipeline in order, each knowing nothing of the verbs that call it.

pub mod card;
pub mod croissant;
pub mod feed;
pub mod hash;
pub mod ingest;
pub mod rejects;
pub mod release;
pub mod sort;
pub mod transform;
pub mod validate;
pub mod write;

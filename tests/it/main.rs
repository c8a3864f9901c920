//! runpack's integration tests: the real binary on the bundled example, the shared corpus and
//! small hand-made inputs.

// Shared helpers: temp folders, the binary, the Python checkers.
mod util;
// The bundled tinker-rl-bench example: build, determinism, verify, query, card, killed builds.
mod example;
// The field cases from public bug reports (tests/fixtures/cases): build, verify, query.
mod cases;
// Property tests of the JSON Lines reader and float round trips.
mod properties;
// Evaluation outputs in every documented layout; sharding of large inputs.
mod evals;
// The newer tools' formats (tinker-cookbook's current layout, trackio, Inspect, lm-eval) and YAML sources.
mod formats;
// lighteval results and details, verl generation dumps, W&B metrics against their own x-axis.
mod formats_more;
// W&B exports as sources: the corpus, cases B23-B29, real offline runs, a truncated .wandb log.
mod wandb;
// The second example (tinker-wandb): Tinker runs linked to W&B runs written offline by the real client.
mod tinker_wandb;
// A Hub-compatible fake server on loopback, with faults on demand (used by the Hub tests).
mod hub_server;
// publish, verify hf:// and query hf:// against the fake Hub, read back by huggingface_hub and datasets.
mod publish;
// Publishing under injected faults, and the Hub-side field cases (B14–B33).
mod hub_cases;
// A repo shared by several releases: what publish keeps, the merged card, verify hf://, pull requests.
mod hub_shared;
// Publishing through Xet storage (a local Xet CAS behind the fake Hub), LFS fallback, --transfer.
mod hub_xet;
// Rows in key order skip the sort; the rest are sorted; the release is in key order either way.
mod order;
// Sources streamed into the one table that reads them give the same release as staged ones.
mod streaming;
// Every command block of README.md and docs/*.md runs against a copy of the project.
mod docs;
// Values that would change by being read as numbers keep their text, or are said.
mod values;
// The build verb: pipeline definitions, tables' SQL, conformed and sorted rows, failed builds.
mod build;
// The ingest stage: raw inputs read into rows, and what is said of the records that cannot be.
mod ingest;
// The validate stage: constraints, keys, duplicate policies, split names and rejects.
mod validate;
// The card stage: the dataset card's metadata, sections and what it says of the data.
mod card;
// The verify verb: a release folder re-checked.
mod verify;
// The query verb: SQL over a release or raw files, its errors and its output formats.
mod query;
// A Ballista cluster from the runpack binary: the same query results and release bytes, faults.
mod cluster;
// The command line: closed pipes, misplaced options, first mistakes.
mod cli;
// The floors of src/ (cli > verbs > stages > sql > core) import only downward.
mod layout;
// The write stage: JSON Lines copies where `formats` ask for them; NaN and infinities in them.
mod write;
// The croissant stage: croissant.json validated and loaded by mlcroissant.
mod croissant;
// `runpack init` on raw folders of each kind, then `build` with no edit in between.
mod init;

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
// Rows in key order skip the sort; the rest are sorted; the release is in key order either way.
mod order;
// Sources streamed into the one table that reads them give the same release as staged ones.
mod streaming;
// Regression tests for inputs and misuse that once crashed, passed silently or misreported.
mod regressions;

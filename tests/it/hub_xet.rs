//! Publishing through Xet storage: the fake Hub with xet-core's local CAS server behind it
//! (tests/it/hub_server.rs, `FakeHub::start_with_xet`), read back by `verify hf://` and
//! `query hf://`; the LFS fallback; `--transfer`; the bytes a republish sends.

use std::path::{Path, PathBuf};

use crate::hub_server::{Entry, FakeHub};
use crate::publish::{HubEnv, assert_tree_is_release, release_files};
use crate::util::*;

fn xet_env() -> HubEnv {
    HubEnv { hub: FakeHub::start_with_xet(), home: tempfile::tempdir().unwrap() }
}

/// Runs Python with the Hub client pointed at the fake Hub, Xet allowed (hf_xet is installed).
fn python_with_xet(env: &HubEnv, script: &str) -> std::process::Output {
    let o = run(std::process::Command::new(python())
        .arg("-c")
        .arg(python_script(script))
        .env("HF_ENDPOINT", &env.hub.url)
        .env_remove("HF_HUB_DISABLE_XET")
        .env("HF_TOKEN", "dummy")
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_HOME", env.home.path().join("py"))
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_HUB_OFFLINE"));
    assert!(o.status.success(), "python failed:\n{}\n{}", stdout(&o), stderr(&o));
    o
}

fn json_of(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

/// The LFS files of the tree at `rev` (path → sha256).
fn lfs_files(env: &HubEnv, repo: &str) -> Vec<(String, String)> {
    env.hub
        .tree(repo, "main")
        .into_iter()
        .filter_map(|(p, e)| match e {
            Entry::Lfs { sha256, .. } => Some((p, sha256)),
            Entry::Regular(_) => None,
        })
        .collect()
}

#[test]
fn publishes_through_xet_and_reads_back() {
    let env = xet_env();
    let release = example_release();
    let o = env.publish(release, "acme/xet", &["--create", "--format", "json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["transfer"], "xet", "{j:#}");
    // nothing went through Git LFS
    assert_eq!(env.hub.count("POST", "/info/lfs/objects/batch"), 0);
    assert_eq!(env.hub.count("PUT", "/lfs/"), 0);
    assert!(env.hub.count("GET", "/xet-write-token/main") >= 1);
    let parquet: u64 = release_files(release)
        .keys()
        .filter(|p| p.ends_with(".parquet"))
        .map(|p| std::fs::metadata(release.join(p)).unwrap().len())
        .sum();
    assert_eq!(j["xet"]["file_bytes"], parquet, "every LFS file went to the CAS: {j:#}");
    let sent = j["uploaded_bytes"].as_u64().unwrap();
    assert!(sent > 0 && sent == j["xet"]["xorb_bytes"].as_u64().unwrap() + j["xet"]["shard_bytes"].as_u64().unwrap());
    assert_eq!(j["uploaded_objects"], lfs_files(&env, "acme/xet").len());
    assert_tree_is_release(&env, "acme/xet", "main", "", release);
    // the Hub found each file in the CAS by its SHA-256 and rebuilt it from the chunks: the
    // bytes it serves are the release's, and its listings carry the Xet hash
    let xet = env.hub.state().xet_hashes.clone();
    for (path, sha) in lfs_files(&env, "acme/xet") {
        assert!(xet.contains_key(&sha), "{path} has no Xet hash");
        assert_eq!(
            crate::hub_server::sha256(&env.hub.state().objects[&sha]),
            sha,
            "{path}: the CAS gives back other bytes"
        );
    }
    // verify and query read it through the cache, as any other release
    let o = env.verify("hf://datasets/acme/xet", &["--download"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let o = env.query("hf://datasets/acme/xet", "SELECT count(*) AS n FROM metrics", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n13220\n");
    // the Python client reads it back from the CAS through hf_xet (X-Xet-Hash and the
    // xet-auth link on resolve, then xet-read-token), and its checksums match
    let o = python_with_xet(
        &env,
        r#"
from huggingface_hub import HfApi, snapshot_download
api = HfApi()
path = snapshot_download("acme/xet", repo_type="dataset")
res = api.verify_repo_checksums("acme/xet", repo_type="dataset", local_dir=path)
assert not res.mismatches and not res.missing_paths and not res.extra_paths, res
print(res.checked_count)
"#,
    );
    assert_eq!(stdout(&o).trim(), (release_files(release).len() + 1).to_string());
    assert!(env.hub.count("GET", "/xet-read-token/") > 0, "the Python client did not read through Xet");
    // the text report says what travelled
    let o = env.publish(release, "acme/xet2", &["--create"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("through Xet:"), "{}", stderr(&o));
}

#[test]
fn a_xet_token_about_to_expire_is_refreshed_from_the_same_route() {
    let env = xet_env();
    let release = example_release();
    // valid for 10 s: hf-xet refreshes a token that expires within 30 s before using it
    env.hub.state().xet_token_ttl = Some(10);
    let o = env.publish(release, "acme/refresh", &["--create", "--transfer", "xet"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let reads: Vec<_> = env.hub.requests().into_iter().filter(|r| r.path.contains("/xet-write-token/main")).collect();
    assert!(reads.len() >= 2, "the token was not refreshed: {} read(s)", reads.len());
    for r in &reads {
        assert_eq!(r.authorization.as_deref(), Some(format!("Bearer {}", crate::publish::TOKEN).as_str()));
    }
    assert_tree_is_release(&env, "acme/refresh", "main", "", release);
}

#[test]
fn a_cas_that_cannot_be_reached_fails_the_publish_after_the_retries_asked_for() {
    let env = xet_env();
    // a port nothing listens on
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", dead.local_addr().unwrap().port());
    drop(dead);
    env.hub.state().cas_url = Some(url.clone());
    let release = example_release();
    let h0 = env.hub.create_repo("acme/nocas");
    let started = std::time::Instant::now();
    let o = env.publish(release, "acme/nocas", &["--retries", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains(&format!("Xet upload to {url}")), "{}", stderr(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
    assert_eq!(env.hub.head("acme/nocas", "main"), Some(h0), "nothing was committed");
    assert_eq!(env.hub.count("POST", "/commit/"), 0);
}

#[test]
fn xet_picked_in_the_lfs_batch_answer_is_used_too() {
    let env = xet_env();
    env.hub.state().xet_in_batch_only = true;
    let release = example_release();
    let o = env.publish(release, "acme/batch", &["--create", "--format", "json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(json_of(&o)["transfer"], "xet");
    // xet-write-token answered 404, the batch picked xet: nothing was PUT to LFS storage
    assert!(env.hub.count("GET", "/xet-write-token/main") >= 1);
    assert_eq!(env.hub.count("PUT", "/lfs/"), 0);
    assert!(!env.hub.state().xet_hashes.is_empty());
    assert_tree_is_release(&env, "acme/batch", "main", "", release);
    // with --transfer lfs, Xet is not offered, and the batch answers with LFS transfers: here
    // the Hub already holds every object (uploaded through Xet above), so none is sent
    env.hub.clear_log();
    let o = env.publish(release, "acme/batch-lfs", &["--create", "--transfer", "lfs", "--format", "json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j = json_of(&o);
    assert!(j["transfer"].is_null(), "{j:#}");
    assert_eq!(j["reused_objects"], lfs_files(&env, "acme/batch").len(), "{j:#}");
    assert_eq!(env.hub.count("GET", "/xet-write-token/"), 0);
    assert_eq!(env.hub.count("PUT", "/lfs/"), 0);
    assert_tree_is_release(&env, "acme/batch-lfs", "main", "", release);
}

#[test]
fn without_xet_auto_falls_back_to_lfs_and_xet_is_refused() {
    let env = HubEnv::new();
    let release = example_release();
    env.hub.create_repo("acme/noxet");
    // --transfer xet: the Hub offers no Xet, nothing is committed
    let o = env.publish(release, "acme/noxet", &["--transfer", "xet"]);
    assert_eq!(o.status.code(), Some(2), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("--transfer xet: the Hub at")
            && stderr(&o).contains("offers no Xet storage for acme/noxet")
            && stderr(&o).contains("xet-write-token endpoint answered HTTP 404"),
        "{}",
        stderr(&o)
    );
    assert_eq!(env.hub.count("POST", "/commit/"), 0);
    assert_eq!(env.hub.history("acme/noxet", "main").len(), 1);
    // auto: the token endpoint answers 404, the LFS batch picks basic/multipart
    let o = env.publish(release, "acme/noxet", &["--format", "json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["transfer"], "lfs", "{j:#}");
    assert!(j["xet"].is_null());
    assert!(env.hub.count("PUT", "/lfs/") > 0);
    assert_tree_is_release(&env, "acme/noxet", "main", "", release);
    let body = env.hub.requests().into_iter().find(|r| r.path.contains("/info/lfs/objects/batch")).unwrap().body;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["transfers"], serde_json::json!(["basic", "multipart", "xet"]), "Xet is offered");
}

#[test]
fn transfer_lfs_sends_whole_files_even_where_xet_is_offered() {
    let env = xet_env();
    let release = example_release();
    let o = env.publish(release, "acme/lfs", &["--create", "--transfer", "lfs", "--format", "json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(json_of(&o)["transfer"], "lfs");
    assert_eq!(env.hub.count("GET", "/xet-write-token/"), 0);
    assert!(env.hub.count("PUT", "/lfs/") > 0);
    let body = env.hub.requests().into_iter().find(|r| r.path.contains("/info/lfs/objects/batch")).unwrap().body;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["transfers"], serde_json::json!(["basic", "multipart"]));
    assert!(env.hub.state().xet_hashes.is_empty());
    assert_tree_is_release(&env, "acme/lfs", "main", "", release);
}

/// A pipeline of one table of `rows` generated rows (in key order), version `version`.
fn metrics_release(work: &Path, rows: usize, version: &str) -> PathBuf {
    let dir = work.join("pipe");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::with_capacity(rows * 90);
    // deterministic noise (an LCG), so the values compress as real metrics do, not better
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for step in 0..rows {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let loss = 2.0 / (1.0 + step as f64 / 1000.0) + (x >> 40) as f64 / 16_777_216.0 / 10.0;
        let reward = ((x >> 20) & 0xfffff) as f64 / 1_048_576.0;
        text.push_str(&format!(
            "{{\"run\": \"run-{}\", \"step\": {step}, \"loss\": {loss}, \"reward\": {reward}, \"tokens\": {}}}\n",
            step / 5000,
            (x >> 8) & 0xffff
        ));
    }
    std::fs::write(dir.join("metrics.jsonl"), text).unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        format!(
            "name = \"grow\"\nversion = \"{version}\"\nformats = [\"parquet\"]\n[card]\nlicense = \"mit\"\n\
             [[source]]\nname = \"raw\"\npath = \"metrics.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"metrics\"\nquery = \"SELECT * FROM raw\"\n"
        ),
    )
    .unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&dir).arg("--releases-dir").arg(work.join("out")));
    assert!(o.status.success(), "build: {}", stderr(&o));
    PathBuf::from(stdout(&o).trim())
}

/// 1 % more rows at the end of a 14.5 MB table: the new version's Parquet pages are cut by
/// content, so its earlier pages are byte-identical to the old ones, and hf-xet (its shard cache
/// under HF_HOME/xet remembers the chunks sent) sends only the changed chunks.
#[test]
fn republishing_one_percent_more_rows_sends_a_small_fraction_through_xet() {
    let t = tempfile::tempdir().unwrap();
    let env = xet_env();
    let first = metrics_release(t.path(), 1_000_000, "1.0.0");
    let o = env.publish(&first, "acme/grow", &["--create", "--format", "json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let table = std::fs::metadata(first.join("data/metrics.parquet")).unwrap().len();
    let second = metrics_release(t.path(), 1_010_000, "1.0.1");
    let grown = std::fs::metadata(second.join("data/metrics.parquet")).unwrap().len();
    let o = env.publish(&second, "acme/grow", &["--format", "json"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["transfer"], "xet", "{j:#}");
    assert_eq!(j["xet"]["file_bytes"], grown, "{j:#}");
    let sent = j["uploaded_bytes"].as_u64().unwrap();
    let share = sent as f64 / grown as f64;
    eprintln!(
        "table {table} bytes, grown {grown} bytes; republish sent {sent} bytes ({:.1} %), new chunks {} bytes",
        share * 100.0,
        j["xet"]["new_bytes"]
    );
    // measured: 8.6 % (1.26 MB of 14.7 MB); with pages cut by size (--no-content-defined-chunking)
    // 43 %; through Git LFS the whole file (100 %). What stays is each column's last page.
    assert!(share < 0.15, "the republish sent {sent} of {grown} bytes ({:.1} %)", share * 100.0);
    // the Hub serves the new version's bytes
    let o = env.query("hf://datasets/acme/grow", "SELECT count(*) AS n FROM metrics", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n1010000\n");
}

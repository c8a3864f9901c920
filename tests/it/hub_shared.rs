//! A repo shared by several releases and collaborators (issue 27): publish deletes only what
//! its release published, merges the root card, and keeps concurrent publishers' configs;
//! `verify hf://` checks what a reader gets; `--create-pr` opens one pull request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::hub_server::{Action, Entry, Fault, Route};
use crate::publish::{HubEnv, assert_tree_is_release, committed, no_token, release_files};
use crate::util::*;

/// Builds release `name` `version` with one table `table` from a JSON Lines text.
fn release(work: &Path, name: &str, version: &str, table: &str, rows: &str, extra: &[&str]) -> PathBuf {
    let dir = work.join(format!("pipe-{name}-{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rows.jsonl"), rows).unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        format!(
            "name = \"{name}\"\nversion = \"{version}\"\nformats = [\"parquet\", \"jsonl\"]\n[card]\nlicense = \"mit\"\n[[source]]\nname = \"raw\"\npath = \"rows.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"{table}\"\nquery = \"SELECT * FROM raw\"\n"
        ),
    )
    .unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&dir).arg("--releases-dir").arg(work.join("out")).args(extra));
    assert!(o.status.success(), "build: {}", stderr(&o));
    PathBuf::from(stdout(&o).trim())
}

fn rows(n: usize, salt: u64) -> String {
    (0..n).map(|i| format!("{{\"step\": {i}, \"reward\": {}.5}}\n", i as u64 * 7 + salt)).collect()
}

fn spawn(env: &HubEnv, release: &Path, repo: &str, extra: &[&str]) -> std::process::Child {
    env.runpack()
        .arg("publish")
        .arg(release)
        .args(["--repo", repo, "--no-tag", "--retry-delay-ms", "20", "--retry-max-delay-ms", "100"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn ok(o: &Output) {
    no_token(o);
    assert!(o.status.success(), "{}\n{}", stdout(o), stderr(o));
}

/// The configs of the card at the root of `repo` (main), by name, with their data_files paths.
fn root_configs(env: &HubEnv, repo: &str) -> BTreeMap<String, Vec<String>> {
    let tree = env.hub.tree(repo, "main");
    let Some(Entry::Regular(card)) = tree.get("README.md") else { panic!("no root card") };
    let card = String::from_utf8(card.clone()).unwrap();
    let c = runpack::stages::card::merge::Card::parse(&card, "README.md").unwrap();
    let configs = c.meta.get("configs").and_then(|v| v.as_sequence()).cloned().unwrap_or_default();
    configs
        .iter()
        .map(|v| {
            let name = v.get("config_name").and_then(|n| n.as_str()).unwrap().to_string();
            let paths = v
                .get("data_files")
                .and_then(|d| d.as_sequence())
                .map(|s| s.iter().filter_map(|e| e.get("path").and_then(|p| p.as_str()).map(str::to_string)).collect())
                .unwrap_or_default();
            (name, paths)
        })
        .collect()
}

/// `datasets.load_dataset(repo, config, split="train").num_rows` for each config.
fn load_rows(env: &HubEnv, repo: &str, configs: &[&str]) -> BTreeMap<String, u64> {
    let o = env.python(&format!(
        r#"
import json, datasets
rows = {{}}
for name in {names}:
    rows[name] = datasets.load_dataset("{repo}", name, split="train").num_rows
print(json.dumps(rows, sort_keys=True))
"#,
        names = serde_json::to_string(configs).unwrap()
    ));
    serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap()
}

#[test]
fn two_configs_published_at_once_both_stay_and_load() {
    let t = tempfile::tempdir().unwrap();
    let alpha = release(t.path(), "alpha", "1.0.0", "alpha", &rows(7, 1), &[]);
    let beta = release(t.path(), "beta", "1.0.0", "beta", &rows(11, 2), &[]);
    let want = BTreeMap::from([("alpha".to_string(), 7u64), ("beta".to_string(), 11)]);

    // at the root, forced to collide: alpha lands between beta's plan and its commit (HTTP 412)
    let env = HubEnv::new();
    env.hub.create_repo("acme/shared");
    let files: Vec<(String, Vec<u8>)> =
        release_files(&alpha).into_keys().map(|p| (p.clone(), std::fs::read(alpha.join(&p)).unwrap())).collect();
    env.hub.fault(Fault::once(Route::Commit, Action::ConcurrentCommit(files)));
    let o = env.publish(&beta, "acme/shared", &["--no-tag"]);
    ok(&o);
    assert!(stderr(&o).contains("merged the card again"), "{}", stderr(&o));
    assert_eq!(root_configs(&env, "acme/shared").into_keys().collect::<Vec<_>>(), vec!["alpha", "beta"]);
    let tree = env.hub.tree("acme/shared", "main");
    for p in ["data/alpha.parquet", "jsonl/alpha.jsonl", "data/beta.parquet", "jsonl/beta.jsonl"] {
        assert!(tree.contains_key(p), "{p} gone: {:?}", tree.keys());
    }
    assert_eq!(load_rows(&env, "acme/shared", &["alpha", "beta"]), want);

    // at the root, two processes at once
    let env = HubEnv::new();
    env.hub.create_repo("acme/shared");
    let (a, b) = (spawn(&env, &alpha, "acme/shared", &[]), spawn(&env, &beta, "acme/shared", &[]));
    for child in [a, b] {
        ok(&child.wait_with_output().unwrap());
    }
    assert_eq!(root_configs(&env, "acme/shared").into_keys().collect::<Vec<_>>().len(), 2);
    assert_eq!(load_rows(&env, "acme/shared", &["alpha", "beta"]), want);

    // in two folders, at once: the root card names both, under their folders
    let env = HubEnv::new();
    env.hub.create_repo("acme/runs");
    let (a, b) = (
        spawn(&env, &alpha, "acme/runs", &["--path-in-repo", "runs/a"]),
        spawn(&env, &beta, "acme/runs", &["--path-in-repo", "runs/b"]),
    );
    for child in [a, b] {
        ok(&child.wait_with_output().unwrap());
    }
    let configs = root_configs(&env, "acme/runs");
    assert_eq!(
        configs,
        BTreeMap::from([
            ("runs-a-alpha".to_string(), vec!["runs/a/data/alpha.parquet".to_string()]),
            ("runs-b-beta".to_string(), vec!["runs/b/data/beta.parquet".to_string()]),
        ])
    );
    assert_tree_is_release(&env, "acme/runs", "main", "runs/a", &alpha);
    assert_tree_is_release(&env, "acme/runs", "main", "runs/b", &beta);
    assert_eq!(
        load_rows(&env, "acme/runs", &["runs-a-alpha", "runs-b-beta"]),
        BTreeMap::from([("runs-a-alpha".to_string(), 7u64), ("runs-b-beta".to_string(), 11)])
    );
    for folder in ["runs/a", "runs/b"] {
        let o = env.verify(&format!("hf://datasets/acme/runs/{folder}"), &[]);
        ok(&o);
    }
}

#[test]
fn a_foreign_file_and_a_newer_version_are_left_untouched() {
    let t = tempfile::tempdir().unwrap();
    // v1 sharded in five files, v2 in one
    let v1 = release(t.path(), "steps", "1.0.0", "steps", &rows(200, 3), &["--max-shard-bytes", "3000"]);
    let v2 = release(t.path(), "steps", "2.0.0", "steps", &rows(210, 4), &[]);
    let v1_shards: Vec<String> = release_files(&v1).into_keys().filter(|p| p.ends_with(".parquet")).collect();
    assert!(v1_shards.len() >= 3, "{v1_shards:?}");
    let env = HubEnv::new();
    env.hub.create_repo("acme/steps");
    ok(&env.publish(&v1, "acme/steps", &[]));
    env.hub.commit_files(
        "acme/steps",
        "main",
        &[("notes.txt", b"collaborator's notes"), ("data/extra.csv", b"a\n1\n")],
        &[],
    );

    // v2 deletes v1's shards (v1 listed them) and nothing else
    let o = env.publish(&v2, "acme/steps", &["--dry-run"]);
    ok(&o);
    let out = stdout(&o);
    for s in &v1_shards {
        assert!(out.lines().any(|l| l.starts_with("delete") && l.ends_with(&format!("  {s}"))), "{s}: {out}");
    }
    for k in ["notes.txt", "data/extra.csv"] {
        assert!(out.lines().any(|l| l.starts_with("keep") && l.ends_with(&format!("  {k}"))), "{k}: {out}");
    }
    // the same plan as one JSON document
    let o = env.publish(&v2, "acme/steps", &["--dry-run", "--format", "json"]);
    ok(&o);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["outcome"]["kind"], "dry_run");
    assert_eq!(doc["kept"], serde_json::json!(["data/extra.csv", "notes.txt"]));
    let gone: Vec<String> = release_files(&v1).into_keys().filter(|p| !release_files(&v2).contains_key(p)).collect();
    assert!(gone.len() > v1_shards.len(), "Parquet and JSON Lines shards: {gone:?}");
    assert_eq!(doc["deletions"], serde_json::json!(gone));
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), release_files(&v2).len());
    let shard = files.iter().find(|f| f["path"] == "data/steps.parquet").unwrap();
    assert_eq!((shard["storage"].as_str(), shard["action"].as_str()), (Some("lfs"), Some("upload")));
    let o = env.publish(&v2, "acme/steps", &[]);
    ok(&o);
    assert!(
        stderr(&o).contains("kept 2 file(s) this release did not publish: data/extra.csv, notes.txt"),
        "{}",
        stderr(&o)
    );
    let tree = env.hub.tree("acme/steps", "main");
    assert!(tree.contains_key("notes.txt") && tree.contains_key("data/extra.csv"));
    assert!(v1_shards.iter().all(|s| !tree.contains_key(s)), "{:?}", tree.keys());
    let head = env.hub.head("acme/steps", "main");

    // v1 over v2: refused before anything is sent
    env.hub.clear_log();
    let o = env.publish(&v1, "acme/steps", &[]);
    no_token(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o)
            .contains("holds version 2.0.0 of steps, newer than 1.0.0: nothing was sent; pass --allow-older-version"),
        "{}",
        stderr(&o)
    );
    assert_eq!(env.hub.head("acme/steps", "main"), head);
    assert_eq!(env.hub.count("POST", "/commit/") + env.hub.count("POST", "/preupload/"), 0);

    // with the flag, v1 replaces v2's files and still keeps the notes
    let o = env.publish(&v1, "acme/steps", &["--allow-older-version", "--tag", "v1-again"]);
    ok(&o);
    let tree = env.hub.tree("acme/steps", "main");
    assert!(tree.contains_key("notes.txt") && tree.contains_key("data/extra.csv"));
    assert!(!tree.contains_key("data/steps.parquet"), "v2's single file deleted");
    let o = env.verify("hf://datasets/acme/steps", &[]);
    assert_eq!(o.status.code(), Some(1), "the collaborator's files are no part of the release");
    assert!(stdout(&o).contains("notes.txt: on the Hub but not in the manifest"), "{}", stdout(&o));

    // --delete-unlisted makes the folder the release alone
    let o = env.publish(&v1, "acme/steps", &["--allow-older-version", "--delete-unlisted", "--no-tag"]);
    ok(&o);
    assert_tree_is_release(&env, "acme/steps", "main", "", &v1);
    ok(&env.verify("hf://datasets/acme/steps", &[]));
}

#[test]
fn verify_hf_checks_the_card_and_the_bytes_a_reader_gets() {
    let t = tempfile::tempdir().unwrap();
    let rel = release(t.path(), "toy", "1.0.0", "metrics", &rows(30, 5), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy");
    ok(&env.publish(&rel, "acme/toy", &[]));
    let url = "hf://datasets/acme/toy";
    let o = env.verify(url, &[]);
    ok(&o);
    assert!(stdout(&o).contains("by git blob sha1 = the tree's oid"), "{}", stdout(&o));
    // each file with the algorithm it was checked by
    let o = env.verify(url, &["--format", "json"]);
    ok(&o);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["ok"], true);
    let files: BTreeMap<String, String> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_string(), f["algorithm"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(files["data/metrics.parquet"], "sha256");
    assert_eq!(files["jsonl/metrics.jsonl"], "git-sha1");
    assert_eq!(files["README.md"], "git-sha1");
    assert_eq!(files.len(), release_files(&rel).len());
    let tree = env.hub.tree("acme/toy", "main");
    for f in doc["files"].as_array().unwrap() {
        let e = &tree[f["path"].as_str().unwrap()];
        let want = match e {
            Entry::Lfs { sha256, .. } => sha256.clone(),
            Entry::Regular(_) => e.oid(),
        };
        assert_eq!(f["digest"].as_str(), Some(want.as_str()));
    }

    // a regular file whose tree oid is not its bytes' git blob sha1
    env.hub.state().wrong_oid.insert("jsonl/metrics.jsonl".into());
    let o = env.verify(url, &[]);
    no_token(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let line = stdout(&o).lines().find(|l| l.starts_with("jsonl/metrics.jsonl:")).map(str::to_string);
    assert!(
        line.as_deref().is_some_and(
            |l| l.contains("the tree lists git blob sha1") && l.contains("the bytes the Hub serves have another")
        ),
        "{}",
        stdout(&o)
    );
    env.hub.state().wrong_oid.clear();

    // a stale card: card, manifest and SHA256SUMS replaced together, the data left as they were
    let stale = t.path().join("stale");
    copy_tree(&rel, &stale);
    let card = std::fs::read_to_string(stale.join("README.md")).unwrap();
    assert!(card.contains("num_examples: 30"), "{card}");
    std::fs::write(stale.join("README.md"), card.replace("num_examples: 30", "num_examples: 31")).unwrap();
    reseal(&stale);
    let read = |p: &str| std::fs::read(stale.join(p)).unwrap();
    let (c, m, s) = (read("README.md"), read("manifest.json"), read("SHA256SUMS"));
    env.hub.commit_files(
        "acme/toy",
        "main",
        &[("README.md", c.as_slice()), ("manifest.json", m.as_slice()), ("SHA256SUMS", s.as_slice())],
        &[],
    );
    let o = env.verify(url, &[]);
    no_token(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("gives split `train` 31 examples, and its Parquet files hold 30 rows"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_digest_that_is_no_sha256_makes_the_manifest_malformed() {
    let t = tempfile::tempdir().unwrap();
    let rel = release(t.path(), "toy", "1.0.0", "metrics", &rows(12, 6), &[]);
    let bad = t.path().join("bad");
    copy_tree(&rel, &bad);
    let mpath = bad.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    let i = m["files"].as_array().unwrap().iter().position(|f| f["path"] == "jsonl/metrics.jsonl").unwrap();
    let sha1 = runpack::stages::hash::git_blob_sha1(&bad.join("jsonl/metrics.jsonl")).unwrap();
    m["files"][i]["sha256"] = sha1.clone().into();
    std::fs::write(&mpath, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    // SHA256SUMS agrees with the manifest (its own line too)
    let sums = std::fs::read_to_string(bad.join("SHA256SUMS")).unwrap();
    let sums: String = sums
        .lines()
        .map(|l| match l.split_once("  ") {
            Some((_, "jsonl/metrics.jsonl")) => format!("{sha1}  jsonl/metrics.jsonl\n"),
            Some((_, "manifest.json")) => {
                format!("{}  manifest.json\n", runpack::stages::hash::sha256_bytes(&std::fs::read(&mpath).unwrap()))
            }
            _ => format!("{l}\n"),
        })
        .collect();
    std::fs::write(bad.join("SHA256SUMS"), sums).unwrap();
    let want = format!(
        "manifest.json:/files/{i}/sha256: \"{sha1}\" (jsonl/metrics.jsonl) is not a SHA-256 digest (64 lowercase hex \
         digits, found 40 hex digits, the length of a git blob SHA-1): the manifest is malformed"
    );
    // locally
    let o = run(bin().arg("verify").arg(&bad));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains(&want), "{}", stdout(&o));
    assert!(!stdout(&o).contains("mismatch"), "{}", stdout(&o));
    // on the Hub
    let env = HubEnv::new();
    env.hub.create_repo("acme/bad");
    ok(&env.publish(&rel, "acme/bad", &[]));
    let read = |p: &str| std::fs::read(bad.join(p)).unwrap();
    let (m, s) = (read("manifest.json"), read("SHA256SUMS"));
    env.hub.commit_files("acme/bad", "main", &[("manifest.json", m.as_slice()), ("SHA256SUMS", s.as_slice())], &[]);
    let o = env.verify("hf://datasets/acme/bad", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains(&want), "{}", stdout(&o));
    assert!(!stdout(&o).contains("mismatch"), "{}", stdout(&o));
    assert_eq!(stdout(&o).matches("is not a SHA-256 digest").count(), 1, "said once: {}", stdout(&o));
}

#[test]
fn create_pr_opens_one_pull_request_and_finds_it_after_a_lost_answer() {
    let t = tempfile::tempdir().unwrap();
    let rel = release(t.path(), "toy", "1.0.0", "metrics", &rows(9, 7), &[]);
    let env = HubEnv::new();
    let h0 = env.hub.create_repo("acme/pr");
    let o = env.publish(&rel, "acme/pr", &["--create-pr"]);
    ok(&o);
    assert!(stdout(&o).contains("opened pull request") && stdout(&o).contains("/discussions/1"), "{}", stdout(&o));
    let o = env.publish(&rel, "acme/pr", &["--create-pr"]);
    ok(&o);
    assert!(stdout(&o).contains("pull request #1 already holds toy 1.0.0"), "{}", stdout(&o));
    {
        let st = env.hub.state();
        assert_eq!(st.repos["acme/pr"].pulls.len(), 1, "one pull request");
    }
    assert_eq!(env.hub.head("acme/pr", "main"), Some(h0.clone()), "main untouched");
    // a changed release is another pull request
    let rel2 = release(t.path(), "toy", "1.0.1", "metrics", &rows(10, 7), &[]);
    ok(&env.publish(&rel2, "acme/pr", &["--create-pr"]));
    assert_eq!(env.hub.state().repos["acme/pr"].pulls.len(), 2);

    // the answer to the commit is lost after the pull request was opened
    let env = HubEnv::new();
    env.hub.create_repo("acme/pr");
    env.hub.fault(Fault::once(Route::Commit, Action::ApplyThenReset));
    let o = env.publish(&rel, "acme/pr", &["--create-pr"]);
    ok(&o);
    assert!(stdout(&o).contains("opened pull request") && stdout(&o).contains("/discussions/1"), "{}", stdout(&o));
    assert!(stderr(&o).contains("pull request #1 holds the release: it was opened, not sent again"), "{}", stderr(&o));
    assert_eq!(env.hub.state().repos["acme/pr"].pulls.len(), 1);
    assert_tree_is_release(&env, "acme/pr", "refs/pr/1", "", &rel);
}

#[test]
fn a_snapshot_of_the_hf_cache_verifies_locally() {
    let env = HubEnv::new();
    let rel = example_release();
    let o = env.publish(rel, "acme/snap", &["--create"]);
    ok(&o);
    let head = committed(&o);
    // the real client's snapshot (links into blobs/)
    let o = env.python(
        r#"
from huggingface_hub import snapshot_download
print(snapshot_download("acme/snap", repo_type="dataset"))
"#,
    );
    let snap = PathBuf::from(stdout(&o).lines().last().unwrap().trim());
    assert!(std::fs::symlink_metadata(snap.join("data/metrics.parquet")).unwrap().is_symlink());
    let o = run(bin().arg("verify").arg(&snap));
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("ok: "), "{}", stdout(&o));
    // runpack's own cache, after verify --download
    ok(&env.verify("hf://datasets/acme/snap", &["--download"]));
    let ours = env.cache().join("datasets--acme--snap/snapshots").join(&head);
    let o = run(bin().arg("verify").arg(&ours).arg("--data"));
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    // a link anywhere else is still no release file
    let copy = tempfile::tempdir().unwrap();
    copy_tree(rel, copy.path());
    let outside = copy.path().join("elsewhere.jsonl");
    std::fs::rename(copy.path().join("jsonl/checkpoints.jsonl"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, copy.path().join("jsonl/checkpoints.jsonl")).unwrap();
    let o = run(bin().arg("verify").arg(copy.path()));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("jsonl/checkpoints.jsonl: a symbolic link"), "{}", stdout(&o));
}

#[test]
fn query_hf_downloads_only_the_tables_the_sql_reads() {
    let env = HubEnv::new();
    let rel = example_release();
    ok(&env.publish(rel, "acme/q", &["--create"]));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rel.join("manifest.json")).unwrap()).unwrap();
    let files_of = |table: &str| -> Vec<String> {
        m["tables"].as_array().unwrap().iter().find(|t| t["name"] == table).unwrap()["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect()
    };
    let tables: Vec<String> =
        m["tables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    assert!(tables.len() > 2, "{tables:?}");
    env.hub.clear_log();
    let o = env.query("hf://datasets/acme/q", "SELECT count(*) AS n FROM metrics", &[]);
    ok(&o);
    assert_eq!(stdout(&o), "n\n13220\n");
    let fetched: Vec<String> =
        env.hub.requests().into_iter().filter(|r| r.path.contains("/resolve/")).map(|r| r.path).collect();
    for t in &tables {
        for f in files_of(t) {
            let asked = fetched.iter().any(|p| p.ends_with(&format!("/{f}")));
            assert_eq!(asked, t == "metrics", "{f} of {t}: {fetched:?}");
        }
    }
    // a second table read later is fetched then; a name folded to lower case still finds it
    let other = tables.iter().find(|t| *t != "metrics").unwrap();
    let o = env.query("hf://datasets/acme/q", &format!("SELECT count(*) AS n FROM {other}"), &[]);
    ok(&o);
}

#[test]
fn a_release_at_the_root_and_one_in_a_folder_both_verify() {
    let t = tempfile::tempdir().unwrap();
    let top = release(t.path(), "top", "1.0.0", "top", &rows(5, 8), &[]);
    let sub = release(t.path(), "sub", "1.0.0", "metrics", &rows(6, 9), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/mixed");
    ok(&env.publish(&top, "acme/mixed", &[]));
    ok(&env.publish(&sub, "acme/mixed", &["--path-in-repo", "runs/sub"]));
    assert_eq!(root_configs(&env, "acme/mixed").into_keys().collect::<Vec<_>>(), vec!["runs-sub-metrics", "top"]);
    // the root release's card now holds the folder's config too: merged, checked by its configs
    let o = env.verify("hf://datasets/acme/mixed", &[]);
    ok(&o);
    assert!(stderr(&o).contains("README.md: the repo's card also holds other releases' configs"), "{}", stderr(&o));
    assert!(stderr(&o).contains("file(s) under runs/sub/ belong to the release published there"), "{}", stderr(&o));
    ok(&env.verify("hf://datasets/acme/mixed/runs/sub", &["--data"]));
    assert_eq!(
        load_rows(&env, "acme/mixed", &["top", "runs-sub-metrics"]),
        BTreeMap::from([("runs-sub-metrics".to_string(), 6u64), ("top".to_string(), 5)])
    );
    // republishing the root release keeps the folder's config in the card
    let top2 = release(t.path(), "top", "1.0.1", "top", &rows(8, 8), &[]);
    ok(&env.publish(&top2, "acme/mixed", &[]));
    assert_eq!(root_configs(&env, "acme/mixed").into_keys().collect::<Vec<_>>(), vec!["runs-sub-metrics", "top"]);
    ok(&env.verify("hf://datasets/acme/mixed", &[]));
    // a root card that lost the folder's config is caught by the folder's verify
    let tree = env.hub.tree("acme/mixed", "main");
    let Some(Entry::Regular(card)) = tree.get("README.md") else { panic!() };
    let card = String::from_utf8(card.clone()).unwrap().replace("runs-sub-metrics", "renamed");
    env.hub.commit_files("acme/mixed", "main", &[("README.md", card.as_bytes())], &[]);
    let o = env.verify("hf://datasets/acme/mixed/runs/sub", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("README.md at the repo root: no config of this release (expected `runs-sub-metrics`)"),
        "{}",
        stdout(&o)
    );
}

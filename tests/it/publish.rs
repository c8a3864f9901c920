//! `publish`, `verify hf://…` and `query hf://…` against the fake Hub (tests/it/hub_server.rs),
//! with the real Python `huggingface_hub` and `datasets` as readers of what was published.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::hub_server::{Entry, FakeHub};
use crate::util::*;

/// The dummy token every test uses; it must never show up in any output.
pub const TOKEN: &str = "hf_dummyTOKEN_never_printed_0123456789";

/// A fake Hub plus a private HF_HOME.
pub struct HubEnv {
    pub hub: FakeHub,
    pub home: tempfile::TempDir,
}

impl HubEnv {
    pub fn new() -> HubEnv {
        HubEnv { hub: FakeHub::start(), home: tempfile::tempdir().unwrap() }
    }

    /// `runpack <args>` pointed at the fake Hub, with the token in HF_TOKEN.
    pub fn runpack(&self) -> Command {
        let mut c = bin();
        c.env("HF_ENDPOINT", &self.hub.url)
            .env("HF_TOKEN", TOKEN)
            .env("HF_HOME", self.home.path())
            .env_remove("HF_HUB_CACHE")
            .env_remove("HUGGINGFACE_HUB_CACHE")
            .env_remove("HF_HUB_OFFLINE")
            .env_remove("HF_TOKEN_PATH");
        c
    }

    /// The hub cache (HF_HOME/hub).
    pub fn cache(&self) -> PathBuf {
        self.home.path().join("hub")
    }

    /// `runpack publish <release> --repo <repo>` with fast retries and a short commit timeout.
    pub fn publish(&self, release: &Path, repo: &str, extra: &[&str]) -> Output {
        let mut c = self.runpack();
        c.arg("publish").arg(release).args(["--repo", repo, "--retry-delay-ms", "20", "--retry-max-delay-ms", "100"]);
        if !extra.contains(&"--commit-timeout") {
            c.args(["--commit-timeout", "3"]);
        }
        let o = run(c.args(extra));
        no_token(&o);
        o
    }

    pub fn verify(&self, url: &str, extra: &[&str]) -> Output {
        let o = run(self.runpack().args(["verify", url, "--retry-delay-ms", "20"]).args(extra));
        no_token(&o);
        o
    }

    pub fn query(&self, url: &str, sql: &str, extra: &[(&str, &str)]) -> Output {
        let mut c = self.runpack();
        c.args(["query", "--format", "csv", url, sql, "--retry-delay-ms", "20"]);
        for (k, v) in extra {
            c.env(k, v);
        }
        let o = run(&mut c);
        no_token(&o);
        o
    }

    /// Runs Python with the Hub client pointed at the fake Hub.
    pub fn python(&self, script: &str) -> Output {
        let o = run(Command::new(python())
            .arg("-c")
            .arg(python_script(script))
            .env("HF_ENDPOINT", &self.hub.url)
            .env("HF_HUB_DISABLE_XET", "1")
            .env("HF_TOKEN", "dummy")
            .env("HF_HUB_DISABLE_TELEMETRY", "1")
            .env("HF_HOME", self.home.path().join("py"))
            .env_remove("HF_HUB_CACHE")
            .env_remove("HF_HUB_OFFLINE"));
        assert!(o.status.success(), "python failed:\n{}\n{}", stdout(&o), stderr(&o));
        o
    }
}

/// Asserts that the token appears in neither stdout nor stderr.
pub fn no_token(o: &Output) {
    assert!(!stdout(o).contains(TOKEN) && !stderr(o).contains(TOKEN), "the token was printed");
    assert!(!stdout(o).contains("dummyTOKEN") && !stderr(o).contains("dummyTOKEN"), "part of the token was printed");
}

/// Release files (path → sha256, from manifest.json plus manifest.json and SHA256SUMS).
pub fn release_files(release: &Path) -> BTreeMap<String, String> {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    let mut out: BTreeMap<String, String> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_string(), f["sha256"].as_str().unwrap().to_string()))
        .collect();
    for f in ["manifest.json", "SHA256SUMS"] {
        out.insert(f.to_string(), crate::hub_server::sha256(&std::fs::read(release.join(f)).unwrap()));
    }
    out
}

/// Asserts that the repo's tree at `rev` (under `prefix`) is exactly the release.
pub fn assert_tree_is_release(env: &HubEnv, repo: &str, rev: &str, prefix: &str, release: &Path) {
    let tree = env.hub.tree(repo, rev);
    let want = release_files(release);
    let p = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
    let got: BTreeMap<String, String> = tree
        .iter()
        .filter(|(k, _)| k.starts_with(&p) && k.as_str() != ".gitattributes")
        .map(|(k, e)| {
            let sha = match e {
                Entry::Lfs { sha256, .. } => sha256.clone(),
                Entry::Regular(b) => crate::hub_server::sha256(b),
            };
            (k[p.len()..].to_string(), sha)
        })
        .collect();
    assert_eq!(got, want, "the tree at {rev} is not the release");
}

/// The `committed <sha>` line of publish's stdout.
pub fn committed(o: &Output) -> String {
    let out = stdout(o);
    let line = out
        .lines()
        .find(|l| l.starts_with("committed "))
        .unwrap_or_else(|| panic!("no commit line:\n{out}\n{}", stderr(o)));
    line.split_whitespace().nth(1).unwrap().to_string()
}

#[test]
fn publishes_the_example_as_one_commit_that_python_reads() {
    let env = HubEnv::new();
    let release = example_release();
    let o = env.publish(release, "acme/tinker-rl-bench", &["--create"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let commit = committed(&o);
    assert_eq!(env.hub.head("acme/tinker-rl-bench", "main").as_deref(), Some(commit.as_str()));
    assert_eq!(env.hub.history("acme/tinker-rl-bench", "main").len(), 2, "one commit on top of the initial one");
    assert_tree_is_release(&env, "acme/tinker-rl-bench", "main", "", release);
    // the card's data_files match the remote tree too (B14, after publish)
    let remote: Vec<String> = env.hub.tree("acme/tinker-rl-bench", "main").into_keys().collect();
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert_eq!(runpack::verbs::verify::card_problems(&card, &remote, &Default::default()), Vec::<String>::new());
    assert_eq!(
        env.hub.state().repos["acme/tinker-rl-bench"].tags.get("1.0.0"),
        Some(&commit),
        "tagged with the version"
    );
    // storage URLs never saw the token; the API calls carried it
    for r in env.hub.requests() {
        if r.path.starts_with("/lfs/upload") || r.path.starts_with("/lfs/part") || r.path.starts_with("/lfs/complete") {
            assert!(r.authorization.is_none(), "token sent to storage: {}", r.path);
        }
        if r.path.contains("/commit/") || r.path.contains("/preupload/") {
            assert_eq!(r.authorization.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
        }
    }
    assert!(
        env.hub.count("PUT", "/lfs/part/") > 0,
        "the metrics table went through a multipart upload: {:?}",
        env.hub.requests().iter().map(|r| format!("{} {}", r.method, r.path)).collect::<Vec<_>>()
    );
    // the real Python client and datasets read it
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    let rows: BTreeMap<String, u64> = m["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["rows"].as_u64().unwrap()))
        .collect();
    let o = env.python(&format!(
        r#"
import json
from huggingface_hub import HfApi, snapshot_download
api = HfApi()
path = snapshot_download("acme/tinker-rl-bench", repo_type="dataset")
res = api.verify_repo_checksums("acme/tinker-rl-bench", repo_type="dataset", local_dir=path)
assert not res.mismatches and not res.missing_paths and not res.extra_paths, res
assert res.checked_count == {count}, res.checked_count
import datasets
rows = {{}}
for name in {names}:
    ds = datasets.load_dataset("acme/tinker-rl-bench", name, split="train")
    rows[name] = ds.num_rows
print(json.dumps(rows, sort_keys=True))
"#,
        count = release_files(release).len() + 1,
        names = serde_json::to_string(&rows.keys().collect::<Vec<_>>()).unwrap()
    ));
    let out = stdout(&o);
    let last: BTreeMap<String, u64> = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last, rows, "datasets loads the card's row counts");
}

#[test]
fn republishing_an_unchanged_release_makes_no_commit() {
    let env = HubEnv::new();
    let release = example_release();
    let o = env.publish(release, "acme/same", &["--create"]);
    assert!(o.status.success(), "{}", stderr(&o));
    env.hub.clear_log();
    let o = env.publish(release, "acme/same", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("unchanged") && stdout(&o).contains("no commit"), "{}", stdout(&o));
    assert_eq!(env.hub.history("acme/same", "main").len(), 2);
    assert_eq!(env.hub.count("POST", "/commit/"), 0);
    assert_eq!(env.hub.count("POST", "/info/lfs/objects/batch"), 0);
}

#[test]
fn dry_run_prints_the_plan_and_sends_nothing() {
    let env = HubEnv::new();
    env.hub.create_repo("acme/plan");
    let release = example_release();
    let o = env.publish(release, "acme/plan", &["--dry-run", "-m", "Release one"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("datasets/acme/plan@main"), "{out}");
    assert!(out.contains("commit message: Release one"), "{out}");
    let files = release_files(release);
    for (path, sha) in &files {
        let line = out
            .lines()
            .find(|l| l.ends_with(&format!("  {path}")))
            .unwrap_or_else(|| panic!("{path} not in plan:\n{out}"));
        assert!(line.starts_with("upload"), "{line}");
        assert!(line.contains(sha), "{line}");
        assert!(line.contains(if path.ends_with(".parquet") { "lfs" } else { "regular" }), "{line}");
    }
    assert_eq!(env.hub.count("POST", "/commit/"), 0);
    assert_eq!(env.hub.count("POST", "/info/lfs/objects/batch"), 0);
    assert_eq!(env.hub.count("PUT", "/lfs/"), 0);
    assert_eq!(env.hub.history("acme/plan", "main").len(), 1);
    // a dry run stops where the real run would: a repo that is not there, without --create
    let o = env.publish(release, "acme/none", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("dataset repo acme/none not found"), "{}", stderr(&o));
    let o = env.publish(release, "acme/none", &["--dry-run", "--create"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(env.hub.head("acme/none", "main").is_none(), "a dry run creates nothing");
    // and it warns as the real run would of a version tag that would not move
    let o = env.publish(release, "acme/plan", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // a collaborator's file is kept (and listed); a release file deleted by someone is sent again
    env.hub.commit_files("acme/plan", "main", &[("notes.txt", b"x")], &["jsonl/evaluations.jsonl"]);
    let o = env.publish(release, "acme/plan", &["--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().any(|l| l.starts_with("keep") && l.ends_with("  notes.txt")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("upload") && l.ends_with("  jsonl/evaluations.jsonl")), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("delete")), "{out}");
    assert!(
        stderr(&o).contains("tag 1.0.0 already exists at") && stderr(&o).contains("the new commit would not be tagged"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
}

#[test]
fn verify_and_query_read_the_published_release_through_the_cache() {
    let env = HubEnv::new();
    let release = example_release();
    let o = env.publish(release, "acme/rb", &["--create"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let head = committed(&o);
    let url = "hf://datasets/acme/rb";
    // first query downloads into the cache layout
    env.hub.clear_log();
    let sql = "SELECT count(*) AS n FROM metrics";
    let o = env.query(url, sql, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n13220\n");
    assert!(env.hub.count("GET", "/resolve/") > 0);
    let repo_dir = env.cache().join("datasets--acme--rb");
    assert_eq!(std::fs::read_to_string(repo_dir.join("refs/main")).unwrap(), head, "ref without a newline");
    let files = release_files(release);
    let link = repo_dir.join("snapshots").join(&head).join("data/metrics.parquet");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        PathBuf::from(format!("../../../blobs/{}", files["data/metrics.parquet"])),
        "relative link to the blob named by sha256"
    );
    assert!(
        !walkdir::WalkDir::new(&repo_dir)
            .into_iter()
            .flatten()
            .any(|e| e.path().to_string_lossy().ends_with(".incomplete"))
    );

    // second query: metadata only, no download
    env.hub.clear_log();
    let o = env.query(url, sql, &[]);
    assert_eq!(stdout(&o), "n\n13220\n", "{}", stderr(&o));
    assert_eq!(env.hub.count("GET", "/resolve/") + env.hub.count("GET", "/lfs/objects/"), 0, "downloaded again");

    // offline: the cache alone
    env.hub.clear_log();
    let o = env.query(url, sql, &[("HF_HUB_OFFLINE", "1")]);
    assert_eq!(stdout(&o), "n\n13220\n", "{}", stderr(&o));
    assert!(env.hub.requests().is_empty(), "offline mode sent requests");

    let o = env.verify(url, &[]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("ok: "), "{}", stdout(&o));
    let o = env.verify(url, &["--against", release.to_str().unwrap()]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let o = env.verify(&format!("{url}@1.0.0"), &["--download"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));

    // the server now serves altered bytes for one object: only hashing the bytes can tell
    let sha = files["data/metrics.parquet"].clone();
    env.hub.state().altered.insert(sha.clone());
    let o = env.verify(url, &["--download"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let line = out.lines().find(|l| l.starts_with("data/metrics.parquet:")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(&sha) && line.contains("size matches"), "{line}");
    assert_eq!(out.lines().filter(|l| l.contains(": ")).count(), 1, "only the altered file is named:\n{out}");
    // the good cached blob was not replaced by the bad bytes
    assert_eq!(crate::hub_server::sha256(&std::fs::read(&link).unwrap()), sha);
}

#[test]
fn verify_names_missing_extra_and_different_files() {
    let env = HubEnv::new();
    let release = example_release();
    assert!(env.publish(release, "acme/vx", &["--create"]).status.success());
    env.hub.commit_files(
        "acme/vx",
        "main",
        &[("data/stray.parquet", b"x"), ("README.md", b"changed")],
        &["jsonl/checkpoints.jsonl"],
    );
    env.hub.state().page_size = 2;
    let o = env.verify("hf://datasets/acme/vx", &["--against", release.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("jsonl/checkpoints.jsonl: missing on the Hub"), "{out}");
    assert!(out.contains("data/stray.parquet: on the Hub but not in the manifest"), "{out}");
    assert!(out.contains("README.md: git blob sha1 mismatch"), "{out}");
    assert!(env.hub.requests().iter().any(|r| r.query.contains("cursor=")), "the tree was read page by page");
}

#[test]
fn python_client_works_against_the_fake_hub() {
    let env = HubEnv::new();
    env.hub.state().page_size = 2;
    let dir = tempfile::tempdir().unwrap();
    let o = env.python(&format!(
        r#"
import os, json
from huggingface_hub import HfApi, CommitOperationAdd, snapshot_download
from huggingface_hub.errors import HfHubHTTPError
d = {d:?}
os.makedirs(os.path.join(d, "data"), exist_ok=True)
open(os.path.join(d, "README.md"), "w").write("---\nlicense: mit\n---\n# Tiny\n")
open(os.path.join(d, "data", "rows.jsonl"), "w").write('{{"a": 1}}\n{{"a": 2}}\n')
open(os.path.join(d, "data", "blob.bin"), "wb").write(bytes(range(256)) * 800)
open(os.path.join(d, "data", "small.parquet"), "wb").write(b"PAR1" + b"x" * 100 + b"PAR1")
api = HfApi()
api.create_repo("org/tiny", repo_type="dataset")
api.create_repo("org/tiny", repo_type="dataset", exist_ok=True)
info = api.upload_folder(folder_path=d, repo_id="org/tiny", repo_type="dataset")
files = sorted(f.path for f in api.list_repo_tree("org/tiny", repo_type="dataset", recursive=True) if f.__class__.__name__ == "RepoFile")
assert files == [".gitattributes", "README.md", "data/blob.bin", "data/rows.jsonl", "data/small.parquet"], files
paths = api.get_paths_info("org/tiny", ["data/blob.bin", "README.md"], repo_type="dataset")
assert sorted(p.path for p in paths) == ["README.md", "data/blob.bin"], paths
assert [p for p in paths if p.path == "data/blob.bin"][0].lfs.sha256
try:
    api.create_commit("org/tiny", repo_type="dataset", operations=[CommitOperationAdd("x.txt", b"x")], commit_message="stale", parent_commit="0" * 40)
    raise SystemExit("a stale parent commit was accepted")
except HfHubHTTPError as e:
    assert e.response.status_code == 412, e
path = snapshot_download("org/tiny", repo_type="dataset")
res = api.verify_repo_checksums("org/tiny", repo_type="dataset", local_dir=path)
assert not res.mismatches and not res.missing_paths and not res.extra_paths, res
assert res.checked_count == 5, res
print("ok")
"#,
        d = dir.path().join("up").to_string_lossy()
    ));
    assert_eq!(stdout(&o).trim(), "ok");
    assert!(env.hub.count("PUT", "/lfs/part/") > 0, "the Python client used a multipart upload");
    assert!(env.hub.count("POST", "/lfs/complete/") > 0 && env.hub.count("POST", "/lfs/verify/") > 0);
    // runpack's remote reading agrees with what the Python client uploaded
    let tree = env.hub.tree("org/tiny", "main");
    assert!(matches!(tree["data/blob.bin"], Entry::Lfs { size: 204_800, .. }));
}

#[test]
fn a_dry_run_with_a_refused_token_says_so() {
    use crate::hub_server::{Action, Fault, Route};
    let env = HubEnv::new();
    env.hub.create_repo("acme/plan");
    let refused = Action::Status(
        401,
        vec![("x-error-message", "Invalid credentials in Authorization header".to_string())],
        String::new(),
    );
    env.hub.fault(Fault::once(Route::Revision, refused));
    let o = env.publish(example_release(), "acme/plan", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("the Hub refused the token (HTTP 401: Invalid credentials in Authorization header"),
        "{}",
        stderr(&o)
    );
}

/// Builds release `bare` (one source of one step, a card without a licence) under `dir`.
fn bare_release(dir: &Path) {
    write(dir, "s.jsonl", "{\"step\": 1}\n");
    write(dir, "pipeline.toml", &one_source("bare", "s.jsonl", "jsonl", "", "SELECT step FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_dry_run_that_cannot_read_the_repo_still_says_what_the_card_lacks() {
    use crate::hub_server::{Action, Fault, Route};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    bare_release(dir);
    let env = HubEnv::new();
    env.hub.create_repo("acme/bare");
    let refused = Action::Status(403, vec![("x-error-message", "Forbidden".to_string())], String::new());
    env.hub.fault(Fault::once(Route::Revision, refused));
    let o = env.publish(&release(dir, "bare"), "acme/bare", &["--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("warning: README.md: the card has no licence"), "{}", stderr(&o));
}

#[test]
fn offline_publish_checks_the_release_before_it_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    bare_release(dir);
    let env = HubEnv::new();
    let offline = |release: &Path| {
        let o = run(env.runpack().env("HF_HUB_OFFLINE", "1").arg("publish").arg(release).args(["--repo", "acme/bare"]));
        no_token(&o);
        assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
        stderr(&o)
    };
    // the card's gaps are said with the refusal, as the network is what is missing
    let err = offline(&release(dir, "bare"));
    assert!(err.contains("HF_HUB_OFFLINE is set: publishing needs the network"), "{err}");
    assert!(err.contains("warning: README.md: the card has no licence"), "{err}");
    // a damaged release is said first: it is what to mend before going online
    let copy = tmp.path().join("copy");
    copy_tree(&release(dir, "bare"), &copy);
    let data = std::fs::read_dir(copy.join("data")).unwrap().next().unwrap().unwrap().path();
    let mut bytes = std::fs::read(&data).unwrap();
    bytes.push(0);
    std::fs::write(&data, bytes).unwrap();
    let err = offline(&copy);
    assert!(err.contains("does not match the manifest") && err.contains("the release is damaged"), "{err}");
    assert!(!err.contains("HF_HUB_OFFLINE"), "{err}");
    assert_eq!(env.hub.requests().len(), 0, "no request is made offline");
}

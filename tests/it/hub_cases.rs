//! Publishing under faults, and the Hub-side field cases (tests/fixtures/cases B14–B33): each
//! publish either lands exactly one commit whose tree is the release, or fails with a clear
//! message and leaves the branch as it was; the token never shows in any output.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::hub_server::{Action, Fault, Route, sha256};
use crate::publish::{HubEnv, assert_tree_is_release, committed, release_files};
use crate::util::*;

/// Builds a one-table release (`metrics`) from a JSON Lines file; returns the release folder.
fn tiny_release(work: &Path, name: &str, jsonl: &Path, extra: &[&str]) -> PathBuf {
    let dir = work.join(format!("pipe-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(jsonl, dir.join("metrics.jsonl")).unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        format!(
            "name = \"{name}\"\nversion = \"1.0.0\"\nformats = [\"parquet\", \"jsonl\"]\n[card]\nlicense = \"mit\"\n[[source]]\nname = \"raw\"\npath = \"metrics.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"metrics\"\nquery = \"SELECT * FROM raw\"\n"
        ),
    )
    .unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&dir).arg("--releases-dir").arg(work.join("out")).args(extra));
    assert!(o.status.success(), "build: {}", stderr(&o));
    PathBuf::from(stdout(&o).trim())
}

/// Bodies of the commit requests received.
fn commit_bodies(env: &HubEnv) -> Vec<String> {
    env.hub
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.contains("/commit/"))
        .map(|r| String::from_utf8(r.body).unwrap())
        .collect()
}

fn parent_of(body: &str) -> String {
    let h: serde_json::Value = serde_json::from_str(body.lines().next().unwrap()).unwrap();
    h["value"]["parentCommit"].as_str().unwrap().to_string()
}

fn without_parent(body: &str) -> String {
    body.replace(&parent_of(body), "<parent>")
}

/// No request that uploads or commits reached the server.
fn nothing_sent(env: &HubEnv) {
    for r in env.hub.requests() {
        assert!(
            !(r.path.contains("/preupload/")
                || r.path.contains("/info/lfs/")
                || r.path.starts_with("/lfs/")
                || r.path.contains("/commit/")),
            "{} {} was sent",
            r.method,
            r.path
        );
    }
}

/// Every object PUT (basic) path, to spot re-uploads.
fn object_puts(env: &HubEnv) -> Vec<String> {
    env.hub.requests().into_iter().filter(|r| r.method == "PUT").map(|r| r.path).collect()
}

#[test]
fn b14_card_paths_that_match_no_file_stop_publish_before_preupload() {
    let (_t, dir) = case("B14");
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy-scores");
    let o = env.publish(&dir.join("release"), "acme/toy-scores", &[]);
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    for want in [
        "`data/def.jsonl` matches no file (did you mean `data/Def.jsonl`?",
        "`data/Def.jsonl` is in no config and split",
        "`data/ghi.jsonl` is in no config and split",
        "config `dup`: `data/abc.jsonl` is matched by several splits (train, validation)",
        "config `legacy`: data_dir `data`",
        "list explicit data_files",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    nothing_sent(&env);
    assert!(env.hub.requests().is_empty(), "pre-flight runs before any request");
}

#[test]
fn b15_yaml_tags_in_the_card_stop_publish_before_any_upload() {
    let (t, dir) = case("B15");
    let release = tiny_release(t.path(), "pixels", &dir.join("metrics.jsonl"), &[]);
    std::fs::copy(dir.join("README-tagged.md"), release.join("README.md")).unwrap();
    let env = HubEnv::new();
    env.hub.create_repo("acme/pixels");
    let o = env.publish(&release, "acme/pixels", &[]);
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(err.contains("dataset_info.features[2].array3_d.shape"), "{err}");
    assert!(err.contains("tag:yaml.org,2002:python/tuple"), "{err}");
    nothing_sent(&env);
}

#[test]
fn b16_a_rate_limited_commit_waits_retry_after_and_lands_once() {
    let (t, dir) = case("B21");
    let release = tiny_release(t.path(), "toy-episodes", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    let h0 = env.hub.create_repo("acme/toy-episodes");
    env.hub.fault(Fault::once(
        Route::Commit,
        Action::Status(
            429,
            vec![("retry-after", "2".into()), ("x-request-id", "req-b16-1".into())],
            r#"{"error": "Too many commits to this repository; retry later."}"#.into(),
        ),
    ));
    let o = env.publish(&release, "acme/toy-episodes", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let commit = committed(&o);
    let commits: Vec<_> = env.hub.requests().into_iter().filter(|r| r.path.contains("/commit/")).collect();
    assert_eq!(commits.len(), 2);
    assert!(commits[1].at.duration_since(commits[0].at) >= Duration::from_secs(2), "Retry-After not honoured");
    assert_eq!(commits[0].body, commits[1].body, "the same commit, same parentCommit");
    assert_eq!(parent_of(&String::from_utf8(commits[0].body.clone()).unwrap()), h0);
    let puts = object_puts(&env);
    let mut dedup = puts.clone();
    dedup.dedup();
    assert_eq!(puts, dedup, "an object was uploaded twice");
    assert!(stderr(&o).contains("rate limited") && stderr(&o).contains("waited 2.0 s"), "{}", stderr(&o));
    assert_eq!(env.hub.history("acme/toy-episodes", "main"), vec![commit, h0]);
}

#[test]
fn a_rate_limited_read_waits_as_long_as_the_hub_asks() {
    let (t, dir) = case("B21");
    let release = tiny_release(t.path(), "toy-limits", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/limits");
    assert!(env.publish(&release, "acme/limits", &[]).status.success());
    // the Hub's rate limit: a 429 whose `RateLimit` header says when the window resets (no
    // Retry-After), and a 503 with Retry-After; each read of the revision waits that long
    let faults = [(429, ("ratelimit", "\"api\";r=0;t=2")), (503, ("retry-after", "2"))];
    for (code, header) in faults {
        env.hub.clear_log();
        env.hub.fault(Fault::once(
            Route::Revision,
            Action::Status(code, vec![(header.0, header.1.to_string())], r#"{"error": "slow down"}"#.into()),
        ));
        let o = env.verify("hf://datasets/acme/limits", &[]);
        assert!(o.status.success(), "{code}: {}", stderr(&o));
        let reads: Vec<_> = env.hub.requests().into_iter().filter(|r| r.path.contains("/revision/")).collect();
        assert!(reads.len() >= 2, "{code}: {reads:?}");
        let waited = reads[1].at.duration_since(reads[0].at);
        assert!(waited >= Duration::from_secs(2), "{code}: waited {waited:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("waiting 2.0 s as the server asked"), "{code}: {}", stderr(&o));
    }
}

#[test]
fn b17_a_concurrent_commit_elsewhere_is_rebased_and_a_conflicting_one_stops() {
    let (t, dir) = case("B17");
    let ra = tiny_release(t.path(), "runs-a", &dir.join("runs-a.jsonl"), &[]);
    // the other publisher touched only runs/b: same operations, new parent
    let env = HubEnv::new();
    let h0 = env.hub.create_repo("acme/ci-runs");
    env.hub.fault(Fault::once(
        Route::Commit,
        Action::ConcurrentCommit(vec![("runs/b/manifest.json".into(), b"{}".to_vec())]),
    ));
    let o = env.publish(&ra, "acme/ci-runs", &["--path-in-repo", "runs/a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bodies = commit_bodies(&env);
    assert_eq!(bodies.len(), 2);
    assert_eq!(parent_of(&bodies[0]), h0);
    assert_ne!(parent_of(&bodies[1]), h0);
    assert_eq!(without_parent(&bodies[0]), without_parent(&bodies[1]), "only parentCommit differs");
    assert_eq!(env.hub.history("acme/ci-runs", "main").len(), 3, "initial, the other client's, ours");
    assert_tree_is_release(&env, "acme/ci-runs", "main", "runs/a", &ra);
    assert!(env.hub.tree("acme/ci-runs", "main").contains_key("runs/b/manifest.json"));

    // the other publisher changed one of our paths: stop, name it and the commit read
    let env = HubEnv::new();
    let h0 = env.hub.create_repo("acme/ci-runs");
    env.hub.fault(Fault::once(
        Route::Commit,
        Action::ConcurrentCommit(vec![("runs/a/manifest.json".into(), b"{}".to_vec())]),
    ));
    let o = env.publish(&ra, "acme/ci-runs", &["--path-in-repo", "runs/a"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("remote changed `runs/a/manifest.json` since {}", &h0[..7])),
        "{}",
        stderr(&o)
    );
    assert_eq!(commit_bodies(&env).len(), 1);
    assert_eq!(env.hub.history("acme/ci-runs", "main").len(), 2, "only the other client's commit");

    // a branch that keeps moving: bounded attempts, clear exit
    let env = HubEnv::new();
    env.hub.create_repo("acme/ci-runs");
    env.hub.fault(Fault {
        route: Route::Commit,
        skip: 0,
        times: 1000,
        action: Action::ConcurrentCommit(vec![("runs/b/log.txt".into(), b"x".to_vec())]),
    });
    let o = env.publish(&ra, "acme/ci-runs", &["--path-in-repo", "runs/a", "--commit-attempts", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("the branch kept moving: 3 commit requests"), "{}", stderr(&o));
    assert_eq!(commit_bodies(&env).len(), 3);
    assert!(!env.hub.tree("acme/ci-runs", "main").keys().any(|k| k.starts_with("runs/a/")));
}

#[test]
fn a_folder_that_leaves_the_repo_is_refused_before_any_request() {
    let (t, dir) = case("B17");
    let ra = tiny_release(t.path(), "runs-a", &dir.join("runs-a.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/ci-runs");
    env.hub.clear_log();
    for (folder, why) in [
        ("../x", "`.` and `..` are not folders inside the repo"),
        ("runs/../../x", "`.` and `..` are not folders inside the repo"),
        ("runs//a", "an empty folder name"),
        ("a\\b", "not `\\`"),
        (".git/hooks", "keeps `.git` and `.cache`"),
    ] {
        for dry in [false, true] {
            let mut args = vec!["--path-in-repo", folder];
            if dry {
                args.push("--dry-run");
            }
            let o = env.publish(&ra, "acme/ci-runs", &args);
            assert_eq!(o.status.code(), Some(2), "{folder}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("--path-in-repo: {folder:?} is not a folder of the repo: ")),
                "{}",
                stderr(&o)
            );
            assert!(stderr(&o).contains(why), "{}", stderr(&o));
        }
    }
    assert!(env.hub.requests().is_empty(), "{:?}", env.hub.requests());
    // nor is such a path read from the Hub, nor a revision that is no ref name (it would
    // name a file outside the cache's refs/)
    let o = env.verify("hf://datasets/acme/ci-runs/runs/../../x", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not a folder of the repo"), "{}", stderr(&o));
    for url in [
        "hf://datasets/acme/ci-runs@..%2F..%2Fescaped",
        "hf://datasets/acme/ci-runs@.hidden",
        "hf://datasets/acme/ci-runs@a%20b",
        "hf://datasets/acme/ci-runs@a..b",
        "hf://datasets/acme/ci-runs@v1.",
        "hf://datasets/acme/ci-runs@@",
    ] {
        let o = env.query(url, "SELECT 1", &[]);
        assert_eq!(o.status.code(), Some(2), "{url}: {}", stderr(&o));
        assert!(stderr(&o).contains("is not a revision name"), "{}", stderr(&o));
    }
    let o = env.publish(&ra, "acme/ci-runs", &["--revision", "../x", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--revision: \"../x\" is not a revision name"), "{}", stderr(&o));
    let o = env.publish(&ra, "acme/ci-runs", &["--tag", "a..b"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--tag: \"a..b\" is not a revision name: a ref name holds no `..`"), "{}", stderr(&o));
    // the `/`s around a folder are no part of it, as for huggingface_hub
    let o = env.publish(&ra, "acme/ci-runs", &["--path-in-repo", "/runs/a/", "--no-tag"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_tree_is_release(&env, "acme/ci-runs", "main", "runs/a", &ra);
}

#[test]
fn b17_two_publishers_at_once_both_land_intact() {
    let (t, dir) = case("B17");
    let ra = tiny_release(t.path(), "runs-a", &dir.join("runs-a.jsonl"), &[]);
    let rb = tiny_release(t.path(), "runs-b", &dir.join("runs-b.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/ci-runs");
    let spawn = |rel: &Path, prefix: &str| {
        env.runpack()
            .arg("publish")
            .arg(rel)
            .args(["--repo", "acme/ci-runs", "--path-in-repo", prefix, "--no-tag", "--retry-delay-ms", "20"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(&ra, "runs/a"), spawn(&rb, "runs/b"));
    for child in [a, b] {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    for (rel, prefix) in [(&ra, "runs/a"), (&rb, "runs/b")] {
        let o = env.verify(&format!("hf://datasets/acme/ci-runs/{prefix}"), &["--against", rel.to_str().unwrap()]);
        assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    }
    assert_eq!(env.hub.history("acme/ci-runs", "main").len(), 3, "one commit each");
}

/// Builds v1 and v2 of B19 with five shards each (same file names, other contents).
fn b19_releases(t: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let w1 = t.join("v1");
    let w2 = t.join("v2");
    (
        tiny_release(&w1, "toy-steps", &dir.join("v1.jsonl"), &["--max-shard-bytes", "2200"]),
        tiny_release(&w2, "toy-steps", &dir.join("v2.jsonl"), &["--max-shard-bytes", "1850"]),
    )
}

fn shards(release: &Path) -> Vec<String> {
    release_files(release).into_keys().filter(|p| p.ends_with(".parquet")).collect()
}

#[test]
fn b19_an_interrupted_upload_commits_nothing_and_the_rerun_resumes() {
    let (t, dir) = case("B19");
    let (v1, v2) = b19_releases(t.path(), &dir);
    let n = shards(&v2).len();
    assert!(n >= 5 && shards(&v1) == shards(&v2), "{n} shards");
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy-steps");
    let o = env.publish(&v1, "acme/toy-steps", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c1 = committed(&o);
    env.hub.clear_log();
    // the connection drops during the 5th object upload, and the server stays unreachable
    env.hub.fault(Fault { route: Route::ObjectPut, skip: 4, times: 1, action: Action::ResetAndRefuse });
    let o = env.publish(&v2, "acme/toy-steps", &["--retries", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(commit_bodies(&env).is_empty(), "no commit request");
    let stored_before = env.hub.state().objects.len();
    env.hub.state().refuse = false;
    assert_eq!(env.hub.head("acme/toy-steps", "main").as_deref(), Some(c1.as_str()));
    let o = env.verify("hf://datasets/acme/toy-steps", &["--against", v1.to_str().unwrap()]);
    assert!(o.status.success(), "remote still v1: {}", stdout(&o));
    // second run: the objects stored before are not sent again; one commit completes v2
    env.hub.clear_log();
    let o = env.publish(&v2, "acme/toy-steps", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let uploaded = object_puts(&env).len();
    let v1_objects = shards(&v1).len();
    assert_eq!(uploaded, n - (stored_before - v1_objects), "only the missing objects were uploaded");
    let bodies = commit_bodies(&env);
    assert_eq!(bodies.len(), 1);
    assert_eq!(parent_of(&bodies[0]), c1);
    assert_tree_is_release(&env, "acme/toy-steps", "main", "", &v2);
    let o = env.verify("hf://datasets/acme/toy-steps", &[]);
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn b19_a_mixed_remote_is_reported_then_repaired_by_one_commit() {
    let (t, dir) = case("B19");
    let (v1, v2) = b19_releases(t.path(), &dir);
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy-steps");
    assert!(env.publish(&v1, "acme/toy-steps", &[]).status.success());
    // a multi-commit uploader left v2's card, manifest, JSONL and the first 4 shards only
    let v2_shards = shards(&v2);
    let v1_files = release_files(&v1);
    let read = |p: &str| std::fs::read(v2.join(p)).unwrap();
    let lfs: Vec<(String, Vec<u8>)> = v2_shards.iter().take(4).map(|p| (p.clone(), read(p))).collect();
    env.hub.commit_lfs(
        "acme/toy-steps",
        "main",
        &lfs.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect::<Vec<_>>(),
    );
    let regular: Vec<(String, Vec<u8>)> =
        release_files(&v2).into_keys().filter(|p| !p.ends_with(".parquet")).map(|p| (p.clone(), read(&p))).collect();
    env.hub.commit_files(
        "acme/toy-steps",
        "main",
        &regular.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect::<Vec<_>>(),
        &[],
    );
    let o = env.verify("hf://datasets/acme/toy-steps", &[]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let n = v2_shards.len();
    assert!(out.contains(&format!("4 of {n} Parquet shards match the manifest")), "{out}");
    let v2_files = release_files(&v2);
    for p in &v2_shards[4..] {
        let line =
            out.lines().find(|l| l.starts_with(&format!("{p}:"))).unwrap_or_else(|| panic!("{p} not named:\n{out}"));
        assert!(line.contains(&v2_files[p]) && line.contains(&v1_files[p]), "expected and actual sha256: {line}");
    }
    env.hub.clear_log();
    let o = env.publish(&v2, "acme/toy-steps", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(object_puts(&env).len(), n - 4, "only the stale shards are uploaded");
    assert_eq!(commit_bodies(&env).len(), 1);
    assert!(env.verify("hf://datasets/acme/toy-steps", &[]).status.success());
}

#[test]
fn b20_a_commit_that_landed_without_an_answer_is_not_sent_again() {
    let (t, dir) = case("B20");
    let release = tiny_release(t.path(), "toy-loss", &dir.join("metrics.jsonl"), &[]);
    for action in [Action::ApplyThenDelay(Duration::from_secs(4)), Action::ApplyThenReset] {
        let env = HubEnv::new();
        let h0 = env.hub.create_repo("acme/toy-loss");
        env.hub.fault(Fault::once(Route::Commit, action.clone()));
        let o = env.publish(&release, "acme/toy-loss", &["--commit-timeout", "1"]);
        assert!(o.status.success(), "{action:?}: {}", stderr(&o));
        assert_eq!(commit_bodies(&env).len(), 1, "{action:?}: the commit was sent again");
        let history = env.hub.history("acme/toy-loss", "main");
        assert_eq!(history.len(), 2, "{action:?}: exactly one new commit");
        assert_eq!(committed(&o), history[0]);
        assert!(stderr(&o).contains("the commit landed"), "{}", stderr(&o));
        assert_eq!(history[1], h0);
        assert_tree_is_release(&env, "acme/toy-loss", "main", "", &release);
    }
}

#[test]
fn b20_a_lost_commit_that_did_not_land_is_sent_again_once() {
    let (t, dir) = case("B20");
    let release = tiny_release(t.path(), "toy-loss", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    let h0 = env.hub.create_repo("acme/toy-loss");
    env.hub.fault(Fault::once(Route::Commit, Action::Reset));
    let o = env.publish(&release, "acme/toy-loss", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bodies = commit_bodies(&env);
    assert_eq!(bodies.len(), 2);
    assert_eq!((parent_of(&bodies[0]), parent_of(&bodies[1])), (h0.clone(), h0));
    assert_eq!(env.hub.history("acme/toy-loss", "main").len(), 2);
}

#[test]
fn b20_a_partly_present_remote_is_not_reported_as_success() {
    let (t, dir) = case("B20");
    let release = tiny_release(t.path(), "toy-loss", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy-loss");
    env.hub.fault(Fault::once(Route::Commit, Action::ApplyPartialThenReset("data/metrics.parquet".into())));
    let o = env.publish(&release, "acme/toy-loss", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("`data/metrics.parquet`"), "{}", stderr(&o));
    assert_eq!(commit_bodies(&env).len(), 1);
    // a re-run completes it with one more commit
    let o = env.publish(&release, "acme/toy-loss", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_tree_is_release(&env, "acme/toy-loss", "main", "", &release);
}

#[test]
fn b21_a_permanent_403_fails_at_once_and_the_next_run_reuploads_nothing() {
    let (t, dir) = case("B21");
    let release = tiny_release(t.path(), "toy-blocked", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    let h0 = env.hub.create_repo("acme/toy-blocked");
    let msg = "Uploads to this repository are blocked by a storage policy.";
    env.hub.fault(Fault {
        route: Route::Commit,
        skip: 0,
        times: 100,
        action: Action::Status(
            403,
            vec![("x-request-id", "req-b21-403".into()), ("x-error-message", msg.into())],
            format!(r#"{{"error": "{msg}"}}"#),
        ),
    });
    let started = std::time::Instant::now();
    let o = env.publish(&release, "acme/toy-blocked", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(stderr(&o).contains(msg) && stderr(&o).contains("req-b21-403"), "{}", stderr(&o));
    assert_eq!(commit_bodies(&env).len(), 1);
    assert_eq!(env.hub.head("acme/toy-blocked", "main"), Some(h0));
    env.hub.clear_faults();
    env.hub.clear_log();
    let o = env.publish(&release, "acme/toy-blocked", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(object_puts(&env).is_empty(), "objects uploaded again");
    assert_eq!(commit_bodies(&env).len(), 1);
}

#[test]
fn b21_transient_answers_are_retried_and_permanent_ones_are_not() {
    let (t, dir) = case("B21");
    let release = tiny_release(t.path(), "toy-blocked", &dir.join("metrics.jsonl"), &[]);
    let status = |code: u16| {
        Action::Status(code, vec![("x-request-id", format!("req-{code}"))], format!(r#"{{"error": "status {code}"}}"#))
    };
    // 503, then 408, then 200
    let env = HubEnv::new();
    env.hub.create_repo("acme/t");
    env.hub.fault(Fault::once(Route::Commit, status(503)));
    env.hub.fault(Fault::once(Route::Commit, status(408)));
    let o = env.publish(&release, "acme/t", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(commit_bodies(&env).len(), 3);
    assert_eq!(env.hub.history("acme/t", "main").len(), 2);
    for code in [408u16, 429, 500, 502, 503, 504] {
        let env = HubEnv::new();
        env.hub.create_repo("acme/t");
        env.hub.fault(Fault::once(Route::Commit, status(code)));
        let o = env.publish(&release, "acme/t", &[]);
        assert!(o.status.success(), "{code}: {}", stderr(&o));
        assert_eq!(commit_bodies(&env).len(), 2, "{code}");
        assert_eq!(env.hub.history("acme/t", "main").len(), 2, "{code}: one commit landed");
    }
    for code in [400u16, 401, 403, 404, 413, 422] {
        let env = HubEnv::new();
        let h0 = env.hub.create_repo("acme/t");
        env.hub.fault(Fault::once(Route::Commit, status(code)));
        let o = env.publish(&release, "acme/t", &[]);
        assert_eq!(o.status.code(), Some(2), "{code}");
        assert!(
            stderr(&o).contains(&format!("HTTP {code}")) && stderr(&o).contains(&format!("req-{code}")),
            "{}",
            stderr(&o)
        );
        assert_eq!(commit_bodies(&env).len(), 1, "{code}: retried");
        assert_eq!(env.hub.head("acme/t", "main"), Some(h0));
    }
}

#[test]
fn b22_files_over_the_size_limit_are_refused_before_any_request() {
    let (t, dir) = case("B22");
    let release = tiny_release(t.path(), "toy-big", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy-big");
    let o = env.publish(&release, "acme/toy-big", &["--max-file-bytes", "1000"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    for (path, _) in
        release_files(&release).into_iter().filter(|(p, _)| p.starts_with("data/") || p.starts_with("jsonl/"))
    {
        let bytes = std::fs::metadata(release.join(&path)).unwrap().len();
        if bytes > 1000 {
            let line = err.lines().find(|l| l.contains(&path)).unwrap_or_else(|| panic!("{path} not named:\n{err}"));
            assert!(line.contains("> limit 1,000 bytes"), "{line}");
        }
    }
    // a 49 GiB sparse file against the 50 GB default: exact bytes and both units
    let shard = release.join("data/metrics.parquet");
    std::fs::remove_file(&shard).unwrap();
    let o = run(std::process::Command::new(python()).arg(dir.join("make.py")).arg(&shard));
    assert!(o.status.success(), "{}", stderr(&o));
    let started = std::time::Instant::now();
    let o = env.publish(&release, "acme/toy-big", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(10), "sizes are read, nothing is hashed");
    assert!(
        stderr(&o).contains(
            "data/metrics.parquet: 52,613,349,376 bytes (52.6 GB, 49.0 GiB) > limit 50,000,000,000 bytes (50.0 GB, 46.6 GiB)"
        ),
        "{}",
        stderr(&o)
    );
    assert!(env.hub.requests().is_empty(), "a request was sent");
}

#[test]
fn b32_verify_download_catches_same_size_corruption_the_listing_cannot() {
    let (t, dir) = case("B32");
    let release = tiny_release(t.path(), "toy-metrics", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy-metrics");
    assert!(env.publish(&release, "acme/toy-metrics", &[]).status.success());
    let sha = release_files(&release)["data/metrics.parquet"].clone();
    env.hub.state().altered.insert(sha.clone());
    // tree size and linked ETag agree with the manifest: the listing alone passes
    let o = env.verify("hf://datasets/acme/toy-metrics", &[]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let o = env.verify("hf://datasets/acme/toy-metrics", &["--download"]);
    assert_eq!(o.status.code(), Some(1));
    let mut bad = std::fs::read(release.join("data/metrics.parquet")).unwrap();
    bad[crate::hub_server::ALTERED_BYTE] ^= 1;
    let line =
        stdout(&o).lines().find(|l| l.starts_with("data/metrics.parquet:")).map(str::to_string).unwrap_or_default();
    assert!(line.contains(&sha) && line.contains(&sha256(&bad)) && line.contains("size matches"), "{}", stdout(&o));
    let blobs = env.cache().join("datasets--acme--toy-metrics/blobs");
    for e in std::fs::read_dir(&blobs).unwrap().flatten() {
        let data = std::fs::read(e.path()).unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        assert!(!name.ends_with(".incomplete"), "partial download left behind");
        assert_ne!(sha256(&data), sha256(&bad), "the corrupt bytes were kept as {name}");
    }
}

#[test]
fn b33_a_truncated_or_partial_cache_blob_is_fetched_again_and_hashed() {
    let (t, dir) = case("B33");
    let release = tiny_release(t.path(), "toy-cache", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/toy-cache");
    let o = env.publish(&release, "acme/toy-cache", &[]);
    let head = committed(&o);
    let shard = release.join("data/metrics.parquet");
    let sha = release_files(&release)["data/metrics.parquet"].clone();
    let blob = env.cache().join("datasets--acme--toy-cache/blobs").join(&sha);
    let plant = |extra: &[&str]| {
        let o = run(std::process::Command::new(python())
            .arg(dir.join("make.py"))
            .arg(&shard)
            .arg("data/metrics.parquet")
            .arg(env.cache())
            .arg(&head)
            .args(extra));
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let sql = "SELECT count(*) AS n, count(kl) AS k FROM metrics";
    // truncated blob: rejected, deleted, fetched again
    plant(&[]);
    let o = env.query("hf://datasets/acme/toy-cache", sql, &[]);
    assert_eq!(stdout(&o), "n,k\n30,30\n", "{}", stderr(&o));
    let size = std::fs::metadata(&shard).unwrap().len();
    assert!(
        stderr(&o).contains(&format!("expected {size} bytes"))
            || stderr(&o).contains(&format!("expected {} bytes", group(size))),
        "{}",
        stderr(&o)
    );
    assert_eq!(sha256(&std::fs::read(&blob).unwrap()), sha);
    // a partial .incomplete download is resumed by range, hashed, then moved into blobs/
    std::fs::remove_dir_all(env.cache()).unwrap();
    plant(&["--incomplete"]);
    env.hub.clear_log();
    let o = env.query("hf://datasets/acme/toy-cache", sql, &[]);
    assert_eq!(stdout(&o), "n,k\n30,30\n", "{}", stderr(&o));
    let want_range = format!("bytes={}-", size * 4 / 10);
    assert!(env.hub.requests().iter().any(|r| r.range.as_deref() == Some(want_range.as_str())), "no resume by range");
    assert_eq!(sha256(&std::fs::read(&blob).unwrap()), sha);
    // a full commit id whose files are all cached is read without asking the Hub
    env.hub.clear_log();
    let o = env.query(&format!("hf://datasets/acme/toy-cache@{head}"), sql, &[]);
    assert_eq!(stdout(&o), "n,k\n30,30\n", "{}", stderr(&o));
    assert!(env.hub.requests().is_empty(), "{:?}", env.hub.requests().len());
    // a server that keeps sending truncated bytes: a clear failure, no bad blob kept
    std::fs::remove_dir_all(env.cache()).unwrap();
    env.hub.state().truncated.insert(sha.clone());
    let o = env.query("hf://datasets/acme/toy-cache", sql, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("data/metrics.parquet") && err.contains(&sha) && err.contains(&group(size)), "{err}");
    assert!(!blob.exists(), "the bad bytes became a blob");
}

fn group(n: u64) -> String {
    runpack::core::numbers::group_digits(n)
}

#[test]
fn lost_connections_slow_answers_and_5xx_before_the_commit_are_retried() {
    let (t, dir) = case("B20");
    let release = tiny_release(t.path(), "toy-loss", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    {
        let mut st = env.hub.state();
        st.multipart_above = 500;
        st.chunk_size = 512;
    }
    env.hub.create_repo("acme/faults");
    env.hub.fault(Fault { route: Route::PartPut, skip: 1, times: 1, action: Action::Reset });
    env.hub.fault(Fault::once(Route::Preupload, Action::Status(500, vec![], "{}".into())));
    env.hub.fault(Fault::once(Route::Batch, Action::Status(503, vec![], "{}".into())));
    env.hub.fault(Fault::once(Route::Revision, Action::Delay(Duration::from_millis(300))));
    env.hub.fault(Fault::once(Route::Tree, Action::Delay(Duration::from_millis(300))));
    env.hub.fault(Fault::once(Route::Complete, Action::Status(502, vec![], "{}".into())));
    let o = env.publish(&release, "acme/faults", &["--create"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(env.hub.count("PUT", "/lfs/part/") > 2, "multipart upload");
    assert_eq!(commit_bodies(&env).len(), 1);
    assert_eq!(env.hub.history("acme/faults", "main").len(), 2);
    assert_tree_is_release(&env, "acme/faults", "main", "", &release);
}

#[test]
fn a_xet_only_server_gets_a_clear_message() {
    let (t, dir) = case("B20");
    let release = tiny_release(t.path(), "toy-loss", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    let h0 = env.hub.create_repo("acme/xet");
    env.hub.state().xet_only = true;
    let o = env.publish(&release, "acme/xet", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("only through Xet storage"), "{}", stderr(&o));
    assert_eq!(env.hub.head("acme/xet", "main"), Some(h0));
    assert!(commit_bodies(&env).is_empty());
}

#[test]
fn the_token_comes_from_a_file_and_is_never_printed() {
    let (t, dir) = case("B21");
    let release = tiny_release(t.path(), "toy-token", &dir.join("metrics.jsonl"), &[]);
    let env = HubEnv::new();
    env.hub.create_repo("acme/tok");
    let file = t.path().join("token");
    std::fs::write(&file, format!("{}\n", crate::publish::TOKEN)).unwrap();
    // the server echoes the token in its refusal: it is scrubbed
    env.hub.fault(Fault::once(
        Route::Commit,
        Action::Status(403, vec![], format!(r#"{{"error": "token {} may not write here"}}"#, crate::publish::TOKEN)),
    ));
    let o = run(env
        .runpack()
        .env_remove("HF_TOKEN")
        .args(["-v", "publish"])
        .arg(&release)
        .args(["--repo", "acme/tok", "--token-file"])
        .arg(&file));
    crate::publish::no_token(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("may not write here"), "{}", stderr(&o));
    let auth = env.hub.requests().into_iter().find(|r| r.path.contains("/preupload/")).unwrap().authorization;
    assert_eq!(auth, Some(format!("Bearer {}", crate::publish::TOKEN)), "the token file was used");
    // a token file that is not there is named as the token file
    let missing = t.path().join("no-token");
    let o = run(env.runpack().arg("publish").arg(&release).args(["--repo", "acme/tok", "--token-file"]).arg(&missing));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("{}: cannot read the token file (--token-file): ", missing.display())),
        "{}",
        stderr(&o)
    );
    // and without any token, publish refuses before uploading
    let o = run(env.runpack().env_remove("HF_TOKEN").arg("publish").arg(&release).args(["--repo", "acme/tok"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("HF_TOKEN"), "{}", stderr(&o));
}

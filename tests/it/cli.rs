//! The command line: closed pipes, misplaced options and the messages of first mistakes.

use crate::util::*;

#[test]
fn csv_output_into_a_closed_pipe_exits_0() {
    let mut child = bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(example_release())
        .arg("SELECT * FROM metrics")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_build_whose_stdout_is_closed_still_succeeds_and_verify_q_prints_only_problems() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"k\": 1}\n");
    write(dir, "pipeline.toml", &one_source("p", "a.jsonl", "jsonl", "", "SELECT k FROM raw", ""));
    let mut child = bin()
        .arg("build")
        .arg(dir)
        .arg("--releases-dir")
        .arg(dir.join("out"))
        .arg("-q")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let rel = release(dir, "p");
    assert!(rel.join("manifest.json").exists());
    // a damaged file: -q prints the problem, and no count after it
    std::fs::write(rel.join("data/t.parquet"), "{}\n").unwrap();
    let o = run(bin().args(["verify", "-q"]).arg(&rel));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("data/t.parquet"), "{}", stdout(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn options_of_a_published_release_are_refused_for_a_local_one() {
    let r = example_release();
    for (args, said) in [
        (vec!["verify", "--download"], "--download applies to a published release"),
        (vec!["verify", "--against", ".", "--retries", "3"], "--against, --retries apply to a published release"),
        // also when the value given is the default
        (vec!["verify", "--retries", "5"], "--retries applies to a published release"),
    ] {
        let o = run(bin().args(&args).arg(r));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(said), "{}", stderr(&o));
    }
    let o = run(bin().args(["query", "--token-file", "t"]).arg(r).arg("SELECT 1"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--token-file applies to a published release"), "{}", stderr(&o));
}

#[test]
fn an_error_said_to_a_closed_stderr_is_no_panic() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "one.jsonl", "{\"a\": 1}\n");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = bin()
        .args(["query", "-q"])
        .arg(tmp.path().join("one.jsonl"))
        .arg("SELECT sum(no_such_column) FROM t")
        .stdout(std::process::Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    // the SQL error's exit status, not a panic's
    assert_eq!(status.code(), Some(2));
}

#[test]
fn hub_options_that_can_never_work_are_refused_before_any_request() {
    // a closed port, no retries: anything that reached the network would fail otherwise
    let hub = |args: &[&str], endpoint: &str| {
        run(bin().args(args).env("HF_TOKEN", "hf_test").env("HF_ENDPOINT", endpoint).env_remove("HF_HUB_OFFLINE"))
    };
    let rel = example_release().to_str().unwrap().to_string();
    let closed = "http://127.0.0.1:9";
    let cases: [(&[&str], &str, &str); 5] = [
        (&["publish", &rel, "--repo", "a/b", "--tag", "bad tag"], closed, "--tag: \"bad tag\" is not a revision name"),
        (
            &["publish", &rel, "--repo", "a/b", "--commit-attempts", "0"],
            closed,
            "--commit-attempts: 0 is not a number of attempts",
        ),
        (&["publish", &rel, "--repo", "a/b", "--create-pr", "--tag", "x"], closed, "cannot be used with"),
        (&["verify", "hf://datasets/a/b", "--against", "/nonexistent/release"], closed, "/nonexistent/release"),
        (&["verify", "hf://datasets/a/b"], "not-a-url", "HF_ENDPOINT: \"not-a-url\" is not an http(s) address"),
    ];
    for (args, endpoint, said) in cases {
        let o = hub(args, endpoint);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(said), "{args:?}: {}", stderr(&o));
        // no request was sent, so none was retried
        assert!(!stderr(&o).contains("retrying"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_first_users_slips_get_messages_that_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    // a misspelled pipeline folder: the pipelines beside it are named
    let o = run(bin().arg("build").arg(repo().join("pipelines/tinker-rl-benc")));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // (every pipeline there is listed, by name)
    let said = stderr(&o);
    let listed = said.split("tinker-rl-benc: no such pipeline folder or pipeline.toml (pipelines there: ").nth(1);
    assert!(listed.is_some_and(|l| l.split([',', ')']).any(|p| p.trim() == "tinker-rl-bench")), "{said}");
    // query's arguments the other way round, a path or a glob
    let o = run(bin().args(["query", "SELECT 1"]).arg(example_release()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("the source comes first (runpack query <SOURCE> <SQL>)"), "{}", stderr(&o));
    let o = run(bin().args(["query", "SELECT count(*) FROM t", "raw/*.jsonl"]).current_dir(tmp.path()));
    assert!(stderr(&o).contains("the source comes first"), "{}", stderr(&o));
    // --against a folder that is no release, said before any request
    let o = run(bin()
        .args(["verify", "hf://datasets/a/b", "--retries", "0", "--against"])
        .arg(tmp.path())
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env_remove("HF_HUB_OFFLINE"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a release (no manifest.json); --against takes a release folder"),
        "{}",
        stderr(&o)
    );
}

/// `runpack <args>` without the environment that changes what it prints (`HF_*`,
/// `SOURCE_DATE_EPOCH`, terminal width).
fn plain(args: &[&str]) -> std::process::Command {
    let mut c = bin();
    for (k, _) in std::env::vars() {
        if k.starts_with("HF_") || k.starts_with("HUGGINGFACE_") || k == "COLUMNS" {
            c.env_remove(k);
        }
    }
    c.args(args);
    c
}

/// Filters for what differs from run to run: temporary folders and the fake Hub's port.
fn filters(tmp: &std::path::Path) -> Vec<(String, String)> {
    vec![
        (regex::escape(&tmp.display().to_string()), "[TMP]".into()),
        (regex::escape(&std::fs::canonicalize(tmp).unwrap().display().to_string()), "[TMP]".into()),
        (r"http://127\.0\.0\.1:\d+".into(), "[HUB]".into()),
    ]
}

#[test]
fn help_of_every_verb() {
    for (name, args) in [
        ("help", vec!["--help"]),
        ("help_build", vec!["build", "--help"]),
        ("help_verify", vec!["verify", "--help"]),
        ("help_query", vec!["query", "--help"]),
        ("help_publish", vec!["publish", "--help"]),
        ("help_init", vec!["init", "--help"]),
    ] {
        let o = run(&mut plain(&args));
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{name}");
        insta::assert_snapshot!(name, stdout(&o));
    }
}

#[test]
fn the_main_error_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let settings = {
        let mut s = insta::Settings::clone_current();
        for (from, to) in filters(dir) {
            s.add_filter(&from, to);
        }
        s
    };
    let _guard = settings.bind_to_scope();
    // a folder without a pipeline
    let o = run(plain(&["build"]).arg(dir.join("nowhere")));
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("error_missing_pipeline", stderr(&o));
    // a pipeline.toml with a key runpack does not know
    write(
        dir,
        "bad/pipeline.toml",
        "name = \"bad\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformt = \"jsonl\"\n",
    );
    let o = run(plain(&["build"]).arg(dir.join("bad")));
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("error_bad_pipeline_toml", stderr(&o));
    // rows that break the table's schema
    write(dir, "v/m.jsonl", "{\"id\": 1, \"n\": 2}\n{\"id\": 2, \"n\": -1}\n{\"id\": 2, \"n\": 3}\n");
    write(
        dir,
        "v/s.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"n","type":"integer","constraints":{"minimum":0}}],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "v/pipeline.toml",
        &one_source("v", "m.jsonl", "jsonl", "", "SELECT id, n FROM raw", "schema = \"s.json\"\n"),
    );
    let o = run(plain(&["build", "-q"]).arg(dir.join("v")).arg("--releases-dir").arg(dir.join("out")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    insta::assert_snapshot!("error_schema_violation", stderr(&o));
}

#[test]
fn publish_dry_run_prints_its_plan() {
    let env = crate::publish::HubEnv::new();
    env.hub.create_repo("acme/plan");
    let release = example_release();
    let o = env.publish(release, "acme/plan", &["--dry-run", "-m", "Release one"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut settings = insta::Settings::clone_current();
    for (from, to) in filters(release) {
        settings.add_filter(&from, to);
    }
    settings.add_filter(&regex::escape(&env.hub.url), "[HUB]");
    settings.bind(|| {
        insta::assert_snapshot!("publish_dry_run_stdout", stdout(&o));
        insta::assert_snapshot!("publish_dry_run_stderr", stderr(&o));
    });
}

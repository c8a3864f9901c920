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

/// A document a script reads that cannot be written (a full disk) is an error, not lost
/// without a word; a closed pipe is none (above).
#[test]
fn a_json_document_that_cannot_be_written_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"k\": 1}\n");
    write(dir, "pipeline.toml", &one_source("p", "a.jsonl", "jsonl", "", "SELECT k FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().args(["verify", "--format", "json"]).arg(release(dir, "p")).stdout(full));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("error: <stdout>: No space left on device"), "{}", stderr(&o));
    // help and the version too
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = run(bin().arg("--version").stdout(full));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("error: <stdout>: No space left on device"), "{}", stderr(&o));
}

/// The Hub token of the environment is `<token>` in every message, whatever the command, when
/// the data holds it (a config that logged it).
#[test]
fn a_token_the_data_holds_is_never_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let token = "hf_TESTSECRET123456789";
    write(dir, "a.jsonl", &format!("{{\"k\": 1}}\n{{\"k\": \"{token}\"}}\n"));
    write(dir, "pipeline.toml", &one_source("p", "a.jsonl", "jsonl", "", "SELECT k FROM raw", ""));
    for args in [&["build", "."][..], &["build", ".", "--format", "json"]] {
        let o = run(bin().current_dir(dir).args(args).env("HF_TOKEN", token));
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains(token) && all.contains("found string \"<token>\""), "{args:?}: {all}");
    }
    // a query over the raw file (the column kept as JSON text) prints the rows as found, as a
    // table keeps them; its messages hold no token
    let o = run(bin()
        .current_dir(dir)
        .args(["query", "a.jsonl", "SELECT k FROM t", "--format", "csv"])
        .env("HF_TOKEN", token));
    assert!(o.status.success() && !stderr(&o).contains(token), "{}", stderr(&o));
    // a message that cuts the value it quotes; a rejected row's reasons; what init writes
    let long = format!("{}{token}{}", "A".repeat(40), "B".repeat(40));
    write(dir, "a.jsonl", &format!("{{\"k\": 1}}\n{{\"k\": \"{long}\"}}\n"));
    let o = run(bin().current_dir(dir).args(["build", "."]).env("HF_TOKEN", token));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("found string \"AAAA") && !all.contains("hf_TESTSECR"), "{all}");
    let o = run(bin()
        .current_dir(dir)
        .args(["build", ".", "--on-invalid", "reject", "--releases-dir", "out"])
        .env("HF_TOKEN", token));
    assert!(o.status.success(), "{}", stderr(&o));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(!all.contains("hf_TESTSECR"), "{all}");
    // the release keeps the data as found, in a rejected row's reasons too: its bytes do not
    // depend on the environment's token
    let rejects = std::fs::read_to_string(dir.join("out/p/0.1.0/rejects/raw.jsonl")).unwrap();
    let o = run(bin()
        .current_dir(dir)
        .args(["build", ".", "--on-invalid", "reject", "--releases-dir", "out2"])
        .env_remove("HF_TOKEN"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.join("out2/p/0.1.0/rejects/raw.jsonl")).unwrap(), rejects);
    // logs at -vv (DataFusion's plans quote the SQL's literals)
    write(dir, "b.jsonl", "{\"k\": \"x\"}\n");
    let o = run(bin()
        .current_dir(dir)
        .args(["query", "-vv", "b.jsonl", &format!("SELECT k FROM t WHERE k = '{token}'")])
        .env_remove("RUST_LOG")
        .env("HF_TOKEN", token));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success() && all.contains("debug: ") && !all.contains("hf_TESTSECR"), "{all}");
    // a value too short for a token is no secret: messages stay whole
    let o = run(bin().current_dir(dir).args(["build", ".", "--releases-dir", "out3"]).env("HF_TOKEN", "e"));
    assert!(stderr(&o).contains("found string"), "{}", stderr(&o));
    let o = run(bin().current_dir(dir).args(["init", ".", "--name", "tok"]).env("HF_TOKEN", token));
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = std::fs::read_to_string(dir.join("pipelines/tok/pipeline.toml")).unwrap();
    assert!(!toml.contains("hf_TESTSECR"), "{toml}");
    // a file named with the token: the path init writes is the file's (its reasons hide the
    // token); a build refuses to name it in a release, and writes none
    let named = tmp.path().join("named");
    write(&named, &format!("keys_{token}.jsonl"), "{\"k\": 1}\n");
    let o = run(bin().current_dir(&named).args(["init", ".", "--name", "n", "-q"]).env("HF_TOKEN", token));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().current_dir(&named).args(["build", "pipelines/n", "-q"]).env("HF_TOKEN", token));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "raw/keys_<token>.jsonl: this input's path holds the environment's Hub token";
    assert!(stderr(&o).contains(said) && !stderr(&o).contains("hf_TESTSECR"), "{}", stderr(&o));
    assert!(
        !named.join("releases").exists()
            || std::fs::read_dir(named.join("releases/n")).map_or(true, |mut d| d.next().is_none())
    );
    // without the token in the environment there is no secret to keep
    let o = run(bin().current_dir(&named).args(["build", "pipelines/n", "-q"]).env_remove("HF_TOKEN"));
    assert!(o.status.success(), "{}", stderr(&o));
    // a folder named with the token's first 20 characters: refused too, the piece hidden
    let cut = tmp.path().join("cut");
    write(&cut, &format!("{}/log.jsonl", &token[..20]), "{\"k\": 1}\n");
    let toml = one_source("c", "*/log.jsonl", "jsonl", "", "SELECT k FROM raw", "");
    write(&cut, "pipeline.toml", &toml);
    let o = run(bin().current_dir(&cut).args(["build", ".", "-q"]).env("HF_TOKEN", token));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "<token>/log.jsonl: this input's path holds the environment's Hub token";
    assert!(stderr(&o).contains(said) && !stderr(&o).contains(&token[..12]), "{}", stderr(&o));
}

/// A release whose data or card holds the token would publish it: publish refuses before it
/// sends anything, naming where (without the token), dry run or not.
#[test]
fn publish_refuses_a_release_that_holds_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let token = "hf_TESTSECRET123456789";
    // a config that logged the token, in a table's text; more rows than a batch before it
    let rows: String = (0..10_000).map(|i| format!("{{\"id\": {i}, \"k\": \"v{i}\"}}\n")).collect();
    write(dir, "a.jsonl", &format!("{rows}{{\"id\": 10000, \"k\": \"token={token}\"}}\n"));
    write(dir, "pipeline.toml", &one_source("p", "a.jsonl", "jsonl", "", "SELECT id, k FROM raw", ""));
    let o = run(bin().current_dir(dir).args(["build", ".", "-q", "--releases-dir", "out"]).env("HF_TOKEN", token));
    assert!(o.status.success(), "{}", stderr(&o));
    let release = release(dir, "p");
    // no server is asked: the endpoint is one nothing listens on
    for extra in [&["--dry-run"][..], &[]] {
        let o = run(bin()
            .arg("publish")
            .arg(&release)
            .args(["--repo", "acme/p"])
            .args(extra)
            .env("HF_TOKEN", token)
            .env("HF_ENDPOINT", "http://127.0.0.1:9"));
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        let said = "data/t.parquet: column k, row 10001: the release holds the Hub token (HF_TOKEN, --token-file or \
                    the token file), and publishing would make it public; nothing was sent";
        assert!(stderr(&o).contains(said), "{extra:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("hf_TESTSECR") && !stdout(&o).contains("hf_TESTSECR"), "{}", stderr(&o));
    }
    // in a text file of the release: its line
    let o = run(bin()
        .current_dir(dir)
        .args(["build", ".", "-q", "--force", "--releases-dir", "out", "--on-invalid", "reject"])
        .env("HF_TOKEN", token));
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &format!("{toml}[card]\ndescription = \"Runs.\\nLogged with {token}.\"\n"));
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &toml.replace("SELECT id, k FROM raw", "SELECT id, k FROM raw WHERE id < 10"));
    let o = run(bin()
        .current_dir(dir)
        .args(["build", ".", "-q", "--force", "--releases-dir", "out"])
        .env_remove("HF_TOKEN"));
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    let line = card.lines().position(|l| l.contains(token)).unwrap() + 1;
    let o = run(bin().arg("publish").arg(&release).args(["--repo", "acme/p", "--dry-run"]).env("HF_TOKEN", token));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("README.md:{line}: the release holds the Hub token")), "{}", stderr(&o));
    // another token: nothing to refuse on that account (offline: the release checked, no more;
    // `hf_` and 19 characters is no token's form)
    let o = run(bin()
        .arg("publish")
        .arg(&release)
        .args(["--repo", "acme/p", "--dry-run"])
        .env("HF_TOKEN", "hf_ANOTHERTOKEN987654321")
        .env("HF_HUB_OFFLINE", "1"));
    assert!(
        stderr(&o).contains("HF_HUB_OFFLINE is set") && !stderr(&o).contains("holds the Hub token"),
        "{}",
        stderr(&o)
    );
    // the environment's own token is refused, token-like text allowed or not
    let o = run(bin()
        .arg("publish")
        .arg(&release)
        .args(["--repo", "acme/p", "--dry-run", "--allow-token-like"])
        .env("HF_TOKEN", token));
    assert!(stderr(&o).contains("the release holds the Hub token"), "{}", stderr(&o));
    // text of a token's form, in a struct of a Parquet file: its row; allowed on request
    let nested = dir.join("nested");
    let script = "import pyarrow as pa, pyarrow.parquet as pq, sys\n\
                  rows = [{'k': 'a', 'secret': 'x'}] * 20 + [{'k': 'b', 'secret': 'sk-abcdefghijklmnopqrstuvwx'}]\n\
                  pq.write_table(pa.table({'id': list(range(21)), 'st': rows}), sys.argv[1])\n";
    std::fs::create_dir_all(&nested).unwrap();
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(nested.join("raw.parquet")));
    assert!(o.status.success(), "{}", stderr(&o));
    write(&nested, "pipeline.toml", &one_source("n", "raw.parquet", "parquet", "", "SELECT id, st FROM raw", ""));
    let o = build(&nested, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let publish = |extra: &[&str]| {
        run(bin()
            .arg("publish")
            .arg(crate::util::release(&nested, "n"))
            .args(["--repo", "acme/n", "--dry-run"])
            .args(extra)
            .env_remove("HF_TOKEN")
            .env("HF_HUB_OFFLINE", "1"))
    };
    let o = publish(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "data/t.parquet: column st, row 21: the release holds what looks like an API key (sk-…), and \
                publishing would make it public; nothing was sent";
    assert!(stderr(&o).contains(said) && stderr(&o).contains("--allow-token-like"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("sk-abc"), "{}", stderr(&o));
    let o = publish(&["--allow-token-like"]);
    assert!(stderr(&o).contains("HF_HUB_OFFLINE is set") && !stderr(&o).contains("looks like"), "{}", stderr(&o));
}

#[test]
fn offline_a_dry_run_plans_as_for_an_empty_repo_and_a_publish_is_refused() {
    let r = example_release();
    let publish = |extra: &[&str]| {
        run(bin()
            .arg("publish")
            .arg(r)
            .args(["--repo", "acme/offline"])
            .args(extra)
            .env_remove("HF_TOKEN")
            .env("HF_ENDPOINT", "http://127.0.0.1:9")
            .env("HF_HUB_OFFLINE", "1"))
    };
    let o = publish(&["--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plan = stdout(&o);
    assert!(plan.contains("(HF_HUB_OFFLINE: the repo was not read; LFS/regular guessed locally)"), "{plan}");
    let files: Vec<&str> = plan.lines().filter(|l| l.starts_with("upload") || l.starts_with("skip")).collect();
    assert!(files.len() > 5 && files.iter().all(|l| l.starts_with("upload")), "{plan}");
    assert!(plan.contains("0 deletion(s)") && plan.contains("nothing was sent (--dry-run)"), "{plan}");
    assert!(stderr(&o).contains("warning: HF_HUB_OFFLINE is set: the repo on the Hub was not read"), "{}", stderr(&o));
    let o = publish(&["--dry-run", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((v["offline"].as_bool(), v["head"].is_null()), (Some(true), true), "{v}");
    let o = publish(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("publishing needs the network") && stderr(&o).contains("--dry-run plans offline"));
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
fn a_path_that_is_not_there_is_said_so_alike_by_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    for args in [&["verify"][..], &["init"], &["query"]] {
        let mut cmd = bin();
        cmd.args(args).arg(&missing);
        if args == ["query"] {
            cmd.arg("SELECT 1");
        }
        let o = run(&mut cmd);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{}: no such file or folder", missing.display())),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // a pipeline folder that is not there: the pipelines beside it, a few, hidden folders left out
    for i in 0..12 {
        write(tmp.path(), &format!("p{i:02}/pipeline.toml"), "name = \"p\"\n");
    }
    write(tmp.path(), ".hidden/pipeline.toml", "name = \"p\"\n");
    let o = run(bin().arg("build").arg(tmp.path().join("p99")));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("p99: no such pipeline folder or pipeline.toml (pipelines there: p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, and 2 more)"),
        "{}",
        stderr(&o)
    );
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
        ("help_cluster", vec!["cluster", "--help"]),
        ("help_cluster_scheduler", vec!["cluster", "scheduler", "--help"]),
        ("help_cluster_executor", vec!["cluster", "executor", "--help"]),
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

/// A project folder `<tmp>/pipelines/steps` whose table `t` has a key and a minimum: `bad`
/// rows break it (a negative `n`, a duplicated `id`).
fn steps_project(tmp: &std::path::Path, bad: bool) -> std::path::PathBuf {
    let rows = if bad {
        "{\"id\": 1, \"n\": 2}\n{\"id\": 2, \"n\": -1}\n{\"id\": 2, \"n\": 3}\n"
    } else {
        "{\"id\": 1, \"n\": 2}\n{\"id\": 2, \"n\": 5}\n"
    };
    let dir = tmp.join("pipelines/steps");
    write(&dir, "raw/m.jsonl", rows);
    write(
        tmp,
        "schemas/steps/t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"n","type":"integer","constraints":{"minimum":0}},
            {"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["id"]}"#,
    );
    write(
        &dir,
        "pipeline.toml",
        &one_source(
            "steps",
            "raw/m.jsonl",
            "jsonl",
            "",
            "SELECT id, n, _source_file, _source_line FROM raw",
            "schema = \"../../schemas/steps/t.json\"\n",
        ),
    );
    dir
}

#[test]
fn releases_go_beside_the_pipelines_folder_whatever_the_current_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(tmp.path()).unwrap();
    let pipeline = steps_project(&project, false);
    // from another folder: beside pipelines/, and the path printed is where it is
    let o = run(bin().current_dir("/").arg("build").arg(&pipeline));
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = std::path::PathBuf::from(stdout(&o).trim());
    assert_eq!(printed, project.join("releases/steps/0.1.0"));
    assert!(printed.join("manifest.json").is_file());
    // from the project, as the user typed it: the same folder, found up to date
    let o = run(bin().current_dir(&project).args(["build", "pipelines/steps"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "releases/steps/0.1.0");
    assert!(stderr(&o).contains("up to date"), "{}", stderr(&o));
    // from inside the pipeline folder
    let o = run(bin().current_dir(&pipeline).args(["build", "."]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::path::PathBuf::from(stdout(&o).trim()), printed);
    // a pipeline outside a pipelines/ folder: beside its own folder
    // (its schema path, ../../schemas/steps, names the same file from there)
    copy_tree(&pipeline, &project.join("work/steps"));
    let o = run(bin().current_dir("/").arg("build").arg(project.join("work/steps")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::path::PathBuf::from(stdout(&o).trim()), project.join("work/releases/steps/0.1.0"));
    // --releases-dir, then RUNPACK_RELEASES_DIR, relative to the current folder, win
    let o = run(bin().current_dir(&project).args(["build", "pipelines/steps", "--releases-dir", "given"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "given/steps/0.1.0");
    assert!(project.join("given/steps/0.1.0/manifest.json").is_file());
    let o = run(bin().current_dir(&project).env("RUNPACK_RELEASES_DIR", "from-env").args(["build", "pipelines/steps"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "from-env/steps/0.1.0");
}

/// Parses stdout as one JSON document, and returns it pretty-printed for a snapshot.
fn json_doc(o: &std::process::Output) -> String {
    let doc: serde_json::Value =
        serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: not one JSON document:\n{}", stdout(o)));
    serde_json::to_string_pretty(&doc).unwrap()
}

#[test]
fn build_format_json_says_what_was_built_or_what_broke_the_rules() {
    let tmp = tempfile::tempdir().unwrap();
    steps_project(tmp.path(), false);
    let o = run(plain(&["build", "pipelines/steps", "--format", "json"]).current_dir(tmp.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    // nothing for a person on stderr: the document holds it
    assert_eq!(stderr(&o), "");
    let doc = json_doc(&o);
    insta::assert_snapshot!("build_json", doc);
    let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert!(tmp.path().join(v["release"].as_str().unwrap()).join("manifest.json").is_file());

    // the data broke the rules: exit 1, and the document is still printed
    let tmp = tempfile::tempdir().unwrap();
    steps_project(tmp.path(), true);
    let o = run(plain(&["build", "pipelines/steps", "--format", "json"]).current_dir(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    insta::assert_snapshot!("build_json_violations", json_doc(&o));
    assert!(stderr(&o).contains("3 violations found; nothing was written"), "{}", stderr(&o));
    assert!(!tmp.path().join("releases/steps/0.1.0").exists());
}

#[test]
fn with_format_json_an_error_is_a_document_too() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        vec!["verify", "no-such-release", "--format", "json"],
        vec!["init", "no-such-folder", "--format", "json"],
        vec!["build", "no-such-pipeline", "--format", "json"],
        vec!["publish", "no-such-release", "--repo", "me/x", "--dry-run", "--format", "json"],
    ] {
        let o = run(plain(&args).current_dir(tmp.path()));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(doc["ok"], false, "{args:?}");
        assert_eq!(doc["exit_code"], 2, "{args:?}");
        // the same message as stderr's
        let error = doc["error"].as_str().unwrap();
        assert!(stderr(&o).contains(error), "{args:?}: {error} / {}", stderr(&o));
        assert!(error.contains("no-such-"), "{args:?}: {error}");
    }
}

#[test]
fn a_failed_command_s_json_document_holds_the_warnings_said_before() {
    // the card's gaps are said before the Hub is asked; the Hub cannot be reached here
    let tmp = tempfile::tempdir().unwrap();
    steps_project(tmp.path(), false);
    let o = run(plain(&["build", "-q", "pipelines/steps"]).current_dir(tmp.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let hub = crate::hub_server::FakeHub::start();
    let refused = crate::hub_server::Action::Status(403, vec![], "{\"error\": \"refused\"}".into());
    hub.fault(crate::hub_server::Fault::once(crate::hub_server::Route::Revision, refused));
    let args = ["publish", "releases/steps/0.1.0", "--repo", "me/x", "--dry-run", "--format", "json"];
    let o = run(plain(&args).env("HF_ENDPOINT", &hub.url).current_dir(tmp.path()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let warnings: Vec<&str> = doc["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(warnings.iter().any(|w| w.contains("the card has no licence")), "{doc}");
    for w in warnings {
        assert!(stderr(&o).contains(&format!("warning: {w}")), "{w} / {}", stderr(&o));
    }
}

#[test]
fn verify_format_json_lists_every_file_and_problem() {
    let tmp = tempfile::tempdir().unwrap();
    steps_project(tmp.path(), false);
    let o = run(plain(&["build", "-q", "pipelines/steps"]).current_dir(tmp.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(plain(&["verify", "releases/steps/0.1.0", "--data", "--format", "json"]).current_dir(tmp.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("verify_json", json_doc(&o));
    // a file changed after the build: exit 1, the problem in the document
    let data = tmp.path().join("releases/steps/0.1.0/data/t.parquet");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes.push(0);
    std::fs::write(&data, bytes).unwrap();
    let o = run(plain(&["verify", "releases/steps/0.1.0", "--format", "json"]).current_dir(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["ok"], false);
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["kind"] == "size_mismatch"
            && p["file"] == "data/t.parquet"
            && p["message"].as_str().unwrap().starts_with("data/t.parquet: size ")
            && p["message"].as_str().unwrap().contains(" bytes, manifest says ")),
        "{v:#}"
    );
    // cut short: said so
    let bytes = std::fs::read(&data).unwrap();
    std::fs::write(&data, &bytes[..bytes.len() / 2]).unwrap();
    let o = run(plain(&["verify", "releases/steps/0.1.0"]).current_dir(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains(": cut short, or written again (sha256 "), "{}", stdout(&o));
    // smaller, and ending as a Parquet file does: written again
    std::fs::write(&data, [&bytes[..bytes.len() / 2], b"PAR1"].concat()).unwrap();
    let o = run(plain(&["verify", "releases/steps/0.1.0"]).current_dir(tmp.path()));
    assert!(stdout(&o).contains(": a whole Parquet file of other bytes (written again) (sha256 "), "{}", stdout(&o));
}

#[test]
fn publish_dry_run_format_json_is_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    steps_project(tmp.path(), false);
    let o = run(plain(&["build", "-q", "pipelines/steps"]).current_dir(tmp.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let env = crate::publish::HubEnv::new();
    env.hub.create_repo("acme/steps");
    let release = tmp.path().join("releases/steps/0.1.0");
    let o = env.publish(&release, "acme/steps", &["--dry-run", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut settings = insta::Settings::clone_current();
    for (from, to) in filters(tmp.path()) {
        settings.add_filter(&from, to);
    }
    settings.add_filter(&regex::escape(&env.hub.url), "[HUB]");
    settings.bind(|| insta::assert_snapshot!("publish_dry_run_json", json_doc(&o)));
}

#[test]
fn query_without_sql_lists_the_tables_and_show_tables_is_sorted() {
    let release = example_release();
    let o = run(plain(&["query"]).arg(release));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("checkpoints: 84 rows, 12 columns\n  training_run_id  Utf8\n"), "{text}");
    assert!(text.contains("\nmetrics: 13,220 rows, 9 columns\n"), "{text}");
    let o = run(plain(&["query", "--format", "json"]).arg(release));
    assert!(o.status.success(), "{}", stderr(&o));
    let tables: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let names: Vec<&str> = tables.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["checkpoints", "eval_samples", "evaluations", "metrics", "training_runs"]);
    // the counts are the tables' own
    for t in tables.as_array().unwrap() {
        let sql = format!("SELECT count(*) AS n FROM \"{}\"", t["name"].as_str().unwrap());
        assert_eq!(query(release, &sql), format!("n\n{}\n", t["rows"]));
        let described = query(
            release,
            &format!(
                "SELECT column_name FROM information_schema.columns WHERE table_name = '{}' ORDER BY ordinal_position",
                t["name"].as_str().unwrap()
            ),
        );
        let cols: Vec<&str> = t["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(described, format!("column_name\n{}\n", cols.join("\n")));
    }
    let o = run(plain(&["query", "--format", "csv"]).arg(release));
    assert!(stdout(&o).starts_with("table,rows,column,type\ncheckpoints,84,training_run_id,Utf8\n"), "{}", stdout(&o));
    // SHOW TABLES: the same order on every run, the release's tables sorted by name
    let runs: Vec<String> = (0..5).map(|_| query(release, "SHOW TABLES")).collect();
    assert!(runs.iter().all(|r| r == &runs[0]), "{runs:#?}");
    let public: Vec<&str> =
        runs[0].lines().filter(|l| l.contains(",public,")).map(|l| l.split(',').nth(2).unwrap()).collect();
    assert_eq!(public, names);
    // raw files and releases on the Hub need SQL
    let o = run(plain(&["query"]).arg(repo().join("pipelines/tinker-rl-bench/raw/experiments/results")));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no SQL given"), "{}", stderr(&o));
    // SQL where the source goes
    let o = run(&mut plain(&["query", "SELECT 1"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("SELECT 1: no such release folder or file"), "{}", stderr(&o));
}

/// `cmd` run under a pseudo-terminal by `script` (util-linux): what the terminal showed.
/// `None` when `script` is not there.
fn on_a_terminal(cmd: &str, cwd: &std::path::Path) -> Option<String> {
    let o = std::process::Command::new("script")
        .args(["-qec", cmd, "/dev/null"])
        .current_dir(cwd)
        .env("RUST_LOG", "warn")
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    assert!(o.status.success(), "{cmd}: {}{}", stdout(&o), stderr(&o));
    Some(stdout(&o))
}

#[test]
fn progress_shows_on_a_terminal_only_and_names_its_phases() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    let exe = bin().get_program().to_string_lossy().into_owned();
    let Some(shown) = on_a_terminal(&format!("{exe} build {}", pipeline.display()), tmp.path()) else {
        eprintln!("skipped: `script` (util-linux) is not installed, so no pseudo-terminal");
        return;
    };
    for phase in
        ["reading sources", "reading source ", "running table training_runs's SQL", "writing table ", "hashing"]
    {
        assert!(shown.contains(phase), "{phase} not shown:\n{shown}");
    }
    // bytes out of a total, with a rate and what is left
    assert!(
        regex::Regex::new(
            r"reading source[^:]*: [0-9.]+ [KMG]?i?B/[0-9.]+ [KMG]?i?B \([0-9.]+ [KMG]?i?B/s, \d+s left\)"
        )
        .unwrap()
        .is_match(&shown)
    );
    let release = tmp.path().join("releases/tinker-rl-bench/1.0.0");
    let shown = on_a_terminal(&format!("{exe} verify {} --data", release.display()), tmp.path()).unwrap();
    for phase in ["hashing: ", "reading rows of table metrics: ", "/18,359 rows"] {
        assert!(shown.contains(phase), "{phase} not shown:\n{shown}");
    }
    // -q on a terminal, or stderr not a terminal: no progress
    let shown = on_a_terminal(&format!("{exe} -q verify {} --data", release.display()), tmp.path()).unwrap();
    assert!(!shown.contains("reading rows"), "{shown}");
    let o = run(bin().args(["build", "--force"]).arg(&pipeline));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("reading") && !stderr(&o).contains('\r'), "{}", stderr(&o));
    let o = run(bin().args(["verify", "--data"]).arg(&release));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

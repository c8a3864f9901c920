//! Regression tests: inputs and misuse that once crashed, passed silently or misreported.

use crate::util::*;

#[test]
fn query_refuses_a_release_with_a_missing_data_file() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::remove_file(tmp.path().join("data/metrics.parquet")).unwrap();
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM metrics"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("data file data/metrics.parquet of table metrics is missing"), "{}", stderr(&o));
}

#[test]
fn table_files_outside_the_manifest_are_refused_by_verify_and_query() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let mpath = tmp.path().join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["tables"][0]["files"] = serde_json::json!(["../outside/evil.parquet"]);
    std::fs::write(&mpath, serde_json::to_string_pretty(&m).unwrap() + "\n").unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(
            "../outside/evil.parquet: table training_runs names a data file whose path leaves the release folder"
        ),
        "{}",
        stdout(&o)
    );
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM training_runs"));
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
}

#[test]
fn long_expressions_and_writing_statements() {
    let sql = format!("SELECT 1{}", " + 1".repeat(1500));
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(example_release()).arg(&sql));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).ends_with("\n1501\n"), "{}", stdout(&o));
    // a generated filter of 600 conditions: evaluated by recursion on the runtime's threads
    let terms: Vec<String> = (0..600).map(|i| format!("step <> {}", 100_000 + i)).collect();
    let sql = format!("SELECT count(*) AS n FROM metrics WHERE {}", terms.join(" AND "));
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(example_release()).arg(&sql));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n13220\n");
    // 200 levels of parentheses parse; 600 are refused with the limit said
    let nested = |n: usize| format!("SELECT {}1{} AS x", "(".repeat(n), ")".repeat(n));
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(example_release()).arg(nested(200)));
    assert_eq!(stdout(&o), "x\n1\n", "{}", stderr(&o));
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg(nested(600)));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("recursion limit (500 levels"), "{}", stderr(&o));
    // the SQL on standard input, starting with a comment
    let mut child = bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(example_release())
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"-- how many\nSELECT count(*) AS n FROM metrics\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(stdout(&o), "n\n13220\n");
    // SIMILAR TO would match anywhere in the text: refused, in a subquery too
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg(
        "SELECT count(*) FROM metrics WHERE metric IN (SELECT metric FROM metrics WHERE metric SIMILAR TO 'loss')",
    ));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("SIMILAR TO is read by DataFusion as a regular expression"), "{}", stderr(&o));
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SET TIME ZONE '+05:00'; SELECT 1"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("write SET datafusion.execution.time_zone = '+05:00'"), "{}", stderr(&o));
    let target = tempfile::tempdir().unwrap();
    let copy = format!("COPY (SELECT 1 AS a) TO '{}' STORED AS PARQUET", target.path().join("x.parquet").display());
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg(&copy));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("DML not supported"), "{}", stderr(&o));
    assert!(!target.path().join("x.parquet").exists());
}

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
    std::fs::write(rel.join("jsonl/t.jsonl"), "{}\n").unwrap();
    let o = run(bin().args(["verify", "-q"]).arg(&rel));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("jsonl/t.jsonl"), "{}", stdout(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn keep_last_needs_the_input_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.jsonl", "{\"k\": 1, \"v\": 1}\n{\"k\": 1, \"v\": 2}\n");
    write(
        dir,
        "s.json",
        r#"{"fields":[{"name":"k","type":"integer"},{"name":"v","type":"integer"}],"primaryKey":"k"}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"kl\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nschema = \"s.json\"\nquery = \"SELECT k, v FROM raw\"\non_duplicate_key = \"keep-last\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("need the input order of the rows: select `_source_file` and `_source_line`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_fraction_for_a_declared_integer_column_is_named_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.jsonl", "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 2.5}\n");
    write(
        dir,
        "s.json",
        r#"{"fields":[{"name":"step","type":"integer","constraints":{"required":true}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"fi\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nschema = \"s.json\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("m.jsonl:3:step: value 2.5 cannot be stored as Int64 without changing it"),
        "{}",
        stderr(&o)
    );
    // one violation: the value that does not fit is not also a missing required value
    assert!(stderr(&o).contains("1 violation found"), "{}", stderr(&o));
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(dir.join("out/fi/0.1.0/rejects/t.jsonl")).unwrap();
    assert!(rejects.contains("\"_source_line\":3"), "{rejects}");
}

#[test]
fn csv_keeps_zero_padded_names_as_text_refuses_duplicate_headers_and_counts_nan() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "c.csv", "name,score\n000060,nan\n000120,0.5\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"csv\"\n[[source]]\nname = \"raw\"\npath = \"c.csv\"\nformat = \"csv\"\n[[table]]\nname = \"t\"\nquery = \"SELECT name, score FROM raw\"\n",
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("non-finite values read: 1"), "{}", stderr(&o));
    let out = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(dir.join("out/csv/0.1.0"))
        .arg("SELECT name, arrow_typeof(name) AS t FROM t ORDER BY name"));
    // a release's string columns are read as string views (DataFusion's type for Parquet text)
    assert_eq!(stdout(&out), "name,t\n000060,Utf8View\n000120,Utf8View\n");
    write(dir, "c.csv", "name,name\na,b\n");
    let o = build(dir, &["--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("c.csv:1: the CSV header names column `name` twice"), "{}", stderr(&o));
}

#[test]
fn a_glob_that_matches_nothing_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"x\": 1}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"g\"\n[[source]]\nname = \"raw\"\npath = [\"a.jsonl\", \"missing/*.jsonl\"]\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT x FROM raw\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("path \"missing/*.jsonl\" matches no file"), "{}", stderr(&o));
}

#[test]
fn a_key_repeated_in_one_object_is_named_not_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.jsonl", "{\"step\": 1, \"name\": \"a\"}\n{\"step\": 2, \"name\": \"first\", \"name\": \"second\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"dk\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT step, name FROM raw\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("m.jsonl:2:$: not valid JSON: key \"name\" appears twice in one object"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_rejected_integer_beyond_64_bits_keeps_its_digits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "a.jsonl",
        "{\"i\": -99999999999999999999, \"j\": 1}\n{\"i\": 18446744073709551616, \"j\": 2}\n{\"i\": 5, \"j\": 3}\n",
    );
    write(dir, "s.json", r#"{"fields":[{"name":"i","type":"integer"},{"name":"j","type":"integer"}]}"#);
    write(
        dir,
        "pipeline.toml",
        "name = \"big\"\n[[source]]\nname = \"a\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\nschema = \"s.json\"\n[[table]]\nname = \"t\"\nquery = \"SELECT i, j FROM a\"\n",
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(dir.join("out/big/0.1.0/rejects/a.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = rejects.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{rejects}");
    assert!(rejects.contains(r#""record":{"i":-99999999999999999999,"j":1}"#), "{rejects}");
    assert!(rejects.contains(r#""record":{"i":18446744073709551616,"j":2}"#), "{rejects}");
    assert_eq!(lines[0]["_source_line"], 1);
    // a line that does not parse and a record that does not fit go in line order
    write(dir, "a.jsonl", "{\"i\": 1, \"j\": 1}\n{\"i\": \"x\", \"j\": 2}\n{\"i\": \n");
    let o = build(dir, &["-q", "--on-invalid", "reject", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(dir.join("out/big/0.1.0/rejects/a.jsonl")).unwrap();
    let at: Vec<serde_json::Value> = rejects
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["_source_line"].clone())
        .collect();
    assert_eq!(at, vec![serde_json::json!(2), serde_json::json!(3)], "{rejects}");
}

#[test]
fn an_empty_file_in_a_glob_has_no_columns_to_disagree_with() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "logs/a.jsonl", "");
    write(dir, "logs/b.jsonl", "{\"id\": 1, \"v\": \"x\"}\n{\"id\": 2, \"v\": \"y\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"glob\"\n[[source]]\nname = \"logs\"\npath = \"logs/*.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT id, v FROM logs\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query_with(&release(dir, "glob"), "SELECT count(*) AS n FROM t", &[]), "n\n2\n");
    // files whose records do differ are still refused
    write(dir, "logs/c.jsonl", "{\"id\": 3}\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("logs/c.jsonl lacks `v` that logs/b.jsonl has"), "{}", stderr(&o));
}

#[test]
fn a_value_a_cast_cannot_convert_comes_with_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.jsonl", "{\"id\": 1, \"v\": \"7\"}\n{\"id\": 2, \"v\": \"seven\"}\n");
    write(dir, "s.json", r#"{"fields":[{"name":"id","type":"integer"},{"name":"n","type":"integer"}]}"#);
    write(
        dir,
        "pipeline.toml",
        "name = \"ch\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nschema = \"s.json\"\nquery = \"SELECT id, CAST(v AS BIGINT) AS n FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("Cannot cast string 'seven' to value of Int64 type"), "{err}");
    assert!(err.contains("hint: `TRY_CAST(x AS type)` reads a value that does not convert as NULL"), "{err}");
    assert!(err.contains("declaring the column's type in the source's schema"), "{err}");
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT CAST('x' AS INT)"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("hint: `TRY_CAST(x AS type)`"), "{}", stderr(&o));
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT no_such_column FROM metrics"));
    assert!(!stderr(&o).contains("hint: `TRY_CAST"), "{}", stderr(&o));
}

#[test]
fn sha256sums_in_any_form_sha256sum_reads_and_without_the_manifest_line() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let sums = tmp.path().join("SHA256SUMS");
    let text = std::fs::read_to_string(&sums).unwrap();
    // uppercase digests and binary-mode lines, as `sha256sum -b` writes them
    let other: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let (sha, path) = l.split_once("  ").unwrap();
            if i % 2 == 0 { format!("{}  {path}\n", sha.to_uppercase()) } else { format!("{sha} *{path}\n") }
        })
        .collect();
    std::fs::write(&sums, &other).unwrap();
    let o = run(std::process::Command::new("sha256sum").args(["-c", "--quiet", "SHA256SUMS"]).current_dir(tmp.path()));
    assert!(o.status.success(), "{}", stdout(&o));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let without: String = text.lines().filter(|l| !l.ends_with("  manifest.json")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&sums, without).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("SHA256SUMS: no line for manifest.json"), "{}", stdout(&o));
}

#[test]
fn verify_reports_every_unreadable_file_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    // a data file that is no Parquet file, though its hashes are re-signed, a README that is a
    // folder, and a new file
    let m_path = tmp.path().join("manifest.json");
    std::fs::write(tmp.path().join("data/metrics.parquet"), "hello\n").unwrap();
    let digest = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&m_path).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["path"] == "data/metrics.parquet" {
            f["sha256"] = digest.into();
            f["bytes"] = 6.into();
        }
    }
    std::fs::write(&m_path, serde_json::to_string_pretty(&m).unwrap() + "\n").unwrap();
    std::fs::remove_file(tmp.path().join("README.md")).unwrap();
    std::fs::create_dir(tmp.path().join("README.md")).unwrap();
    std::fs::write(tmp.path().join("data/extra.parquet"), "x").unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("data/metrics.parquet: not a readable Parquet file"), "{out}");
    assert!(out.contains("README.md: a folder, not a file"), "{out}");
    assert_eq!(out.matches("README.md:").count(), 1, "{out}");
    assert!(out.contains("data/extra.parquet"), "{out}");
    // each file is named once, by its path in the release
    let abs = tmp.path().canonicalize().unwrap();
    assert!(!out.contains(abs.to_str().unwrap()), "{out}");
}

#[test]
fn a_failing_statement_of_a_script_is_named_and_results_stream_in_every_format() {
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT 1; SELECT nosuch FROM metrics"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("error: query, statement 2 of 2 (SQL line 1, column 18): Schema error: No field named nosuch"),
        "{}",
        stderr(&o)
    );
    let sql = "SELECT step FROM metrics ORDER BY step LIMIT 3";
    for (format, want) in [
        ("csv", "step\n0\n0\n0\n"),
        ("ndjson", "{\"step\":0}\n{\"step\":0}\n{\"step\":0}\n"),
        ("json", "[{\"step\":0},\n{\"step\":0},\n{\"step\":0}]\n"),
    ] {
        let o = run(bin().args(["query", "-q", "--format", format]).arg(example_release()).arg(sql));
        assert_eq!(stdout(&o), want, "{format}");
    }
    for (format, want) in [("csv", "step\n"), ("ndjson", ""), ("json", "[]\n")] {
        let o = run(bin()
            .args(["query", "-q", "--format", format])
            .arg(example_release())
            .arg("SELECT step FROM metrics WHERE false"));
        assert_eq!(stdout(&o), want, "{format}");
    }
}

#[test]
fn sql_errors_name_the_place_in_the_sql() {
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT step,\n  nosuch FROM metrics"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("error: query (SQL line 2, column 3): Schema error: No field named nosuch."),
        "{}",
        stderr(&o)
    );
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT 1; SELECT * FROM nosuch"));
    assert!(
        stderr(&o).starts_with(
            "error: query, statement 2 of 2 (the tables: checkpoints, eval_samples, evaluations, metrics, \
             training_runs) (SQL line 1, column 25): Error during planning: table"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn verify_reports_symbolic_links_and_shows_odd_names_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let dir = tmp.path();
    std::os::unix::fs::symlink("/etc/hostname", dir.join("data/extra.parquet")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("notes")).unwrap();
    let sums = std::fs::read(dir.join("SHA256SUMS")).unwrap();
    std::fs::write(dir.join("SHA256SUMS.real"), sums).unwrap();
    std::fs::remove_file(dir.join("SHA256SUMS")).unwrap();
    std::os::unix::fs::symlink(dir.join("SHA256SUMS.real"), dir.join("SHA256SUMS")).unwrap();
    std::fs::write(dir.join("data/new\nline.parquet"), "x").unwrap();
    let o = run(bin().arg("verify").arg(dir));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    for want in [
        "data/extra.parquet: a symbolic link; a release holds regular files only",
        "notes: a symbolic link",
        "SHA256SUMS: a symbolic link",
        "data/new\\nline.parquet: unexpected file (not in the manifest)",
    ] {
        assert!(out.contains(want), "{want}\n{out}");
    }
    // each file once: not also as a file the card leaves out of its configs
    assert!(!out.contains("is in no config and split"), "{out}");
    // a listed file replaced by a link is said to be one
    let real = dir.join("metrics.real");
    std::fs::rename(dir.join("data/metrics.parquet"), &real).unwrap();
    std::os::unix::fs::symlink(&real, dir.join("data/metrics.parquet")).unwrap();
    let out = stdout(&run(bin().arg("verify").arg(dir)));
    assert!(out.contains("data/metrics.parquet: a symbolic link; a release holds regular files only"), "{out}");
    // a release folder that is not there is said not to exist
    let o = run(bin().arg("verify").arg(dir.join("nope")));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope does not exist"), "{}", stderr(&o));
}

#[test]
fn broken_links_outside_the_pattern_are_ignored_and_keep_text_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("raw/run1")).unwrap();
    write(dir, "raw/run1/m.jsonl", "{\"step\": 1}\n");
    std::os::unix::fs::symlink("/nonexistent", dir.join("raw/stale_link")).unwrap();
    let toml = "name = \"bl\"\n[[source]]\nname = \"raw\"\npath = \"raw/{run}/m.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT step FROM raw\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // a link the pattern matches is named
    std::os::unix::fs::symlink("/nonexistent", dir.join("raw/run2")).unwrap();
    std::fs::create_dir_all(dir.join("raw/run3")).unwrap();
    std::os::unix::fs::symlink("/nonexistent", dir.join("raw/run3/m.jsonl")).unwrap();
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("raw/run3/m.jsonl: a symbolic link to nothing"), "{}", stderr(&o));
    std::fs::remove_file(dir.join("raw/run3/m.jsonl")).unwrap();
    write(dir, "pipeline.toml", &toml.replace("format = \"jsonl\"\n", "format = \"jsonl\"\nkeep_text = true\n"));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`keep_text` applies to format"), "{}", stderr(&o));
}

#[test]
fn an_object_empty_in_every_input_is_named_and_can_be_kept_as_json_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "r.json", "{\"files\": {}, \"n\": 1}\n");
    let toml = "name = \"eo\"\n[[source]]\nname = \"raw\"\npath = \"r.json\"\nformat = \"json\"\n[[table]]\nname = \"t\"\nquery = \"SELECT files, n FROM raw\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q"]);
    // no input decides the fields: the pipeline's to say (exit 2, as a column null everywhere),
    // which --on-invalid reject cannot change
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("(source raw): $.files: every input has an empty object `{}` here (the first: r.json)"),
        "{err}"
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    write(
        dir,
        "pipeline.toml",
        &toml.replace(
            "format = \"json\"\n",
            "format = \"json\"\n[[source.field]]\nname = \"files\"\ntype = \"object\"\n",
        ),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "eo"), "SELECT files, n FROM t"), "files,n\n{},1\n");
}

#[test]
fn a_long_layout_of_objects_names_the_key_and_takes_a_declared_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "summary.json",
        "{\"gsm8k\": {\"score\": 0.5, \"num_examples\": 4}, \"math\": {\"score\": 0.25, \"num_examples\": 2}}\n",
    );
    let toml = "name = \"lo\"\n[[source]]\nname = \"raw\"\npath = \"summary.json\"\nformat = \"json\"\nlayout = \"long\"\nid_columns = [\"run\"]\n[[source.field]]\nname = \"run\"\ntype = \"string\"\n[[table]]\nname = \"t\"\nquery = \"SELECT key, value FROM raw\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("summary.json:$.math: expected number, found an object"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("in the long layout `value` is a number unless the source declares its type"),
        "{}",
        stderr(&o)
    );
    let declared = toml.replace(
        "[[table]]",
        "[[source.field]]\nname = \"value\"\ntype = \"object\"\nfields = [{name = \"score\", type = \"number\"}, {name = \"num_examples\", type = \"integer\"}]\n[[table]]",
    );
    write(
        dir,
        "pipeline.toml",
        &declared.replace(
            "SELECT key, value FROM raw",
            "SELECT key, value['score'] AS score, value['num_examples'] AS n FROM raw",
        ),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "lo"), "SELECT * FROM t ORDER BY key"), "key,score,n\ngsm8k,0.5,4\nmath,0.25,2\n");
}

#[test]
fn non_finite_numbers_inside_json_text_columns_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "j.jsonl", "{\"a\": 1, \"j\": {\"x\": [NaN, -Infinity], \"y\": 18446744073709551616}}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"jn\"\n[[source]]\nname = \"raw\"\npath = \"j.jsonl\"\nformat = \"jsonl\"\n[[source.field]]\nname = \"j\"\ntype = \"object\"\n[[table]]\nname = \"t\"\nquery = \"SELECT a, j FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "jn").join("README.md")).unwrap();
    assert!(card.contains("| non-finite values read | 2 |"), "{card}");
    assert_eq!(
        query(&release(dir, "jn"), "SELECT j FROM t"),
        "j\n\"{\"\"x\"\":[\"\"NaN\"\",\"\"-Infinity\"\"],\"\"y\"\":18446744073709551616}\"\n"
    );
}

#[test]
fn rejected_eval_rows_keep_their_raw_record_and_run_time_errors_name_their_statement() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "x_metrics.json", r#"{"checkpoint":"c","ood":{"answer_accuracy":"high","count":2}}"#);
    write(
        dir,
        "pipeline.toml",
        "name = \"er\"\n[[source]]\nname = \"raw\"\npath = \"x_metrics.json\"\nformat = \"eval-metrics\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "er").join("rejects/raw.jsonl")).unwrap();
    assert!(
        rejects.contains(r#""_reasons":["$.ood.answer_accuracy: expected number, found string \"high\""]"#),
        "{rejects}"
    );
    assert!(rejects.contains(r#""record":{"checkpoint":"c","ood":{"answer_accuracy":"high","count":2}}"#), "{rejects}");
    let sql =
        "SELECT 1; SELECT CAST(CASE WHEN value > 50000 THEN 'x' ELSE '1' END AS INT) FROM generate_series(1, 100000)";
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(example_release()).arg(sql));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("error: query, statement 2 of 2: Arrow error: Cast error"), "{}", stderr(&o));
}

#[test]
fn a_source_field_beside_a_source_schema_replaces_or_adds_a_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "d.jsonl",
        "{\"id\": 1, \"group\": 8, \"note\": [1, \"a\"]}\n{\"id\": 2, \"group\": \"b\", \"note\": {}}\n",
    );
    // the schema types `group` as a string, which the field replaces; `note` it lacks
    write(dir, "s.json", r#"{"fields": [{"name": "id", "type": "integer"}, {"name": "group", "type": "string"}]}"#);
    let fields = "schema = \"s.json\"\n[[source.field]]\nname = \"group\"\ntype = \"any\"\n\
                  [[source.field]]\nname = \"note\"\ntype = \"any\"\n";
    write(
        dir,
        "pipeline.toml",
        &one_source("sf", "d.jsonl", "jsonl", fields, "SELECT id, \"group\", note FROM raw", ""),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "sf"), "SELECT id, \"group\", note FROM t ORDER BY id"),
        "id,group,note\n1,8,\"[1,\"\"a\"\"]\"\n2,\"\"\"b\"\"\",{}\n"
    );
}

#[test]
fn a_bad_line_read_as_several_rows_is_one_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "metrics.jsonl",
        "{\"step\": 1, \"loss\": 2.0, \"reward\": 0.5}\n{\"step\": \"one\", \"loss\": 2.0, \"reward\": 0.5}\n",
    );
    write(dir, "pipeline.toml", &one_source("tm", "metrics.jsonl", "tinker-metrics", "", "SELECT * FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    // the line's two metrics are two long-form rows, with the one problem of their line
    assert_eq!(err.matches("metrics.jsonl:2:$.step: expected integer, found string \"one\"").count(), 1, "{err}");
    assert!(err.contains("1 violation found"), "{err}");
}

#[test]
fn a_build_that_fails_leaves_no_folder_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "r.jsonl", "{\"a\": 1}\n{\"a\": \"x\"}\n");
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "nf",
            "r.jsonl",
            "jsonl",
            "[[source.field]]\nname = \"a\"\ntype = \"integer\"\n",
            "SELECT a FROM raw",
            "",
        ),
    );
    let out = dir.join("out/releases");
    let o = run(bin().args(["build", "-q"]).arg(dir).arg("--releases-dir").arg(&out));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing was written"), "{}", stderr(&o));
    // "nothing was written": not even the folders that would have held the release
    assert!(!dir.join("out").exists(), "{:?}", walkdir::WalkDir::new(dir.join("out")).into_iter().collect::<Vec<_>>());
}

#[test]
fn a_release_whose_tables_are_all_empty_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "r.jsonl", "{\"a\": 1}\n");
    write(dir, "pipeline.toml", &one_source("e1", "r.jsonl", "jsonl", "", "SELECT a FROM raw WHERE a > 5", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // no table has rows, so the card has no configs, and that is no problem
    let r = release(dir, "e1");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(!card.contains("configs:") && !card.contains("(default)") && !card.contains("load_dataset("), "{card}");
    assert!(card.contains("No table has rows, so the card lists no configs"), "{card}");
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn a_tables_rejects_keep_one_type_of_source_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"id\": 1, \"v\": 1.5}\n{\"id\": 4, \"v\": 2.0}\n");
    write(dir, "d.json", "{\"records\": [{\"id\": 2, \"v\": 1.0}, {\"id\": 5, \"v\": 3.0}]}");
    write(
        dir,
        "u.json",
        r#"{"fields": [{"name": "id", "type": "integer", "constraints": {"minimum": 3}}, {"name": "v", "type": "number"}, {"name": "_source_file", "type": "string"}, {"name": "_source_line", "type": "string"}], "primaryKey": ["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"rl\"\n[[source]]\nname = \"lines\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[source]]\nname = \"docs\"\n\
         path = \"d.json\"\nformat = \"json\"\nrecord_path = \"/records\"\n[[table]]\nname = \"u\"\nschema = \"u.json\"\n\
         query = \"SELECT id, v, _source_file, CAST(_source_line AS VARCHAR) AS _source_line FROM lines UNION ALL \
         SELECT id, v, _source_file, _source_line FROM docs\"\n",
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "rl").join("rejects/u.jsonl")).unwrap();
    // the table's column is text, and so is the rejects file's, for a line as for a pointer
    assert!(rejects.contains("{\"_source_file\":\"a.jsonl\",\"_source_line\":\"1\","), "{rejects}");
    assert!(rejects.contains("{\"_source_file\":\"d.json\",\"_source_line\":\"/records/0\","), "{rejects}");
    assert_eq!(rejects.lines().count(), 2, "{rejects}");
}

#[test]
fn a_result_json_that_is_no_json_is_one_bad_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("math")).unwrap();
    std::fs::create_dir_all(dir.join("gsm8k")).unwrap();
    write(dir, "gsm8k/result.json", "{\"name\": \"gsm8k\", \"score\": 0.5, \"num_examples\": 4}\n");
    write(dir, "math/result.json", "{\n  \"name\": \"math\",\n  \"score\": 0.5\n  \"num_examples\": 4\n}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"rj\"\n[[source]]\nname = \"raw\"\npath = \"{bench}/result.json\"\nformat = \"tinker-eval-result\"\n[[table]]\nname = \"t\"\nquery = \"SELECT bench, benchmark, score FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("math/result.json:$: not valid JSON: expected `,` or `}` at line 4 column 3"),
        "{}",
        stderr(&o)
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "rj"), "SELECT * FROM t"), "bench,benchmark,score\ngsm8k,gsm8k,0.5\n");
    let rejects = std::fs::read_to_string(release(dir, "rj").join("rejects/raw.jsonl")).unwrap();
    // the document's place is its pointer, as for a record read from it: one type per column
    assert!(
        rejects.starts_with(
            "{\"_source_file\":\"math/result.json\",\"_source_line\":\"\",\"_reasons\":[\"not valid JSON: expected `,` or \
             `}` at line 4 column 3\"]}\n"
        ),
        "{rejects}"
    );
    assert!(!rejects.contains("\"raw\""), "{rejects}");
}

#[test]
fn a_pipe_given_to_query_is_refused_without_reading_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("in.jsonl");
    assert!(run(std::process::Command::new("mkfifo").arg(&fifo)).status.success());
    // nothing writes to the pipe: opening it would block (`timeout` ends the test if it does)
    let o = run(std::process::Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_runpack"))
        .args(["query", "-q"])
        .arg(&fifo)
        .arg("SELECT * FROM t"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("in.jsonl is a pipe or a device, not a file"), "{}", stderr(&o));
}

#[test]
fn a_release_folder_without_its_manifest_is_said_to_be_one() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::remove_file(tmp.path().join("manifest.json")).unwrap();
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM checkpoints"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("looks like a release folder (it holds SHA256SUMS, datapackage.json) but has no manifest.json"),
        "{err}"
    );
    assert!(!err.contains("mixes Parquet"), "{err}");
}

#[test]
fn a_query_that_meets_a_broken_data_file_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    // the same size, its footer broken (the size alone is checked before reading)
    let path = tmp.path().join("data/checkpoints.parquet");
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(b"XXXX");
    std::fs::write(&path, bytes).unwrap();
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM checkpoints"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("data/checkpoints.parquet (table checkpoints) is not a readable Parquet file"), "{err}");
    assert!(err.contains("hint: `runpack verify"), "{err}");
    // a raw Parquet file is named by its path
    let file = tmp.path().join("data/checkpoints.parquet");
    let o = run(bin().args(["query", "-q"]).arg(&file).arg("SELECT count(*) FROM t"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("checkpoints.parquet"), "{}", stderr(&o));
}

#[test]
fn an_empty_split_stays_out_of_configs_so_datasets_loads_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1, \"split\": \"train\"}\n{\"id\": 2, \"split\": \"train\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"es\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nsplit_column = \"split\"\nsplits = [\"train\", \"test\"]\nquery = \"SELECT * FROM raw\"\n\
         [[table]]\nname = \"none\"\nquery = \"SELECT * FROM raw WHERE id > 5\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "es");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    let splits: Vec<&str> = card.lines().filter_map(|l| l.strip_prefix("  - split: ")).collect();
    assert_eq!(splits, vec!["train"], "{card}");
    assert!(!card.contains("config_name: none"), "{card}");
    assert!(card.contains("Split `test` has no rows, so it is left out"), "{card}");
    assert!(card.contains("The table has no rows, so it is left out of the card's `configs`"), "{card}");
    assert!(r.join("data/t/test.parquet").is_file());
    // dataset_info's download_size is the size of what data_files lists: train's file alone
    let train = std::fs::metadata(r.join("data/t/train.parquet")).unwrap().len();
    assert!(card.contains(&format!("  download_size: {train}\n")), "{train} {card}");
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/load_release.py"))
        .arg(&r)
        .env("HF_HOME", dir.join("hf")));
    assert!(o.status.success(), "datasets loads the release: {}{}", stdout(&o), stderr(&o));
    // frictionless reads the empty split's file and the table without rows too
    let o = run(std::process::Command::new(python()).arg(repo().join("tests/python/validate_datapackage.py")).arg(&r));
    assert!(o.status.success(), "frictionless validates the release: {}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).trim(), r#"{"none": 0, "t": 2}"#);
    // a data file that two configs name is one problem
    let twice = card.replacen(
        "configs:\n",
        "configs:\n- config_name: again\n  data_files:\n  - split: train\n    path: data/t/train.parquet\n",
        1,
    );
    let problems = runpack::verify::card_problems(&twice, &["data/t/train.parquet".to_string()], &Default::default());
    assert!(
        problems.iter().any(|p| p.contains("`data/t/train.parquet` is in several configs (again, t)")),
        "{problems:?}"
    );
    // a default table without rows: the default is the first table the card lists
    let text = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(
        dir,
        "pipeline.toml",
        &text.replacen("name = \"es\"\n", "name = \"es\"\n[card]\ndefault_table = \"none\"\n", 1),
    );
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("- config_name: t\n  default: true\n"), "{card}");
    assert!(card.contains("load_dataset(\"<namespace>/<name>\", \"t\")"), "{card}");
    // split names equal but for case are refused
    write(dir, "pipeline.toml", &text.replace("splits = [\"train\", \"test\"]", "splits = [\"train\", \"Train\"]"));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("splits \"train\" and \"Train\" differ only in case"), "{}", stderr(&o));
}

#[test]
fn verify_reads_sha256sum_tag_lines_and_comments_and_reports_a_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    // SHA256SUMS rewritten as `sha256sum --tag` writes it, with a comment and a blank line
    // at the end (which `sha256sum -c` only warns of): still intact
    let sums = std::fs::read_to_string(tmp.path().join("SHA256SUMS")).unwrap();
    let tagged: String = std::iter::once("# checksums of the release\n".to_string())
        .chain(sums.lines().map(|l| {
            let (h, p) = l.split_once("  ").unwrap();
            format!("SHA256 ({p}) = {h}\n")
        }))
        .chain(std::iter::once("\n".to_string()))
        .collect();
    std::fs::write(tmp.path().join("SHA256SUMS"), &tagged).unwrap();
    let check =
        run(std::process::Command::new("sha256sum").arg("-c").arg("--quiet").arg("SHA256SUMS").current_dir(tmp.path()));
    assert!(check.status.success(), "sha256sum -c reads it: {}", stderr(&check));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // a named pipe in the release is reported (and not opened)
    let fifo = tmp.path().join("data/pipe.parquet");
    let made = run(std::process::Command::new("mkfifo").arg(&fifo));
    assert!(made.status.success());
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("data/pipe.parquet: not a regular file (a pipe, socket or device)"), "{}", stdout(&o));
    // a pipe in place of the files verify reads first is reported, never opened (it would block)
    for name in ["SHA256SUMS", "manifest.json", "README.md"] {
        let t = tempfile::tempdir().unwrap();
        copy_tree(example_release(), t.path());
        std::fs::remove_file(t.path().join(name)).unwrap();
        assert!(run(std::process::Command::new("mkfifo").arg(t.path().join(name))).status.success());
        let o = run(bin().arg("verify").arg(t.path()));
        assert_eq!(o.status.code(), Some(1), "{name}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(&format!("{name}: not a regular file")), "{name}: {}", stdout(&o));
        assert_eq!(stdout(&o).lines().count(), 1, "{name}: {}", stdout(&o));
    }
    // a manifest.json that is missing, and a SHA256SUMS that is a folder, are said so
    for (name, said) in [
        (
            "manifest.json",
            "manifest.json: missing, so row counts and schemas cannot be verified (checksums are checked against \
             SHA256SUMS)",
        ),
        ("SHA256SUMS", "SHA256SUMS: cannot be read: a folder, not a file"),
    ] {
        let t = tempfile::tempdir().unwrap();
        copy_tree(example_release(), t.path());
        std::fs::remove_file(t.path().join(name)).unwrap();
        if name == "SHA256SUMS" {
            std::fs::create_dir(t.path().join(name)).unwrap();
        }
        let o = run(bin().arg("verify").arg(t.path()));
        assert_eq!(o.status.code(), Some(1), "{name}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(said), "{name}: {}", stdout(&o));
    }
    // without the manifest, a file changed behind SHA256SUMS's back is still caught
    let t = tempfile::tempdir().unwrap();
    copy_tree(example_release(), t.path());
    std::fs::remove_file(t.path().join("manifest.json")).unwrap();
    let o = run(bin().arg("verify").arg(t.path()));
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));
    let jsonl = t.path().join("jsonl/checkpoints.jsonl");
    let text = std::fs::read_to_string(&jsonl).unwrap();
    std::fs::write(&jsonl, text.replacen("final", "finaX", 1)).unwrap();
    std::fs::remove_file(t.path().join("datapackage.json")).unwrap();
    let o = run(bin().arg("verify").arg(t.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("jsonl/checkpoints.jsonl: sha256 mismatch: SHA256SUMS says "), "{out}");
    assert!(out.contains("SHA256SUMS:") && out.contains(": datapackage.json is missing"), "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[test]
fn a_bounded_number_column_refuses_nan() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"k\": 1, \"w\": 0.5}\n{\"k\": 2, \"w\": NaN}\n{\"k\": 3, \"w\": 1.0}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"k","type":"integer"},{"name":"w","type":"number","constraints":{"minimum":0,"maximum":1}}],"primaryKey":["k"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"nanb\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT k, w FROM raw\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("value NaN is not a number between 0 and 1"), "{}", stderr(&o));
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "nanb"), "SELECT k FROM t ORDER BY k"), "k\n1\n3\n");
}

#[test]
fn the_card_says_what_became_of_non_finite_values_and_shows_length_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"k\": 1, \"x\": NaN, \"name\": \"ab\"}\n{\"k\": 2, \"x\": 1.5, \"name\": \"abc\"}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"k","type":"integer"},{"name":"x","type":"number"},{"name":"name","type":"string","constraints":{"minLength":1,"maxLength":5}}],"primaryKey":["k"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"nfn\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\nnonfinite = \"null\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT k, x, name FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nfn");
    assert_eq!(query(&r, "SELECT count(*) AS n FROM t WHERE x IS NULL"), "n\n1\n");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(
        card.contains("Source `raw` is read with `nonfinite = \"null\"`: its non-finite values became nulls."),
        "{card}"
    );
    assert!(card.contains("- source `raw`: 1 non-finite values read, written as nulls."), "{card}");
    assert!(card.contains("| `name` | `Utf8` | (length 1 to 5) |"), "{card}");
}

#[test]
fn keep_last_with_reject_keeps_the_last_valid_row_of_a_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"run\": \"a\", \"step\": 1, \"v\": 1.0}\n{\"run\": \"a\", \"step\": 1, \"v\": -5.0}\n\
         {\"run\": \"b\", \"step\": 1, \"v\": 2.0}\n{\"run\": \"b\", \"step\": 1, \"v\": 3.0}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"run","type":"string"},{"name":"step","type":"integer"},{"name":"v","type":"number","constraints":{"minimum":0}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["run","step"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"kl\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT * FROM raw\"\non_duplicate_key = \"keep-last\"\n",
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "kl");
    assert_eq!(query(&r, "SELECT run, v, _source_line FROM t ORDER BY run"), "run,v,_source_line\na,1.0,1\nb,3.0,4\n");
    let rejects = std::fs::read_to_string(r.join("rejects/t.jsonl")).unwrap();
    let lines: Vec<&str> = rejects.lines().collect();
    assert_eq!(lines.len(), 2, "{rejects}");
    assert!(
        rejects.contains("below the minimum 0") && rejects.contains("superseded by the row at raw.jsonl:4"),
        "{rejects}"
    );
    assert!(!rejects.contains("superseded by the row at raw.jsonl:2"), "{rejects}");
}

#[test]
fn query_with_a_schema_refuses_parquet_files_whose_columns_differ() {
    let tmp = tempfile::tempdir().unwrap();
    let file = example_release().join("data/checkpoints.parquet");
    write(
        tmp.path(),
        "s.json",
        r#"{"fields":[{"name":"tinker_uri","type":"string"},{"name":"nosuch","type":"number"}]}"#,
    );
    let o = run(bin()
        .args(["query", "-q"])
        .arg(&file)
        .arg("SELECT count(*) FROM t")
        .arg("--schema")
        .arg(tmp.path().join("s.json")));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("column `nosuch` is declared in the schema but not in the file"), "{err}");
    assert!(err.contains("is in the file but not in the declared schema"), "{err}");
}

#[test]
fn query_with_a_schema_refuses_parquet_columns_of_another_type() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a Parquet file of a float, a string, a struct and an integer, written by a build
    write(dir, "raw.jsonl", "{\"x\": 1.7, \"s\": \"1\", \"o\": {\"a\": 1, \"b\": 2}, \"n\": 3}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = run(bin().args(["build", "-q"]).arg(dir).arg("--releases-dir").arg(dir.join("releases")));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let file = dir.join("releases/p/0.1.0/data/t.parquet");
    let schema = |fields: &str| {
        write(dir, "s.json", &format!(r#"{{"fields":[{fields}]}}"#));
        dir.join("s.json")
    };
    let query = |s: std::path::PathBuf| {
        run(bin().args(["query", "-q", "--format", "csv"]).arg(&file).arg("SELECT * FROM t").arg("--schema").arg(s))
    };
    // 1.7 is not read as the integer 1, nor "1" as 1, nor a struct with a member less
    let o = query(schema(
        r#"{"name":"x","type":"integer"},{"name":"s","type":"integer"},{"name":"o","type":"object","fields":[{"name":"a","type":"integer"}]},{"name":"n","type":"integer"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}"#,
    ));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("column `x` (declared integer) is Float64 in the file, which does not read as Int64 without loss"),
        "{err}"
    );
    assert!(err.contains("column `s` (declared integer) is Utf8 in the file, which does not read"), "{err}");
    assert!(err.contains("column `o` (declared object) is Struct<a: Int64, b: Int64> in the file"), "{err}");
    assert!(!err.contains("column `n`"), "{err}");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    // the file's own types read; an integer declared number does not (a float rounds it above 2^53)
    let fields = r#"{"name":"x","type":"number"},{"name":"s","type":"string"},{"name":"o","type":"object","fields":[{"name":"a","type":"integer"},{"name":"b","type":"integer"}]},{"name":"n","type":"integer"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}"#;
    let o = query(schema(fields));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("1.7,1,"), "{}", stdout(&o));
    let o = query(schema(&fields.replace(r#""name":"n","type":"integer""#, r#""name":"n","type":"number""#)));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("column `n` (declared number) is Int64 in the file"), "{}", stderr(&o));
}

#[test]
fn a_column_nested_too_deep_is_named_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = format!("{{\"a\": 2, \"deep\": {}1{}}}\n", "[".repeat(64), "]".repeat(64));
    write(tmp.path(), "d.jsonl", &format!("{{\"a\": 1}}\n{deep}"));
    let o = run(bin().args(["query", "-q"]).arg(tmp.path().join("d.jsonl")).arg("SELECT count(*) FROM t"));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("d.jsonl:2:$.deep: lists and objects nested 64 levels deep"), "{}", stderr(&o));
}

#[test]
fn a_csv_header_without_rows_keeps_its_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "h.csv", "a,b,c\n");
    let pipeline = |fields: &str| {
        write(
            dir,
            "pipeline.toml",
            &format!(
                "name = \"h\"\n[[source]]\nname = \"raw\"\npath = \"h.csv\"\nformat = \"csv\"\n{fields}\
                 [[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n"
            ),
        )
    };
    // no value gives the columns a type: said, as for a JSON key that is null in every record
    pipeline("");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    for c in ["a", "b", "c"] {
        assert!(err.contains(&format!("$.{c}: no input file has a non-null value for it")), "{err}");
    }
    // rows that could not be read are said to be the likely cause
    write(dir, "h.csv", "a,b,c\n1,2,3,4\n5\n");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "2 records of the input could not be read, which may be why (the first: h.csv:2: row has 4 cells, the header has 3)"
        ),
        "{}",
        stderr(&o)
    );
    write(dir, "h.csv", "a,b,c\n");
    // with their types declared, the table has them and no row
    pipeline(
        "[[source.field]]\nname = \"a\"\ntype = \"integer\"\n[[source.field]]\nname = \"b\"\ntype = \"string\"\n\
         [[source.field]]\nname = \"c\"\ntype = \"number\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "h");
    assert_eq!(
        query(
            &r,
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't' ORDER BY ordinal_position"
        ),
        "column_name,data_type\na,Int64\nb,Utf8View\nc,Float64\n_source_file,Utf8View\n_source_line,Int64\n"
    );
}

#[test]
fn a_csv_source_reads_the_missing_values_its_schema_declares_as_null() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.csv", "a,b\n1,x\n2,NA\n-,\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"m\"\n[[source]]\nname = \"raw\"\npath = \"m.csv\"\nformat = \"csv\"\nschema = \"s.json\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT a, b, b IS NULL AS b_null FROM raw\"\n",
    );
    let schema = |missing: &str| {
        write(
            dir,
            "s.json",
            &format!(r#"{{"fields":[{{"name":"a","type":"integer"}},{{"name":"b","type":"string"}}]{missing}}}"#),
        )
    };
    // "NA" and "-" mean null; the empty cell is then the empty string
    schema(r#","missingValues":["NA","-"]"#);
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "m");
    assert_eq!(query(&r, "SELECT * FROM t ORDER BY a"), "a,b,b_null\n1,x,false\n2,,true\n,,false\n");
    // without missingValues only the empty cell is null, and "NA" is no integer
    write(dir, "m.csv", "a,b\n1,x\n2,NA\n,\nNA,y\n");
    schema("");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("m.csv:5:$.a: expected integer, found string \"NA\""), "{}", stderr(&o));
    // an empty list: the empty cell is a value, which an integer column refuses
    write(dir, "m.csv", "a,b\n1,\n,y\n");
    schema(r#","missingValues":[]"#);
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("m.csv:3:$.a: expected integer, found string \"\""), "{}", stderr(&o));
    write(dir, "m.csv", "a,b\n1,\n");
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "m"), "SELECT * FROM t"), "a,b,b_null\n1,,false\n");
    // missingValues where no text cell is read is refused, not ignored
    write(dir, "m.jsonl", "{\"a\": 1, \"b\": \"NA\"}\n");
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &toml.replace("m.csv", "m.jsonl").replace("format = \"csv\"", "format = \"jsonl\""));
    schema(r#","missingValues":["NA"]"#);
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("s.json: missingValues applies to the text cells of a `csv` source"), "{}", stderr(&o));
}

#[test]
fn a_row_with_a_bad_split_name_is_rejected_with_reject_and_reported_once_without() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 1, \"split\": \"train\"}\n{\"id\": 2, \"split\": null}\n{\"id\": 3, \"split\": \"validation\"}\n{\"id\": 4, \"split\": \"test\"}\n{\"id\": 5, \"split\": \"\"}\n",
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"sp\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nsplit_column = \"split\"\nsplits = [\"train\", \"test\"]\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("3 violations found"), "{err}");
    assert!(err.contains("raw.jsonl:2:split: the split column is null"), "{err}");
    assert!(err.contains("raw.jsonl:3:split: split \"validation\" is not one of the table's splits"), "{err}");
    assert!(err.contains("raw.jsonl:5:split: the split column is the empty string"), "{err}");
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "sp");
    assert_eq!(query(&r, "SELECT id FROM t ORDER BY id"), "id\n1\n4\n");
    let rejects = std::fs::read_to_string(r.join("rejects/t.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 3, "{rejects}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["tables"][0]["rows"], 2);
    assert_eq!(manifest["tables"][0]["rejected_rows"], 3);
    // a split's row count edited, the manifest's digest made to agree: verify still finds it
    let mpath = r.join("manifest.json");
    let text = std::fs::read_to_string(&mpath).unwrap();
    let edited = text.replacen("\"rows\": 1,", "\"rows\": 11,", 1);
    assert_ne!(text, edited);
    std::fs::write(&mpath, &edited).unwrap();
    let digest = |t: &str| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(t.as_bytes()))
    };
    let sums = std::fs::read_to_string(r.join("SHA256SUMS")).unwrap().replace(&digest(&text), &digest(&edited));
    std::fs::write(r.join("SHA256SUMS"), sums).unwrap();
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("table t split "), "{out}");
    assert!(out.contains("its split entry says 11") && out.contains("table t: its splits count"), "{out}");
    // a file moved to another split, the counts made to agree: the file's name gives it away
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let splits = m["tables"][0]["splits"].as_array_mut().unwrap();
    let moved = splits[1]["files"].as_array_mut().unwrap().pop().unwrap();
    splits[1]["rows"] = serde_json::json!(0);
    splits[0]["files"].as_array_mut().unwrap().push(moved.clone());
    splits[0]["rows"] = serde_json::json!(2);
    let moved_text = serde_json::to_string_pretty(&m).unwrap() + "\n";
    std::fs::write(&mpath, &moved_text).unwrap();
    let sums = std::fs::read_to_string(r.join("SHA256SUMS")).unwrap().replace(&digest(&edited), &digest(&moved_text));
    std::fs::write(r.join("SHA256SUMS"), sums).unwrap();
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("{}: listed in split ", moved.as_str().unwrap()))
            && stdout(&o).contains("of table t, but named for another table or split"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn card_metadata_agrees_with_the_card_table_and_adds_its_tags() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1}\n");
    let pipeline = |license: &str| {
        format!(
            "name = \"md\"\n[card]\nlicense = \"mit\"\ntags = [\"rl\"]\nmetadata = \"meta.yaml\"\n\
             [[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"t\"\nquery = \"SELECT id FROM raw\"\n# {license}\n"
        )
    };
    write(dir, "pipeline.toml", &pipeline("a"));
    write(dir, "meta.yaml", "license: cc-by-4.0\ntags:\n- mytag\n");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("meta.yaml: `license` is cc-by-4.0 here and \"mit\" in the pipeline's [card]"),
        "{}",
        stderr(&o)
    );
    write(dir, "meta.yaml", "license: mit\ntags:\n- mytag\n- rl\nlanguage:\n- en\n");
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "md").join("README.md")).unwrap();
    assert!(card.contains("tags:\n- rl\n- tabular\n- mytag\n"), "{card}");
    assert!(card.contains("language:\n- en\n"), "{card}");
    // a key given twice is placed at its second line; an empty file adds nothing
    write(dir, "meta.yaml", "tags:\n- mytag\nlanguage:\n- en\ntags:\n- rl\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("meta.yaml:5:1: not valid YAML: duplicate entry with key \"tags\""), "{}", stderr(&o));
    write(dir, "meta.yaml", "");
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_function_given_the_wrong_type_is_a_sql_mistake_not_a_bug_report() {
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT sum(model) FROM training_runs"));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("No function matches the given name and argument types 'sum(Utf8View)'"), "{err}");
    assert!(!err.contains("bug") && !err.contains("Internal error"), "{err}");
    assert!(err.contains("hint: Utf8 and Utf8View are text"), "{err}");
}

#[test]
fn an_empty_key_is_named_where_it_is_first_seen() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "e.jsonl", "{\"step\": 0}\n{\"step\": 1, \"\": \"x\"}\n");
    let o = run(bin().args(["query", "-q"]).arg(tmp.path().join("e.jsonl")).arg("SELECT * FROM t"));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("e.jsonl:2:$[\"\"]: the key \"\" (empty) cannot name a column or a field"),
        "{}",
        stderr(&o)
    );
    write(tmp.path(), "n.jsonl", "{\"x\": {\"a\": 1}}\n{\"x\": {\"\": 1}}\n");
    let o = run(bin().args(["query", "-q"]).arg(tmp.path().join("n.jsonl")).arg("SELECT * FROM t"));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("n.jsonl:2:$.x[\"\"]: the key \"\" (empty)"), "{}", stderr(&o));
}

#[test]
fn a_yaml_error_in_the_card_names_the_line_of_readme() {
    let card = "---\nlicense: mit\npretty_name: [unclosed\ntags:\n- x\n---\n\n# t\n";
    let problems = runpack::verify::card_problems(card, &[], &Default::default());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("README.md:4:5: front matter is not valid YAML"), "{problems:?}");
    assert!(problems[0].contains("at line 3 column 14"), "{problems:?}");
}

#[test]
fn a_query_over_a_release_refuses_a_data_file_of_another_size() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::write(tmp.path().join("data/checkpoints.parquet"), b"").unwrap();
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM checkpoints"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("data file data/checkpoints.parquet of table checkpoints holds 0 bytes"),
        "{}",
        stderr(&o)
    );
    // the other tables still answer; a missing file is named when its table is read
    assert_eq!(query(tmp.path(), "SELECT count(*) AS n FROM training_runs"), "n\n45\n");
    std::fs::remove_file(tmp.path().join("data/metrics.parquet")).unwrap();
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM metrics"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("data file data/metrics.parquet of table metrics is missing"), "{}", stderr(&o));
}

#[test]
fn a_unique_column_counts_only_the_rows_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 3, \"u\": \"d\"}\n{\"id\": 3, \"u\": \"d2\"}\n{\"id\": 4, \"u\": \"d\"}\n{\"id\": 5, \"u\": \"e\", \"v\": -1}\n{\"id\": 6, \"u\": \"e\"}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"u","type":"string","constraints":{"unique":true}},{"name":"v","type":"integer","constraints":{"minimum":0}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"uq\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT * FROM raw\"\non_duplicate_key = \"keep-last\"\n",
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "uq"), "SELECT id, u FROM t ORDER BY id"), "id,u\n3,d2\n4,d\n6,e\n");
}

#[test]
fn a_rejected_rows_unique_values_and_a_clashing_duplicate_push_out_no_valid_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // line 2 repeats b and is rejected: its a (x2) does not make line 3 a duplicate; line 5
    // (id 4, keep-last) repeats line 1's a: it is rejected, and line 4 (id 4) is kept
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 1, \"a\": \"x1\", \"b\": \"y1\"}\n{\"id\": 2, \"a\": \"x2\", \"b\": \"y1\"}\n\
         {\"id\": 3, \"a\": \"x2\", \"b\": \"y3\"}\n{\"id\": 4, \"a\": \"x4\", \"b\": \"y4\"}\n\
         {\"id\": 4, \"a\": \"x1\", \"b\": \"y5\"}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"a","type":"string","constraints":{"unique":true}},{"name":"b","type":"string","constraints":{"unique":true}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["id"]}"#,
    );
    let table = "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\n";
    write(dir, "pipeline.toml", &one_source("uq", "raw.jsonl", "jsonl", "", "SELECT * FROM raw", table));
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "uq"), "SELECT id, a FROM t ORDER BY id"), "id,a\n1,x1\n3,x2\n4,x4\n");
    let rejects = std::fs::read_to_string(release(dir, "uq").join("rejects/t.jsonl")).unwrap();
    let reasons: Vec<String> = rejects
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["_reasons"].to_string())
        .collect();
    assert_eq!(
        reasons,
        [
            r#"["b: value \"y1\" appears in an earlier row (unique)"]"#,
            r#"["a: value \"x1\" appears in an earlier row (unique)"]"#
        ],
        "{rejects}"
    );
}

#[test]
fn a_bad_source_date_epoch_and_the_split_name_all_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1, \"split\": \"all\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"sa\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nsplit_column = \"split\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = run(bin().arg("build").arg(dir).arg("--releases-dir").arg(dir.join("out")).env("SOURCE_DATE_EPOCH", "abc"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("SOURCE_DATE_EPOCH: \"abc\" is not a number of seconds"), "{}", stderr(&o));
    // past year 9999 an RFC 3339 date cannot say it (+10000-01-01 was written)
    let o = run(bin()
        .arg("build")
        .arg(dir)
        .arg("--releases-dir")
        .arg(dir.join("out"))
        .env("SOURCE_DATE_EPOCH", "253402300800"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("SOURCE_DATE_EPOCH: 253402300800 is after 9999-12-31T23:59:59Z"), "{}", stderr(&o));
    // a version in pipeline.toml is blamed on pipeline.toml, not on the option
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &toml.replace("name = \"sa\"\n", "name = \"sa\"\nversion = \"../x\"\n"));
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pipeline.toml (version): version \"../x\" must match"), "{}", stderr(&o));
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("split name \"all\" cannot be loaded by `datasets`") && stderr(&o).contains("use \"all_\""),
        "{}",
        stderr(&o)
    );
    // every row rejected, no split declared: a table without files, which SQL still reads
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "sa"), "SELECT count(*) AS n FROM t"), "n\n0\n");
    let o = run(bin().arg("verify").arg(release(dir, "sa")));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn integer_bounds_and_enum_values_above_2_pow_53_compare_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 2^53 + 1 is not 2^53, though both are the same 64-bit float
    write(dir, "raw.jsonl", "{\"id\": 1, \"a\": 9007199254740993, \"b\": 9007199254740992}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"a","type":"integer","constraints":{"maximum":9007199254740992}},{"name":"b","type":"integer","constraints":{"enum":[9007199254740993]}}]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"big\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, a, b FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("value 9007199254740993 is above the maximum 9007199254740992"), "{err}");
    assert!(err.contains("value 9007199254740992 is not one of [9007199254740993]"), "{err}");
}

#[test]
fn the_items_of_an_array_are_checked_against_their_constraints() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 1, \"uris\": [\"tinker://a/weights/1\", \"tinker://a/weights/2\"], \"scores\": [0.5, 1]}\n\
         {\"id\": 2, \"uris\": [\"tinker://a/weights/1\", \"s3://b\"], \"scores\": [0.5, 1.5, null]}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},
            {"name":"uris","type":"array","items":{"type":"string","constraints":{"pattern":"tinker://[^/]+/weights/[^/]+"}}},
            {"name":"scores","type":"array","items":{"type":"number","constraints":{"required":true,"minimum":0,"maximum":1}}}],
           "primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"it\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, uris, scores FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("3 violations found"), "{err}");
    assert!(
        err.contains(
            "uris[1]: value \"s3://b\" does not match tinker://[^/]+/weights/[^/]+ (table t, key id=2, rule pattern)"
        ),
        "{err}"
    );
    assert!(err.contains("scores[1]: value 1.5 is above the maximum 1 (table t, key id=2"), "{err}");
    assert!(err.contains("scores[2]: item is null but items are required"), "{err}");
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "it"), "SELECT id FROM t"), "id\n1\n");
}

#[test]
fn constraints_in_a_source_schema_are_refused_not_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"v\": 5}\n");
    write(dir, "src.json", r#"{"fields":[{"name":"v","type":"integer","constraints":{"maximum":0}}]}"#);
    write(
        dir,
        "pipeline.toml",
        "name = \"sc\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\nschema = \"src.json\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT v FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("src.json: field `v`: constraints in a source's schema are not checked"),
        "{}",
        stderr(&o)
    );
    write(dir, "src.json", r#"{"fields":[{"name":"v","type":"integer"}],"primaryKey":["v"]}"#);
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("src.json: primaryKey and foreignKeys in a source's schema are not checked"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_integer_a_table_declares_number_is_not_rounded_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1, \"x\": 9007199254740992}\n{\"id\": 2, \"x\": 9007199254740993}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"x","type":"number"}],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"rn\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, x FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("1 violation found"), "{err}");
    assert!(err.contains("x: value 9007199254740993 cannot be stored as Float64 without changing it"), "{err}");
    // inside a list too, named by its row rather than stopping the build
    write(dir, "raw.jsonl", "{\"id\": 1, \"x\": [1, 2]}\n{\"id\": 2, \"x\": [3, 9007199254740993]}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"x","type":"array","items":{"type":"number"}}],"primaryKey":["id"]}"#,
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("1 violation found"), "{err}");
    assert!(
        err.contains("x: value [3, 9007199254740993] cannot be stored as List<Float64> without changing it"),
        "{err}"
    );
    let o = build(dir, &["-q", "--on-invalid", "reject", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "rn"), "SELECT id FROM t"), "id\n1\n");
}

#[test]
fn a_parquet_source_value_that_would_be_rounded_or_truncated_is_a_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // nanoseconds that are not whole microseconds, and an integer above 2^53 declared number
    let script = "import pyarrow as pa, pyarrow.parquet as pq, sys\n\
                  t = pa.table({'id': [1, 2, 3], \
                  'at': pa.array([1577836800123456000, 1577836800123456789, None], pa.timestamp('ns', 'UTC')), \
                  'n': pa.array([1, 9007199254740993, 3], pa.int64()), \
                  'l': pa.array([[1577836800123456000], [1577836800123456789], None], pa.list_(pa.timestamp('ns', 'UTC'))), \
                  'f': pa.array([1.0, 1.5, -0.0])})\n\
                  pq.write_table(t, sys.argv[1])\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("raw.parquet")));
    assert!(o.status.success(), "{}", stderr(&o));
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "pq",
            "raw.parquet",
            "parquet",
            "[[source.field]]\nname = \"at\"\ntype = \"datetime\"\n[[source.field]]\nname = \"n\"\ntype = \"number\"\n\
             [[source.field]]\nname = \"f\"\ntype = \"integer\"\n",
            "SELECT id, at, n, l, f FROM raw",
            "",
        ),
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("4 violations found"), "{err}");
    // a fraction is not cut by an integer column (-0.0 is the integer 0)
    assert!(err.contains("raw.parquet:2:f: value \"1.5\" (Float64) cannot be stored as Int64"), "{err}");
    assert!(err.contains("raw.parquet:2:l: value"), "{err}");
    assert!(err.contains("raw.parquet:2:at: value") && err.contains("without changing it"), "{err}");
    assert!(err.contains("raw.parquet:2:n: value \"9007199254740993\""), "{err}");
    // rejected: one line with every reason, its record holding the values as found
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "pq").join("rejects/raw.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = rejects.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "{rejects}");
    assert_eq!(lines[0]["_reasons"].as_array().unwrap().len(), 4, "{rejects}");
    let record = &lines[0]["record"];
    assert_eq!(record["at"], "2020-01-01T00:00:00.123456789Z", "{rejects}");
    assert_eq!(record["n"], serde_json::json!(9007199254740993u64), "{rejects}");
    assert_eq!(record["f"], serde_json::json!(1.5), "{rejects}");
    assert_eq!(record["l"], serde_json::json!(["2020-01-01T00:00:00.123456789Z"]), "{rejects}");
}

#[test]
fn a_value_a_tables_sql_makes_that_its_column_cannot_hold_is_a_violation_at_its_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1, \"n\": 1000}\n{\"id\": 2, \"n\": 1500}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"ts","type":"datetime"},{"name":"i","type":"integer"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "ns",
            "raw.jsonl",
            "jsonl",
            "",
            "SELECT id, to_timestamp_nanos(n) AS ts, n / 1000.0 AS i, _source_file, _source_line FROM raw",
            "schema = \"t.json\"\n",
        ),
    );
    let o = build(dir, &["-q"]);
    assert_violations(
        &o,
        2,
        &[
            "raw.jsonl:2:ts: value 1970-01-01T00:00:00.000001500Z cannot be stored as Timestamp(Microsecond, \"UTC\") without changing it",
            "raw.jsonl:2:i: value 1.5 cannot be stored as Int64 without changing it",
        ],
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "ns"), "SELECT id, ts, i FROM t"), "id,ts,i\n1,1970-01-01T00:00:00.000001Z,1\n");
    let rejects = std::fs::read_to_string(release(dir, "ns").join("rejects/t.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(rejects.trim()).unwrap();
    assert_eq!(line["_reasons"].as_array().unwrap().len(), 2, "{rejects}");
    assert_eq!(line["record"]["ts"], "1970-01-01T00:00:00.000001500Z", "{rejects}");
    assert_eq!(line["record"]["i"], serde_json::json!(1.5), "{rejects}");
}

#[test]
fn enum_compares_json_values_of_json_text_and_nested_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 1, \"v\": 1, \"l\": [1, 2.5]}\n{\"id\": 2, \"v\": \"a\", \"l\": [1.0, 2.5]}\n\
         {\"id\": 3, \"v\": {\"k\": 1.0}, \"l\": [2]}\n{\"id\": 4, \"v\": 2, \"l\": [1, 2.5]}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},
            {"name":"v","type":"any","constraints":{"enum":[1,"a",{"k":1}]}},
            {"name":"l","type":"array","items":{"type":"number"},"constraints":{"enum":[[1,2.5],[2]]}}],
           "primaryKey":["id"]}"#,
    );
    write(
        dir,
        "src.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"v","type":"any"},{"name":"l","type":"array","items":{"type":"number"}}]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"en\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\nschema = \"src.json\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, v, l FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("1 violation found"), "{err}");
    assert!(err.contains("v: value 2 is not one of [1,\"a\",{\"k\":1}] (table t, key id=4"), "{err}");
    // the data package leaves out the enum of the JSON text column (a string in the JSON Lines
    // copy, which Frictionless would compare with the enum's values) and keeps the list's
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let package: serde_json::Value =
        serde_json::from_slice(&std::fs::read(release(dir, "en").join("datapackage.json")).unwrap()).unwrap();
    let fields = &package["resources"][0]["schema"]["fields"];
    assert_eq!(fields[1]["name"], "v");
    assert!(fields[1].get("constraints").is_none(), "{fields}");
    assert_eq!(fields[2]["constraints"]["enum"], serde_json::json!([[1, 2.5], [2]]), "{fields}");
    let o = run(bin().args(["verify", "--data"]).arg(release(dir, "en")));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // a package written before the enum was left out, which Frictionless refuses, is said to be
    let mut old = package.clone();
    old["resources"][0]["schema"]["fields"][1]["constraints"] = serde_json::json!({"enum": [1, "a", {"k": 1}]});
    let package_path = release(dir, "en").join("datapackage.json");
    std::fs::write(&package_path, serde_json::to_string_pretty(&old).unwrap() + "\n").unwrap();
    reseal(&release(dir, "en"));
    let o = run(bin().arg("verify").arg(release(dir, "en")));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("holds the enum of a column kept as JSON text"), "{}", stdout(&o));
    assert!(stdout(&o).contains("build the release again"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("where a build writes"), "{}", stdout(&o));
    old["resources"][0]["schema"]["fields"][1]["constraints"] = serde_json::json!({"enum": [1]});
    std::fs::write(&package_path, serde_json::to_string_pretty(&old).unwrap() + "\n").unwrap();
    reseal(&release(dir, "en"));
    let o = run(bin().arg("verify").arg(release(dir, "en")));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("/resources/0/schema/fields/1/constraints (t) differs"), "{}", stdout(&o));
}

#[test]
fn query_refuses_raw_file_options_with_a_release_and_files_it_cannot_read() {
    let release = example_release();
    for args in [["--table", "x"], ["--schema", "s.json"]] {
        let o = run(bin().args(["query", "-q"]).arg(release).args(args).arg("SELECT 1"));
        assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("--schema and --table name and type raw files;"), "{}", stderr(&o));
    }
    // a CSV file is not read as JSON Lines, line after line of errors
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "x.csv", "a,b\n1,2\n");
    let o = run(bin().args(["query", "-q"]).arg(tmp.path().join("x.csv")).arg("SELECT * FROM t"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("x.csv: query reads Parquet (.parquet) and JSON Lines"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn a_sql_syntax_error_is_said_with_its_place_not_as_debug_text() {
    let release = example_release();
    let o = run(bin().args(["query", "-q"]).arg(release).arg("SELECT 1;\nSELEC 2"));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("(SQL line 2, column 1): SQL syntax error: Expected: an SQL statement, found: SELEC"),
        "{err}"
    );
    assert!(!err.contains("ParserError("), "{err}");
    let o = run(bin().args(["query", "-q"]).arg(release).arg("SELECT 1,\n  2 +\n"));
    assert!(
        stderr(&o).contains(
            "query (SQL line 2, column 5, its end): SQL syntax error: Expected: an expression, found: the end of the SQL"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_folder_named_as_a_source_path_gets_a_glob_to_use() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/a.jsonl", "{\"x\": 1}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"raw\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no file matches [\"raw\"] under ")
            && stderr(&o).contains("raw is a folder: name its files with a glob, such as \"raw/*.jsonl\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_column_runpack_adds_itself_is_named_where_the_data_has_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "c.csv", "a,_source_line\n1,2\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"c.csv\"\nformat = \"csv\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("c.csv:2: the data has a column named _source_line (first here, source raw)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_schema_file_missing_or_not_an_object_is_said_with_who_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"a\": 1}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"none.json\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pipeline.toml (table t schema): schema \""), "{}", stderr(&o));
    assert!(stderr(&o).contains("none.json\" cannot be read"), "{}", stderr(&o));
    write(dir, "none.json", "[1, 2, 3]\n");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("none.json: a Table Schema is a JSON object ({\"fields\": [...]}); this file holds an array"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_csv_number_is_held_to_what_json_is_exact_or_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // inferred: a float column (1.5) with an integer a float cannot hold, and a float too large
    write(dir, "b.csv", "big\n9007199254740993\n1.5\n1e400\n9007199254740992\ninf\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"b.csv\"\nformat = \"csv\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("b.csv:2:$.big: integer 9007199254740993 cannot be stored exactly as a 64-bit float"),
        "{err}"
    );
    assert!(err.contains("b.csv:4:$.big: number 1e400 is out of range for a 64-bit float"), "{err}");
    assert!(err.contains("2 violations found"), "{err}");
    // declared number: the same; what a float holds exactly is kept, inf is an infinity
    write(dir, "b.csv", "big\n9007199254740993\n9007199254740992\ninf\n");
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(
        dir,
        "pipeline.toml",
        &toml.replace("format = \"csv\"\n", "format = \"csv\"\n[[source.field]]\nname = \"big\"\ntype = \"number\"\n"),
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(
            &release(dir, "p"),
            "SELECT big = 9007199254740992 AS exact, big = 'Infinity'::double AS inf FROM t ORDER BY _source_line"
        ),
        "exact,inf\ntrue,false\nfalse,true\n"
    );
}

#[test]
fn parquet_timestamps_without_a_zone_need_assume_timezone_and_are_read_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 1970-01-01 00:00 and 2024-03-10 02:30 (a time New York skips), wall-clock, no zone
    let script = "import pyarrow as pa, pyarrow.parquet as pq, sys\n\
                  t = pa.table({'id': [1, 2], 'ts': pa.array([0, 1710037800000000], pa.timestamp('us'))})\n\
                  pq.write_table(t, sys.argv[1])\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("raw.parquet")));
    assert!(o.status.success(), "{}", stderr(&o));
    let pipeline = |tz: &str| {
        write(
            dir,
            "pipeline.toml",
            &one_source("nz", "raw.parquet", "parquet", tz, "SELECT id, CAST(ts AS VARCHAR) AS ts FROM raw", ""),
        )
    };
    // no zone said: refused, not taken for UTC
    pipeline("");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("raw.parquet: column `ts` holds timestamps without a time zone (Timestamp(µs))"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("set assume_timezone on the source"), "{}", stderr(&o));
    // declared a datetime, the same: a declared type says nothing of the zone
    pipeline("[[source.field]]\nname = \"ts\"\ntype = \"datetime\"\n");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("raw.parquet: column `ts` holds timestamps without a time zone (Timestamp(µs))"),
        "{}",
        stderr(&o)
    );
    // read as Tokyo wall-clock times
    pipeline("assume_timezone = \"Asia/Tokyo\"\n");
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "nz"), "SELECT * FROM t ORDER BY id"),
        "id,ts\n1,1969-12-31T15:00:00Z\n2,2024-03-09T17:30:00Z\n"
    );
    // a time the zone skips is a violation at its row
    pipeline("assume_timezone = \"America/New_York\"\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("raw.parquet:2:ts: 2024-03-10 02:30:00 does not exist in America/New_York"),
        "{}",
        stderr(&o)
    );
    // SQL alone reads them as they are, with no zone made up
    let o = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(dir.join("raw.parquet"))
        .arg("SELECT CAST(ts AS VARCHAR) AS ts FROM t ORDER BY id"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "ts\n1970-01-01T00:00:00\n2024-03-10T02:30:00\n");
}

#[test]
fn a_parquet_source_column_of_a_type_runpack_does_not_store_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = "import pyarrow as pa, pyarrow.parquet as pq, sys, decimal\n\
                  t = pa.table({'id': [1], 'd': pa.array([decimal.Decimal('1.25')], pa.decimal128(5, 2))})\n\
                  pq.write_table(t, sys.argv[1])\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("raw.parquet")));
    assert!(o.status.success(), "{}", stderr(&o));
    let pipeline = |field: &str| {
        write(dir, "pipeline.toml", &one_source("dc", "raw.parquet", "parquet", field, "SELECT * FROM raw", ""))
    };
    pipeline("");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("raw.parquet: column `d` is a decimal, which runpack does not store; declare it with a [[source.field]] as `string`"), "{}", stderr(&o));
    // the advice works
    pipeline("[[source.field]]\nname = \"d\"\ntype = \"string\"\n");
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "dc"), "SELECT d FROM t"), "d\n1.25\n");
}

#[test]
fn a_non_finite_value_of_a_shaped_row_is_named_by_its_raw_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a_metrics.jsonl", "{\"step\": 0, \"x\": NaN, \"y\": 1}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"a_metrics.jsonl\"\nformat = \"tinker-metrics\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // the long form's `value` column came from the key `x`
    assert!(stderr(&o).contains("raw: a_metrics.jsonl:1:$.x NaN"), "{}", stderr(&o));
}

#[test]
fn dates_outside_years_1_to_9999_are_violations() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"d\": \"+10000-01-01\", \"t\": \"2024-01-01T00:00:00Z\"}\n{\"d\": \"2024-02-29\", \"t\": \"0000-01-01T00:00:00Z\"}\n",
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[source.field]]\nname = \"d\"\ntype = \"date\"\n[[source.field]]\nname = \"t\"\ntype = \"datetime\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("raw.jsonl:1:$.d: expected date string (YYYY-MM-DD), found string \"+10000-01-01\""), "{err}");
    assert!(err.contains("raw.jsonl:2:$.t: \"0000-01-01T00:00:00Z\" is outside years 1 to 9999"), "{err}");
    assert!(err.trim_end().ends_with("2 violations found; nothing was written"), "{err}");
    // a record a source could not read is the source's, not a table's
    assert!(err.contains("(source raw, rule type)"), "{err}");
}

#[test]
fn an_object_field_without_fields_holds_objects_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1, \"o\": {\"a\": 1}}\n{\"id\": 2, \"o\": [1, 2]}\n{\"id\": 3, \"o\": 5}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[source.field]]\nname = \"o\"\ntype = \"object\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT id, o FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("raw.jsonl:2:$.o: expected object, found an array"), "{err}");
    assert!(err.contains("raw.jsonl:3:$.o: expected object, found"), "{err}");
    assert!(err.contains("2 violations found"), "{err}");
    // a table's object column made by SQL is checked too
    write(dir, "raw.jsonl", "{\"id\": 1, \"o\": {\"a\": 1}}\n");
    write(dir, "t.json", r#"{"fields":[{"name":"id","type":"integer"},{"name":"o","type":"object"}]}"#);
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, '[1]' AS o FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("o: expected an object, found an array"), "{}", stderr(&o));
}

#[test]
fn minus_zero_and_zero_are_one_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"z\": 0.0, \"u\": 1.0}\n{\"z\": -0.0, \"u\": -0.0}\n{\"z\": 2.0, \"u\": 0.0}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"z","type":"number"},{"name":"u","type":"number","constraints":{"unique":true}}],"primaryKey":["z"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT z, u FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("2 rows share this primary key") && err.contains("rule primaryKey"), "{err}");
    assert!(err.contains("rule unique"), "{err}");
}

#[test]
fn a_composite_foreign_key_null_in_some_parts_is_still_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "p.jsonl", "{\"a\": 1, \"b\": \"x\"}\n{\"a\": 2, \"b\": null}\n");
    write(
        dir,
        "c.jsonl",
        "{\"id\": 1, \"a\": 1, \"b\": null}\n{\"id\": 2, \"a\": null, \"b\": \"zz\"}\n{\"id\": 3, \"a\": null, \"b\": null}\n{\"id\": 4, \"a\": 2, \"b\": null}\n{\"id\": 5, \"a\": 1, \"b\": \"x\"}\n",
    );
    write(dir, "p.json", r#"{"fields":[{"name":"a","type":"integer"},{"name":"b","type":"string"}]}"#);
    write(
        dir,
        "c.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"a","type":"integer"},{"name":"b","type":"string"}],"primaryKey":"id","foreignKeys":[{"fields":["a","b"],"reference":{"resource":"p","fields":["a","b"]}}]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"fk\"\n[[source]]\nname = \"ps\"\npath = \"p.jsonl\"\nformat = \"jsonl\"\n\
         [[source]]\nname = \"cs\"\npath = \"c.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"p\"\nschema = \"p.json\"\nquery = \"SELECT a, b FROM ps\"\n\
         [[table]]\nname = \"c\"\nschema = \"c.json\"\nquery = \"SELECT id, a, b FROM cs\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    // (1, null) and (null, "zz") match no row of p; (null, null) refers to nothing; (2, null) matches
    assert!(err.contains("key id=1, rule foreignKey"), "{err}");
    assert!(err.contains("key id=2, rule foreignKey"), "{err}");
    assert!(err.contains("2 violations found"), "{err}");
}

#[test]
fn query_over_json_lines_reads_a_key_null_in_every_record_as_text_of_nulls() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "x.jsonl", "{\"a\": 1, \"n\": null}\n{\"a\": 2, \"l\": []}\n");
    let o = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(tmp.path().join("x.jsonl"))
        .arg("SELECT a, n IS NULL AS n_null, arrow_typeof(n) AS t FROM t ORDER BY a"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "a,n_null,t\n1,true,Utf8\n2,true,Utf8\n");
    // a bad line stops the query, which writes nothing anyway: not said as a build says it
    write(tmp.path(), "x.jsonl", "{\"a\": 1}\n{\"a\": }\n");
    let o = run(bin().args(["query", "-q"]).arg(tmp.path().join("x.jsonl")).arg("SELECT a FROM t"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).trim_end().ends_with("1 violation found"), "{}", stderr(&o));
}

#[test]
fn patterns_and_column_names_are_those_frictionless_reads_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 1, \"uri\": \"tinker://A1/weights/000010\"}\n{\"id\": 2, \"uri\": \"tinker://b2/sampler_weights/000020\"}\n",
    );
    let schema = |pattern: &str| {
        serde_json::json!({"fields": [
            {"name": "id", "type": "integer"},
            {"name": "uri", "type": "string", "constraints": {"pattern": pattern}},
        ], "primaryKey": ["id"]})
        .to_string()
    };
    let toml = "name = \"pn\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
                [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, uri FROM raw\"\n";
    write(dir, "pipeline.toml", toml);
    // a scoped case-insensitive group is read alike by both: the release validates with frictionless
    write(dir, "t.json", &schema(r"tinker://(?i:[a-z0-9]+)/(sampler_)?weights/\d{6}"));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/validate_datapackage.py"))
        .arg(release(dir, "pn")));
    assert!(o.status.success(), "frictionless validates the release: {}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).trim(), r#"{"t": 2}"#);
    // a Unicode class is not Python's: refused with the schema file, the field and the place
    write(dir, "t.json", &schema(r"tinker://\p{L}+/.*"));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains(r#"field `uri`: pattern "tinker://\\p{L}+/.*": a Unicode class at character 10 ("\\p{L}")"#),
        "{}",
        stderr(&o)
    );
    // a column named with a trailing blank, declared or made by the SQL of a table without schema
    write(dir, "t.json", &schema(".*").replace("\"uri\"", "\"uri \""));
    write(dir, "pipeline.toml", &toml.replace("SELECT id, uri FROM", "SELECT id, uri AS \\\"uri \\\" FROM"));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("t.json:/fields/1/name: column \"uri \" begins or ends with a blank"),
        "{}",
        stderr(&o)
    );
    write(
        dir,
        "pipeline.toml",
        &toml
            .replace("schema = \"t.json\"\n", "")
            .replace("SELECT id, uri FROM", "SELECT id, uri AS \\\" uri\\\" FROM"),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t: column \" uri\" begins or ends with a blank"), "{}", stderr(&o));
    // a violation in a table with neither a primary key nor `_source_*` columns names the row by its values
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"uri","type":"string","constraints":{"pattern":"tinker://[a-z0-9]+/.*"}}]}"#,
    );
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "uri: value \"tinker://A1/weights/000010\" does not match tinker://[a-z0-9]+/.* (table t, key id=1, \
             uri=tinker://A1/weights/000010, rule pattern)"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn names_pyyaml_reads_as_booleans_or_dates_load_with_datasets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"c\": 1, \"s\": \"on\"}\n{\"c\": 2, \"s\": \"1_000\"}\n{\"c\": 3, \"s\": \"on\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"yn\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"yes\"\nsplit_column = \"s\"\nsplits = [\"on\", \"1_000\"]\n\
         query = 'SELECT c AS \"on\", c AS \"NO\", c AS \"<<\", c AS \"2024-01-01\", s FROM raw'\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "yn");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("- config_name: 'yes'\n"), "{card}");
    assert!(card.contains("  - split: 'on'\n"), "{card}");
    assert!(card.contains("  - name: '<<'\n"), "{card}");
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/load_release.py"))
        .arg(&r)
        .env("HF_HOME", dir.join("hf")));
    assert!(o.status.success(), "datasets loads the release: {}{}", stdout(&o), stderr(&o));
    let loaded: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(loaded["yes"]["splits"], serde_json::json!({"on": 2, "1_000": 1}), "{loaded}");
    assert_eq!(loaded["yes"]["columns"], serde_json::json!(["on", "NO", "<<", "2024-01-01", "s"]), "{loaded}");
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // a card written by other means with such a name unquoted is a problem verify names
    let unquoted = card.replacen("- config_name: 'yes'\n", "- config_name: yes\n", 1);
    let problems = runpack::verify::card_problems(&unquoted, &[], &Default::default());
    let line = unquoted.lines().position(|l| l == "- config_name: yes").unwrap() + 1;
    assert!(
        problems.iter().any(|p| p
            == &format!(
                "README.md:{line}: `yes` is a string to YAML 1.2 but a boolean to PyYAML, which `datasets` and \
                 `huggingface_hub` read the card with; quote it"
            )),
        "{problems:?}"
    );
}

#[test]
fn a_json_lines_copy_reads_back_with_its_schema_non_finite_numbers_included() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"k\":1,\"x\":NaN}\n{\"k\":2,\"x\":-0.0}\n{\"k\":3,\"x\":-Infinity}\n");
    write(dir, "pipeline.toml", &one_source("nf", "raw.jsonl", "jsonl", "", "SELECT k, x FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nf");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(r.join("manifest.json")).unwrap()).unwrap();
    write(dir, "t.json", &m["tables"][0]["schema"].to_string());
    let copy = r.join("jsonl/t.jsonl");
    assert!(std::fs::read_to_string(&copy).unwrap().contains("\"x\":\"NaN\""));
    let sql = "SELECT k, x, x = 'NaN'::double AS nan FROM t ORDER BY k";
    assert_eq!(
        query_with(&copy, sql, &["--schema", dir.join("t.json").to_str().unwrap()]),
        query(&r, sql),
        "the copy and the release read alike"
    );
    assert_eq!(query(&r, sql), "k,x,nan\n1,NaN,true\n2,-0.0,false\n3,-Infinity,false\n");
    // the card says which tables keep each row's file and line: this one does not
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("No table keeps the raw file and line of its rows"), "{card}");
    assert!(!card.contains("`_source_line`"), "{card}");
}

#[test]
fn verify_refuses_card_metadata_that_datasets_stops_on() {
    let card = std::fs::read_to_string(example_release().join("README.md")).unwrap();
    // each edit, the line verify places it on (where a text starts), and what it says of it, alone
    let cases: Vec<(String, &str, &str)> = vec![
        (
            card.replacen("- config_name: checkpoints\n", "- config_name: checkpoints\n  default: 'yes'\n", 1),
            "  default: 'yes'",
            " configs[1]: default is a string \"yes\", not true or false",
        ),
        (
            card.replacen("- config_name: checkpoints\n", "- config_name: 5\n", 1),
            "- config_name: 5",
            " configs[1]: config_name is a number 5, not a string",
        ),
        (card.replacen("configs:\n", "configs:\n  x: 1\nconfigs_before:\n", 1), "configs:", " configs is a mapping"),
        (
            card.replacen("  - name: experiment\n    dtype: string\n", "  - name: experiment\n", 1),
            "  - name: experiment\n",
            " dataset_info of config `training_runs`: feature `experiment` has no type",
        ),
        (
            card.replacen("  - name: experiment\n    dtype: string\n", "  - name: experiment\n    dtype: 5\n", 1),
            "  - name: experiment\n",
            " dataset_info of config `training_runs`: feature `experiment` has a dtype that is a number 5, not a \
             name or a class label",
        ),
        (
            card.replacen("  - name: experiment\n    dtype: string\n", "  - dtype: string\n", 1),
            "  - dtype: string\n  - name: model\n",
            " dataset_info of config `training_runs`: features[1] has no name",
        ),
    ];
    for (edited, line, said) in cases {
        let said = format!("{}{said}", readme_line(&edited, line));
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(example_release(), tmp.path());
        assert_ne!(edited, card, "{said}");
        write_card(tmp.path(), &edited);
        let o = run(bin().arg("verify").arg(tmp.path()));
        assert_eq!(o.status.code(), Some(1), "{said}: {}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        assert!(out.contains(&said), "{said}: {out}");
        assert!(!out.contains("names no table"), "{out}");
        // the edit is the one problem, but for what follows from it: a second default, a
        // column no feature names
        let lines = if said.contains("default is") || said.contains("features[1]") { 2 } else { 1 };
        assert_eq!(out.lines().count(), lines, "{out}");
    }
    // dataset_info of a config given twice: datasets reads the last, and so does verify
    let info = card.find("dataset_info:\n").unwrap();
    let first = card[info..].find("- config_name: checkpoints\n").map(|i| info + i).unwrap();
    let end = card[first + 1..].find("\n- config_name: ").map(|i| first + 1 + i + 1).unwrap();
    let entry = &card[first..end];
    let mut edited = card.clone();
    let inserted = entry.replacen("num_examples: ", "num_examples: 1", 1);
    edited.insert_str(first, &inserted);
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    write_card(tmp.path(), &edited);
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    // placed at the second entry of the name
    let line = line_at(&edited, first + inserted.len());
    assert!(
        out.contains(&format!(
            "README.md:{line}: dataset_info gives config `checkpoints` 2 times; `datasets` reads the last"
        )),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "the last entry is the right one: {out}");
    // a byte order mark before the front matter is no problem
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    write_card(tmp.path(), &format!("\u{feff}{card}"));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn verify_compares_the_cards_dataset_info_with_the_parquet_files() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let path = tmp.path().join("README.md");
    let card = std::fs::read_to_string(&path).unwrap();
    assert!(
        card.contains("    num_examples: 45\n")
            && card.contains("  - name: training_run_id\n    dtype: string\n  - name: experiment\n")
    );
    let edited = card
        .replacen("    num_examples: 45\n", "    num_examples: 43\n", 1)
        .replacen("  - name: experiment\n", "  - name: experiments\n", 1)
        .replacen("  - name: training_run_id\n    dtype: string\n", "  - name: training_run_id\n    dtype: int64\n", 1)
        // a list column given a scalar dtype, and a list of the wrong items
        .replacen(
            "  - name: weight_checkpoints\n    list: string\n",
            "  - name: weight_checkpoints\n    dtype: string\n",
            1,
        )
        .replacen(
            "  - name: sampler_weight_checkpoints\n    list: string\n",
            "  - name: sampler_weight_checkpoints\n    list: int64\n",
            1,
        )
        // a second default config
        .replacen("- config_name: checkpoints\n", "- config_name: checkpoints\n  default: true\n", 1);
    write_card(tmp.path(), &edited);
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    // each problem is placed on the line of the card that says it
    let at = |needle: &str| readme_line(&edited, needle);
    assert!(
        out.contains(&format!(
            "{} dataset_info of config `training_runs` gives split `train` 43 examples, and its Parquet files \
             hold 45 rows",
            at("    num_examples: 43\n")
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{} dataset_info of config `training_runs` lists the features [\"experiments\"], which \
             data/training_runs.parquet does not hold, and not its columns [\"experiment\"]",
            at("  features:\n  - name: training_run_id\n")
        )),
        "{out}"
    );
    assert_eq!(out.matches("lists the features").count(), 1, "{out}");
    assert!(
        out.contains(&format!(
            "{} dataset_info of config `training_runs` gives feature `training_run_id` the type int64, and \
             data/training_runs.parquet holds it as string",
            at("  - name: training_run_id\n    dtype: int64\n")
        )),
        "{out}"
    );
    for (feature, said) in [("weight_checkpoints", "string"), ("sampler_weight_checkpoints", "list<int64>")] {
        assert!(
            out.contains(&format!(
                "{} dataset_info of config `training_runs` gives feature `{feature}` the type {said}, and \
                 data/training_runs.parquet holds it as list<string>",
                at(&format!("  - name: {feature}\n"))
            )),
            "{out}"
        );
    }
    // the untouched features, lists among them, agree with the files
    assert_eq!(out.matches("gives feature").count(), 3, "{out}");
    assert!(
        out.contains(&format!(
            "README.md:{}: configs `training_runs`, `checkpoints` are each `default: true`; a card has one default \
             config at most",
            line_at(&edited, edited.find("- config_name: checkpoints\n  default").unwrap()) + 1
        )),
        "{out}"
    );
    // a split named otherwise than in data_files, checked without a manifest as for a Hub repo
    let renamed = card.replacen("  - name: train\n", "  - name: trainx\n", 1);
    std::fs::write(&path, &renamed).unwrap();
    std::fs::remove_file(tmp.path().join("manifest.json")).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!(
            "{} dataset_info of config `training_runs` names the splits {{\"trainx\"}}, and its data_files \
             the splits {{\"train\"}}",
            readme_line(&renamed, "  splits:\n  - name: trainx\n")
        )),
        "{}",
        stdout(&o)
    );
    // a folder with none of a release's files is no release: the check cannot be made
    let empty = tempfile::tempdir().unwrap();
    let o = run(bin().arg("verify").arg(empty.path()));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("is not a release folder: it holds no manifest.json, SHA256SUMS, README.md or data folder")
    );
}

#[test]
fn non_finite_numbers_inside_a_checkpoints_extra_keys_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "checkpoints.jsonl",
        "{\"name\":\"final\",\"batch\":100,\"extra\":{\"x\":NaN},\"sampler_path\":\"tinker://a/sampler_weights/final\"}\n",
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("tc", "checkpoints.jsonl", "tinker-checkpoints", "", "SELECT name, extra FROM raw", ""),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "tc");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["report"]["nonfinite_values"], serde_json::json!({"raw": 1}));
    assert_eq!(query(&r, "SELECT extra FROM t"), "extra\n\"{\"\"extra\"\":{\"\"x\"\":\"\"NaN\"\"}}\"\n");
}

#[test]
fn a_trajectorys_correct_follows_its_reward_as_converted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "trajectories.jsonl",
        "{\"idx\":0,\"reward\":\"1.0\"}\n{\"idx\":1,\"reward\":\"0\"}\n{\"idx\":2,\"reward\":NaN}\n",
    );
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "et",
            "trajectories.jsonl",
            "tinker-eval-trajectories",
            "coerce_numeric_strings = true\n",
            "SELECT example_id, reward, correct FROM raw",
            "",
        ),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "et"), "SELECT * FROM t ORDER BY example_id"),
        "example_id,reward,correct\n0,1.0,true\n1,0.0,false\n2,NaN,\n"
    );
    // an integer's text that a float would round is refused, as the same JSON number is
    write(dir, "trajectories.jsonl", "{\"idx\":0,\"reward\":\"9007199254740993\"}\n");
    let o = build(dir, &["-q", "--force"]);
    assert_violations(
        &o,
        1,
        &[
            "trajectories.jsonl:1:$.reward: string \"9007199254740993\" holds an integer that cannot be stored exactly as a 64-bit float",
        ],
    );
}

#[test]
fn eval_documents_and_answers_keep_their_shape_or_are_violations() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let toml = |format: &str, path: &str| one_source("ev", path, format, "", "SELECT * FROM raw", "");
    // a result.json holding no record, or metrics that are not an object of numbers
    write(dir, "a/result.json", "[]");
    write(dir, "b/result.json", r#"{"name":"g","score":0.5,"metrics":"notobj"}"#);
    write(dir, "c/result.json", r#"{"name":"g","score":0.5,"metrics":{"acc":0.5,"note":"x"}}"#);
    write(dir, "pipeline.toml", &toml("tinker-eval-result", "*/result.json"));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("a/result.json:$: expected a JSON object (one record), found a document that holds none"),
        "{e}"
    );
    assert!(e.contains("b/result.json:$.metrics: expected an object of metric values, found string \"notobj\""), "{e}");
    assert!(e.contains("c/result.json:$.metrics.note: expected a number, found string \"x\""), "{e}");
    // a checkpoint's metrics named by an object; answers as big integers and non-finite numbers
    write(dir, "m/c_metrics.json", r#"{"checkpoint":{"a":[1]},"id":{"answer_accuracy":0.5}}"#);
    write(dir, "pipeline.toml", &toml("eval-metrics", "m/*_metrics.json"));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("m/c_metrics.json:$.checkpoint: expected a string or a number, found an object"),
        "{}",
        stderr(&o)
    );
    // a pass@k value is named by its raw key under its split, not by its place in the k-sorted list
    write(
        dir,
        "m/c_metrics.json",
        r#"{"checkpoint":"c","id":{"pass_at_k":{"pass@7":12345678901234567890123,"pass@2":0.5}}}"#,
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("m/c_metrics.json:/id:$.id.pass_at_k[\"pass@7\"]: integer 12345678901234567890123"),
        "{}",
        stderr(&o)
    );
    write(
        dir,
        "g/m_id_generations.jsonl",
        "{\"__idx\":1,\"gold_answer\":123456789012345678901234567890,\"gen_answer\":NaN,\"template\":\"t\"}\n\
         {\"__idx\":2,\"gold_answer\":Infinity,\"gen_answer\":\"7\",\"template\":{\"t\":1}}\n",
    );
    write(dir, "pipeline.toml", &toml("eval-generations", "g/*_generations.jsonl"));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("g/m_id_generations.jsonl:2:$.template: expected a string or a number, found an object"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("1 violation found"), "{}", stderr(&o));
    let o = run(bin().arg("build").arg(dir).arg("--releases-dir").arg(dir.join("out")).args([
        "-q",
        "--force",
        "--on-invalid",
        "reject",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "ev"), "SELECT gold_answer, gen_answer FROM t"),
        "gold_answer,gen_answer\n123456789012345678901234567890,NaN\n"
    );
}

#[test]
fn integers_written_as_floats_are_read_exactly_or_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.jsonl", "{\"i\": 9007199254740993.0}\n{\"i\": 4.0}\n");
    write(dir, "c.csv", "i\n3.0000000000000001\n5.0\n");
    for (path, format) in [("m.jsonl", "jsonl"), ("c.csv", "csv")] {
        write(
            dir,
            "pipeline.toml",
            &one_source(
                "fi",
                path,
                format,
                "[[source.field]]\nname = \"i\"\ntype = \"integer\"\n",
                "SELECT i FROM raw",
                "",
            ),
        );
        let o = build(dir, &["-q", "--force"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let e = stderr(&o);
        let expected = if format == "csv" {
            "c.csv:2:$.i: fractional value 3.0000000000000001 for integer column".to_string()
        } else {
            "m.jsonl:1:$.i: number 9007199254740992.0 is written as a float of 2^53 or more".to_string()
        };
        assert!(e.contains(&expected), "{e}");
        assert!(e.contains("1 violation found"), "{e}");
    }
    // a pattern matches the whole value, line ends included; a key with control characters is
    // shown escaped, on one line
    write(dir, "s.jsonl", "{\"id\": \"a\\nb\\u001b[31m\", \"v\": \"x\\n\"}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"string"},{"name":"v","type":"string","constraints":{"pattern":"[^y]+","maxLength":1}}],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("fi", "s.jsonl", "jsonl", "", "SELECT id, v FROM raw", "schema = \"t.json\"\n"),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(!e.contains("rule pattern"), "{e}");
    assert!(e.contains("(table t, key id=\"a\\nb\\u001b[31m\", rule maxLength)"), "{e}");
}

#[test]
fn build_says_what_a_pipeline_is_when_given_something_else() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "raw.jsonl", "{\"a\": 1}\n");
    let o = run(bin().arg("build").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(": no pipeline.toml in this folder: a pipeline is a folder holding pipeline.toml"));
    let o = run(bin().arg("build").arg(tmp.path().join("raw.jsonl")));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("raw.jsonl: a pipeline is a pipeline.toml file or the folder holding it"));
}

#[test]
fn per_template_metrics_are_kept_and_naive_times_keep_to_microseconds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "m/checkpoint-final_metrics.json",
        r#"{"checkpoint":"checkpoint-final","id":{"count":3},"total":{"count":3},"per_template":{"default":{"count":3,"correct":1}}}"#,
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("pt", "m/{ckpt}_metrics.json", "eval-metrics", "", "SELECT split, extra FROM raw", ""),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "pt"), "SELECT split, extra FROM t ORDER BY split"),
        "split,extra\nid,\ntotal,\"{\"\"per_template\"\":{\"\"default\"\":{\"\"count\"\":3,\"\"correct\"\":1}}}\"\n"
    );
    write(dir, "ts.jsonl", "{\"ts\": \"2025-03-01T12:00:00.123456789\"}\n");
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "pt",
            "ts.jsonl",
            "jsonl",
            "assume_timezone = \"UTC\"\n[[source.field]]\nname = \"ts\"\ntype = \"datetime\"\n",
            "SELECT ts FROM raw",
            "",
        ),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("ts.jsonl:1:$.ts: timestamp \"2025-03-01T12:00:00.123456789\" has digits below a microsecond"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn raw_json_lines_queries_read_every_extension_type_nan_strings_in_any_order_and_keep_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a folder: every JSON Lines extension, and a table copy with its own provenance beside a
    // plain file (which gets runpack's)
    write(dir, "a/x.ndjson", "{\"v\": 1}\n");
    write(dir, "a/y.jsonl", "{\"v\": 2}\n");
    write(dir, "a/schema.json", "{\"fields\": []}");
    write(dir, "a/z.jsonl", "{\"v\": 3, \"_source_file\": \"raw.json\", \"_source_line\": \"/runs/0\"}\n");
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(dir.join("a")).arg("SELECT * FROM t ORDER BY v"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "v,_source_file,_source_line\n1,x.ndjson,1\n2,y.jsonl,1\n3,raw.json,/runs/0\n");
    // a row whose own are null gets runpack's; an own column of another type is kept as it is
    write(dir, "b/f1.jsonl", "{\"v\": 1, \"_source_line\": true}\n{\"v\": 2, \"_source_line\": null}\n");
    write(dir, "b/f2.jsonl", "{\"v\": 3}\n");
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(dir.join("b")).arg("SELECT * FROM t ORDER BY v"));
    assert_eq!(stdout(&o), "v,_source_line,_source_file\n1,true,\n2,,f1.jsonl\n3,,f2.jsonl\n", "{}", stderr(&o));
    // the names runpack keeps for its own beside the data's are refused as data columns
    write(dir, "c/f.jsonl", "{\"_source_file\": \"o\", \"\\u0001_source_line\": 1}\n");
    let o = run(bin().args(["query", "-q"]).arg(dir.join("c")).arg("SELECT * FROM t"));
    assert!(stderr(&o).contains("a name runpack keeps for its own file and line"), "{}", stderr(&o));
    // "NaN"/"Infinity" strings (runpack's own JSON Lines) type a column as numbers wherever they come
    for (name, text) in
        [("n1.jsonl", "{\"v\": 1.5}\n{\"v\": \"Infinity\"}\n"), ("n2.jsonl", "{\"v\": \"Infinity\"}\n{\"v\": 1.5}\n")]
    {
        write(dir, name, text);
        let o = run(bin()
            .args(["query", "-q", "--format", "csv"])
            .arg(dir.join(name))
            .arg("SELECT max(v) > 2 AS inf, arrow_typeof(min(v)) AS t FROM t"));
        assert_eq!(stdout(&o), "inf,t\ntrue,Float64\n", "{name}: {}", stderr(&o));
    }
    write(dir, "s.jsonl", "{\"v\": \"NaN\"}\n{\"v\": \"x\"}\n");
    let o =
        run(bin().args(["query", "-q", "--format", "csv"]).arg(dir.join("s.jsonl")).arg("SELECT v FROM t ORDER BY v"));
    assert_eq!(stdout(&o), "v\nNaN\nx\n", "{}", stderr(&o));
    // globs take `*`, `**` and `?`; a class or an alternative is said to be none
    for glob in ["[xy].jsonl", "{n1,n2}.jsonl"] {
        let o = run(bin().args(["query", "-q"]).arg(dir.join(glob)).arg("SELECT 1"));
        assert!(stderr(&o).contains("is not glob syntax here"), "{glob}: {}", stderr(&o));
    }
    // --table keeps its case and dots; the table format escapes control characters in names
    write(dir, "k.jsonl", "{\"a\\nb\": 1}\n");
    let o = run(bin()
        .args(["query", "-q", "--table", "My.T"])
        .arg(dir.join("k.jsonl"))
        .arg("SELECT \"a\nb\" FROM \"My.T\""));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("| a\\nb |"), "{}", stdout(&o));
    // and SQL errors that name such a column show it escaped
    write(dir, "e.jsonl", "{\"a\\u001b[31mb\": 1}\n");
    let o = run(bin().args(["query", "-q"]).arg(dir.join("e.jsonl")).arg("SELECT nonexist FROM t"));
    assert!(stderr(&o).contains("a\\u{1b}[31mb") && !stderr(&o).contains('\u{1b}'), "{}", stderr(&o));
}

#[test]
fn parquet_files_of_one_source_with_other_columns_are_a_pipeline_matter() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  d = sys.argv[1]\n\
                  pq.write_table(pa.table({'a': [1], 'b': ['x']}), d + '/p/0.parquet')\n\
                  pq.write_table(pa.table({'a': [2], 'c': [1.5]}), d + '/p/1.parquet')\n";
    std::fs::create_dir_all(dir.join("p")).unwrap();
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir));
    assert!(o.status.success(), "{}", stderr(&o));
    write(dir, "pipeline.toml", &one_source("pc", "p/*.parquet", "parquet", "", "SELECT * FROM raw", ""));
    // as for JSON Lines and CSV files: exit 2, every difference in one message, and the way out
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pipeline.toml (source raw): "), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "the files of this source have different columns: p/1.parquet has `c` that p/0.parquet lacks; \
             p/1.parquet lacks `b` that p/0.parquet has; set columns = \"union\""
        ),
        "{}",
        stderr(&o)
    );
    let union = "columns = \"union\"\n";
    write(dir, "pipeline.toml", &one_source("pc", "p/*.parquet", "parquet", union, "SELECT a, b, c FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "pc"), "SELECT a, b, c FROM t ORDER BY a"), "a,b,c\n1,x,\n2,,1.5\n");
}

#[test]
fn a_parquet_column_null_in_every_row_of_one_file_takes_the_other_files_type() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  d = sys.argv[1]\n\
                  pq.write_table(pa.table({'a': pa.array([None], pa.null())}), d + '/0.parquet')\n\
                  pq.write_table(pa.table({'a': pa.array([1], pa.int32()), 'b': pa.array(['x'])}), d + '/1.parquet')\n\
                  pq.write_table(pa.table({'a': pa.array([None], pa.null()), 'b': pa.array([None], pa.null())}), d + '/2.parquet')\n";
    std::fs::create_dir_all(dir.join("p")).unwrap();
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("p")));
    assert!(o.status.success(), "{}", stderr(&o));
    let sql = "SELECT a, b, arrow_typeof(a) AS t FROM t ORDER BY a";
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(dir.join("p")).arg(sql));
    assert_eq!(stdout(&o), "a,b,t\n1,x,Int64\n,,Int64\n,,Int64\n", "{}", stderr(&o));
    // and with a declared schema: nothing of an all-null column is lost in any type
    write(dir, "s.json", r#"{"fields": [{"name": "a", "type": "integer"}, {"name": "b", "type": "string"}]}"#);
    std::fs::remove_file(dir.join("p/0.parquet")).unwrap();
    let o = run(bin()
        .args(["query", "-q", "--format", "csv", "--schema"])
        .arg(dir.join("s.json"))
        .arg(dir.join("p"))
        .arg("SELECT a, b FROM t ORDER BY a"));
    assert_eq!(stdout(&o), "a,b\n1,x\n,\n", "{}", stderr(&o));
    // also a struct member or a list item null in every row of one file
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  d = sys.argv[1]\n\
                  pq.write_table(pa.table({'s': pa.array([{'x': None}], pa.struct([('x', pa.null())])), 'l': pa.array([[None]], pa.list_(pa.null()))}), d + '/1.parquet')\n\
                  pq.write_table(pa.table({'s': pa.array([{'x': 5}], pa.struct([('x', pa.int32())])), 'l': pa.array([[1.5]], pa.list_(pa.float64()))}), d + '/2.parquet')\n";
    std::fs::create_dir_all(dir.join("n")).unwrap();
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("n")));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(dir.join("n"))
        .arg("SELECT s, l FROM t ORDER BY l[1] NULLS FIRST"));
    assert_eq!(stdout(&o), "s,l\n\"{\"\"x\"\":null}\",[null]\n\"{\"\"x\"\":5}\",[1.5]\n", "{}", stderr(&o));
    write(
        dir,
        "n.json",
        r#"{"fields": [{"name": "s", "type": "object", "fields": [{"name": "x", "type": "integer"}]}, {"name": "l", "type": "array", "items": {"type": "number"}}]}"#,
    );
    let o = run(bin()
        .args(["query", "-q", "--format", "csv", "--schema"])
        .arg(dir.join("n.json"))
        .arg(dir.join("n"))
        .arg("SELECT s, l FROM t ORDER BY l[1] NULLS FIRST"));
    assert_eq!(stdout(&o), "s,l\n\"{\"\"x\"\":null}\",[null]\n\"{\"\"x\"\":5}\",[1.5]\n", "{}", stderr(&o));
    // a real clash says what query can do about it (it has no [[source.field]])
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  d = sys.argv[1]\n\
                  pq.write_table(pa.table({'a': [1]}), d + '/1.parquet')\n\
                  pq.write_table(pa.table({'a': ['x']}), d + '/2.parquet')\n";
    std::fs::create_dir_all(dir.join("c")).unwrap();
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("c")));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().args(["query", "-q"]).arg(dir.join("c")).arg("SELECT * FROM t"));
    assert!(
        stderr(&o).contains("a: Int64 in 1.parquet vs Utf8 in 2.parquet; query the files of each type apart"),
        "{}",
        stderr(&o)
    );
    // a column name twice in one file is named with the file
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=['a', 'a']), sys.argv[1])\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("dup.parquet")));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().args(["query", "-q"]).arg(dir.join("dup.parquet")).arg("SELECT * FROM t"));
    assert!(stderr(&o).contains("dup.parquet: column `a` appears more than once in the file"), "{}", stderr(&o));
}

#[test]
fn integers_on_both_sides_of_int64_are_kept_exactly_as_the_hint_says() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "seed.jsonl", "{\"seed\": -1}\n{\"seed\": 18446744073709551615}\n");
    let o = run(bin().args(["query", "-q"]).arg(dir.join("seed.jsonl")).arg("SELECT seed FROM t"));
    assert!(stderr(&o).contains("declare the column's type as `any` to keep both exactly"), "{}", stderr(&o));
    // which works: in a pipeline and in query
    let field = "[[source.field]]\nname = \"seed\"\ntype = \"any\"\n";
    write(dir, "pipeline.toml", &one_source("s", "seed.jsonl", "jsonl", field, "SELECT seed FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "s"), "SELECT seed FROM t ORDER BY seed"), "seed\n-1\n18446744073709551615\n");
    write(dir, "s.json", r#"{"fields": [{"name": "seed", "type": "any"}]}"#);
    let o = run(bin()
        .args(["query", "-q", "--format", "csv", "--schema"])
        .arg(dir.join("s.json"))
        .arg(dir.join("seed.jsonl"))
        .arg("SELECT seed FROM t ORDER BY seed"));
    assert_eq!(stdout(&o), "seed\n-1\n18446744073709551615\n", "{}", stderr(&o));
}

#[test]
fn a_parquet_source_column_null_in_every_row_of_one_file_takes_the_other_files_type() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  d = sys.argv[1]\n\
                  pq.write_table(pa.table({'k': [1], 'a': pa.array([None], pa.null())}), d + '/0.parquet')\n\
                  pq.write_table(pa.table({'k': [2], 'a': pa.array([5], pa.int32())}), d + '/1.parquet')\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir));
    assert!(o.status.success(), "{}", stderr(&o));
    write(dir, "pipeline.toml", &one_source("p", "*.parquet", "parquet", "", "SELECT k, a FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "p"), "SELECT k, a FROM t ORDER BY k"), "k,a\n1,\n2,5\n");
    // null in every file: a type must be declared
    std::fs::remove_file(dir.join("1.parquet")).unwrap();
    let o = build(dir, &["-q", "--force"]);
    assert!(stderr(&o).contains("0.parquet: column `a` is null in every row, so it has no type"), "{}", stderr(&o));
}

/// A Parquet file whose pages are corrupt (one bit of the bundled example's `checkpoints`
/// flipped) makes the Parquet reader panic: query and build say which file, and nothing
/// prints a panic.
#[test]
fn a_parquet_file_the_reader_panics_on_is_named_not_a_crash() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::copy(repo().join("tests/fixtures/corrupt/bitflip.parquet"), dir.join("raw/c.parquet")).unwrap();
    let quiet = |mut c: std::process::Command| {
        c.env_remove("RUST_BACKTRACE");
        run(&mut c)
    };
    let mut c = bin();
    c.current_dir(dir).args(["query", "-q", "raw/c.parquet", "SELECT * FROM t", "--format", "csv"]);
    let o = quiet(c);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: query: raw/c.parquet is not a readable Parquet file: the Parquet reader stopped on"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    write(dir, "pipeline.toml", &one_source("cp", "raw/c.parquet", "parquet", "", "SELECT name, step FROM raw", ""));
    let mut c = bin();
    c.arg("build").arg(dir).arg("-q");
    let o = quiet(c);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("raw/c.parquet: not readable as Parquet: the Parquet reader stopped on"), "{err}");
    assert!(err.contains("(reading from row 1)"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!dir.join("releases/cp").exists());
}

/// A release whose data file does not hold the manifest's schema (a column renamed or retyped
/// in the manifest, a file rewritten by another writer) is refused by query naming the file
/// and the difference, where DataFusion would read the renamed column as nulls and cast the
/// retyped one.
#[test]
fn query_refuses_a_data_file_that_does_not_hold_the_manifests_schema() {
    let t = tempfile::tempdir().unwrap();
    let edit = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let dir = t.path().join(name);
        copy_tree(example_release(), &dir);
        let path = dir.join("manifest.json");
        let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let table = m["tables"].as_array_mut().unwrap().iter_mut().find(|t| t["name"] == "checkpoints").unwrap();
        let field = table["schema"]["fields"].as_array_mut().unwrap().iter_mut().find(|f| f["name"] == "step").unwrap();
        f(field);
        std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
        dir
    };
    let renamed = edit("renamed", &|f| f["name"] = "stepx".into());
    let o = run(bin().args(["query", "-q"]).arg(&renamed).arg("SELECT count(*), sum(stepx) FROM checkpoints"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "error: data/checkpoints.parquet (table checkpoints) does not hold the manifest's schema: \
             `stepx` missing; `step` not expected\nhint: `runpack verify"
        ),
        "{err}"
    );
    assert!(stdout(&o).is_empty());
    // (its range constraint goes too: on a string, the manifest itself would be refused)
    let retyped = edit("retyped", &|f| {
        f["type"] = "string".into();
        f.as_object_mut().unwrap().remove("constraints");
    });
    let o = run(bin().args(["query", "-q"]).arg(&retyped).arg("SELECT step FROM checkpoints ORDER BY step LIMIT 3"));
    assert!(stderr(&o).contains("`step`: Utf8 expected, Int64 found"), "{}", stderr(&o));
    // the other tables still answer, and the untouched release as before
    assert_eq!(
        query(&retyped, "SELECT count(*) AS n FROM evaluations"),
        query(example_release(), "SELECT count(*) AS n FROM evaluations")
    );
    assert!(query(example_release(), "SELECT count(*) AS n FROM checkpoints").contains("84"));
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
fn a_foreign_key_between_columns_of_other_types_is_a_schema_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "runs.jsonl", "{\"run\": \"a\", \"seed\": 1}\n{\"run\": \"b\", \"seed\": null}\n");
    // "abc" cast to a number is null, and null matched run b's seed
    write(dir, "evals.jsonl", "{\"seed\": \"1.0\"}\n{\"seed\": \"1e0\"}\n{\"seed\": \"abc\"}\n");
    write(
        dir,
        "runs.json",
        r#"{"fields":[{"name":"run","type":"string"},{"name":"seed","type":"number"}],"primaryKey":["run"]}"#,
    );
    write(
        dir,
        "evals.json",
        r#"{"fields":[{"name":"seed","type":"string"}],"foreignKeys":[{"fields":["seed"],"reference":{"resource":"runs","fields":["seed"]}}]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"fk\"\n[[source]]\nname = \"r\"\npath = \"runs.jsonl\"\nformat = \"jsonl\"\n\
         [[source]]\nname = \"e\"\npath = \"evals.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"runs\"\nschema = \"runs.json\"\nquery = \"SELECT run, seed FROM r\"\n\
         [[table]]\nname = \"evals\"\nschema = \"evals.json\"\nquery = \"SELECT seed FROM e\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "evals.json (table evals): foreign key column `seed` is string (Utf8), and the column `seed` of table \
             runs it references is number (Float64)"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("releases/fk").exists());
}

#[test]
fn query_checks_the_constraints_and_key_of_a_declared_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "d.jsonl",
        "{\"a\": 1, \"k\": 1}\n{\"a\": 5, \"k\": 2}\n{\"a\": 0, \"k\": 1}\n{\"a\": null, \"k\": 3}\n",
    );
    write(
        dir,
        "s.json",
        r#"{"fields":[{"name":"a","type":"integer","constraints":{"maximum":1,"required":true}},{"name":"k","type":"integer"}],"primaryKey":["k"]}"#,
    );
    let schema = dir.join("s.json");
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  pq.write_table(pa.table({'a': pa.array([1, 5, 0, None], pa.int64()), 'k': [1, 2, 1, 3]}), sys.argv[1])\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("d.parquet")));
    assert!(o.status.success(), "{}", stderr(&o));
    for (file, at) in [
        ("d.jsonl", ["d.jsonl:2:a", "d.jsonl:4:a", "d.jsonl:1:k"]),
        ("d.parquet", ["d.parquet:2:a", "d.parquet:4:a", "d.parquet:1:k"]),
    ] {
        let o =
            run(bin().args(["query", "-q"]).arg(dir.join(file)).arg("SELECT * FROM t").arg("--schema").arg(&schema));
        assert_eq!(o.status.code(), Some(1), "{file}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("value 5 is above the maximum 1"), "{err}");
        assert!(err.contains("value is null but the field is required"), "{err}");
        assert!(err.contains("2 rows share this primary key"), "{err}");
        assert!(err.contains("4 violations found"), "{err}");
        for place in at {
            assert!(err.contains(place), "{err}");
        }
        assert!(stdout(&o).is_empty(), "no result for rows that break the schema: {}", stdout(&o));
    }
    // the rows that keep the rules query as before; a foreign key is named as not checked
    write(dir, "ok.jsonl", "{\"a\": 1, \"k\": 1}\n{\"a\": 0, \"k\": 2}\n");
    write(
        dir,
        "fk.json",
        r#"{"fields":[{"name":"a","type":"integer","constraints":{"maximum":1}},{"name":"k","type":"integer"}],"primaryKey":["k"],"foreignKeys":[{"fields":["a"],"reference":{"resource":"other","fields":["x"]}}]}"#,
    );
    let o = run(bin()
        .arg("query")
        .arg(dir.join("ok.jsonl"))
        .arg("SELECT sum(a) AS s FROM t")
        .args(["--format", "csv"])
        .arg("--schema")
        .arg(dir.join("fk.json")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "s\n1\n");
    assert!(stderr(&o).contains("the schema's foreignKeys are not checked"), "{}", stderr(&o));
}

#[test]
fn query_says_what_to_query_instead_of_a_misplaced_source() {
    let r = example_release();
    let versions = r.parent().unwrap();
    let cases: Vec<(std::path::PathBuf, String)> = vec![
        (
            versions.to_path_buf(),
            format!("holds releases (1.0.0), not one: query one of them, such as {}", r.display()),
        ),
        (
            versions.parent().unwrap().to_path_buf(),
            format!("holds releases (tinker-rl-bench/1.0.0), not one: query one of them, such as {}", r.display()),
        ),
        (r.join("data"), "holds the files of every table of the release".into()),
        (r.join("jsonl"), "holds the files of every table of the release".into()),
        (
            r.join("manifest.json"),
            format!("is a release's manifest, not data: query the release folder {}", r.display()),
        ),
        (r.join("nope"), "nope: no such file or folder".into()),
        (repo().join("pipelines/tinker-rl-bench"), "is a pipeline folder, whose raw files query would read".into()),
    ];
    for (source, said) in cases {
        let o = run(bin().arg("query").arg(&source).arg("SELECT 1"));
        assert_eq!(o.status.code(), Some(2), "{}: {}", source.display(), stderr(&o));
        assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    }
    // a JSON document named as a .json file is said to be one, not a violation per line
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "doc.json", "{\n  \"runs\": [\n    {\"a\": 1}\n  ]\n}\n");
    let o = run(bin().arg("query").arg(tmp.path().join("doc.json")).arg("SELECT 1"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("doc.json: line 1 is not a whole JSON value"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    // an unknown table: the tables there are, and the one meant
    let o = run(bin().arg("query").arg(r).arg("SELECT * FROM trainng_runs"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "(the tables: checkpoints, eval_samples, evaluations, metrics, training_runs; did you mean \
             training_runs?)"
        ),
        "{}",
        stderr(&o)
    );
    write(tmp.path(), "k.jsonl", "{\"a\": 1}\n");
    let o = run(bin().args(["query", "--table", "My"]).arg(tmp.path().join("k.jsonl")).arg("SELECT * FROM My"));
    assert!(
        stderr(&o).contains("did you mean \"My\"? SQL reads a name without quotes in lower case"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_statement_without_a_result_prints_nothing() {
    for (format, printed) in [("table", ""), ("csv", ""), ("json", "[]\n"), ("ndjson", "")] {
        let o = run(bin()
            .args(["query", "-q", "--format", format])
            .arg(example_release())
            .arg("SET datafusion.runtime.memory_limit = '2G'"));
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        assert_eq!(stdout(&o), printed, "{format}");
    }
}

#[test]
fn a_manifest_that_is_not_json_is_placed_by_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::write(tmp.path().join("manifest.json"), "{\n  \"name\": \"x\",\n").unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("manifest.json:3:1: EOF while parsing a value\n"), "{}", stdout(&o));
}

#[test]
fn a_card_section_reads_sources_and_views_as_tables_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "x.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3}\n");
    write(dir, "y.jsonl", "{\"b\": 10}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"cs\"\n[card]\nlicense = \"mit\"\n\
         [[card.section]]\ntitle = \"From a view\"\nquery = \"SELECT count(*) AS n, sum(a) AS s FROM vx\"\n\
         [[card.section]]\ntitle = \"From a source no table reads\"\nquery = \"SELECT sum(b) AS total FROM y\"\n\
         [[source]]\nname = \"x\"\npath = \"x.jsonl\"\nformat = \"jsonl\"\n\
         [[source]]\nname = \"y\"\npath = \"y.jsonl\"\nformat = \"jsonl\"\n\
         [[view]]\nname = \"vx\"\nquery = \"SELECT a FROM x\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT a FROM vx\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "cs").join("README.md")).unwrap();
    assert!(card.contains("| n | s |\n|---|---|\n| 3 | 6 |\n"), "{card}");
    assert!(card.contains("| total |\n|---|\n| 10 |\n"), "{card}");
}

#[test]
fn non_finite_numbers_inside_logged_lists_and_objects_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "metrics.jsonl", "{\"step\": 0, \"f\": {\"x\": NaN}, \"l\": [Infinity, 1], \"loss\": 0.5}\n");
    write(dir, "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl", "{\"_step\": 0, \"l\": [1, NaN]}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"nf\"\n[[source]]\nname = \"m\"\npath = \"metrics.jsonl\"\nformat = \"tinker-metrics\"\n\
         [[source]]\nname = \"h\"\npath = \"wandb/**\"\nformat = \"wandb\"\n[source.wandb]\ntable = \"history\"\n\
         [[table]]\nname = \"metrics\"\nquery = \"SELECT * FROM m\"\n\
         [[table]]\nname = \"history\"\nquery = \"SELECT * FROM h\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nf");
    // the text keeps strict JSON; each token is counted where it was read
    assert_eq!(
        query(&r, "SELECT metric, value_text FROM metrics WHERE value_text IS NOT NULL ORDER BY metric"),
        "metric,value_text\nf,\"{\"\"x\"\":\"\"NaN\"\"}\"\nl,\"[\"\"Infinity\"\",1]\"\n"
    );
    assert_eq!(query(&r, "SELECT value_text FROM history WHERE metric = 'l'"), "value_text\n\"[1,\"\"NaN\"\"]\"\n");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["report"]["nonfinite_values"], serde_json::json!({"h": 1, "m": 2}));
}

#[test]
fn verify_says_what_a_replaced_data_file_holds() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::copy(tmp.path().join("data/metrics.parquet"), tmp.path().join("data/checkpoints.parquet")).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("data/checkpoints.parquet: sha256 mismatch"), "{out}");
    assert!(out.contains("data/checkpoints.parquet: 13220 rows, manifest says 84 rows"), "{out}");
    assert!(out.contains("data/checkpoints.parquet: schema differs from the manifest's table checkpoints"), "{out}");
    // a card path that matches no file is said as such, not as a split the data lacks
    let card = std::fs::read_to_string(tmp.path().join("README.md")).unwrap();
    write_card(tmp.path(), &card.replacen("path: data/checkpoints.parquet", "path: data/nope.parquet", 1));
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    assert!(out.contains("config `checkpoints` split `train`: `data/nope.parquet` matches no file"), "{out}");
    assert!(!out.contains("and its data_files the splits"), "{out}");
}

#[test]
fn a_nan_that_sql_makes_is_stored_as_the_nan_above_every_number() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.jsonl", "{\"k\": 1, \"a\": 0.0}\n{\"k\": 2, \"a\": 1.0}\n{\"k\": 3, \"a\": 0.0}\n");
    // 0.0 / 0.0 and its negation: NaNs of both signs
    let sql = "SELECT k, CASE WHEN k = 1 THEN a / a WHEN k = 3 THEN -(a / a) ELSE a END AS x FROM raw";
    write(dir, "pipeline.toml", &one_source("nan", "m.jsonl", "jsonl", "", sql, ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nan");
    assert_eq!(query(&r, "SELECT max(x) AS mx, min(x) AS mn FROM t"), "mx,mn\nNaN,1.0\n");
    assert_eq!(query(&r, "SELECT k FROM t ORDER BY x DESC, k"), "k\n1\n3\n2\n");
    assert_eq!(query(&r, "SELECT count(DISTINCT x) AS n FROM t WHERE isnan(x)"), "n\n1\n");
}

#[test]
fn a_parquet_file_whose_pages_do_not_decode_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(example_release().join("data/metrics.parquet")).unwrap();
    // inside the compressed pages of the first columns; the footer still reads
    bytes[3000..5000].fill(0xAB);
    let f = tmp.path().join("m.parquet");
    std::fs::write(&f, bytes).unwrap();
    let o = run(bin().args(["query", "-q"]).arg(&f).arg("SELECT sum(step) FROM t"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{} is not a readable Parquet file: ", f.display())), "{}", stderr(&o));
}

#[test]
fn json_and_csv_print_times_alike() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "one.jsonl", "{\"a\": 1}\n");
    let sql = "SELECT arrow_cast(0, 'Timestamp(Microsecond, None)') AS naive, \
               arrow_cast(0, 'Timestamp(Microsecond, Some(\"+05:30\"))') AS india, \
               arrow_cast(0, 'Timestamp(Microsecond, Some(\"UTC\"))') AS utc FROM t";
    let o = run(bin().args(["query", "-q", "--format", "ndjson"]).arg(tmp.path().join("one.jsonl")).arg(sql));
    assert_eq!(
        stdout(&o),
        "{\"naive\":\"1970-01-01T00:00:00\",\"india\":\"1970-01-01T05:30:00+05:30\",\"utc\":\"1970-01-01T00:00:00Z\"}\n",
        "{}",
        stderr(&o)
    );
    assert_eq!(
        query_with(&tmp.path().join("one.jsonl"), sql, &[]),
        "naive,india,utc\n1970-01-01T00:00:00,1970-01-01T05:30:00+05:30,1970-01-01T00:00:00Z\n"
    );
}

#[test]
fn a_datapackage_that_is_not_a_json_object_is_placed() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let dp = tmp.path().join("datapackage.json");
    std::fs::write(&dp, "{\n \"a\": \n").unwrap();
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    assert!(out.contains("datapackage.json:3:1: not valid JSON: EOF while parsing a value"), "{out}");
    std::fs::write(&dp, "42").unwrap();
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    assert!(out.contains("datapackage.json: expected a data package (a JSON object), found"), "{out}");
    assert!(!out.contains("no resource describes table"), "{out}");
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
fn one_row_per_row_group_builds_and_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let lines: String = (0..3000).map(|k| format!("{{\"k\": {k}}}\n")).collect();
    write(tmp.path(), "a.jsonl", &lines);
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"rg\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT k FROM s\"\n",
    );
    // the Parquet writer used to recurse once per row group of a batch, past its thread's stack
    let o = build(tmp.path(), &["-q", "--row-group-rows", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().args(["verify", "--data"]).arg(release(tmp.path(), "rg")));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("3,000 rows read"), "{}", stdout(&o));
}

#[test]
fn a_nan_with_its_sign_bit_set_sorts_as_the_nan_it_is_stored_as() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "a.jsonl",
        "{\"id\": 1, \"reward\": NaN}\n{\"id\": 2, \"reward\": 0.5}\n{\"id\": 3, \"reward\": -2}\n",
    );
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"nan\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT -reward AS loss, id FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(tmp.path(), "nan");
    // sorted by every column: NaN (stored with its sign bit clear) above every number
    assert_eq!(
        std::fs::read_to_string(r.join("jsonl/t.jsonl")).unwrap(),
        "{\"loss\":-0.5,\"id\":2}\n{\"loss\":2.0,\"id\":3}\n{\"loss\":\"NaN\",\"id\":1}\n"
    );
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn sql_cannot_store_what_the_conversion_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"id\": 1, \"t\": \"9999-12-31T23:59:59.999999Z\"}\n");
    write(
        tmp.path(),
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"j","type":"any"},{"name":"t2","type":"datetime"},{"name":"d2","type":"date"}],"primaryKey":["id"]}"#,
    );
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"q\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[source.field]]\nname = \"t\"\ntype = \"datetime\"\n\
         [[table]]\nname = \"a\"\nschema = \"t.json\"\n\
         query = \"SELECT id, 'NaN' AS j, t + INTERVAL '1 microsecond' AS t2, CAST(t AS DATE) + INTERVAL '1 day' AS d2 FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("j: expected JSON text, found text that is no JSON (expected value at line 1 column 1): \"NaN\""),
        "{e}"
    );
    assert!(e.contains("t2: \"+10000-01-01T00:00:00Z\" is outside years 1 to 9999"), "{e}");
    assert!(e.contains("d2: \"+10000-01-01\" is outside years 1 to 9999"), "{e}");
    // inside lists and objects too
    write(
        tmp.path(),
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"v","type":"array","items":{"type":"date"}},{"name":"o","type":"object","fields":[{"name":"a","type":"any"}]}],"primaryKey":["id"]}"#,
    );
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"q\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[source.field]]\nname = \"t\"\ntype = \"datetime\"\n\
         [[table]]\nname = \"a\"\nschema = \"t.json\"\n\
         query = \"SELECT id, make_array(CAST(t AS DATE), CAST(t AS DATE) + INTERVAL '1 day') AS v, named_struct('a', 'not json') AS o FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("v[1]: \"+10000-01-01\" is outside years 1 to 9999"), "{e}");
    assert!(e.contains("o.a: expected JSON text, found text that is no JSON"), "{e}");
}

#[test]
fn a_nan_inside_lists_and_structs_is_stored_with_its_sign_bit_clear() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"id\": 1, \"x\": NaN}\n");
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"nn\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\n\
         query = \"SELECT id, make_array(-x, x) AS arr, named_struct('n', -x) AS st FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(tmp.path(), "nn");
    let script = "import sys, glob, math, pyarrow.parquet as pq\n\
                  t = pq.read_table(glob.glob(sys.argv[1] + '/data/*.parquet')[0]).to_pydict()\n\
                  print([math.copysign(1, v) for v in t['arr'][0]], math.copysign(1, t['st'][0]['n']))\n";
    let o = run(std::process::Command::new(python()).args(["-c", script]).arg(&r));
    assert_eq!(stdout(&o).trim(), "[1.0, 1.0] 1.0", "{}", stderr(&o));
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn csv_cells_of_nested_columns_are_read_as_their_json_text_and_any_cells_as_text() {
    let tmp = tempfile::tempdir().unwrap();
    // as runpack's own CSV output writes nested values
    write(
        tmp.path(),
        "a.csv",
        "id,tags,o,j\n1,\"[\"\"a\"\",\"\"b\"\"]\",\"{\"\"k\"\":1,\"\"x\"\":NaN}\",\"{\"\"a\"\":[1,2]}\"\n2,[],{},hello\n3,,,\n",
    );
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"cj\"\n[[source]]\nname = \"s\"\npath = \"a.csv\"\nformat = \"csv\"\n\
         [[source.field]]\nname = \"tags\"\ntype = \"array\"\nitems = { type = \"string\" }\n\
         [[source.field]]\nname = \"o\"\ntype = \"object\"\n[[source.field]]\nname = \"j\"\ntype = \"any\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT id, tags, o, j FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(release(tmp.path(), "cj").join("jsonl/t.jsonl")).unwrap(),
        "{\"id\":1,\"tags\":[\"a\",\"b\"],\"o\":\"{\\\"k\\\":1,\\\"x\\\":\\\"NaN\\\"}\",\"j\":\"\\\"{\\\\\\\"a\\\\\\\":[1,2]}\\\"\"}\n\
         {\"id\":2,\"tags\":[],\"o\":\"{}\",\"j\":\"\\\"hello\\\"\"}\n\
         {\"id\":3,\"tags\":null,\"o\":null,\"j\":null}\n"
    );
    // text that is no JSON in an object column is refused, not kept
    write(tmp.path(), "a.csv", "id,tags,o,j\n1,[],{oops},\n");
    let o = build(tmp.path(), &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("a.csv:2:$.o: expected object, found string \"{oops}\""), "{}", stderr(&o));
}

#[test]
fn a_struct_for_a_json_text_column_gets_a_fix_that_works() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"id\": 1, \"a\": 2}\n");
    write(tmp.path(), "t.json", r#"{"fields":[{"name":"id","type":"integer"},{"name":"o","type":"object"}]}"#);
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"st\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nschema = \"t.json\"\n\
         query = \"SELECT id, named_struct('a', a) AS o FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "t.json) declares it object (Utf8); SQL cannot cast a struct or a list to JSON text: declare the field \
             as an `object` with `fields`"
        ),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("column `o` is Struct<a: Int64> in the query but the schema ("), "{}", stderr(&o));
}

#[test]
fn dates_and_times_beyond_what_can_be_printed_are_named_in_every_format() {
    // the JSON writer once panicked on such a date, and the table and JSON formats printed
    // Arrow's error text as the value with exit 0
    let cases = [
        ("SELECT CAST(2147483647 AS DATE) AS d", "column \"d\", row 1: 2147483647 (a Date32 value)"),
        ("SELECT to_timestamp_seconds(9223372036854775807) AS t", "column \"t\", row 1: 9223372036854775807"),
        // the last instant chrono holds, whose local time in UTC+14:00 is past its last date
        (
            "SELECT arrow_cast(to_timestamp_seconds(8210266876799), 'Timestamp(Second, Some(\"+14:00\"))') AS z",
            "column \"z\", row 1: 8210266876799 (a Timestamp(s, \"+14:00\") value)",
        ),
        (
            "SELECT * FROM (VALUES (1), (2)) AS v(k) CROSS JOIN (SELECT [named_struct('d', arrow_cast(2147483647, 'Date32'))] AS x) ORDER BY k",
            "column \"x\"[].d, row 1: 2147483647 (a Date32 value)",
        ),
    ];
    for (sql, said) in cases {
        for format in ["table", "csv", "json", "ndjson"] {
            let o = run(bin().args(["query", "-q", "--format", format]).arg(example_release()).arg(sql));
            assert_eq!(o.status.code(), Some(2), "{format} {sql}: {}{}", stdout(&o), stderr(&o));
            assert!(stderr(&o).contains(said), "{format} {sql}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("is outside what can be printed (dates of years -262143 to 262142"),
                "{}",
                stderr(&o)
            );
            assert!(!stdout(&o).contains("ERROR"), "{format}: {}", stdout(&o));
        }
    }
    // the edges themselves print
    let o = run(bin()
        .args(["query", "-q", "--format", "json"])
        .arg(example_release())
        .arg("SELECT arrow_cast(-96465292, 'Date32') AS lo, arrow_cast(95026236, 'Date32') AS hi"));
    assert_eq!(stdout(&o), "[{\"lo\":\"-262143-01-01\",\"hi\":\"+262142-12-31\"}]\n", "{}", stderr(&o));
}

/// `runpack query -q --format json <source> <sql>`; its stdout, asserting success.
fn json_query(source: &std::path::Path, sql: &str) -> String {
    let o = run(bin().args(["query", "-q", "--format", "json"]).arg(source).arg(sql));
    assert!(o.status.success(), "query failed: {sql}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn raw_json_lines_with_empty_objects_and_nan_like_names_print() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"a\":{},\"name\":\"Nan\"}\n{\"a\":{},\"name\":\"Infinity\"}\n");
    let f = tmp.path().join("a.jsonl");
    // an object with no members is `{}` in every format, not an error
    assert_eq!(json_query(&f, "SELECT a FROM t"), "[{\"a\":{}},\n{\"a\":{}}]\n");
    assert_eq!(query(&f, "SELECT a FROM t"), "a\n{}\n{}\n");
    // a struct's field named twice keeps both values, the second under a suffix
    assert_eq!(
        json_query(&f, "SELECT named_struct('a', 1, 'a', 2, 'a_1', 3) AS s LIMIT 1"),
        "[{\"s\":{\"a\":1,\"a_2\":2,\"a_1\":3}}]\n"
    );
    // a column of such strings and no number is text, kept as written
    assert_eq!(query(&f, "SELECT name, arrow_typeof(name) AS ty FROM t"), "name,ty\nNan,Utf8\nInfinity,Utf8\n");
    // with a number in the column, they are numbers (runpack's own copies write NaN so)
    write(tmp.path(), "b.jsonl", "{\"x\":\"NaN\"}\n{\"x\":1.5}\n");
    assert_eq!(query(&tmp.path().join("b.jsonl"), "SELECT x FROM t"), "x\nNaN\n1.5\n");
    // a pipeline source that reads such strings as numbers takes a column of them alone for
    // numbers (a loss that diverged on every step)
    write(tmp.path(), "m.jsonl", "{\"step\":1,\"loss\":\"NaN\"}\n{\"step\":2,\"loss\":\"Infinity\"}\n");
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"nf\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\ncoerce_nonfinite_strings = true\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT step, loss, arrow_typeof(loss) AS ty FROM raw\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(tmp.path(), "nf"), "SELECT loss, ty FROM t"), "loss,ty\nNaN,Float64\nInfinity,Float64\n");
}

#[test]
fn a_literal_path_reads_its_file_without_walking_the_folder() {
    // a file named as it is: its folder's other entries, a loop of links among them, are
    // never visited (querying a file in a large folder once walked all of it)
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"x\":1}\n");
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("..", tmp.path().join("sub/up")).unwrap();
    assert_eq!(query(&tmp.path().join("a.jsonl"), "SELECT x FROM t"), "x\n1\n");
    // the same in a pipeline: `a.jsonl` and `*.jsonl` stay at the folder's top level
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"lit\"\n[[source]]\nname = \"raw\"\npath = [\"a.jsonl\"]\nformat = \"jsonl\"\n[[source]]\nname = \"g\"\npath = \"*.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT x FROM raw UNION ALL SELECT x FROM g\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(tmp.path(), "lit"), "SELECT count(*) AS n FROM t"), "n\n2\n");
    // `./`, `//` and `/./` name the same file; a link back up at the pattern's deepest level
    // is never walked into, so it is no loop
    write(tmp.path(), "raw/m.jsonl", "{\"x\":2}\n");
    std::os::unix::fs::symlink(".", tmp.path().join("raw/self")).unwrap();
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"lit\"\n[[source]]\nname = \"raw\"\npath = [\"./a.jsonl\", \"raw//m.jsonl\"]\nformat = \"jsonl\"\n\
         [[source]]\nname = \"g\"\npath = \"raw/./*.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT x FROM raw UNION ALL SELECT x FROM g\"\n",
    );
    let o = build(tmp.path(), &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(tmp.path(), "lit"), "SELECT sum(x) AS n FROM t"), "n\n5\n");
}

#[test]
fn the_cards_provenance_names_odd_file_names_as_they_are() {
    // a line break, a tab, a backtick and a bar in a file name: each input's row names it
    // in a code span that Markdown shows as the name, not another name or broken markup
    let tmp = tempfile::tempdir().unwrap();
    for name in ["c\nd.jsonl", "t\tb.jsonl", "a`b.jsonl", "p|q.jsonl"] {
        write(tmp.path(), name, &format!("{{\"x\":{}}}\n", name.len()));
    }
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"odd\"\n[[source]]\nname = \"raw\"\npath = \"*.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT x FROM raw\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(tmp.path(), "odd").join("README.md")).unwrap();
    for row in ["| ``a`b.jsonl`` |", "| `c\\nd.jsonl` |", "| `p\\|q.jsonl` |", "| `t\\tb.jsonl` |"] {
        assert!(card.contains(row), "{row} in\n{card}");
    }
}

#[test]
fn a_link_loop_under_a_pattern_is_named_as_one() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "logs/a.jsonl", "{\"x\":1}\n");
    std::os::unix::fs::symlink("..", tmp.path().join("logs/up")).unwrap();
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"loop\"\n[[source]]\nname = \"raw\"\npath = \"logs/**/*.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT x FROM raw\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("logs/up: a symbolic link back to "), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a loop the path pattern \"logs/**/*.jsonl\" would walk without end"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn verify_names_a_damaged_parquet_file_whatever_the_reader_does_with_it() {
    // one bit flipped in a footer or a page once made the Parquet and Arrow readers panic,
    // which stopped verify as an internal error without naming the file
    let tmp = tempfile::tempdir().unwrap();
    let good = crate::tinker_wandb::release();
    let bytes = std::fs::read(good.join("data/run_links.parquet")).unwrap();
    let n = bytes.len();
    // the footer's embedded Arrow schema, and spots in the pages
    let spots: Vec<(usize, &str)> = (n.saturating_sub(830)..n.saturating_sub(200))
        .step_by(3)
        .map(|at| (at, "plain"))
        .chain(
            [357usize, 1310, 3183]
                .iter()
                .flat_map(|&c| (c.saturating_sub(2)..(c + 3).min(n - 8)).map(|at| (at, "--data"))),
        )
        .collect();
    let copy = tmp.path().join("damaged");
    copy_tree(good, &copy);
    for (at, mode) in spots {
        let mut b = bytes.clone();
        b[at] ^= 1;
        std::fs::write(copy.join("data/run_links.parquet"), &b).unwrap();
        let mut cmd = bin();
        cmd.arg("verify").arg(&copy);
        if mode == "--data" {
            cmd.arg("--data");
        }
        let o = run(&mut cmd);
        assert_eq!(o.status.code(), Some(1), "byte {at} ({mode}): {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("data/run_links.parquet: sha256 mismatch"), "byte {at}: {}", stdout(&o));
        assert!(!stderr(&o).contains("internal error"), "byte {at} ({mode}): {}", stderr(&o));
    }
    // a manifest whose schema is no schema: named, not an internal error
    copy_tree(good, &copy);
    let m = std::fs::read_to_string(copy.join("manifest.json")).unwrap();
    std::fs::write(copy.join("manifest.json"), m.replacen("\"type\": \"string\"", "\"type\": \"strinf\"", 1)).unwrap();
    let o = run(bin().arg("verify").arg(&copy));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("manifest.json:/tables/0/schema/fields/0: table training_runs: field "),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("type `strinf` is not supported"), "{}", stdout(&o));
    // a Hub repository's .gitattributes in a downloaded copy is no stray file
    copy_tree(good, &copy);
    std::fs::write(copy.join(".gitattributes"), "*.parquet filter=lfs diff=lfs merge=lfs -text\n").unwrap();
    let o = run(bin().arg("verify").arg(&copy));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn verify_refuses_a_resealed_data_package_frictionless_would_refuse() {
    let tmp = tempfile::tempdir().unwrap();
    /// A change to the package, and what verify says of it.
    type Edit<'a> = (&'a str, &'a dyn Fn(&mut serde_json::Value), &'a str);
    let edits: [Edit; 3] = [
        (
            "format",
            &|d| d["resources"][0]["format"] = "csv".into(),
            "/resources/0/format is string \"csv\" where a build writes string \"jsonl\"",
        ),
        (
            "twice",
            &|d| {
                let r = d["resources"][0].clone();
                d["resources"].as_array_mut().unwrap().push(r);
            },
            "datapackage.json: /resources/5 describes table training_runs a second time",
        ),
        (
            "profile",
            &|d| d["profile"] = "data-package".into(),
            "datapackage.json: /profile is string \"data-package\" where a build writes string \"tabular-data-package\"",
        ),
    ];
    for (name, edit, said) in edits {
        let dir = tmp.path().join(name);
        copy_tree(example_release(), &dir);
        let path = dir.join("datapackage.json");
        let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut doc);
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        reseal(&dir);
        let o = run(bin().arg("verify").arg(&dir));
        assert_eq!(o.status.code(), Some(1), "{name}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(said), "{name}: {}", stdout(&o));
    }
    // the built one passes
    let o = run(bin().arg("verify").arg(example_release()));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
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
fn a_record_without_metrics_is_no_row_unless_its_step_is_not_an_integer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "m.jsonl", "{\"step\": 0, \"loss\": 1.0}\n{\"step\": \"five\"}\n{}\n{\"step\": 3}\n{\"step\": 4.0}\n");
    let toml = |key: &str| {
        one_source("nm", "m.jsonl", "tinker-metrics", "", "SELECT * FROM raw", &format!("schema = \"t.json\"\n{key}"))
    };
    // a natural key of the long form holds: the records without metrics make no row
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"step","type":"integer"},{"name":"metric","type":"string"},{"name":"value","type":"number"},{"name":"value_text","type":"string"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["step","metric"]}"#,
    );
    write(dir, "pipeline.toml", &toml(""));
    let o = build(dir, &["-q"]);
    assert_violations(&o, 1, &["m.jsonl:2:$.step: expected integer, found string \"five\""]);
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "nm"), "SELECT _source_line, step, metric, value FROM t ORDER BY _source_line"),
        "_source_line,step,metric,value\n1,0,loss,1.0\n"
    );
    let rejects = std::fs::read_to_string(release(dir, "nm").join("rejects/raw.jsonl")).unwrap();
    assert!(rejects.contains("\"_source_line\":2"), "{rejects}");
}

#[test]
fn a_declared_source_field_no_record_holds_is_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "s.jsonl", "{\"step\": 1, \"score\": 0.5}\n{\"step\": 2, \"score\": null}\n");
    let field = |name: &str| format!("[[source.field]]\nname = \"{name}\"\ntype = \"number\"\n");
    write(dir, "pipeline.toml", &one_source("sf", "s.jsonl", "jsonl", &field("scroe"), "SELECT * FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "warning: raw: [[source.field]] `scroe` is null in all 2 rows kept (a misspelled key?)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "sf").join("README.md")).unwrap();
    assert!(card.contains("[[source.field]] `scroe` is null in all 2 rows kept"), "{card}");
    // a field some record holds is not warned of, null elsewhere or not
    write(dir, "pipeline.toml", &one_source("sf", "s.jsonl", "jsonl", &field("score"), "SELECT * FROM raw", ""));
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("misspelled"), "{}", stderr(&o));
}

#[test]
fn explain_shows_its_plans_line_by_line_in_the_table_format() {
    let o = run(bin()
        .args(["query", "-q"])
        .arg(example_release())
        .arg("EXPLAIN SELECT tinker_uri, count(*) FROM eval_samples GROUP BY tinker_uri"));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("\\n"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("|               |   Aggregate: groupBy=")), "{out}");
    assert!(lines.iter().any(|l| l.contains("ViewGroupsExec: ")), "{out}");
    // other text keeps its control characters escaped, also under an EXPLAIN's column names
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT 'a' || chr(10) || 'b' AS x"));
    assert!(stdout(&o).contains("| a\\nb |"), "{}", stdout(&o));
    let o = run(bin()
        .args(["query", "-q"])
        .arg(example_release())
        .arg("SELECT 'x' AS plan_type, 'a' || chr(10) || 'b' AS plan"));
    assert!(stdout(&o).contains("| a\\nb |"), "{}", stdout(&o));
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

#[test]
fn a_card_sections_misspelled_table_is_found_before_any_source_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // the source is not even there: the section's name is checked first
    let section = |sql: &str| {
        format!(
            "name = \"cs\"\n[[source]]\nname = \"s\"\npath = \"missing.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"runs\"\nquery = \"SELECT a FROM s\"\n\
             [[card.section]]\ntitle = \"Best\"\ntext = \"x\"\nquery = \"{sql}\"\n"
        )
    };
    write(dir, "pipeline.toml", &section("SELECT * FROM run, generate_series(1, 2)"));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "pipeline.toml:12 [card] section \"Best\": the query reads `run`, which is no source, view or table \
             of the pipeline (those: runs, s; did you mean runs?)"
        ),
        "{}",
        stderr(&o)
    );
    // a table function, a CTE and information_schema are no such mistake
    write(
        dir,
        "pipeline.toml",
        &section("WITH x AS (SELECT 1) SELECT * FROM x, generate_series(1, 2), information_schema.tables"),
    );
    let o = build(dir, &["-q"]);
    assert!(!stderr(&o).contains("[card] section"), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.jsonl"), "{}", stderr(&o));
}

#[test]
fn a_nan_in_a_foreign_key_matches_no_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "p.jsonl", "{\"k\": NaN}\n{\"k\": 1.5}\n");
    write(dir, "c.jsonl", "{\"cid\": 1, \"k\": 1.5}\n{\"cid\": 2, \"k\": NaN}\n{\"cid\": 3, \"k\": null}\n");
    write(dir, "p.json", r#"{"fields":[{"name":"k","type":"number"}],"primaryKey":["k"]}"#);
    write(
        dir,
        "c.json",
        r#"{"fields":[{"name":"cid","type":"integer"},{"name":"k","type":"number"}],"primaryKey":["cid"],"foreignKeys":[{"fields":["k"],"reference":{"resource":"parent","fields":["k"]}}]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"nf\"\n[[source]]\nname = \"p\"\npath = \"p.jsonl\"\nformat = \"jsonl\"\n\
         [[source]]\nname = \"c\"\npath = \"c.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"parent\"\nschema = \"p.json\"\nquery = \"SELECT k FROM p\"\n\
         [[table]]\nname = \"child\"\nschema = \"c.json\"\nquery = \"SELECT cid, k FROM c\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_violations(
        &o,
        1,
        &["k: value \"NaN\" has no matching row in table parent(k) (NaN equals no value) (table child, key cid=2"],
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "nf"), "SELECT cid FROM child ORDER BY cid"), "cid\n1\n3\n");
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/validate_datapackage.py"))
        .arg(release(dir, "nf")));
    assert!(o.status.success(), "frictionless validates the release: {}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_named_pipe_is_refused_and_an_empty_input_is_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"k\": 1}\n");
    write(dir, "c.jsonl", "");
    write(dir, "pipeline.toml", &one_source("p", "*.jsonl", "jsonl", "", "SELECT k FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("source raw read 1 empty file (0 bytes, no record): c.jsonl"), "{}", stderr(&o));
    // a FIFO would block the build: refused by name, not read and not skipped
    let made = std::process::Command::new("mkfifo").arg(dir.join("b.jsonl")).status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("b.jsonl: path pattern \"*.jsonl\" matches b.jsonl, which is not a regular file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_wandb_step_below_zero_is_a_bad_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "history/abcd1234.csv", "_step,loss\n-1,0.5\n0,0.4\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"wb\"\n[[source]]\nname = \"w\"\npath = \"history/*.csv\"\nformat = \"wandb\"\nwandb = { table = \"history\" }\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT step, value FROM w\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("history/abcd1234.csv:2:$: `_step` must be an integer step, found -1, below 0"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn moving_window_sums_of_floats_forget_a_nan_or_a_large_value_that_left_the_frame() {
    // a sum beyond the floats is infinite for its frame only
    let sql = "SELECT id, sum(v) OVER (ORDER BY id ROWS 1 PRECEDING) AS s FROM (VALUES (1, 1e308), (2, 1e308), \
               (3, 1.0), (4, 1.0), (5, 2.0)) AS t(id, v) ORDER BY id";
    assert_eq!(query(example_release(), sql), "id,s\n1,1e308\n2,Infinity\n3,1e308\n4,2.0\n5,3.0\n");
    // a frame whose running sum overflowed but whose own sum (or mean) is a float
    let sql = "SELECT id, sum(v) OVER (ORDER BY id ROWS 2 PRECEDING) AS s, avg(v) OVER (ORDER BY id ROWS 1 PRECEDING) AS a \
               FROM (VALUES (1, 1e308), (2, 1e308), (3, -1e308), (4, 1.0), (5, 2.0)) AS t(id, v) ORDER BY id";
    assert_eq!(
        query(example_release(), sql),
        "id,s,a\n1,1e308,1e308\n2,Infinity,1e308\n3,1e308,0.0\n4,1.0,-5e307\n5,-1e308,1.5\n"
    );
    let sql = "SELECT id, sum(v) OVER (ORDER BY id ROWS 1 PRECEDING) AS s, avg(v) OVER (ORDER BY id ROWS 1 PRECEDING) AS a \
               FROM (VALUES (1, CAST('NaN' AS DOUBLE)), (2, 1.0), (3, 1.0), (4, CAST('Infinity' AS DOUBLE)), (5, 2.0), \
               (6, 1e20), (7, 1.0), (8, 1.0), (9, CAST(NULL AS DOUBLE)), (10, CAST(NULL AS DOUBLE))) AS t(id, v) ORDER BY id";
    assert_eq!(
        query(example_release(), sql),
        "id,s,a\n1,NaN,NaN\n2,NaN,NaN\n3,2.0,1.0\n4,Infinity,Infinity\n5,Infinity,Infinity\n6,1e20,5e19\n\
         7,1e20,5e19\n8,2.0,1.0\n9,1.0,1.0\n10,,\n"
    );
}

#[test]
fn split_names_one_file_system_could_not_keep_apart_and_overlong_names_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "a.jsonl",
        "{\"id\": 1, \"split\": \"train\"}\n{\"id\": 2, \"split\": \"Train\"}\n{\"id\": 3, \"split\": \"con\"}\n{\"id\": 4, \"split\": \"test\"}\n",
    );
    let toml = one_source("sp", "a.jsonl", "jsonl", "", "SELECT id, split FROM raw", "split_column = \"split\"\n");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &["-q"]);
    assert_violations(
        &o,
        2,
        &[
            "splits \"train\" and \"Train\" differ only in case",
            "split name \"con\" names its files con.parquet and con.jsonl, which Windows reserves for a device",
        ],
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "sp"), "SELECT id FROM t ORDER BY id"), "id\n1\n4\n");
    // a declared split is checked when the pipeline is read
    write(
        dir,
        "pipeline.toml",
        &toml.replace("split_column = \"split\"\n", "split_column = \"split\"\nsplits = [\"train\", \"aux\"]\n"),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("split name \"aux\" names its files aux.parquet"), "{}", stderr(&o));
    // a table name too long to name its files, before anything is read
    let long = "t".repeat(240);
    write(dir, "pipeline.toml", &toml.replacen("name = \"t\"\n", &format!("name = \"{long}\"\n"), 1));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("table name of 240 bytes (at most 200: files are named after it)"), "{}", stderr(&o));
}

#[test]
fn csv_booleans_take_the_table_schema_defaults_and_a_row_that_is_not_utf8_keeps_its_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.csv"), b"id,b\n1,1\n2,0\n3,TRUE\n4,yes\n5,\xff\n").unwrap();
    write(dir, "s.json", r#"{"fields":[{"name":"id","type":"integer"},{"name":"b","type":"boolean"}]}"#);
    write(
        dir,
        "pipeline.toml",
        &one_source("cb", "a.csv", "csv", "schema = \"s.json\"\n", "SELECT id, b FROM raw", ""),
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "cb"), "SELECT id, b FROM t ORDER BY id"), "id,b\n1,true\n2,false\n3,true\n");
    let rejects = std::fs::read_to_string(release(dir, "cb").join("rejects/raw.jsonl")).unwrap();
    assert!(rejects.contains(r#""record":{"id":"4","b":"yes"}"#), "{rejects}");
    assert!(rejects.contains("\"_source_line\":6") && rejects.contains("\"raw\":\"5,\u{fffd}\""), "{rejects}");
}

#[test]
fn nans_are_never_duplicates_of_each_other_under_unique() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "a.jsonl",
        "{\"id\": 1, \"x\": NaN}\n{\"id\": 2, \"x\": NaN}\n{\"id\": 3, \"x\": 1.5}\n{\"id\": 4, \"x\": 1.5}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"x","type":"number","constraints":{"unique":true}}],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("nu", "a.jsonl", "jsonl", "", "SELECT id, x FROM raw", "schema = \"t.json\"\n"),
    );
    let o = build(dir, &["-q"]);
    assert_violations(&o, 1, &["x: value 1.5 appears in an earlier row"]);
}

#[test]
fn verify_checks_the_counts_of_rejected_rows_against_the_rejects_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "a.jsonl",
        "{\"k\": 1, \"v\": \"a\"}\n{\"k\": 1, \"v\": \"b\"}\n{\"k\": 2, \"v\": \"c\"}\n{\"k\": 3, \"v\": null}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"k","type":"integer"},{"name":"v","type":"string","constraints":{"required":true}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["k"]}"#,
    );
    let sql = "SELECT k, v, _source_file, _source_line FROM raw";
    let table = "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\n";
    write(dir, "pipeline.toml", &one_source("kl", "a.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = release(dir, "kl");
    let o = run(bin().arg("verify").arg(&rel));
    assert!(o.status.success(), "{}", stdout(&o));
    // one superseded and one invalid row share the file: 2 lines, counted as 1 + 1
    let path = rel.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["report"]["rejected_rows"]["t"] = 5.into();
    m["tables"][0]["rejected_rows"] = 0.into();
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    reseal(&rel);
    let o = run(bin().arg("verify").arg(&rel));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("report.rejected_rows gives t 5 rows, its rejects file holds 2"), "{out}");
    assert!(
        out.contains("table t has 0 rejected and 1 superseded rows, but its rejects file is counted as 5"),
        "{out}"
    );
}

#[test]
fn tinker_metrics_logged_as_text_are_counted_in_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "metrics.jsonl",
        "{\"step\": 0, \"loss\": 1.5, \"lr\": \"cosine\"}\n{\"step\": 1, \"loss\": \"1.1O\"}\n",
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("tm", "metrics.jsonl", "tinker-metrics", "", "SELECT step, metric, value FROM raw", ""),
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("metrics.jsonl:1: raw: 2 metric values are no number (text, a boolean, a list or an object): kept in `value_text`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_manifest_of_another_version_is_refused_by_query_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let path = tmp.path().join("manifest.json");
    let text =
        std::fs::read_to_string(&path).unwrap().replacen("\"manifest_version\": 1,", "\"manifest_version\": 99,", 1);
    assert!(text.contains("\"manifest_version\": 99,"));
    std::fs::write(&path, text).unwrap();
    reseal(tmp.path());
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT 1"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "manifest.json:/manifest_version: manifest version 99 is not the one this runpack reads (1)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains(said), "{}", stdout(&o));
}

#[test]
fn a_boolean_declared_by_a_source_field_reads_1_and_0() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.csv", "id,a\n1,1\n2,0\n");
    let field = "[[source.field]]\nname = \"a\"\ntype = \"boolean\"\n";
    write(dir, "pipeline.toml", &one_source("sf", "a.csv", "csv", field, "SELECT id, a FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "sf"), "SELECT id, a FROM t ORDER BY id"), "id,a\n1,true\n2,false\n");
}

#[test]
fn similar_to_is_refused_in_a_card_section_and_a_view() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"s\": \"abc\"}\n");
    let base = one_source("st", "a.jsonl", "jsonl", "", "SELECT s FROM raw", "");
    write(
        dir,
        "pipeline.toml",
        &format!("{base}[[card.section]]\ntitle = \"x\"\nquery = \"SELECT s SIMILAR TO 'b' AS m FROM t\"\n"),
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("SIMILAR TO is read by DataFusion as a regular expression"), "{}", stderr(&o));
    write(
        dir,
        "pipeline.toml",
        &format!("{base}[[view]]\nname = \"v\"\nquery = \"SELECT s FROM raw WHERE s SIMILAR TO 'b'\"\n"),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("view v (inline query"), "{}", stderr(&o));
}

//! Sources that one table reads are streamed into its query instead of being staged; the
//! release, the reports and the rejects are the same as with `--stage-sources`, whether the
//! rows keep the key order the plan counted on or break it halfway.

use std::path::Path;

use crate::util::*;

const KV: &str = r#"{"fields":[{"name":"k","type":"integer"},{"name":"v","type":"string"}]}"#;

/// A pipeline folder: `sources` (name, JSON Lines text) each with the k/v schema declared,
/// `tables` (name, query, primary key, duplicate-key rule).
fn pipeline(dir: &Path, sources: &[(&str, String)], tables: &[(&str, &str, &[&str], &str)]) {
    write(dir, "kv.json", KV);
    let mut toml = String::from("name = \"st\"\nformats = [\"parquet\", \"jsonl\"]\n");
    for (name, text) in sources {
        write(dir, &format!("{name}.jsonl"), text);
        toml += &format!(
            "[[source]]\nname = \"{name}\"\npath = \"{name}.jsonl\"\nformat = \"jsonl\"\nschema = \"kv.json\"\n"
        );
    }
    for (name, query, key, dup) in tables {
        write(dir, &format!("{name}.schema.json"), &kv_schema(key, "integer"));
        toml += &format!(
            "[[table]]\nname = \"{name}\"\nschema = \"{name}.schema.json\"\nquery = \"{query}\"\non_duplicate_key = \"{dup}\"\n"
        );
    }
    write(dir, "pipeline.toml", &toml);
}

/// Builds `dir` streamed and staged (each into its own releases folder); returns both
/// outputs and both stderr logs (at info level).
fn both(dir: &Path, extra: &[&str]) -> [(std::process::Output, String); 2] {
    [&[][..], &["--stage-sources"][..]].map(|mode| {
        let out = dir.join(if mode.is_empty() { "streamed" } else { "staged" });
        let o = run(bin()
            .env("RUST_LOG", "info")
            .env("SOURCE_DATE_EPOCH", "0")
            .arg("build")
            .arg(dir)
            .arg("--releases-dir")
            .arg(&out)
            .args(mode)
            .args(extra));
        let log = stderr(&o);
        (o, log)
    })
}

#[test]
fn streamed_sources_give_the_staged_release() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 30,000 rows: several record batches, so the order is checked across batch edges
    let n = 30_000;
    let asc = rows_in_key_order(n, "a");
    // in key order until its last row, which belongs first: found after rows went through
    let late = rows_with_the_first_last(n, "b");
    let grouped: String = (0..n).map(|i| line(i % 7, &format!("c{i}"))).collect();
    let twice: String = (0..100).map(|i| line(i, &format!("d{i}"))).collect();
    pipeline(
        dir,
        &[("asc", asc), ("late", late), ("grouped", grouped), ("twice", twice)],
        &[
            ("in_order", "SELECT * FROM asc", &["k", "v"], "error"),
            ("late_row", "SELECT * FROM late", &["k"], "keep-last"),
            (
                "sums",
                "SELECT k, max(v) AS v, min(_source_file) AS _source_file, min(_source_line) AS _source_line FROM grouped GROUP BY k",
                &["k"],
                "error",
            ),
            (
                "pairs",
                "SELECT a.k, b.v, a._source_file, a._source_line FROM twice a JOIN twice b ON a.k = b.k",
                &["k"],
                "error",
            ),
        ],
    );
    let [(streamed, log), (staged, staged_log)] = both(dir, &[]);
    assert!(streamed.status.success(), "{log}");
    assert!(staged.status.success(), "{staged_log}");
    for s in ["asc", "late", "grouped"] {
        assert!(log.contains(&format!("source {s}: streamed into table")), "{log}");
        assert!(!staged_log.contains(&format!("source {s}: streamed")), "{staged_log}");
    }
    assert!(log.contains("table in_order: query in key order, not sorted"), "{log}");
    assert!(
        log.contains("table late_row: a streamed source is not in key order; streaming it again to the sort"),
        "{log}"
    );
    assert!(!log.contains("source late: read in"), "{log}");
    assert!(log.contains("table pairs: reads a source more than once; staging it"), "{log}");
    // the same bytes, file by file (manifest, card and checksums included)
    let a = snapshot_files(&dir.join("streamed/st/0.1.0"));
    let b = snapshot_files(&dir.join("staged/st/0.1.0"));
    assert_eq!(a.iter().map(|f| &f.0).collect::<Vec<_>>(), b.iter().map(|f| &f.0).collect::<Vec<_>>());
    for ((path, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{path} differs between the streamed and the staged build");
    }
    // and the rows are right: keep-last kept the second row of each pair, after the late one
    let rel = dir.join("streamed/st/0.1.0");
    let text = std::fs::read_to_string(rel.join("jsonl/late_row.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), (n / 2 + 1) as usize);
    assert_eq!(rows[0]["v"], "last");
    assert_eq!(rows[1]["v"], "b1");
    assert_eq!(rows[2]["v"], "b3");
    // a table whose attempt was abandoned leaves no stray file behind
    assert!(!a.iter().any(|(p, _)| p.ends_with(".part")), "{:?}", a.iter().map(|f| &f.0).collect::<Vec<_>>());
    let o = run(bin().arg("verify").arg(&rel));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn rejects_of_streamed_sources_are_kept_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let n = 20_000;
    let bad = |i: i64| format!("{{\"k\": \"not a number {i}\", \"v\": \"x\"}}\n");
    // a bad row early and one late, in a source read in order and in one that breaks the
    // order at its end (its attempt, and the rejects written by it, are thrown away)
    let ok: String =
        (0..n).map(|i| if i == 5 || i == n - 5 { bad(i) } else { line(i / 2, &format!("a{i}")) }).collect();
    let late: String = (0..n)
        .map(|i| if i == 5 || i == n - 5 { bad(i) } else { line(i / 2, &format!("b{i}")) })
        .chain([line(-1, "last")])
        .collect();
    pipeline(
        dir,
        &[("ok", ok), ("late", late)],
        &[("t_ok", "SELECT * FROM ok", &["k"], "keep-first"), ("t_late", "SELECT * FROM late", &["k"], "keep-first")],
    );
    let [(streamed, log), (staged, staged_log)] = both(dir, &["--on-invalid", "reject"]);
    assert!(streamed.status.success(), "{log}");
    assert!(staged.status.success(), "{staged_log}");
    assert!(
        log.contains("table t_late: a streamed source is not in key order; streaming it again to the sort"),
        "{log}"
    );
    let a = snapshot_files(&dir.join("streamed/st/0.1.0"));
    let b = snapshot_files(&dir.join("staged/st/0.1.0"));
    assert_eq!(a, b);
    let rel = dir.join("streamed/st/0.1.0");
    for (name, lines) in [("ok", 2), ("late", 2), ("t_ok", n / 2 - 2), ("t_late", n / 2 - 2)] {
        let text = std::fs::read_to_string(rel.join(format!("rejects/{name}.jsonl"))).unwrap();
        assert_eq!(text.lines().count() as i64, lines, "rejects/{name}.jsonl");
    }
}

#[test]
fn violations_of_streamed_sources_are_all_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bad = |src: &str| format!("{}{{\"k\": \"oops\", \"v\": \"{src}\"}}\n", line(1, "fine"));
    // two sources, each streamed into its own table: both sources' problems are listed,
    // as when every source is read before the first table
    pipeline(
        dir,
        &[("first", bad("first")), ("second", bad("second"))],
        &[("a", "SELECT * FROM first", &["k"], "error"), ("b", "SELECT * FROM second", &["k"], "error")],
    );
    let [(streamed, log), (staged, staged_log)] = both(dir, &[]);
    assert_eq!(streamed.status.code(), Some(1), "{log}");
    assert_eq!(staged.status.code(), Some(1), "{staged_log}");
    let problems = |log: &str| log.lines().filter(|l| !l.starts_with("info: ")).map(String::from).collect::<Vec<_>>();
    assert_eq!(problems(&log), problems(&staged_log));
    assert!(log.contains("first.jsonl:2") && log.contains("second.jsonl:2"), "{log}");
    assert!(!dir.join("streamed/st/0.1.0").exists());
}

/// Runs `runpack build` on `dir` (extra args), failing the test if it takes over a minute.
fn build_within_a_minute(dir: &Path, extra: &[&str]) -> std::process::Output {
    run_within(bin().arg("build").arg(dir).arg("--releases-dir").arg(dir.join("out")).args(extra), 60)
}

#[test]
fn a_query_that_never_reads_its_source_does_not_hang_the_build() {
    // 40,000 CSV rows: five record batches, more than the feed holds, so the reader would
    // wait for the query if nothing told it the query is gone
    let csv: String = std::iter::once("k,v\n".to_string()).chain((0..40_000).map(|i| format!("{i},x{i}\n"))).collect();
    for (table, expect_ok) in [
        // fails before its query runs
        (
            "[[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT * FROM big\"\nsplit_column = \"nope\"\n",
            false,
        ),
        // stops reading after a few rows
        ("[[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT * FROM big ORDER BY k LIMIT 5\"\n", true),
        ("[[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT * FROM big LIMIT 5\"\n", true),
        // reads nothing at all
        ("[[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT * FROM big WHERE false\"\n", true),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        write(dir, "big.csv", &csv);
        write(dir, "kv.json", KV);
        write(dir, "t.json", &kv_schema(&["k"], "integer"));
        write(
            dir,
            "pipeline.toml",
            &format!(
                "name = \"st\"\n[[source]]\nname = \"big\"\npath = \"big.csv\"\nformat = \"csv\"\nschema = \"kv.json\"\n{table}"
            ),
        );
        let o = build_within_a_minute(dir, &[]);
        assert_eq!(o.status.success(), expect_ok, "{table}: {}", stderr(&o));
        if expect_ok {
            // and the whole source was still read and hashed
            let manifest: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(release(dir, "st").join("manifest.json")).unwrap())
                    .unwrap();
            assert_eq!(manifest["inputs"][0]["bytes"], csv.len(), "{table}");
        } else {
            assert!(stderr(&o).contains("split_column `nope`"), "{}", stderr(&o));
        }
    }
}

/// Builds `dir` streamed and staged; asserts the same exit code, the same stderr (apart from
/// log lines) and the same release files; returns the exit code, stderr and the log.
fn same_both_ways(dir: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let [(streamed, log), (staged, staged_log)] = both(dir, extra);
    let problems = |log: &str| {
        log.lines()
            .filter(|l| !l.starts_with("info: "))
            .map(|l| l.replace("staged", "streamed"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(streamed.status.code(), staged.status.code(), "{log}\n---\n{staged_log}");
    assert_eq!(problems(&log), problems(&staged_log));
    let (a, b) = (dir.join("streamed/st/0.1.0"), dir.join("staged/st/0.1.0"));
    assert_eq!(a.exists(), b.exists());
    if a.exists() {
        assert_eq!(snapshot_files(&a), snapshot_files(&b));
    }
    (streamed.status.code(), problems(&log), log)
}

#[test]
fn problems_come_out_as_if_every_source_were_read_first() {
    let bad = format!("{}{{\"k\": \"oops\", \"v\": \"x\"}}\n", line(1, "x"));
    // a streamed source's violations are listed even when a staged source (read by two
    // tables) already broke the rules
    let tmp = tempfile::tempdir().unwrap();
    pipeline(
        tmp.path(),
        &[("a", bad.clone()), ("b", bad.clone())],
        &[
            ("ta", "SELECT * FROM a", &["k"], "error"),
            ("tb", "SELECT * FROM b", &["k"], "error"),
            ("tb2", "SELECT * FROM b", &["k"], "error"),
        ],
    );
    let (code, err, _) = same_both_ways(tmp.path(), &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("a.jsonl:2") && err.contains("b.jsonl:2"), "{err}");
    // a table that fails at run time before the streamed source's table is built: the
    // source's violations, not the table's error
    let tmp = tempfile::tempdir().unwrap();
    pipeline(
        tmp.path(),
        &[("a", bad.clone()), ("b", line(1, "notanumber"))],
        &[
            ("t1", "SELECT CAST(v AS BIGINT) AS k, v, _source_file, _source_line FROM b", &["k"], "error"),
            ("t1b", "SELECT * FROM b", &["k"], "error"),
            ("t2", "SELECT * FROM a", &["k"], "error"),
        ],
    );
    let (code, err, _) = same_both_ways(tmp.path(), &[]);
    assert_eq!(code, Some(1));
    assert!(err.contains("a.jsonl:2"), "{err}");
    // warnings of sources read in another order than the tables: same card
    let tmp = tempfile::tempdir().unwrap();
    let long = |v: &str| line(1, &v.repeat(200));
    pipeline(
        tmp.path(),
        &[("a", long("a")), ("b", long("b"))],
        &[("tb", "SELECT * FROM b", &["k"], "error"), ("ta", "SELECT * FROM a", &["k"], "error")],
    );
    let (code, _, log) = same_both_ways(tmp.path(), &["--large-cell-bytes", "100"]);
    assert_eq!(code, Some(0));
    assert!(log.contains("source b: streamed into table tb"), "{log}");
}

#[test]
fn sources_read_by_a_card_section_or_a_recursive_query_are_staged() {
    let rows: String = (0..20).map(|i| line(i, "x")).collect();
    let tmp = tempfile::tempdir().unwrap();
    pipeline(tmp.path(), &[("a", rows.clone())], &[("ta", "SELECT * FROM a", &["k"], "error")]);
    let toml = std::fs::read_to_string(tmp.path().join("pipeline.toml")).unwrap();
    write(
        tmp.path(),
        "pipeline.toml",
        &format!("{toml}[[card.section]]\ntitle = \"n\"\nquery = \"SELECT count(*) AS n FROM a\"\n"),
    );
    let (code, err, log) = same_both_ways(tmp.path(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!log.contains("streamed into"), "{log}");
    let tmp = tempfile::tempdir().unwrap();
    pipeline(
        tmp.path(),
        &[("a", rows)],
        &[(
            "t",
            "WITH RECURSIVE r(n) AS (SELECT CAST(0 AS BIGINT) UNION ALL SELECT r.n + 1 FROM r JOIN a ON a.k = r.n WHERE r.n < 10) \
             SELECT n AS k, 'x' AS v, 'f' AS _source_file, n AS _source_line FROM r",
            &["k"],
            "error",
        )],
    );
    let (code, err, log) = same_both_ways(tmp.path(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(log.contains("table t: reads a source more than once; staging it"), "{log}");
    let text = std::fs::read_to_string(tmp.path().join("streamed/st/0.1.0/jsonl/t.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 11);
}

#[test]
fn a_build_that_fails_after_a_table_leaves_nothing_while_that_table_s_files_are_finished() {
    // a table with copies in several files, then a table whose source breaks its schema: the
    // first table's writers still finish its files while the second is read, and the failed
    // build must leave no folder of its own behind
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    let mut big = String::new();
    for i in 0..60_000 {
        big.push_str(&format!(
            "{{\"run\": \"r{:03}\", \"step\": {i}, \"text\": \"{}\"}}\n",
            i % 7,
            "x".repeat(40 + i % 50)
        ));
    }
    write(&dir, "events.jsonl", &big);
    let mut bad = String::new();
    for i in 0..2_000 {
        bad.push_str(&format!(
            "{{\"step\": {i}, \"v\": {}}}\n",
            if i == 1_000 { "\"oops\"".to_string() } else { i.to_string() }
        ));
    }
    write(&dir, "other.jsonl", &bad);
    write(
        &dir,
        "ev.json",
        r#"{"fields":[{"name":"run","type":"string"},{"name":"step","type":"integer"},{"name":"text","type":"string"}]}"#,
    );
    write(&dir, "ot.json", r#"{"fields":[{"name":"step","type":"integer"},{"name":"v","type":"number"}]}"#);
    write(
        &dir,
        "pipeline.toml",
        "name = \"left\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"ev\"\npath = \"events.jsonl\"\n\
         format = \"jsonl\"\nschema = \"ev.json\"\n[[source]]\nname = \"ot\"\npath = \"other.jsonl\"\nformat = \"jsonl\"\n\
         schema = \"ot.json\"\n[[table]]\nname = \"events\"\nquery = \"SELECT * FROM ev\"\n[[table]]\nname = \"other\"\n\
         query = \"SELECT * FROM ot\"\n",
    );
    // (before the writers were waited for, 2 builds in 5 left files behind)
    for _ in 0..6 {
        let out = t.path().join("out");
        let o = run(bin()
            .arg("build")
            .arg("-q")
            .arg(&dir)
            .arg("--releases-dir")
            .arg(&out)
            .args(["--max-shard-bytes", "400000"]));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("other.jsonl:1001"), "{}", stderr(&o));
        let left: Vec<_> = walkdir::WalkDir::new(&out).into_iter().flatten().map(|e| e.path().to_path_buf()).collect();
        assert!(left.iter().all(|p| p.is_dir()), "{left:?}");
        assert!(!left.iter().any(|p| p.to_string_lossy().contains(".building")), "{left:?}");
    }
}

#[test]
fn a_table_whose_files_fail_stops_the_table_after_it() {
    // t's one long row makes a JSON Lines file above --max-shard-bytes; the error comes while its files
    // are finished and `slow` runs: `slow` stops, and the build fails with t's error at once
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    let long = "x".repeat(50_000);
    write(&dir, "big.jsonl", &format!("{{\"step\": 1, \"t\": \"a\"}}\n{{\"step\": 2, \"t\": \"{long}\"}}\n"));
    write(
        &dir,
        "pipeline.toml",
        "name = \"stops\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"big.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\n\
         query = \"SELECT * FROM raw\"\n[[table]]\nname = \"slow\"\n\
         query = \"SELECT r.value % 1000 AS k, count(*) AS n FROM range(100000000000) r GROUP BY r.value % 1000\"\n",
    );
    let started = std::time::Instant::now();
    let o = build_within_a_minute(&dir, &["-q", "--max-shard-bytes", "20000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t: a single row makes a JSON Lines file of "), "{}", stderr(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(!dir.join("out/stops").exists() || std::fs::read_dir(dir.join("out/stops")).unwrap().next().is_none());
}

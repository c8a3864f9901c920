//! `runpack query`: SQL over a release or raw files, its errors and its output formats.

use crate::util::*;

#[test]
fn query_refuses_a_release_with_a_missing_data_file() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::remove_file(tmp.path().join("data/metrics.parquet")).unwrap();
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM metrics"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("data file data/metrics.parquet of table metrics is missing"), "{}", stderr(&o));
    // a folder in its place, a link to a file outside the release, a data folder linked
    // outside it: each named for what it is, and nothing read
    let q = |dir: &std::path::Path| run(bin().args(["query", "-q"]).arg(dir).arg("SELECT count(*) FROM metrics"));
    std::fs::create_dir(tmp.path().join("data/metrics.parquet")).unwrap();
    let o = q(tmp.path());
    assert!(
        stderr(&o).contains("data/metrics.parquet of table metrics is a folder, not a Parquet file"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir(tmp.path().join("data/metrics.parquet")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let copy = outside.path().join("metrics.parquet");
    std::fs::copy(example_release().join("data/metrics.parquet"), &copy).unwrap();
    std::os::unix::fs::symlink(&copy, tmp.path().join("data/metrics.parquet")).unwrap();
    let o = q(tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(&format!(
            "data/metrics.parquet of table metrics is a symbolic link (to {}), which a release does not hold",
            copy.display()
        )),
        "{}",
        stderr(&o)
    );
    let linked = tempfile::tempdir().unwrap();
    copy_tree(example_release(), linked.path());
    let data = outside.path().join("data");
    std::fs::rename(linked.path().join("data"), &data).unwrap();
    std::os::unix::fs::symlink(&data, linked.path().join("data")).unwrap();
    let o = q(linked.path());
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("is reached through a symbolic link to a folder outside the release"),
        "{}",
        stderr(&o)
    );
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
    // (after a byte-order mark, as some editors save a file)
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        b"\xEF\xBB\xBF-- how many\nSELECT count(*) AS n FROM metrics\n",
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(stdout(&o), "n\n13220\n");
    // SIMILAR TO would match anywhere in the text: refused, in a subquery too
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg(
        "SELECT count(*) FROM metrics WHERE metric IN (SELECT metric FROM metrics WHERE metric SIMILAR TO 'loss')",
    ));
    assert_eq!(o.status.code(), Some(2));
    // said on the error's first line, not behind the name of the check that refused it
    assert!(
        stderr(&o).starts_with(
            "error: query: Error during planning: SIMILAR TO is read by DataFusion as a regular expression"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("caused by"), "{}", stderr(&o));
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
    assert!(
        err.contains(
            "hint: the rows holding such a value are those of `x IS NOT NULL AND TRY_CAST(x AS type) IS NULL`"
        ),
        "{err}"
    );
    assert!(err.contains("`TRY_CAST(x AS type)` in place of the cast reads them as NULL, without a word"), "{err}");
    assert!(err.contains("declaring the column's type in the source's schema"), "{err}");
    // a constant of the SQL is named as such, not looked for in rows
    for sql in ["SELECT CAST('x' AS INT)", "SELECT step FROM metrics WHERE step = 'abc'"] {
        let o = run(bin().args(["query", "-q"]).arg(example_release()).arg(sql));
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert!(err.starts_with("error: query: Arrow error: Cast error: Cannot cast string"), "{sql}: {err}");
        assert!(err.contains("hint: the value is written in the SQL") && !err.contains("TRY_CAST"), "{sql}: {err}");
    }
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT no_such_column FROM metrics"));
    assert!(!stderr(&o).contains("TRY_CAST"), "{}", stderr(&o));
}

/// An operator that finds the memory pool full says how to raise it, and the raised pool holds
/// the rows.
#[test]
fn a_query_out_of_memory_says_how_to_raise_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "one.jsonl", "{\"a\": 1}\n");
    let top = "SELECT v FROM generate_series(1, 2000000) AS s(v) ORDER BY v DESC LIMIT 1 OFFSET 1500000";
    let query = |limit: &str| {
        let sql = format!("SET datafusion.runtime.memory_limit = '{limit}'; {top}");
        run(bin().args(["query", "-q", "--format", "csv"]).arg(tmp.path().join("one.jsonl")).arg(sql))
    };
    let o = query("1M");
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("Resources exhausted: Additional allocation failed for TopK[0]"), "{err}");
    assert!(err.contains("hint: the SQL needed more memory than its pool (256 MiB unless set)"), "{err}");
    assert!(err.contains("`SET datafusion.runtime.memory_limit = '4G';` before the query raises it"), "{err}");
    let o = query("256M");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "v\n500000\n");
}

/// `sum` of integers past Int64 fails with the exact sum, and the cast it names gives it.
#[test]
fn an_integer_sum_that_overflows_fails_with_the_exact_sum() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "s.jsonl",
        "{\"k\": \"a\", \"i\": 9223372036854775807}\n{\"k\": \"a\", \"i\": 1}\n{\"k\": \"b\", \"i\": 1}\n",
    );
    let query =
        |sql: &str| run(bin().args(["query", "-q", "--format", "csv"]).arg(tmp.path().join("s.jsonl")).arg(sql));
    let o = query("SELECT k, sum(i) FROM t GROUP BY k ORDER BY k");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("sum overflows Int64: a sum came to 9223372036854775808"), "{}", stderr(&o));
    let o = query("SELECT k, sum(CAST(i AS DECIMAL(38, 0))) AS s FROM t GROUP BY k ORDER BY k");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "k,s\na,9223372036854775808\nb,1\n", "{}", stderr(&o));
}

/// Integer `+`, `-`, `*` past the type fail, in a query and in a pipeline's table; a cast
/// gives the value.
#[test]
fn integer_arithmetic_that_overflows_fails_in_queries_and_builds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "s.jsonl", "{\"k\": \"a\", \"i\": 9223372036854775807}\n{\"k\": \"b\", \"i\": 1}\n");
    let query = |sql: &str| run(bin().args(["query", "-q", "--format", "csv"]).arg(dir.join("s.jsonl")).arg(sql));
    let o = query("SELECT k, i + 1 FROM t ORDER BY k");
    assert_eq!(o.status.code(), Some(2));
    let said =
        "integer overflow: 9223372036854775807 + 1 does not fit Int64; CAST an operand to DECIMAL(38, 0) or DOUBLE";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let o = query("SELECT k, CAST(i AS DECIMAL(38, 0)) + 1 AS j, i * 1 AS same FROM t ORDER BY k");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "k,j,same\na,9223372036854775808,9223372036854775807\nb,2,1\n",
        "{}",
        stderr(&o)
    );
    write(dir, "pipeline.toml", &one_source("ov", "s.jsonl", "jsonl", "", "SELECT k, i * 2 AS twice FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("9223372036854775807 * 2 does not fit Int64"), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t"), "{}", stderr(&o));
    assert!(!release(dir, "ov").exists());
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
    // a syntax error too: statements end at each `;` outside strings and comments
    for (sql, want) in [
        (
            "SELECT 1; SELEC 2; SELECT 3",
            "error: query, statement 2 of 3 (SQL line 1, column 11): SQL syntax error: Expected: an SQL statement, found: SELEC",
        ),
        (
            "SELECT 'a;b' /* ; */;; SELECT (2",
            "error: query, statement 2 of 2 (SQL line 1, column 32, its end): SQL syntax error: Expected: ), found: the end",
        ),
        ("SELEC 1", "error: query (SQL line 1, column 1): SQL syntax error"),
        // a string or comment never closed takes the rest: the statement it opens in
        (
            "SELECT 1; SELECT 'abc; SELECT 3",
            "error: query, statement 2 of 2 (SQL line 1, column 18): SQL syntax error: Unterminated string literal",
        ),
        ("SELECT 1; /* never closed", "error: query, statement 2 of 2 (SQL line 1, column 26): SQL syntax error: "),
        // DataFusion's own parser names no place: the statement still
        (
            "CREATE EXTERNAL TABLE x (a int) STORED AS CSV; SELECT 1; SELECT 2",
            "error: query, statement 1 of 3: SQL syntax error: Missing LOCATION clause",
        ),
        ("EXPLAIN FORMAT foo SELECT 1; SELECT 2", "error: query, statement 1 of 2: "),
    ] {
        let o = run(bin().args(["query", "-q"]).arg(example_release()).arg(sql));
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).starts_with(want), "{sql}: {}", stderr(&o));
    }
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
fn the_table_format_holds_the_rows_it_shows_and_says_how_many_the_result_has() {
    let sql = "SELECT v FROM generate_series(1, 3000000) AS s(v)";
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg(sql));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| ") && !l.contains(" v ")).collect();
    assert_eq!(rows.len(), 40);
    assert_eq!((rows[0], rows[39]), ("| 1  |", "| 40 |"));
    assert!(
        stderr(&o).contains(
            "note: 3,000,000 rows; the first 40 shown (--max-rows 0 shows every row; --format csv or ndjson prints them \
             as they come)"
        ),
        "{}",
        stderr(&o)
    );
    let o =
        run(bin().args(["query", "--max-rows", "2"]).arg(example_release()).arg("SELECT 1 AS a UNION ALL SELECT 2"));
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
    let o = run(bin()
        .args(["query", "--max-rows", "0"])
        .arg(example_release())
        .arg("SELECT v FROM generate_series(1, 100) AS s(v)"));
    assert_eq!(stdout(&o).lines().filter(|l| l.starts_with("| ")).count(), 101, "{}", stdout(&o));
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
}

#[test]
fn an_empty_folder_is_said_to_be_neither_a_release_nor_raw_files() {
    let t = tempfile::tempdir().unwrap();
    let o = run(bin().arg("query").arg(t.path()));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "neither a release folder (it has no manifest.json) nor a folder of raw files (no Parquet or JSON Lines \
             file in it)"
        ),
        "{}",
        stderr(&o)
    );
    write(t.path(), "a/b.jsonl", "{\"x\": 1}\n");
    let o = run(bin().arg("query").arg(t.path()));
    assert!(stderr(&o).contains("this is raw files: give SQL"), "{}", stderr(&o));
}

#[test]
fn csv_tells_an_empty_text_from_a_null() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "e.jsonl",
        "{\"id\": 1, \"s\": \"\"}\n{\"id\": 2, \"s\": null}\n{\"id\": 3, \"s\": \"a,\\\"b\\\"\"}\n",
    );
    let o = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(t.path().join("e.jsonl"))
        .arg("SELECT id, s FROM t ORDER BY id"));
    assert_eq!(stdout(&o), "id,s\n1,\"\"\n2,\n3,\"a,\"\"b\"\"\"\n", "{}", stderr(&o));
    // as polars reads it back
    std::fs::write(t.path().join("e.csv"), stdout(&o)).unwrap();
    let script = "import sys, polars as pl\n\
                  d = pl.read_csv(sys.argv[1])\n\
                  print([(r['id'], r['s']) for r in d.iter_rows(named=True)])\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(t.path().join("e.csv")));
    assert_eq!(stdout(&o).trim(), "[(1, ''), (2, None), (3, 'a,\"b\"')]", "{}", stderr(&o));
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
    // a raw Parquet file is named by its path, a violation of its data
    let file = tmp.path().join("data/checkpoints.parquet");
    let o = run(bin().args(["query", "-q"]).arg(&file).arg("SELECT count(*) FROM t"));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("checkpoints.parquet"), "{}", stderr(&o));
}

#[test]
fn verbose_errors_show_the_causes_behind_them() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    // a page in the middle overwritten: the footer reads, the data does not decode
    let path = tmp.path().join("data/checkpoints.parquet");
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid..mid + 200].fill(0xff);
    std::fs::write(&path, bytes).unwrap();
    let sql = "SELECT * FROM checkpoints";
    let o = run(bin().arg("query").arg(tmp.path()).arg(sql));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let said = stderr(&o);
    assert!(said.contains("data/checkpoints.parquet (table checkpoints) is not a readable Parquet file"), "{said}");
    assert!(!said.contains("caused by"), "{said}");
    let o = run(bin().args(["query", "-v"]).arg(tmp.path()).arg(sql));
    let err = stderr(&o);
    // the same message, then the error it explains, as DataFusion said it
    assert!(err.contains("error: query: data/checkpoints.parquet (table checkpoints) is not a readable"), "{err}");
    let cause = err.lines().find(|l| l.starts_with("  caused by: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(cause.starts_with("  caused by: query: Arrow error: "), "{err}");
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
fn a_function_given_the_wrong_type_is_a_sql_mistake_not_a_bug_report() {
    let o = run(bin().args(["query", "-q"]).arg(example_release()).arg("SELECT sum(model) FROM training_runs"));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("No function matches the given name and argument types 'sum(Utf8View)'"), "{err}");
    assert!(!err.contains("bug") && !err.contains("Internal error"), "{err}");
    assert!(err.contains("hint: Utf8 and Utf8View are text"), "{err}");
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
    // ... and each string read as a number is said, with its place (not with -q)
    let o = run(bin().args(["query", "--format", "csv"]).arg(dir.join("n1.jsonl")).arg("SELECT v FROM t"));
    assert!(
        stderr(&o).contains(
            "warning: table t: 1 string read as number:\n  n1.jsonl:2:$.v string \"Infinity\" read as the number Infinity"
        ),
        "{}",
        stderr(&o)
    );
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

/// A Parquet file whose pages are corrupt (one bit of the bundled example's `checkpoints`
/// flipped) makes the Parquet reader panic: query and build say which file, row and column
/// (a violation of its data: exit 1), and nothing prints a panic. A truncated file too.
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
    assert_eq!(o.status.code(), Some(1), "{err}");
    // named as a build names it: the row its failing batch starts at, and the column
    assert!(err.contains("raw/c.parquet:1: not readable as Parquet: the Parquet reader stopped on"), "{err}");
    assert!(err.contains("(column `"), "{err}");
    assert!(err.contains("a batch of rows from row 1 on) (rule parquet)\n1 violation found"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    write(dir, "pipeline.toml", &one_source("cp", "raw/c.parquet", "parquet", "", "SELECT name, step FROM raw", ""));
    let build = |args: &[&str]| {
        let mut c = bin();
        c.arg("build").arg(dir).arg("-q").args(args);
        quiet(c)
    };
    let o = build(&[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("raw/c.parquet:1: not readable as Parquet: the Parquet reader stopped on"), "{err}");
    assert!(err.contains("(column `"), "{err}");
    assert!(err.contains("a batch of rows from row 1 on) (source raw, rule parquet)"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!dir.join("releases/cp").exists());
    // rejecting cannot keep its rows apart: the build still fails
    assert_eq!(build(&["--on-invalid", "reject"]).status.code(), Some(1));

    // a file cut short: its footer is gone
    let whole = std::fs::read(repo().join("tests/fixtures/corrupt/bitflip.parquet")).unwrap();
    std::fs::write(dir.join("raw/c.parquet"), &whole[..whole.len() / 2]).unwrap();
    let o = build(&[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("raw/c.parquet: not readable as Parquet: "), "{err}");
    assert!(err.contains("(source raw, rule parquet)\n1 violation found before reading stopped at a source"), "{err}");
    let mut c = bin();
    c.current_dir(dir).args(["query", "-q", "raw/c.parquet", "SELECT count(*) FROM t"]);
    let o = quiet(c);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("c.parquet: not readable as Parquet: "), "{}", stderr(&o));
}

/// A manifest whose table names a data file outside the release, or one its file list does
/// not hold, is refused by query, saying which.
#[test]
fn query_refuses_a_table_naming_a_file_outside_the_release_or_not_listed() {
    let t = tempfile::tempdir().unwrap();
    for (name, file, said) in [
        (
            "outside",
            "../other.parquet",
            "names data file ../other.parquet, whose path leaves the release folder; refused",
        ),
        (
            "unlisted",
            "data/other.parquet",
            "names data file data/other.parquet, which is not a Parquet file of the release's manifest",
        ),
    ] {
        let dir = t.path().join(name);
        copy_tree(example_release(), &dir);
        let path = dir.join("manifest.json");
        let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let table = m["tables"].as_array_mut().unwrap().iter_mut().find(|t| t["name"] == "checkpoints").unwrap();
        table["files"] = serde_json::json!([file]);
        std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
        let o = run(bin().args(["query", "-q"]).arg(&dir).arg("SELECT count(*) FROM checkpoints"));
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("table checkpoints {said}")), "{name}: {}", stderr(&o));
    }
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
    // and one named as JSON Lines whose line 1 only opens it (lm-eval 0.4.0's samples)
    write(tmp.path(), "arr.jsonl", "[\n  {\"a\": 1},\n  {\"a\": 2}\n]\n");
    let o = run(bin().arg("query").arg(tmp.path().join("arr.jsonl")).arg("SELECT 1"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("arr.jsonl: line 1 is not a whole JSON value"), "{}", stderr(&o));
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
fn a_parquet_file_whose_pages_do_not_decode_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(example_release().join("data/metrics.parquet")).unwrap();
    // inside the compressed pages of the first columns; the footer still reads
    bytes[3000..5000].fill(0xAB);
    let f = tmp.path().join("m.parquet");
    std::fs::write(&f, bytes).unwrap();
    // a raw file that does not read is a violation of its data
    let o = run(bin().args(["query", "-q"]).arg(&f).arg("SELECT sum(step) FROM t"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{}:1: not readable as Parquet: ", f.display())), "{}", stderr(&o));
    assert!(stderr(&o).contains("(column `step`, a batch of rows from row 1 on)"), "{}", stderr(&o));
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
fn a_join_builds_its_hash_table_on_the_smaller_table_and_counts_stay_exact() {
    // both tables hold floats, so their scans read no statistics of values; their numbers of
    // rows still reach the planner, which builds the join's hash table on the smaller side
    let tmp = tempfile::tempdir().unwrap();
    let big: String = (0..3000).map(|i| format!("{{\"id\": {}, \"x\": {}.5}}\n", i % 10, i)).collect();
    write(tmp.path(), "big.jsonl", &big);
    write(tmp.path(), "small.jsonl", "{\"id\": 1, \"w\": NaN}\n{\"id\": 2, \"w\": 0.5}\n");
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"j\"\n[[source]]\nname = \"b\"\npath = \"big.jsonl\"\nformat = \"jsonl\"\n\
         [[source]]\nname = \"s\"\npath = \"small.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"big\"\nquery = \"SELECT id, x FROM b\"\n\
         [[table]]\nname = \"small\"\nquery = \"SELECT id, w FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = release(tmp.path(), "j");
    let plan = query(&rel, "EXPLAIN SELECT big.id, max(w) FROM big JOIN small ON big.id = small.id GROUP BY 1");
    let join = plan.lines().position(|l| l.contains("HashJoinExec")).expect(&plan);
    let build_side = plan.lines().skip(join + 1).find(|l| l.contains("DataSourceExec")).expect(&plan);
    assert!(build_side.contains("small.parquet"), "{plan}");
    // the count is not taken for exact: aggregates are computed from the rows
    assert_eq!(query(&rel, "SELECT count(*) AS n, max(w) AS m FROM small"), "n,m\n2,NaN\n");
    assert_eq!(
        query(
            &rel,
            "SELECT big.id, count(*) AS n, max(w) AS m FROM big JOIN small ON big.id = small.id GROUP BY 1 ORDER BY 1"
        ),
        "id,n,m\n1,300,NaN\n2,300,0.5\n"
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
fn a_raw_parquet_decimal_keeps_its_type() {
    let tmp = tempfile::tempdir().unwrap();
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  from decimal import Decimal as D\n\
                  pq.write_table(pa.table({'a': pa.array([D(1), D(10**30)], pa.decimal128(38, 0))}), sys.argv[1])\n";
    let file = tmp.path().join("dec.parquet");
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(&file));
    assert!(o.status.success(), "{}", stderr(&o));
    // a division is a decimal's, and 31 digits read as they are (Int64 held neither)
    assert_eq!(
        query(&file, "SELECT CAST(a / 2 AS VARCHAR) AS h FROM t ORDER BY a"),
        "h\n0.5000\n500000000000000000000000000000.0000\n"
    );
}

/// Files that type a column differently (lm-eval's samples: a task's `target` a number,
/// another's a text or a list) are read whole, the column as JSON text, and said.
#[test]
fn a_column_of_several_types_across_raw_files_is_kept_as_json_text() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"doc_id\": 0, \"target\": \"4\"}\n");
    write(tmp.path(), "b.jsonl", "{\"doc_id\": 0, \"target\": 3}\n{\"doc_id\": 1, \"target\": [1, 2]}\n");
    // lm-eval's `resps`: a list of a log-likelihood and a boolean
    let o = run(bin().arg("query").arg(tmp.path().join("b.jsonl")).arg("SELECT 1"));
    assert!(o.status.success(), "{}", stderr(&o));
    write(tmp.path(), "r.jsonl", "{\"doc_id\": 2, \"resps\": [[\"-1.5\", false]]}\n");
    let o = run(bin().arg("query").arg(tmp.path().join("r.jsonl")).args(["SELECT resps FROM t", "--format", "csv"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "resps\n\"[[\"\"-1.5\"\",false]]\"\n");
    std::fs::remove_file(tmp.path().join("r.jsonl")).unwrap();
    let o = run(bin().arg("query").arg(tmp.path()).args([
        "SELECT doc_id, target FROM t ORDER BY _source_file, _source_line",
        "--format",
        "csv",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "doc_id,target\n0,\"\"\"4\"\"\"\n0,3\n1,\"[1,2]\"\n");
    assert!(stderr(&o).contains("column `target` holds values no one column type holds"), "{}", stderr(&o));
    // a bad line is still a violation, the columns of several types kept as they are
    write(tmp.path(), "c.jsonl", "{\"doc_id\": 2, \"target\": 1}\n{\"doc_id\": 3, \"target\n");
    let o = run(bin().arg("query").arg(tmp.path()).arg("SELECT count(*) FROM t"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("c.jsonl:2"), "{}", stderr(&o));
}

#[test]
fn a_raw_file_of_no_bytes_is_said_to_hold_no_record() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"step\": 1}\n");
    // an export that failed: a `.gz` that was never written to, and an empty `.jsonl`
    write(tmp.path(), "b.jsonl.gz", "");
    write(tmp.path(), "c.jsonl", "");
    let o = run(bin().arg("query").arg(tmp.path()).args(["SELECT count(*) AS n FROM t", "--format", "csv"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n1\n");
    assert!(
        stderr(&o).contains("warning: table t: 2 empty files (0 bytes, no record): b.jsonl.gz, c.jsonl"),
        "{}",
        stderr(&o)
    );
}

/// `Loss` written without quotes reads column `loss` (SQL folds it to lower case): where the
/// input has both, the build and a query refuse it rather than read the other column.
#[test]
fn a_name_without_quotes_that_two_columns_answer_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "in.csv", "step,Loss,loss\n1,0.5,0.6\n");
    write(dir, "pipeline.toml", &one_source("casep", "in.csv", "csv", "", "SELECT step, Loss AS big FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "Loss, written without quotes, reads column loss (SQL reads a name without quotes in lower case), and \
                the table also has a column \"Loss\": write \"Loss\" to read that one, or loss to read the other";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    write(dir, "pipeline.toml", &one_source("casep", "in.csv", "csv", "", "SELECT step, \"Loss\", loss FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let release = release(dir, "casep");
    assert_eq!(query(&release, "SELECT \"Loss\", loss FROM t"), "Loss,loss\n0.5,0.6\n");
    // a query over the release is told the same, however the name is written without quotes
    for sql in
        ["SELECT t.Loss FROM t", "SELECT * EXCLUDE (Loss) FROM t", "SELECT a.step FROM t AS a JOIN t AS b USING (Loss)"]
    {
        let o = run(bin().arg("query").arg(&release).arg(sql));
        assert_eq!(o.status.code(), Some(2), "{sql}: {}", stderr(&o));
        assert!(stderr(&o).contains(said), "{sql}: {}", stderr(&o));
    }
    let o = run(bin().arg("query").arg(&release).arg("SELECT LOSS FROM t"));
    assert!(stderr(&o).contains("LOSS, written without quotes, reads column loss"), "{}", stderr(&o));
    // capitals elsewhere (keywords, functions, aliases) are no such name
    assert_eq!(query(&release, "SELECT COUNT(*) AS N, MAX(\"Loss\") AS Top FROM t WHERE loss > 0"), "n,top\n1,0.5\n");
}

/// A side that a filter holds to one value, filled with nulls by an outer join, is still
/// sorted by (DataFusion 55 left it out of the sort as a constant), in a query and in a
/// table's `ORDER BY … LIMIT`.
#[test]
fn an_outer_joins_null_filled_side_is_sorted_by_though_a_filter_held_it_to_one_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "k.jsonl", "{\"k\": 1}\n{\"k\": 2}\n{\"k\": 3}\n");
    let joined = "SELECT l.k AS lk, r.k AS rk FROM (SELECT k FROM t WHERE k = 1) l FULL JOIN \
                  (SELECT k FROM t WHERE k > 1) r ON l.k = r.k ORDER BY lk, rk";
    assert_eq!(query(&dir.join("k.jsonl"), joined), "lk,rk\n1,\n,2\n,3\n");
    let left = "SELECT l.k AS lk, r.k AS rk FROM (SELECT k FROM t WHERE k > 1) l LEFT JOIN \
                (SELECT k FROM t WHERE k = 3) r ON l.k = r.k ORDER BY rk DESC NULLS LAST, lk";
    assert_eq!(query(&dir.join("k.jsonl"), left), "lk,rk\n3,3\n2,\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"oj\"\n[[source]]\nname = \"t\"\npath = \"k.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"first\"\n\
         query = \"SELECT l.k AS lk, r.k AS rk FROM (SELECT k FROM t WHERE k = 1) l FULL JOIN (SELECT k FROM t \
         WHERE k > 1) r ON l.k = r.k ORDER BY lk, rk LIMIT 1\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "oj"), "SELECT lk, rk FROM first"), "lk,rk\n1,\n");
}

/// Float running sums and means (a frame from `UNBOUNDED PRECEDING`, the default frame of
/// `OVER (ORDER BY …)`) hold every row so far, and a query's float sums give the same digits
/// on every run.
#[test]
fn float_running_sums_hold_every_row_so_far_and_sums_repeat_their_digits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "k.jsonl", "{\"k\": 1}\n");
    let sql = "SELECT x, sum(x) OVER (ORDER BY x) AS s, avg(x) OVER (ORDER BY x) AS a, sum(x) OVER (ORDER BY x ROWS \
               BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING) AS f FROM (VALUES (1.0), (2.0), (3.0), (4.0)) v(x)";
    assert_eq!(
        query(&dir.join("k.jsonl"), sql),
        "x,s,a,f\n1.0,1.0,1.0,3.0\n2.0,3.0,1.5,6.0\n3.0,6.0,2.0,10.0\n4.0,10.0,2.5,10.0\n"
    );
    // four files of values whose partial sums round differently in each order
    let mut files = String::new();
    for f in 0..4 {
        let lines: String = (0..20_000)
            .map(|i| {
                format!(
                    "{{\"x\": {}}}\n",
                    ((i * 7919 + f * 104_729) % 100_003) as f64 * 1.000_001e-3 * 10f64.powi(i % 9)
                )
            })
            .collect();
        write(dir, &format!("d{f}.jsonl"), &lines);
        files.push_str(&format!("d{f}.jsonl "));
    }
    let sums: std::collections::BTreeSet<String> =
        (0..4).map(|_| query(&dir.join("d*.jsonl"), "SELECT sum(x) AS s, avg(x) AS a FROM t")).collect();
    assert_eq!(sums.len(), 1, "{sums:?} over {files}");
}

/// `to_timestamp` of text gives the type it promises (UTC), alone, in a struct and in a list.
#[test]
fn to_timestamp_of_text_is_utc_alone_in_a_struct_and_in_a_list() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "t.jsonl", "{\"t\": \"2024-01-01T00:00:00Z\"}\n{\"t\": \"2024-03-10 12:00:00\"}\n");
    let sql = "SELECT arrow_typeof(to_timestamp(t)) AS ty, to_timestamp_millis(t) AS ms, named_struct('x', \
               to_timestamp(t)) AS s, [to_timestamp_seconds(t)] AS l FROM t ORDER BY ms";
    let o = run(bin().args(["query", "-q", "--format", "ndjson"]).arg(dir.join("t.jsonl")).arg(sql));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"ty\":\"Timestamp(ns, \\\"+00:00\\\")\",\"ms\":\"2024-01-01T00:00:00Z\",\"s\":{\"x\":\"2024-01-01T00:00:00Z\"},\
         \"l\":[\"2024-01-01T00:00:00Z\"]}\n{\"ty\":\"Timestamp(ns, \\\"+00:00\\\")\",\"ms\":\"2024-03-10T12:00:00Z\",\
         \"s\":{\"x\":\"2024-03-10T12:00:00Z\"},\"l\":[\"2024-03-10T12:00:00Z\"]}\n"
    );
}

/// What DataFusion 55 would answer wrongly without a word is refused, naming what to write:
/// a float cut to an integer by a bit operation (`^` is XOR, not a power), and the counts of
/// `EXCEPT ALL` and `INTERSECT ALL`.
#[test]
fn a_float_in_a_bit_operation_and_except_all_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "t.jsonl", "{\"lr\": 0.00001, \"k\": 3}\n");
    let refused = |sql: &str| {
        let o = run(bin().args(["query", "-q"]).arg(dir.join("t.jsonl")).arg(sql));
        assert_eq!(o.status.code(), Some(2), "{sql}: {}", stdout(&o));
        stderr(&o)
    };
    let e = refused("SELECT lr ^ 2 FROM t");
    assert!(e.contains("`^` is the XOR of bits in DataFusion's SQL, not a power: write power(x, y)"), "{e}");
    assert!(e.contains("the float t.lr would be cut to an integer first"), "{e}");
    assert!(refused("SELECT 2.7 | k FROM t").contains("a bitwise operator works on the bits of integers"));
    // integers, and a float cast by the SQL itself, are as SQL has them
    assert_eq!(query(&dir.join("t.jsonl"), "SELECT k ^ 1 AS x, CAST(lr AS BIGINT) | 4 AS y FROM t"), "x,y\n2,4\n");
    let e = refused("SELECT k FROM t EXCEPT ALL SELECT k FROM t");
    assert!(e.contains("EXCEPT ALL is computed by DataFusion 55 as if each row were there once"), "{e}");
    assert!(refused("SELECT k FROM t INTERSECT ALL SELECT 3").contains("INTERSECT ALL is computed"));
    assert_eq!(query(&dir.join("t.jsonl"), "SELECT k FROM t EXCEPT SELECT 4"), "k\n3\n");
}

/// A release's columns count as ones that may be NULL, its primary-key and `required` ones
/// too: DataFusion 55 would fold `IS NULL` of a scalar subquery that finds no row over such a
/// column to false, fail on its NULL, and plan `nullif(k, 0) NOT IN (…)` as if no NULL came.
/// A scalar subquery that finds no row is NULL over a column that holds none too.
#[test]
fn a_release_s_columns_count_as_nullable_to_sql() {
    let r = example_release();
    let described = query(r, "DESCRIBE evaluations");
    assert!(described.contains("tinker_uri,Utf8View,YES\n"), "{described}");
    let runs = query(r, "SELECT count(*) AS n FROM training_runs");
    let none = "(SELECT tinker_uri FROM checkpoints WHERE name = 'no-such-checkpoint')";
    assert_eq!(query(r, &format!("SELECT count(*) AS n FROM training_runs WHERE {none} IS NULL")), runs);
    assert_eq!(
        query(r, &format!("SELECT {none} IS NULL AS missing, coalesce({none}, '-') AS uri")),
        "missing,uri\ntrue,-\n"
    );
    let not_in = "SELECT count(*) AS n FROM checkpoints WHERE (CASE WHEN is_final THEN training_run_id END) NOT IN \
                  (SELECT training_run_id FROM training_runs)";
    let not_exists = "SELECT count(*) AS n FROM checkpoints c WHERE NOT EXISTS (SELECT 1 FROM training_runs r WHERE \
                      r.training_run_id = (CASE WHEN c.is_final THEN c.training_run_id END) OR r.training_run_id IS \
                      NULL OR (CASE WHEN c.is_final THEN c.training_run_id END) IS NULL)";
    assert_eq!(query(r, not_in), query(r, not_exists));
    assert_eq!(query(r, not_in), "n\n0\n");
    // over a raw file's never-NULL _source_line, and a literal
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t.jsonl");
    std::fs::write(&t, "{\"k\":1}\n{\"k\":2}\n").unwrap();
    let none = "(SELECT _source_line FROM t WHERE k = 99)";
    assert_eq!(
        query(&t, &format!("SELECT {none} IS NULL AS a, {none} AS b, (SELECT 1 WHERE false) IS NULL AS c")),
        "a,b,c\ntrue,,true\n"
    );
    assert_eq!(query(&t, &format!("SELECT count(*) AS n FROM t WHERE {none} IS NULL")), "n\n2\n");
    // a constant the subquery selects is not folded back into one that holds no NULL
    let constant = "(SELECT 1 FROM t WHERE k = 99)";
    assert_eq!(
        query(
            &t,
            &format!("SELECT {constant} AS a, {constant} IS NULL AS b, (SELECT 'x' FROM t WHERE k = 99) || 'y' AS c")
        ),
        "a,b,c\n,true,\n"
    );
    let o = run(bin()
        .args(["query", "-q"])
        .arg(&t)
        .arg(format!("SELECT k FROM t WHERE {none} NOT IN (SELECT k FROM t) OR k = 1")));
    assert!(stderr(&o).contains("x NOT IN (SELECT y …) beneath OR"), "{}", stderr(&o));
}

/// A column two joined tables hold, named without its table, gets the hint to name the table,
/// after a join on ON as after one with USING.
#[test]
fn an_ambiguous_column_is_told_to_name_its_table() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t.jsonl");
    std::fs::write(&t, "{\"k\":1,\"v\":\"a\"}\n").unwrap();
    for sql in ["SELECT v FROM t a JOIN t b ON a.k = b.k", "SELECT * FROM t a JOIN t b USING (k) WHERE v = 'a'"] {
        let o = run(bin().args(["query", "-q"]).arg(&t).arg(sql));
        assert_eq!(o.status.code(), Some(2), "{sql}");
        assert!(
            stderr(&o).contains(
                "hint: name the table the column is read from (`a.v`, where a is the table's name or alias): two \
                 tables of the query hold a column v."
            ),
            "{sql}: {}",
            stderr(&o)
        );
    }
}

/// Joins and subqueries DataFusion 55 does not plan are said without the parser's tree, with
/// what to write; what they name runs.
#[test]
fn unplanned_joins_and_subqueries_name_what_to_write() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t.jsonl");
    std::fs::write(&t, "{\"k\":1,\"v\":\"a\"}\n{\"k\":2,\"v\":null}\n").unwrap();
    let said = |sql: &str| {
        let o = run(bin().args(["query", "-q"]).arg(&t).arg(sql));
        assert_eq!(o.status.code(), Some(2), "{sql}");
        let e = stderr(&o);
        assert!(!e.contains("Ident {") && !e.contains("subquery: <subquery>"), "{e}");
        e
    };
    let e = said("SELECT * FROM t a ANTI JOIN t b ON a.k = b.k + 1");
    assert!(e.contains("DataFusion 55 does not plan ANTI JOIN; write LEFT ANTI JOIN"), "{e}");
    assert_eq!(query(&t, "SELECT a.k FROM t a LEFT ANTI JOIN t b ON a.k = b.k + 1"), "k\n1\n");
    assert!(said("SELECT * FROM t a SEMI JOIN t b ON a.k = b.k").contains("write LEFT SEMI JOIN"));
    assert!(said("SELECT * FROM t a CROSS APPLY t b").contains("does not plan CROSS APPLY"));
    let e = said("SELECT k, EXISTS (SELECT 1 FROM t i WHERE i.k = o.k) AS e FROM t o");
    assert!(e.contains("IN (subquery) and EXISTS (subquery) as conditions of WHERE and HAVING only"), "{e}");
    assert!(said("SELECT k IN (SELECT k FROM t) FROM t").contains("In a select list, join"));
    assert_eq!(
        query(
            &t,
            "SELECT o.k, s.k IS NOT NULL AS found FROM t o LEFT JOIN (SELECT DISTINCT k FROM t WHERE k = 1) s ON s.k = o.k ORDER BY o.k"
        ),
        "k,found\n1,true\n2,false\n"
    );
    let e = said("SELECT k FROM t o WHERE k > (SELECT max(k) FROM t i WHERE i.k < o.k)");
    assert!(
        e.contains("Join and group instead: SELECT o.k, max(i.x) FROM t o LEFT JOIN t i ON i.k < o.k GROUP BY o.k"),
        "{e}"
    );
    assert_eq!(
        query(&t, "SELECT o.k, max(i.k) AS m FROM t o LEFT JOIN t i ON i.k < o.k GROUP BY o.k ORDER BY o.k"),
        "k,m\n1,\n2,1\n"
    );
    // a window over a call nested in another: the plan is not printed, the subquery is named
    for sql in [
        "SELECT k, rank() OVER (ORDER BY -abs(k * 1.5)) AS r FROM t",
        "SELECT sum(k) OVER (PARTITION BY abs(abs(k))) AS s FROM t",
    ] {
        let e = said(sql);
        assert!(
            e.contains("could not plan a window ordered or partitioned by an expression over a call nested in"),
            "{e}"
        );
        assert!(!e.contains("WindowAggExec"), "{e}");
    }
    assert_eq!(
        query(&t, "SELECT k, rank() OVER (ORDER BY o) AS r FROM (SELECT *, -abs(k * 1.5) AS o FROM t) ORDER BY k"),
        "k,r\n1,2\n2,1\n"
    );
}

/// A `NOT IN` over a constant is refused with its own message (DataFusion 55 passes over the
/// subquery's NULLs there); the `NOT EXISTS` it names gives SQL's answer.
#[test]
fn a_not_in_over_a_constant_is_refused_with_its_own_rewrite() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("t.jsonl");
    std::fs::write(&t, "{\"k\":1,\"v\":1}\n{\"k\":2,\"v\":null}\n").unwrap();
    let o = run(bin().args(["query", "-q"]).arg(&t).arg("SELECT k FROM t WHERE 3 NOT IN (SELECT v FROM t)"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NOT IN over a value that names no column of the rows it filters"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("names the outer query's columns"), "{}", stderr(&o));
    // SQL: 3 NOT IN (1, NULL) is NULL, so no row
    assert_eq!(query(&t, "SELECT k FROM t o WHERE NOT EXISTS (SELECT 1 FROM t i WHERE i.v = 3 OR i.v IS NULL)"), "k\n");
    assert_eq!(
        query(&t, "SELECT k FROM t o WHERE NOT EXISTS (SELECT 1 FROM t i WHERE i.v = 3) ORDER BY k"),
        "k\n1\n2\n"
    );
}

/// A `NOT IN` over a correlated subquery is refused (DataFusion 55 drops every row when any
/// outer row's subquery holds a NULL); the `NOT EXISTS` the message names gives SQL's answer,
/// and a `NOT IN` without correlation is computed as SQL says.
#[test]
fn a_correlated_not_in_is_refused_and_the_not_exists_it_names_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "t.jsonl",
        "{\"side\": \"o\", \"k\": 1, \"v\": 1}\n{\"side\": \"o\", \"k\": 2, \"v\": 5}\n\
         {\"side\": \"o\", \"k\": 3, \"v\": null}\n{\"side\": \"o\", \"k\": 4, \"v\": null}\n\
         {\"side\": \"i\", \"k\": 1, \"v\": 2}\n{\"side\": \"i\", \"k\": 3, \"v\": null}\n{\"side\": \"i\", \"k\": 5, \"v\": 7}\n",
    );
    let files = |sql: &str| {
        let sides =
            "WITH o AS (SELECT k, v AS x FROM t WHERE side = 'o'), i AS (SELECT k, v AS y FROM t WHERE side = 'i') ";
        run(bin().args(["query", "-q", "--format", "csv"]).arg(dir.join("t.jsonl")).arg(format!("{sides}{sql}")))
    };
    for correlation in ["i.k < o.k + 1", "i.k = o.k", "i.k <> o.k + 2"] {
        let o = files(&format!("SELECT k FROM o WHERE x NOT IN (SELECT y FROM i WHERE {correlation})"));
        assert_eq!(o.status.code(), Some(2), "{correlation}: {}", stdout(&o));
        assert!(stderr(&o).contains("NOT IN over a subquery that names the outer query's columns"), "{}", stderr(&o));
        assert!(stderr(&o).contains("Write NOT EXISTS (SELECT 1 FROM i WHERE i.k < o.k AND (i.y = o.x OR i.y IS NULL"));
    }
    // what SQL answers: k = 3 and 4 have a NULL x beside a subquery with rows; k = 2's subquery
    // holds the NULL of i.k = 3 where the correlation lets it in
    for (correlation, rows) in [("i.k < o.k + 1", "1\n2\n"), ("i.k = o.k", "1\n2\n4\n"), ("i.k <> o.k + 2", "1\n")] {
        let sql = format!(
            "SELECT k FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE {correlation} AND (i.y = o.x OR i.y IS NULL OR \
             o.x IS NULL)) ORDER BY k"
        );
        let o = files(&sql);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), format!("k\n{rows}"), "{correlation}");
    }
    let o = files("SELECT k FROM o WHERE x NOT IN (SELECT y FROM i WHERE y IS NOT NULL) ORDER BY k");
    assert_eq!(stdout(&o), "k\n1\n2\n", "{}", stderr(&o));
    let o = files("SELECT k FROM o WHERE x NOT IN (SELECT y FROM i) ORDER BY k");
    assert_eq!(stdout(&o), "k\n", "{}", stderr(&o));
}

/// Two aggregates DataFusion 55 names alike (a cast is left out of the name) get a hint naming
/// what to write, and what it names runs.
#[test]
fn aggregates_named_alike_get_a_hint_that_works() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "t.jsonl", "{\"step\": 1}\n{\"step\": 2}\n");
    let o =
        run(bin().args(["query", "-q"]).arg(dir.join("t.jsonl")).arg("SELECT sum(step::double) a, sum(step) b FROM t"));
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("duplicate unqualified field name \"sum(t.step)\""), "{}", stderr(&o));
    assert!(stderr(&o).contains("hint: DataFusion 55 names an aggregate by its arguments with their casts left out"));
    assert_eq!(query(&dir.join("t.jsonl"), "SELECT sum(step * 1.0) a, sum(step) b FROM t"), "a,b\n3.0,3\n");
}

/// `array_sum` of integers is an exact integer (DataFusion 55 gave a float: 2^53 + 1 became
/// 2^53), failing when it leaves Int64; lists of floats are summed as floats.
#[test]
fn array_sum_of_integers_is_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "t.jsonl", "{\"xs\": [9007199254740993, 0, null], \"fs\": [1.5, 2]}\n{\"xs\": [], \"fs\": null}\n");
    assert_eq!(
        query(
            &dir.join("t.jsonl"),
            "SELECT array_sum(xs) AS s, arrow_typeof(array_sum(xs)) AS t, list_sum(fs) AS f FROM t"
        ),
        "s,t,f\n9007199254740993,Int64,3.5\n,Int64,\n"
    );
    let o = run(bin().args(["query", "-q"]).arg(dir.join("t.jsonl")).arg("SELECT array_sum([9223372036854775807, 1])"));
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("array_sum overflows Int64: a list's integers came to 9223372036854775808"),
        "{}",
        stderr(&o)
    );
    let o = run(bin().args(["query", "-q"]).arg(dir.join("t.jsonl")).arg("SELECT array_sum([[1, 2], [3]])"));
    assert!(
        stderr(&o).contains("array_sum sums a list of numbers; this one holds List<Int64>: sum flatten(l)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(query(&dir.join("t.jsonl"), "SELECT array_sum(flatten([[1, 2], [3]])) AS s"), "s\n6\n");
}

/// An `IN (subquery)` DataFusion 55 would compute as if NULLs were not there (a `NOT IN`
/// beneath `OR`, an `IN` beneath `NOT` or inside a comparison) is refused; the `NOT EXISTS`
/// the message names gives SQL's rows, and the forms DataFusion computes as SQL says pass.
#[test]
fn an_in_subquery_beneath_or_or_not_is_refused_where_nulls_would_be_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "t.jsonl", "{\"id\": 1, \"n\": 1}\n{\"id\": 2, \"n\": 2}\n{\"id\": 3, \"n\": null}\n");
    let t = dir.join("t.jsonl");
    for sql in [
        "SELECT id FROM t WHERE n NOT IN (SELECT n FROM t WHERE id = 3) OR id = 1",
        "SELECT id FROM t WHERE NOT (n IN (SELECT n FROM t WHERE id <> 2) AND id > 0)",
        "SELECT id FROM t WHERE (n NOT IN (SELECT n FROM t WHERE id = 3)) = true",
    ] {
        let o = run(bin().args(["query", "-q"]).arg(&t).arg(sql));
        assert_eq!(o.status.code(), Some(2), "{sql}: {}", stdout(&o));
        assert!(stderr(&o).contains("is computed by DataFusion 55 as if NULLs were not there"), "{}", stderr(&o));
    }
    // SQL's rows: the subquery {NULL} makes every NOT IN NULL; {1} leaves id 3's NULL n NULL
    let not_exists = |cond: &str, or: &str| {
        format!(
            "SELECT id FROM t o WHERE NOT EXISTS (SELECT 1 FROM t i WHERE {cond} AND (i.n = o.n OR i.n IS NULL OR o.n IS \
             NULL)) OR {or} ORDER BY id"
        )
    };
    assert_eq!(query(&t, &not_exists("i.id = 3", "id = 1")), "id\n1\n");
    assert_eq!(query(&t, &not_exists("i.id = 1", "id = 99")), "id\n2\n");
    // a condition of its own, and an IN beneath OR alone, are computed as SQL says
    assert_eq!(
        query(&t, "SELECT id FROM t WHERE n NOT IN (SELECT n FROM t WHERE id = 1) AND id > 0 ORDER BY id"),
        "id\n2\n"
    );
    assert_eq!(query(&t, "SELECT id FROM t WHERE NOT (n IN (SELECT n FROM t WHERE id = 3)) ORDER BY id"), "id\n");
    assert_eq!(
        query(&t, "SELECT id FROM t WHERE n IN (SELECT n FROM t WHERE id <> 2) OR id = 2 ORDER BY id"),
        "id\n1\n2\n"
    );
    // in a join's ON too
    let sql =
        "SELECT a.id FROM t a JOIN t b ON a.id = b.id AND (a.n NOT IN (SELECT n FROM t WHERE id = 3) OR a.id = 1)";
    let o = run(bin().args(["query", "-q"]).arg(&t).arg(sql));
    assert!(stderr(&o).contains("is computed by DataFusion 55 as if NULLs were not there"), "{}", stderr(&o));
    // a correlated NOT IN whose two sides cannot be NULL is SQL's
    assert_eq!(
        query(
            &t,
            "SELECT id FROM t o WHERE o._source_line NOT IN (SELECT i._source_line FROM t i WHERE i.id < o.id) ORDER BY id"
        ),
        "id\n1\n2\n3\n"
    );
    // NULLs ruled out by conditions of their own: SQL's rows (id 3's NULL n is left out)
    assert_eq!(
        query(
            &t,
            "SELECT id FROM t WHERE n IS NOT NULL AND (n NOT IN (SELECT n FROM t WHERE id = 1 AND n IS NOT NULL) OR id = 1) ORDER BY id"
        ),
        "id\n1\n2\n"
    );
    let sql = "SELECT a.id FROM t a LEFT JOIN t b ON a.id = b.id AND b.n NOT IN (SELECT n FROM t WHERE id = 1)";
    let o = run(bin().args(["query", "-q"]).arg(&t).arg(sql));
    assert!(stderr(&o).contains("Filter the side before the join: LEFT JOIN (SELECT * FROM c WHERE"), "{}", stderr(&o));
}

/// A NaN that SQL computes (`0.0 / 0.0`, `inf - inf`, sign bit set on x86) is the NaN of the
/// data: equal to it, in one group with it, matched by a join, counted once by DISTINCT; the
/// column keeps its name.
#[test]
fn a_nan_sql_computes_is_the_nan_of_the_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "t.jsonl",
        "{\"run\":\"r1\",\"a\":0.0,\"b\":0.0}\n{\"run\":\"r2\",\"a\":\"NaN\",\"b\":1.0}\n{\"run\":\"r3\",\"a\":1.0,\"b\":2.0}\n",
    );
    let t = dir.join("t.jsonl");
    assert_eq!(
        query(&t, "SELECT a / b, count(*) AS n FROM t GROUP BY a / b ORDER BY n"),
        "t.a / t.b,n\n0.5,1\nNaN,2\n"
    );
    assert_eq!(query(&t, "SELECT count(DISTINCT a / b) AS d FROM t"), "d\n2\n");
    assert_eq!(
        query(&t, "SELECT run, a / b = 'NaN'::double AS eq, a / b > 1 AS above FROM t ORDER BY run"),
        "run,eq,above\nr1,true,true\nr2,true,true\nr3,false,false\n"
    );
    assert_eq!(query(&t, "SELECT count(*) AS n FROM t x JOIN t y ON x.a / x.b = y.a / y.b"), "n\n5\n");
    assert_eq!(
        query(&t, "SELECT 'Infinity'::double - 'Infinity'::double = 'NaN'::double AS e, max(a / b) AS m FROM t"),
        "e,m\ntrue,NaN\n"
    );
    // a unary minus, a float sum of inf and -inf, and the aggregates of ROLLUP
    assert_eq!(
        query(&t, "SELECT run, -a = 'NaN'::double AS n FROM t ORDER BY run"),
        "run,n\nr1,false\nr2,true\nr3,false\n"
    );
    let sums = "SELECT sum(v) = 'NaN'::double AS s, avg(v) = 'NaN'::double AS a FROM (VALUES ('inf'::double), ('-inf'::double)) x(v)";
    assert_eq!(query(&t, sums), "s,a\ntrue,true\n");
    assert_eq!(
        query(&t, "SELECT run > 'r1' AS later, max(a / b) AS m FROM t GROUP BY ROLLUP(run > 'r1') ORDER BY later"),
        "later,m\nfalse,NaN\ntrue,NaN\n,NaN\n"
    );
}

/// A long chain of float operators, or of integer ones, plans in one pass over it (each node
/// typed once, no name made on the way) and gives its sum; integer arithmetic inside a float chain keeps its type.
#[test]
fn a_long_float_chain_plans_and_sums() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "t.jsonl", "{\"i\":3,\"x\":2.0}\n{\"i\":5,\"x\":0.0}\n");
    let t = dir.join("t.jsonl");
    let chain = format!("SELECT 0.5{} AS s FROM t ORDER BY s", " + x".repeat(1000));
    assert_eq!(query(&t, &chain), "s\n0.5\n2000.5\n");
    let right = format!("SELECT {}0.5{} AS s FROM t ORDER BY s", "x + (".repeat(100), ")".repeat(100));
    assert_eq!(query(&t, &right), "s\n0.5\n200.5\n");
    // integers: each + a call of checked arithmetic, nested as deep as the chain
    let integers = format!("SELECT 1{} AS s FROM t ORDER BY s", " + i".repeat(600));
    assert_eq!(query(&t, &integers), "s\n1801\n3001\n");
    assert_eq!(
        query(
            &t,
            "SELECT i * 2 + 1 AS n, (i * 2 + 1) / x = 'Infinity'::double AS inf, -(i - x) AS m FROM t ORDER BY n"
        ),
        "n,inf,m\n7,false,-1.0\n11,true,-5.0\n"
    );
    assert_eq!(
        query(
            &t,
            "SELECT arrow_typeof(i * 2 + 1) AS a, arrow_typeof(i / 2 * x) AS b, i / 2 * x AS c FROM t ORDER BY c"
        ),
        "a,b,c\nInt64,Float64,0.0\nInt64,Float64,2.0\n"
    );
    // one call around a run of arithmetic, a NaN inside it made positive there
    let o = run(bin().args(["query", "-q"]).arg(&t).arg("EXPLAIN SELECT -(x / x) * 2.0 + sqrt(x) AS v FROM t"));
    assert!(stdout(&o).contains("positive_nan((- t.x / t.x) * Float64(2) + sqrt(t.x))"), "{}", stdout(&o));
    assert_eq!(
        query(&t, "SELECT i, -(x / x) * 2.0 + sqrt(x) = 'NaN'::double AS v FROM t ORDER BY i"),
        "i,v\n3,false\n5,true\n"
    );
}

/// Intervals compared, sorted, grouped or taken the max of are refused (DataFusion 55 orders
/// them by months, then days, then the rest: 36 hours < 1 day); durations, and the forms the
/// message names, answer by length.
#[test]
fn intervals_ordered_by_their_parts_are_refused_and_durations_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "t.jsonl",
        "{\"run\":\"r1\",\"start\":\"2024-01-01T00:00:00Z\",\"end\":\"2024-01-02T12:00:00Z\"}\n\
         {\"run\":\"r2\",\"start\":\"2024-01-01T00:00:00Z\",\"end\":\"2024-01-01T20:00:00Z\"}\n",
    );
    let t = dir.join("t.jsonl");
    let d = "(CAST(\"end\" AS TIMESTAMP) - CAST(start AS TIMESTAMP))";
    let ivs = "(VALUES (INTERVAL '36 hours'), (INTERVAL '1 day'))";
    for (sql, said) in [
        (format!("SELECT run FROM t WHERE {d} > INTERVAL '1 day'"), "a comparison of intervals: DataFusion 55 orders"),
        (format!("SELECT max(column1) FROM {ivs}"), "the aggregate max(column1): DataFusion 55 orders"),
        (format!("SELECT column1 FROM {ivs} ORDER BY 1"), "ORDER BY column1:"),
        (format!("SELECT column1, count(*) FROM {ivs} GROUP BY 1"), "GROUP BY column1:"),
        (format!("SELECT DISTINCT column1 FROM {ivs}"), "DISTINCT over column1:"),
        ("SELECT INTERVAL '1 day' IN (INTERVAL '24 hours')".into(), "an IN list of intervals:"),
        ("SELECT nullif(INTERVAL '1 day', INTERVAL '24 hours')".into(), "nullif of intervals:"),
        ("SELECT [INTERVAL '1 day'] = [INTERVAL '24 hours']".into(), "a comparison of intervals:"),
        (format!("SELECT first_value(column1 ORDER BY column1) FROM {ivs}"), "the aggregate first_value"),
        (format!("SELECT column1, count(*) FROM {ivs} GROUP BY ROLLUP(column1)"), "GROUP BY column1:"),
    ] {
        let o = run(bin().args(["query", "-q"]).arg(&t).arg(&sql));
        assert_eq!(o.status.code(), Some(2), "{sql}: {}", stdout(&o));
        assert!(stderr(&o).contains(said), "{sql}: {}", stderr(&o));
        assert!(stderr(&o).contains("date_part('epoch', x) (a month counts 30 days)"), "{}", stderr(&o));
    }
    // by length: in seconds, timestamps compared, durations with durations
    assert_eq!(
        query(
            &t,
            &format!(
                "SELECT run, date_part('epoch', {d}) > date_part('epoch', INTERVAL '1 day') AS longer FROM t ORDER BY run"
            )
        ),
        "run,longer\nr1,true\nr2,false\n"
    );
    assert_eq!(
        query(&t, "SELECT run FROM t WHERE CAST(\"end\" AS TIMESTAMP) > CAST(start AS TIMESTAMP) + INTERVAL '1 day'"),
        "run\nr1\n"
    );
    assert_eq!(query(&t, &format!("SELECT run FROM t ORDER BY {d} DESC")), "run\nr1\nr2\n");
    // a window DataFusion refuses itself gets the same way out
    let o = run(bin().args(["query", "-q"]).arg(&t).arg(format!("SELECT rank() OVER (ORDER BY column1) FROM {ivs}")));
    assert!(stderr(&o).contains("hint: a window ordered by an interval"), "{}", stderr(&o));
    // a duration beside hours alone is ordered by length; a window by a duration gets its way out
    assert_eq!(query(&t, &format!("SELECT run FROM t WHERE {d} > INTERVAL '30 hours'")), "run\nr1\n");
    let o = run(bin().args(["query", "-q"]).arg(&t).arg(format!("SELECT rank() OVER (ORDER BY {d}) FROM t")));
    assert!(
        stderr(&o).contains("hint: DataFusion 55 orders a window by a duration only with a ROWS frame"),
        "{}",
        stderr(&o)
    );
    let ranked = format!(
        "SELECT run, rank() OVER (ORDER BY {d} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS k FROM t ORDER BY k"
    );
    assert_eq!(query(&t, &ranked), "run,k\nr2,1\nr1,2\n");
}

/// A division by zero in a row gets the way out, and the way out gives NULL there.
#[test]
fn a_division_by_zero_gets_nullif() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "t.jsonl", "{\"a\": 1, \"b\": 0}\n{\"a\": 4, \"b\": 2}\n");
    let t = dir.join("t.jsonl");
    let o = run(bin().args(["query", "-q"]).arg(&t).arg("SELECT a / b FROM t"));
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("hint: a row divides by zero: x / NULLIF(y, 0) gives NULL there"), "{}", stderr(&o));
    assert_eq!(query(&t, "SELECT a, a / NULLIF(b, 0) AS r FROM t ORDER BY a"), "a,r\n1,\n4,2\n");
}

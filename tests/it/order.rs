//! Rows that arrive in key order skip the sort; rows that do not are sorted. Either way the
//! release holds the rows in key order, equal keys in input order.

use crate::util::*;

/// The `k` and `v` of each row of a table's JSON Lines file, in file order.
fn keys(release: &std::path::Path, table: &str) -> Vec<(i64, String)> {
    let text = std::fs::read_to_string(release.join(format!("jsonl/{table}.jsonl"))).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["k"].as_i64().unwrap(), v["v"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn rows_in_key_order_skip_the_sort_and_others_are_sorted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 30,000 rows: several record batches, so order is checked across batch edges too
    let n = 30_000;
    let asc = rows_in_key_order(n, "a");
    // the same rows, but the last one belongs first
    let late = rows_with_the_first_last(n, "a");
    write(dir, "asc.jsonl", &asc);
    write(dir, "late.jsonl", &late);
    write(dir, "keyed.json", &kv_schema(&["k", "v"], "integer"));
    write(dir, "dups.json", &kv_schema(&["k"], "integer"));
    let mut toml = String::from("name = \"order\"\nformats = [\"parquet\", \"jsonl\"]\n");
    for s in ["asc", "late"] {
        toml += &format!("[[source]]\nname = \"{s}\"\npath = \"{s}.jsonl\"\nformat = \"jsonl\"\n");
    }
    for (t, q, schema, dup) in [
        ("in_order", "SELECT * FROM asc", "keyed", "error"),
        ("late_row", "SELECT * FROM late", "keyed", "error"),
        ("filtered", "SELECT * FROM asc WHERE k % 3 <> 0", "keyed", "error"),
        ("last_wins", "SELECT * FROM asc", "dups", "keep-last"),
    ] {
        toml += &format!(
            "[[table]]\nname = \"{t}\"\nschema = \"{schema}.json\"\nquery = \"{q}\"\non_duplicate_key = \"{dup}\"\n"
        );
    }
    write(dir, "pipeline.toml", &toml);
    let out = dir.join("out");
    let o = run(bin().env("RUST_LOG", "info").arg("build").arg(dir).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("table in_order: query in key order, not sorted"), "{log}");
    assert!(log.contains("table last_wins: query in key order, not sorted"), "{log}");
    assert!(!log.contains("table late_row: query in key order"), "{log}");
    let rel = release(dir, "order");

    let mut expected: Vec<(i64, String)> = (0..n).map(|i| (i / 2, format!("a{i}"))).collect();
    assert_eq!(keys(&rel, "in_order"), expected);
    expected.retain(|(k, _)| k % 3 != 0);
    assert_eq!(keys(&rel, "filtered"), expected);
    let mut late: Vec<(i64, String)> = (1..n).map(|i| (i / 2, format!("a{i}"))).collect();
    late.insert(0, (-1, "last".into()));
    assert_eq!(keys(&rel, "late_row"), late);
    // equal keys keep their input order, so the later row of each pair is the one kept
    let last: Vec<(i64, String)> = (0..n / 2).map(|k| (k, format!("a{}", 2 * k + 1))).collect();
    assert_eq!(keys(&rel, "last_wins"), last);
}

#[test]
fn keep_last_on_json_records_follows_document_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // twelve records; key 7 appears as record 2 and as record 10, which comes later in the
    // file but before it in text order ("/runs/10" < "/runs/2")
    let runs: Vec<String> = (0..12)
        .map(|i| {
            let k = if i == 2 || i == 10 { 7 } else { 100 + i };
            format!("{{\"k\": {k}, \"v\": \"r{i}\"}}")
        })
        .collect();
    write(dir, "results.json", &format!("{{\"runs\": [{}]}}", runs.join(", ")));
    write(dir, "t.json", &kv_schema(&["k"], "string"));
    write(
        dir,
        "pipeline.toml",
        "name = \"ptr\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"results\"\npath = \"results.json\"\nformat = \"json\"\nrecord_path = \"/runs\"\n\
         [[table]]\nname = \"last\"\nschema = \"t.json\"\nquery = \"SELECT * FROM results\"\non_duplicate_key = \"keep-last\"\n\
         [[table]]\nname = \"first\"\nschema = \"t.json\"\nquery = \"SELECT * FROM results\"\non_duplicate_key = \"keep-first\"\n",
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = release(dir, "ptr");
    let kept = |table: &str| keys(&rel, table).into_iter().find(|(k, _)| *k == 7).unwrap().1;
    assert_eq!(kept("last"), "r10");
    assert_eq!(kept("first"), "r2");
}

#[test]
fn keep_last_takes_files_folder_by_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a run's second session in a folder named after the first's (W&B adds `-1` when the
    // name is taken): as bytes `run-a-1/` comes first (`-` before `/`); folder by folder, last
    write(dir, "runs/run-a/log.jsonl", "{\"k\": 7, \"v\": \"first\"}\n{\"k\": 8, \"v\": \"only\"}\n");
    write(dir, "runs/run-a-1/log.jsonl", "{\"k\": 7, \"v\": \"resumed\"}\n");
    write(dir, "t.json", &kv_schema(&["k"], "string"));
    for (rule, kept) in [("keep-last", "resumed"), ("keep-first", "first")] {
        let table = format!("schema = \"t.json\"\non_duplicate_key = \"{rule}\"\nformats = [\"parquet\", \"jsonl\"]\n");
        let sql = "SELECT k, v, _source_file, CAST(_source_line AS VARCHAR) AS _source_line FROM raw";
        write(dir, "pipeline.toml", &one_source("dirs", "runs/*/log.jsonl", "jsonl", "", sql, &table));
        let o = build(dir, &["--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let rows = keys(&release(dir, "dirs"), "t");
        assert_eq!(rows.iter().find(|(k, _)| *k == 7).unwrap().1, kept, "{rule}");
    }
}

/// `order_by` orders a key's rows by a column before their file and line: a session whose
/// folder's name sorts first but which logged later is the last. A row of a repeated key
/// without a value there cannot be placed; a column the table lacks is refused at its line.
#[test]
fn order_by_orders_a_keys_rows_by_a_column_before_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // `b-node` started later (t 20) but sorts after `a-node` by name only for key 8
    write(
        dir,
        "runs/b-node/log.jsonl",
        "{\"k\": 7, \"v\": \"stopped\", \"t\": 10}\n{\"k\": 8, \"v\": \"b8\", \"t\": 30}\n",
    );
    write(
        dir,
        "runs/a-node/log.jsonl",
        "{\"k\": 7, \"v\": \"resumed\", \"t\": 20}\n{\"k\": 8, \"v\": \"a8\", \"t\": 30}\n",
    );
    let fields = r#"[{"name":"k","type":"integer"},{"name":"v","type":"string"},{"name":"t","type":"integer"},
        {"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}]"#;
    write(dir, "t.json", &format!(r#"{{"fields":{fields},"primaryKey":["k"]}}"#));
    // equal times (key 8) fall back to file order
    for (rule, seven, eight) in [("keep-last", "resumed", "b8"), ("keep-first", "stopped", "a8")] {
        let table = format!(
            "schema = \"t.json\"\non_duplicate_key = \"{rule}\"\norder_by = \"t\"\nformats = [\"parquet\", \"jsonl\"]\n"
        );
        let sql = "SELECT k, v, t, _source_file, _source_line FROM raw";
        write(dir, "pipeline.toml", &one_source("ord", "runs/*/log.jsonl", "jsonl", "", sql, &table));
        let o = build(dir, &["--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let rows = keys(&release(dir, "ord"), "t");
        assert_eq!(rows.iter().find(|(k, _)| *k == 7).unwrap().1, seven, "{rule}");
        assert_eq!(rows.iter().find(|(k, _)| *k == 8).unwrap().1, eight, "{rule}");
        assert!(stderr(&o).contains("(keep-"), "{}", stderr(&o));
        assert!(stderr(&o).contains(&format!("({rule} rule, by `t`)")), "{}", stderr(&o));
    }
    // a repeated key's row without a time has no place: a violation naming the column
    write(dir, "runs/c-node/log.jsonl", "{\"k\": 7, \"v\": \"untimed\", \"t\": null}\n");
    let table = "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\norder_by = \"t\"\n";
    let sql_t = "SELECT k, v, t, _source_file, _source_line FROM raw";
    write(dir, "pipeline.toml", &one_source("ord", "runs/*/log.jsonl", "jsonl", "", sql_t, table));
    let o = build(dir, &["--force"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o)
            .contains("has no `t` (order_by) to order it by (null or NaN), so the keep-last rule cannot place it"),
        "{}",
        stderr(&o)
    );
    // a column the query does not give is refused, at its line of pipeline.toml, whatever the rule
    write(dir, "k.json", &kv_schema(&["k"], "string"));
    let sql = "SELECT k, v, _source_file, CAST(_source_line AS VARCHAR) AS _source_line FROM raw";
    for rule in ["keep-last", "error"] {
        let table = format!("schema = \"k.json\"\non_duplicate_key = \"{rule}\"\norder_by = \"t\"\n");
        write(dir, "pipeline.toml", &one_source("ord", "runs/*/log.jsonl", "jsonl", "", sql, &table));
        let o = build(dir, &["--force"]);
        assert!(!o.status.success());
        let said = "order_by names `t`, which is no column of the table; name a column of its query";
        assert!(stderr(&o).contains(said), "{}", stderr(&o));
        assert!(stderr(&o).contains("pipeline.toml:"), "{}", stderr(&o));
    }
    // a table without a primary key has no rows of a key to order
    let table = "on_duplicate_key = \"keep-last\"\norder_by = \"t\"\n";
    write(dir, "pipeline.toml", &one_source("ord", "runs/*/log.jsonl", "jsonl", "", sql_t, table));
    let o = build(dir, &["--force"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("orders the rows that share a primary key, and the table has none"), "{}", stderr(&o));
    // as record_columns do
    let table = "on_duplicate_key = \"keep-last\"\nrecord_columns = [\"k\"]\n";
    write(dir, "pipeline.toml", &one_source("ord", "runs/*/log.jsonl", "jsonl", "", sql_t, table));
    let o = build(dir, &["--force"]);
    assert!(!o.status.success());
    let said = "record_columns [k] name the first columns of a primary key, and the table has none";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
}

/// Float values of `order_by` order as numbers: -0.0 and 0.0 are one value (file order tells
/// them apart), and a NaN orders nothing (a violation, as a null).
#[test]
fn order_by_floats_are_numbers_and_nan_orders_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "runs/a/log.jsonl", "{\"k\": 2, \"v\": \"a\", \"t\": 0.0}\n{\"k\": 3, \"v\": \"a\", \"t\": 1.5}\n");
    write(dir, "runs/b/log.jsonl", "{\"k\": 2, \"v\": \"b\", \"t\": -0.0}\n{\"k\": 3, \"v\": \"b\", \"t\": 0.5}\n");
    let fields = r#"[{"name":"k","type":"integer"},{"name":"v","type":"string"},{"name":"t","type":"number"},
        {"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}]"#;
    write(dir, "t.json", &format!(r#"{{"fields":{fields},"primaryKey":["k"]}}"#));
    let sql = "SELECT k, v, t, _source_file, _source_line FROM raw";
    let table =
        "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\norder_by = \"t\"\nformats = [\"parquet\", \"jsonl\"]\n";
    write(dir, "pipeline.toml", &one_source("fl", "runs/*/log.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(keys(&release(dir, "fl"), "t"), [(2, "b".to_string()), (3, "a".to_string())]);
    write(dir, "runs/c/log.jsonl", "{\"k\": 3, \"v\": \"c\", \"t\": NaN}\n");
    let o = build(dir, &["--force"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("runs/c/log.jsonl:1"), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no `t` (order_by) to order it by (null or NaN)"), "{}", stderr(&o));
}

/// With `record_columns`, `order_by` may keep an earlier file's record of a step: the lines of
/// that file before it are no stopped attempt's, and stay. Records each of which holds a row
/// kept over the other's (a value of each row ordering them, not the record's time) are kept
/// row by row: no key is left without a row.
#[test]
fn order_by_with_record_columns_leaves_no_key_without_a_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s1 = "{\"run\": \"r\", \"step\": 1, \"time\": 5, \"eval_acc\": 0.9}\n\
              {\"run\": \"r\", \"step\": 1, \"time\": 6, \"loss\": 0.5}\n";
    write(dir, "raw/s1/log.jsonl", s1);
    write(dir, "raw/s2/log.jsonl", "{\"run\": \"r\", \"step\": 1, \"time\": 1, \"loss\": 0.7}\n");
    let fields = r#"[{"name":"run","type":"string"},{"name":"step","type":"integer"},{"name":"metric","type":"string"},
        {"name":"value","type":"number"},{"name":"time","type":"integer"},
        {"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}]"#;
    write(dir, "t.json", &format!(r#"{{"fields":{fields},"primaryKey":["run","step","metric"]}}"#));
    let sql = "SELECT run, step, 'eval_acc' AS metric, eval_acc AS value, time, _source_file, _source_line FROM raw \
               WHERE eval_acc IS NOT NULL UNION ALL SELECT run, step, 'loss', loss, time, _source_file, _source_line \
               FROM raw WHERE loss IS NOT NULL";
    let rows = |order_by: &str| {
        let table = format!(
            "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\nrecord_columns = [\"run\", \"step\"]\n\
             order_by = \"{order_by}\"\n"
        );
        let source = "columns = \"union\"\n";
        write(dir, "pipeline.toml", &one_source("rc", "raw/*/log.jsonl", "jsonl", source, sql, &table));
        let o = build(dir, &["--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        query(&release(dir, "rc"), "SELECT metric, value, _source_file FROM t ORDER BY metric")
    };
    assert_eq!(rows("time"), "metric,value,_source_file\neval_acc,0.9,raw/s1/log.jsonl\nloss,0.5,raw/s1/log.jsonl\n");
    // one line of each file, ordered by each row's value: loss keeps s1's, eval_acc s2's
    write(dir, "raw/s1/log.jsonl", "{\"run\": \"r\", \"step\": 1, \"time\": 5, \"eval_acc\": 0.1, \"loss\": 0.9}\n");
    write(dir, "raw/s2/log.jsonl", "{\"run\": \"r\", \"step\": 1, \"time\": 1, \"eval_acc\": 0.9, \"loss\": 0.7}\n");
    assert_eq!(rows("value"), "metric,value,_source_file\neval_acc,0.9,raw/s2/log.jsonl\nloss,0.9,raw/s1/log.jsonl\n");
}

#[test]
fn keep_last_on_line_numbers_cast_to_text_follows_line_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // key 7 on lines 9 and 11: "11" comes before "9" as text
    let lines: Vec<String> = (1..=12)
        .map(|i| {
            let k = if i == 9 || i == 11 { 7 } else { 100 + i };
            format!("{{\"k\": {k}, \"v\": \"l{i}\"}}\n")
        })
        .collect();
    write(dir, "m.jsonl", &lines.concat());
    write(dir, "t.json", &kv_schema(&["k"], "string"));
    let sql = "SELECT k, v, _source_file, CAST(_source_line AS VARCHAR) AS _source_line FROM raw";
    for (rule, kept) in [("keep-last", "l11"), ("keep-first", "l9")] {
        let table = format!("schema = \"t.json\"\non_duplicate_key = \"{rule}\"\nformats = [\"parquet\", \"jsonl\"]\n");
        write(dir, "pipeline.toml", &one_source("txt", "m.jsonl", "jsonl", "", sql, &table));
        let o = build(dir, &["--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let rows = keys(&release(dir, "txt"), "t");
        assert_eq!(rows.iter().find(|(k, _)| *k == 7).unwrap().1, kept, "{rule}");
    }
}

#[test]
fn rows_of_one_raw_line_that_share_a_key_leave_the_rule_no_choice() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let lines: String = (0..3000).map(|i| format!("{{\"k\": {i}}}\n")).collect();
    write(dir, "m.jsonl", &lines);
    write(dir, "t.json", &kv_schema(&["k"], "integer"));
    let table = "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\nformats = [\"parquet\", \"jsonl\"]\n";
    // two different rows of each line under one key: which is "last" is the query's whim
    let sql = "SELECT k, 'a' AS v, _source_file, _source_line FROM raw \
               UNION ALL SELECT k, 'b' AS v, _source_file, _source_line FROM raw";
    write(dir, "pipeline.toml", &one_source("tie", "m.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &["--max-errors", "1"]);
    assert_violations(
        &o,
        6000,
        &["m.jsonl:1:k: 2 different rows share this primary key and come from the same raw line m.jsonl:1, so \
           the keep-last rule cannot choose between them"],
    );
    // a row without a place cannot be ordered among the others
    let sql = "SELECT k, 'a' AS v, _source_file, _source_line FROM raw \
               UNION ALL SELECT 7 AS k, 'z' AS v, NULL, NULL";
    write(dir, "pipeline.toml", &one_source("tie", "m.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &[]);
    assert_violations(
        &o,
        1,
        &["and this one (row ", " of them) has no _source_file/_source_line, so the keep-last rule cannot place it"],
    );
    // the table has its keep rule already: no hint to choose one
    assert!(!stderr(&o).contains("hint: rows that share a primary key"), "{}", stderr(&o));
    // with --on-invalid reject the unplaced rows go to the rejects, and the rule still chooses
    // among the placed ones: the rows kept hold the key once (the last, from n.jsonl)
    write(dir, "n.jsonl", "{\"k\": 7}\n");
    let sql = "SELECT k, CASE WHEN _source_file = 'n.jsonl' THEN 'n' ELSE 'm' END AS v, _source_file, _source_line \
               FROM raw UNION ALL SELECT 7 AS k, 'y' AS v, NULL, NULL UNION ALL SELECT 7 AS k, 'z' AS v, NULL, NULL";
    write(dir, "pipeline.toml", &one_source("tie", "*.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &["--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let kept = keys(&release(dir, "tie"), "t");
    assert_eq!(kept.len(), 3000, "{}", stderr(&o));
    assert_eq!(kept.iter().filter(|(k, _)| *k == 7).collect::<Vec<_>>(), [&(7, "n".to_string())]);
    std::fs::remove_file(dir.join("n.jsonl")).unwrap();
    std::fs::remove_dir_all(release(dir, "tie")).unwrap();
    // the same row twice is no choice to make
    let sql = "SELECT k, 'a' AS v, _source_file, _source_line FROM raw \
               UNION ALL SELECT k, 'a' AS v, _source_file, _source_line FROM raw";
    write(dir, "pipeline.toml", &one_source("tie", "m.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(keys(&release(dir, "tie"), "t").len(), 3000);
}

#[test]
fn duplicate_groups_that_span_batch_edges_keep_the_right_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // keys in threes: 8,192-row batches end inside a group
    let n = 30_000;
    let asc: String = (0..n).map(|i| line(i / 3, &format!("a{i}"))).collect();
    // the same, with one row that belongs first at the end: the rows go through the sort
    let late = format!("{asc}{}", line(-1, "last"));
    write(dir, "asc.jsonl", &asc);
    write(dir, "late.jsonl", &late);
    write(dir, "dups.json", &kv_schema(&["k"], "integer"));
    let mut toml = String::from("name = \"edges\"\nformats = [\"parquet\", \"jsonl\"]\n");
    for s in ["asc", "late"] {
        toml += &format!("[[source]]\nname = \"{s}\"\npath = \"{s}.jsonl\"\nformat = \"jsonl\"\n");
        for dup in ["keep-last", "keep-first"] {
            toml += &format!(
                "[[table]]\nname = \"{s}_{}\"\nschema = \"dups.json\"\nquery = \"SELECT * FROM {s}\"\non_duplicate_key = \"{dup}\"\n",
                dup.replace('-', "_")
            );
        }
    }
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = release(dir, "edges");
    let last: Vec<(i64, String)> = (0..n / 3).map(|k| (k, format!("a{}", 3 * k + 2))).collect();
    let first: Vec<(i64, String)> = (0..n / 3).map(|k| (k, format!("a{}", 3 * k))).collect();
    assert_eq!(keys(&rel, "asc_keep_last"), last);
    assert_eq!(keys(&rel, "asc_keep_first"), first);
    assert_eq!(keys(&rel, "late_keep_last")[1..], last[..]);
    assert_eq!(keys(&rel, "late_keep_first")[1..], first[..]);
}

#[test]
fn tables_that_read_earlier_tables_know_their_row_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 20,000 rows in no order
    let n = 20_000;
    let rows: String = (0..n).map(|i| line((i * 7919) % n, &format!("v{}", i % 3))).collect();
    write(dir, "rows.jsonl", &rows);
    let records: Vec<String> = (0..50).map(|i| format!("{{\"k\": {}, \"v\": \"r{i}\"}}", (i * 7) % 50)).collect();
    write(dir, "results.json", &format!("{{\"runs\": [{}]}}", records.join(", ")));
    write(dir, "lines.json", &kv_schema(&["k"], "integer"));
    write(dir, "pointers.json", &kv_schema(&["k"], "string"));
    write(
        dir,
        "pipeline.toml",
        "name = \"ordered\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"rows\"\npath = \"rows.jsonl\"\nformat = \"jsonl\"\n\
         [[source]]\nname = \"results\"\npath = \"results.json\"\nformat = \"json\"\nrecord_path = \"/runs\"\n\
         [[table]]\nname = \"t\"\nschema = \"lines.json\"\nquery = \"SELECT * FROM rows\"\n\
         [[table]]\nname = \"again\"\nschema = \"lines.json\"\nquery = \"SELECT * FROM t\"\n\
         [[table]]\nname = \"p\"\nschema = \"pointers.json\"\nquery = \"SELECT * FROM results\"\n\
         [[table]]\nname = \"p_again\"\nschema = \"pointers.json\"\nquery = \"SELECT * FROM p\"\n",
    );
    let o = run(bin().env("RUST_LOG", "info").arg("build").arg(dir).arg("--releases-dir").arg(dir.join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    // the table's file is declared in key order: no second sort
    assert!(log.contains("table again: query in key order, not sorted"), "{log}");
    // JSON Pointers are in document order, not text order: that part is never declared
    assert!(log.contains("table p_again: query and sort input"), "{log}");
    let rel = release(dir, "ordered");
    let ks: Vec<i64> = query(&rel, "SELECT k FROM again").lines().skip(1).map(|l| l.parse().unwrap()).collect();
    assert_eq!(ks, (0..n).collect::<Vec<_>>());
    assert_eq!(
        query(&rel, "SELECT v, count(*) AS n FROM again GROUP BY v ORDER BY v"),
        "v,n\nv0,6667\nv1,6667\nv2,6666\n"
    );
    let text = std::fs::read_to_string(rel.join("jsonl/p_again.jsonl")).unwrap();
    let ks: Vec<i64> =
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["k"].as_i64().unwrap()).collect();
    assert_eq!(ks, (0..50).collect::<Vec<_>>());
}

#[test]
fn sql_without_an_order_gives_the_same_release_every_build() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let lines: String = (0..20_000).map(|i| format!("{{\"g\": \"g{}\", \"x\": {i}}}\n", (i * 7) % 50)).collect();
    write(dir, "a.jsonl", &lines);
    // groups in the order SQL emits them (a card section without ORDER BY), and list items
    // in the order an aggregate meets them, over a source two tables read (so it is staged)
    write(
        dir,
        "pipeline.toml",
        "name = \"det\"\nformats = [\"parquet\", \"jsonl\"]\n[card]\nlicense = \"mit\"\n[[card.section]]\ntitle = \"Per group\"\n\
         query = \"SELECT g, count(*) AS n, sum(x) AS s FROM t GROUP BY g\"\n\
         [[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n\
         [[table]]\nname = \"lists\"\nquery = \"SELECT g, array_agg(x) AS xs FROM s GROUP BY g\"\n",
    );
    let mut builds = Vec::new();
    for i in 0..4 {
        let out = dir.join(format!("out{i}"));
        let o = run(bin().args(["build", "-q"]).arg(dir).arg("--releases-dir").arg(&out));
        assert!(o.status.success(), "{}", stderr(&o));
        builds.push(snapshot_files(&out.join("det/0.1.0")));
    }
    for b in &builds[1..] {
        for (x, y) in builds[0].iter().zip(b) {
            assert!(x == y, "{} differs between two builds", x.0);
        }
    }
}

/// Rows `{"g": g, "k": k, "v": ...}` of groups `g` in order, each of `per` rows whose `k`
/// runs backwards: in order of `g`, not of the key (g, k).
fn grouped_rows(groups: impl Iterator<Item = i64>, per: i64) -> String {
    // (rows of over 100 bytes: the input comes in several batches, staged or not)
    let pad = "x".repeat(100);
    groups
        .flat_map(|g| {
            let pad = pad.clone();
            (0..per).map(move |i| format!("{{\"g\": {g}, \"k\": {}, \"v\": \"{g}-{i}{pad}\"}}\n", per - i))
        })
        .collect()
}

#[test]
fn groups_sorted_before_the_input_ends_give_the_release_a_whole_sort_gives() {
    // rows grouped by the first key column are sorted group by group once the sort holds
    // 32 MiB (or its whole budget, when smaller: the test hook sets it to 8 MB); a group that
    // comes back later undoes that, and the table is built again: in every case the release
    // is the one a sort of everything in memory makes
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"g","type":"integer"},{"name":"k","type":"integer"},{"name":"v","type":"string"}],"primaryKey":["g","k"]}"#,
    );
    // the source's schema types the input (no key)
    write(
        dir,
        "s.json",
        r#"{"fields":[{"name":"g","type":"integer"},{"name":"k","type":"integer"},{"name":"v","type":"string"}]}"#,
    );
    let grouped = grouped_rows(0..1000, 40);
    // the same, then rows of group 7 again (keys of their own)
    let back: String = grouped.clone()
        + &(0..40).map(|i| format!("{{\"g\": 7, \"k\": {}, \"v\": \"back-{i}\"}}\n", 100 + i)).collect::<String>();
    let mut built: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
    for (rows, budget, stage) in [
        (&grouped, None, false),
        (&grouped, Some("8000000"), false),
        (&back, None, false),
        (&back, Some("8000000"), false),
        (&back, Some("8000000"), true),
    ] {
        let case = dir.join(format!("case{}", built.len()));
        write(&case, "t.jsonl", rows);
        std::fs::copy(dir.join("t.json"), case.join("t.json")).unwrap();
        std::fs::copy(dir.join("s.json"), case.join("s.json")).unwrap();
        write(
            &case,
            "pipeline.toml",
            &one_source(
                "g",
                "t.jsonl",
                "jsonl",
                "schema = \"s.json\"\n",
                "SELECT g, k, v FROM raw",
                "schema = \"t.json\"\n",
            ),
        );
        let mut cmd = bin();
        cmd.env("RUST_LOG", "info").arg("build").arg(&case).arg("--releases-dir").arg(case.join("out"));
        if let Some(b) = budget {
            cmd.env("RUNPACK_TEST_SORT_BUDGET", b);
        }
        if stage {
            cmd.arg("--stage-sources");
        }
        let o = run(&mut cmd);
        assert!(o.status.success(), "{}", stderr(&o));
        let log = stderr(&o);
        assert_eq!(log.contains("source raw: streamed into table t"), !stage, "{log}");
        let again = log.contains("rows not grouped by the first key column after all; sorting again");
        assert_eq!(again, budget.is_some() && rows == &back, "{log}");
        let early = log.contains("rows sorted group by group before the input ended");
        assert_eq!(early, budget.is_some() && rows == &grouped, "{log}");
        let rel = release(&case, "g");
        built.push(snapshot_files(&rel.join("data")));
    }
    assert_eq!(built[0], built[1]);
    assert_eq!(built[2], built[3]);
    assert_eq!(built[2], built[4]);
    assert_ne!(built[0], built[2]);
}

/// A step of more rows than a keep rule holds together is said: its records are kept or set
/// aside in parts.
#[test]
fn a_step_too_large_to_keep_whole_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut text = String::new();
    for i in 0..17_000 {
        text.push_str(&format!("{{\"run\": \"r\", \"step\": 1, \"metric\": \"m{i}\", \"value\": 1.0}}\n"));
    }
    text.push_str("{\"run\": \"r\", \"step\": 1, \"metric\": \"m0\", \"value\": 2.0}\n");
    write(dir, "log.jsonl", &text);
    let fields = r#"[{"name":"run","type":"string"},{"name":"step","type":"integer"},{"name":"metric","type":"string"},
        {"name":"value","type":"number"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}]"#;
    write(dir, "t.json", &format!(r#"{{"fields":{fields},"primaryKey":["run","step","metric"]}}"#));
    let table = "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\nrecord_columns = [\"run\", \"step\"]\n";
    let sql = "SELECT run, step, metric, value, _source_file, _source_line FROM raw";
    write(dir, "pipeline.toml", &one_source("big", "log.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said =
        "table t: the step (run=r, step=1) has more than 16,384 rows: its records are kept or set aside in parts";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
}

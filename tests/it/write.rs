//! The write stage: Parquet for every table, JSON Lines copies where the pipeline's `formats`
//! ask for them, and NaN and infinities (kept in Parquet, `null` in the copies, counted).

use crate::util::*;

/// Metrics of two runs, with NaN, +Infinity and -Infinity among the values and in the lists,
/// and text ids that look like numbers.
fn metrics_lines(per_run: i64) -> String {
    let mut out = String::new();
    for run in ["a", "b"] {
        for step in 0..per_run {
            let value = match (run, step) {
                ("a", 1) => "NaN".to_string(),
                ("a", 2) => "Infinity".to_string(),
                ("b", 3) => "-Infinity".to_string(),
                ("b", 4) => "null".to_string(),
                _ => format!("{}.25", step),
            };
            let hist = if (run, step) == ("b", 0) { "[0.5, NaN, Infinity]" } else { "[0.5, 1.5]" };
            out.push_str(&format!(
                "{{\"run\": \"{run}\", \"step\": {step}, \"example_id\": \"{:05}\", \"value\": {value}, \"hist\": {hist}}}\n",
                step * 7
            ));
        }
    }
    out
}

const METRICS_SCHEMA: &str = r#"{"fields":[
  {"name":"run","type":"string","constraints":{"required":true}},
  {"name":"step","type":"integer","constraints":{"required":true}},
  {"name":"example_id","type":"string"},
  {"name":"value","type":"number"},
  {"name":"hist","type":"array","items":{"type":"number"}}
],"primaryKey":["run","step"]}"#;

/// A pipeline whose `metrics` table (split by run) gets JSON Lines copies from the top-level
/// `formats`, and whose `summary` table is Parquet only by its own.
fn pipeline(dir: &std::path::Path, per_run: i64) {
    write(dir, "raw/metrics.jsonl", &metrics_lines(per_run));
    write(dir, "metrics.json", METRICS_SCHEMA);
    write(
        dir,
        "pipeline.toml",
        "name = \"nf\"\nformats = [\"parquet\", \"jsonl\"]\n[card]\nlicense = \"mit\"\n\
         [[source]]\nname = \"m\"\npath = \"raw/metrics.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"metrics\"\nschema = \"metrics.json\"\nsplit_column = \"run\"\nsplits = [\"a\", \"b\"]\n\
         query = \"SELECT run, step, example_id, value, hist FROM m\"\n\
         [[table]]\nname = \"summary\"\nformats = [\"parquet\"]\n\
         query = \"SELECT run, count(*) AS steps, max(value) AS top FROM m GROUP BY run\"\n",
    );
}

#[test]
fn copies_follow_formats_and_hold_null_for_non_finite_values_that_polars_duckdb_and_pandas_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    pipeline(dir, 6);
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nf");
    // copies for metrics alone, split as the Parquet files are
    let copies: Vec<String> = snapshot_files(&r.join("jsonl")).into_iter().map(|(p, _)| p).collect();
    assert_eq!(copies, ["metrics/a.jsonl", "metrics/b.jsonl"]);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["tables"][0]["formats"], serde_json::json!(["parquet", "jsonl"]));
    assert_eq!(m["tables"][1]["formats"], serde_json::json!(["parquet"]));
    assert_eq!(
        m["tables"][0]["nonfinite_values"],
        serde_json::json!({"hist": {"NaN": 1, "Infinity": 1}, "value": {"NaN": 1, "Infinity": 1, "-Infinity": 1}})
    );
    // max(value) of run a is NaN (above every number in SQL): the Parquet-only table keeps it,
    // and the manifest counts it
    assert_eq!(m["tables"][1]["nonfinite_values"], serde_json::json!({"top": {"NaN": 1}}));
    let kinds: Vec<&str> = m["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"croissant.json") && !kinds.iter().any(|p| p.starts_with("jsonl/summary")), "{kinds:?}");
    // the copy says null where Parquet keeps the value
    let a = std::fs::read_to_string(r.join("jsonl/metrics/a.jsonl")).unwrap();
    assert!(a.contains("\"step\":1,\"example_id\":\"00007\",\"value\":null"), "{a}");
    assert!(!a.contains("NaN") && !a.contains("Infinity"), "{a}");
    assert_eq!(
        query(
            &r,
            "SELECT step, value, isnan(value) AS nan FROM metrics WHERE run = 'a' AND step IN (1, 2) ORDER BY step"
        ),
        "step,value,nan\n1,NaN,true\n2,Infinity,false\n"
    );
    // the card says what became null, table by table
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(
        card.contains(
            "- table `metrics`: 5 non-finite values became `null` in the JSON Lines copies: `hist` (1 NaN, 1 \
             +Infinity); `value` (1 NaN, 1 +Infinity, 1 -Infinity). The Parquet files keep them exactly."
        ),
        "{card}"
    );
    assert!(!card.contains("table `summary`: "), "{card}");
    // runpack's own checks, every row included
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // third-party readers: every copy, with the declared types
    let o = run(std::process::Command::new(python()).arg(repo().join("tests/python/read_copies.py")).arg(&r));
    assert!(o.status.success(), "{}", stderr(&o));
    let read: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(read["metrics"]["rows"], 12);
    assert_eq!(read["metrics"]["nulls_for_nonfinite"], 5);
    assert!(read["metrics"]["avg"]["value"].is_f64(), "{read}");
    assert!(read.get("summary").is_none(), "{read}");
    // Frictionless reads the package, which describes metrics alone
    let o = run(std::process::Command::new(python()).arg(repo().join("tests/python/validate_datapackage.py")).arg(&r));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), r#"{"metrics": 12}"#);
}

#[test]
fn sharded_copies_read_the_same_and_verify_data_holds_the_counts_to_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    pipeline(dir, 60);
    let o = build(dir, &["-q", "--max-shard-bytes", "3000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nf");
    let copies: Vec<String> = snapshot_files(&r.join("jsonl")).into_iter().map(|(p, _)| p).collect();
    assert!(copies.len() > 2 && copies.iter().all(|c| c.contains("-of-")), "{copies:?}");
    let parquet: Vec<String> = snapshot_files(&r.join("data/metrics")).into_iter().map(|(p, _)| p).collect();
    assert_eq!(parquet.len(), copies.len(), "{parquet:?} {copies:?}");
    let o = run(std::process::Command::new(python()).arg(repo().join("tests/python/read_copies.py")).arg(&r));
    assert!(o.status.success(), "{}", stderr(&o));
    let read: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(read["metrics"]["rows"], 120);
    assert_eq!(read["metrics"]["nulls_for_nonfinite"], 5);
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));

    // a manifest that announces fewer non-finite values than Parquet holds: the nulls of the
    // copies no longer all stand for them
    let path = r.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replacen("\"-Infinity\": 1", "\"-Infinity\": 2", 1);
    assert_ne!(changed, text);
    std::fs::write(&path, changed).unwrap();
    reseal(&r);
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(
            "table metrics: column value holds 1 NaN, 1 +Infinity, 1 -Infinity in its Parquet files, the manifest's \
             nonfinite_values say 1 NaN, 1 +Infinity, 2 -Infinity"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_copy_whose_value_is_null_where_parquet_holds_a_number_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    pipeline(dir, 6);
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nf");
    let path = r.join("jsonl/metrics/a.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replacen("\"value\":3.25", "\"value\":null", 1);
    assert_ne!(changed, text);
    std::fs::write(&path, changed).unwrap();
    reseal(&r);
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("jsonl/metrics/a.jsonl:4:"), "{}", stdout(&o));
}

#[test]
fn formats_without_parquet_or_with_an_unknown_format_are_refused_with_the_file_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    pipeline(dir, 2);
    let text = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    for (from, to, said) in [
        (
            "formats = [\"parquet\", \"jsonl\"]\n",
            "formats = [\"jsonl\"]\n",
            " (formats): expected \"parquet\" in the list, found [\"jsonl\"]",
        ),
        (
            "formats = [\"parquet\"]\n",
            "formats = [\"parquet\", \"csv\"]\n",
            " (table summary formats): unknown format \"csv\"",
        ),
        (
            "formats = [\"parquet\"]\n",
            "formats = [\"parquet\", \"parquet\"]\n",
            " (table summary formats): \"parquet\" is listed twice",
        ),
    ] {
        // the error names the line of the key
        let changed = text.replacen(from, to, 1);
        write(dir, "pipeline.toml", &changed);
        let said = format!("pipeline.toml:{}{said}", line_at(&changed, changed.find(to).unwrap()));
        let o = build(dir, &["-q"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(&said), "{said}\n{}", stderr(&o));
    }
}

#[test]
fn without_formats_a_release_is_parquet_only_and_still_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    pipeline(dir, 3);
    let text = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &text.replacen("formats = [\"parquet\", \"jsonl\"]\n", "", 1));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nf");
    assert!(!r.join("jsonl").exists());
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("datapackage.json")).unwrap()).unwrap();
    assert_eq!(package["resources"], serde_json::json!([]));
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let o = run(std::process::Command::new(python()).arg(repo().join("tests/python/validate_datapackage.py")).arg(&r));
    assert!(o.status.success(), "{}", stderr(&o));
    // a copy the manifest lists for a Parquet-only table is a problem
    let path = r.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    write(&r, "jsonl/summary.jsonl", "{}\n{}\n");
    m["files"].as_array_mut().unwrap().push(serde_json::json!({
        "path": "jsonl/summary.jsonl", "bytes": 0, "sha256": "", "kind": "jsonl", "table": "summary", "rows": 2
    }));
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    reseal(&r);
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(
            "jsonl/summary.jsonl: a JSON Lines copy of table summary, whose formats (parquet) list no \"jsonl\""
        ),
        "{}",
        stdout(&o)
    );
}

/// `n` rows of a table worth a few MB: keys `0, 10, 20, …`, then the 1 % `extra` rows with
/// keys `5, 15, …` from the key 100,000 on (inserted between the rows, near the start).
fn chunky_lines(n: i64, extra: i64) -> String {
    let words = ["policy", "reward", "kl", "entropy", "advantage", "rollout", "sampler", "grader"];
    let row = |k: i64| {
        let w = |j: i64| words[((k * 7 + j * 13) % 8) as usize];
        format!(
            "{{\"k\": {k}, \"text\": \"{} {} {} at step {k}: {}\", \"score\": {}}}\n",
            w(1),
            w(2),
            w(3),
            k.wrapping_mul(2654435761) % 1_000_003,
            (k % 977) as f64 / 977.0
        )
    };
    let mut keys: Vec<i64> = (0..n).map(|i| i * 10).chain((0..extra).map(|i| 100_000 + i * 10 + 5)).collect();
    keys.sort();
    keys.into_iter().map(row).collect()
}

/// The bytes of every data page of every column of a Parquet file, from its offset index.
fn parquet_pages(file: &std::path::Path) -> Vec<Vec<u8>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let bytes = std::fs::read(file).unwrap();
    let options = parquet::file::serialized_reader::ReadOptionsBuilder::new().with_page_index().build();
    let reader = SerializedFileReader::new_with_options(std::fs::File::open(file).unwrap(), options).unwrap();
    let index = reader.metadata().offset_index().expect("an offset index");
    let mut pages = Vec::new();
    for row_group in index {
        for column in row_group {
            for p in column.page_locations() {
                let at = p.offset as usize;
                pages.push(bytes[at..at + p.compressed_page_size as usize].to_vec());
            }
        }
    }
    pages
}

/// The data pages of a Parquet file that hold no values, as (row group, column).
fn empty_data_pages(file: &std::path::Path) -> Vec<(usize, usize)> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(file).unwrap()).unwrap();
    let mut empty = Vec::new();
    for g in 0..reader.num_row_groups() {
        let group = reader.get_row_group(g).unwrap();
        for c in 0..group.num_columns() {
            let mut pages = group.get_column_page_reader(c).unwrap();
            while let Some(page) = pages.get_next_page().unwrap() {
                if page.page_type() != parquet::basic::PageType::DICTIONARY_PAGE && page.num_values() == 0 {
                    empty.push((g, c));
                }
            }
        }
    }
    empty
}

/// Pages of content-defined chunks are cut by the chunker alone: a value larger than a page
/// (here 1.2 MB) no longer leaves a page of no values after it (apache/arrow-rs#10929; one
/// per value before). The dictionary's spill, upstream, still leaves at most two, at the start
/// of the column chunk (docs/release-format.md); cut by size, none.
#[test]
fn values_larger_than_a_page_leave_no_empty_pages_after_them() {
    let lines: String =
        (0..12).map(|k| format!("{{\"k\": {k}, \"text\": \"{k:03}{}\"}}\n", "abcdefghij".repeat(120_000))).collect();
    for (args, most) in [(&[][..], 2), (&["--no-content-defined-chunking"][..], 0)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        write(dir, "raw/t.jsonl", &lines);
        write(dir, "t.json", r#"{"fields":[{"name":"k","type":"integer"},{"name":"text","type":"string"}]}"#);
        write(
            dir,
            "pipeline.toml",
            &one_source("big", "raw/t.jsonl", "jsonl", "", "SELECT k, text FROM raw", "schema = \"t.json\"\n"),
        );
        let o = build(dir, &[&["-q"][..], args].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        let empty = empty_data_pages(&release(dir, "big").join("data/t.parquet"));
        assert!(empty.len() <= most, "{args:?}: empty pages {empty:?}");
    }
}

/// The share of `before`'s page bytes found unchanged among `after`'s pages.
fn unchanged_share(before: &[Vec<u8>], after: &[Vec<u8>]) -> f64 {
    let seen: std::collections::HashSet<&[u8]> = after.iter().map(|p| p.as_slice()).collect();
    let same: usize = before.iter().filter(|p| seen.contains(p.as_slice())).map(|p| p.len()).sum();
    same as f64 / before.iter().map(|p| p.len()).sum::<usize>() as f64
}

/// Parquet pages are cut where the values' content says (the Hub's "Optimized Parquet"): a
/// table that gains 1 % of rows between its first ones keeps almost every page byte-identical,
/// where pages cut by size all shift after the first new row; both files have a page index.
#[test]
fn content_defined_pages_survive_rows_inserted_near_the_start() {
    let n = 300_000;
    let mut shares = Vec::new();
    for extra_args in [&[][..], &["--no-content-defined-chunking"][..]] {
        let mut pages = Vec::new();
        for extra in [0, n / 100] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            write(dir, "raw/t.jsonl", &chunky_lines(n, extra));
            write(
                dir,
                "t.json",
                r#"{"fields":[{"name":"k","type":"integer"},{"name":"text","type":"string"},{"name":"score","type":"number"}],"primaryKey":["k"]}"#,
            );
            write(
                dir,
                "pipeline.toml",
                &one_source(
                    "cdc",
                    "raw/t.jsonl",
                    "jsonl",
                    "",
                    "SELECT k, text, score FROM raw",
                    "schema = \"t.json\"\n",
                ),
            );
            let o = build(dir, &[&["-q"][..], extra_args].concat());
            assert!(o.status.success(), "{}", stderr(&o));
            let file = release(dir, "cdc").join("data/t.parquet");
            // a page of no values (apache/arrow-rs#10929) is never written
            assert_eq!(empty_data_pages(&file), vec![]);
            let p = parquet_pages(&file);
            assert!(p.len() > 6, "{} pages", p.len());
            pages.push(p);
        }
        shares.push(unchanged_share(&pages[0], &pages[1]));
    }
    let (cdc, fixed) = (shares[0], shares[1]);
    assert!(cdc > 0.8, "content-defined pages: {:.1} % unchanged", cdc * 100.0);
    assert!(fixed < 0.5, "pages cut by size: {:.1} % unchanged", fixed * 100.0);
}

#[test]
fn a_table_the_writer_would_give_a_page_of_no_values_is_written_with_pages_cut_by_size() {
    // a text value over 1 MiB fills the dictionary at its page's end: content-defined, the
    // Parquet writer adds a page of no values (apache/arrow-rs#10929) that pyarrow refuses
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let big = "a".repeat(1_100_000);
    write(dir, "a.jsonl", &format!("{{\"id\": 1, \"blob\": \"{big}\"}}\n{{\"id\": 2, \"blob\": \"short\"}}\n"));
    write(dir, "pipeline.toml", &one_source("big", "a.jsonl", "jsonl", "", "SELECT id, blob FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t: its Parquet pages are cut by size, not by content: with content-defined pages the Parquet writer wrote a page of no values in column `blob`"), "{}", stderr(&o));
    let script = r#"
import sys, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1] + "/data/t.parquet")
print(t.num_rows, sorted(len(b) for b in t.column("blob").to_pylist()))
"#;
    let o = run(std::process::Command::new(python()).arg("-c").arg(python_script(script)).arg(release(dir, "big")));
    assert_eq!(stdout(&o), "2 [5, 1100000]\n", "{}", stderr(&o));
    // a table of short values keeps its content-defined pages, and says nothing
    write(dir, "a.jsonl", "{\"id\": 1, \"blob\": \"x\"}\n");
    let o = build(dir, &["--force"]);
    assert!(o.status.success() && !stderr(&o).contains("cut by size"), "{}", stderr(&o));
}

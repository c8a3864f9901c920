//! The validate stage: constraints, keys, foreign keys, duplicate policies, split names and rejects.

use crate::util::*;

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
    // the row kept for run a is the earlier one: said, in the rejects and the card too
    assert!(rejects.contains("the keep-last rule kept the row at raw.jsonl:1 instead (kept-instead)"), "{rejects}");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(
        card.contains(
            "- warning: t: 1 row set aside (rejects/t.jsonl) was the last of its key, and `on_duplicate_key = \
             \"keep-last\"` kept another row instead: run=a, step=1 at raw.jsonl:2, kept raw.jsonl:1\n"
        ),
        "{card}"
    );
    // a row set aside before the one kept (keep-last), or after it (keep-first), is no such row
    write(
        dir,
        "raw.jsonl",
        "{\"run\": \"c\", \"step\": 1, \"v\": -1.0}\n{\"run\": \"c\", \"step\": 1, \"v\": 4.0}\n\
         {\"run\": \"d\", \"step\": 1, \"v\": -1.0}\n",
    );
    let o = build(dir, &["-q", "--on-invalid", "reject", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(!card.contains("kept another row instead"), "{card}");
    let o = build(dir, &["-q", "--on-invalid", "reject", "--force", "--on-duplicate-key", "keep-first"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("1 row set aside (rejects/t.jsonl) was the first of its key"), "{card}");
}

/// A resumed run's record of a step set aside by its source (`--on-invalid reject`): keep-last
/// then keeps the stopped attempt's record of that step, and a warning says so.
#[test]
fn a_resumed_record_set_aside_by_its_source_is_said_under_keep_last() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "m.jsonl",
        "{\"step\": 3, \"v\": 0.3}\n{\"step\": 4, \"v\": 0.4}\n{\"step\": 4, \"v\": 0.44, \"x\": \"4x\"}\n{\"step\": 5, \"v\": 0.5}\n",
    );
    write(
        dir,
        "src.json",
        r#"{"fields":[{"name":"step","type":"integer"},{"name":"v","type":"number"},{"name":"x","type":"integer"}]}"#,
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"step","type":"integer"},{"name":"v","type":"number"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["step"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"rs\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\nschema = \"src.json\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT step, v, _source_file, _source_line FROM raw\"\n\
         on_duplicate_key = \"keep-last\"\n",
    );
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "t: `on_duplicate_key = \"keep-last\"` chose among the rows its sources kept after invalid ones were \
                set aside (1 row in rejects/raw.jsonl)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let r = release(dir, "rs");
    assert_eq!(
        query(&r, "SELECT step, v, _source_line FROM t ORDER BY step"),
        "step,v,_source_line\n3,0.3,1\n4,0.4,2\n5,0.5,4\n"
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains(said), "{card}");
    // no row set aside: nothing to say
    write(dir, "m.jsonl", "{\"step\": 4, \"v\": 0.4}\n{\"step\": 4, \"v\": 0.44}\n");
    let o = build(dir, &["--on-invalid", "reject", "--force"]);
    assert!(o.status.success() && !stderr(&o).contains("invalid ones were set aside"), "{}", stderr(&o));
}

/// The build lists the first 20 rows a keep rule superseded, and says how many more the rejects
/// file holds.
#[test]
fn superseded_rows_beyond_those_listed_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let lines: String = (0..2).flat_map(|v| (0..30).map(move |k| format!("{{\"k\": {k}, \"v\": {v}}}\n"))).collect();
    write(dir, "m.jsonl", &lines);
    write(
        dir,
        "s.json",
        r#"{"fields":[{"name":"k","type":"integer"},{"name":"v","type":"integer"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":"k"}"#,
    );
    let toml = "name = \"kl\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\n\
                schema = \"s.json\"\nquery = \"SELECT * FROM raw\"\non_duplicate_key = \"keep-last\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("table t: 30 rows superseded by the duplicate-key rule"), "{err}");
    assert!(err.contains("  … and 10 more (rejects/t.jsonl holds each, with its reason)"), "{err}");
}

/// With `--on-invalid reject` and no keep rule, a row set aside for its own reasons makes no
/// valid row a duplicate: the valid one is kept; rows that are all valid share the key still.
#[test]
fn a_valid_row_is_kept_when_the_row_sharing_its_key_is_rejected_for_its_own_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a result merged twice, once in percent; another twice, both valid
    write(dir, "s.csv", "run,bench,acc\na,arc,0.80\na,arc,80.0\nb,arc,0.5\nc,gsm,0.6\nc,gsm,0.7\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"run","type":"string"},{"name":"bench","type":"string"},{"name":"acc","type":"number","constraints":{"maximum":1}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["run","bench"]}"#,
    );
    let toml = "name = \"tw\"\n[[source]]\nname = \"raw\"\npath = \"s.csv\"\nformat = \"csv\"\n\
                [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT * FROM raw\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "tw");
    assert_eq!(query(&r, "SELECT run, acc FROM t ORDER BY run"), "run,acc\na,0.8\nb,0.5\n");
    let rejects = std::fs::read_to_string(r.join("rejects/t.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 3, "{rejects}");
    let first: serde_json::Value = serde_json::from_str(rejects.lines().next().unwrap()).unwrap();
    assert_eq!(first["_source_line"], 3, "{rejects}");
    assert!(first["_reasons"][0].as_str().unwrap().contains("above the maximum 1"), "{rejects}");
    assert!(first["_reasons"][1].as_str().unwrap().contains("2 rows share this primary key: s.csv:2, s.csv:3"));
    // without reject, every row of a shared key is a violation
    let o = build(dir, &["-q", "--force"]);
    assert_violations(&o, 5, &["s.csv:2:run, bench: 2 rows share this primary key: s.csv:2, s.csv:3"]);
    // a `unique` value an earlier row holds is a reason of the row's own
    write(dir, "a.jsonl", "{\"id\": 1, \"tag\": \"A\"}\n{\"id\": 2, \"tag\": \"B\"}\n{\"id\": 2, \"tag\": \"A\"}\n");
    write(
        dir,
        "u.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"tag","type":"string","constraints":{"unique":true}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["id"]}"#,
    );
    let toml = "name = \"tu\"\n[[source]]\nname = \"raw\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n\
                [[table]]\nname = \"t\"\nschema = \"u.json\"\nquery = \"SELECT * FROM raw\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "tu");
    assert_eq!(query(&r, "SELECT id, tag FROM t ORDER BY id"), "id,tag\n1,A\n2,B\n");
    let rejects = std::fs::read_to_string(r.join("rejects/t.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 1, "{rejects}");
    assert!(
        rejects.contains("appears in an earlier row (unique)") && rejects.contains("\"_source_line\":3"),
        "{rejects}"
    );
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
        "name = \"en\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\nschema = \"src.json\"\n\
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
    assert!(
        err.trim_end().ends_with(
            "2 violations found in the sources (the tables' rules are checked once the sources keep to theirs); \
             nothing was written"
        ),
        "{err}"
    );
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
    let toml = "name = \"pn\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
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
    assert!(stderr(&o).contains("rename it in the table's SQL (`… AS \"uri\"`)"), "{}", stderr(&o));
    // a NUL in a name, which the `datasets` library cuts off
    write(
        dir,
        "pipeline.toml",
        &toml
            .replace("schema = \"t.json\"\n", "")
            .replace("SELECT id, uri FROM", "SELECT id, uri AS \\\"u\\u0000ri\\\" FROM"),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t: column \"u\\0ri\" holds a NUL character (U+0000)"), "{}", stderr(&o));
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

/// Rows whose key is null share no key: under keep-last each breaks `required` on its own (one
/// was taken as superseded by the other, and only one was said).
#[test]
fn rows_with_a_null_key_are_each_a_violation_under_keep_last() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "a.jsonl",
        "{\"id\": 1, \"v\": 1}\n{\"id\": null, \"v\": 2}\n{\"id\": null, \"v\": 3}\n{\"id\": 1, \"v\": 4}\n",
    );
    write(
        dir,
        "s.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"v","type":"integer"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "p",
            "a.jsonl",
            "jsonl",
            "",
            "SELECT * FROM raw",
            "schema = \"s.json\"\non_duplicate_key = \"keep-last\"\n",
        ),
    );
    let o = build(dir, &[]);
    assert_violations(&o, 2, &["a.jsonl:2:id: value is null but the field is required", "a.jsonl:3:id: value is null"]);
}

/// A row of a duplicated key whose `_source_line` the query made null has no place in the
/// order a keep rule reads: a `primaryKey` violation, as for a null `_source_file` (it sorted
/// last, and keep-last kept it).
#[test]
fn a_null_source_line_in_a_duplicated_key_is_a_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"id\":1,\"v\":10}\n{\"id\":1,\"v\":11}\n{\"id\":2,\"v\":20}\n{\"id\":2,\"v\":21}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"v","type":"integer"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["id"]}"#,
    );
    let sql = "SELECT id, v, _source_file, CASE WHEN v = 11 OR v = 20 THEN NULL ELSE _source_line END AS _source_line \
               FROM raw";
    let table = "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\n";
    write(dir, "pipeline.toml", &one_source("nl", "a.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &[]);
    assert_violations(&o, 2, &["has no _source_file/_source_line, so the keep-last rule cannot place it"]);
    // rejected, the key keeps its placed row
    let o = build(dir, &["--on-invalid", "reject", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "nl"), "SELECT id, v FROM t ORDER BY id"), "id,v\n1,10\n2,21\n");
}

/// A struct of text beside numbers, stored in a struct column whose member is an integer: a
/// fraction or a NaN in it is a violation, not a value cut or made null (a struct of one
/// member, and a list of such structs, alike).
#[test]
fn a_struct_with_text_beside_a_number_is_held_to_its_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "s.jsonl",
        "{\"id\": 1, \"m\": {\"acc\": 0.75, \"name\": \"a\"}, \"l\": [{\"acc\": 1, \"name\": \"x\"}]}\n\
         {\"id\": 2, \"m\": {\"acc\": NaN, \"name\": \"b\"}, \"l\": [{\"acc\": 2, \"name\": \"y\"}]}\n\
         {\"id\": 3, \"m\": {\"acc\": 2.0, \"name\": \"c\"}, \"l\": [{\"acc\": 2.5, \"name\": \"z\"}]}\n\
         {\"id\": 4, \"m\": {\"acc\": 3.0, \"name\": \"d\"}, \"l\": [{\"acc\": 3, \"name\": \"w\"}]}\n",
    );
    let member = r#"[{"name":"acc","type":"integer"},{"name":"name","type":"string"}]"#;
    write(
        dir,
        "t.json",
        &format!(
            r#"{{"fields":[{{"name":"id","type":"integer"}},{{"name":"m","type":"object","fields":{member}}},{{"name":"l","type":"array","items":{{"type":"object","fields":{member}}}}}],"primaryKey":["id"]}}"#
        ),
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"st\"\n[[source]]\nname = \"s\"\npath = \"s.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, m, l FROM s\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_violations(
        &o,
        3,
        &[
            "m: value {acc: 0.75, name: a} cannot be stored as Struct<acc: Int64, name: Utf8> without changing it",
            "m: value {acc: NaN, name: b} cannot be stored as",
            "l: value [{acc: 2.5, name: z}] cannot be stored as",
        ],
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "st"), "SELECT id, m['acc'] AS acc FROM t ORDER BY id"), "id,acc\n4,3\n");
}

//! The ingest stage: raw JSON Lines, JSON, CSV, Parquet, Tinker and W&B inputs read into rows, and
//! what is said of the records that cannot be.

use crate::util::*;

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
    write(
        dir,
        "m.jsonl",
        "{\"step\": 1, \"name\": \"a\"}\n{\"step\": 2, \"name\": \"first\", \"name\": \"second\"}\n\
         {\"step\": 3, \"name\": \"b\", \"cfg\": {\"lr/x\": [{\"w\": 1, \"w\": 2}]}}\n\
         {\"step\": 4, \"name\": \"c\", \"o\": {\"x\\ny\": {\"q\": 1, \"q\": 1}}}\n",
    );
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
    // inside a nested object: its JSON Pointer
    assert!(
        stderr(&o).contains("m.jsonl:3:$: not valid JSON: key \"w\" appears twice in the object at /cfg/lr~1x/0 ("),
        "{}",
        stderr(&o)
    );
    // a line break in a key is shown escaped
    assert!(stderr(&o).contains("appears twice in the object at /o/x\\ny ("), "{}", stderr(&o));
}

/// Records that are all `{}` are said to name no key, not to be absent.
#[test]
fn records_without_keys_are_said_so() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("e.jsonl");
    std::fs::write(&t, "{}\n{}\n").unwrap();
    let o = run(bin().args(["query", "-q"]).arg(&t).arg("SELECT count(*) FROM t"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "no column: a source's columns come from its records, and the records of e.jsonl name no key (each is {})"
        ),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("declare its columns with --schema (a Table Schema file)"), "{}", stderr(&o));
    // and --schema reads them
    std::fs::write(tmp.path().join("s.json"), r#"{"fields":[{"name":"x","type":"integer"}]}"#).unwrap();
    let o = run(bin()
        .args(["query", "-q", "--format", "csv", "--schema"])
        .arg(tmp.path().join("s.json"))
        .arg(&t)
        .arg("SELECT count(*) AS n, count(x) AS x FROM t"));
    assert_eq!(stdout(&o), "n,x\n2,0\n", "{}", stderr(&o));
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
    assert!(card.contains("| non-finite values read, summed over the sources | 2 |"), "{card}");
    assert_eq!(
        query(&release(dir, "jn"), "SELECT j FROM t"),
        "j\n\"{\"\"x\"\":[\"\"NaN\"\",\"\"-Infinity\"\"],\"\"y\"\":18446744073709551616}\"\n"
    );
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
fn a_column_nested_too_deep_is_named_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = format!("{{\"a\": 2, \"deep\": {}1{}}}\n", "[".repeat(64), "]".repeat(64));
    write(tmp.path(), "d.jsonl", &format!("{{\"a\": 1}}\n{deep}"));
    write(tmp.path(), "pipeline.toml", &one_source("p", "d.jsonl", "jsonl", "", "SELECT a FROM raw", ""));
    let o = build(tmp.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("d.jsonl:2:$.deep: lists and objects nested 64 levels deep"), "{}", stderr(&o));
    // said once, and counted once
    assert_eq!(stderr(&o).matches("levels deep").count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("1 violation found"), "{}", stderr(&o));
    // a query over the raw file keeps the column whole, as JSON text, and says so
    let o = run(bin().arg("query").arg(tmp.path().join("d.jsonl")).args([
        "SELECT count(deep) AS n FROM t",
        "--format",
        "csv",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n1\n");
    assert!(stderr(&o).contains("column `deep` holds values no one column type holds"), "{}", stderr(&o));
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
    // first, before the columns it left without a type
    assert!(
        stderr(&o).contains(
            "(source raw): 2 records of the input could not be read, the first: h.csv:2: row has 4 cells, the header \
             has 3; that may be why these columns have no type:\n$.a: no input file"
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
    assert_eq!(query(&r, "SELECT * FROM t ORDER BY a"), "a,b,b_null\n1,x,false\n2,,true\n,\"\",false\n");
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
    assert_eq!(query(&release(dir, "m"), "SELECT * FROM t"), "a,b,b_null\n1,\"\",false\n");
    // missingValues where no text cell is read is refused, not ignored
    write(dir, "m.jsonl", "{\"a\": 1, \"b\": \"NA\"}\n");
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &toml.replace("m.csv", "m.jsonl").replace("format = \"csv\"", "format = \"jsonl\""));
    schema(r#","missingValues":["NA"]"#);
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("s.json: missingValues applies to the text cells of a `csv` source"), "{}", stderr(&o));
}

/// A source that rejects sets aside a record holding what no column can be made of (an empty
/// key, lists nested too deep), even where that record would be the first to give the column:
/// it is kept in the rejects file and counted, and the other records build.
#[test]
fn a_source_that_rejects_sets_aside_an_empty_key_or_a_nesting_too_deep_that_would_make_a_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
    write(
        dir,
        "r.jsonl",
        &format!(
            "{{\"a\": 1, \"b\": {{\"x\": 1}}}}\n{{\"a\": 2, \"b\": {{\"\": 3}}}}\n{{\"a\": 3, \"\": 3}}\n\
             {{\"a\": 4, \"c\": {deep}}}\n{{\"a\": 5, \"d\": {{\"\": 1}}}}\n{{\"a\": 6}}\n"
        ),
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("rj", "r.jsonl", "jsonl", "on_invalid = \"reject\"\n", "SELECT * FROM raw", ""),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "rj"), "SELECT a FROM t ORDER BY a"), "a\n1\n6\n");
    let rejects = std::fs::read_to_string(release(dir, "rj").join("rejects/raw.jsonl")).unwrap();
    let reasons: Vec<String> = rejects
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["_reasons"].as_array().unwrap().len(), 1, "{l}");
            format!("{}: {}", v["_source_line"], v["_reasons"][0].as_str().unwrap())
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{rejects}");
    // (a struct that has a column already refuses the key as its type; each row one reason)
    assert_eq!(reasons[0], "2: $.b[\"\"]: key not in schema for struct b");
    assert!(reasons[1].starts_with("3: $[\"\"]: the key \"\" (empty) cannot name a column"), "{reasons:?}");
    assert!(reasons[2].starts_with("4: $.c: lists and objects nested 40 levels deep"), "{reasons:?}");
    assert!(reasons[3].starts_with("5: $.d[\"\"]: the key \"\" (empty) cannot name a column"), "{reasons:?}");
    // the table's section in the card says what its source set aside
    let card = std::fs::read_to_string(release(dir, "rj").join("README.md")).unwrap();
    let said = "2 rows; no primary key (rows are not checked for duplicates); 4 rows of source `raw` rejected while \
                reading (in `rejects/raw.jsonl`). Files:";
    assert!(card.contains(said), "{card}");
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
    write(tmp.path(), "pipeline.toml", &one_source("n", "n.jsonl", "jsonl", "", "SELECT x FROM raw", ""));
    let o = build(tmp.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("n.jsonl:2:$.x[\"\"]: the key \"\" (empty)"), "{}", stderr(&o));
    // a query over the raw file keeps the column whole, as JSON text, the empty key in it
    let o = run(bin().args(["query", "--format", "csv"]).arg(tmp.path().join("n.jsonl")).arg("SELECT x FROM t"));
    assert_eq!(stdout(&o), "x\n\"{\"\"a\"\":1}\"\n\"{\"\"\"\":1}\"\n", "{}", stderr(&o));
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
fn a_parquet_source_nonfinite_values_are_counted_and_read_as_null_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // stored NaN and infinities, in a float and a float32 column, and text a number column reads
    let script = "import pyarrow as pa, pyarrow.parquet as pq, sys\n\
                  t = pa.table({'id': [1, 2, 3, 4], \
                  'x': ['1.5', 'NaN', 'inf', '-Infinity'], \
                  'y': pa.array([1.0, float('nan'), 2.0, float('-inf')]), \
                  'z': pa.array([float('inf'), 1.0, 2.0, 3.0], pa.float32()), \
                  'l': [[1.0, float('nan')], [], None, [float('-inf')]], \
                  's': [{'a': 1.0}, {'a': float('inf')}, None, {'a': 2.0}]})\n\
                  pq.write_table(t, sys.argv[1])\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("raw.parquet")));
    assert!(o.status.success(), "{}", stderr(&o));
    let field = "[[source.field]]\nname = \"x\"\ntype = \"number\"\n";
    write(
        dir,
        "pipeline.toml",
        &one_source("pq", "raw.parquet", "parquet", field, "SELECT id, x, y, z, l, s FROM raw", ""),
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // each one named, in the file's order, as it is stored
    let out = stdout(&o) + &stderr(&o);
    let said = "non-finite values read: 9\n  source raw: 9\n    raw.parquet:1:$.z Infinity\n    raw.parquet:1:$.l[1] NaN\n    \
                raw.parquet:2:$.x NaN\n    raw.parquet:2:$.y NaN\n    raw.parquet:2:$.s.a Infinity\n    \
                raw.parquet:3:$.x inf\n    raw.parquet:4:$.x -Infinity\n    raw.parquet:4:$.y -Infinity\n    \
                raw.parquet:4:$.l[0] -Infinity\n";
    assert!(out.contains(said), "{out}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release(dir, "pq").join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["report"]["nonfinite_values"], serde_json::json!({"raw": 9}));
    assert_eq!(
        query(&release(dir, "pq"), "SELECT id, x, y, z FROM t ORDER BY id"),
        "id,x,y,z\n1,1.5,1.0,Infinity\n2,NaN,NaN,1.0\n3,Infinity,2.0,2.0\n4,-Infinity,-Infinity,3.0\n"
    );
    // `nonfinite = "null"` reads them as null, counted the same
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(
        dir,
        "pipeline.toml",
        &toml.replace("format = \"parquet\"\n", "format = \"parquet\"\nnonfinite = \"null\"\n"),
    );
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "pq"), "SELECT id, x, y, z FROM t ORDER BY id"),
        "id,x,y,z\n1,1.5,1.0,\n2,,,1.0\n3,,2.0,2.0\n4,,,3.0\n"
    );
    let nested = "SELECT id, l[2] IS NULL AND array_length(l) = 2 AS l1, s['a'] IS NULL AS sa FROM t ORDER BY id";
    assert_eq!(query(&release(dir, "pq"), nested), "id,l1,sa\n1,true,false\n2,false,true\n3,,true\n4,false,false\n");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release(dir, "pq").join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["tables"][0].get("nonfinite_values"), None, "{manifest}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release(dir, "pq").join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["report"]["nonfinite_values"], serde_json::json!({"raw": 9}));
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
fn a_csv_number_is_held_to_what_json_is_exact_or_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // inferred: a float column (1.5) with an integer a float cannot hold, and a float too large
    // (`1e400` would be text: an integer with an unsigned exponent reads as an id)
    write(dir, "b.csv", "big\n9007199254740993\n1.5\n1e+400\n9007199254740992\ninf\n");
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
    assert!(err.contains("b.csv:4:$.big: number 1e+400 is out of range for a 64-bit float"), "{err}");
    assert!(err.contains("2 violations found"), "{err}");
    // the hint keeps the column's text as it is, and the build goes through
    let hint = "hint: a CSV column of numbers that holds integers beyond ±2^53 (raw.big) keeps them exactly as text \
                when its source declares it so: a [[source.field]] table with name = \"big\" and type = \"string\", \
                each key on a line of its own";
    assert!(err.contains(hint), "{err}");
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    let declared = "format = \"csv\"\n[[source.field]]\nname = \"big\"\ntype = \"string\"\n";
    write(dir, "pipeline.toml", &toml.replace("format = \"csv\"\n", declared));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "p"), "SELECT big FROM t ORDER BY _source_line"),
        "big\n9007199254740993\n1.5\n1e+400\n9007199254740992\ninf\n"
    );
    write(dir, "pipeline.toml", &toml);
    // declared number: the same; what a float holds exactly is kept, inf is an infinity
    write(dir, "b.csv", "big\n9007199254740993\n9007199254740992\ninf\n");
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(
        dir,
        "pipeline.toml",
        &toml.replace("format = \"csv\"\n", "format = \"csv\"\n[[source.field]]\nname = \"big\"\ntype = \"number\"\n"),
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
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
    assert!(stderr(&o).contains("  source raw: 1\n    a_metrics.jsonl:1:$.x NaN"), "{}", stderr(&o));
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
    // each string read as a number is said, with the number
    let o = build(dir, &["--force"]);
    assert!(stderr(&o).contains("trajectories.jsonl:1:$.reward string \"1.0\" read as 1"), "{}", stderr(&o));
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
    assert!(stderr(&o).contains("pipeline.toml:3 (source raw): "), "{}", stderr(&o));
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
    // a file with a column of the name runpack gives each row's file (a release's own data)
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  pq.write_table(pa.table({'_source_file': ['x'], 'a': [3]}), sys.argv[1] + '/p/2.parquet')\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "p/2.parquet: the data has a column named _source_file, which runpack adds to every source's rows"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn integers_on_both_sides_of_int64_are_kept_exactly_as_the_hint_says() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "seed.jsonl", "{\"seed\": -1}\n{\"seed\": 18446744073709551615}\n");
    write(dir, "pipeline.toml", &one_source("s", "seed.jsonl", "jsonl", "", "SELECT seed FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(stderr(&o).contains("declare the column's type as `any` to keep both exactly"), "{}", stderr(&o));
    // a query over the raw file does so itself, and says it
    let o = run(bin().args(["query", "--format", "csv"]).arg(dir.join("seed.jsonl")).arg("SELECT seed FROM t"));
    assert_eq!(stdout(&o), "seed\n-1\n18446744073709551615\n", "{}", stderr(&o));
    assert!(stderr(&o).contains("column `seed` holds values no one column type holds"), "{}", stderr(&o));
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
        "name = \"cj\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"s\"\npath = \"a.csv\"\nformat = \"csv\"\n\
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
    // `./` names the pipeline folder, as `.` does: the glob to write is said
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"lit\"\n[[source]]\nname = \"raw\"\npath = \"./\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT x FROM raw\"\n",
    );
    let o = build(tmp.path(), &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no file matches [\"./\"]"), "{}", stderr(&o));
    assert!(stderr(&o).contains("name its files with a glob, such as \"./*.jsonl\""), "{}", stderr(&o));
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
    let said =
        "warning: raw: [[source.field]] `scroe` is a key no record has: null in all 2 rows kept (a misspelled key?)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "sf").join("README.md")).unwrap();
    assert!(card.contains("[[source.field]] `scroe` is a key no record has: null in all 2 rows kept"), "{card}");
    // a field some record holds is not warned of, null elsewhere or not
    write(dir, "pipeline.toml", &one_source("sf", "s.jsonl", "jsonl", &field("score"), "SELECT * FROM raw", ""));
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("misspelled"), "{}", stderr(&o));
    // nor a key every record has with null (the data says null), read line by line (the fast
    // path), as one JSON document (the general one) or as CSV; a missing key still is
    write(dir, "s.jsonl", "{\"step\": 1, \"best\": null}\n{\"step\": 2, \"best\": null}\n");
    write(dir, "s.json", "[{\"step\": 1, \"best\": null}, {\"step\": 2, \"best\": null, \"x\": [1]}]");
    write(dir, "s.csv", "step,best\n1,\n2,\n");
    for (file, format) in [("s.jsonl", "jsonl"), ("s.json", "json"), ("s.csv", "csv")] {
        let fields = field("best") + &field("bset");
        write(dir, "pipeline.toml", &one_source("sf", file, format, &fields, "SELECT step, best, bset FROM raw", ""));
        let o = build(dir, &["--force"]);
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        assert!(!stderr(&o).contains("`best`"), "{format}: {}", stderr(&o));
        assert!(stderr(&o).contains("`bset` is a key no record has"), "{format}: {}", stderr(&o));
    }
}

#[test]
fn a_compressed_stream_that_breaks_is_a_violation_at_the_line_it_could_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gzip = |text: &str| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        gz[..gz.len() / 2].to_vec()
    };
    let lines: String = (1..=50_000).map(|i| format!("{{\"k\": {i}, \"s\": \"row {i} of some text\"}}\n")).collect();
    let csv: String =
        std::iter::once("k,s\n".to_string()).chain((1..=50_000).map(|i| format!("{i},row {i}\n"))).collect();
    let zst = zstd::encode_all(lines.as_bytes(), 3).unwrap();
    for (name, format, bytes, why) in [
        ("m.jsonl.gz", "jsonl", gzip(&lines), "incomplete deflate stream"),
        ("m.jsonl.zst", "jsonl", zst[..zst.len() / 2].to_vec(), "incomplete frame"),
        // compression is told by the bytes, whatever the name
        ("m.jsonl", "jsonl", gzip(&lines), "incomplete deflate stream"),
        // a CSV file's rows after the break are not lost as one rejected row
        ("m.csv.gz", "csv", gzip(&csv), "incomplete deflate stream"),
    ] {
        std::fs::write(dir.join(name), bytes).unwrap();
        write(dir, "pipeline.toml", &one_source("p", name, format, "", "SELECT k FROM raw", ""));
        // broken data: exit 1, even when bad rows are set aside, and the lines before it are
        // counted in the message
        let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let err = stderr(&o);
        let line = err.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{err}"));
        let (place, rest) = line.split_once(": ").unwrap();
        let at: u64 = place.rsplit(':').next().unwrap().parse().unwrap();
        assert!(at > 1 && at < 50_000, "{line}");
        assert!(
            rest.starts_with(&format!("the compressed stream breaks after line {}: ", grouped(at - 1)))
                && rest.contains(why)
                && rest.ends_with("(source raw, rule compressed)"),
            "{line}"
        );
        std::fs::remove_file(dir.join(name)).unwrap();
    }
    // a YAML document: no line to name
    let yaml: String =
        std::iter::once("a: 1\n".to_string()).chain((0..20_000).map(|i| format!("k{i}: {i}\n"))).collect();
    std::fs::write(dir.join("c.yaml.gz"), gzip(&yaml)).unwrap();
    write(dir, "pipeline.toml", &one_source("p", "c.yaml.gz", "yaml", "", "SELECT a FROM raw", ""));
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("c.yaml.gz: the compressed stream breaks before the end of the document: "),
        "{}",
        stderr(&o)
    );
}

/// `n` with its thousands grouped by commas, as runpack writes counts (`1,234`).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_file_name_with_a_line_break_is_escaped_in_a_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/new\nline.jsonl", "{\"a\": 1}\n{\"a\": \"x\"}\n");
    write(dir, "pipeline.toml", &one_source("p", "raw/*.jsonl", "jsonl", "", "SELECT a FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // one violation, one line
    let first = stderr(&o).lines().next().unwrap().to_string();
    assert!(first.starts_with("raw/new\\nline.jsonl:2:$.a: expected integer, found string"), "{}", stderr(&o));
    assert!(first.ends_with("(source raw, rule type)"), "{}", stderr(&o));
}

#[test]
fn a_failed_build_says_its_inputs_were_empty_or_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a file copied under a second name: its rows come twice and break the key
    write(dir, "raw/a.jsonl", "{\"id\": 1}\n{\"id\": 2}\n");
    write(dir, "raw/copy-of-a.jsonl", "{\"id\": 1}\n{\"id\": 2}\n");
    write(dir, "raw/late.jsonl", "");
    write(dir, "t.json", r#"{"fields":[{"name":"id","type":"integer"}],"primaryKey":["id"]}"#);
    write(
        dir,
        "pipeline.toml",
        &one_source("p", "raw/*.jsonl", "jsonl", "", "SELECT id FROM raw", "schema = \"t.json\"\n"),
    );
    let alike = "source raw read 2 files with the same bytes (";
    let empty = "source raw read 1 empty file (0 bytes, no record): raw/late.jsonl";
    let o = build(dir, &[]);
    assert_violations(&o, 4, &["rule primaryKey", alike, "raw/a.jsonl, raw/copy-of-a.jsonl; the rows", empty]);
    // said once each, before the violations (as a build that stops says its warnings), and in
    // the JSON document
    assert_eq!(stderr(&o).matches(alike).count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).find(empty).unwrap() < stderr(&o).find("rule primaryKey").unwrap(), "{}", stderr(&o));
    // rows that no _source_* column places are told apart by their rank: no line said twice
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("rule primaryKey")).collect();
    assert_eq!(said.len(), 4, "{}", stderr(&o));
    assert!(said[0].contains("2 rows share this primary key; this is row 1 of them, which no"), "{}", stderr(&o));
    assert_eq!(said.iter().collect::<std::collections::BTreeSet<_>>().len(), 4, "{}", stderr(&o));
    let o = build(dir, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kinds: Vec<&str> = doc["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["empty-input", "identical-inputs"], "{doc:#}");
    // -q says none
    let o = build(dir, &["-q"]);
    assert!(!stderr(&o).contains(alike) && !stderr(&o).contains(empty), "{}", stderr(&o));
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
    // bytes but no record: blank lines, a gzip stream of nothing
    write(dir, "d.jsonl", "\n  \n\n");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, b"").unwrap();
    std::fs::write(dir.join("e.jsonl.gz"), gz.finish().unwrap()).unwrap();
    write(dir, "pipeline.toml", &one_source("p", "*.jsonl*", "jsonl", "", "SELECT k FROM raw", ""));
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "source raw read 2 files with bytes but no record (blank lines only, or compressed data of nothing): \
             d.jsonl, e.jsonl.gz"
        ),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(dir.join("d.jsonl")).unwrap();
    std::fs::remove_file(dir.join("e.jsonl.gz")).unwrap();
    write(dir, "pipeline.toml", &one_source("p", "*.jsonl", "jsonl", "", "SELECT k FROM raw", ""));
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
        stderr(&o).contains("metrics.jsonl:1: raw: 2 metric values are no float (text, a boolean, a list, an object, or an integer beyond 2^53 that a float would round): kept in `value_text`"),
        "{}",
        stderr(&o)
    );
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
fn paths_that_are_not_utf8_are_refused_by_build_and_left_out_by_init() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    // two names whose bytes differ only where they are not UTF-8: read as text, both are "r\u{FFFD}"
    for (byte, v) in [(0xFE_u8, "f1"), (0xFF, "f2")] {
        let run = dir.join("raw").join(std::ffi::OsStr::from_bytes(&[b'r', byte]));
        if std::fs::create_dir_all(&run).is_err() {
            return; // a file system that refuses such names has none to read
        }
        write(&run, "a.jsonl", &format!("{{\"step\": 1, \"v\": \"{v}\"}}\n"));
    }
    write(&dir, "pipeline.toml", &one_source("r", "raw/{run}/a.jsonl", "jsonl", "", "SELECT * FROM raw", ""));
    let o = build(&dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("raw/r\\xFE/a.jsonl: path pattern \"raw/{run}/a.jsonl\" matches a file whose path is not UTF-8"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("out").exists(), "no release");
    // init leaves such files out, each named with the reason, and reads the others
    write(&dir.join("raw/ok"), "a.jsonl", "{\"step\": 1, \"v\": \"f3\"}\n");
    let o =
        run(bin().current_dir(tmp.path()).arg("init").arg(dir.join("raw")).args(["--name", "r", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let left_out: Vec<&str> = doc["not_read"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["reason"].as_str().unwrap().starts_with("its path is not UTF-8"))
        .map(|n| n["file"].as_str().unwrap())
        .collect();
    assert_eq!(left_out, ["r\\xFE/a.jsonl", "r\\xFF/a.jsonl"], "{doc}");
}

#[test]
fn a_long_layout_record_of_ids_only_is_kept_and_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "d.jsonl", "{\"step\": 1, \"a\": 1.5}\n{\"step\": 7}\n");
    let toml = "name = \"lo\"\n[[source]]\nname = \"s\"\npath = \"d.jsonl\"\nformat = \"jsonl\"\nlayout = \"long\"\nid_columns = [\"step\"]\n[[table]]\nname = \"t\"\nquery = \"SELECT step, key, value FROM s\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "lo"), "SELECT * FROM t ORDER BY step"), "step,key,value\n1,a,1.5\n7,,\n");
    // its id is checked as any: a step that is no integer is a violation at its line
    write(dir, "d.jsonl", "{\"step\": 1, \"a\": 1.5}\n{\"step\": \"x\"}\n");
    let o = build(dir, &["-q", "--force"]);
    assert_violations(&o, 1, &["d.jsonl:2:$.step: expected integer, found string \"x\""]);
}

#[test]
fn a_struct_with_members_of_one_name_is_refused_with_its_column_not_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  s = pa.StructArray.from_arrays([pa.array([1]), pa.array([2])], names=['x', sys.argv[2]])\n\
                  pq.write_table(pa.Table.from_arrays([pa.array([1]), s], names=['id', 's']), sys.argv[1])\n";
    for (member, said) in
        [("x", "holds a struct with two members named `x`"), ("", "holds a struct with a member of empty name")]
    {
        let o =
            run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("raw/d.parquet")).arg(member));
        assert!(o.status.success(), "{}", stderr(&o));
        let toml = "name = \"st\"\n[[source]]\nname = \"src\"\npath = \"raw/d.parquet\"\nformat = \"parquet\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM src\"\n";
        write(dir, "pipeline.toml", toml);
        let o = build(dir, &["-q", "--force"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(&format!("raw/d.parquet: column `s` {said}")), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    // a query that makes one
    write(dir, "d.jsonl", "{\"a\": 1}\n");
    let toml = "name = \"st\"\n[[source]]\nname = \"src\"\npath = \"d.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT named_struct('x', a, 'x', a) AS s FROM src\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("table t: column `s` holds a struct with two members named `x`; name its members apart"),
        "{}",
        stderr(&o)
    );
    // a column of empty name is said as such (no schema names it)
    write(dir, "pipeline.toml", &toml.replace("named_struct('x', a, 'x', a) AS s", "a AS \\\"\\\""));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t: a column has an empty name"), "{}", stderr(&o));
}

/// A CSV file with a quoted cell never closed cannot be read on from: the problems of the
/// rows before it are said first, then the quote, and the count says where reading stopped.
#[test]
fn the_rows_before_an_unclosed_csv_quote_have_their_problems_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.csv", "step,v\n1,1.0\n2,x\n3,3.0\n4,y\n5,\"open\n6,6\n");
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "p",
            "a.csv",
            "csv",
            "[[source.field]]\nname = \"v\"\ntype = \"number\"\n",
            "SELECT * FROM raw",
            "",
        ),
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("a.csv:3:$.v: expected number, found string \"x\""), "{err}");
    assert!(lines[1].starts_with("a.csv:5:$.v: expected number, found string \"y\""), "{err}");
    assert!(lines[2].starts_with("a.csv:6: a quoted cell opened in this record is never closed"), "{err}");
    assert!(lines[3].starts_with("3 violations found before reading stopped"), "{err}");
}

/// Several sets of files alike in one source, and files alike that two sources read, are
/// said in one warning (a copied folder of runs gave a warning per file and per source).
#[test]
fn files_alike_are_said_in_one_warning_per_source() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for run in ["a", "b"] {
        write(dir, &format!("raw/{run}/metrics.jsonl"), "{\"step\": 1, \"loss\": 0.5}\n");
        write(dir, &format!("raw/{run}/evals.jsonl"), "{\"step\": 1, \"acc\": 0.5}\n");
    }
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "p",
            "raw/{run}/*.jsonl",
            "jsonl",
            "columns = \"union\"\n",
            "SELECT * FROM raw",
            "[[source]]\nname = \"again\"\npath = \"raw/{run}/*.jsonl\"\nformat = \"jsonl\"\ncolumns = \"union\"\n\
             [[table]]\nname = \"u\"\nquery = \"SELECT * FROM again\"\n",
        ),
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("with the same bytes")).collect();
    assert_eq!(said.len(), 1, "{}", stderr(&o));
    assert!(
        said[0].starts_with(
            "warning: again: sources again, raw read files with the same bytes, in 2 sets: raw/a/evals.jsonl, raw/b/evals.jsonl ("
        ),
        "{}",
        said[0]
    );
}

/// A last line cut inside a character (its last bytes begin a UTF-8 sequence) is a line cut
/// short (rule `truncated`), not text in another encoding: `on_truncated = "reject"` sets it
/// aside.
#[test]
fn a_last_line_cut_inside_a_character_is_truncated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir).unwrap();
    let mut bytes = b"{\"step\": 1, \"note\": \"caf\xc3\xa9\"}\n{\"step\": 2, \"note\": \"caf".to_vec();
    bytes.push(0xC3);
    std::fs::write(dir.join("a.jsonl"), bytes).unwrap();
    write(dir, "pipeline.toml", &one_source("p", "a.jsonl", "jsonl", "", "SELECT * FROM raw", ""));
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a.jsonl:2:$: truncated last line (it ends without a newline inside a character"),
        "{}",
        stderr(&o)
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("p", "a.jsonl", "jsonl", "on_truncated = \"reject\"\n", "SELECT * FROM raw", ""),
    );
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_source_sets_its_own_bad_records_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a generation dump whose scorer failed on one sample, and a line that is not JSON
    write(
        dir,
        "gen/a.jsonl",
        "{\"i\": 1, \"score\": 0.5}\n{\"i\": 2, \"score\": \"error: timeout\"}\n{\"i\": 3, \"score\"\n{\"i\": 4, \"score\": 1.0}\n",
    );
    write(dir, "cfg/b.jsonl", "{\"i\": 1, \"lr\": 0.1}\n{\"i\": 2, \"lr\": \"high\"}\n");
    let toml = |a: &str, b: &str| {
        format!(
            "name = \"s\"\n[[source]]\nname = \"a\"\npath = \"gen/*.jsonl\"\nformat = \"jsonl\"\n{a}\
             [[source.field]]\nname = \"score\"\ntype = \"number\"\n\
             [[source]]\nname = \"b\"\npath = \"cfg/*.jsonl\"\nformat = \"jsonl\"\n{b}\
             [[source.field]]\nname = \"lr\"\ntype = \"number\"\n\
             [[table]]\nname = \"t\"\nquery = \"SELECT i, score FROM a\"\n\
             [[table]]\nname = \"u\"\nquery = \"SELECT i, lr FROM b WHERE lr IS NOT NULL\"\n"
        )
    };
    // the source's choice wins over the build's: a's records are set aside, b's fail the build
    write(dir, "pipeline.toml", &toml("on_invalid = \"reject\"\n", ""));
    let o = build(dir, &[]);
    assert_violations(&o, 1, &["cfg/b.jsonl:2:$.lr: expected number, found string \"high\""]);
    assert!(!stderr(&o).contains("gen/a.jsonl"), "{}", stderr(&o));
    write(dir, "pipeline.toml", &toml("on_invalid = \"reject\"\n", "on_invalid = \"fail\"\n"));
    let o = build(dir, &["--force", "--on-invalid", "reject"]);
    assert_violations(&o, 1, &["cfg/b.jsonl:2:$.lr: expected number, found string \"high\""]);
    write(dir, "pipeline.toml", &toml("on_invalid = \"reject\"\n", "on_invalid = \"reject\"\n"));
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = release(dir, "s");
    assert_eq!(query(&rel, "SELECT i, score FROM t ORDER BY i"), "i,score\n1,0.5\n4,1.0\n");
    let rejects = std::fs::read_to_string(rel.join("rejects/a.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 2, "{rejects}");
    assert!(rejects.contains("error: timeout") && rejects.contains("gen/a.jsonl"), "{rejects}");
    // a word that is none of the two is said with what it takes
    write(dir, "pipeline.toml", &toml("on_invalid = \"skip\"\n", ""));
    let o = build(dir, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pipeline.toml:6:14: unknown variant `skip`, expected `fail` or `reject`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn members_a_struct_gains_after_its_first_value_are_one_warning() {
    // verl's FileLogger: the first record holds few of the metrics the later ones hold
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let later: Vec<String> = (0..6).map(|i| format!("\"actor/m{i}\": {i}.5")).collect();
    write(
        dir,
        "raw/log.jsonl",
        &format!(
            "{{\"step\": 0, \"data\": {{\"val/acc\": 0.1}}}}\n{{\"step\": 1, \"data\": {{\"val/acc\": 0.2, {}}}, \"meta\": {{}}}}\n\
             {{\"step\": 2, \"data\": {{}}, \"meta\": {{\"retry\": 1}}}}\n",
            later.join(", ")
        ),
    );
    write(dir, "pipeline.toml", &one_source("w", "raw/log.jsonl", "jsonl", "", "SELECT step, data FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("added")).collect();
    assert_eq!(
        said,
        [
            "warning: raw/log.jsonl:2: raw: struct $.data: 6 fields added after its first value (nullable, null in \
             the rows before): $.data[\"actor/m0\"], $.data[\"actor/m1\"], $.data[\"actor/m2\"] and 3 more; the \
             first seen here",
            "warning: raw/log.jsonl:3: raw: struct field $.meta.retry added (nullable); first seen here"
        ],
        "{err}"
    );
}

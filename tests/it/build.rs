//! `runpack build`: pipeline definitions, tables' SQL, conformed and sorted rows, failed builds.

use crate::util::*;

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
    // named by its key, as the table's other rules name a row (the query keeps no raw line)
    assert!(
        err.contains(
            "x: value 9007199254740993 cannot be stored as Float64 without changing it (table t, key id=2, rule type)"
        ),
        "{err}"
    );
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
    assert!(stderr(&o).contains("pipeline.toml:8 (table t schema): schema \""), "{}", stderr(&o));
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
fn a_json_lines_copy_reads_back_with_its_schema_non_finite_numbers_as_null() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"k\":1,\"x\":NaN}\n{\"k\":2,\"x\":-0.0}\n{\"k\":3,\"x\":-Infinity}\n");
    let copies = "formats = [\"parquet\", \"jsonl\"]\n";
    write(dir, "pipeline.toml", &one_source("nf", "raw.jsonl", "jsonl", "", "SELECT k, x FROM raw", copies));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nf");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(r.join("manifest.json")).unwrap()).unwrap();
    write(dir, "t.json", &m["tables"][0]["schema"].to_string());
    let copy = r.join("jsonl/t.jsonl");
    // the copy holds null where Parquet keeps the value, and the manifest counts them
    assert_eq!(
        std::fs::read_to_string(&copy).unwrap(),
        "{\"k\":1,\"x\":null}\n{\"k\":2,\"x\":-0.0}\n{\"k\":3,\"x\":null}\n"
    );
    assert_eq!(m["tables"][0]["nonfinite_values"], serde_json::json!({"x": {"NaN": 1, "-Infinity": 1}}));
    let sql = "SELECT k, x, x IS NULL AS gone FROM t ORDER BY k";
    assert_eq!(
        query_with(&copy, sql, &["--schema", dir.join("t.json").to_str().unwrap()]),
        "k,x,gone\n1,,true\n2,-0.0,false\n3,,true\n",
        "the copy reads with its schema"
    );
    let sql = "SELECT k, x, x = 'NaN'::double AS nan FROM t ORDER BY k";
    assert_eq!(query(&r, sql), "k,x,nan\n1,NaN,true\n2,-0.0,false\n3,-Infinity,false\n");
    // the card says which tables keep each row's file and line: this one does not
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("No table keeps the raw file and line of its rows"), "{card}");
    assert!(!card.contains("`_source_line`"), "{card}");
}

#[test]
fn build_says_what_a_pipeline_is_when_given_something_else() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "raw.jsonl", "{\"a\": 1}\n");
    let o = run(bin().arg("build").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(": no pipeline.toml in this folder: a pipeline is a folder holding pipeline.toml"));
    // a folder of raw outputs: init writes the pipeline
    assert!(stderr(&o).contains(&format!("`runpack init {}` writes one", tmp.path().display())), "{}", stderr(&o));
    let o = run(bin().arg("build").arg(tmp.path().join("raw.jsonl")));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("raw.jsonl: a pipeline is a pipeline.toml file or the folder holding it"));
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
        "name = \"nan\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT -reward AS loss, id FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(tmp.path(), "nan");
    // sorted by every column: NaN (stored with its sign bit clear) above every number
    assert_eq!(
        std::fs::read_to_string(r.join("jsonl/t.jsonl")).unwrap(),
        "{\"loss\":-0.5,\"id\":2}\n{\"loss\":2.0,\"id\":3}\n{\"loss\":null,\"id\":1}\n"
    );
    assert_eq!(query(&r, "SELECT id, isnan(loss) AS nan FROM t"), "id,nan\n2,false\n3,false\n1,true\n");
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

/// A member the schema declares and the query's struct leaves out is refused, as a column
/// left out is, with a fix that builds; in a list of structs too.
#[test]
fn a_declared_struct_member_the_query_leaves_out_is_refused_with_a_fix_that_works() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.jsonl", "{\"id\": 1, \"a\": 2}\n");
    write(
        tmp.path(),
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},
            {"name":"o","type":"object","fields":[{"name":"a","type":"integer"},{"name":"b","type":"integer"}]},
            {"name":"l","type":"array","items":{"type":"object","fields":[{"name":"a","type":"integer"},{"name":"c","type":"string"}]}}]}"#,
    );
    let pipeline = |o: &str, l: &str| {
        format!(
            "name = \"st\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\n\
             schema = \"t.json\"\nquery = \"SELECT id, {o} AS o, {l} AS l FROM s\"\n"
        )
    };
    let full_l = "[named_struct('a', a, 'c', 'x')]";
    write(tmp.path(), "pipeline.toml", &pipeline("named_struct('a', a)", full_l));
    let o = build(tmp.path(), &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the query's struct has no member `b`: add it (`named_struct(…, 'b', CAST(NULL AS …))`")
    );
    let full_o = "named_struct('a', a, 'b', CAST(NULL AS BIGINT))";
    write(tmp.path(), "pipeline.toml", &pipeline(full_o, "[named_struct('a', a)]"));
    let o = build(tmp.path(), &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("column `l` is List<Struct<a: Int64>> in the query"), "{}", stderr(&o));
    assert!(stderr(&o).contains("the query's struct has no member `c`"), "{}", stderr(&o));
    // a member of a struct inside the struct: named where it goes
    write(
        tmp.path(),
        "t2.json",
        r#"{"fields":[{"name":"id","type":"integer"},
            {"name":"o","type":"object","fields":[{"name":"a","type":"integer"},{"name":"c","type":"object","fields":[{"name":"x","type":"integer"},{"name":"y","type":"integer"}]}]}]}"#,
    );
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"st\"\n[[source]]\nname = \"s\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\n\
         schema = \"t2.json\"\nquery = \"SELECT id, named_struct('a', a, 'c', named_struct('x', id)) AS o FROM s\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(
        stderr(&o).contains("no member `c.y`: add it inside `c`'s named_struct (`named_struct(…, 'y', CAST(NULL AS"),
        "{}",
        stderr(&o)
    );
    write(tmp.path(), "pipeline.toml", &pipeline(full_o, full_l));
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(tmp.path(), "st"), "SELECT o.b IS NULL AS b, l[1]['c'] AS c FROM t"), "b,c\ntrue,x\n");
    let o = run(bin().args(["query", "-q"]).arg(release(tmp.path(), "st")).arg("SELECT l[1].c FROM t"));
    assert!(
        stderr(&o).contains(
            "hint: after an index or a function call, DataFusion 55 reads a struct's member in brackets only"
        ),
        "{}",
        stderr(&o)
    );
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

#[test]
fn a_card_without_a_licence_or_with_a_todo_is_said_after_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "raw.jsonl", "{\"a\": 1}\n");
    let pipeline = one_source("c", "raw.jsonl", "jsonl", "", "SELECT a FROM raw", "");
    write(tmp.path(), "pipeline.toml", &pipeline);
    let o = run(bin().arg("build").arg(tmp.path()).arg("--releases-dir").arg(tmp.path().join("r1")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: the card has no licence"), "{}", stderr(&o));
    // init's placeholders left in place
    let todo = format!("{pipeline}[card]\nlicense = \"mit\"\ndescription = \"TODO: what these runs are.\"\n");
    write(tmp.path(), "pipeline.toml", &todo);
    let o = run(bin().arg("build").arg(tmp.path()).arg("--releases-dir").arg(tmp.path().join("r2")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("no licence"), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: the card's description still holds a TODO"), "{}", stderr(&o));
    // a finished card: nothing said of it, and nothing of it in the release; its column without a
    // description is named
    write(tmp.path(), "pipeline.toml", &todo.replace("TODO: what", "What"));
    let o = run(bin().arg("build").arg(tmp.path()).arg("--releases-dir").arg(tmp.path().join("r3")));
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "note: the card says nothing of column a of table t: give the table a schema (`schema` in its \
                [[table]]) with a `description` for each";
    let notes = stderr(&o).lines().filter(|l| l.starts_with("note:")).count();
    assert!(stderr(&o).contains(said) && notes == 1, "{}", stderr(&o));
}

/// A source that cannot be read on from stops the reading: the violations of the sources read
/// before it are kept with its own, and the count says what was not checked.
#[test]
fn a_source_that_stops_the_reading_keeps_the_violations_before_it_and_says_the_count_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"id\": 1}\n{\"id\": \"two\"}\n");
    write(dir, "b.json", "{\"rows\": [{\"id\": 1}, {\"id\": 2,]}");
    write(dir, "c.jsonl", "{\"id\": \"never read\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"st\"\n\
         [[source]]\nname = \"a\"\npath = \"a.jsonl\"\nformat = \"jsonl\"\n\
         [[source.field]]\nname = \"id\"\ntype = \"integer\"\n\
         [[source]]\nname = \"b\"\npath = \"b.json\"\nformat = \"json\"\nrecord_path = \"/rows\"\n\
         [[source]]\nname = \"c\"\npath = \"c.jsonl\"\nformat = \"jsonl\"\n\
         [[source.field]]\nname = \"id\"\ntype = \"integer\"\n\
         [[table]]\nname = \"ta\"\nquery = \"SELECT * FROM a\"\n\
         [[table]]\nname = \"tb\"\nquery = \"SELECT * FROM b\"\n\
         [[table]]\nname = \"tc\"\nquery = \"SELECT * FROM c\"\n",
    );
    // streamed into their tables or staged first alike
    for staging in [false, true] {
        let args: &[&str] = if staging { &["-q", "--stage-sources"] } else { &["-q"] };
        let o = build(dir, args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        check_stopped(&stderr(&o));
    }
    let o = build(dir, &["-q", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((doc["violations_total"].as_u64(), doc["violations_checked"].as_str()), (Some(2), Some("up_to_source")));
    // the violation that stopped the reading is shown whatever --max-errors leaves out
    let o = build(dir, &["-q", "--max-errors", "1"]);
    let err = stderr(&o);
    assert!(err.contains("b.json:1:column 31: not valid JSON"), "{err}");
    assert!(err.contains("... and 1 more (2 violations in all"), "{err}");
}

fn check_stopped(err: &str) {
    assert!(err.contains("a.jsonl:2:$.id: expected integer, found string \"two\" (source a, rule type)"), "{err}");
    assert!(err.contains("b.json:1:column 31: not valid JSON: key must be a string (source b, rule json)"), "{err}");
    assert!(!err.contains("at line 1 column 31"), "the place is said once: {err}");
    assert!(!err.contains("never read"), "{err}");
    assert!(
        err.trim_end().ends_with(
            "2 violations found before reading stopped at a source it cannot read on from (the sources after it \
             and the tables were not checked); nothing was written"
        ),
        "{err}"
    );
}

#[test]
fn a_version_windows_keeps_for_a_device_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "s.jsonl", "{\"step\": 1}\n");
    write(dir, "pipeline.toml", &one_source("dev", "s.jsonl", "jsonl", "", "SELECT step FROM raw", ""));
    for version in ["con", "NUL", "com1", "aux.2"] {
        let o = build(dir, &["-q", "--release-version", version]);
        assert_eq!(o.status.code(), Some(2), "{version}: {}", stderr(&o));
        let said = format!("--release-version: version {version:?} names the release's folder, and Windows reserves");
        assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    }
    // a name that only starts like one is a version
    let o = build(dir, &["-q", "--release-version", "console1"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_path_with_brackets_that_matches_nothing_says_they_are_read_as_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "d1.jsonl", "{\"step\": 1}\n");
    write(dir, "pipeline.toml", &one_source("br", "[d]*.jsonl", "jsonl", "", "SELECT step FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("`[` and `]` are read as they are, not as a class of characters"), "{}", stderr(&o));
}

#[test]
fn files_under_raw_that_no_source_reads_are_named_unless_left_out_on_purpose() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/runs/a.jsonl", "{\"step\": 1}\n");
    write(dir, "raw/runs/notes.txt", "not a format runpack reads\n");
    write(dir, "raw/.cache/x.json", "{}\n");
    let toml = one_source("un", "raw/runs/a.jsonl", "jsonl", "", "SELECT step FROM raw", "");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("read by no source"), "{}", stderr(&o));
    // a run added after the pipeline was written, and a results table
    write(dir, "raw/runs/b.jsonl", "{\"step\": 2}\n");
    write(dir, "raw/results.csv.gz", "");
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "note: 2 files under raw/ are read by no source (added since the pipeline was written?): \
                raw/results.csv.gz, raw/runs/b.jsonl; add them to a source's `path` in pipeline.toml";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    // and the card says it, where a reader of the data looks
    let card = std::fs::read_to_string(release(dir, "un").join("README.md")).unwrap();
    let said_in_card = "- Raw files under `raw/` that no source reads and `not_read` does not name (added since the \
                        pipeline was written, or missed by its paths): `raw/results.csv.gz`, `raw/runs/b.jsonl`.";
    assert!(card.contains(said_in_card), "{card}");
    // said of an unchanged release too
    let o = build(dir, &[]);
    assert!(stderr(&o).contains("up to date") && stderr(&o).contains(said), "{}", stderr(&o));
    let o = build(dir, &["--force", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        doc["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().starts_with("2 files under raw/")),
        "{doc}"
    );
    assert_eq!(doc["unread_files"], serde_json::json!(["raw/results.csv.gz", "raw/runs/b.jsonl"]), "{doc}");
    // left out on purpose: said no more, whatever else the globs meet (a dangling link)
    std::os::unix::fs::symlink("/nonexistent", dir.join("raw/zz.json")).unwrap();
    let toml = format!("not_read = [\"raw/runs/b.jsonl\", \"raw/*\"]\n{toml}");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("read by no source"), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "un").join("README.md")).unwrap();
    assert!(!card.contains("that no source reads"), "{card}");
    // a value of another type is named with what is expected
    write(
        dir,
        "pipeline.toml",
        &format!("not_read = 3\n{}", one_source("un", "raw/runs/a.jsonl", "jsonl", "", "SELECT step FROM raw", "")),
    );
    let o = build(dir, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a glob (\"raw/*.jsonl\") or a list of globs"), "{}", stderr(&o));
}

/// The `hint:` lines of a build's stderr.
fn hint_lines(o: &std::process::Output) -> Vec<String> {
    stderr(o).lines().filter_map(|l| l.strip_prefix("hint: ")).map(String::from).collect()
}

#[test]
fn hints_follow_what_every_violation_found_not_only_the_ones_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // line 2: a number written as a string; line 3: NaN written as a string
    write(
        dir,
        "raw/m.jsonl",
        "{\"step\":0,\"reward\":0.1,\"lr\":0.001}\n{\"step\":1,\"reward\":0.2,\"lr\":\"0.001\"}\n\
         {\"step\":2,\"reward\":\"NaN\",\"lr\":0.001}\n",
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"h\"\n[[source]]\nname = \"s\"\npath = \"raw/m.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n",
    );
    let o = build(dir, &["--max-errors", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // the first violation in file and line order is the one listed
    assert!(stderr(&o).contains("raw/m.jsonl:2:$.lr: expected number, found string \"0.001\""), "{}", stderr(&o));
    assert!(!stderr(&o).contains("raw/m.jsonl:3:"), "{}", stderr(&o));
    let hints = hint_lines(&o);
    assert_eq!(hints.len(), 3, "{hints:?}");
    assert_eq!(hints[0], "--max-errors 2 lists every violation");
    assert!(hints[1].contains("`coerce_nonfinite_strings = true` in the [[source]] of s"), "{hints:?}");
    assert!(hints[2].contains("`coerce_numeric_strings = true` in the [[source]] of s"), "{hints:?}");
    // the JSON document gives the same hints
    let o = build(dir, &["--max-errors", "1", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["hints"], serde_json::json!(hints), "{doc}");
    let finding = serde_json::json!({"kind": "type", "column": "lr", "expected": "number", "found": "string \"0.001\"",
                                     "nonfinite_string": false, "numeric_string": true, "decimal_comma": false, "decided_at": "raw/m.jsonl:1"});
    assert_eq!(doc["violations"][0]["finding"], finding, "{doc}");
    // following the hints builds
    write(
        dir,
        "pipeline.toml",
        "name = \"h\"\n[[source]]\nname = \"s\"\npath = \"raw/m.jsonl\"\nformat = \"jsonl\"\n\
         coerce_numeric_strings = true\ncoerce_nonfinite_strings = true\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // a format of fixed columns takes neither option: no hint offers one
    write(dir, "raw/m.jsonl", "{\"step\": 1, \"loss\": 0.5}\n{\"step\": \"2\", \"loss\": 0.3}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"h\"\n[[source]]\nname = \"s\"\npath = \"raw/m.jsonl\"\nformat = \"tinker-metrics\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n",
    );
    let o = build(dir, &["--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("raw/m.jsonl:2:$.step: expected integer, found string \"2\""), "{}", stderr(&o));
    assert!(!stderr(&o).contains("coerce_"), "{}", stderr(&o));
}

#[test]
fn an_integer_column_s_nan_and_rows_made_of_one_line_get_their_own_hints() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // NaN in an integer column: the option that reads "NaN" as a number cannot put it there
    write(dir, "raw/m.jsonl", "{\"step\":0,\"tokens\":10}\n{\"step\":1,\"tokens\":\"NaN\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"h\"\n[[source]]\nname = \"s\"\npath = \"raw/m.jsonl\"\nformat = \"jsonl\"\n\
         coerce_nonfinite_strings = true\n[[source.field]]\nname = \"tokens\"\ntype = \"integer\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT step, tokens FROM s\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let hints = hint_lines(&o);
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(
        hints[0].starts_with("an integer column holds no NaN or infinity (s.tokens): declare it `number`"),
        "{hints:?}"
    );

    // two rows an unnest made of one line share the key: keep-last cannot choose among them
    write(dir, "raw/m.jsonl", "{\"step\":0,\"tags\":[\"a\",\"b\"]}\n{\"step\":1,\"tags\":[\"c\"]}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"step","type":"integer"},{"name":"tag","type":"string"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["step"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"h\"\n[[source]]\nname = \"s\"\npath = \"raw/m.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\n\
         query = \"SELECT step, unnest(tags) AS tag, _source_file, _source_line FROM s\"\n",
    );
    for rule in [&[][..], &["--on-duplicate-key", "keep-last"][..]] {
        let o = build(dir, rule);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let hints = hint_lines(&o);
        assert_eq!(hints.len(), 1, "{rule:?}: {hints:?}");
        assert!(
            hints[0].starts_with("different rows that a query made of one raw line share a primary key in t"),
            "{hints:?}"
        );
        let o = build(dir, &[rule, &["--format", "json"][..]].concat());
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            doc["violations"][0]["finding"],
            serde_json::json!({"kind": "shared_key", "rows": 2, "same_line": true})
        );
    }
}

#[test]
fn an_integer_no_float_holds_in_a_float_column_names_the_value_that_made_it_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/m.jsonl", "{\"step\":0,\"x\":9007199254740993}\n{\"step\":1,\"x\":2.5}\n");
    let pipeline = |field: &str| {
        format!(
            "name = \"h\"\n[[source]]\nname = \"s\"\npath = \"raw/m.jsonl\"\nformat = \"jsonl\"\n{field}\
             [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n"
        )
    };
    write(dir, "pipeline.toml", &pipeline(""));
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "raw/m.jsonl:1:$.x: integer 9007199254740993 cannot be stored exactly as a 64-bit float (the column holds \
             float64 values, the type the value at raw/m.jsonl:2 decided)"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        hint_lines(&o),
        vec![
            "a column whose values are of several types on purpose (s.x) is kept whole, as JSON text, when its source \
         declares it so: a [[source.field]] table with name = \"x\" and type = \"any\", each key on a line of its own"
                .to_string()
        ]
    );
    // as the hint says: both values kept exactly
    write(dir, "pipeline.toml", &pipeline("[[source.field]]\nname = \"x\"\ntype = \"any\"\n"));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "h"), "SELECT x FROM t ORDER BY step"), "x\n9007199254740993\n2.5\n");
}

#[test]
fn a_build_that_breaks_the_rules_still_says_its_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/m.jsonl", "{\"id\":1}\n{\"id\":\"two\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"h\"\n[[source]]\nname = \"s\"\npath = \"raw/m.jsonl\"\nformat = \"jsonl\"\n\
         [[source.field]]\nname = \"id\"\ntype = \"integer\"\n[[source.field]]\nname = \"typo\"\ntype = \"string\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n",
    );
    let warning = "[[source.field]] `typo` is a key no record has: null in all 2 rows kept (a misspelled key?)";
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("warning: s: {warning}")), "{}", stderr(&o));
    // the JSON document holds it, and stderr does not say it twice
    let o = build(dir, &["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["warnings"][0]["message"], warning, "{doc}");
    assert!(!stderr(&o).contains("warning:"), "{}", stderr(&o));
    // (the tests' RUST_LOG would show them whatever -q says)
    let o =
        run(bin().env_remove("RUST_LOG").arg("build").arg(dir).arg("--releases-dir").arg(dir.join("out")).arg("-q"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning:"), "{}", stderr(&o));
}

#[test]
fn a_csv_nan_in_an_integer_column_is_said_as_such_with_the_hint_that_fixes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/b.csv", "run,step,k\nb,0,1\nb,1,NaN\n");
    let pipeline = |k: &str| {
        format!(
            "name = \"d1\"\n[[source]]\nname = \"s\"\npath = \"raw/b.csv\"\nformat = \"csv\"\n\
             [[source.field]]\nname = \"k\"\ntype = \"{k}\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n"
        )
    };
    write(dir, "pipeline.toml", &pipeline("integer"));
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("raw/b.csv:3:$.k: expected integer, found string \"NaN\""), "{}", stderr(&o));
    let hints = hint_lines(&o);
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(hints[0].starts_with("an integer column holds no NaN or infinity (s.k): declare it `number`"), "{hints:?}");
    write(dir, "pipeline.toml", &pipeline("number"));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_decimal_comma_in_a_number_column_gets_the_hint_that_converts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.csv", "run;loss\na;0.5\nb;0,25\n");
    write(
        dir,
        "pipeline.toml",
        &one_source("dc", "a.csv", "csv", "delimiter = \";\"\n", "SELECT run, loss FROM raw", ""),
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("a.csv:3:$.loss: expected number, found string \"0,25\""), "{err}");
    assert!(err.contains("hint: numbers written with a decimal comma (\"0,5\") in raw.loss are text"), "{err}");
    assert!(!err.contains("several types on purpose"), "{err}");
}

/// A build's SQL gives the same rows at every build: the clock (in a table, through a view,
/// in a card section) reads `SOURCE_DATE_EPOCH` or is refused; `random()` is refused.
#[test]
fn the_clock_of_a_builds_sql_is_pinned_or_refused_and_random_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"k\": 1}\n{\"k\": 2}\n");
    let pipeline = |table: &str, extra: &str| {
        write(dir, "pipeline.toml", &one_source("p", "a.jsonl", "jsonl", "", table, extra));
    };
    pipeline(
        "SELECT k, d FROM stamped",
        "[[view]]\nname = \"stamped\"\nquery = \"SELECT k, current_date AS d FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("current_date() reads the clock"), "{}", stderr(&o));
    // named at the view, not at the table that reads it
    assert!(stderr(&o).contains("error: view stamped ("), "{}", stderr(&o));
    let o = run(bin()
        .arg("build")
        .arg(dir)
        .args(["-q", "--releases-dir"])
        .arg(dir.join("out"))
        .env("SOURCE_DATE_EPOCH", "1767225600"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "p"), "SELECT DISTINCT d FROM t"), "d\n2026-01-01\n");
    // a card section too
    pipeline("SELECT k FROM raw", "[[card.section]]\ntitle = \"When\"\nquery = \"SELECT now() AS t\"\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("now() reads the clock"), "{}", stderr(&o));
    pipeline("SELECT k, random() AS r FROM raw", "");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("random() gives another value at each call"), "{}", stderr(&o));
    // a time beyond what a timestamp in nanoseconds holds is refused, not null
    pipeline("SELECT k, now() AS t FROM raw", "");
    let o = run(bin()
        .arg("build")
        .arg(dir)
        .args(["-q", "--force", "--releases-dir"])
        .arg(dir.join("out"))
        .env("SOURCE_DATE_EPOCH", "10000000000"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("now() cannot read SOURCE_DATE_EPOCH 10000000000"), "{}", stderr(&o));
    // a query reads the clock as it is
    let o = run(bin()
        .args(["query"])
        .arg(release(dir, "p"))
        .args(["SELECT now() > TIMESTAMP '2026-01-01T00:00:00Z' AS later"]));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A releases folder among the files a source matches: the next build would read the JSON
/// Lines copy the last one wrote as input.
#[test]
fn a_build_that_would_read_its_own_releases_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/a.jsonl", "{\"a\": 1}\n");
    write(
        dir,
        "pipeline.toml",
        &one_source("s", "raw/**/*.jsonl", "jsonl", "", "SELECT a FROM raw", "formats = [\"parquet\", \"jsonl\"]\n"),
    );
    let into = |version: &str| {
        run(bin().current_dir(dir).args(["build", ".", "--releases-dir", "raw/releases", "--release-version", version]))
    };
    // refused before the first build writes anything
    let o = into("1");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "source raw would read the release this build writes (raw/releases/s/1/jsonl/t.jsonl matches its path \
             [\"raw/**/*.jsonl\"])"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("raw/releases/s/1").exists());
    // the way out the message gives
    write(
        dir,
        "pipeline.toml",
        &format!(
            "not_read = [\"raw/releases/**\"]\n{}",
            one_source("s", "raw/**/*.jsonl", "jsonl", "", "SELECT a FROM raw", "formats = [\"parquet\", \"jsonl\"]\n")
        ),
    );
    let o = into("2");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = into("3");
    assert!(o.status.success(), "{}", stderr(&o)); // a source that reads a release already there (an earlier version's copy) is refused too
    write(
        dir,
        "pipeline.toml",
        &format!(
            "{}[[source]]\nname = \"old\"\npath = \"raw/releases/s/2/jsonl/*.jsonl\"\n\
             format = \"jsonl\"\n",
            one_source("s", "raw/*.jsonl", "jsonl", "", "SELECT a FROM raw", "formats = [\"parquet\", \"jsonl\"]\n")
        ),
    );
    let o = into("4");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("source old matches 1 file of the pipeline's releases"), "{}", stderr(&o));
}

/// A source whose every file the pipeline's `not_read` leaves out says so, not that no file
/// matches.
#[test]
fn a_source_whose_files_not_read_leaves_out_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/a.jsonl", "{\"a\": 1}\n");
    write(
        dir,
        "pipeline.toml",
        &format!("not_read = [\"raw/*\"]\n{}", one_source("s", "raw/*.jsonl", "jsonl", "", "SELECT a FROM raw", "")),
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "the pipeline's not_read leaves out every file [\"raw/*.jsonl\"] matches (1 file, raw/a.jsonl): no file is \
             left to read"
        ),
        "{}",
        stderr(&o)
    );
}

/// CSV files of one row each, read in one run of records: none is said to hold no record.
#[test]
fn small_csv_files_are_not_said_to_hold_no_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for f in ["f0", "f1", "f2", "f3"] {
        write(dir, &format!("raw/{f}.csv"), &format!("name,x\n{f},1\n"));
    }
    write(dir, "raw/empty.csv", "name,x\n");
    write(dir, "pipeline.toml", &one_source("c", "raw/*.csv", "csv", "", "SELECT name, x FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // the header alone is said, the others not
    assert!(stderr(&o).contains("read 1 file with bytes but no record"), "{}", stderr(&o));
    assert!(stderr(&o).contains("raw/empty.csv") && !stderr(&o).contains("raw/f1.csv"), "{}", stderr(&o));
}

#[test]
fn a_left_out_entry_naming_no_file_of_the_pipeline_is_refused_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/a.jsonl", "{\"step\": 1}\n");
    let toml = one_source("p", "raw/a.jsonl", "jsonl", "", "SELECT step FROM raw", "");
    let toml = format!("{toml}\n[[left_out]]\ntable = \"nope\"\nfile = \"raw/zzz.jsonl\"\nreason = \"x\"\n");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let line = line_at(&toml, toml.find("file = ").unwrap());
    assert!(
        stderr(&o).contains(&format!(
            "pipeline.toml:{line} (left_out raw/zzz.jsonl): [[left_out]] names file \"raw/zzz.jsonl\", which is not in \
             the pipeline's folder: remove the entry"
        )),
        "{}",
        stderr(&o)
    );
    // a file outside the pipeline folder is none of its files
    for outside in ["/etc/passwd", "../elsewhere/a.jsonl"] {
        write(dir, "pipeline.toml", &toml.replace("raw/zzz.jsonl", outside));
        let o = build(dir, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("a file left out is one of the pipeline's folder"), "{}", stderr(&o));
    }
    write(dir, "pipeline.toml", &toml);
    // the file there: a note, and the card says it
    write(dir, "raw/zzz.jsonl", "{\"step\": \"two\"}\n");
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("table nope leaves out raw/zzz.jsonl, as pipeline.toml says: x"), "{}", stderr(&o));
}

#[test]
fn a_table_header_of_one_bracket_and_a_word_given_as_a_number_get_a_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/a.jsonl", "{\"a\": 1}\n");
    let source = "name = \"p\"\n[[source]]\nname = \"s\"\npath = \"raw/a.jsonl\"\nformat = \"jsonl\"\n";
    for (toml, said) in [
        (
            format!("{source}[table]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n"),
            "pipeline.toml:6:1: invalid type: map, expected a sequence\nhint: write [[table]], with two brackets",
        ),
        (
            format!("{source}nonfinite = 1\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n"),
            "pipeline.toml:6:13: wanted string or table\nhint: nonfinite is one of \"ieee\" or \"null\", in quotes",
        ),
    ] {
        write(dir, "pipeline.toml", &toml);
        let o = build(dir, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(said), "{said}\n{}", stderr(&o));
    }
}

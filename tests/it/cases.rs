//! The field cases (tests/fixtures/cases, from ../shared/cases): each CASE.md's expected outcome
//! for build, verify and query, as assertions.

use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::util::*;

/// Arrow schemas of every Parquet file under `dir/data`.
fn parquet_schemas(dir: &Path) -> Vec<(String, arrow::datatypes::SchemaRef)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir.join("data")).sort_by_file_name() {
        let e = e.unwrap();
        if e.path().extension().is_some_and(|x| x == "parquet") {
            let f = std::fs::File::open(e.path()).unwrap();
            let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
            out.push((e.path().display().to_string(), b.schema().clone()));
        }
    }
    out
}

fn type_of(release: &Path, table: &str, column: &str) -> String {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    let t = m["tables"].as_array().unwrap().iter().find(|t| t["name"] == table).unwrap();
    t["arrow_schema"].as_array().unwrap().iter().find(|f| f["name"] == column).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_string()
}

fn no_null_type(dir: &Path) {
    fn has_null(dt: &arrow::datatypes::DataType) -> bool {
        use arrow::datatypes::DataType::*;
        match dt {
            Null => true,
            List(f) | LargeList(f) => has_null(f.data_type()),
            Struct(fs) => fs.iter().any(|f| has_null(f.data_type())),
            _ => false,
        }
    }
    for (path, schema) in parquet_schemas(dir) {
        for f in schema.fields() {
            assert!(!has_null(f.data_type()), "{path}: column {} has a Null type", f.name());
        }
    }
}

fn simple_pipeline(name: &str, source: &str, extra_source: &str, table: &str) -> String {
    format!(
        "name = \"{name}\"\n[[source]]\nname = \"raw\"\npath = {source}\nformat = \"jsonl\"\n{extra_source}\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n{table}\n"
    )
}

#[test]
fn b01_null_column_across_files() {
    let (_t, dir) = case("B01");
    std::fs::create_dir_all(dir.join("s")).unwrap();
    write(
        &dir.join("s"),
        "t.json",
        r#"{"fields":[{"name":"step","type":"integer"},{"name":"loss","type":"number"},{"name":"note","type":"string"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":"step"}"#,
    );
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b01", "[\"part-0.jsonl\", \"part-1.jsonl\"]", "", "schema = \"s/t.json\""),
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b01");
    assert_eq!(type_of(&r, "t", "note"), "Utf8");
    assert_eq!(
        query_with(&r, "SELECT step, note FROM t ORDER BY step", &[]),
        "step,note\n1,\n2,\n3,\n4,resumed from ckpt-3\n5,\n"
    );
    no_null_type(&r);
    // the opposite order of inputs gives byte-identical files
    let first = snapshot_files(&r);
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b01", "[\"part-1.jsonl\", \"part-0.jsonl\"]", "", "schema = \"s/t.json\""),
    );
    let o = build(&dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let second = snapshot_files(&r);
    let pick = |v: &Vec<(String, Vec<u8>)>| v.iter().filter(|(p, _)| p != "README.md").cloned().collect::<Vec<_>>();
    // the card names the pipeline's hash, which changed with the order of the paths
    let m1: serde_json::Value =
        serde_json::from_slice(&first.iter().find(|f| f.0 == "manifest.json").unwrap().1).unwrap();
    let m2: serde_json::Value =
        serde_json::from_slice(&second.iter().find(|f| f.0 == "manifest.json").unwrap().1).unwrap();
    assert_eq!(
        m1["files"].as_array().unwrap().iter().filter(|f| f["kind"] != "card").collect::<Vec<_>>(),
        m2["files"].as_array().unwrap().iter().filter(|f| f["kind"] != "card").collect::<Vec<_>>()
    );
    for ((a, x), (_, y)) in pick(&first).iter().zip(pick(&second).iter()) {
        if a.starts_with("data/") || a.starts_with("jsonl/") {
            assert!(x == y, "{a} differs when the inputs are listed in another order");
        }
    }
    // all-null column, no declared type
    write(&dir, "pipeline.toml", &simple_pipeline("b01n", "\"allnull.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("$.comment: no input file has a non-null value for it"), "{err}");
    assert!(err.contains("declare its type"), "{err}");
    // declared: an all-null Utf8 column
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b01n", "\"allnull.jsonl\"", "[[source.field]]\nname = \"comment\"\ntype = \"string\"", ""),
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b01n");
    assert_eq!(type_of(&r, "t", "comment"), "Utf8");
    assert_eq!(query_with(&r, "SELECT count(*), count(comment) FROM t", &[]), "count(*),count(t.comment)\n2,0\n");
    no_null_type(&r);
}

#[test]
fn b02_empty_lists_never_fix_an_element_type() {
    let (_t, dir) = case("B02");
    write(&dir, "pipeline.toml", &simple_pipeline("b02", "\"*.jsonl\"", "", ""));
    let o = build(&dir, &["-q", "--max-shard-bytes", "1900"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b02");
    assert_eq!(type_of(&r, "t", "tool_calls"), "List<Struct<name: Utf8, ok: Boolean>>");
    let shards = parquet_schemas(&r);
    assert!(shards.len() > 1, "small shards were asked for");
    for (path, s) in &shards {
        assert_eq!(crate_type(s, "tool_calls"), "List<Struct<name: Utf8, ok: Boolean>>", "{path}");
    }
    no_null_type(&r);
    assert_eq!(
        query_with(
            &r,
            "SELECT step, cardinality(tool_calls) AS n, tool_calls IS NULL AS is_null, tool_calls[2]['name'] AS second FROM t ORDER BY step",
            &[]
        ),
        "step,n,is_null,second\n1,0,false,\n2,0,false,\n3,1,false,\n4,2,false,search\n5,0,false,\n"
    );
    // a file where every list is empty cannot decide the element type
    write(&dir, "pipeline.toml", &simple_pipeline("b02a", "\"2025-01.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("$.tool_calls[]: no input has an element in this list"), "{}", stderr(&o));
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline(
            "b02a",
            "\"2025-01.jsonl\"",
            "[[source.field]]\nname = \"tool_calls\"\ntype = \"array\"\nitems = { type = \"object\", fields = [{ name = \"name\", type = \"string\" }, { name = \"ok\", type = \"boolean\" }] }",
            "",
        ),
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(type_of(&release(&dir, "b02a"), "t", "tool_calls"), "List<Struct<name: Utf8, ok: Boolean>>");
}

fn crate_type(s: &arrow::datatypes::Schema, col: &str) -> String {
    runpack::core::schema::type_name(s.field_with_name(col).unwrap().data_type())
}

#[test]
fn b03_extra_nested_key_widens_or_fails_strictly() {
    let (_t, dir) = case("B03");
    write(&dir, "pipeline.toml", &simple_pipeline("b03", "\"metrics.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b03");
    assert_eq!(type_of(&r, "t", "meta"), "Struct<seed: Int64, env: Utf8, retry: Int64>");
    assert_eq!(
        query_with(&r, "SELECT step, meta['retry'] AS retry FROM t ORDER BY step", &[]),
        "step,retry\n1,\n2,\n3,2\n4,\n"
    );
    assert!(
        stderr(&o).contains("metrics.jsonl:3: raw: struct field $.meta.retry added (nullable); first seen here"),
        "{}",
        stderr(&o)
    );
    // strict: a declared schema without meta.retry
    write(
        &dir,
        "s.json",
        r#"{"fields":[{"name":"step","type":"integer"},{"name":"meta","type":"object","fields":[{"name":"seed","type":"integer"},{"name":"env","type":"string"}]}]}"#,
    );
    write(&dir, "pipeline.toml", &simple_pipeline("b03s", "\"metrics.jsonl\"", "schema = \"s.json\"", ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("metrics.jsonl:3:$.meta.retry: key not in schema for struct meta"), "{}", stderr(&o));
}

#[test]
fn b05_heterogeneous_arrays_fail_or_take_an_explicit_mapping() {
    let (_t, dir) = case("B05");
    write(&dir, "pipeline.toml", &simple_pipeline("b05", "\"spans.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("spans.jsonl:1:$.span[2]: list element is string \"PER\" while earlier elements are int64"),
        "{err}"
    );
    assert!(err.contains("heterogeneous arrays are not supported"), "{err}");
    assert!(err.contains("type `any`") && err.contains("struct"), "the message names both remedies: {err}");
    // opt-in JSON text
    let any = "[[source.field]]\nname = \"span\"\ntype = \"any\"";
    write(&dir, "pipeline.toml", &simple_pipeline("b05j", "\"spans.jsonl\"", any, ""));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b05j");
    assert_eq!(type_of(&r, "t", "span"), "Utf8");
    let out = query_with(&r, "SELECT span FROM t ORDER BY id", &[]);
    let spans: Vec<serde_json::Value> = out
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(&l.trim_matches('"').replace("\"\"", "\"")).unwrap())
        .collect();
    assert_eq!(spans[0], serde_json::json!([0, 4, "PER"]));
    // a declared mapping of the positions
    let table = "[[table]]\nname = \"mapped\"\nquery = \"SELECT id, named_struct('start', json_int(json_get(span, '0')), 'end', json_int(json_get(span, '1')), 'label', json_str(json_get(span, '2'))) AS span FROM raw\"";
    write(&dir, "pipeline.toml", &format!("{}{table}\n", simple_pipeline("b05m", "\"spans.jsonl\"", any, "")));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b05m");
    assert_eq!(type_of(&r, "mapped", "span"), "Struct<start: Int64, end: Int64, label: Utf8>");
    assert_eq!(
        query_with(&r, "SELECT span['start'] s, span['end'] e, span['label'] l FROM mapped WHERE id = 3", &[]),
        "s,e,l\n12,18,LOC\n"
    );
    // object on some lines, array on another
    write(&dir, "pipeline.toml", &simple_pipeline("b05s", "\"shapes.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("shapes.jsonl:3:$.args: expected object, found an array"), "{err}");
    assert!(err.contains("(the column holds object values, the type the value at shapes.jsonl:1 decided)"), "{err}");
}

#[test]
fn b06_strings_in_a_number_column() {
    let (_t, dir) = case("B06");
    write(&dir, "pipeline.toml", &simple_pipeline("b06", "\"rewards.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let first = err.lines().next().unwrap();
    assert!(first.starts_with("rewards.jsonl:2:$.reward: expected number, found string \"NaN\""), "{err}");
    assert!(err.contains("rewards.jsonl:4:$.reward: expected number, found string \"-infinity\""), "{err}");
    let opt = "coerce_nonfinite_strings = true\n[[source.field]]\nname = \"reward\"\ntype = \"number\"";
    write(&dir, "pipeline.toml", &simple_pipeline("b06c", "\"rewards.jsonl\"", opt, ""));
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("strings coerced in raw: 2"), "{err}");
    assert!(err.contains("rewards.jsonl:2:$.reward string \"NaN\" read as the number NaN"), "{err}");
    assert!(err.contains("rewards.jsonl:4:$.reward string \"-infinity\" read as the number -Infinity"), "{err}");
    let r = release(&dir, "b06c");
    assert_eq!(
        query_with(&r, "SELECT step, reward, isnan(reward) AS nan, reward IS NULL AS null FROM t ORDER BY step", &[]),
        "step,reward,nan,null\n1,1.0,false,false\n2,NaN,true,false\n3,0.5,false,false\n4,-Infinity,false,false\n5,2.0,false,false\n"
    );
    write(&dir, "pipeline.toml", &simple_pipeline("b06j", "\"rewards-junk.jsonl\"", opt, ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("rewards-junk.jsonl:2:$.reward: expected number, found string \"n/a\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn b07_integral_floats_stay_float() {
    let (_t, dir) = case("B07");
    let p = "name = \"b07\"\nformats = [\"parquet\", \"jsonl\"]\n\
        [[source]]\nname = \"lr_raw\"\npath = \"lr.jsonl\"\nformat = \"jsonl\"\n\
        [[source]]\nname = \"mixed_raw\"\npath = \"mixed.jsonl\"\nformat = \"jsonl\"\n\
        [[source]]\nname = \"ints_raw\"\npath = \"ints.jsonl\"\nformat = \"jsonl\"\n\
        [[source]]\nname = \"ints_declared_raw\"\npath = \"ints.jsonl\"\nformat = \"jsonl\"\n[[source.field]]\nname = \"kl_coef\"\ntype = \"number\"\n\
        [[table]]\nname = \"lr\"\nquery = \"SELECT step, lr_scale FROM lr_raw\"\n\
        [[table]]\nname = \"mixed\"\nquery = \"SELECT step, warmup FROM mixed_raw\"\n\
        [[table]]\nname = \"ints\"\nquery = \"SELECT step, kl_coef FROM ints_raw\"\n\
        [[table]]\nname = \"ints_declared\"\nquery = \"SELECT step, kl_coef FROM ints_declared_raw\"\n";
    write(&dir, "pipeline.toml", p);
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b07");
    assert_eq!(type_of(&r, "lr", "lr_scale"), "Float64");
    assert_eq!(type_of(&r, "lr", "step"), "Int64");
    assert_eq!(type_of(&r, "mixed", "warmup"), "Float64");
    assert_eq!(type_of(&r, "ints", "kl_coef"), "Int64");
    assert_eq!(type_of(&r, "ints_declared", "kl_coef"), "Float64");
    let jsonl = std::fs::read_to_string(r.join("jsonl/lr.jsonl")).unwrap();
    assert_eq!(jsonl, "{\"step\":1,\"lr_scale\":1.0}\n{\"step\":2,\"lr_scale\":2.0}\n{\"step\":3,\"lr_scale\":3.0}\n");
    assert_eq!(
        std::fs::read_to_string(r.join("jsonl/mixed.jsonl"))
            .unwrap()
            .lines()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()[0],
        "{\"step\":1,\"warmup\":1.0}"
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("  - name: lr_scale\n    dtype: float64"), "{card}");
}

#[test]
fn b09_shards_that_disagree_on_a_type() {
    let (_t, dir) = case("B09");
    let o = run(bin().arg("verify").arg(&dir));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(
            "config `default` split `train`: run_date: Int64 in data/train-0.parquet vs Utf8 in data/train-1.parquet"
        ),
        "{}",
        stdout(&o)
    );
    let p = "name = \"b09\"\n[[source]]\nname = \"raw\"\npath = \"data/*.parquet\"\nformat = \"parquet\"\n";
    let t = "[[table]]\nname = \"train\"\nquery = \"SELECT step, run_date FROM raw\"\n";
    write(&dir, "pipeline.toml", &format!("{p}{t}"));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("run_date: Int64 in data/train-0.parquet vs Utf8 in data/train-1.parquet"),
        "{}",
        stderr(&o)
    );
    write(&dir, "pipeline.toml", &format!("{p}[[source.field]]\nname = \"run_date\"\ntype = \"string\"\n{t}"));
    let o = build(&dir, &["-q", "--max-shard-bytes", "1000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b09");
    for (path, s) in parquet_schemas(&r) {
        assert_eq!(crate_type(&s, "run_date"), "Utf8", "{path}");
    }
    assert_eq!(
        query_with(&r, "SELECT step, run_date FROM train ORDER BY step", &[]),
        "step,run_date\n1,20250301\n2,20250301\n3,20250302\n4,\"\"\n5,\"\"\n"
    );
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn b10_files_with_different_column_sets() {
    let (_t, dir) = case("B10");
    write(&dir, "pipeline.toml", &simple_pipeline("b10", "\"evals/*.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("evals/math.jsonl has `attempts`, `pass_at` that evals/code.jsonl lacks")
            || stderr(&o).contains("evals/math.jsonl lacks `attempts`, `pass_at` that evals/code.jsonl has"),
        "{}",
        stderr(&o)
    );
    // union
    write(&dir, "pipeline.toml", &simple_pipeline("b10u", "\"evals/*.jsonl\"", "columns = \"union\"", ""));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b10u");
    assert_eq!(type_of(&r, "t", "pass_at"), "Int64");
    assert_eq!(type_of(&r, "t", "attempts"), "Int64");
    assert_eq!(
        query_with(&r, "SELECT task, pass_at, attempts FROM t ORDER BY task", &[]),
        "task,pass_at,attempts\ngsm8k,,\nhumaneval,1,3\nmath500,,\nmbpp,1,3\n"
    );
    // separate configs: one source and one table per file set
    let p = "name = \"b10s\"\n\
        [[source]]\nname = \"math_raw\"\npath = \"evals/math.jsonl\"\nformat = \"jsonl\"\n\
        [[source]]\nname = \"code_raw\"\npath = \"evals/code.jsonl\"\nformat = \"jsonl\"\n\
        [[table]]\nname = \"math\"\nquery = \"SELECT task, model, score FROM math_raw\"\n\
        [[table]]\nname = \"code\"\nquery = \"SELECT task, model, score, pass_at, attempts FROM code_raw\"\n";
    write(&dir, "pipeline.toml", p);
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(&dir, "b10s").join("README.md")).unwrap();
    assert!(
        card.contains(
            "- config_name: math\n  default: true\n  data_files:\n  - split: train\n    path: data/math.parquet"
        ),
        "{card}"
    );
    assert!(
        card.contains("- config_name: code\n  data_files:\n  - split: train\n    path: data/code.parquet"),
        "{card}"
    );
}

fn row_group_sizes(path: &Path) -> Vec<i64> {
    let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    r.metadata().row_groups().iter().map(|rg| rg.total_byte_size()).collect()
}

#[test]
fn b11_row_groups_are_capped_by_bytes() {
    let (_t, dir) = case("B11");
    make(&dir, &[]);
    write(&dir, "pipeline.toml", &simple_pipeline("b11", "\"rollouts.jsonl\"", "", ""));
    let o = build(&dir, &["-q", "--row-group-bytes", "4194304"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b11");
    let sizes = row_group_sizes(&r.join("data/t.parquet"));
    assert!(sizes.len() >= 5, "{sizes:?}");
    assert!(sizes.iter().all(|&s| s <= 4_194_304), "{sizes:?}");
    assert_eq!(query_with(&r, "SELECT count(*) FROM t", &[]), "count(*)\n200\n");
    // a large cell is reported
    write(&dir, "pipeline.toml", &simple_pipeline("b11b", "\"bigcell.jsonl\"", "", ""));
    let o = build(&dir, &["--large-cell-bytes", "1000000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bigcell.jsonl:2: raw: column `completion` holds a 3,000,007-byte value"),
        "{}",
        stderr(&o)
    );
    // verify flags a foreign row group above the viewer limit
    let o = run(bin().arg("verify").arg(dir.join("foreign")));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("data/train-0.parquet: row group 0 holds 330,057,176 bytes uncompressed, above the dataset viewer's limit of 300,000,000 bytes (286.10 MiB)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn b12_wide_history_warns_and_goes_long() {
    let (_t, dir) = case("B12");
    make(&dir, &[]);
    write(&dir, "pipeline.toml", &simple_pipeline("b12", "\"history.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("table t has 1203 columns, above the dataset viewer's limit of 1000"), "{err}");
    assert!(err.contains("long layout"), "{err}");
    let p = "name = \"b12l\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"history.jsonl\"\nformat = \"jsonl\"\nlayout = \"long\"\nid_columns = [\"_step\"]\n\
             [[table]]\nname = \"history\"\nschema = \"s.json\"\nquery = \"SELECT _step, key, value FROM raw\"\n";
    write(
        &dir,
        "s.json",
        r#"{"fields":[{"name":"_step","type":"integer"},{"name":"key","type":"string"},{"name":"value","type":"number"}],"primaryKey":["_step","key"]}"#,
    );
    write(&dir, "pipeline.toml", p);
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b12l");
    assert_eq!(query_with(&r, "SELECT count(*) FROM history", &[]), "count(*)\n2400\n");
    assert_eq!(type_of(&r, "history", "value"), "Float64");
    let first = query_with(
        &r,
        "SELECT _step, key, value FROM history WHERE key = 'grad_norm/layer_0000' ORDER BY _step LIMIT 1",
        &[],
    );
    assert_eq!(first.lines().nth(1).unwrap().split(',').nth(2).unwrap(), "0.013", "{first}");
    let lines: Vec<String> =
        std::fs::read_to_string(r.join("jsonl/history.jsonl")).unwrap().lines().take(2).map(String::from).collect();
    assert!(lines[0].contains("\"key\":\"grad_norm/layer_0000\""), "sorted by (_step, key): {lines:?}");
}

#[test]
fn b13_invalid_split_names_are_refused_before_writing() {
    let (_t, dir) = case("B13");
    let p = |names: [&str; 4]| {
        format!(
            "name = \"b13\"\n[[source]]\nname = \"raw\"\npath = \"evals/{{file}}.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"evals\"\nsplit_column = \"split\"\nsplits = {}\n\
             query = \"SELECT id, correct, CASE file WHEN 'gsm8k' THEN '{}' WHEN 'math500' THEN '{}' WHEN 'valid' THEN '{}' ELSE '{}' END AS split FROM raw\"\n",
            serde_json::to_string(&names).unwrap(),
            names[0],
            names[1],
            names[2].replace('\n', "\\n"),
            names[3]
        )
    };
    write(&dir, "pipeline.toml", &p(["eval-gsm8k", "math500 ", "valid\n", "test.v2"]));
    let o = build(&dir, &[]);
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(err.contains("split name \"eval-gsm8k\"") && err.contains("use \"eval_gsm8k\""), "{err}");
    assert!(err.contains("split name \"math500 \" has leading or trailing whitespace"), "{err}");
    assert!(err.contains("split name \"valid\\n\" has leading or trailing whitespace"), "{err}");
    assert!(!err.contains("\"test.v2\""), "{err}");
    assert!(!dir.join("out").exists(), "nothing written");
    write(&dir, "pipeline.toml", &p(["eval_gsm8k", "math500", "valid", "test.v2"]));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(&dir, "b13").join("README.md")).unwrap();
    let splits: Vec<&str> = card.lines().filter_map(|l| l.strip_prefix("  - split: ")).collect();
    assert_eq!(splits, vec!["eval_gsm8k", "math500", "test.v2", "valid"]);
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/load_release.py"))
        .arg(release(&dir, "b13"))
        .env("HF_HOME", dir.join("hf")));
    assert!(o.status.success(), "datasets loads every split: {}", stderr(&o));
}

#[test]
fn b14_card_paths_that_match_no_file() {
    let (_t, dir) = case("B14");
    let o = run(bin().arg("verify").arg(dir.join("release")));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("config `default` split `test`: `data/def.jsonl` matches no file (did you mean `data/Def.jsonl`?"),
        "{out}"
    );
    assert!(out.contains("`data/Def.jsonl` is in no config and split"), "{out}");
    assert!(out.contains("`data/ghi.jsonl` is in no config and split"), "{out}");
    assert!(out.contains("config `dup`: `data/abc.jsonl` is matched by several splits (train, validation)"), "{out}");
    assert!(out.contains("config `legacy`: data_dir `data` is accepted by the Hub"), "{out}");
    // a built card maps every file exactly once
    write(&dir, "pipeline.toml", &simple_pipeline("b14", "\"release/data/*.jsonl\"", "columns = \"union\"", ""));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().arg("verify").arg(release(&dir, "b14")));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn b15_tagged_yaml_in_card_metadata() {
    let (_t, dir) = case("B15");
    write(
        &dir,
        "pipeline.toml",
        &format!("[card]\nmetadata = \"card-metadata.yaml\"\n{}", simple_pipeline("b15", "\"metrics.jsonl\"", "", ""))
            .replacen(
                "[card]\nmetadata = \"card-metadata.yaml\"\nname = \"b15\"",
                "name = \"b15\"\n[card]\nmetadata = \"card-metadata.yaml\"",
                1,
            ),
    );
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("observation.shape") && err.contains("tag:yaml.org,2002:python/tuple"), "{err}");
    assert!(err.contains("maps, sequences, strings, numbers, booleans and null"), "{err}");
    assert!(!dir.join("out").exists());
    // verify finds the same in a card
    std::fs::create_dir_all(dir.join("r")).unwrap();
    std::fs::copy(dir.join("README-tagged.md"), dir.join("r/README.md")).unwrap();
    let o = run(bin().arg("verify").arg(dir.join("r")));
    assert!(
        stdout(&o).contains(
            "dataset_info.features[2].array3_d.shape: the value carries the YAML tag `tag:yaml.org,2002:python/tuple`"
        ),
        "{}",
        stdout(&o)
    );
    // every card build writes is plain YAML
    write(&dir, "pipeline.toml", &simple_pipeline("b15ok", "\"metrics.jsonl\"", "", ""));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success());
    let card = std::fs::read_to_string(release(&dir, "b15ok").join("README.md")).unwrap();
    assert!(runpack::stages::card::non_plain_yaml(runpack::verbs::verify::front_matter(&card).unwrap(), 2).is_empty());
}

#[test]
fn b22_max_shard_bytes_is_a_hard_limit() {
    let (_t, dir) = case("B22");
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b22", "\"metrics.jsonl\"", "", "formats = [\"parquet\", \"jsonl\"]"),
    );
    let o = build(&dir, &["-q", "--max-shard-bytes", "2500"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b22");
    let mut shards = 0;
    for sub in ["data", "jsonl"] {
        for e in std::fs::read_dir(r.join(sub)).unwrap().flatten() {
            let len = e.metadata().unwrap().len();
            assert!(len <= 2500, "{} is {len} bytes", e.path().display());
            shards += 1;
        }
    }
    assert!(shards > 2, "several shards");
    assert_eq!(
        query_with(&r, "SELECT count(*), count(DISTINCT _source_line) FROM t", &[]),
        "count(*),count(DISTINCT t._source_line)\n200,200\n"
    );
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // one row whose JSON Lines text alone passes the limit (its Parquet file does not, being
    // compressed) is refused as in Parquet, never written as an oversized shard
    let long = "x".repeat(50_000);
    write(&dir, "big.jsonl", &format!("{{\"step\": 1, \"t\": \"a\"}}\n{{\"step\": 2, \"t\": \"{long}\"}}\n"));
    write(&dir, "pipeline.toml", &simple_pipeline("b22b", "\"big.jsonl\"", "", "formats = [\"parquet\", \"jsonl\"]"));
    let o = build(&dir, &["-q", "--max-shard-bytes", "20000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t: a single row makes a JSON Lines file of "), "{}", stderr(&o));
    // without JSON Lines copies, only the Parquet file has to fit
    write(&dir, "pipeline.toml", &simple_pipeline("b22b", "\"big.jsonl\"", "", ""));
    let o = build(&dir, &["-q", "--max-shard-bytes", "20000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // the next table starts while a table's files are finished: a table refused there fails
    // the build all the same, whether a table comes after it or before it
    for (name, tables) in [("b22c", ["t", "u"]), ("b22d", ["u", "t"])] {
        let table = |n: &str| {
            let from = if n == "t" { "raw" } else { "other" };
            format!("[[table]]\nname = \"{n}\"\nquery = \"SELECT * FROM {from}\"\n")
        };
        write(
            &dir,
            "pipeline.toml",
            &format!(
                "name = \"{name}\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"big.jsonl\"\nformat = \"jsonl\"\n\
                 [[source]]\nname = \"other\"\npath = \"metrics.jsonl\"\nformat = \"jsonl\"\n{}{}",
                table(tables[0]),
                table(tables[1])
            ),
        );
        let o = build(&dir, &["-q", "--max-shard-bytes", "20000"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("table t: a single row makes a JSON Lines file of "), "{}", stderr(&o));
        assert!(!release(&dir, name).exists(), "{name}: no release");
    }
    // a table after it that fails too does not hide its error: t failed first
    write(
        &dir,
        "pipeline.toml",
        "name = \"b22e\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"big.jsonl\"\n\
         format = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n[[table]]\nname = \"u\"\n\
         query = \"SELECT CAST(x AS INT) AS y FROM (VALUES ('a')) AS v(x)\"\n",
    );
    let o = build(&dir, &["-q", "--max-shard-bytes", "20000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("table t: a single row makes a JSON Lines file of "), "{}", stderr(&o));
    assert!(!stderr(&o).contains("table u"), "{}", stderr(&o));
}

#[test]
fn b28_bare_nan_and_infinity() {
    let (_t, dir) = case("B28");
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b28", "\"metrics.jsonl\"", "", "formats = [\"parquet\", \"jsonl\"]"),
    );
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("non-finite values read: 3"), "{err}");
    for place in [
        "metrics.jsonl:1:$.value_loss NaN",
        "metrics.jsonl:3:$[\"train/return\"] -Infinity",
        "metrics.jsonl:4:$[\"train/return\"] Infinity",
    ] {
        assert!(err.contains(place), "{place} in {err}");
    }
    let r = release(&dir, "b28");
    assert_eq!(
        query_with(
            &r,
            "SELECT step, value_loss, isnan(value_loss) AS nan, value_loss IS NULL AS null, \"train/return\", \"opt.lr\" FROM t ORDER BY step",
            &[]
        ),
        "step,value_loss,nan,null,train/return,opt.lr\n1000,NaN,true,false,1.0,0.0003\n2000,0.52,false,false,0.0,0.0003\n3000,,,true,-Infinity,0.0003\n4000,,,true,Infinity,0.00025\n"
    );
    let jsonl = std::fs::read_to_string(r.join("jsonl/t.jsonl")).unwrap();
    for line in jsonl.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("strict JSON");
        assert!(v.is_object());
    }
    // as pandas and `datasets` write them: null, counted in the manifest and the card
    assert!(jsonl.starts_with("{\"step\":1000,\"train/return\":1.0,\"value_loss\":null,"), "{jsonl}");
    assert!(jsonl.contains("{\"step\":3000,\"train/return\":null,\"value_loss\":null,"), "{jsonl}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        m["tables"][0]["nonfinite_values"],
        serde_json::json!({"train/return": {"Infinity": 1, "-Infinity": 1}, "value_loss": {"NaN": 1}})
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("the JSON Lines copies hold `null` in their place"), "the card states the policy");
    assert!(card.contains("- table `t`: 3 non-finite values became `null` in the JSON Lines copies"), "{card}");
}

#[test]
fn b30_resumed_duplicate_steps() {
    let (_t, dir) = case("B30");
    write(
        &dir,
        "s.json",
        r#"{"fields":[{"name":"run_id","type":"string"},{"name":"step","type":"integer"},{"name":"reward","type":"number"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["run_id","step"]}"#,
    );
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b30", "\"metrics.jsonl\"", "", "schema = \"s.json\"\non_duplicate_key = \"keep-last\""),
    );
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("table t: 2 rows superseded by the duplicate-key rule"), "{err}");
    assert!(
        err.contains(
            "metrics.jsonl:5: duplicate primary key (run_id=r1, step=5); superseded by the row at metrics.jsonl:7"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "metrics.jsonl:6: duplicate primary key (run_id=r1, step=6); superseded by the row at metrics.jsonl:8"
        ),
        "{err}"
    );
    let r = release(&dir, "b30");
    assert_eq!(
        query_with(&r, "SELECT step, reward FROM t WHERE step IN (5, 6) ORDER BY step", &[]),
        "step,reward\n5,0.25\n6,0.29\n"
    );
    assert_eq!(
        query_with(&r, "SELECT count(*), count(DISTINCT step) FROM t", &[]),
        "count(*),count(DISTINCT t.step)\n8,8\n"
    );
    let rejects = std::fs::read_to_string(r.join("rejects/t.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 2);
    assert!(rejects.contains("\"_source_line\":5") && rejects.contains("\"_source_line\":6"), "{rejects}");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("| rows superseded by duplicate-key rules | 2 |"), "counted in the card");
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // error mode
    let o = build(&dir, &["--force", "--on-duplicate-key", "error"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("2 rows share this primary key: metrics.jsonl:5, metrics.jsonl:7 (table t, key run_id=r1, step=5"),
        "{err}"
    );
    // the way to choose among them is said once, after the violations
    let hint = "hint: rows that share a primary key where the later one is the one to keep (a run resumed from a \
                checkpoint logs its steps again) can be chosen among: `on_duplicate_key = \"keep-last\"` in the \
                [[table]] of t (or `--on-duplicate-key keep-last`) keeps the last of each, and rejects/ holds the \
                others; the rule orders rows by `_source_file` and `_source_line`, which the table's query must select \
                (rows that share a key for another reason are not the same: two values of one result in a table \
                merged by hand are for its author to settle, and a counter that started again needs what tells its \
                rows apart in the key)";
    assert_eq!(err.matches(hint).count(), 1, "{err}");
    // the JSON document says it too, and each violation carries what it found
    let o = build(&dir, &["--force", "--on-duplicate-key", "error", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["hints"].as_array().map(Vec::len), Some(1), "{doc}");
    assert_eq!(format!("hint: {}", doc["hints"][0].as_str().unwrap()), hint);
    assert_eq!(
        doc["violations"][0]["finding"],
        serde_json::json!({"kind": "shared_key", "rows": 2, "same_line": false}),
        "{doc}"
    );
}

#[test]
fn b32_same_size_corruption_is_named_with_both_digests() {
    let (_t, dir) = case("B32");
    write(&dir, "pipeline.toml", &simple_pipeline("b32", "\"metrics.jsonl\"", "", ""));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b32");
    let shard = r.join("data/t.parquet");
    let expected = runpack::stages::hash::sha256_file(&shard).unwrap().sha256;
    std::fs::copy(dir.join("make.py"), r.join("make.py")).unwrap();
    let o = run(std::process::Command::new(python()).arg(r.join("make.py")).arg(&shard));
    std::fs::remove_file(r.join("make.py")).unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let actual = runpack::stages::hash::sha256_file(&shard).unwrap().sha256;
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains(&format!("data/t.parquet: sha256 mismatch: expected {expected}, found {actual} (the size matches, the content does not)")), "{out}");
    assert_eq!(out.lines().count(), 1, "other files verify: {out}");
    let o = run(std::process::Command::new(python()).arg(dir.join("make.py")).arg(&shard));
    assert!(o.status.success());
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn b34_lfs_pointers_are_detected_before_parsing() {
    let (_t, dir) = case("B34");
    let o =
        run(bin().args(["query", "-q"]).arg(dir.join("foreign/data/train-0.parquet")).arg("SELECT count(*) FROM t"));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("train-0.parquet is a Git LFS pointer (object of 48,213,907 bytes, oid sha256:4d7a9c1e"),
        "{err}"
    );
    assert!(err.contains("git lfs pull"), "{err}");
    let p = one_source("b34f", "foreign/data/*.parquet", "parquet", "", "SELECT * FROM raw", "");
    write(&dir, "pipeline.toml", &p);
    let o = build(&dir, &[]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("foreign/data/train-0.parquet is a Git LFS pointer"), "{}", stderr(&o));
    // a release whose shard became its own pointer, then a pointer to another object
    write(&dir, "pipeline.toml", &simple_pipeline("b34", "\"metrics.jsonl\"", "", ""));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b34");
    let shard = r.join("data/t.parquet");
    let keep = std::fs::read(&shard).unwrap();
    let o = run(std::process::Command::new(python()).arg(dir.join("make.py")).arg(&shard));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("data/t.parquet: not downloaded (Git LFS pointer to the expected object"),
        "{}",
        stdout(&o)
    );
    // the one cause, not also the card's row count that the pointer cannot match
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));
    let o = run(bin().args(["query", "-q"]).arg(&r).arg("SELECT count(*) FROM t"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("data/t.parquet is a Git LFS pointer (object of"), "{}", stderr(&o));
    std::fs::write(&shard, &keep).unwrap();
    let o = run(std::process::Command::new(python()).arg(dir.join("make.py")).arg(&shard).arg("--other"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("data/t.parquet: Git LFS pointer to a different object"), "{out}");
    assert!(!out.contains("not downloaded"), "{out}");
}

#[test]
fn b35_a_column_that_only_appears_in_a_later_file() {
    let (_t, dir) = case("B35");
    make(&dir, &[]);
    for (name, paths) in
        [("b35", "[\"shard-0.jsonl\", \"shard-1.jsonl\"]"), ("b35r", "[\"shard-1.jsonl\", \"shard-0.jsonl\"]")]
    {
        write(&dir, "pipeline.toml", &simple_pipeline(name, paths, "columns = \"union\"", ""));
        let o = build(&dir, &["-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = release(&dir, name);
        assert_eq!(type_of(&r, "t", "kl"), "Float64");
        assert_eq!(
            query_with(&r, "SELECT count(kl), max(kl), count(*) FROM t", &[]),
            "count(t.kl),max(t.kl),count(*)\n1,0.01,1001\n"
        );
    }
    // raw JSONL: inference reads every line of every file and prints the schema used
    let o = run(bin()
        .args(["query", "--format", "csv"])
        .arg(dir.join("shard-*.jsonl"))
        .arg("SELECT count(kl), max(kl), count(*) FROM t"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "count(t.kl),max(t.kl),count(*)\n1,0.01,1001\n");
    assert!(stderr(&o).contains("  kl: Float64"), "{}", stderr(&o));
}

#[test]
fn b37_strings_and_fractions_in_an_integer_column() {
    let (_t, dir) = case("B37");
    let declared = "[[source.field]]\nname = \"step\"\ntype = \"integer\"\n[[source.field]]\nname = \"tokens\"\ntype = \"integer\"";
    write(&dir, "pipeline.toml", &simple_pipeline("b37", "\"metrics.jsonl\"", declared, ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("metrics.jsonl:2:$.step: expected integer, found string \"2\""), "{err}");
    assert!(err.contains("metrics.jsonl:3:$.step: fractional value 3.5 for integer column"), "{err}");
    // lenient strings: "2" becomes 2 and is counted; 3.5 still fails
    let lenient = format!("coerce_numeric_strings = true\n{declared}");
    write(&dir, "pipeline.toml", &simple_pipeline("b37l", "\"metrics.jsonl\"", &lenient, ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("metrics.jsonl:3:$.step: fractional value 3.5"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("metrics.jsonl:2:"), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let without3: String = text.lines().filter(|l| !l.contains("3.5")).map(|l| format!("{l}\n")).collect();
    write(&dir, "metrics.jsonl", &without3);
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("strings coerced in raw: 1") && stderr(&o).contains("metrics.jsonl:2:$.step"),
        "{}",
        stderr(&o)
    );
    assert_eq!(query_with(&release(&dir, "b37l"), "SELECT step FROM t ORDER BY step", &[]), "step\n1\n2\n4\n");
}

#[test]
fn b38_integers_above_int64() {
    let (_t, dir) = case("B38");
    write(&dir, "pipeline.toml", &simple_pipeline("b38", "\"seeds.jsonl\"", "", "formats = [\"parquet\", \"jsonl\"]"));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b38");
    assert_eq!(type_of(&r, "t", "seed"), "UInt64");
    assert_eq!(
        query_with(&r, "SELECT run, seed FROM t ORDER BY run", &[]),
        "run,seed\na,18446744073709551615\nb,42\nc,9223372036854775808\n"
    );
    let jsonl = std::fs::read_to_string(r.join("jsonl/t.jsonl")).unwrap();
    assert!(
        jsonl.contains("\"seed\":18446744073709551615") && jsonl.contains("\"seed\":9223372036854775808"),
        "{jsonl}"
    );
    write(&dir, "pipeline.toml", &simple_pipeline("b38m", "\"mixed.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("mixed.jsonl:1") && err.contains("mixed.jsonl:2"), "{err}");
    assert!(err.contains("no single integer type holds both"), "{err}");
    // the value the message names is one violation, not a second for its conversion
    assert!(!err.contains("out of range for Int64") && err.contains("1 violation found"), "{err}");
    write(&dir, "pipeline.toml", &simple_pipeline("b38o", "\"overflow.jsonl\"", "", ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("overflow.jsonl:1:$.seed: integer 18446744073709551616 out of range"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn b39_nan_and_parquet_statistics() {
    let (_t, dir) = case("B39");
    let p = "name = \"b39\"\n[[source]]\nname = \"rewards\"\npath = \"rewards.jsonl\"\nformat = \"jsonl\"\n[[source]]\nname = \"allnan_raw\"\npath = \"allnan.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"t\"\nquery = \"SELECT step, reward FROM rewards\"\n[[table]]\nname = \"allnan\"\nquery = \"SELECT step, reward FROM allnan_raw\"\n";
    write(&dir, "pipeline.toml", p);
    let o = build(&dir, &["-q", "--row-group-rows", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b39");
    let stats = |path: &Path| -> Vec<(Option<f64>, Option<f64>, Option<u64>)> {
        let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        reader
            .metadata()
            .row_groups()
            .iter()
            .map(|rg| {
                let col = rg.columns().iter().find(|c| c.column_path().string() == "reward").unwrap();
                match col.statistics() {
                    Some(parquet::file::statistics::Statistics::Double(s)) => {
                        (s.min_opt().copied(), s.max_opt().copied(), s.null_count_opt())
                    }
                    other => panic!("{other:?}"),
                }
            })
            .collect()
    };
    assert_eq!(
        stats(&r.join("data/t.parquet")),
        vec![(Some(1.0), Some(2.0), Some(0)), (Some(0.5), Some(0.5), Some(0)), (Some(3.0), Some(3.0), Some(0))]
    );
    assert!(stats(&r.join("data/allnan.parquet")).iter().all(|(min, max, _)| min.is_none() && max.is_none()));
    for source in [dir.join("rewards.parquet"), r.clone()] {
        for pruning in ["true", "false"] {
            let q = |sql: &str| {
                query_with(&source, &format!("SET datafusion.execution.parquet.pruning = {pruning}; {sql}"), &[])
            };
            assert_eq!(
                q("SELECT step FROM t WHERE reward > 1.5 ORDER BY step"),
                "step\n2\n3\n4\n5\n7\n",
                "{}",
                source.display()
            );
            assert_eq!(q("SELECT step FROM t WHERE reward < 1.5 ORDER BY step"), "step\n1\n6\n");
            assert_eq!(q("SELECT step FROM t WHERE reward > 1.5 AND NOT isnan(reward) ORDER BY step"), "step\n3\n7\n");
            assert_eq!(q("SELECT step FROM t WHERE isnan(reward) ORDER BY step"), "step\n2\n4\n5\n");
            // the top rows are NaN (not the statistics' 3.0), whatever runs while the query does
            assert_eq!(q("SELECT step FROM t ORDER BY reward DESC, step LIMIT 2"), "step\n2\n4\n");
            assert_eq!(q("SELECT step FROM t WHERE step > 5 ORDER BY step"), "step\n6\n7\n");
        }
    }
    // an aggregate is read from the data, never from statistics that leave NaN out
    assert_eq!(
        query_with(&r, "SELECT max(reward) AS hi, min(reward) AS lo, count(*) AS n FROM t", &[]),
        "hi,lo,n\nNaN,0.5,7\n"
    );
    // and per group the same, whatever the order the rows come in (apache/datafusion#24432)
    assert_eq!(
        query_with(&r, "SELECT step % 2 AS g, max(reward) AS hi, min(reward) AS lo FROM t GROUP BY 1 ORDER BY 1", &[]),
        "g,hi,lo\n0,NaN,0.5\n1,NaN,1.0\n"
    );
    assert_eq!(
        query_with(
            &r,
            "SELECT g, max(x) AS hi, min(x) AS lo FROM (VALUES (1, 1.0), (1, 'NaN'::double), (1, 2.0)) v(g, x) GROUP BY g",
            &[]
        ),
        "g,hi,lo\n1,NaN,1.0\n"
    );
}

#[test]
fn b40_concatenated_compressed_frames() {
    let (_t, dir) = case("B40");
    make(&dir, &[]);
    let mut data = Vec::new();
    for f in ["metrics.jsonl.zst", "metrics.jsonl.gz"] {
        write(&dir, "pipeline.toml", &simple_pipeline("b40", &format!("\"{f}\""), "", ""));
        let o = build(&dir, &["-q", "--force"]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let r = release(&dir, "b40");
        assert_eq!(
            query_with(&r, "SELECT step, loss, _source_line FROM t ORDER BY step", &[]),
            "step,loss,_source_line\n1,1.5,1\n2,1.25,2\n3,1.0,3\n"
        );
        data.push(query_with(&r, "SELECT step, loss FROM t ORDER BY step", &[]));
    }
    assert_eq!(data[0], data[1]);
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b40b", "\"bad.jsonl.zst\"", "[[source.field]]\nname = \"step\"\ntype = \"integer\"", ""),
    );
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bad.jsonl.zst:3:$.step: expected integer, found string \"three\""), "{}", stderr(&o));
}

#[test]
fn b41_dictionary_and_plain_strings() {
    let (_t, dir) = case("B41");
    make(&dir, &[]);
    let p = one_source("b41", "foreign/*.parquet", "parquet", "", "SELECT step, task, score FROM raw", "");
    write(&dir, "pipeline.toml", &p);
    let o = build(&dir, &["-q", "--max-shard-bytes", "1400"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b41");
    assert_eq!(type_of(&r, "t", "task"), "Utf8");
    for (path, s) in parquet_schemas(&r) {
        assert_eq!(crate_type(&s, "task"), "Utf8", "{path}");
    }
    write(
        &dir,
        "s.json",
        r#"{"fields":[{"name":"step","type":"integer"},{"name":"task","type":"string"},{"name":"score","type":"number"}]}"#,
    );
    let schema = dir.join("s.json");
    for pruning in ["true", "false"] {
        let q = |sql: &str| {
            query_with(
                &dir.join("foreign"),
                &format!("SET datafusion.execution.parquet.pruning = {pruning}; {sql}"),
                &["--schema", schema.to_str().unwrap()],
            )
        };
        assert_eq!(
            q("SELECT task, count(*) FROM t GROUP BY task ORDER BY task"),
            "task,count(*)\ngsm8k,6\nmath500,1\n"
        );
        assert_eq!(q("SELECT count(*) FROM t WHERE task = 'gsm8k'"), "count(*)\n6\n");
        assert_eq!(q("SELECT step FROM t WHERE task = 'math500'"), "step\n6\n");
        assert_eq!(q("SELECT DISTINCT arrow_typeof(task) FROM t"), "arrow_typeof(t.task)\nUtf8\n");
    }
}

#[test]
fn b42_timestamps_with_offsets_and_without() {
    let (_t, dir) = case("B42");
    let ts = "[[source.field]]\nname = \"ts\"\ntype = \"datetime\"";
    write(
        &dir,
        "pipeline.toml",
        &simple_pipeline("b42", "\"events.jsonl\"", ts, "").replace("name = \"t\"", "name = \"events\""),
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b42");
    assert_eq!(type_of(&r, "events", "ts"), "Timestamp(Microsecond, \"UTC\")");
    assert_eq!(
        query_with(&r, "SELECT step, CAST(ts AS BIGINT) AS us FROM events ORDER BY step", &[]),
        "step,us\n1,1740830400000000\n2,1740830401000000\n3,1740830402250000\n"
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("dtype: timestamp[us, tz=UTC]"), "{card}");
    let mut outputs = Vec::new();
    for tz in ["UTC", "Asia/Tokyo"] {
        let o = run(bin()
            .env("TZ", tz)
            .args(["query", "-q"])
            .arg(&r)
            .arg("SELECT step FROM events WHERE ts >= TIMESTAMP '2025-03-01T12:00:01Z' ORDER BY ts; "));
        let o2 = run(bin().env("TZ", tz).args(["query", "-q"]).arg(&r).arg("SELECT ts FROM events ORDER BY ts"));
        outputs.push((stdout(&o), stdout(&o2)));
    }
    assert_eq!(outputs[0], outputs[1], "output must not depend on TZ");
    assert!(outputs[0].0.contains("| 2    |") && outputs[0].0.contains("| 3    |"), "{}", outputs[0].0);
    assert!(outputs[0].1.contains("2025-03-01T12:00:00Z"), "{}", outputs[0].1);
    // naive timestamps: refused unless a zone is assumed
    write(&dir, "pipeline.toml", &simple_pipeline("b42n", "\"naive.jsonl\"", ts, ""));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("naive.jsonl:1:$.ts: timestamp without time zone"), "{}", stderr(&o));
    for (zone, us) in [("UTC", "1740830403000000"), ("Asia/Tokyo", "1740798003000000")] {
        write(
            &dir,
            "pipeline.toml",
            &simple_pipeline("b42n", "\"naive.jsonl\"", &format!("assume_timezone = \"{zone}\"\n{ts}"), ""),
        );
        let o = build(&dir, &["-q", "--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            query_with(&release(&dir, "b42n"), "SELECT CAST(ts AS BIGINT) AS us FROM t", &[]),
            format!("us\n{us}\n")
        );
    }
}

#[test]
fn foreign_keys_to_one_table_through_different_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "parent.jsonl", "{\"a\": \"x\", \"b\": \"y\"}\n");
    write(dir, "child.jsonl", "{\"ra\": \"x\", \"rb\": \"y\"}\n{\"ra\": \"x\", \"rb\": \"z\"}\n");
    write(
        dir,
        "parent.json",
        r#"{"fields":[{"name":"a","type":"string"},{"name":"b","type":"string"}],"primaryKey":"a"}"#,
    );
    write(
        dir,
        "child_a.json",
        r#"{"fields":[{"name":"ra","type":"string"},{"name":"rb","type":"string"}],"foreignKeys":[{"fields":"ra","reference":{"resource":"parent","fields":"a"}}]}"#,
    );
    write(
        dir,
        "child_b.json",
        r#"{"fields":[{"name":"ra","type":"string"},{"name":"rb","type":"string"}],"foreignKeys":[{"fields":"rb","reference":{"resource":"parent","fields":"b"}}]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"fk\"\n[[source]]\nname = \"p\"\npath = \"parent.jsonl\"\nformat = \"jsonl\"\n[[source]]\nname = \"c\"\npath = \"child.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"parent\"\nschema = \"parent.json\"\nquery = \"SELECT a, b FROM p\"\n\
         [[table]]\nname = \"child_a\"\nschema = \"child_a.json\"\nquery = \"SELECT ra, rb FROM c\"\n\
         [[table]]\nname = \"child_b\"\nschema = \"child_b.json\"\nquery = \"SELECT ra, rb FROM c\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("has no matching row").count(), 1, "{err}");
    assert!(err.contains("rb: value \"z\" has no matching row in table parent(b) (table child_b"), "{err}");
}

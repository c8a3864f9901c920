//! No value changes without a word: inferred CSV and JSON columns keep the text of values that
//! would change by being read as numbers, and a JSON `-0` read as the integer 0 is said.

use std::path::Path;

use crate::util::*;

/// The Arrow type of each column of table `t`, from the release's manifest, as `name:type`.
fn arrow_types(release: &Path) -> Vec<String> {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    m["tables"][0]["arrow_schema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{}:{}", f["name"].as_str().unwrap(), f["type"].as_str().unwrap()))
        .collect()
}

#[test]
fn a_csv_column_keeps_its_text_where_reading_a_number_would_change_a_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // id: digit strings and one hash that reads as 0.0; pad: leading zeros; negz: `-0`, which an
    // integer column reads as 0; exp: an integer with an unsigned exponent (100000.0);
    // lr: numbers as number writers write them; mixed: integers beside a decimal, held exactly
    write(
        dir,
        "runs.csv",
        "id,pad,negz,exp,lr,mixed\n\
         12345678,007,-0,1e5,1e-05,12345678\n\
         0e523456,1,1,2,0.5,1.5\n\
         98765432,2,2,3,1.5e+16,3\n",
    );
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "vals",
            "runs.csv",
            "csv",
            "",
            "SELECT id, pad, negz, exp, lr, mixed FROM raw",
            "formats = [\"parquet\", \"jsonl\"]\n",
        ),
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "vals");
    assert_eq!(
        arrow_types(&r),
        ["id:Utf8", "pad:Utf8", "negz:Utf8", "exp:Utf8", "lr:Float64", "mixed:Float64"],
        "{}",
        stderr(&o)
    );
    assert_eq!(
        query(&r, "SELECT id, pad, negz, exp FROM t ORDER BY id"),
        "id,pad,negz,exp\n0e523456,1,1,2\n12345678,007,-0,1e5\n98765432,2,2,3\n"
    );
    assert_eq!(
        query(&r, "SELECT lr, mixed FROM t ORDER BY mixed"),
        "lr,mixed\n0.5,1.5\n1.5e16,3.0\n0.00001,12345678.0\n"
    );
    // the JSON Lines copy holds the texts as written
    let jsonl = std::fs::read_to_string(r.join("jsonl/t.jsonl")).unwrap();
    assert!(jsonl.contains(r#""id":"0e523456","pad":"1","negz":"1","exp":"2""#), "{jsonl}");
    // declared as numbers, the same cells are read as numbers
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "vals",
            "runs.csv",
            "csv",
            "[[source.field]]\nname = \"exp\"\ntype = \"number\"\n",
            "SELECT exp FROM raw",
            "",
        ),
    );
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&r, "SELECT exp FROM t ORDER BY exp"), "exp\n2.0\n3.0\n100000.0\n");
}

#[test]
fn a_json_negative_zero_keeps_an_integer_column_and_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "rows.jsonl",
        "{\"n\": 1, \"f\": 0.5, \"z\": -0}\n{\"n\": -0, \"f\": -0.0, \"z\": -0}\n{\"n\": 3, \"f\": 2.5, \"z\": -0}\n",
    );
    write(dir, "pipeline.toml", &one_source("vals", "rows.jsonl", "jsonl", "", "SELECT n, f, z FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "vals");
    // n stays an integer column; f keeps its -0.0; a column of negative zeros alone is a float one
    assert_eq!(arrow_types(&r), ["n:Int64", "f:Float64", "z:Float64"]);
    assert_eq!(query(&r, "SELECT n, f, z FROM t ORDER BY n"), "n,f,z\n0,-0.0,-0.0\n1,0.5,-0.0\n3,2.5,-0.0\n");
    let said = "warning: rows.jsonl:2: raw: 1 value `-0` read as the integer 0 (the first: $.n), as an integer column \
                holds no negative zero; declare the column `number` (a [[source.field]] in pipeline.toml) to keep -0.0";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    // declared an integer, the same
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "vals",
            "rows.jsonl",
            "jsonl",
            "[[source.field]]\nname = \"n\"\ntype = \"integer\"\n",
            "SELECT n FROM raw",
            "",
        ),
    );
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    assert_eq!(query(&r, "SELECT n FROM t ORDER BY n"), "n\n0\n1\n3\n");
    // a CSV `-0` declared an integer is said alike
    write(dir, "rows.csv", "n\n1\n-0\n");
    write(
        dir,
        "pipeline.toml",
        &one_source(
            "vals",
            "rows.csv",
            "csv",
            "[[source.field]]\nname = \"n\"\ntype = \"integer\"\n",
            "SELECT n FROM raw",
            "",
        ),
    );
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: rows.csv:3: raw: 1 value `-0` read as the integer 0 (the first: $.n)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_query_s_time_without_a_zone_is_stored_as_utc_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "a.jsonl", "{\"k\": 1, \"ts\": \"2024-01-01 10:00:00\"}\n");
    let sql =
        "SELECT k, CAST(ts AS TIMESTAMP) AS naive, CAST(ts AS TIMESTAMP) AT TIME ZONE 'Europe/Paris' AS paris FROM raw";
    write(dir, "pipeline.toml", &one_source("z", "a.jsonl", "jsonl", "", sql, ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("table t, column `naive`: the query gives times without a time zone, stored as UTC times"),
        "{err}"
    );
    assert!(!err.contains("column `paris`"), "a time with its zone is not warned of: {err}");
    // the card says it too, as every warning of the build
    let card = std::fs::read_to_string(release(dir, "z").join("README.md")).unwrap();
    assert!(card.contains("column `naive`: the query gives times without a time zone"), "{card}");
    assert_eq!(
        query(&release(dir, "z"), "SELECT CAST(naive AS VARCHAR) AS n, CAST(paris AS VARCHAR) AS p FROM t"),
        "n,p\n2024-01-01T10:00:00Z,2024-01-01T09:00:00Z\n"
    );
}

#[test]
fn a_number_below_the_smallest_float_is_not_read_as_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // inferred: the column keeps its text, as for 1e400
    write(dir, "a.csv", "k,tiny\n1,1e-400\n2,2.5\n3,0.0e-999\n");
    write(dir, "pipeline.toml", &one_source("u", "a.csv", "csv", "", "SELECT k, tiny FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(arrow_types(&release(dir, "u")), ["k:Int64", "tiny:Utf8"]);
    assert_eq!(query(&release(dir, "u"), "SELECT tiny FROM t ORDER BY k"), "tiny\n1e-400\n2.5\n0.0e-999\n");
    // declared a number: the cell is a violation, named with its place
    let field = "[[source.field]]\nname = \"tiny\"\ntype = \"number\"\n";
    write(dir, "pipeline.toml", &one_source("u", "a.csv", "csv", field, "SELECT k, tiny FROM raw", ""));
    let o = build(dir, &["--force", "-q"]);
    assert_violations(&o, 1, &["a.csv:2:$.tiny: number 1e-400 is too small for a 64-bit float (it would read as 0)"]);
    // a JSON string read as a number on request: refused the same way
    write(dir, "b.jsonl", "{\"k\": 1, \"x\": \"1e-400\"}\n{\"k\": 2, \"x\": \"0e-400\"}\n");
    let source = "coerce_numeric_strings = true\n[[source.field]]\nname = \"x\"\ntype = \"number\"\n";
    write(dir, "pipeline.toml", &one_source("u", "b.jsonl", "jsonl", source, "SELECT k, x FROM raw", ""));
    let o = build(dir, &["--force", "-q"]);
    assert_violations(
        &o,
        1,
        &["b.jsonl:1:$.x: string \"1e-400\" holds a number too small for a 64-bit float (it would read as 0)"],
    );
}

#[test]
fn a_json_float_that_reads_as_a_whole_number_it_is_not_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fields =
        "[[source.field]]\nname = \"n\"\ntype = \"integer\"\n[[source.field]]\nname = \"x\"\ntype = \"number\"\n";
    // a 64-bit float reads 2.0000000000000000001 as 2.0, 4503599627370496.5 as 4503599627370496.0
    // and 1e-400 as 0.0: the integer and number columns refuse them; 0.99999999999999999 is the
    // float 1.0 in a number column, as any float is its nearest
    let records = [
        r#"{"k": 1, "n": 2.0000000000000000001, "x": 1}"#,
        r#"{"k": 2, "n": 5.0, "x": 1e-400}"#,
        r#"{"k": 3, "n": 4503599627370496.5, "x": 2}"#,
        r#"{"k": 4, "n": 7, "x": 0.99999999999999999}"#,
        r#"{"k": 5, "n": 8.00e0, "x": -1.0e-999}"#,
    ];
    let said = [
        ":$.n: fractional value 2.0000000000000000001 for integer column",
        ":$.x: number 1e-400 is too small for a 64-bit float (it would read as 0)",
        ":$.n: fractional value 4503599627370496.5 for integer column",
        ":$.x: number -1.0e-999 is too small for a 64-bit float (it would read as 0)",
    ];
    // JSON Lines, flat (the fast path) and with a nested value (the general one), and a document
    let nested: Vec<String> = records.iter().map(|r| r.replace("{\"k\"", "{\"m\": {\"a\": 1}, \"k\"")).collect();
    for (file, format, text) in [
        ("a.jsonl", "jsonl", records.join("\n")),
        ("b.jsonl", "jsonl", nested.join("\n")),
        ("c.json", "json", format!("[{}]", records.join(",\n"))),
    ] {
        write(dir, file, &text);
        write(dir, "pipeline.toml", &one_source("u", file, format, fields, "SELECT k, n, x FROM raw", ""));
        let o = build(dir, &["--force", "-q"]);
        let said: Vec<String> = said.iter().map(|s| format!("{file}:{s}").replace(&format!("{file}::"), "")).collect();
        let said: Vec<&str> = said.iter().map(String::as_str).collect();
        assert_violations(&o, 4, &said);
        // set aside, the rows keep their numbers as written
        let o = build(dir, &["--force", "-q", "--on-invalid", "reject"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(query(&release(dir, "u"), "SELECT k, n, x FROM t ORDER BY k"), "k,n,x\n4,7,1.0\n");
        let rejects = std::fs::read_to_string(release(dir, "u").join("rejects/raw.jsonl")).unwrap();
        for token in ["2.0000000000000000001", "1e-400", "4503599627370496.5", "-1.0e-999"] {
            assert!(rejects.contains(token), "{token}\n{rejects}");
        }
    }
    // a CSV cell is held to its text the same way, exponent or not
    write(dir, "d.csv", "k,n\n1,2.00000000000000000001e0\n2,1e-400\n3,25e-1\n4,2.5e1\n");
    let field = "[[source.field]]\nname = \"n\"\ntype = \"integer\"\n";
    write(dir, "pipeline.toml", &one_source("u", "d.csv", "csv", field, "SELECT k, n FROM raw", ""));
    let o = build(dir, &["--force", "-q"]);
    assert_violations(
        &o,
        3,
        &[
            "d.csv:2:$.n: fractional value 2.00000000000000000001e0 for integer column",
            "d.csv:3:$.n: fractional value 1e-400 for integer column",
            "d.csv:4:$.n: fractional value 25e-1 for integer column",
        ],
    );
}

#[test]
fn a_negative_zero_a_table_stores_as_an_integer_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "d.jsonl", "{\"n\": -0.0}\n{\"n\": 2.0}\n{\"n\": -0.0}\n");
    write(dir, "t.json", "{\"fields\": [{\"name\": \"n\", \"type\": \"integer\"}]}");
    let toml = one_source("z", "d.jsonl", "jsonl", "", "SELECT n FROM raw", "schema = \"t.json\"\n");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("table t, column `n`: 2 negative zeros (-0.0) stored as the integer 0, which has no sign"),
        "{}",
        stderr(&o)
    );
    assert_eq!(query(&release(dir, "z"), "SELECT n FROM t ORDER BY n"), "n\n0\n0\n2\n");
}

#[test]
fn a_column_of_several_types_is_refused_with_the_way_to_keep_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "d.jsonl", "{\"a\": 1}\n{\"a\": \"s\"}\n{\"a\": 2.5}\n");
    write(dir, "pipeline.toml", &one_source("mx", "d.jsonl", "jsonl", "", "SELECT a FROM raw", ""));
    let o = build(dir, &[]);
    assert_violations(&o, 1, &["d.jsonl:2:$.a: expected number, found string \"s\""]);
    let hint = "hint: a column whose values are of several types on purpose (raw.a) is kept whole, as JSON text, when \
                its source declares it so: a [[source.field]] table with name = \"a\" and type = \"any\", each key on a \
                line of its own";
    assert!(stderr(&o).contains(hint), "{}", stderr(&o));
    // as the hint says
    let field = "[[source.field]]\nname = \"a\"\ntype = \"any\"\n";
    write(dir, "pipeline.toml", &one_source("mx", "d.jsonl", "jsonl", field, "SELECT a FROM raw", ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "mx"), "SELECT a FROM t ORDER BY a"), "a\n\"\"\"s\"\"\"\n1\n2.5\n");
}

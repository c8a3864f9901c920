//! The croissant stage: `croissant.json` of a release, validated and read by `mlcroissant`,
//! and the card's "How to load" code run against the local release.

use crate::util::*;

/// `tests/python/check_croissant.py` on `release`: the record counts by record set, the number
/// of file objects whose sha256 was checked, and the validation warnings.
fn check(release: &std::path::Path) -> serde_json::Value {
    let o = run(std::process::Command::new(python()).arg(repo().join("tests/python/check_croissant.py")).arg(release));
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn mlcroissant_validates_the_example_and_reads_every_record_set_with_the_manifests_rows() {
    let r = example_release();
    let text = std::fs::read_to_string(r.join("croissant.json")).unwrap();
    insta::assert_snapshot!("example_croissant", text);
    let found = check(r);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    for t in m["tables"].as_array().unwrap() {
        assert_eq!(found["records"][t["name"].as_str().unwrap()], t["rows"], "{found}");
    }
    let data = m["files"].as_array().unwrap().iter().filter(|f| f["kind"] == "parquet" || f["kind"] == "jsonl").count();
    assert_eq!(found["files"], data);
    // listed and checked like the other metadata files
    let sums = std::fs::read_to_string(r.join("SHA256SUMS")).unwrap();
    assert!(sums.lines().any(|l| l.ends_with("  croissant.json")), "{sums}");
    let o = run(bin().arg("verify").arg(r));
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn croissant_json_carries_the_rai_fields_and_reads_shards_splits_lists_and_structs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut rows = String::new();
    for i in 0..600 {
        let split = if i % 4 == 0 { "test" } else { "train" };
        rows.push_str(&format!(
            "{{\"id\": {i}, \"split\": \"{split}\", \"tags\": [\"t{i}\", \"x\"], \"score\": {}.5, \"ok\": {}, \
             \"meta\": {{\"seed\": {i}, \"lr\": 0.001}}, \"day\": \"2025-03-{:02}\"}}\n",
            i % 7,
            i % 2 == 0,
            i % 28 + 1
        ));
    }
    write(dir, "raw/rows.jsonl", &rows);
    write(
        dir,
        "t.json",
        r#"{"fields":[
  {"name":"id","type":"integer","description":"Row number."},
  {"name":"split","type":"string"},
  {"name":"tags","type":"array","items":{"type":"string"}},
  {"name":"score","type":"number"},
  {"name":"ok","type":"boolean"},
  {"name":"meta","type":"object","fields":[{"name":"seed","type":"integer"},{"name":"lr","type":"number"}]},
  {"name":"day","type":"date"}
],"primaryKey":["id"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"cr\"\n[card]\nlicense = \"cc-by-4.0\"\ndescription = \"Rows for Croissant.\"\n\
         citation = \"@misc{cr}\"\n\
         [card.rai]\ndata_collection = \"Written by a test.\"\npersonal_sensitive_information = \"None.\"\n\
         [[source]]\nname = \"s\"\npath = \"raw/rows.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nsplit_column = \"split\"\nsplits = [\"train\", \"test\"]\n\
         query = \"SELECT id, split, tags, score, ok, meta, CAST(day AS DATE) AS day FROM s\"\n\
         [[table]]\nname = \"one\"\nquery = \"SELECT count(*) AS n FROM s\"\n",
    );
    let o = build(dir, &["-q", "--max-shard-bytes", "6000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "cr");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("croissant.json")).unwrap()).unwrap();
    assert_eq!(doc["conformsTo"], "http://mlcommons.org/croissant/1.1");
    assert_eq!(doc["rai:dataCollection"], "Written by a test.");
    assert_eq!(doc["rai:personalSensitiveInformation"], "None.");
    assert_eq!(doc["license"], "cc-by-4.0");
    assert_eq!(doc["citeAs"], "@misc{cr}");
    let fields = doc["recordSet"][0]["field"].as_array().unwrap();
    let types: Vec<(&str, &str)> =
        fields.iter().map(|f| (f["name"].as_str().unwrap(), f["dataType"].as_str().unwrap_or("(subFields)"))).collect();
    assert_eq!(
        types,
        [
            ("id", "sc:Integer"),
            ("split", "sc:Text"),
            ("tags", "sc:Text"),
            ("score", "sc:Float"),
            ("ok", "sc:Boolean"),
            ("meta", "(subFields)"),
            ("day", "sc:Date")
        ]
    );
    assert_eq!(fields[2]["isArray"], true);
    assert_eq!(fields[0]["description"], "Row number.");
    // several shards per split: a file set reads them all
    let set = doc["distribution"].as_array().unwrap().iter().find(|d| d["@type"] == "cr:FileSet").unwrap();
    assert!(set["includes"].as_array().unwrap().len() > 2, "{set}");
    let found = check(&r);
    assert_eq!(found["records"], serde_json::json!({"t": 600, "one": 1}));
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert!(o.status.success(), "{}", stdout(&o));

    // the card's snippets run against the local copy, for a table in shards and splits
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    let ran = run_how_to_load(&card, &r, "cr");
    assert_eq!(ran, 3, "{card}");

    // a croissant.json that leaves a data file out is found
    let path = r.join("croissant.json");
    let mut edited = doc.clone();
    let first = edited["distribution"].as_array_mut().unwrap().remove(0);
    std::fs::write(&path, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    reseal(&r);
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let said = format!("croissant.json: no FileObject has contentUrl {}", first["contentUrl"].as_str().unwrap());
    assert!(stdout(&o).contains(&said), "{}", stdout(&o));

    // edits that make a Croissant loader read other data than the files hold, resealed: a
    // field read from another column, another type, a transform, inline data, the key taken
    // away; each named by its place
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit); 5] = [
        ("/recordSet/0/field/1/source/extract/column", |d| {
            d["recordSet"][0]["field"][1]["source"]["extract"]["column"] = "id".into()
        }),
        ("/recordSet/0/field/0/dataType", |d| d["recordSet"][0]["field"][0]["dataType"] = "sc:Float".into()),
        ("/recordSet/0/field/0/source/transform", |d| {
            d["recordSet"][0]["field"][0]["source"]["transform"] = serde_json::json!({"regex": "^(.)"})
        }),
        ("/recordSet/0/data", |d| d["recordSet"][0]["data"] = serde_json::json!([{"t/id": 1}])),
        ("/recordSet/0/key", |d| {
            d["recordSet"][0].as_object_mut().unwrap().remove("key");
        }),
    ];
    for (at, edit) in edits {
        let mut edited = doc.clone();
        edit(&mut edited);
        std::fs::write(&path, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
        reseal(&r);
        let o = run(bin().arg("verify").arg(&r));
        assert_eq!(o.status.code(), Some(1), "{at}: {}", stdout(&o));
        let said = format!("croissant.json: {at} is ");
        assert!(stdout(&o).contains(&said), "{at}: {}", stdout(&o));
        assert!(stdout(&o).contains("where a build writes"), "{}", stdout(&o));
    }
    // the card's own texts may be edited: the description a reader improves
    let mut edited = doc.clone();
    edited["description"] = "Better words.".into();
    std::fs::write(&path, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    reseal(&r);
    let o = run(bin().arg("verify").arg(&r));
    assert!(o.status.success(), "{}", stdout(&o));
}

/// Runs each Python block of the card's "How to load" section with `repo` and `base` set to
/// the release folder `release` of release `name`, instead of the Hub; the number run.
fn run_how_to_load(card: &str, release: &std::path::Path, name: &str) -> usize {
    let hf = tempfile::tempdir().unwrap();
    let section = card.split("## How to load\n").nth(1).expect("a How to load section");
    let section = section.split("\n## ").next().unwrap();
    let local = release.display().to_string();
    let mut n = 0;
    for block in section.split("```python\n").skip(1) {
        let code = block.split("```").next().unwrap();
        let hub_repo = format!("repo = \"<namespace>/{name}\"");
        let hub_base = format!("base = \"hf://datasets/<namespace>/{name}\"");
        assert!(code.contains(&hub_repo) || code.contains(&hub_base), "{code}");
        let code =
            code.replace(&hub_repo, &format!("repo = {local:?}")).replace(&hub_base, &format!("base = {local:?}"));
        let o = run(std::process::Command::new(python())
            .args(["-c", &code])
            .env("HF_DATASETS_OFFLINE", "1")
            .env("HF_HOME", hf.path()));
        assert!(o.status.success(), "{code}\n{}", stderr(&o));
        n += 1;
    }
    n
}

#[test]
fn the_example_cards_how_to_load_names_its_configs_and_files_and_runs_on_the_local_release() {
    let r = example_release();
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    let section = card.split("## How to load\n").nth(1).unwrap().split("\n## ").next().unwrap();
    insta::assert_snapshot!("example_card_how_to_load", section);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    for t in m["tables"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        assert!(section.contains(&format!("load_dataset(repo, \"{name}\")")), "{name}");
        for f in t["files"].as_array().unwrap() {
            assert!(section.contains(&format!("{{base}}/{}", f.as_str().unwrap())), "{f}");
        }
    }
    assert_eq!(run_how_to_load(&card, r, "tinker-rl-bench"), 3);
}

/// A table holding NaN: the card's DuckDB snippet reads it with `can_have_nan = true`, and
/// DuckDB then finds every NaN and takes it as the maximum, as the release holds them (the
/// files' minimum and maximum leave NaN out). A table without NaN is read as it is.
#[test]
fn the_cards_duckdb_snippet_finds_the_nan_of_a_table_that_holds_some() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let lines: String = (0..40)
        .map(|i| {
            if i % 10 == 3 {
                format!("{{\"step\": {i}, \"loss\": NaN}}\n")
            } else {
                format!("{{\"step\": {i}, \"loss\": {}}}\n", 1.0 / (i + 1) as f64)
            }
        })
        .collect();
    write(dir, "raw/log.jsonl", &lines);
    write(
        dir,
        "pipeline.toml",
        "name = \"nan\"\n[[source]]\nname = \"s\"\npath = \"raw/log.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"losses\"\nquery = \"SELECT step, loss FROM s\"\n\
         [[table]]\nname = \"steps\"\nquery = \"SELECT step FROM s\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nan");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("Table `losses` holds NaN values: DuckDB reads them with `can_have_nan = true`."), "{card}");
    let from = |table: &str| {
        let line =
            card.lines().find(|l| l.starts_with("duckdb.sql(") && l.contains(&format!("/{table}.parquet"))).unwrap();
        line.split(" FROM ")
            .nth(1)
            .unwrap()
            .split("\").show()")
            .next()
            .unwrap()
            .replace("{base}", &r.display().to_string())
    };
    assert_eq!(from("steps"), format!("'{}/data/steps.parquet'", r.display()));
    let code = format!(
        "import duckdb\nprint(duckdb.sql(\"SELECT count(*), max(loss) FROM {} WHERE isnan(loss)\").fetchall())\n\
         print(duckdb.sql(\"SELECT max(loss) FROM {}\").fetchall())",
        from("losses"),
        from("losses")
    );
    let o = run(std::process::Command::new(python()).args(["-c", &code]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "[(4, nan)]\n[(nan,)]\n");
}

#[test]
fn struct_members_named_with_slashes_and_dots_are_read_by_their_quoted_json_path() {
    // verl's and W&B's metric names, inside a struct column
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw/exp.jsonl",
        "{\"step\": 1, \"my step\": 2, \"data\": {\"actor/pg_loss\": 0.25, \"val-core/acc@1\": 0.5, \"a.b\": {\"x y\": 3, \"x_y\": 5}, \"plain\": 4}}\n",
    );
    write(
        dir,
        "pipeline.toml",
        &one_source("cr", "raw/exp.jsonl", "jsonl", "", "SELECT step, \"my step\", data FROM raw", ""),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "cr");
    let text = std::fs::read_to_string(r.join("croissant.json")).unwrap();
    for path in [r#""\"actor/pg_loss\"""#, r#""\"a.b\".\"x y\"""#, r#""plain""#] {
        assert!(text.contains(&format!("\"jsonPath\": {path}")), "{path}\n{text}");
    }
    let script = r#"
import sys, mlcroissant as mlc
rows = list(mlc.Dataset(jsonld=sys.argv[1] + "/croissant.json").records(record_set="t"))
def flat(d):
    for k, v in d.items():
        yield from flat(v) if isinstance(v, dict) else [(k, v)]
print(sorted(kv for r in rows for kv in flat(r)))
"#;
    let o = run(std::process::Command::new(python()).arg("-c").arg(python_script(script)).arg(&r));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "[('t/data/a.b/x_y', 5), ('t/data/a.b/x_y_', 3), ('t/data/actor/pg_loss', 0.25), ('t/data/plain', 4), \
         ('t/data/val-core/acc@1', 0.5), ('t/my_step', 2), ('t/step', 1)]\n"
    );
}

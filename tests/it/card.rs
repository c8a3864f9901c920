//! The card stage: the dataset card's metadata, sections and what it says of the data.

use crate::util::*;

#[test]
fn an_empty_split_stays_out_of_configs_so_datasets_loads_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1, \"split\": \"train\"}\n{\"id\": 2, \"split\": \"train\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"es\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nsplit_column = \"split\"\nsplits = [\"train\", \"test\"]\nquery = \"SELECT * FROM raw\"\n\
         [[table]]\nname = \"none\"\nquery = \"SELECT * FROM raw WHERE id > 5\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "es");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    let splits: Vec<&str> = card.lines().filter_map(|l| l.strip_prefix("  - split: ")).collect();
    assert_eq!(splits, vec!["train"], "{card}");
    assert!(!card.contains("config_name: none"), "{card}");
    assert!(card.contains("Split `test` has no rows, so it is left out"), "{card}");
    assert!(card.contains("The table has no rows, so it is left out of the card's `configs`"), "{card}");
    assert!(r.join("data/t/test.parquet").is_file());
    // dataset_info's download_size is the size of what data_files lists: train's file alone
    let train = std::fs::metadata(r.join("data/t/train.parquet")).unwrap().len();
    assert!(card.contains(&format!("  download_size: {train}\n")), "{train} {card}");
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/load_release.py"))
        .arg(&r)
        .env("HF_HOME", dir.join("hf")));
    assert!(o.status.success(), "datasets loads the release: {}{}", stdout(&o), stderr(&o));
    // frictionless reads the empty split's file and the table without rows too
    let o = run(std::process::Command::new(python()).arg(repo().join("tests/python/validate_datapackage.py")).arg(&r));
    assert!(o.status.success(), "frictionless validates the release: {}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).trim(), r#"{"none": 0, "t": 2}"#);
    // a data file that two configs name is one problem
    let twice = card.replacen(
        "configs:\n",
        "configs:\n- config_name: again\n  data_files:\n  - split: train\n    path: data/t/train.parquet\n",
        1,
    );
    let problems =
        runpack::verbs::verify::card_problems(&twice, &["data/t/train.parquet".to_string()], &Default::default());
    assert!(
        problems.iter().any(|p| p.contains("`data/t/train.parquet` is in several configs (again, t)")),
        "{problems:?}"
    );
    // a default table without rows: the default is the first table the card lists
    let text = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &text.replacen("[[source]]\n", "[card]\ndefault_table = \"none\"\n[[source]]\n", 1));
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("- config_name: t\n  default: true\n"), "{card}");
    assert!(card.contains("one config per table (`t` is the default)"), "{card}");
    assert!(card.contains("t = load_dataset(repo, \"t\")") && !card.contains("load_dataset(repo, \"none\")"), "{card}");
    // split names equal but for case are refused
    write(dir, "pipeline.toml", &text.replace("splits = [\"train\", \"test\"]", "splits = [\"train\", \"Train\"]"));
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("splits \"train\" and \"Train\" differ only in case"), "{}", stderr(&o));
}

#[test]
fn the_card_says_what_became_of_non_finite_values_and_shows_length_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"k\": 1, \"x\": NaN, \"name\": \"ab\"}\n{\"k\": 2, \"x\": 1.5, \"name\": \"abc\"}\n");
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"k","type":"integer"},{"name":"x","type":"number"},{"name":"name","type":"string","constraints":{"minLength":1,"maxLength":5}}],"primaryKey":["k"]}"#,
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"nfn\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\nnonfinite = \"null\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT k, x, name FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "nfn");
    assert_eq!(query(&r, "SELECT count(*) AS n FROM t WHERE x IS NULL"), "n\n1\n");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(
        card.contains("Source `raw` is read with `nonfinite = \"null\"`: its non-finite values became nulls."),
        "{card}"
    );
    assert!(
        card.contains("- source `raw`: 1 non-finite value read, written as nulls; the first: raw.jsonl:1:$.x NaN."),
        "{card}"
    );
    assert!(card.contains("| `name` | `Utf8` | (length 1 to 5) |"), "{card}");
}

#[test]
fn card_metadata_agrees_with_the_card_table_and_adds_its_tags() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"id\": 1}\n");
    let pipeline = |license: &str| {
        format!(
            "name = \"md\"\n[card]\nlicense = \"mit\"\ntags = [\"rl\"]\nmetadata = \"meta.yaml\"\n\
             [[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"t\"\nquery = \"SELECT id FROM raw\"\n# {license}\n"
        )
    };
    write(dir, "pipeline.toml", &pipeline("a"));
    write(dir, "meta.yaml", "license: cc-by-4.0\ntags:\n- mytag\n");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("meta.yaml: `license` is cc-by-4.0 here and \"mit\" in the pipeline's [card]"),
        "{}",
        stderr(&o)
    );
    write(dir, "meta.yaml", "license: mit\ntags:\n- mytag\n- rl\nlanguage:\n- en\n");
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "md").join("README.md")).unwrap();
    assert!(card.contains("tags:\n- rl\n- tabular\n- mytag\n"), "{card}");
    assert!(card.contains("language:\n- en\n"), "{card}");
    // a key given twice is placed at its second line; an empty file adds nothing
    write(dir, "meta.yaml", "tags:\n- mytag\nlanguage:\n- en\ntags:\n- rl\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("meta.yaml:5:1: not valid YAML: duplicate entry with key \"tags\""), "{}", stderr(&o));
    write(dir, "meta.yaml", "");
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn names_pyyaml_reads_as_booleans_or_dates_load_with_datasets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw.jsonl", "{\"c\": 1, \"s\": \"on\"}\n{\"c\": 2, \"s\": \"1_000\"}\n{\"c\": 3, \"s\": \"on\"}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"yn\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"yes\"\nsplit_column = \"s\"\nsplits = [\"on\", \"1_000\"]\n\
         query = 'SELECT c AS \"on\", c AS \"NO\", c AS \"<<\", c AS \"2024-01-01\", s FROM raw'\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "yn");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("- config_name: 'yes'\n"), "{card}");
    assert!(card.contains("  - split: 'on'\n"), "{card}");
    assert!(card.contains("  - name: '<<'\n"), "{card}");
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/load_release.py"))
        .arg(&r)
        .env("HF_HOME", dir.join("hf")));
    assert!(o.status.success(), "datasets loads the release: {}{}", stdout(&o), stderr(&o));
    let loaded: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(loaded["yes"]["splits"], serde_json::json!({"on": 2, "1_000": 1}), "{loaded}");
    assert_eq!(loaded["yes"]["columns"], serde_json::json!(["on", "NO", "<<", "2024-01-01", "s"]), "{loaded}");
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // a card written by other means with such a name unquoted is a problem verify names
    let unquoted = card.replacen("- config_name: 'yes'\n", "- config_name: yes\n", 1);
    let problems = runpack::verbs::verify::card_problems(&unquoted, &[], &Default::default());
    let line = unquoted.lines().position(|l| l == "- config_name: yes").unwrap() + 1;
    assert!(
        problems.iter().any(|p| p
            == &format!(
                "README.md:{line}: `yes` is a string to YAML 1.2 but a boolean to PyYAML, which `datasets` and \
                 `huggingface_hub` read the card with; quote it"
            )),
        "{problems:?}"
    );
}

#[test]
fn a_card_section_reads_sources_and_views_as_tables_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "x.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3}\n");
    write(dir, "y.jsonl", "{\"b\": 10}\n");
    write(
        dir,
        "pipeline.toml",
        "name = \"cs\"\n[card]\nlicense = \"mit\"\n\
         [[card.section]]\ntitle = \"From a view\"\nquery = \"SELECT count(*) AS n, sum(a) AS s FROM vx\"\n\
         [[card.section]]\ntitle = \"From a source no table reads\"\nquery = \"SELECT sum(b) AS total FROM y\"\n\
         [[source]]\nname = \"x\"\npath = \"x.jsonl\"\nformat = \"jsonl\"\n\
         [[source]]\nname = \"y\"\npath = \"y.jsonl\"\nformat = \"jsonl\"\n\
         [[view]]\nname = \"vx\"\nquery = \"SELECT a FROM x\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT a FROM vx\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "cs").join("README.md")).unwrap();
    assert!(card.contains("| n | s |\n|---|---|\n| 3 | 6 |\n"), "{card}");
    assert!(card.contains("| total |\n|---|\n| 10 |\n"), "{card}");
}

#[test]
fn the_cards_provenance_names_odd_file_names_as_they_are() {
    // a line break, a tab, a backtick and a bar in a file name: each input's row names it
    // in a code span that Markdown shows as the name, not another name or broken markup
    let tmp = tempfile::tempdir().unwrap();
    for name in ["c\nd.jsonl", "t\tb.jsonl", "a`b.jsonl", "p|q.jsonl"] {
        write(tmp.path(), name, &format!("{{\"x\":{}}}\n", name.len()));
    }
    write(
        tmp.path(),
        "pipeline.toml",
        "name = \"odd\"\n[[source]]\nname = \"raw\"\npath = \"*.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT x FROM raw\"\n",
    );
    let o = build(tmp.path(), &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(tmp.path(), "odd").join("README.md")).unwrap();
    for row in ["| ``a`b.jsonl`` |", "| `c\\nd.jsonl` |", "| `p\\|q.jsonl` |", "| `t\\tb.jsonl` |"] {
        assert!(card.contains(row), "{row} in\n{card}");
    }
}

#[test]
fn a_card_sections_misspelled_table_is_found_before_any_source_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // the source is not even there: the section's name is checked first
    let section = |sql: &str| {
        format!(
            "name = \"cs\"\n[[source]]\nname = \"s\"\npath = \"missing.jsonl\"\nformat = \"jsonl\"\n\
             [[table]]\nname = \"runs\"\nquery = \"SELECT a FROM s\"\n\
             [[card.section]]\ntitle = \"Best\"\ntext = \"x\"\nquery = \"{sql}\"\n"
        )
    };
    write(dir, "pipeline.toml", &section("SELECT * FROM run, generate_series(1, 2)"));
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "pipeline.toml:12 [card] section \"Best\": the query reads `run`, which is no source, view or table \
             of the pipeline (those: runs, s; did you mean runs?)"
        ),
        "{}",
        stderr(&o)
    );
    // a table function, a CTE and information_schema are no such mistake
    write(
        dir,
        "pipeline.toml",
        &section("WITH x AS (SELECT 1) SELECT * FROM x, generate_series(1, 2), information_schema.tables"),
    );
    let o = build(dir, &["-q"]);
    assert!(!stderr(&o).contains("[card] section"), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.jsonl"), "{}", stderr(&o));
}

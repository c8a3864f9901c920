//! `runpack verify`: a release folder re-checked (hashes, manifest, card, data package, data files).

use crate::util::*;

#[test]
fn table_files_outside_the_manifest_are_refused_by_verify_and_query() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let mpath = tmp.path().join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["tables"][0]["files"] = serde_json::json!(["../outside/evil.parquet"]);
    std::fs::write(&mpath, serde_json::to_string_pretty(&m).unwrap() + "\n").unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(
            "../outside/evil.parquet: table training_runs names a data file whose path leaves the release folder"
        ),
        "{}",
        stdout(&o)
    );
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT count(*) FROM training_runs"));
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
}

#[test]
fn sha256sums_in_any_form_sha256sum_reads_and_without_the_manifest_line() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let sums = tmp.path().join("SHA256SUMS");
    let text = std::fs::read_to_string(&sums).unwrap();
    // uppercase digests and binary-mode lines, as `sha256sum -b` writes them
    let other: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let (sha, path) = l.split_once("  ").unwrap();
            if i % 2 == 0 { format!("{}  {path}\n", sha.to_uppercase()) } else { format!("{sha} *{path}\n") }
        })
        .collect();
    std::fs::write(&sums, &other).unwrap();
    let o = run(std::process::Command::new("sha256sum").args(["-c", "--quiet", "SHA256SUMS"]).current_dir(tmp.path()));
    assert!(o.status.success(), "{}", stdout(&o));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // a line repeated (runpack writes one per file): said, with the line it repeats
    let (files, first) = (text.lines().count(), text.lines().next().unwrap());
    std::fs::write(&sums, format!("{other}{first}\n")).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let path = first.split_once("  ").unwrap().1;
    let said = format!("SHA256SUMS:{}: {path} has a line already (line 1)", files + 1);
    assert!(stdout(&o).contains(&said), "{said}\n{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).lines().filter(|l| l.contains("SHA256SUMS")).count(), 1, "{}", stdout(&o));
    // a path written as another that opens the same file, with another digest: said with both
    let (sha, nested) = text.lines().find(|l| l.contains('/')).unwrap().split_once("  ").unwrap();
    let (folder, name) = nested.split_once('/').unwrap();
    let zeros = "0".repeat(64);
    std::fs::write(&sums, format!("{other}{zeros}  ./{folder}//./{name}\n")).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let at = text.lines().position(|l| l.ends_with(&format!("  {nested}"))).unwrap() + 1;
    let said =
        format!("SHA256SUMS:{}: {nested} has a line already (line {at}, which gives it {sha}, not {zeros})", files + 1);
    assert!(stdout(&o).contains(&said), "{said}\n{}{}", stdout(&o), stderr(&o));
    let without: String = text.lines().filter(|l| !l.ends_with("  manifest.json")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&sums, without).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("SHA256SUMS: no line for manifest.json"), "{}", stdout(&o));
}

#[test]
fn verify_reports_every_unreadable_file_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    // a data file that is no Parquet file, though its hashes are re-signed, a README that is a
    // folder, and a new file
    let m_path = tmp.path().join("manifest.json");
    std::fs::write(tmp.path().join("data/metrics.parquet"), "hello\n").unwrap();
    let digest = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&m_path).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["path"] == "data/metrics.parquet" {
            f["sha256"] = digest.into();
            f["bytes"] = 6.into();
        }
    }
    std::fs::write(&m_path, serde_json::to_string_pretty(&m).unwrap() + "\n").unwrap();
    std::fs::remove_file(tmp.path().join("README.md")).unwrap();
    std::fs::create_dir(tmp.path().join("README.md")).unwrap();
    std::fs::write(tmp.path().join("data/extra.parquet"), "x").unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("data/metrics.parquet: not a readable Parquet file"), "{out}");
    assert!(out.contains("README.md: a folder, not a file"), "{out}");
    assert_eq!(out.matches("README.md:").count(), 1, "{out}");
    assert!(out.contains("data/extra.parquet"), "{out}");
    // each file is named once, by its path in the release
    let abs = tmp.path().canonicalize().unwrap();
    assert!(!out.contains(abs.to_str().unwrap()), "{out}");
}

#[test]
fn verify_reports_symbolic_links_and_shows_odd_names_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let dir = tmp.path();
    std::os::unix::fs::symlink("/etc/hostname", dir.join("data/extra.parquet")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("notes")).unwrap();
    let sums = std::fs::read(dir.join("SHA256SUMS")).unwrap();
    std::fs::write(dir.join("SHA256SUMS.real"), sums).unwrap();
    std::fs::remove_file(dir.join("SHA256SUMS")).unwrap();
    std::os::unix::fs::symlink(dir.join("SHA256SUMS.real"), dir.join("SHA256SUMS")).unwrap();
    std::fs::write(dir.join("data/new\nline.parquet"), "x").unwrap();
    let o = run(bin().arg("verify").arg(dir));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    for want in [
        "data/extra.parquet: a symbolic link; a release holds regular files only",
        "notes: a symbolic link",
        "SHA256SUMS: a symbolic link",
        "data/new\\nline.parquet: unexpected file (not in the manifest)",
    ] {
        assert!(out.contains(want), "{want}\n{out}");
    }
    // each file once: not also as a file the card leaves out of its configs
    assert!(!out.contains("is in no config and split"), "{out}");
    // a listed file replaced by a link is said to be one
    let real = dir.join("metrics.real");
    std::fs::rename(dir.join("data/metrics.parquet"), &real).unwrap();
    std::os::unix::fs::symlink(&real, dir.join("data/metrics.parquet")).unwrap();
    let out = stdout(&run(bin().arg("verify").arg(dir)));
    assert!(out.contains("data/metrics.parquet: a symbolic link; a release holds regular files only"), "{out}");
    // a release folder that is not there is said not to exist
    let o = run(bin().arg("verify").arg(dir.join("nope")));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope: no such file or folder"), "{}", stderr(&o));
}

#[test]
fn a_release_whose_tables_are_all_empty_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "r.jsonl", "{\"a\": 1}\n");
    write(dir, "pipeline.toml", &one_source("e1", "r.jsonl", "jsonl", "", "SELECT a FROM raw WHERE a > 5", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // no table has rows, so the card has no configs, and that is no problem
    let r = release(dir, "e1");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(!card.contains("configs:") && !card.contains("(default)") && !card.contains("load_dataset("), "{card}");
    assert!(card.contains("No table has rows, so the card lists no configs"), "{card}");
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn verify_reads_sha256sum_tag_lines_and_comments_and_reports_a_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    // SHA256SUMS rewritten as `sha256sum --tag` writes it, with a comment and a blank line
    // at the end (which `sha256sum -c` only warns of): still intact
    let sums = std::fs::read_to_string(tmp.path().join("SHA256SUMS")).unwrap();
    let tagged: String = std::iter::once("# checksums of the release\n".to_string())
        .chain(sums.lines().map(|l| {
            let (h, p) = l.split_once("  ").unwrap();
            format!("SHA256 ({p}) = {h}\n")
        }))
        .chain(std::iter::once("\n".to_string()))
        .collect();
    std::fs::write(tmp.path().join("SHA256SUMS"), &tagged).unwrap();
    let check =
        run(std::process::Command::new("sha256sum").arg("-c").arg("--quiet").arg("SHA256SUMS").current_dir(tmp.path()));
    assert!(check.status.success(), "sha256sum -c reads it: {}", stderr(&check));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // a named pipe in the release is reported (and not opened)
    let fifo = tmp.path().join("data/pipe.parquet");
    let made = run(std::process::Command::new("mkfifo").arg(&fifo));
    assert!(made.status.success());
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("data/pipe.parquet: not a regular file (a pipe, socket or device)"), "{}", stdout(&o));
    // a pipe in place of the files verify reads first is reported, never opened (it would block)
    for name in ["SHA256SUMS", "manifest.json", "README.md"] {
        let t = tempfile::tempdir().unwrap();
        copy_tree(example_release(), t.path());
        std::fs::remove_file(t.path().join(name)).unwrap();
        assert!(run(std::process::Command::new("mkfifo").arg(t.path().join(name))).status.success());
        let o = run(bin().arg("verify").arg(t.path()));
        assert_eq!(o.status.code(), Some(1), "{name}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(&format!("{name}: not a regular file")), "{name}: {}", stdout(&o));
        assert_eq!(stdout(&o).lines().count(), 1, "{name}: {}", stdout(&o));
    }
    // a pipe in place of a JSON Lines copy: `--data` compares no rows with it (it would wait
    // for a writer forever)
    let t = tempfile::tempdir().unwrap();
    copy_tree(example_release(), t.path());
    std::fs::remove_file(t.path().join("jsonl/evaluations.jsonl")).unwrap();
    assert!(run(std::process::Command::new("mkfifo").arg(t.path().join("jsonl/evaluations.jsonl"))).status.success());
    let o = run_within(bin().args(["verify", "--data"]).arg(t.path()), 120);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("jsonl/evaluations.jsonl: not a regular file"), "{}", stdout(&o));
    // a pipe in place of a table's Parquet file: its rows are not read, and why is said
    std::fs::remove_file(t.path().join("jsonl/evaluations.jsonl")).unwrap();
    std::fs::copy(example_release().join("jsonl/evaluations.jsonl"), t.path().join("jsonl/evaluations.jsonl")).unwrap();
    std::fs::remove_file(t.path().join("data/evaluations.parquet")).unwrap();
    assert!(run(std::process::Command::new("mkfifo").arg(t.path().join("data/evaluations.parquet"))).status.success());
    let o = run(bin().args(["verify", "--data"]).arg(t.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let said =
        "table evaluations: rows not read from its file data/evaluations.parquet: it is missing or not a regular file";
    assert!(stdout(&o).contains(said), "{}", stdout(&o));
    // a manifest.json that is missing, and a SHA256SUMS that is a folder, are said so
    for (name, said) in [
        (
            "manifest.json",
            "manifest.json: missing, so row counts and schemas cannot be verified (checksums are checked against \
             SHA256SUMS)",
        ),
        ("SHA256SUMS", "SHA256SUMS: cannot be read: a folder, not a file"),
    ] {
        let t = tempfile::tempdir().unwrap();
        copy_tree(example_release(), t.path());
        std::fs::remove_file(t.path().join(name)).unwrap();
        if name == "SHA256SUMS" {
            std::fs::create_dir(t.path().join(name)).unwrap();
        }
        let o = run(bin().arg("verify").arg(t.path()));
        assert_eq!(o.status.code(), Some(1), "{name}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(said), "{name}: {}", stdout(&o));
    }
    // both missing: each said
    let t = tempfile::tempdir().unwrap();
    copy_tree(example_release(), t.path());
    std::fs::remove_file(t.path().join("manifest.json")).unwrap();
    std::fs::remove_file(t.path().join("SHA256SUMS")).unwrap();
    let o = run(bin().arg("verify").arg(t.path()));
    assert_eq!(
        stdout(&o),
        "manifest.json: missing, so row counts and schemas cannot be verified\n\
         SHA256SUMS: missing too, so no file's checksum can be verified\n"
    );
    // without the manifest, a file changed behind SHA256SUMS's back is still caught
    let t = tempfile::tempdir().unwrap();
    copy_tree(example_release(), t.path());
    std::fs::remove_file(t.path().join("manifest.json")).unwrap();
    let o = run(bin().arg("verify").arg(t.path()));
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));
    let jsonl = t.path().join("jsonl/checkpoints.jsonl");
    let text = std::fs::read_to_string(&jsonl).unwrap();
    std::fs::write(&jsonl, text.replacen("final", "finaX", 1)).unwrap();
    std::fs::remove_file(t.path().join("datapackage.json")).unwrap();
    let o = run(bin().arg("verify").arg(t.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("jsonl/checkpoints.jsonl: sha256 mismatch: SHA256SUMS says "), "{out}");
    assert!(out.contains("SHA256SUMS:") && out.contains(": datapackage.json is missing"), "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[test]
fn a_yaml_error_in_the_card_names_the_line_of_readme() {
    let card = "---\nlicense: mit\npretty_name: [unclosed\ntags:\n- x\n---\n\n# t\n";
    let problems = runpack::verbs::verify::card_problems(card, &[], &Default::default());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("README.md:4:5: front matter is not valid YAML"), "{problems:?}");
    assert!(problems[0].contains("at line 3 column 14"), "{problems:?}");
}

#[test]
fn verify_refuses_card_metadata_that_datasets_stops_on() {
    let card = std::fs::read_to_string(example_release().join("README.md")).unwrap();
    // each edit, the line verify places it on (where a text starts), and what it says of it, alone
    let cases: Vec<(String, &str, &str)> = vec![
        (
            card.replacen("- config_name: checkpoints\n", "- config_name: checkpoints\n  default: 'yes'\n", 1),
            "  default: 'yes'",
            " configs[1]: default is a string \"yes\", not true or false",
        ),
        (
            card.replacen("- config_name: checkpoints\n", "- config_name: 5\n", 1),
            "- config_name: 5",
            " configs[1]: config_name is a number 5, not a string",
        ),
        (card.replacen("configs:\n", "configs:\n  x: 1\nconfigs_before:\n", 1), "configs:", " configs is a mapping"),
        (
            card.replacen("  - name: experiment\n    dtype: string\n", "  - name: experiment\n", 1),
            "  - name: experiment\n",
            " dataset_info of config `training_runs`: feature `experiment` has no type",
        ),
        (
            card.replacen("  - name: experiment\n    dtype: string\n", "  - name: experiment\n    dtype: 5\n", 1),
            "  - name: experiment\n",
            " dataset_info of config `training_runs`: feature `experiment` has a dtype that is a number 5, not a \
             name or a class label",
        ),
        (
            card.replacen("  - name: experiment\n    dtype: string\n", "  - dtype: string\n", 1),
            "  - dtype: string\n  - name: model\n",
            " dataset_info of config `training_runs`: features[1] has no name",
        ),
    ];
    for (edited, line, said) in cases {
        let said = format!("{}{said}", readme_line(&edited, line));
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(example_release(), tmp.path());
        assert_ne!(edited, card, "{said}");
        write_card(tmp.path(), &edited);
        let o = run(bin().arg("verify").arg(tmp.path()));
        assert_eq!(o.status.code(), Some(1), "{said}: {}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        assert!(out.contains(&said), "{said}: {out}");
        assert!(!out.contains("names no table"), "{out}");
        // the edit is the one problem, but for what follows from it: a second default, a
        // column no feature names
        let lines = if said.contains("default is") || said.contains("features[1]") { 2 } else { 1 };
        assert_eq!(out.lines().count(), lines, "{out}");
    }
    // dataset_info of a config given twice: datasets reads the last, and so does verify
    let info = card.find("dataset_info:\n").unwrap();
    let first = card[info..].find("- config_name: checkpoints\n").map(|i| info + i).unwrap();
    let end = card[first + 1..].find("\n- config_name: ").map(|i| first + 1 + i + 1).unwrap();
    let entry = &card[first..end];
    let mut edited = card.clone();
    let inserted = entry.replacen("num_examples: ", "num_examples: 1", 1);
    edited.insert_str(first, &inserted);
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    write_card(tmp.path(), &edited);
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    // placed at the second entry of the name
    let line = line_at(&edited, first + inserted.len());
    assert!(
        out.contains(&format!(
            "README.md:{line}: dataset_info gives config `checkpoints` 2 times; `datasets` reads the last"
        )),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "the last entry is the right one: {out}");
    // a byte order mark before the front matter is no problem
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    write_card(tmp.path(), &format!("\u{feff}{card}"));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn verify_refuses_a_card_with_which_datasets_would_load_other_rows_or_columns() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let card = std::fs::read_to_string(tmp.path().join("README.md")).unwrap();
    let edited = card
        // a config's key that `datasets` passes to its Parquet builder
        .replacen(
            "- config_name: metrics\n  data_files:",
            "- config_name: metrics\n  columns: [run, step]\n  data_files:",
            1,
        )
        // a file a split lists twice
        .replacen(
            "    path: data/checkpoints.parquet\n",
            "    path: [data/checkpoints.parquet, ./data/check*.parquet]\n",
            1,
        )
        // a class label, and a list of fixed length
        .replacen(
            "  - name: training_run_id\n    dtype: string\n",
            "  - name: training_run_id\n    dtype:\n      class_label:\n        names:\n          '0': a\n",
            1,
        )
        .replacen(
            "  - name: weight_checkpoints\n    list: string\n",
            "  - name: weight_checkpoints\n    list: string\n    length: 3\n",
            1,
        );
    write_card(tmp.path(), &edited);
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let at = |needle: &str| readme_line(&edited, needle);
    for said in [
        format!(
            "{} config `metrics`: `columns` is passed to `datasets`' Parquet builder, which then loads other data than \
             the release's files hold",
            at("  columns: [run, step]\n")
        ),
        format!(
            "{} config `checkpoints` split `train`: `data/checkpoints.parquet` is matched 2 times by its data_files; \
             `datasets` reads it 2 times, each row 2 times",
            at("    path: [data/checkpoints.parquet, ./data/check*.parquet]\n")
        ),
        "gives feature `training_run_id` the type class_label, and data/training_runs.parquet holds it as string"
            .to_string(),
        "gives feature `weight_checkpoints` the type list<string> of length 3, and data/training_runs.parquet holds \
         it as list<string>"
            .to_string(),
    ] {
        assert!(out.contains(&said), "{said}\n{out}");
    }
    // (the split's rows counted twice are said too)
    assert!(stderr(&o).contains("5 problems found") && out.contains("hold 168 rows"), "{out}");
    // a path written from `./` names the file as `datasets` resolves it
    let dotted = card.replacen("    path: data/metrics.parquet\n", "    path: ./data/metrics.parquet\n", 1);
    write_card(tmp.path(), &dotted);
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // a closing line with a blank after it is no end of the front matter to `datasets`
    let (head, rest) = card.split_at(4);
    let trailing = format!("{head}{}", rest.replacen("\n---\n", "\n--- \n", 1));
    write_card(tmp.path(), &trailing);
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let closing = trailing.lines().position(|l| l == "--- ").unwrap() + 1;
    assert!(
        stdout(&o)
            .contains(&format!("README.md:{closing}: the front matter's closing line is `---` with blanks after it")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn verify_compares_the_cards_dataset_info_with_the_parquet_files() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let path = tmp.path().join("README.md");
    let card = std::fs::read_to_string(&path).unwrap();
    assert!(
        card.contains("    num_examples: 45\n")
            && card.contains("  - name: training_run_id\n    dtype: string\n  - name: experiment\n")
    );
    let edited = card
        .replacen("    num_examples: 45\n", "    num_examples: 43\n", 1)
        .replacen("  - name: experiment\n", "  - name: experiments\n", 1)
        .replacen("  - name: training_run_id\n    dtype: string\n", "  - name: training_run_id\n    dtype: int64\n", 1)
        // a list column given a scalar dtype, and a list of the wrong items
        .replacen(
            "  - name: weight_checkpoints\n    list: string\n",
            "  - name: weight_checkpoints\n    dtype: string\n",
            1,
        )
        .replacen(
            "  - name: sampler_weight_checkpoints\n    list: string\n",
            "  - name: sampler_weight_checkpoints\n    list: int64\n",
            1,
        )
        // a second default config
        .replacen("- config_name: checkpoints\n", "- config_name: checkpoints\n  default: true\n", 1);
    write_card(tmp.path(), &edited);
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    // each problem is placed on the line of the card that says it
    let at = |needle: &str| readme_line(&edited, needle);
    assert!(
        out.contains(&format!(
            "{} dataset_info of config `training_runs` gives split `train` 43 examples, and its Parquet files \
             hold 45 rows",
            at("    num_examples: 43\n")
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{} dataset_info of config `training_runs` lists the features [\"experiments\"], which \
             data/training_runs.parquet does not hold, and not its columns [\"experiment\"]",
            at("  features:\n  - name: training_run_id\n")
        )),
        "{out}"
    );
    assert_eq!(out.matches("lists the features").count(), 1, "{out}");
    assert!(
        out.contains(&format!(
            "{} dataset_info of config `training_runs` gives feature `training_run_id` the type int64, and \
             data/training_runs.parquet holds it as string",
            at("  - name: training_run_id\n    dtype: int64\n")
        )),
        "{out}"
    );
    for (feature, said) in [("weight_checkpoints", "string"), ("sampler_weight_checkpoints", "list<int64>")] {
        assert!(
            out.contains(&format!(
                "{} dataset_info of config `training_runs` gives feature `{feature}` the type {said}, and \
                 data/training_runs.parquet holds it as list<string>",
                at(&format!("  - name: {feature}\n"))
            )),
            "{out}"
        );
    }
    // the untouched features, lists among them, agree with the files
    assert_eq!(out.matches("gives feature").count(), 3, "{out}");
    assert!(
        out.contains(&format!(
            "README.md:{}: configs `training_runs`, `checkpoints` are each `default: true`; a card has one default \
             config at most",
            line_at(&edited, edited.find("- config_name: checkpoints\n  default").unwrap()) + 1
        )),
        "{out}"
    );
    // a split named otherwise than in data_files, checked without a manifest as for a Hub repo
    let renamed = card.replacen("  - name: train\n", "  - name: trainx\n", 1);
    std::fs::write(&path, &renamed).unwrap();
    std::fs::remove_file(tmp.path().join("manifest.json")).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!(
            "{} dataset_info of config `training_runs` names the splits {{\"trainx\"}}, and its data_files \
             the splits {{\"train\"}}",
            readme_line(&renamed, "  splits:\n  - name: trainx\n")
        )),
        "{}",
        stdout(&o)
    );
    // a folder with none of a release's files is no release: the check cannot be made
    let empty = tempfile::tempdir().unwrap();
    let o = run(bin().arg("verify").arg(empty.path()));
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("is not a release folder: it holds no manifest.json, SHA256SUMS, README.md or data folder")
    );
}

#[test]
fn a_manifest_that_is_not_json_is_placed_by_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::write(tmp.path().join("manifest.json"), "{\n  \"name\": \"x\",\n").unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("manifest.json:3:1: EOF while parsing a value\n"), "{}", stdout(&o));
}

#[test]
fn verify_says_what_a_replaced_data_file_holds() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    std::fs::copy(tmp.path().join("data/metrics.parquet"), tmp.path().join("data/checkpoints.parquet")).unwrap();
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("data/checkpoints.parquet: size 50,984 bytes, manifest says 8,622 (sha256 "), "{out}");
    assert!(out.contains("data/checkpoints.parquet: 13,220 rows, manifest says 84 rows"), "{out}");
    assert!(out.contains("data/checkpoints.parquet: schema differs from the manifest's table checkpoints"), "{out}");
    // a card path that matches no file is said as such, not as a split the data lacks
    let card = std::fs::read_to_string(tmp.path().join("README.md")).unwrap();
    write_card(tmp.path(), &card.replacen("path: data/checkpoints.parquet", "path: data/nope.parquet", 1));
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    assert!(out.contains("config `checkpoints` split `train`: `data/nope.parquet` matches no file"), "{out}");
    assert!(!out.contains("and its data_files the splits"), "{out}");
}

#[test]
fn a_datapackage_that_is_not_a_json_object_is_placed() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let dp = tmp.path().join("datapackage.json");
    std::fs::write(&dp, "{\n \"a\": \n").unwrap();
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    assert!(out.contains("datapackage.json:3:1: not valid JSON: EOF while parsing a value"), "{out}");
    std::fs::write(&dp, "42").unwrap();
    let out = stdout(&run(bin().arg("verify").arg(tmp.path())));
    assert!(out.contains("datapackage.json: expected a data package (a JSON object), found"), "{out}");
    assert!(!out.contains("no resource describes table"), "{out}");
}

#[test]
fn verify_names_a_damaged_parquet_file_whatever_the_reader_does_with_it() {
    // one bit flipped in a footer or a page once made the Parquet and Arrow readers panic,
    // which stopped verify as an internal error without naming the file
    let tmp = tempfile::tempdir().unwrap();
    let good = crate::tinker_wandb::release();
    let bytes = std::fs::read(good.join("data/run_links.parquet")).unwrap();
    let n = bytes.len();
    // the footer's embedded Arrow schema, and spots in the pages
    let spots: Vec<(usize, &str)> = (n.saturating_sub(830)..n.saturating_sub(200))
        .step_by(3)
        .map(|at| (at, "plain"))
        .chain(
            [357usize, 1310, 3183]
                .iter()
                .flat_map(|&c| (c.saturating_sub(2)..(c + 3).min(n - 8)).map(|at| (at, "--data"))),
        )
        .collect();
    let copy = tmp.path().join("damaged");
    copy_tree(good, &copy);
    for (at, mode) in spots {
        let mut b = bytes.clone();
        b[at] ^= 1;
        std::fs::write(copy.join("data/run_links.parquet"), &b).unwrap();
        let mut cmd = bin();
        cmd.arg("verify").arg(&copy);
        if mode == "--data" {
            cmd.arg("--data");
        }
        let o = run(&mut cmd);
        assert_eq!(o.status.code(), Some(1), "byte {at} ({mode}): {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("data/run_links.parquet: sha256 mismatch"), "byte {at}: {}", stdout(&o));
        assert!(!stderr(&o).contains("internal error"), "byte {at} ({mode}): {}", stderr(&o));
    }
    // a manifest whose schema is no schema: named, not an internal error
    copy_tree(good, &copy);
    let m = std::fs::read_to_string(copy.join("manifest.json")).unwrap();
    std::fs::write(copy.join("manifest.json"), m.replacen("\"type\": \"string\"", "\"type\": \"strinf\"", 1)).unwrap();
    let o = run(bin().arg("verify").arg(&copy));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("manifest.json:/tables/0/schema/fields/0: table training_runs: field "),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("type `strinf` is not supported"), "{}", stdout(&o));
    // a Hub repository's .gitattributes in a downloaded copy is no stray file
    copy_tree(good, &copy);
    std::fs::write(copy.join(".gitattributes"), "*.parquet filter=lfs diff=lfs merge=lfs -text\n").unwrap();
    let o = run(bin().arg("verify").arg(&copy));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn verify_refuses_a_resealed_data_package_frictionless_would_refuse() {
    let tmp = tempfile::tempdir().unwrap();
    /// A change to the package, and what verify says of it.
    type Edit<'a> = (&'a str, &'a dyn Fn(&mut serde_json::Value), &'a str);
    let edits: [Edit; 3] = [
        (
            "format",
            &|d| d["resources"][0]["format"] = "csv".into(),
            "/resources/0/format is string \"csv\" where a build writes string \"jsonl\"",
        ),
        (
            "twice",
            &|d| {
                let r = d["resources"][0].clone();
                d["resources"].as_array_mut().unwrap().push(r);
            },
            "datapackage.json: /resources/3 describes table training_runs a second time",
        ),
        (
            "profile",
            &|d| d["profile"] = "data-package".into(),
            "datapackage.json: /profile is string \"data-package\" where a build writes string \"tabular-data-package\"",
        ),
    ];
    for (name, edit, said) in edits {
        let dir = tmp.path().join(name);
        copy_tree(example_release(), &dir);
        let path = dir.join("datapackage.json");
        let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut doc);
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        reseal(&dir);
        let o = run(bin().arg("verify").arg(&dir));
        assert_eq!(o.status.code(), Some(1), "{name}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(said), "{name}: {}", stdout(&o));
    }
    // the built one passes
    let o = run(bin().arg("verify").arg(example_release()));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn verify_checks_the_counts_of_rejected_rows_against_the_rejects_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "a.jsonl",
        "{\"k\": 1, \"v\": \"a\"}\n{\"k\": 1, \"v\": \"b\"}\n{\"k\": 2, \"v\": \"c\"}\n{\"k\": 3, \"v\": null}\n",
    );
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"k","type":"integer"},{"name":"v","type":"string","constraints":{"required":true}},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["k"]}"#,
    );
    let sql = "SELECT k, v, _source_file, _source_line FROM raw";
    let table = "schema = \"t.json\"\non_duplicate_key = \"keep-last\"\n";
    write(dir, "pipeline.toml", &one_source("kl", "a.jsonl", "jsonl", "", sql, table));
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = release(dir, "kl");
    let o = run(bin().arg("verify").arg(&rel));
    assert!(o.status.success(), "{}", stdout(&o));
    // one superseded and one invalid row share the file: 2 lines, counted as 1 + 1
    let path = rel.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["report"]["rejected_rows"]["t"] = 5.into();
    m["tables"][0]["rejected_rows"] = 0.into();
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    reseal(&rel);
    let o = run(bin().arg("verify").arg(&rel));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("report.rejected_rows gives t 5 rows, its rejects file holds 2"), "{out}");
    assert!(
        out.contains("table t has 0 rejected and 1 superseded rows, but its rejects file is counted as 5"),
        "{out}"
    );
}

#[test]
fn a_manifest_of_another_version_is_refused_by_query_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(example_release(), tmp.path());
    let path = tmp.path().join("manifest.json");
    let text =
        std::fs::read_to_string(&path).unwrap().replacen("\"manifest_version\": 1,", "\"manifest_version\": 99,", 1);
    assert!(text.contains("\"manifest_version\": 99,"));
    std::fs::write(&path, text).unwrap();
    reseal(tmp.path());
    let o = run(bin().args(["query", "-q"]).arg(tmp.path()).arg("SELECT 1"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "manifest.json:/manifest_version: manifest version 99 is not the one this runpack reads (1)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let o = run(bin().arg("verify").arg(tmp.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains(said), "{}", stdout(&o));
}

#[test]
fn a_hub_host_name_that_does_not_exist_is_said_at_once() {
    // `.invalid` never resolves (RFC 6761); a machine whose resolver cannot be reached says
    // "Temporary failure", which is retried, so only a resolver's "no such name" is checked
    let tmp = tempfile::tempdir().unwrap();
    let o = run(bin()
        .args(["verify", "hf://datasets/someone/results"])
        .env("HF_ENDPOINT", "http://hub.invalid")
        .env("HF_HOME", tmp.path())
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE"));
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    if err.contains("Temporary failure in name resolution") {
        eprintln!("the resolver could not be reached: the unknown-name case is not checked here");
        return;
    }
    let said =
        "the host name hub.invalid is not known to this machine's resolver (no network, or a misspelled HF_ENDPOINT?)";
    assert!(err.contains(said), "{err}");
    assert!(!err.contains("retrying"), "{err}");
}

#[test]
fn a_card_that_is_not_utf8_is_a_problem_though_its_digest_matches() {
    let t = tempfile::tempdir().unwrap();
    copy_tree(example_release(), t.path());
    let path = t.path().join("README.md");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.iter().position(|&b| b == b'\n').unwrap();
    bytes.insert(at, 0xff);
    std::fs::write(&path, &bytes).unwrap();
    reseal(t.path());
    let o = run(bin().arg("verify").arg(t.path()));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("README.md: expected UTF-8 text, found bytes that are not at byte {at}")),
        "{}",
        stdout(&o)
    );
}

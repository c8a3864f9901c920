//! The bundled example (pipelines/tinker-rl-bench): the release it builds, and what users and
//! their tools can do with it.

use std::path::{Path, PathBuf};

use crate::util::*;

fn manifest(release: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap()
}

fn table_rows(m: &serde_json::Value, name: &str) -> u64 {
    m["tables"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["rows"].as_u64().unwrap()
}

#[test]
fn builds_every_table_with_its_row_count() {
    let release = example_release();
    assert!(release.ends_with("tinker-rl-bench/1.0.0"), "{}", release.display());
    let m = manifest(release);
    assert_eq!(table_rows(&m, "training_runs"), 45);
    assert_eq!(table_rows(&m, "checkpoints"), 84);
    assert_eq!(table_rows(&m, "metrics"), 13_220);
    assert_eq!(table_rows(&m, "evaluations"), 10);
    assert_eq!(table_rows(&m, "eval_samples"), 5_000);
    for f in [
        "README.md",
        "manifest.json",
        "SHA256SUMS",
        "data/training_runs.parquet",
        "jsonl/checkpoints.jsonl",
        "data/metrics.parquet",
    ] {
        assert!(release.join(f).is_file(), "{f} missing");
    }
    assert_eq!(m["inputs"].as_array().unwrap().len(), 30, "raw files read");
}

#[test]
fn the_published_selection_rule_gives_28_runs_and_66_checkpoints() {
    let o = run(bin().args(["query", "--format", "csv"]).arg(example_release()).arg(
        "SELECT count(*) AS runs, \
                sum(CASE WHEN has_checkpoint_index THEN cardinality(weight_checkpoints) + cardinality(sampler_weight_checkpoints) ELSE 1 END) AS checkpoints \
         FROM training_runs WHERE has_checkpoint_index OR complete_metadata",
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "runs,checkpoints\n28,66\n");
    let card = std::fs::read_to_string(example_release().join("README.md")).unwrap();
    assert!(card.contains("| this release: every run named in the raw files | 45 | 84 |"), "card lacks the comparison");
}

#[test]
fn doubled_run_ids_are_repaired_and_flagged() {
    let o = run(bin().args(["query", "--format", "csv"]).arg(example_release()).arg(
        "SELECT count(*) FILTER (WHERE id_repaired) AS repaired, count(*) FILTER (WHERE training_run_id LIKE '%:train:0:train:%') AS doubled FROM training_runs",
    ));
    assert_eq!(stdout(&o), "repaired,doubled\n12,0\n", "{}", stderr(&o));
}

#[test]
fn evaluations_join_their_checkpoints() {
    let o = run(bin().args(["query", "--format", "csv"]).arg(example_release()).arg(
        "SELECT count(*) AS evaluations, count(c.tinker_uri) AS joined, max(e.score) AS best \
         FROM evaluations e LEFT JOIN checkpoints c ON c.tinker_uri = e.tinker_uri",
    ));
    assert_eq!(stdout(&o), "evaluations,joined,best\n10,10,0.95\n", "{}", stderr(&o));
    // a checkpoint the evaluations name but no raw file indexes breaks the foreign key
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    let f = pipeline.join("raw/experiments/results/heldout_gsm8k.json");
    let text = std::fs::read_to_string(&f).unwrap().replacen(
        "tinker://9f27c001-b92c-55a7-9e12-1a8bd858e16d:train:0/sampler_weights/final",
        "tinker://9f27c001-b92c-55a7-9e12-1a8bd858e16d:train:0/sampler_weights/000010",
        1,
    );
    std::fs::write(&f, text).unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(tmp.path().join("out")));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("raw/experiments/results/heldout_gsm8k.json:/results/0:tinker_uri: value \"tinker://9f27c001-b92c-55a7-9e12-1a8bd858e16d:train:0/sampler_weights/000010\" has no matching row in table checkpoints(tinker_uri)"),
        "{err}"
    );
}

#[test]
fn a_nan_reward_is_neither_correct_nor_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    let f = pipeline.join("raw/experiments/results/heldout_gsm8k.json");
    let text = std::fs::read_to_string(&f).unwrap().replacen("\"reward\": 1.0,", "\"reward\": NaN,", 1);
    std::fs::write(&f, text).unwrap();
    let out = tmp.path().join("out");
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    // SQL orders NaN above every number: `reward > 0` alone would call it correct
    let o = run(bin()
        .args(["query", "--format", "csv"])
        .arg(&release)
        .arg("SELECT count(*) AS nan, count(correct) AS judged FROM eval_samples WHERE isnan(reward)"));
    assert_eq!(stdout(&o), "nan,judged\n1,0\n", "{}", stderr(&o));
}

#[test]
fn sha256sum_accepts_sha256sums() {
    let o = run(std::process::Command::new("sha256sum").args(["-c", "SHA256SUMS"]).current_dir(example_release()));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("FAILED"));
}

#[test]
fn a_second_build_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(bin()
        .args(["build", "-q"])
        .arg(repo().join("pipelines/tinker-rl-bench"))
        .arg("--releases-dir")
        .arg(dir.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let again = snapshot_files(&dir.path().join("tinker-rl-bench/1.0.0"));
    let first = snapshot_files(example_release());
    assert_eq!(first.iter().map(|f| &f.0).collect::<Vec<_>>(), again.iter().map(|f| &f.0).collect::<Vec<_>>());
    for (a, b) in first.iter().zip(&again) {
        assert!(a.1 == b.1, "{} differs between two builds", a.0);
    }
}

#[test]
fn verify_passes_then_names_a_flipped_byte_and_a_deleted_file() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    let o = run(bin().arg("verify").arg(dir.path()));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // as many files as `sha256sum -c SHA256SUMS` checks
    let sums = std::fs::read_to_string(dir.path().join("SHA256SUMS")).unwrap();
    assert!(stdout(&o).starts_with(&format!("ok: {} files verified", sums.lines().count())), "{}", stdout(&o));

    let pq = dir.path().join("data/checkpoints.parquet");
    let mut bytes = std::fs::read(&pq).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&pq, &bytes).unwrap();
    let o = run(bin().arg("verify").arg(dir.path()));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("data/checkpoints.parquet: sha256 mismatch"), "{out}");
    assert!(out.contains("the size matches, the content does not"), "{out}");
    bytes[mid] ^= 0x01;
    std::fs::write(&pq, &bytes).unwrap();

    std::fs::remove_file(dir.path().join("jsonl/checkpoints.jsonl")).unwrap();
    let o = run(bin().arg("verify").arg(dir.path()));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("jsonl/checkpoints.jsonl: missing"), "{out}");
    assert_eq!(out.lines().count(), 1, "one line per problem: {out}");
}

#[test]
fn verify_refuses_manifest_paths_outside_the_release() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    let mpath = dir.path().join("manifest.json");
    let text =
        std::fs::read_to_string(&mpath).unwrap().replacen("\"path\": \"README.md\"", "\"path\": \"../outside.md\"", 1);
    std::fs::write(&mpath, text).unwrap();
    let o = run(bin().arg("verify").arg(dir.path()));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("../outside.md: manifest path leaves the release folder"), "{}", stdout(&o));
}

#[test]
fn query_timing_goes_to_stderr_and_leaves_the_result_alone() {
    let sql = "SELECT count(*) AS n FROM checkpoints";
    let plain = run(bin().args(["query", "--format", "csv"]).arg(example_release()).arg(sql));
    let timed = run(bin().args(["query", "--timing", "--format", "csv"]).arg(example_release()).arg(sql));
    assert!(timed.status.success(), "{}", stderr(&timed));
    assert_eq!(stdout(&timed), stdout(&plain));
    let err = stderr(&timed);
    let line = err.lines().find(|l| l.starts_with("elapsed: ")).unwrap_or_else(|| panic!("no timing in {err:?}"));
    let secs: f64 = line.trim_start_matches("elapsed: ").trim_end_matches(" s").parse().unwrap();
    assert!(secs > 0.0 && secs < 60.0, "{line}");
    assert!(!stderr(&plain).contains("elapsed"));
}

#[test]
fn query_prints_a_table() {
    let o = run(bin()
        .arg("query")
        .arg(example_release())
        .arg("SELECT model, max(peak_accuracy) FROM training_runs GROUP BY model ORDER BY 2 DESC"));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("+--"), "{out}");
    assert!(out.contains("| meta-llama/Llama-3.3-70B-Instruct"), "{out}");
    for fmt in ["csv", "json", "ndjson"] {
        let o = run(bin()
            .args(["query", "--format", fmt])
            .arg(example_release())
            .arg("SELECT name, step FROM checkpoints WHERE name = '000020' AND kind = 'weights'"));
        assert!(o.status.success(), "{fmt}: {}", stderr(&o));
        let expected = match fmt {
            "csv" => "name,step\n000020,20\n",
            "json" => "[{\"name\":\"000020\",\"step\":20}]\n",
            _ => "{\"name\":\"000020\",\"step\":20}\n",
        };
        assert_eq!(stdout(&o), expected);
    }
}

#[test]
fn frictionless_validates_every_table_against_its_schema_and_keys() {
    let validate = |release: &std::path::Path| {
        run(std::process::Command::new(python()).arg(repo().join("tests/python/validate_datapackage.py")).arg(release))
    };
    let o = validate(example_release());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let got: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // the tables with JSON Lines copies; metrics and eval_samples are Parquet only
    assert_eq!(got, serde_json::json!({"training_runs": 45, "checkpoints": 84, "evaluations": 10}));
    // the check can fail: a checkpoint whose run is not in training_runs breaks the foreign key
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    let path = dir.path().join("jsonl/checkpoints.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    let run: serde_json::Value = serde_json::from_str(first).unwrap();
    let id = run["training_run_id"].as_str().unwrap();
    let orphan = first.replace(id, "00000000-0000-0000-0000-000000000000:train:0");
    std::fs::write(&path, text.replacen(first, &orphan, 1)).unwrap();
    let o = validate(dir.path());
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("checkpoints: "), "{}", stderr(&o));
}

#[test]
fn datasets_and_pyarrow_load_every_config() {
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/load_release.py"))
        .arg(example_release())
        .env("HF_HOME", tempfile::tempdir().unwrap().path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let got: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for (t, n) in
        [("training_runs", 45), ("checkpoints", 84), ("metrics", 13_220), ("evaluations", 10), ("eval_samples", 5_000)]
    {
        assert_eq!(got[t]["datasets_rows"], n, "{t}");
        assert_eq!(got[t]["pyarrow_rows"], n, "{t}");
    }
    assert!(got["training_runs"]["columns"].as_array().unwrap().iter().any(|c| c == "sampler_weight_checkpoints"));
}

#[test]
fn card_and_manifest_match_their_golden_files() {
    let card = std::fs::read_to_string(example_release().join("README.md")).unwrap();
    insta::assert_snapshot!("example_card", card);
    let manifest = std::fs::read_to_string(example_release().join("manifest.json")).unwrap();
    insta::assert_snapshot!("example_manifest", manifest);
}

#[test]
fn an_injected_schema_violation_names_its_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    // a checkpoint index line whose batch is text, and a run whose LoRA rank is 0
    let idx = pipeline.join("raw/experiments/results/arithmetic_checkpoints.jsonl");
    let text = std::fs::read_to_string(&idx).unwrap().replacen("\"batch\": 60", "\"batch\": \"sixty\"", 1);
    std::fs::write(&idx, text).unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(tmp.path().join("out")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "raw/experiments/results/arithmetic_checkpoints.jsonl:3:$.batch: expected integer, found string \"sixty\""
        ),
        "{err}"
    );
    assert!(!tmp.path().join("out/tinker-rl-bench/1.0.0").exists(), "no release after a failed build");

    let pipeline = example_copy(&tmp.path().join("second"));
    let f = pipeline.join("raw/experiments/tinker-runs/results/wave6_ablations.json");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(doc["runs"][3]["tag"], "w6_rank4_t0.8_b2");
    doc["runs"][3]["rank"] = serde_json::json!(0);
    let text = serde_json::to_string_pretty(&doc).unwrap();
    std::fs::write(&f, text).unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(tmp.path().join("out")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("raw/experiments/tinker-runs/results/wave6_ablations.json:/runs/3:rank: value 0 is below the minimum 1 (table training_runs, key training_run_id=34500c82"),
        "{err}"
    );
}

#[test]
fn a_killed_build_leaves_no_release() {
    let tmp = tempfile::tempdir().unwrap();
    // an input large enough that the build is still running when it is killed
    let dir = tmp.path().join("big");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::with_capacity(60 << 20);
    for i in 0..600_000u64 {
        text.push_str(&format!("{{\"step\": {i}, \"loss\": {}.5, \"note\": \"{}\"}}\n", i % 97, "x".repeat(40)));
    }
    std::fs::write(dir.join("metrics.jsonl"), text).unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"big\"\n[[source]]\nname = \"raw\"\npath = \"metrics.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"metrics\"\nquery = \"SELECT * FROM raw\"\n",
    )
    .unwrap();
    let out = tmp.path().join("releases");
    let mut child = bin().args(["build", "-q"]).arg(&dir).arg("--releases-dir").arg(&out).spawn().unwrap();
    let parent = out.join("big");
    let started = std::time::Instant::now();
    loop {
        let staging = std::fs::read_dir(&parent)
            .map(|rd| rd.flatten().any(|e| e.file_name().to_string_lossy().contains(".building-")))
            .unwrap_or(false);
        if staging || started.elapsed().as_secs() > 60 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!parent.join("0.1.0").exists(), "a killed build must not leave a release");
    // the next build cleans up and succeeds
    let o = run(bin().args(["build", "-q"]).arg(&dir).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut leftovers: Vec<_> = std::fs::read_dir(&parent).unwrap().flatten().map(|e| e.file_name()).collect();
    leftovers.sort();
    assert_eq!(
        leftovers,
        vec![std::ffi::OsString::from(".runpack-input-cache.json"), std::ffi::OsString::from("0.1.0")]
    );
}

#[test]
fn an_unchanged_rebuild_reads_nothing_and_a_changed_one_needs_force() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    let out = tmp.path().join("out");
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let release = out.join("tinker-rl-bench/1.0.0");
    let before = snapshot_files(&release);
    let o = run(bin().arg("build").arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("up to date (inputs, pipeline and options unchanged); nothing rebuilt"),
        "{}",
        stderr(&o)
    );
    assert_eq!(before, snapshot_files(&release));
    // what killed builds left beside it (a staging folder, an old copy that was a file) goes
    // with a build that writes nothing, as with one that writes
    let hidden = |out: &std::path::Path| -> Vec<String> {
        let rd = std::fs::read_dir(out.join("tinker-rl-bench")).unwrap();
        let mut v: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        v.retain(|n| n.contains(".building-") || n.contains(".replaced-"));
        v
    };
    std::fs::create_dir_all(out.join("tinker-rl-bench/.1.0.0.building-4194999-x/data")).unwrap();
    std::fs::write(out.join("tinker-rl-bench/.1.0.0.replaced-4194999"), "old").unwrap();
    let o = run(bin().arg("build").arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(stderr(&o).contains("up to date"), "{}", stderr(&o));
    assert_eq!(hidden(&out), Vec::<String>::new());
    // the default duplicate-key rule given as an option changes nothing
    let o =
        run(bin().arg("build").arg(&pipeline).arg("--releases-dir").arg(&out).args(["--on-duplicate-key", "error"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("up to date"), "{}", stderr(&o));
    // another SOURCE_DATE_EPOCH would make another manifest: not up to date
    let o =
        run(bin().arg("build").arg(&pipeline).arg("--releases-dir").arg(&out).env("SOURCE_DATE_EPOCH", "1800000000"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists; pass --force"), "{}", stderr(&o));
    assert!(stderr(&o).contains("(what changed: SOURCE_DATE_EPOCH changed)"), "{}", stderr(&o));
    // nor would another threshold for the card's large-cell warnings
    let o = run(bin().arg("build").arg(&pipeline).arg("--releases-dir").arg(&out).args(["--large-cell-bytes", "100"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists; pass --force"), "{}", stderr(&o));
    assert!(stderr(&o).contains("(what changed: build options changed: --large-cell-bytes)"), "{}", stderr(&o));
    // a changed input: the existing version is not overwritten without --force
    let f = pipeline.join("raw/experiments/results/arithmetic_metrics.jsonl");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.lines().take(50).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists; pass --force"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(what changed: input raw/experiments/results/arithmetic_metrics.jsonl changed)"),
        "{}",
        stderr(&o)
    );
    // every change is said, not only the first
    let o =
        run(bin().args(["build", "-q", "--large-cell-bytes", "100"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert_eq!(o.status.code(), Some(2));
    let said = "(what changed: build options changed: --large-cell-bytes; input \
                raw/experiments/results/arithmetic_metrics.jsonl changed)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    assert_eq!(before, snapshot_files(&release), "the existing release is untouched");
    let o = run(bin().args(["build", "-q", "--force"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let changed = snapshot_files(&release);
    assert_ne!(before, changed);
    // the input rewritten with the same size and its modification time set back: its status
    // change time (which nothing sets back) gives it away
    let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
    let mut same_size = std::fs::read(&f).unwrap();
    // a metric's value on the first line, 4.9175 made 4.9176
    let at = same_size.windows(6).position(|w| w == b"4.9175").unwrap();
    same_size[at + 5] = b'6';
    std::fs::write(&f, &same_size).unwrap();
    std::fs::File::options().write(true).open(&f).unwrap().set_modified(mtime).unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists; pass --force"), "{}", stderr(&o));
    let o = run(bin().args(["build", "-q", "--force"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let rewritten = snapshot_files(&release);
    assert_ne!(changed, rewritten, "--force read it again");
    // another file of the same size and modification time put in its place
    let other = pipeline.join("other.jsonl");
    same_size[at + 5] = b'7';
    std::fs::write(&other, &same_size).unwrap();
    let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
    std::fs::File::options().write(true).open(&other).unwrap().set_modified(mtime).unwrap();
    std::fs::rename(&other, &f).unwrap();
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists; pass --force"), "{}", stderr(&o));
    assert_eq!(rewritten, snapshot_files(&release));
    // a forced build over a version's path that is a file removes nothing it did not write
    std::fs::write(out.join("tinker-rl-bench/9.9.9"), "not a release").unwrap();
    let forced = || {
        run(bin()
            .args(["build", "-q", "--force", "--release-version", "9.9.9"])
            .arg(&pipeline)
            .arg("--releases-dir")
            .arg(&out))
    };
    let o = forced();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("9.9.9 is no folder; --force replaces only a release folder runpack wrote"));
    assert_eq!(std::fs::read_to_string(out.join("tinker-rl-bench/9.9.9")).unwrap(), "not a release");
    assert_eq!(hidden(&out), Vec::<String>::new());
    std::fs::remove_file(out.join("tinker-rl-bench/9.9.9")).unwrap();
    let o = forced();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("tinker-rl-bench/9.9.9/manifest.json").is_file());
    assert_eq!(hidden(&out), Vec::<String>::new());
}

#[test]
fn a_folder_where_the_release_would_go_is_said_to_be_no_release() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("tinker-rl-bench/1.0.0")).unwrap();
    let o = run(bin().arg("build").arg(&pipeline).arg("--releases-dir").arg(&out));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists; pass --force"), "{}", stderr(&o));
    assert!(stderr(&o).contains("(what changed: it is no release runpack can read: "), "{}", stderr(&o));
    assert!(stderr(&o).contains("manifest.json: No such file or directory"), "{}", stderr(&o));
}

#[test]
fn a_release_file_changed_in_place_is_no_up_to_date_release() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    let out = tmp.path().join("out");
    let build = || run(bin().arg("build").arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(build().status.success());
    let release = out.join("tinker-rl-bench/1.0.0");
    // one byte of a data file flipped, its size kept
    let file = release.join("data/evaluations.parquet");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let o = build();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "(what changed: its file data/evaluations.parquet changed since it was built (`runpack verify` says how))"
        ),
        "{}",
        stderr(&o)
    );
    // without the cache, every file is hashed once: the same answer
    std::fs::remove_file(out.join("tinker-rl-bench/.runpack-input-cache.json")).unwrap();
    let o = build();
    assert!(stderr(&o).contains("its file data/evaluations.parquet changed since it was built"), "{}", stderr(&o));
    bytes[at] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let o = build();
    assert!(o.status.success() && stderr(&o).contains("up to date"), "{}", stderr(&o));
    // a file put in its folder by hand: no longer the release a build makes (nor one that verifies)
    std::fs::write(release.join("data/notes.txt"), "mine\n").unwrap();
    let o = build();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(what changed: its folder holds a file the release does not list: data/notes.txt"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_tables_json_lines_copy_queries_with_its_own_provenance_columns() {
    // the copy holds `_source_file`/`_source_line` of the raw inputs: they are the table's
    // columns, and runpack adds none of its own
    let sql = "SELECT count(*) AS n, count(DISTINCT _source_file) AS files, \
               count(DISTINCT _source_file || ':' || _source_line) AS places FROM ";
    let copy = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(example_release().join("jsonl/evaluations.jsonl"))
        .arg(format!("{sql}t")));
    assert!(copy.status.success(), "{}", stderr(&copy));
    let table =
        run(bin().args(["query", "-q", "--format", "csv"]).arg(example_release()).arg(format!("{sql}evaluations")));
    assert_eq!(stdout(&copy), stdout(&table));
    assert_eq!(stdout(&copy), "n,files,places\n10,1,10\n");
    let columns = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(example_release().join("jsonl/evaluations.jsonl"))
        .arg("SELECT * FROM t LIMIT 0"));
    assert!(stdout(&columns).ends_with(",rank_in_file,_source_file,_source_line\n"), "{}", stdout(&columns));
    // a copy without them gets runpack's, naming the copy's own lines
    let o = run(bin()
        .args(["query", "-q", "--format", "csv"])
        .arg(example_release().join("jsonl/checkpoints.jsonl"))
        .arg("SELECT min(_source_line), max(_source_line), min(_source_file) FROM t"));
    assert_eq!(
        stdout(&o),
        "min(t._source_line),max(t._source_line),min(t._source_file)\n1,84,checkpoints.jsonl\n",
        "{}",
        stderr(&o)
    );
}

/// Rewrites the release's manifest with `edit` and its line in SHA256SUMS to match, as one
/// would who edits a release by hand.
fn rehash_manifest(dir: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let mut m = manifest(dir);
    edit(&mut m);
    let text = serde_json::to_string_pretty(&m).unwrap();
    std::fs::write(dir.join("manifest.json"), &text).unwrap();
    use sha2::Digest;
    let sum = hex::encode(sha2::Sha256::digest(text.as_bytes()));
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    let sums: String = sums
        .lines()
        .map(|l| if l.ends_with("  manifest.json") { format!("{sum}  manifest.json\n") } else { format!("{l}\n") })
        .collect();
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
}

#[test]
fn verify_finds_a_manifest_that_contradicts_the_files_card_and_datapackage() {
    // a table dropped from the manifest, its files and card config left
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    rehash_manifest(dir.path(), |m| m["tables"].as_array_mut().unwrap().retain(|t| t["name"] != "metrics"));
    let o = run(bin().arg("verify").arg(dir.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("data/metrics.parquet: belongs to table metrics, which the manifest does not define"),
        "{out}"
    );
    let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    let at = readme_line(&card, "- config_name: metrics\n");
    assert!(out.contains(&format!("{at} config `metrics` names no table of the manifest")), "{out}");
    // a table's JSON Lines copy gone from the files and the manifest, datapackage.json and
    // croissant.json still naming it
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    std::fs::remove_file(dir.path().join("jsonl/evaluations.jsonl")).unwrap();
    let sums = std::fs::read_to_string(dir.path().join("SHA256SUMS")).unwrap();
    let sums: String =
        sums.lines().filter(|l| !l.ends_with("jsonl/evaluations.jsonl")).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("SHA256SUMS"), sums).unwrap();
    rehash_manifest(dir.path(), |m| {
        m["files"].as_array_mut().unwrap().retain(|f| f["path"] != "jsonl/evaluations.jsonl")
    });
    let o = run(bin().arg("verify").arg(dir.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("table evaluations: the manifest lists no JSON Lines copy (jsonl/) of it"), "{out}");
    assert!(out.contains("datapackage.json: /resources/2 (evaluations) names jsonl/evaluations.jsonl"), "{out}");
    assert!(out.contains("croissant.json: /distribution/"), "{out}");
    // a table defined twice (query could not register it)
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    rehash_manifest(dir.path(), |m| {
        let tables = m["tables"].as_array_mut().unwrap();
        let again = tables.iter().find(|t| t["name"] == "checkpoints").unwrap().clone();
        tables.push(again);
    });
    let o = run(bin().arg("verify").arg(dir.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("manifest.json: table checkpoints is defined 2 times"), "{}", stdout(&o));
    // a release reached through a symbolic link to its folder is the release
    let link = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(example_release(), link.path().join("latest")).unwrap();
    let o = run(bin().arg("verify").arg(link.path().join("latest")));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_metrics_log_whose_checkpoints_name_two_runs_is_not_copied_onto_both() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = example_copy(tmp.path());
    let f = pipeline.join("raw/experiments/results/arithmetic_checkpoints.jsonl");
    let mut text = std::fs::read_to_string(&f).unwrap();
    let other = "11111111-e234-5a95-ab68-896e4cac8c45:train:0";
    text.push_str(&format!(
        "{{\"name\": \"000120\", \"batch\": 120, \"state_path\": \"tinker://{other}/weights/000120\", \
         \"sampler_path\": \"tinker://{other}/sampler_weights/000120\"}}\n"
    ));
    std::fs::write(&f, text).unwrap();
    let out = tmp.path().join("out");
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let sql = "SELECT run, count(*) AS n FROM metrics WHERE _source_file LIKE '%arithmetic%' GROUP BY run ORDER BY run";
    let before = query(example_release(), sql);
    let after = query(&out.join("tinker-rl-bench/1.0.0"), sql);
    // the same rows, once: under the log's name, as no one run can be told
    let rows = |q: &str| q.lines().skip(1).map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap()).sum::<u64>();
    assert_eq!(rows(&after), rows(&before), "{before}\n{after}");
    assert_eq!(after.lines().count(), 2, "{after}");
    assert!(!after.contains(other), "{after}");
}

#[test]
fn verify_finds_contradictions_that_checksums_were_recomputed_over() {
    let fresh = || {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(example_release(), dir.path());
        dir
    };
    let verify = |dir: &Path| {
        let o = run(bin().arg("verify").arg(dir));
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        stdout(&o)
    };
    // two configs that serve each other's tables
    let dir = fresh();
    let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    let swapped = card
        .replace("config_name: checkpoints\n", "config_name: TMP\n")
        .replace("config_name: evaluations\n", "config_name: checkpoints\n")
        .replace("config_name: TMP\n", "config_name: evaluations\n");
    std::fs::write(dir.path().join("README.md"), swapped).unwrap();
    reseal(dir.path());
    let out = verify(dir.path());
    assert!(
        out.contains("config `checkpoints` split train names data/evaluations.parquet, a file of table evaluations"),
        "{out}"
    );
    // a split renamed in the card alone
    let dir = fresh();
    let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    let at = card.find("- config_name: checkpoints\n").unwrap();
    let renamed = format!("{}{}", &card[..at], card[at..].replacen("split: train", "split: test", 1));
    assert_ne!(renamed, card);
    std::fs::write(dir.path().join("README.md"), renamed).unwrap();
    reseal(dir.path());
    let out = verify(dir.path());
    assert!(
        out.contains(
            "config `checkpoints` has the splits {\"test\"}, the manifest's table checkpoints the splits {\"train\"}"
        ),
        "{out}"
    );
    // a file listed twice, counted twice
    let dir = fresh();
    rehash_manifest(dir.path(), |m| {
        let again =
            m["files"].as_array().unwrap().iter().find(|f| f["path"] == "data/checkpoints.parquet").unwrap().clone();
        m["files"].as_array_mut().unwrap().push(again);
        let t = m["tables"].as_array_mut().unwrap().iter_mut().find(|t| t["name"] == "checkpoints").unwrap();
        t["files"].as_array_mut().unwrap().push("data/checkpoints.parquet".into());
    });
    let out = verify(dir.path());
    assert!(out.contains("data/checkpoints.parquet: listed 2 times in the manifest's files"), "{out}");
    assert!(out.contains("data/checkpoints.parquet: listed twice in the manifest's table checkpoints"), "{out}");
    // the Arrow view of a schema, and datapackage.json's schema, edited
    let dir = fresh();
    rehash_manifest(dir.path(), |m| {
        let t = m["tables"].as_array_mut().unwrap().iter_mut().find(|t| t["name"] == "checkpoints").unwrap();
        t["arrow_schema"][0]["type"] = "Int64".into();
    });
    let out = verify(dir.path());
    assert!(out.contains("manifest.json: table checkpoints arrow_schema[0] is "), "{out}");
    let dir = fresh();
    let path = dir.path().join("datapackage.json");
    let mut dp: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let r = dp["resources"].as_array_mut().unwrap().iter_mut().find(|r| r["name"] == "checkpoints").unwrap();
    r["schema"]["fields"][0]["name"] = "bogus".into();
    std::fs::write(&path, serde_json::to_string_pretty(&dp).unwrap()).unwrap();
    reseal(dir.path());
    let out = verify(dir.path());
    assert!(
        out.contains("/schema/fields/0/name (checkpoints) differs from the manifest's schema of table checkpoints"),
        "{out}"
    );
    assert!(out.contains("string \"bogus\" here"), "{out}");
    // a split's count that is no number (`datasets` fails on it)
    let dir = fresh();
    let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    let at = card.find("    num_examples: ").unwrap();
    let end = at + card[at..].find('\n').unwrap();
    std::fs::write(dir.path().join("README.md"), format!("{}    num_examples: abc{}", &card[..at], &card[end..]))
        .unwrap();
    reseal(dir.path());
    let out = verify(dir.path());
    assert!(
        out.contains(".num_examples is a string \"abc\", not a whole number (`datasets` fails to load it)"),
        "{out}"
    );
    assert!(!out.contains("names the splits"), "{out}");
    // a path written with `./` stays in the release, but is not the form a release writes
    let dir = fresh();
    rehash_manifest(dir.path(), |m| {
        let f =
            m["files"].as_array_mut().unwrap().iter_mut().find(|f| f["path"] == "data/checkpoints.parquet").unwrap();
        f["path"] = "./data/checkpoints.parquet".into();
    });
    let out = verify(dir.path());
    assert!(out.contains("./data/checkpoints.parquet: manifest path is not a plain relative path"), "{out}");
    // a card left as a Git LFS pointer is said once, as not downloaded
    let dir = fresh();
    let card = std::fs::read(dir.path().join("README.md")).unwrap();
    use sha2::Digest;
    let pointer = format!(
        "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n",
        hex::encode(sha2::Sha256::digest(&card)),
        card.len()
    );
    std::fs::write(dir.path().join("README.md"), pointer).unwrap();
    let out = verify(dir.path());
    assert!(out.contains("README.md: not downloaded (Git LFS pointer"), "{out}");
    assert!(!out.contains("front matter"), "{out}");
}

#[test]
fn verify_data_reads_every_row_that_checksums_were_recomputed_over() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    let verify = |dir: &Path| {
        let o = run(bin().args(["verify", "--data"]).arg(dir));
        (o.status.code(), stdout(&o))
    };
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(" rows read and checked against their schemas and any JSON Lines copies"), "{out}");
    // a JSON Lines copy edited
    let copy = dir.path().join("jsonl/checkpoints.jsonl");
    let text = std::fs::read_to_string(&copy).unwrap();
    let second = text.lines().nth(1).unwrap().to_string();
    std::fs::write(&copy, text.replacen(&second, &second.replacen("\"step\":", "\"step\":1", 1), 1)).unwrap();
    reseal(dir.path());
    assert_eq!(run(bin().arg("verify").arg(dir.path())).status.code(), Some(0), "sealed again: the checksums agree");
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("jsonl/checkpoints.jsonl:2: differs from row 2 of data/checkpoints.parquet from column "),
        "{out}"
    );
    std::fs::write(&copy, &text).unwrap();
    // a Parquet page damaged: its values no longer match the statistics, or the page no longer
    // decodes (metrics has no JSON Lines copy to compare with)
    let pq = dir.path().join("data/metrics.parquet");
    let original = std::fs::read(&pq).unwrap();
    let mut bytes = original.clone();
    bytes[original.len() / 3] ^= 0xff;
    std::fs::write(&pq, &bytes).unwrap();
    reseal(dir.path());
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("data/metrics.parquet: row group 0, column ")
            || out.contains("data/metrics.parquet: cannot be decoded after row"),
        "{out}"
    );
    std::fs::write(&pq, &original).unwrap();
    // rows that break the schema recorded in the manifest (and datapackage.json, which matches it)
    let mut m = manifest(dir.path());
    let t = m["tables"].as_array_mut().unwrap().iter_mut().find(|t| t["name"] == "checkpoints").unwrap();
    let step = t["schema"]["fields"].as_array_mut().unwrap().iter_mut().find(|f| f["name"] == "step").unwrap();
    step["constraints"] = serde_json::json!({"maximum": 5});
    std::fs::write(dir.path().join("manifest.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let mut dp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("datapackage.json")).unwrap()).unwrap();
    for r in dp["resources"].as_array_mut().unwrap() {
        let t = m["tables"].as_array().unwrap().iter().find(|t| t["name"] == r["name"]).unwrap();
        let mut schema = t["schema"].clone();
        schema["missingValues"] = serde_json::json!([]);
        r["schema"] = schema;
    }
    std::fs::write(dir.path().join("datapackage.json"), serde_json::to_string_pretty(&dp).unwrap()).unwrap();
    reseal(dir.path());
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(":step: value 30 is above the maximum 5 (table checkpoints, key training_run_id="), "{out}");
    assert!(out.contains("table checkpoints: ") && out.contains(" more rows break its schema"), "{out}");
}

/// Lowers the value `weights` of column `kind` to `aeights` where `data/checkpoints.parquet`
/// of release `dir` bounds it: in its footer's statistics (`footer`), or in the page index
/// written before the footer; then seals the release again.
fn lower_weights(dir: &Path, footer: bool) {
    let pq = dir.join("data/checkpoints.parquet");
    let mut bytes = std::fs::read(&pq).unwrap();
    let len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
    let start = bytes.len() - 8 - len;
    let range = if footer { start..bytes.len() - 8 } else { 0..start };
    let mut changed = 0;
    for i in range.clone() {
        // (a Thrift binary value: its length, then its bytes)
        if bytes[i..range.end].starts_with(b"\x07weights") {
            bytes[i + 1] = b'a';
            changed += 1;
        }
    }
    assert!(changed > 0, "a `weights` bound (footer: {footer})");
    std::fs::write(&pq, &bytes).unwrap();
    reseal(dir);
}

#[test]
fn verify_data_checks_statistics_key_order_and_foreign_keys() {
    let verify = |dir: &Path| {
        let o = run(bin().args(["verify", "--data"]).arg(dir));
        (o.status.code(), stdout(&o))
    };
    // row-group statistics that no longer bound the values (a reader skipping by them would
    // miss rows): the max of `kind` lowered in the footer
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    lower_weights(dir.path(), true);
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("data/checkpoints.parquet: row group 0, column kind: the statistics' max is \"aeights\""),
        "{out}"
    );
    // the page index's bounds too (its ColumnIndex, written before the footer): a reader that
    // skips pages by them would miss rows
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    lower_weights(dir.path(), false);
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("data/checkpoints.parquet: row group 0, page 0 (rows 1 to "), "{out}");
    assert!(
        out.contains("column kind: the page index's max is \"aeights\", but the page holds \"sampler_weights\""),
        "{out}"
    );
    // the same rows with pandas' metadata, which makes a column pandas' index
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    let script = "import sys, json, pyarrow.parquet as pq\n\
                  t = pq.read_table(sys.argv[1])\n\
                  md = {b'pandas': json.dumps({'index_columns': ['training_run_id']}).encode()}\n\
                  pq.write_table(t.replace_schema_metadata(md), sys.argv[1], compression='zstd', use_compliant_nested_type=False)\n";
    python_edit(script, &dir.path().join("data/checkpoints.parquet"));
    reseal(dir.path());
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "data/checkpoints.parquet: its footer holds key-value metadata that a build does not write: \"pandas\""
        ),
        "{out}"
    );
    // rows out of key order, in both copies
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    let script = "import sys, pyarrow.parquet as pq\n\
                  t = pq.read_table(sys.argv[1])\n\
                  pq.write_table(t.take(list(range(t.num_rows - 1, -1, -1))), sys.argv[1], compression='zstd', use_compliant_nested_type=False)\n";
    python_edit(script, &dir.path().join("data/checkpoints.parquet"));
    let copy = dir.path().join("jsonl/checkpoints.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&copy).unwrap().lines().rev().map(|l| format!("{l}\n")).collect();
    std::fs::write(&copy, lines.concat()).unwrap();
    reseal(dir.path());
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    // named by its row, counted from 1 (the second row of the reversed file comes before the first)
    assert!(
        out.contains(
            "data/checkpoints.parquet: row 2 is not in the key order of table checkpoints (training_run_id, kind, \
             name): its key comes before the row's before it, which a build never writes"
        ),
        "{out}"
    );
    // tables listed in another order are read referenced first; a foreign key to a table the
    // manifest does not define cannot be checked
    let dir = tempfile::tempdir().unwrap();
    copy_tree(example_release(), dir.path());
    rehash_manifest(dir.path(), |m| {
        let tables = m["tables"].as_array_mut().unwrap();
        let first = tables.remove(0);
        tables.push(first);
    });
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(0), "{out}");
    rehash_manifest(dir.path(), |m| {
        let t = m["tables"].as_array_mut().unwrap().iter_mut().find(|t| t["name"] == "checkpoints").unwrap();
        t["schema"]["foreignKeys"][0]["reference"]["resource"] = "runs".into();
    });
    let (code, out) = verify(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "table checkpoints: foreign key (training_run_id) → runs (training_run_id) cannot be checked: the \
             manifest defines no such table"
        ),
        "{out}"
    );
}

#[test]
fn verify_data_checks_each_rows_split() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 1, \"split\": \"train\"}\n{\"id\": 2, \"split\": \"test\"}\n{\"id\": 3, \"split\": \"train\"}\n",
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"sp\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"t\"\nsplit_column = \"split\"\nsplits = [\"train\", \"test\"]\nquery = \"SELECT id, split FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "sp");
    assert!(std::fs::read_to_string(r.join("manifest.json")).unwrap().contains("\"split_column\": \"split\""));
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // a train row that says test, in both copies
    let script = "import sys, pyarrow.parquet as pq, pyarrow.compute as pc\n\
                  p = sys.argv[1]\n\
                  t = pq.read_table(p)\n\
                  i = t.schema.get_field_index('split')\n\
                  t = t.set_column(i, 'split', pc.if_else(pc.equal(t['id'], 3), 'test', t['split']))\n\
                  pq.write_table(t, p, compression='zstd')\n";
    python_edit(script, &r.join("data/t/train.parquet"));
    let copy = r.join("jsonl/t/train.jsonl");
    let text =
        std::fs::read_to_string(&copy).unwrap().replace("\"id\":3,\"split\":\"train\"", "\"id\":3,\"split\":\"test\"");
    std::fs::write(&copy, text).unwrap();
    reseal(&r);
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("data/t/train.parquet: row 2 has split \"test\", but the file holds split train's rows"),
        "{}",
        stdout(&o)
    );
    // a key given in two splits: each split is in key order on its own, the key set finds it
    write(
        dir,
        "t.json",
        r#"{"fields":[{"name":"id","type":"integer"},{"name":"split","type":"string"}],"primaryKey":["id"]}"#,
    );
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(dir, "pipeline.toml", &toml.replace("split_column = ", "schema = \"t.json\"\nsplit_column = "));
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  p = sys.argv[1]\n\
                  t = pq.read_table(p)\n\
                  t = t.set_column(0, t.schema.field(0), pa.array([1], pa.int64()))\n\
                  pq.write_table(t, p, compression='zstd')\n";
    python_edit(script, &r.join("data/t/test.parquet"));
    let copy = r.join("jsonl/t/test.jsonl");
    let text = std::fs::read_to_string(&copy).unwrap().replace("\"id\":2,", "\"id\":1,");
    std::fs::write(&copy, text).unwrap();
    reseal(&r);
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(
            "data/t/train.parquet: row 1 has the key id=1 of a row of split test too (table t, rule primaryKey)"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn verify_data_checks_what_a_build_guarantees_of_stored_values() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fields = r#"[{"name":"id","type":"integer"},{"name":"meta","type":"any"},{"name":"d","type":"date"},{"name":"x","type":"number"}]"#;
    write(dir, "s.json", &format!(r#"{{"fields":{fields}}}"#));
    write(dir, "t.json", &format!(r#"{{"fields":{fields},"primaryKey":["id"]}}"#));
    write(
        dir,
        "raw.jsonl",
        "{\"id\": 1, \"meta\": {\"a\": NaN}, \"d\": \"2024-01-02\", \"x\": 1.5}\n{\"id\": 2, \"meta\": \"text\", \"d\": \"0001-01-01\", \"x\": NaN}\n",
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"vals\"\n[[source]]\nname = \"raw\"\npath = \"raw.jsonl\"\nformat = \"jsonl\"\nschema = \"s.json\"\n\
         [[table]]\nname = \"t\"\nschema = \"t.json\"\nquery = \"SELECT id, meta, d, x FROM raw\"\n",
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "vals");
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // JSON text that is not JSON, a date before year 1, a NaN with its sign bit set
    let script = "import sys, struct, pyarrow as pa, pyarrow.parquet as pq\n\
                  p = sys.argv[1]\n\
                  t = pq.read_table(p)\n\
                  t = t.set_column(1, t.schema.field(1), pa.array(['{\"a\": NaN}', 'not json{'], pa.string()))\n\
                  t = t.set_column(2, t.schema.field(2), pa.array([19724, -719163 - 366], pa.int32()).cast(pa.date32()))\n\
                  neg = struct.unpack('<d', struct.pack('<Q', 0xfff8000000000000))[0]\n\
                  t = t.set_column(3, t.schema.field(3), pa.array([1.5, neg], pa.float64()))\n\
                  pq.write_table(t, p, compression='zstd')\n";
    python_edit(script, &r.join("data/t.parquet"));
    reseal(&r);
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    for said in [
        "data/t.parquet:1:meta: expected JSON text, found text that is no JSON",
        "data/t.parquet:2:d: \"-0001-12-31\" is outside years 1 to 9999",
        "data/t.parquet: row 2, column x: \"NaN\" holds a NaN with its sign bit set",
    ] {
        assert!(out.contains(said), "{said}: {out}");
    }
}

/// A pipeline (release `kill`, version 0.1.0) of `n` rows whose values carry `tag`.
fn tagged_pipeline(dir: &Path, n: i64, tag: &str) {
    write(dir, "rows.jsonl", &rows_in_key_order(n, tag));
    write(dir, "pipeline.toml", &one_source("kill", "rows.jsonl", "jsonl", "", "SELECT k, v FROM raw", ""));
}

/// Starts `build` (with `args`) of the pipeline in `dir` paused at commit step `step` (the
/// test hook `RUNPACK_TEST_PAUSE_AT`), and returns the running process once it says it is there.
fn build_paused_at(dir: &Path, args: &[&str], step: &str) -> std::process::Child {
    use std::io::BufRead;
    let mut child = bin()
        .arg("build")
        .arg(dir)
        .arg("--releases-dir")
        .arg(dir.join("out"))
        .args(args)
        .env("RUNPACK_TEST_PAUSE_AT", step)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    for l in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let l = l.unwrap();
        if l == format!("runpack: paused at {step}") {
            return child;
        }
        said.push_str(&l);
        said.push('\n');
    }
    panic!("the build never reached {step}: {:?}\n{said}", child.wait());
}

/// The names in the release name's folder, sorted.
fn names_in(parent: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(parent).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// The `v` of the release's first row.
fn first_value(release: &Path) -> String {
    query(release, "SELECT v FROM t ORDER BY k, v LIMIT 1")
}

#[test]
fn a_forced_rebuild_killed_at_every_commit_step_leaves_the_version_whole() {
    for (step, new_is_in) in [("commit-staged", false), ("commit-exchanged", true), ("commit-old-removed", true)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        tagged_pipeline(dir, 40, "old");
        let o = build(dir, &["-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let release = release(dir, "kill");
        assert_eq!(first_value(&release), "v\nold0\n");
        tagged_pipeline(dir, 60, "new");
        let mut child = build_paused_at(dir, &["-q", "--force"], step);
        child.kill().unwrap();
        child.wait().unwrap();
        // the version is there, whole, and verifies: the old release before the swap, the new after
        let o = run(bin().arg("verify").arg(&release));
        assert!(o.status.success(), "killed at {step}: {}{}", stdout(&o), stderr(&o));
        let expected = if new_is_in { "v\nnew0\n" } else { "v\nold0\n" };
        assert_eq!(first_value(&release), expected, "killed at {step}");
        let parent = release.parent().unwrap();
        let hidden = names_in(parent).into_iter().filter(|n| n.starts_with(".0.1.0.")).count();
        assert_eq!(hidden, usize::from(step != "commit-old-removed"), "killed at {step}: {:?}", names_in(parent));
        // the next build removes what the killed one left
        let o = build(dir, &["-q", "--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(names_in(parent), [".runpack-input-cache.json", "0.1.0"], "after a build killed at {step}");
        assert_eq!(first_value(&release), "v\nnew0\n");
    }
    // a first build killed before and after its rename: no release, then a whole one
    for (step, built) in [("commit-staged", false), ("commit-renamed", true)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        tagged_pipeline(dir, 40, "first");
        let mut child = build_paused_at(dir, &["-q"], step);
        child.kill().unwrap();
        child.wait().unwrap();
        let release = release(dir, "kill");
        assert_eq!(release.exists(), built, "killed at {step}");
        if built {
            let o = run(bin().arg("verify").arg(&release));
            assert!(o.status.success(), "killed at {step}: {}{}", stdout(&o), stderr(&o));
        }
        let o = build(dir, &["-q", "--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(names_in(release.parent().unwrap()), [".runpack-input-cache.json", "0.1.0"]);
    }
}

/// A forced rebuild replaces the release's own files only: a folder that also holds a clone's
/// `.git/` or notes of the user's is refused, every entry kept.
#[test]
fn a_forced_rebuild_refuses_a_folder_that_holds_what_the_release_did_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    tagged_pipeline(dir, 40, "old");
    assert!(build(dir, &["-q"]).status.success());
    let release = release(dir, "kill");
    write(&release.join(".git"), "HEAD", "ref: refs/heads/main\n");
    write(&release, "NOTES.txt", "mine\n");
    write(&release.join("data/extra"), "eval.csv", "a\n1\n");
    tagged_pipeline(dir, 60, "new");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("holds what its release did not write: .git/, NOTES.txt, data/extra/; --force replaces only"),
        "{}",
        stderr(&o)
    );
    assert_eq!(first_value(&release), "v\nold0\n");
    for kept in [".git/HEAD", "NOTES.txt", "data/extra/eval.csv"] {
        assert!(release.join(kept).is_file(), "{kept}");
    }
    // moved out, the rebuild goes ahead
    for gone in [".git", "data/extra"] {
        std::fs::remove_dir_all(release.join(gone)).unwrap();
    }
    std::fs::remove_file(release.join("NOTES.txt")).unwrap();
    assert!(build(dir, &["-q", "--force"]).status.success());
    assert_eq!(first_value(&release), "v\nnew0\n");
    // a folder that holds no release at all is no release to replace
    let other = dir.join("out/kill/0.2.0");
    write(&other, "report.pdf", "%PDF\n");
    let o = build(dir, &["-q", "--force", "--release-version", "0.2.0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds no readable manifest.json or SHA256SUMS"), "{}", stderr(&o));
    assert!(other.join("report.pdf").is_file());
    // nor is a link to a folder, which stays a link
    let linked = dir.join("elsewhere");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&linked, dir.join("out/kill/0.3.0")).unwrap();
    let o = build(dir, &["-q", "--force", "--release-version", "0.3.0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("0.3.0 is a symbolic link"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(dir.join("out/kill/0.3.0")).unwrap().is_symlink());
    // a hidden folder of the user's beside the versions is no leftover of a build
    write(&dir.join("out/kill/.notes.building-blocks"), "draft.md", "mine\n");
    write(&dir.join("out/kill/.0.2.0.building-x"), "draft.md", "mine\n");
    assert!(build(dir, &["-q"]).status.success());
    assert!(dir.join("out/kill/.notes.building-blocks/draft.md").is_file());
    assert!(dir.join("out/kill/.0.2.0.building-x/draft.md").is_file());
}

/// Every file and folder of a release is written to disk before it takes the version's place
/// (`fsync`), and the folder that holds it after: a power loss leaves one release whole.
#[test]
fn a_release_is_on_disk_before_it_takes_its_place() {
    if std::process::Command::new("strace").arg("-V").output().is_err() {
        eprintln!("strace is not installed: the fsync calls cannot be counted here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    tagged_pipeline(dir, 40, "old");
    let trace = dir.join("trace.txt");
    let o = run(std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fsync,rename,renameat,renameat2", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_runpack"))
        .arg("build")
        .arg(dir)
        .arg("--releases-dir")
        .arg(dir.join("out"))
        .arg("-q"));
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = std::fs::read_to_string(&trace).unwrap();
    let files = walkdir::WalkDir::new(release(dir, "kill")).into_iter().flatten().count();
    let synced = calls.lines().filter(|l| l.contains("fsync(")).count();
    // each file and folder, and the folder that holds the release
    assert!(synced > files, "{synced} fsync calls for {files} entries:\n{calls}");
    // the last fsync before the rename into place is the release's own folder's
    let into_place = calls.lines().position(|l| l.contains("rename") && l.contains("/0.1.0\"")).expect("a rename");
    assert!(calls.lines().take(into_place).any(|l| l.contains("fsync(")), "{calls}");
    assert!(calls.lines().skip(into_place).any(|l| l.contains("fsync(")), "{calls}");
}

#[test]
fn a_running_builds_staging_folder_is_left_alone_by_another_build() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    tagged_pipeline(dir, 40, "a");
    let mut running = build_paused_at(dir, &["-q"], "commit-staged");
    let parent = dir.join("out/kill");
    let staging: Vec<String> = names_in(&parent).into_iter().filter(|n| n.starts_with(".0.1.0.building-")).collect();
    assert_eq!(staging.len(), 1, "{:?}", names_in(&parent));
    // another version of the same release name, built meanwhile, leaves it alone
    let o = build(dir, &["-q", "--release-version", "0.2.0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(parent.join(&staging[0]).is_dir(), "{:?}", names_in(&parent));
    running.kill().unwrap();
    running.wait().unwrap();
    // once its build is gone, the next build removes it
    let o = build(dir, &["-q", "--release-version", "0.3.0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(names_in(&parent), [".runpack-input-cache.json", "0.2.0", "0.3.0"]);
}

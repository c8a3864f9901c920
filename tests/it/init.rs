//! `runpack init` on raw folders of each kind (the bundled example's, a Tinker log folder, W&B
//! run folders written by the real `wandb` client, evaluation outputs): the pipeline it writes
//! builds with no edit in between, from another folder, and every table has the rows of the raw
//! files; it never overwrites a file, and it names each file it cannot read with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

/// `runpack init <folder> --name <name> --pipelines-dir pipelines --format json`, run in `tmp`;
/// its JSON document, asserting success.
fn init(tmp: &Path, folder: &Path, name: &str) -> Value {
    let o = run(bin().current_dir(tmp).arg("init").arg(folder).args(["--name", name, "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("one JSON document: {e}\n{}", stdout(&o)))
}

/// Builds `tmp/pipelines/<name>` with `/` as the current folder, into `tmp/out`; the release.
fn build_from_elsewhere(tmp: &Path, name: &str) -> PathBuf {
    build_saying(tmp, name).0
}

/// [`build_from_elsewhere`], with what the build printed.
fn build_saying(tmp: &Path, name: &str) -> (PathBuf, std::process::Output) {
    let o = run(bin()
        .current_dir("/")
        .arg("build")
        .arg(tmp.join("pipelines").join(name))
        .arg("--releases-dir")
        .arg(tmp.join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    (PathBuf::from(stdout(&o).trim()), o)
}

/// Follows an init note on table `r` of pipeline `name`: selects `cast` in place of `column` in
/// its SQL and declares the column a number in its schema; then builds it, the release.
fn read_as_number(tmp: &Path, name: &str, column: &str, cast: &str) -> PathBuf {
    let toml_path = tmp.join(format!("pipelines/{name}/pipeline.toml"));
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    let toml = toml.replacen(&format!("{column}, _source_file"), &format!("{cast}, _source_file"), 1);
    assert!(toml.contains(cast), "{toml}");
    std::fs::write(&toml_path, toml).unwrap();
    let schema_path = tmp.join(format!("schemas/{name}/r.json"));
    let schema = std::fs::read_to_string(&schema_path).unwrap();
    // (a name the SQL quotes is written without its quotes in the schema)
    let declared = |ty: &str| format!("\"name\": \"{}\",\n      \"type\": \"{ty}\"", column.trim_matches('"'));
    assert!(schema.contains(&declared("string")), "{schema}");
    std::fs::write(&schema_path, schema.replacen(&declared("string"), &declared("number"), 1)).unwrap();
    build_from_elsewhere(tmp, name)
}

/// Rows by table, as the release's manifest counts them.
fn release_rows(release: &Path) -> BTreeMap<String, u64> {
    let m: Value = serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    m["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().into(), t["rows"].as_u64().unwrap()))
        .collect()
}

/// Rows by table, as `init` counted them.
fn init_rows(doc: &Value) -> BTreeMap<String, u64> {
    doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().into(), t["rows"].as_u64().unwrap()))
        .collect()
}

/// The table named `name` of an `init` document.
fn table<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no table {name}: {}", init_rows(doc).keys().cloned().collect::<Vec<_>>().join(", ")))
}

/// The source named `name` of an `init` document.
fn source<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["sources"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no source {name}"))
}

/// The primary key of table `name` of an `init` document.
fn key(doc: &Value, name: &str) -> Vec<String> {
    table(doc, name)["primary_key"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect()
}

/// The (file, reason) pairs of the files `init` did not read.
fn not_read(doc: &Value) -> Vec<(String, String)> {
    doc["not_read"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["file"].as_str().unwrap().to_string(), n["reason"].as_str().unwrap().to_string()))
        .collect()
}

/// The JSON records of a JSON Lines file.
fn lines(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap().as_object().unwrap().clone())
        .collect()
}

/// Rows a Tinker metrics file gives in long form: one per key other than `step`, per record.
fn metric_rows(path: &Path) -> u64 {
    lines(path).iter().map(|r| r.keys().filter(|k| *k != "step").count() as u64).sum()
}

#[test]
fn init_on_the_bundled_raw_folder_builds_without_edits() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("bench-raw");
    copy_tree(&repo().join("pipelines/tinker-rl-bench/raw"), &raw);
    let doc = init(tmp.path(), &raw, "bench");
    let files = walkdir::WalkDir::new(&raw).into_iter().flatten().filter(|e| e.file_type().is_file()).count();
    assert_eq!(doc["found"]["files"].as_u64(), Some(files as u64));
    // only the licence notice is no data
    let skipped = not_read(&doc);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, "NOTICE");
    assert!(skipped[0].1.starts_with("not a format runpack reads"), "{}", skipped[0].1);

    // the counts of the raw files, computed here
    let results = raw.join("experiments/results");
    let metrics: u64 = ["arithmetic", "distillation_off", "distillation_on"]
        .iter()
        .map(|r| metric_rows(&results.join(format!("{r}_metrics.jsonl"))))
        .sum();
    let checkpoints: u64 = ["arithmetic", "distillation_off"]
        .iter()
        .map(|r| lines(&results.join(format!("{r}_checkpoints.jsonl"))).len() as u64)
        .sum();
    let json = |rel: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(raw.join(rel)).unwrap()).unwrap() };
    let experiments = json("experiments/master_results.json")["experiments"].as_array().unwrap().len() as u64;
    let consolidated = json("experiments/all_results_consolidated.json").as_array().unwrap().len() as u64;
    let heldout = json("experiments/results/heldout_gsm8k.json")["results"].as_array().unwrap().len() as u64;
    let zvf =
        csv::Reader::from_path(raw.join("experiments/zvf_predictive_validation_runs.csv")).unwrap().records().count()
            as u64;
    let wave6 = json("experiments/tinker-runs/results/wave6_ablations.json")["runs"].as_array().unwrap().len() as u64;
    let rows = init_rows(&doc);
    for (t, n) in [
        ("metrics", metrics),
        ("checkpoints", checkpoints),
        ("master_results_experiments", experiments),
        ("all_results_consolidated", consolidated),
        ("heldout_gsm8k_results", heldout),
        ("zvf_predictive_validation_runs", zvf),
        ("wave6_ablations_runs", wave6),
    ] {
        assert_eq!(rows.get(t), Some(&n), "table {t}: {rows:?}");
    }
    assert_eq!(metrics, 10_160);
    assert_eq!(key(&doc, "metrics"), ["run", "step", "metric"]);
    assert_eq!(key(&doc, "checkpoints"), ["run", "name"]);
    // `group` holds labels and numbers: kept as JSON text, and said
    let master = source(&doc, "master_results_experiments_raw");
    let declared: Vec<&str> =
        master["declared"].as_array().unwrap().iter().map(|d| d["column"].as_str().unwrap()).collect();
    assert!(declared.contains(&"group"), "{declared:?}");

    // the pipeline is written beside a link to the folder, its schemas beside the pipelines
    let p = tmp.path().join("pipelines/bench");
    assert_eq!(std::fs::read_link(p.join("raw")).unwrap(), Path::new("../../bench-raw"));
    for t in rows.keys() {
        assert!(tmp.path().join(format!("schemas/bench/{t}.json")).is_file(), "{t}");
    }
    let toml = std::fs::read_to_string(p.join("pipeline.toml")).unwrap();
    assert!(toml.contains("path = \"raw/experiments/results/{run}_metrics.jsonl\""), "{toml}");
    assert!(toml.contains("# TODO: the data's licence"), "{toml}");

    let release = build_from_elsewhere(tmp.path(), "bench");
    assert_eq!(release_rows(&release), rows);
    // the run of each metrics row is the one its file names
    let per_run = query(&release, "SELECT run, count(*) AS n FROM metrics GROUP BY run ORDER BY run");
    let expected: String = ["arithmetic", "distillation_off", "distillation_on"]
        .iter()
        .map(|r| format!("{r},{}\n", metric_rows(&results.join(format!("{r}_metrics.jsonl")))))
        .collect();
    assert_eq!(per_run, format!("run,n\n{expected}"));
}

/// A Tinker log folder: one folder per run with metrics.jsonl, checkpoints.jsonl, config.json
/// and logs.log, as tinker-cookbook writes them.
fn tinker_logs(dir: &Path) {
    let metrics_a = "{\"step\": 0, \"env/all/reward/total\": 0.5, \"optim/lr\": 0.0001}\n\
                     {\"step\": 1, \"env/all/reward/total\": 0.625, \"optim/lr\": 0.0001, \"train_mean_nll\": NaN}\n\
                     {\"step\": 2, \"env/all/reward/total\": 0.75, \"optim/lr\": 0.0001, \"test/env/all/reward/total\": 0.7}\n";
    let metrics_b = "{\"step\": 0, \"loss\": 1.5, \"note\": \"warmup\"}\n{\"step\": 1, \"loss\": Infinity}\n";
    let ckpt = |run: &str| {
        format!(
            "{{\"name\": \"000001\", \"batch\": 1, \"state_path\": \"tinker://{run}:train:0/weights/000001\", \"sampler_path\": \"tinker://{run}:train:0/sampler_weights/000001\"}}\n\
             {{\"name\": \"final\", \"batch\": 2, \"state_path\": \"tinker://{run}:train:0/weights/final\", \"sampler_path\": \"tinker://{run}:train:0/sampler_weights/final\"}}\n"
        )
    };
    for (run, metrics) in [("grpo-a", metrics_a), ("grpo-b", metrics_b)] {
        write(dir, &format!("{run}/metrics.jsonl"), metrics);
        write(dir, &format!("{run}/checkpoints.jsonl"), &ckpt(run));
        write(
            dir,
            &format!("{run}/config.json"),
            &format!(
                "{{\"model_name\": \"Qwen/Qwen3-8B\", \"lora_rank\": 32, \"log_path\": \"/runs/{run}\", \"dataset_builder\": {{\"__type__\": \"Gsm8k\", \"batch_size\": 64}}}}"
            ),
        );
        write(dir, &format!("{run}/logs.log"), "Command line invocation: python -m tinker_cookbook.rl.train\n");
    }
}

#[test]
fn init_on_a_tinker_log_folder_builds_without_edits() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    tinker_logs(&logs);
    let doc = init(tmp.path(), &logs, "tinker-logs");
    // the files it writes have the mode any file created there has (not a temporary file's 0600)
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let plain = tmp.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        assert_eq!(mode(&tmp.path().join("pipelines/tinker-logs/pipeline.toml")), mode(&plain));
        for e in std::fs::read_dir(tmp.path().join("schemas/tinker-logs")).unwrap() {
            assert_eq!(mode(&e.unwrap().path()), mode(&plain));
        }
    }
    let mut skipped = not_read(&doc);
    skipped.sort();
    assert_eq!(skipped.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(), ["grpo-a/logs.log", "grpo-b/logs.log"]);
    assert_eq!(doc["found"]["formats"], serde_json::json!({"json": 2, "tinker-checkpoints": 2, "tinker-metrics": 2}));
    let rows = init_rows(&doc);
    // metrics: one row per key but `step`, 2 + 3 + 3 of grpo-a and 2 + 1 of grpo-b
    assert_eq!(rows, BTreeMap::from([("checkpoints".into(), 4), ("config".into(), 2), ("metrics".into(), 11)]));
    assert_eq!(key(&doc, "metrics"), ["run", "step", "metric"]);
    let metrics = source(&doc, "metrics_raw");
    assert_eq!(metrics["path"], serde_json::json!(["raw/{run}/metrics.jsonl"]));

    let release = build_from_elsewhere(tmp.path(), "tinker-logs");
    assert_eq!(release_rows(&release), rows);
    assert_eq!(
        query(
            &release,
            "SELECT run, step, metric, value, value_text FROM metrics WHERE run = 'grpo-b' ORDER BY step, metric"
        ),
        "run,step,metric,value,value_text\ngrpo-b,0,loss,1.5,\ngrpo-b,0,note,,warmup\ngrpo-b,1,loss,Infinity,\n"
    );
    assert_eq!(
        query(&release, "SELECT run, lora_rank FROM config ORDER BY run"),
        "run,lora_rank\ngrpo-a,32\ngrpo-b,32\n"
    );
}

#[test]
fn init_on_wandb_run_folders_builds_the_standard_tables() {
    // run folders with the `.wandb` logs the real `wandb` client wrote offline (the
    // tinker-wandb example's, whose test checks their values)
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("wandb");
    copy_tree(&repo().join("pipelines/tinker-wandb/raw/wandb"), &runs);
    let doc = init(tmp.path(), &runs, "wandb-runs");
    assert_eq!(not_read(&doc), vec![]);
    let logs = std::fs::read_dir(&runs).unwrap().count() as u64;
    assert_eq!(doc["found"]["formats"]["wandb"].as_u64(), Some(logs));
    let rows = init_rows(&doc);
    // the example's own pipeline reads 13 runs and 1,262 history rows from these logs
    assert_eq!(rows, BTreeMap::from([("wandb_history".into(), 1_262), ("wandb_runs".into(), 13)]));
    assert_eq!(key(&doc, "wandb_runs"), ["run_id"]);
    assert_eq!(key(&doc, "wandb_history"), ["run_id", "step", "metric"]);
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.iter().any(|n| n.contains("W&B table system: no rows")), "{notes:?}");
    // every column of the standard tables is described in the card
    assert_eq!(undescribed(tmp.path(), "wandb-runs", &[]), Vec::<String>::new());
    let release = build_from_elsewhere(tmp.path(), "wandb-runs");
    assert_eq!(release_rows(&release), rows);
    assert_eq!(query(&release, "SELECT count(DISTINCT run_id) AS n FROM wandb_history"), format!("n\n{logs}\n"));
}

#[test]
fn init_on_wandb_exports_from_the_corpus_builds() {
    // the shared corpus (read in place elsewhere: not redistributable) when it is there
    let Some(shared) = shared() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let corpus = shared.join("corpus");
    let tmp = tempfile::tempdir().unwrap();
    let ex = tmp.path().join("exports");
    copy_tree(&corpus.join("wandb-offline/AGKhalil_RL_implements/wandb"), &ex.join("wandb"));
    copy_tree(&corpus.join("wandb-api-runs/MaxLEAF3824_gpt_mi"), &ex.join("api"));
    copy_tree(&corpus.join("wandb-ui-export/oraby8_research_tts"), &ex.join("ui"));
    // a chart export of sampled history: another table reads it, the history table leaves it out
    copy_tree(&corpus.join("wandb-ui-export/Junyoungpark_snet-analysis"), &ex.join("sampled"));
    let doc = init(tmp.path(), &ex, "exports");
    let rows = init_rows(&doc);
    assert!(rows.contains_key("wandb_runs") && rows.contains_key("wandb_history"), "{rows:?}");
    let left_out = table(&doc, "wandb_history")["left_out"].as_array().unwrap();
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert_eq!(left_out[0]["file"], "sampled/wandb_export.csv");
    assert!(left_out[0]["reason"].as_str().unwrap().contains("history looks sampled"), "{left_out:?}");
    assert!(left_out[0]["problems"].as_array().unwrap().len() > 1, "{left_out:?}");
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(
        notes.iter().any(|n| n.starts_with(
            "table wandb_history leaves out sampled/wandb_export.csv (not in the source's `path`: add it there once \
             mended): "
        ) && n.contains("`--format json` lists every problem under the table's `left_out`")),
        "{notes:?}"
    );
    let release = build_from_elsewhere(tmp.path(), "exports");
    assert_eq!(release_rows(&release), rows);
    // the pipeline reads the runs' histograms in a table of their own: the other tables skip
    // them without a word; the graph is one warning
    let o = run(bin()
        .current_dir("/")
        .arg("build")
        .arg(tmp.path().join("pipelines/exports"))
        .arg("--force")
        .args(["--releases-dir".as_ref(), tmp.path().join("out").as_os_str()]));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert!(!warnings.iter().any(|w| w.contains("histogram")), "{warnings:?}");
    assert_eq!(warnings.iter().filter(|w| w.contains("media value(s) skipped")).count(), 1, "{warnings:?}");
}

#[test]
fn init_on_the_tinker_rl_lab_corpus_builds_without_a_warning() {
    // result tables whose `steps_to_*` keys hold null in every record: data, not misspelled keys
    let Some(shared) = shared() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lab = tmp.path().join("lab");
    copy_tree(&shared.join("corpus/tinker-rl-lab"), &lab);
    let doc = init(tmp.path(), &lab, "lab");
    assert!(!init_rows(&doc).is_empty(), "{doc}");
    let o = run(bin()
        .current_dir("/")
        .arg("build")
        .arg(tmp.path().join("pipelines/lab"))
        .arg("--releases-dir")
        .arg(tmp.path().join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    let warnings: Vec<String> = stderr(&o).lines().filter(|l| l.starts_with("warning:")).map(str::to_owned).collect();
    assert_eq!(warnings, Vec::<String>::new());
}

/// Evaluation outputs: a tinker-cookbook benchmark runner's save_dir per checkpoint, and a
/// per-checkpoint eval folder (metrics JSON, generations, summary table).
fn eval_outputs(dir: &Path) {
    for ck in ["step100", "step200"] {
        write(
            dir,
            &format!("runner/{ck}/summary.json"),
            r#"{"gsm8k": {"score": 0.5, "num_examples": 2, "num_correct": 1}}"#,
        );
        for bench in ["gsm8k", "math"] {
            write(
                dir,
                &format!("runner/{ck}/{bench}/result.json"),
                &format!(
                    r#"{{"name": "{bench}", "score": 0.5, "num_examples": 2, "num_correct": 1, "num_errors": 0, "num_truncated": 0,
                        "metrics": {{"total_turns": 4}}, "time_seconds": 3.5, "pass_at_k": {{"1": 0.5}}}}"#
                ),
            );
            let t: String = (0..3)
                .map(|i| format!("{{\"idx\": {i}, \"benchmark\": \"{bench}\", \"example_id\": \"e{i}\", \"turns\": [{{\"role\": \"assistant\", \"content\": \"a\", \"token_count\": 3, \"metadata\": {{}}}}], \"reward\": {i}.0, \"metrics\": {{}}, \"logs\": {{}}, \"error\": null, \"time_seconds\": 1.0}}\n"))
                .collect();
            write(dir, &format!("runner/{ck}/{bench}/trajectories.jsonl"), &t);
        }
    }
    let m = "interplay/qwen-grpo";
    for ck in ["checkpoint-100", "checkpoint-200"] {
        write(
            dir,
            &format!("{m}/{ck}_metrics.json"),
            &format!(
                r#"{{"checkpoint": "{ck}",
                    "id": {{"answer_accuracy": 0.75, "avg_response_len": 120.5, "avg_loss": 0.0, "count": 2, "validation_metrics": {{}}, "pass_at_k": {{"pass@1": 0.75}}}},
                    "ood": {{"answer_accuracy": 0.5, "avg_response_len": 140.0, "avg_loss": 0.0, "count": 2, "validation_metrics": {{}}, "pass_at_k": {{"pass@1": 0.5}}}},
                    "total": {{"answer_accuracy": 0.625, "avg_loss": 0.0, "count": 4, "validation_metrics": {{}}, "pass_at_k": {{"pass@1": 0.625}}}}}}"#
            ),
        );
        for split in ["id", "ood"] {
            let g: String = (0..4)
                .map(|i| format!("{{\"op\": 3, \"__idx\": {}, \"prompt\": \"p\", \"gold_answer\": \"4\", \"gen_answer\": \"4\", \"resp_tokens\": {}, \"gen_solution_answer\": \"t\", \"exact_match\": 1, \"template\": null}}\n", i / 2, 100 + i))
                .collect();
            write(dir, &format!("{m}/{ck}_{split}_generations.jsonl"), &g);
        }
    }
    write(
        dir,
        &format!("{m}/summary.csv"),
        "checkpoint,id_acc,ood_acc,total_acc\ncheckpoint-100,0.75,0.5,0.625\ncheckpoint-200,0.7,0.5,0.6\n",
    );
}

#[test]
fn init_on_evaluation_outputs_builds_without_edits() {
    let tmp = tempfile::tempdir().unwrap();
    let evals = tmp.path().join("evals");
    eval_outputs(&evals);
    let doc = init(tmp.path(), &evals, "evals");
    assert_eq!(not_read(&doc), vec![]);
    let rows = init_rows(&doc);
    assert_eq!(
        rows,
        BTreeMap::from([
            ("eval_generations".into(), 16),
            ("eval_metrics".into(), 6),
            ("eval_results".into(), 4),
            ("eval_trajectories".into(), 12),
            ("runner_summary".into(), 2),
            ("summary".into(), 2),
        ])
    );
    // the folders that name the checkpoint and the benchmark are captured
    assert_eq!(key(&doc, "eval_results"), ["checkpoint", "bench", "benchmark"]);
    assert_eq!(undescribed(tmp.path(), "evals", &["runner_summary", "summary"]), Vec::<String>::new());
    let release = build_from_elsewhere(tmp.path(), "evals");
    assert_eq!(release_rows(&release), rows);
    assert_eq!(
        query(&release, "SELECT checkpoint, bench, score FROM eval_results ORDER BY checkpoint, bench"),
        "checkpoint,bench,score\nstep100,gsm8k,0.5\nstep100,math,0.5\nstep200,gsm8k,0.5\nstep200,math,0.5\n"
    );
    assert_eq!(
        query(
            &release,
            "SELECT checkpoint, split, count(*) AS n FROM eval_generations GROUP BY checkpoint, split ORDER BY 1, 2"
        ),
        "checkpoint,split,n\ncheckpoint-100,id,4\ncheckpoint-100,ood,4\ncheckpoint-200,id,4\ncheckpoint-200,ood,4\n"
    );
}

#[test]
fn runs_whose_logs_were_compressed_are_runs_of_the_same_table() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let log = |r: u32| -> String { (0..3).map(|s| format!("{{\"step\": {s}, \"loss\": 0.{r}{s}}}\n")).collect() };
    write(&runs, "a/metrics.jsonl", &log(1));
    write_gz(&runs, "b/metrics.jsonl.gz", log(2).as_bytes());
    std::fs::create_dir_all(runs.join("c")).unwrap();
    std::fs::write(runs.join("c/metrics.jsonl.zst"), zstd::encode_all(log(3).as_bytes(), 3).unwrap()).unwrap();
    let doc = init(tmp.path(), &runs, "z");
    assert_eq!(init_rows(&doc), BTreeMap::from([("metrics".into(), 9)]));
    assert_eq!(
        source_paths(&doc)["metrics_raw"].1,
        ["raw/{run}/metrics.jsonl", "raw/{run}/metrics.jsonl.gz", "raw/{run}/metrics.jsonl.zst"]
    );
    let release = build_from_elsewhere(tmp.path(), "z");
    assert_eq!(
        query(&release, "SELECT run, count(*) AS n FROM metrics GROUP BY run ORDER BY run"),
        "run,n\na,3\nb,3\nc,3\n"
    );
    // a run with its log both ways, the same bytes: read once, the copy left out
    std::fs::write(runs.join("a/metrics.jsonl.zst"), zstd::encode_all(log(1).as_bytes(), 3).unwrap()).unwrap();
    let doc = init(tmp.path(), &runs, "z2");
    assert_eq!(init_rows(&doc), BTreeMap::from([("metrics".into(), 9)]), "{doc}");
    assert_eq!(not_read(&doc)[0].0, "a/metrics.jsonl.zst");
    build_from_elsewhere(tmp.path(), "z2");
    // other records under the compressed name: two tables, each building (one source would
    // hold each step twice)
    std::fs::write(runs.join("a/metrics.jsonl.zst"), zstd::encode_all(log(4).as_bytes(), 3).unwrap()).unwrap();
    let doc = init(tmp.path(), &runs, "z3");
    assert_eq!(init_rows(&doc).len(), 3, "{doc}");
    build_from_elsewhere(tmp.path(), "z3");
}

#[test]
fn a_plain_file_alone_in_a_run_folder_is_that_run_s() {
    // one run: its config.json gets the `{run}` its metrics.jsonl has, to be joined on
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    write(&runs, "r1/metrics.jsonl", "{\"step\": 0, \"loss\": 1.5}\n{\"step\": 1, \"loss\": 0.5}\n");
    write(&runs, "r1/config.json", "{\"lr\": 0.001, \"model\": \"qwen\"}");
    let doc = init(tmp.path(), &runs, "one");
    assert_eq!(source_paths(&doc)["config_raw"].1, ["raw/{run}/config.json"]);
    assert_eq!(key(&doc, "config"), ["run"]);
    let release = build_from_elsewhere(tmp.path(), "one");
    assert_eq!(
        query(&release, "SELECT c.model, count(*) AS n FROM metrics m JOIN config c ON m.run = c.run GROUP BY 1"),
        "model,n\nqwen,2\n"
    );
}

#[test]
fn a_dangling_link_is_counted_among_the_files_found() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    write(&runs, "a.jsonl", "{\"step\": 0, \"loss\": 1.5}\n");
    std::os::unix::fs::symlink(runs.join("gone.jsonl"), runs.join("b.jsonl")).unwrap();
    let doc = init(tmp.path(), &runs, "dl");
    // found: what was read and what was not
    assert_eq!(doc["found"]["files"], 2, "{doc}");
    assert_eq!(not_read(&doc).len(), 1, "{doc}");
    assert!(not_read(&doc)[0].1.starts_with("cannot be listed"), "{doc}");
}

#[test]
fn a_wandb_table_no_log_can_give_is_left_out_with_its_reason_in_the_pipeline() {
    // the real client logs a key twice once nested keys are joined (`a.b`): the history
    // cannot be read, the run can
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    let script = "import sys, wandb\n\
                  r = wandb.init(project='p', id='clash001', dir=sys.argv[1])\n\
                  r.log({'a.b': 1, 'a': {'b': 2}, 'loss': 0.5})\n\
                  r.finish()\n";
    wandb_client(script, &raw);
    let doc = init(tmp.path(), &raw, "clash");
    assert!(init_rows(&doc).contains_key("wandb_runs") && !init_rows(&doc).contains_key("wandb_history"), "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/clash/pipeline.toml")).unwrap();
    assert!(toml.contains("[[left_out]]\ntable = \"wandb_history\"\n"), "{toml}");
    // (a binary log's place is a record number)
    assert!(toml.contains("(wandb): record "), "{toml}");
    let o = run(bin()
        .current_dir("/")
        .arg("build")
        .arg(tmp.path().join("pipelines/clash"))
        .arg("--releases-dir")
        .arg(tmp.path().join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("note: table wandb_history leaves out raw/wandb/"), "{}", stderr(&o));
}

#[test]
fn init_never_overwrites_a_file_and_leaves_nothing_when_it_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    tinker_logs(&logs);
    init(tmp.path(), &logs, "runs");
    let before = snapshot_files(tmp.path());
    let again = |name: &str| run(bin().current_dir(tmp.path()).arg("init").arg(&logs).args(["--name", name]));
    // a pipeline.toml that exists
    let o = again("runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pipelines/runs/pipeline.toml exists already; init never overwrites"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot_files(tmp.path()), before);
    // a schema that exists (pipeline.toml moved away): nothing is written
    std::fs::rename(tmp.path().join("pipelines/runs/pipeline.toml"), tmp.path().join("kept.toml")).unwrap();
    let before = snapshot_files(tmp.path());
    let o = again("runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("schemas/runs/metrics.json exists already"), "{}", stderr(&o));
    assert_eq!(snapshot_files(tmp.path()), before);
    assert!(!tmp.path().join("pipelines/runs/pipeline.toml").exists());
    // another folder where the link would go
    std::fs::create_dir_all(tmp.path().join("pipelines/other/raw")).unwrap();
    let o = again("other");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pipelines/other/raw exists already"), "{}", stderr(&o));
    assert!(!tmp.path().join("schemas/other").exists());
    // a name that is no release name
    let o = again("My Runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a release name"), "{}", stderr(&o));
    // the link an earlier init left to this folder is used again
    std::fs::remove_dir_all(tmp.path().join("schemas/runs")).unwrap();
    let o = again("runs");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_link(tmp.path().join("pipelines/runs/raw")).unwrap(), Path::new("../../logs"));
}

#[test]
fn init_names_each_file_it_cannot_read_and_types_mixed_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("mixed");
    // two runs' step logs; the second's last line was cut off by a crash
    write(
        &d,
        "steps/a.jsonl",
        "{\"run_id\": \"a\", \"step\": 1, \"loss\": 0.5}\n{\"run_id\": \"a\", \"step\": 2, \"loss\": 0.25}\n",
    );
    write(&d, "steps/b.jsonl", "{\"run_id\": \"b\", \"step\": 1, \"loss\": 0.5}\n{\"run_id\": \"b\", \"st");
    // a `group` that is a label in one record and a number in another
    write(
        &d,
        "runs.json",
        r#"[{"name": "a", "group": "ablation"}, {"name": "b", "group": 8}, {"name": "c", "group": null}]"#,
    );
    write(&d, "broken.json", "{\"results\": [1, 2,");
    write(&d, "model.bin", "\u{0}\u{1}\u{2}");
    write(&d, "empty.csv", "");
    // a file created and never written, and one in Latin-1
    write(&d, "empty.json", "");
    std::fs::write(d.join("latin1.json"), b"{\"name\": \"caf\xe9\"}").unwrap();
    let doc = init(tmp.path(), &d, "mixed");
    let skipped = not_read(&doc);
    let reason = |f: &str| {
        skipped.iter().find(|(n, _)| n == f).map(|(_, r)| r.clone()).unwrap_or_else(|| panic!("{f}: {skipped:?}"))
    };
    assert_eq!(skipped.len(), 5, "{skipped:?}");
    assert_eq!(reason("empty.json"), "empty: no JSON document in it (a file created and never written?)");
    assert!(
        reason("latin1.json").starts_with("not UTF-8 text at line 1 column 14: a byte there is no UTF-8"),
        "{skipped:?}"
    );
    // the crashed run's log is read up to its cut line, which is set aside and named
    assert!(skipped.iter().all(|(f, _)| f != "steps/b.jsonl"), "{skipped:?}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/mixed/pipeline.toml")).unwrap();
    assert!(
        toml.contains("on_truncated = \"reject\"   # steps/b.jsonl:2: truncated last line (it ends without a newline"),
        "{toml}"
    );
    assert!(reason("broken.json").starts_with("not JSON: EOF while parsing"), "{}", reason("broken.json"));
    assert!(reason("model.bin").starts_with("not a format runpack reads"), "{}", reason("model.bin"));
    assert!(reason("empty.csv").contains("no header"), "{}", reason("empty.csv"));
    let runs = source(&doc, "runs_raw");
    assert_eq!(runs["declared"][0]["column"], "group");
    assert_eq!(runs["declared"][0]["type"], "any");
    // its schema and card say it holds JSON text, not the strings it looks like
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("schemas/mixed/runs.json")).unwrap()).unwrap();
    let group = schema["fields"].as_array().unwrap().iter().find(|f| f["name"] == "group").unwrap();
    assert!(group["description"].as_str().unwrap().starts_with("JSON text of each value"), "{group}");
    assert_eq!(init_rows(&doc), BTreeMap::from([("runs".into(), 3), ("steps".into(), 3)]));
    assert_eq!(key(&doc, "steps"), ["run_id", "step"]);
    let release = build_from_elsewhere(tmp.path(), "mixed");
    let rejected = std::fs::read_to_string(release.join("rejects/steps_raw.jsonl")).unwrap();
    assert!(
        rejected.starts_with(r#"{"_source_file":"raw/steps/b.jsonl","_source_line":2,"_reasons":["truncated"#),
        "{rejected}"
    );
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains("warning: raw/steps/b.jsonl:2: steps_raw: truncated last line"), "{card}");
    // JSON text keeps each value as written
    assert_eq!(
        query(&release, "SELECT name, \"group\" FROM runs ORDER BY name"),
        "name,group\na,\"\"\"ablation\"\"\"\nb,8\nc,\n"
    );

    // the text report says the same on stderr, the pipeline folder on stdout
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&d).args(["--name", "mixed2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "pipelines/mixed2\n");
    let err = stderr(&o);
    assert!(err.contains("not read (5 files):\n"), "{err}");
    assert!(err.contains("    group: declared any"), "{err}");
    assert!(err.contains("next: runpack build pipelines/mixed2"), "{err}");
}

#[test]
fn a_member_null_in_every_row_is_named_as_the_reason_its_object_is_json_text() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cfgs");
    write(
        &d,
        "runs.jsonl",
        "{\"step\": 1, \"cfg\": {\"lr\": 0.1, \"note\": null}}\n{\"step\": 2, \"cfg\": {\"lr\": 0.2, \"note\": null}}\n",
    );
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&d));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "    cfg: declared any (at $.cfg.note, no input file has a non-null value for it, so its type is unknown)"
        ),
        "{err}"
    );
    // kept whole, as its JSON text
    let release = build_from_elsewhere(tmp.path(), "cfgs");
    assert_eq!(
        query(&release, "SELECT step, cfg FROM runs ORDER BY step"),
        "step,cfg\n1,\"{\"\"lr\"\":0.1,\"\"note\"\":null}\"\n2,\"{\"\"lr\"\":0.2,\"\"note\"\":null}\"\n"
    );
}

#[test]
fn init_refuses_a_folder_without_a_file_it_reads() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "notes/README.txt", "hello\n");
    let o = run(bin().current_dir(tmp.path()).args(["init", "notes"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("notes: no file runpack can read was found (1 file; not read:\n  README.txt: not a format"),
        "{}",
        stderr(&o)
    );
    assert!(!tmp.path().join("pipelines").exists());
    // a file with several problems: each is said, here and in `--format json`'s error (the
    // only thing it prints then)
    let lines: String =
        (1..=8).map(|n| if n % 2 == 0 { format!("[{n}]\n") } else { format!("{{\"a\": {n}}}\n") }).collect();
    write(tmp.path(), "bad/runs.jsonl", &lines);
    let o = run(bin().current_dir(tmp.path()).args(["init", "bad"]));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("  runs.jsonl: line 2: expected a JSON object, found an array (rule record)\n"), "{err}");
    for n in [4, 6, 8] {
        assert!(err.contains(&format!("    and line {n}: expected a JSON object, found an array")), "{err}");
    }
    assert!(!err.contains("--format json"), "{err}");
    let o = run(bin().current_dir(tmp.path()).args(["init", "bad", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc["error"].as_str().unwrap().contains("    and line 8: expected a JSON object"), "{doc}");
    let o = run(bin().current_dir(tmp.path()).args(["init", "missing"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing: no such file or folder"), "{}", stderr(&o));
}

#[test]
fn init_help_ends_with_examples() {
    let o = run(bin().args(["init", "--help"]));
    assert!(o.status.success());
    let help = stdout(&o);
    let tail = help.trim_end().rsplit("Examples:").next().unwrap();
    assert!(tail.contains("runpack init pipelines/tinker-rl-bench/raw --name my-runs"), "{help}");
    assert!(
        help.trim_end().ends_with("runpack build pipelines/my-runs                              # then build it"),
        "{help}"
    );
}

#[test]
fn init_reads_a_folder_inside_the_pipeline_and_skips_runpacks_own_folders() {
    let tmp = tempfile::tempdir().unwrap();
    // raw files kept in the pipeline folder, as the bundled example keeps them in raw/
    tinker_logs(&tmp.path().join("pipelines/runs/data"));
    let doc = init(tmp.path(), Path::new("pipelines/runs/data"), "runs");
    let metrics = source(&doc, "metrics_raw");
    assert_eq!(metrics["path"], serde_json::json!(["data/{run}/metrics.jsonl"]));
    assert!(!tmp.path().join("pipelines/runs/raw").exists());
    let release = build_from_elsewhere(tmp.path(), "runs");
    assert_eq!(release_rows(&release), init_rows(&doc));
    // the whole project: its pipelines, schemas and releases are not raw data
    let o = run(bin().current_dir(tmp.path()).args(["init", ".", "--name", "project"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("no file runpack can read was found (0 files)"), "{err}");
    for n in ["note: pipelines/ not looked at", "note: schemas/ not looked at", "not looked at: a runpack release"] {
        assert!(err.contains(n), "{n}: {err}");
    }
    // a project of raw files beside runpack's own folders: its builds do not name the
    // pipelines, schemas and releases as raw files no source reads
    tinker_logs(&tmp.path().join("runs"));
    let o = run(bin().current_dir(tmp.path()).args(["init", ".", "--name", "project", "-q"]));
    assert!(o.status.success(), "{}", stderr(&o));
    for _ in 0..2 {
        let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/project", "--force"]));
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("read by no source"), "{}", stderr(&o));
    }
}

#[test]
fn init_json_report_and_pipeline_are_pinned() {
    let tmp = tempfile::tempdir().unwrap();
    tinker_logs(&tmp.path().join("logs"));
    let doc = init(tmp.path(), Path::new("logs"), "tinker-logs");
    insta::assert_snapshot!("init_report", serde_json::to_string_pretty(&doc).unwrap());
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/tinker-logs/pipeline.toml")).unwrap();
    insta::assert_snapshot!("init_pipeline", toml);
    let schema = std::fs::read_to_string(tmp.path().join("schemas/tinker-logs/metrics.json")).unwrap();
    insta::assert_snapshot!("init_metrics_schema", schema);
}

#[test]
fn init_names_the_run_of_history_dumps_by_their_file() {
    // `run.history()` written as CSV, one file per run, no column naming the run
    let tmp = tempfile::tempdir().unwrap();
    let ex = tmp.path().join("exports");
    for (run, loss) in [("grpo-a", "0.5"), ("grpo-b", "0.25")] {
        write(
            &ex,
            &format!("history/{run}.csv"),
            &format!(
                ",_step,_runtime,_timestamp,train/loss\n0,0,1.5,1700000000.5,{loss}\n1,1,3.0,1700000002.0,0.125\n"
            ),
        );
    }
    let doc = init(tmp.path(), &ex, "dumps");
    assert_eq!(not_read(&doc), vec![]);
    assert_eq!(init_rows(&doc), BTreeMap::from([("wandb_history_dumps".into(), 4)]));
    assert_eq!(key(&doc, "wandb_history_dumps"), ["run", "step", "metric"]);
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/dumps/pipeline.toml")).unwrap();
    assert!(toml.contains("path = \"raw/history/{run}.csv\"\nformat = \"wandb\"\n[source.wandb]\ntable = \"history\"\nrun_capture = \"run\""), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "dumps");
    assert_eq!(
        query(&release, "SELECT run_id, step, metric, value FROM wandb_history_dumps ORDER BY run_id, step"),
        "run_id,step,metric,value\ngrpo-a,0,train/loss,0.5\ngrpo-a,1,train/loss,0.125\ngrpo-b,0,train/loss,0.25\ngrpo-b,1,train/loss,0.125\n"
    );
}

// ------------------------------------------------------------------ trackio, Inspect, lm-eval, tinker-cookbook, YAML

/// A folder `tmp/outputs` holding copies of bundled raw folders: each `(pipeline, sub)`'s
/// `pipelines/<pipeline>/raw` copied to `outputs/<sub>` (`""`: the folder itself).
fn bundled_raw(tmp: &Path, parts: &[(&str, &str)]) -> PathBuf {
    let folder = tmp.join("outputs");
    for (pipeline, sub) in parts {
        copy_tree(&repo().join("pipelines").join(pipeline).join("raw"), &folder.join(sub));
    }
    folder
}

/// Rows by table of the hand-written pipeline `pipelines/<name>`, built into `tmp/hand`.
fn hand_written_rows(tmp: &Path, name: &str) -> BTreeMap<String, u64> {
    let o =
        run(bin().arg("build").arg(repo().join("pipelines").join(name)).arg("--releases-dir").arg(tmp.join("hand")));
    assert!(o.status.success(), "build of {name} failed: {}", stderr(&o));
    release_rows(&PathBuf::from(stdout(&o).trim()))
}

/// Each source's format and path patterns, by source name.
fn source_paths(doc: &Value) -> BTreeMap<String, (String, Vec<String>)> {
    doc["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let paths = s["path"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
            (s["name"].as_str().unwrap().into(), (s["format"].as_str().unwrap().into(), paths))
        })
        .collect()
}

/// The tables init makes of the bundled tinker-cookbook folder, with their rows.
const COOKBOOK_TABLES: &[(&str, u64)] = &[
    ("metrics", 24),
    ("checkpoints", 6),
    ("timings", 12),
    ("rollouts", 14),
    ("rollout_steps", 22),
    ("eval_runs", 1),
    ("eval_results", 2),
    ("eval_trajectories", 3),
    ("runs", 1),
    ("config", 2),
];

fn rows_of(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(n, r)| (n.to_string(), *r)).collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn init_recognises_a_trackio_project_database_and_its_fragments() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("trackio", "")]);
    let doc = init(tmp.path(), &folder, "t");
    let want = rows_of(&[("trackio_metrics", 13), ("trackio_runs", 3), ("trackio_system_metrics", 2)]);
    assert_eq!(init_rows(&doc), want);
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "t")), want);
    // the hand-written pipeline reads the same files: the same rows
    let hand = hand_written_rows(tmp.path(), "trackio");
    assert_eq!(
        (hand["metrics"], hand["system_metrics"], hand["runs"]),
        (want["trackio_metrics"], want["trackio_system_metrics"], want["trackio_runs"])
    );
    // the database and the fragments imported into it: one source, each log call read once
    let sources = source_paths(&doc);
    let both = strings(&["raw/demo.db", "raw/inbox/*/*.jsonl"]);
    assert_eq!(sources["trackio_metrics_raw"], ("trackio-metrics".into(), both.clone()));
    assert_eq!(sources["trackio_system_metrics_raw"], ("trackio-system".into(), both.clone()));
    // the runs too: a run whose fragments the database imported is read from the database
    assert_eq!(sources["trackio_runs_raw"], ("trackio-runs".into(), both));
    assert_eq!(key(&doc, "trackio_metrics"), ["run_id", "step", "metric"]);
    assert_eq!(
        doc["found"]["formats"],
        serde_json::json!({"trackio-metrics": 2, "trackio-runs": 2, "trackio-system": 2})
    );
    assert_eq!(not_read(&doc), vec![]);

    // an integer a float cannot hold is kept as its digits in value_text
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("trackio", "")]);
    for f in std::fs::read_dir(folder.join("inbox")).unwrap() {
        std::fs::remove_dir_all(f.unwrap().path()).unwrap();
    }
    let update_where = |metrics: &str, rows: &str| {
        let script = format!(
            "import sys, sqlite3\n\
             c = sqlite3.connect(sys.argv[1])\n\
             c.execute(\"UPDATE metrics SET metrics = ? WHERE {rows}\", ({metrics:?},))\n\
             c.commit()\n"
        );
        let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(folder.join("demo.db")));
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let update = |metrics: &str| update_where(metrics, "id = 1");
    update(r#"{"big": 9007199254740993}"#);
    let doc = init(tmp.path(), &folder, "big");
    let release = build_from_elsewhere(tmp.path(), "big");
    assert_eq!(
        query(&release, "SELECT value, value_text FROM trackio_metrics WHERE metric = 'big'"),
        "value,value_text\n,9007199254740993\n",
        "{doc}"
    );

    // a log call whose metrics are no object among good ones: set aside, the others read
    update("[1, 2]");
    let doc = init(tmp.path(), &folder, "one");
    assert_eq!(init_rows(&doc)["trackio_metrics"], 11, "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/one/pipeline.toml")).unwrap();
    let said = "on_invalid = \"reject\"   # 1 bad record among good ones, set aside in rejects/ and named in the card; \
                the first: demo.db, line 1: column `metrics` of table `metrics` (row id 1): expected a JSON object, \
                found an array (rule json)";
    assert!(toml.contains(said), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "one");
    let rejects = std::fs::read_to_string(release.join("rejects/trackio_metrics_raw.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 1, "{rejects}");

    // a metrics table that cannot be read (no log call's metrics are an object): no table,
    // said with its reason, though the database gives the runs
    update_where("[1, 2]", "1 = 1");
    let doc = init(tmp.path(), &folder, "b");
    assert!(init_rows(&doc).contains_key("trackio_runs"), "{doc}");
    assert!(!init_rows(&doc).contains_key("trackio_metrics"), "{doc}");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("trackio_metrics (trackio-metrics): no table, as demo.db cannot be read so:")
            && notes.contains("expected a JSON object, found an array"),
        "{notes}"
    );
    // ... and so does every build, and the card: the pipeline keeps it in `[[left_out]]`
    let o = run(bin()
        .current_dir("/")
        .arg("build")
        .arg(tmp.path().join("pipelines/b"))
        .arg("--releases-dir")
        .arg(tmp.path().join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "table trackio_metrics leaves out raw/demo.db, as pipeline.toml says: no table, as it cannot be read so (trackio-metrics): ";
    assert!(stderr(&o).contains(&format!("note: {said}")), "{}", stderr(&o));
    let card = std::fs::read_to_string(PathBuf::from(stdout(&o).trim()).join("README.md")).unwrap();
    assert!(
        card.contains(
            "- table `trackio_metrics` leaves out `raw/demo.db`; when the pipeline was written: no table, as it cannot be read so"
        ),
        "{card}"
    );

    // a run logged to fragments only (trackio's JSONL storage, not imported yet) beside the
    // database: its config is read from its fragment, the imported runs' from the database
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("trackio", "")]);
    write(
        &folder,
        "inbox/new0001/00000000.jsonl",
        "{\"v\":1,\"kind\":\"metric\",\"project\":\"demo\",\"run\":\"run-frag\",\"run_id\":\"new0001\",\
         \"metrics\":{\"loss\":1.0},\"step\":0,\"timestamp\":\"2026-12-06T05:58:41+00:00\",\
         \"config\":{\"lr\":0.00001},\"log_id\":\"lognew0001\"}\n",
    );
    let doc = init(tmp.path(), &folder, "n");
    assert_eq!(init_rows(&doc)["trackio_runs"], 4, "{doc}");
    let release = build_from_elsewhere(tmp.path(), "n");
    assert_eq!(
        query(&release, "SELECT run, config FROM trackio_runs WHERE run_id = 'new0001'"),
        "run,config\nrun-frag,\"{\"\"lr\"\":0.00001}\"\n"
    );

    // the fragments alone: their runs' configs too, and the table without rows said
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("trackio", "")]);
    std::fs::remove_file(folder.join("demo.db")).unwrap();
    let doc = init(tmp.path(), &folder, "f");
    let want = rows_of(&[("trackio_metrics", 3), ("trackio_runs", 1)]);
    assert_eq!(init_rows(&doc), want);
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "f")), want);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("trackio-system") && notes.contains("no rows in inbox/"), "{notes}");

    // a database beside its Parquet export: runs from the database, the export's configs said
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("trackio-export", "")]);
    let doc = init(tmp.path(), &folder, "e");
    let rows = init_rows(&doc);
    assert_eq!((rows["trackio_metrics"], rows["trackio_system_metrics"], rows["trackio_runs"]), (13, 2, 3));
    assert_eq!(
        not_read(&doc),
        vec![(
            "aux/configs.parquet".to_string(),
            "trackio-runs reads the project's database beside it, which holds these runs".to_string()
        )]
    );
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "e")), rows);
}

/// A log of one name in a folder below each run's (`trl/<run>/logs/on_log.jsonl`, as a
/// callback writes it) is one table over the runs, the run's folder captured; a file of that
/// name with other keys stays a table of its own.
#[test]
fn logs_a_folder_below_each_runs_folder_are_one_table_of_the_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    for (run, loss) in [("grpo-a", 0.5), ("grpo-b", 0.25), ("dpo-c", 0.125)] {
        let lines: String =
            (1..=3).map(|s| format!("{{\"step\": {s}, \"loss\": {}, \"reward\": 1.5}}\n", loss * s as f64)).collect();
        write(&out.join(format!("trl/{run}/logs")), "on_log.jsonl", &lines);
    }
    write(&out.join("eval/x/logs"), "on_log.jsonl", "{\"task\": \"gsm8k\", \"acc\": 0.5}\n");
    let doc = init(tmp.path(), &out, "c");
    assert_eq!(init_rows(&doc), rows_of(&[("on_log", 1), ("trl_on_log", 9)]));
    assert_eq!(source_paths(&doc)["trl_on_log_raw"], ("jsonl".into(), strings(&["raw/trl/{run}/logs/on_log.jsonl"])));
    assert_eq!(key(&doc, "trl_on_log"), ["run", "step"]);
    let release = build_from_elsewhere(tmp.path(), "c");
    let o = run(bin()
        .arg("query")
        .args(["--format", "csv"])
        .arg(&release)
        .arg("SELECT run, count(*) AS n, max(loss) AS loss FROM trl_on_log GROUP BY run ORDER BY run"));
    assert_eq!(stdout(&o), "run,n,loss\ndpo-c,3,0.375\ngrpo-a,3,1.5\ngrpo-b,3,0.75\n", "{}", stderr(&o));
    // a run folder with a second log of the name: the pattern would read it too, so no run is
    // joined without its name (each table keyed by its steps, every row once)
    write(&out.join("trl/dpo-c/logs"), "on_log.1.jsonl", "{\"step\": 4, \"loss\": 0.5, \"reward\": 1.5}\n");
    let doc = init(tmp.path(), &out, "c2");
    assert_eq!(init_rows(&doc), rows_of(&[("on_log", 1), ("on_log_2", 3), ("on_log_3", 3), ("trl_on_log", 4)]));
}

/// Run folders named with `*`, `?` or braces are left out by name (`not_read`), and only they:
/// `r*2` as a glob would match `run2` too, whose rows the build would drop without a word.
#[test]
fn a_file_left_out_for_a_glob_character_in_its_name_leaves_out_no_other() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    for run in ["ok1", "run2", "rx3", "r*2", "r?3", "r{1}"] {
        let lines: String = (1..=3).map(|s| format!("{{\"step\": {s}, \"loss\": 0.{s}}}\n")).collect();
        write(&out.join(format!("trl/{run}/logs")), "on_log.jsonl", &lines);
    }
    let doc = init(tmp.path(), &out, "g");
    assert_eq!(init_rows(&doc), rows_of(&[("on_log", 9)]));
    let release = build_from_elsewhere(tmp.path(), "g");
    let o = run(bin()
        .arg("query")
        .args(["--format", "csv"])
        .arg(&release)
        .arg("SELECT run, count(*) AS n FROM on_log GROUP BY run ORDER BY run"));
    assert_eq!(stdout(&o), "run,n\nok1,3\nrun2,3\nrx3,3\n", "{}", stderr(&o));
}

/// A plain log keyed by the Trainer's `global_step` (a callback's `on_log.jsonl`) that a
/// resumed run appended to keeps the last row of each step, as a log keyed by `step` does.
#[test]
fn a_resumed_log_keyed_by_global_step_keeps_the_last_row_of_each_step() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let lines: String = [(10, 0.5), (20, 0.4), (30, 0.3), (20, 0.45), (30, 0.35), (40, 0.25)]
        .iter()
        .map(|(s, l)| format!("{{\"global_step\": {s}, \"loss\": {l}}}\n"))
        .collect();
    write(&out.join("trl/a/logs"), "on_log.jsonl", &lines);
    write(&out.join("trl/b/logs"), "on_log.jsonl", "{\"global_step\": 10, \"loss\": 0.9}\n");
    let doc = init(tmp.path(), &out, "gs");
    assert_eq!(key(&doc, "on_log"), ["run", "global_step"]);
    assert_eq!(table(&doc, "on_log")["on_duplicate_key"], "keep-last");
    let release = build_from_elsewhere(tmp.path(), "gs");
    let o = run(bin()
        .arg("query")
        .args(["--format", "csv"])
        .arg(&release)
        .arg("SELECT run, global_step, loss FROM on_log ORDER BY run, global_step"));
    assert_eq!(
        stdout(&o),
        "run,global_step,loss\na,10,0.5\na,20,0.45\na,30,0.35\na,40,0.25\nb,10,0.9\n",
        "{}",
        stderr(&o)
    );
}

/// A file init cannot read at all is left out (`not_read`, with why): the card names it, so
/// that a reader of the data learns that a raw file is not in it.
#[test]
fn a_raw_file_no_table_reads_is_named_in_the_card() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write(&out.join("runs/a"), "metrics.jsonl", "{\"step\": 1, \"loss\": 0.5}\n");
    write(&out.join("results"), "summary.json", "{\"run\": \"a\", \"gsm8k\": 0.5,");
    let doc = init(tmp.path(), &out, "nr");
    assert_eq!(not_read(&doc).len(), 1, "{doc}");
    let release = build_from_elsewhere(tmp.path(), "nr");
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    let said = "- Raw files the release does not hold, listed in `not_read` in `pipeline.toml`, which says why each \
                is left out (by choice, or as it could not be read): `raw/results/summary.json`.";
    assert!(card.contains(said), "{card}");
}

/// Comment lines above a hand-made table's header (`# sweep summary`) are comments: init sets
/// `comment = "#"` (Frictionless `commentChar`), and a build skips them, naming each, above
/// the header and among the rows. A header whose first name is `#` stays a header.
#[test]
fn comment_lines_of_a_csv_file_are_skipped_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write(
        &out.join("results"),
        "summary.csv",
        "# sweep summary, 5-shot, strict\r\n#\r\nrun,gsm8k,mmlu\r\na,0.5,0.6\r\n# b was rerun\r\nb,0.7,0.8\r\n",
    );
    write(&out.join("results"), "numbered.csv", "#,run,gsm8k\n1,a,0.5\n2,b,0.7\n");
    let doc = init(tmp.path(), &out, "cm");
    assert!(not_read(&doc).is_empty(), "{doc}");
    let source = |name: &str| doc["sources"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(source("summary_raw")["comment"], "#", "{doc}");
    assert!(source("numbered_raw").get("comment").is_none(), "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/cm/pipeline.toml")).unwrap();
    assert!(toml.contains("comment = \"#\"   # lines that start with it are comments"), "{toml}");
    let (release, o) = build_saying(tmp.path(), "cm");
    let said = "source summary_raw skipped 3 lines that start with \"#\", as comments (its `comment`): \
                raw/results/summary.csv lines 1 (\"# sweep summary, 5-shot, strict\"), 2 (\"#\"), 5; a row whose first \
                cell starts with it is skipped so too (quote that cell to keep the row)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    // the card, which is published, names the lines without their text
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(!card.contains("sweep summary"), "{card}");
    assert!(card.contains("raw/results/summary.csv lines 1, 2, 5; a row whose"), "{card}");
    let q = |sql: &str| stdout(&run(bin().arg("query").args(["--format", "csv"]).arg(&release).arg(sql)));
    assert_eq!(
        q("SELECT run, gsm8k, mmlu, _source_line FROM summary"),
        "run,gsm8k,mmlu,_source_line\na,0.5,0.6,4\nb,0.7,0.8,6\n"
    );
    assert_eq!(q("SELECT \"#\", run FROM numbered"), "#,run\n1,a\n2,b\n");
}

/// A table merged by hand whose rows should be one per (model, task) but repeat it, with
/// other values: init says it and suggests `report_repeats` (commented out: rows may be runs a
/// seed tells apart); with it, each build counts and names the repeats, in the card too, and
/// keeps every row. A column the table lacks is refused.
#[test]
fn a_hand_merged_table_whose_rows_disagree_has_its_repeats_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write(
        &out,
        "results.csv",
        "model,task,acc,source\nbase,gsm8k,0.74,lm-eval\nbase,gsm8k,0.73,inspect\nsft,gsm8k,0.8,\n\
         sft,mmlu,0.6,lm-eval\nsft,mmlu,0.6,lm-eval\n",
    );
    let doc = init(tmp.path(), &out, "rr");
    assert_eq!(doc["tables"][0]["primary_key"], serde_json::json!([]), "{doc}");
    let note = doc["notes"][0].as_str().unwrap();
    assert!(note.contains("uncomment its `report_repeats`"), "{doc}");
    // the label that would tell the rows apart but for an empty cell is named
    assert!(note.contains("`source` (empty at results.csv:4) left out of it, as a key has no empty cell"), "{doc}");
    let toml_path = tmp.path().join("pipelines/rr/pipeline.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    let suggested =
        "# report_repeats = [\"model\", \"task\"]   # model \"base\", task \"gsm8k\" again at results.csv:3";
    assert!(toml.contains(suggested), "{toml}");
    // as written, the build says nothing of it
    let (_, o) = build_saying(tmp.path(), "rr");
    assert!(!stderr(&o).contains("report_repeats"), "{}", stderr(&o));
    let toml = toml.replace("# report_repeats", "report_repeats");
    std::fs::write(&toml_path, &toml).unwrap();
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/rr")).arg("--releases-dir").arg(tmp.path().join("o1")));
    assert!(o.status.success(), "{}", stderr(&o));
    let release = tmp.path().join("o1/rr/0.1.0");
    let said = "results: 2 values of (model, task) are held by more than one row (4 rows; 1 with rows that differ in \
                another column): model=\"base\", task=\"gsm8k\" at raw/results.csv:2, raw/results.csv:3 (rows differ); \
                model=\"sft\", task=\"mmlu\" at raw/results.csv:5, raw/results.csv:6 (rows alike); every row is kept \
                (`report_repeats`)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains(said), "{card}");
    assert!(
        card.contains("no primary key (values of (model, task) that repeat are counted under Data quality)"),
        "{card}"
    );
    let q = run(bin().arg("query").args(["--format", "csv"]).arg(&release).arg("SELECT count(*) AS n FROM results"));
    assert_eq!(stdout(&q), "n\n5\n");
    // a column the table lacks
    let toml = toml.replace("report_repeats = [\"model\", \"task\"]  ", "report_repeats = [\"model\", \"tsak\"]  ");
    let line = toml.lines().position(|l| l.starts_with("report_repeats = [\"model\", \"tsak\"]")).unwrap() + 1;
    std::fs::write(&toml_path, toml).unwrap();
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/rr")).arg("--releases-dir").arg(tmp.path().join("o2")));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{}:{line} (table results): `report_repeats` names `tsak`, which is no column of the table",
            toml_path.display()
        )),
        "{}",
        stderr(&o)
    );
}

/// Files of one kind in one folder are one table whether or not each has comment lines; a
/// file left out (a CR-only file, whose comment would run to its end) names no column of the
/// others' table.
#[test]
fn files_with_and_without_comment_lines_are_one_table_and_a_left_out_one_adds_no_column() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write(&out.join("multi"), "x.csv", "# first sweep\nrun,score\na,0.5\n");
    write(&out.join("multi"), "y.csv", "run,score\nb,0.6\n");
    write(&out.join("runs/x"), "a.csv", "run,score\na,1\nb,2\n");
    write(&out.join("runs/cr"), "a.csv", "# c\rrun,score\ra,1\r");
    let doc = init(tmp.path(), &out, "mix");
    let tables: Vec<&str> = doc["tables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tables.len(), 2, "{doc}");
    let multi = doc["tables"].as_array().unwrap().iter().find(|t| t["rows"] == 2 && t["columns"][0] == "run").unwrap();
    assert_eq!(multi["columns"].as_array().unwrap().len(), 4, "{doc}");
    let runs = doc["tables"].as_array().unwrap().iter().find(|t| t["source"] != multi["source"]).unwrap();
    assert!(!runs["columns"].as_array().unwrap().iter().any(|c| c == "# c"), "{doc}");
    assert_eq!(not_read(&doc).len(), 1, "{doc}");
    let (_, o) = build_saying(tmp.path(), "mix");
    // the one comment, above x.csv's header, is said with its text; nothing else is
    let said = stderr(&o);
    let warnings: Vec<&str> = said.lines().filter(|l| l.starts_with("warning")).collect();
    assert_eq!(warnings.len(), 1, "{said}");
    assert!(warnings[0].contains("raw/multi/x.csv line 1 (\"# first sweep\")"), "{said}");
}

/// Comment lines above a header that starts with `#` too (`#,model,acc`, a spreadsheet's row
/// numbers): `comment` would skip the header with them, and its first row would be taken for
/// one; init sets `header_row` (the lines above it are skipped) instead.
#[test]
fn comment_lines_above_a_hash_header_are_skipped_by_the_header_row() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    write(&out, "runs.csv", "run,score\na,1\n");
    write(&out, "sweep.csv", "# eval sweep 2026-11, 5-shot\n\n#,model,acc\n1,base,0.55\n2,sft,0.71\n");
    let doc = init(tmp.path(), &out, "hh");
    assert!(not_read(&doc).is_empty(), "{doc}");
    let source = doc["sources"].as_array().unwrap().iter().find(|s| s["name"] == "sweep_raw").unwrap().clone();
    assert_eq!(source["header_row"], 3, "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/hh/pipeline.toml")).unwrap();
    assert!(toml.contains("header_row = 3   # the lines above it are notes"), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "hh");
    assert_eq!(
        query(&release, "SELECT \"#\", model, acc, _source_line FROM sweep ORDER BY 1"),
        "#,model,acc,_source_line\n1,base,0.55,4\n2,sft,0.71,5\n"
    );
}

/// A pipeline written by hand that reads a file with a comment line for its header is told
/// which option skips it.
#[test]
fn a_comment_line_read_as_the_header_names_the_comment_option() {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("p/raw"), "s.csv", "# sweep summary, 5-shot, strict\nrun,gsm8k,mmlu,arc\na,1,2,3\n");
    write(
        &tmp.path().join("p"),
        "pipeline.toml",
        "name = \"p\"\nversion = \"0.1.0\"\n[[source]]\nname = \"s\"\npath = \"raw/s.csv\"\nformat = \"csv\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n",
    );
    let o = bin().arg("build").arg(tmp.path().join("p")).current_dir(tmp.path()).output().unwrap();
    assert!(!o.status.success());
    let said = "(line 1, read as the header, starts with `#`: a comment line? set comment = \"#\" on the source to skip \
                lines that start with it; a header that starts with `#` too would be skipped with them: then set \
                header_row to the header's line instead)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    // a comment line with as many cells as the header: the rows read, the table's SQL names a
    // column the comment line does not have
    write(&tmp.path().join("p/raw"), "s.csv", "# sweep summary, 5-shot\nmodel,acc\nm1,0.5\n");
    let toml = std::fs::read_to_string(tmp.path().join("p/pipeline.toml")).unwrap();
    std::fs::write(tmp.path().join("p/pipeline.toml"), toml.replace("SELECT *", "SELECT model, acc")).unwrap();
    let o = bin().arg("build").arg(tmp.path().join("p")).current_dir(tmp.path()).output().unwrap();
    assert!(!o.status.success());
    let said = "(source s has a column named \"# sweep summary\" from its header line: a comment line read as the \
                header? set comment = \"#\" on the source to skip lines that start with it, or header_row to the \
                header's line)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
}

#[test]
fn logs_of_one_format_in_sibling_folders_are_one_source_whose_captures_are_no_column() {
    // Inspect logs in folders of their own: a `{model}` capture would clash with the logs'
    // `model` column (init refused the whole folder); the `.json` log of a folder beside the
    // `.eval` logs joins them
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let bundled = repo().join("pipelines/inspect/raw");
    for (sub, ext) in [("a", "eval"), ("b", "json")] {
        for e in std::fs::read_dir(&bundled).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == ext) {
                std::fs::create_dir_all(logs.join(sub)).unwrap();
                std::fs::copy(&p, logs.join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    let doc = init(tmp.path(), &logs, "i");
    let want = rows_of(&[("inspect_evals", 10), ("inspect_samples", 8)]);
    assert_eq!(init_rows(&doc), want);
    assert_eq!(
        source_paths(&doc)["inspect_evals_raw"],
        ("inspect-evals".into(), strings(&["raw/{log_dir}/*.eval", "raw/{log_dir}/*.json"]))
    );
    assert!(doc["not_read"].as_array().unwrap().is_empty(), "{}", doc["not_read"]);
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "i")), want);

    // lighteval's results of two models of two organisations: one table, both captured
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let file = repo()
        .join("pipelines/lighteval/raw/results/HuggingFaceTB/SmolLM2-135M/results_2026-11-30T12-00-00.000000.json");
    let text = std::fs::read_to_string(&file).unwrap();
    write(&out.join("results/HuggingFaceTB/SmolLM2-135M"), "results_2026-11-30T12-00-00.000000.json", &text);
    write(&out.join("results/my-org/sft-500"), "results_2026-12-02T00-00-00.000000.json", &text);
    // a model run again: a results file of its own in the model's folder
    write(&out.join("results/my-org/sft-500"), "results_2026-12-04T00-00-00.000000.json", &text);
    let doc = init(tmp.path(), &out, "l");
    assert_eq!(init_rows(&doc).len(), 1, "{:?}", init_rows(&doc));
    assert_eq!(
        source_paths(&doc)["lighteval_results_raw"],
        ("lighteval-results".into(), strings(&["raw/results/{org}/{model}/results_{date_id}.json"]))
    );
    assert_eq!(key(&doc, "lighteval_results"), ["org", "model", "date_id", "task", "metric"]);
    let release = build_from_elsewhere(tmp.path(), "l");
    let o = run(bin().arg("query").args(["--format", "csv"]).arg(&release).arg(
        "SELECT org, model, count(DISTINCT date_id) AS runs, count(*) AS n FROM lighteval_results GROUP BY org, model \
         ORDER BY org",
    ));
    assert_eq!(stdout(&o), "org,model,runs,n\nHuggingFaceTB,SmolLM2-135M,1,6\nmy-org,sft-500,2,12\n", "{}", stderr(&o));
    // a model without an organisation beside them (lighteval writes `results/gpt2/…`): one
    // table still, every depth read, each row's model its file's `model_name`
    let gpt2 = text.replace("\"HuggingFaceTB/SmolLM2-135M\"", "\"gpt2\"");
    assert_ne!(gpt2, text);
    write(&out.join("results/gpt2"), "results_2026-12-05T00-00-00.000000.json", &gpt2);
    let doc = init(tmp.path(), &out, "l2");
    assert_eq!(init_rows(&doc), rows_of(&[("lighteval_results", 24)]));
    assert_eq!(
        source_paths(&doc)["lighteval_results_raw"],
        ("lighteval-results".into(), strings(&["raw/results/**/results_{date_id}.json"]))
    );
    assert_eq!(key(&doc, "lighteval_results"), ["date_id", "model_name", "task", "metric"]);
    let release = build_from_elsewhere(tmp.path(), "l2");
    let o = run(bin().arg("query").args(["--format", "csv"]).arg(&release).arg(
        "SELECT model_name, count(DISTINCT date_id) AS runs, count(*) AS n FROM lighteval_results GROUP BY 1 ORDER BY 1",
    ));
    assert_eq!(stdout(&o), "model_name,runs,n\nHuggingFaceTB/SmolLM2-135M,3,18\ngpt2,1,6\n", "{}", stderr(&o));
    // and a model of a deeper name
    write(&out.join("results/org2/sub/deep"), "results_2026-12-06T00-00-00.000000.json", &gpt2.replace("gpt2", "deep"));
    let doc = init(tmp.path(), &out, "l3");
    assert_eq!(init_rows(&doc), rows_of(&[("lighteval_results", 30)]));
    assert_eq!(source_paths(&doc)["lighteval_results_raw"].1, ["raw/results/**/results_{date_id}.json"]);

    // runs two folders deep, one of them compressed: one table, the experiment captured
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let line = |step: u32| format!("{{\"step\": {step}, \"loss\": 0.5}}\n");
    write(&logs.join("grpo/r1"), "metrics.jsonl", &line(1));
    write(&logs.join("sft/r2"), "metrics.jsonl", &line(2));
    write_gz(&logs, "grpo/r3/metrics.jsonl.gz", line(3).as_bytes());
    let doc = init(tmp.path(), &logs, "c");
    assert_eq!(init_rows(&doc), rows_of(&[("metrics", 3)]));
    assert_eq!(
        source_paths(&doc)["metrics_raw"].1,
        ["raw/{experiment}/{run}/metrics.jsonl", "raw/{experiment}/{run}/metrics.jsonl.gz"]
    );
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "c")), rows_of(&[("metrics", 3)]));
}

#[test]
fn plain_files_of_one_name_two_folders_deep_are_one_source() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    for d in ["e1/a", "e1/b", "e2/c", "e2/d"] {
        write(&raw.join(d), "scores.jsonl", "{\"step\": 1, \"score\": 0.5}\n{\"step\": 2, \"score\": 0.7}\n");
    }
    // a folder of another depth keeps a source of its own
    write(&raw.join("other"), "scores.jsonl", "{\"step\": 1, \"score\": 0.1}\n");
    let doc = init(tmp.path(), &raw, "p");
    assert_eq!(source_paths(&doc)["scores_raw"].1, ["raw/{experiment}/{run}/scores.jsonl"], "{:?}", source_paths(&doc));
    assert_eq!(key(&doc, "scores"), ["experiment", "run", "step"]);
    assert_eq!(init_rows(&doc).values().sum::<u64>(), 9);
    let release = build_from_elsewhere(tmp.path(), "p");
    let o = run(bin()
        .args(["query", "--format", "csv"])
        .arg(&release)
        .arg("SELECT experiment, run, count(*) AS n FROM scores GROUP BY 1, 2 ORDER BY 1, 2"));
    assert_eq!(stdout(&o), "experiment,run,n\ne1,a,2\ne1,b,2\ne2,c,2\ne2,d,2\n", "{}", stderr(&o));
}

#[test]
fn files_left_out_for_one_reason_are_said_together_after_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    write(&raw, "metrics.jsonl", "{\"step\": 1, \"loss\": 0.5}\n");
    for name in ["a.log", "b.log", "c.log", "d.diff"] {
        write(&raw, name, "text\n");
    }
    write(&raw, "empty.jsonl", "");
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&raw).args(["--name", "g"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let own = err.find("  empty.jsonl: holds no record").unwrap_or_else(|| panic!("{err}"));
    let shared = err
        .find("  4 files: not a format runpack reads (JSON, JSON Lines, YAML, CSV, TSV, Parquet, Tinker logs, W&B exports, trackio projects, evaluation outputs): a.log, b.log, c.log and 1 more\n")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(own < shared, "{err}");
    // the JSON document and pipeline.toml still name each file
    let doc = init(tmp.path(), &raw, "g2");
    assert_eq!(not_read(&doc).len(), 5);
}

#[test]
fn numbers_written_as_nan_strings_keep_their_column_a_number_column() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    write(&raw, "d.jsonl", "{\"id\": 1, \"x\": 0.5}\n{\"id\": 2, \"x\": \"NaN\"}\n{\"id\": 3, \"x\": \"-Infinity\"}\n");
    let doc = init(tmp.path(), &raw, "n");
    let d = source(&doc, "d_raw");
    assert!(d["declared"].as_array().is_none_or(|d| d.is_empty()), "{d}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/n/pipeline.toml")).unwrap();
    assert!(
        toml.contains("coerce_nonfinite_strings = true   # x holds numbers and string \"NaN\" (at d.jsonl:2)\n"),
        "{toml}"
    );
    let release = build_from_elsewhere(tmp.path(), "n");
    let o =
        run(bin().args(["query", "--format", "csv"]).arg(&release).arg("SELECT id, x, arrow_typeof(x) AS t FROM d"));
    assert_eq!(stdout(&o), "id,x,t\n1,0.5,Float64\n2,NaN,Float64\n3,-Infinity,Float64\n", "{}", stderr(&o));
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains("| non-finite values in the tables' Parquet files | 2 |"), "{card}");

    // the strings first: a column they typed as text, which the numbers after them broke
    let first = tmp.path().join("first");
    write(&first, "a.jsonl", "{\"id\": 1, \"v\": \"NaN\"}\n{\"id\": 2, \"v\": \"Infinity\"}\n{\"id\": 3, \"v\": 2}\n");
    // and a column of text that a "NaN" name opens: text it stays
    write(
        &first,
        "b.jsonl",
        "{\"id\": 1, \"name\": \"Nan\"}\n{\"id\": 2, \"name\": \"Bob\"}\n{\"id\": 3, \"name\": 7}\n",
    );
    let doc = init(tmp.path(), &first, "f");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/f/pipeline.toml")).unwrap();
    assert!(
        toml.contains(
            "coerce_nonfinite_strings = true   # v holds numbers and strings such as \"NaN\" (the first at a.jsonl:1)\n"
        ),
        "{toml}"
    );
    assert_eq!(toml.matches("coerce_nonfinite_strings").count(), 1, "{toml}");
    let b = source(&doc, "b_raw");
    assert_eq!(
        (&b["declared"][0]["column"], &b["declared"][0]["type"]),
        (&serde_json::json!("name"), &serde_json::json!("any")),
        "{b}"
    );
    let release = build_from_elsewhere(tmp.path(), "f");
    let o = run(bin()
        .args(["query", "--format", "csv"])
        .arg(&release)
        .arg("SELECT v, arrow_typeof(v) AS t FROM a ORDER BY id"));
    assert_eq!(stdout(&o), "v,t\nNaN,Float64\nInfinity,Float64\n2.0,Float64\n", "{}", stderr(&o));

    // a hand-written pipeline without the option: its build's hint names it
    let dir = tmp.path().join("hand");
    write(&dir, "d.jsonl", "{\"id\": 1, \"x\": 1}\n{\"id\": 2, \"x\": \"nan\"}\n");
    write(
        &dir,
        "pipeline.toml",
        "name = \"h\"\nversion = \"0.1.0\"\n[[source]]\nname = \"src\"\npath = \"d.jsonl\"\nformat = \"jsonl\"\n\
         [[table]]\nname = \"d\"\nquery = \"SELECT * FROM src\"\n",
    );
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "hint: numbers written as the strings \"NaN\", \"Infinity\" or \"-Infinity\" are read as numbers when \
             their source says so: `coerce_nonfinite_strings = true` in the [[source]] of src"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("type = \"any\""), "{}", stderr(&o));
    let o = build(&dir, &["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["hints"].as_array().map(Vec::len), Some(1), "{doc}");
    assert!(doc["hints"][0].as_str().unwrap().contains("`coerce_nonfinite_strings = true`"), "{doc}");
    let finding = serde_json::json!({"kind": "type", "column": "x", "expected": "integer", "found": "string \"nan\"",
                                     "nonfinite_string": true, "numeric_string": false, "decimal_comma": false, "decided_at": "d.jsonl:1"});
    assert_eq!(doc["violations"][0]["finding"], finding, "{doc}");
}

#[test]
fn init_recognises_inspect_logs_zipped_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("inspect", "")]);
    let doc = init(tmp.path(), &folder, "i");
    let want = rows_of(&[("inspect_evals", 10), ("inspect_samples", 8)]);
    assert_eq!(init_rows(&doc), want);
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "i")), want);
    let hand = hand_written_rows(tmp.path(), "inspect");
    assert_eq!((hand["evaluations"], hand["eval_samples"]), (want["inspect_evals"], want["inspect_samples"]));
    let both = strings(&["raw/*.eval", "raw/*.json"]);
    assert_eq!(source_paths(&doc)["inspect_samples_raw"], ("inspect-samples".into(), both));
    assert_eq!(key(&doc, "inspect_samples"), ["eval_id", "sample_id", "epoch"]);
    assert_eq!(key(&doc, "inspect_evals"), ["eval_id", "scorer", "metric"]);
    // scored with two epoch reducers, a log gives each scorer's metric twice: the reducer
    // joins the key
    let reduced = tempfile::tempdir().unwrap();
    let dir = reduced.path().join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    let script = "import sys, json\n\
                  d = json.load(open(sys.argv[1]))\n\
                  d['results']['scores'] = [dict(s, reducer=r) for s in d['results']['scores'] for r in ('mean', 'max')]\n\
                  json.dump(d, open(sys.argv[2], 'w'))\n";
    let log = folder.join("2026-12-07T00-54-57-00-00_arith_CYMu6xUWDMWwsceQT9fADw.json");
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(&log).arg(dir.join("reduced.json")));
    assert!(o.status.success(), "{}", stderr(&o));
    let rdoc = init(reduced.path(), &dir, "r");
    assert_eq!(key(&rdoc, "inspect_evals"), ["eval_id", "scorer", "reducer", "metric"]);
    assert_eq!(release_rows(&build_from_elsewhere(reduced.path(), "r"))["inspect_evals"], 10);
    assert_eq!(doc["found"]["formats"], serde_json::json!({"inspect-evals": 2, "inspect-samples": 2}));
    // logs at two depths (one moved to a subfolder): still one table of each kind
    let deep = tempfile::tempdir().unwrap();
    let logs = bundled_raw(deep.path(), &[("inspect", "")]);
    std::fs::create_dir_all(logs.join("old/2025")).unwrap();
    let json = "2026-12-07T00-54-57-00-00_arith_CYMu6xUWDMWwsceQT9fADw.json";
    std::fs::rename(logs.join(json), logs.join("old/2025").join(json)).unwrap();
    let ddoc = init(deep.path(), &logs, "d");
    assert_eq!(init_rows(&ddoc), want);
    assert_eq!(
        source_paths(&ddoc)["inspect_samples_raw"],
        ("inspect-samples".into(), strings(&["raw/*.eval", "raw/old/2025/*.json"]))
    );
    assert_eq!(release_rows(&build_from_elsewhere(deep.path(), "d")), want);
    // said in words, formats counted by file: more formats than files
    let again = tempfile::tempdir().unwrap();
    let o = run(bin().current_dir(again.path()).arg("init").arg(&folder).args(["--name", "i"]));
    assert!(
        stderr(&o).contains(": 2 read (2 inspect-evals, 2 inspect-samples; a file can be read as several formats)"),
        "{}",
        stderr(&o)
    );

    // a `.eval` file that is no archive is named, not dropped
    std::fs::write(folder.join("broken.eval"), "not a zip").unwrap();
    let doc = init(tmp.path(), &folder, "i2");
    assert_eq!(init_rows(&doc), want);
    let nr = not_read(&doc);
    assert_eq!(nr.len(), 1);
    assert!(nr[0].0 == "broken.eval" && nr[0].1.contains("no Inspect log"), "{nr:?}");
    std::fs::remove_file(folder.join("broken.eval")).unwrap();

    // an eval set's folder: Inspect's listing of its logs and its record of the set are not
    // tables, and the sources that read `*.json` there leave them out
    std::fs::write(
        folder.join("logs.json"),
        format!("{{\"{json}\": {{\"version\": 2, \"status\": \"success\", \"eval\": {{\"task\": \"arith\"}}}}}}"),
    )
    .unwrap();
    std::fs::write(folder.join("eval-set.json"), r#"{"eval_set_id": "s1", "tasks": [{"name": "arith"}]}"#).unwrap();
    let doc = init(tmp.path(), &folder, "i3");
    assert_eq!(init_rows(&doc), want);
    let nr = not_read(&doc);
    assert_eq!(nr.len(), 2, "{nr:?}");
    assert!(nr.iter().any(|(f, r)| f == "logs.json" && r.starts_with("Inspect's listing of the logs")), "{nr:?}");
    assert!(nr.iter().any(|(f, r)| f == "eval-set.json" && r.starts_with("Inspect's record of an eval set")), "{nr:?}");
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "i3")), want);
}

#[test]
fn init_recognises_lm_eval_results_and_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("lm-eval", "")]);
    let doc = init(tmp.path(), &folder, "l");
    let want = rows_of(&[("lm_eval_results", 4), ("lm_eval_samples", 7)]);
    assert_eq!(init_rows(&doc), want);
    let release = build_from_elsewhere(tmp.path(), "l");
    assert_eq!(release_rows(&release), want);
    let hand = hand_written_rows(tmp.path(), "lm-eval");
    assert_eq!((hand["evaluations"], hand["eval_samples"]), (want["lm_eval_results"], want["lm_eval_samples"]));
    let sources = source_paths(&doc);
    // samples capture the date their results file is named by: they join on it
    assert_eq!(sources["lm_eval_samples_raw"].1, ["raw/{model}/samples_*_{date_id}.jsonl"]);
    assert_eq!(sources["lm_eval_results_raw"].1, ["raw/{model}/results_{date_id}.json"]);
    assert_eq!(key(&doc, "lm_eval_samples"), ["model", "date_id", "task", "doc_id", "filter"]);
    assert_eq!(
        query(
            &release,
            "SELECT s.task, count(*) AS n FROM lm_eval_samples s JOIN (SELECT DISTINCT model, date_id, task FROM \
             lm_eval_results) r ON s.model = r.model AND s.date_id = r.date_id AND s.task = r.task GROUP BY 1 ORDER BY 1"
        ),
        "task,n\narith,3\ngsm8k_mini,4\n"
    );
    let nr = not_read(&doc);
    assert!(nr.len() == 1 && nr[0].0 == "NOTE.md", "{nr:?}");
}

#[test]
fn init_recognises_both_tinker_cookbook_layouts_and_its_eval_store() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("tinker-cookbook", "")]);
    let doc = init(tmp.path(), &folder, "c");
    let want = rows_of(COOKBOOK_TABLES);
    assert_eq!(init_rows(&doc), want);
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "c")), want);
    let hand = hand_written_rows(tmp.path(), "tinker-cookbook");
    for (h, i) in [
        ("metrics", "metrics"),
        ("checkpoints", "checkpoints"),
        ("timings", "timings"),
        ("rollouts", "rollouts"),
        ("rollout_steps", "rollout_steps"),
        ("evaluations", "eval_results"),
        ("eval_samples", "eval_trajectories"),
        ("training_runs", "config"),
    ] {
        assert_eq!(hand[h], want[i], "{h} vs {i}");
    }
    // both layouts of rollout summaries in one source, the run captured
    let sources = source_paths(&doc);
    let layouts =
        strings(&["raw/runs/{run}/*_rollout_summaries.jsonl", "raw/runs/{run}/iteration_*/*_rollout_summaries.jsonl"]);
    let mut got = sources["rollouts_raw"].1.clone();
    got.sort();
    assert_eq!(got, layouts);
    assert_eq!(sources["eval_results_raw"].1, ["raw/evals/runs/{eval_run}/{bench}/result.json"]);
    assert_eq!(
        sources["eval_runs_raw"],
        ("tinker-eval-run".into(), strings(&["raw/evals/runs/{eval_run}/metadata.json"]))
    );
    assert_eq!(sources["timings_raw"], ("tinker-timings".into(), strings(&["raw/runs/{run}/timing_spans.jsonl"])));
    assert_eq!(key(&doc, "rollout_steps"), ["run", "split", "iteration", "group_idx", "traj_idx", "step_idx"]);
    assert_eq!(not_read(&doc), vec![]);
}

#[test]
fn init_reads_yaml_documents_and_names_those_it_cannot() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    write(&folder, "configs/a.yaml", "model: qwen\nlr: 0.0001\nloss_scale: .inf\nlayers: [1, 2]\n");
    write(&folder, "configs/b.yaml", "model: llama\nlr: 0.001\nloss_scale: .nan\nlayers: [3]\n");
    write(&folder, "scores.yml", "- {name: x, score: 1.5}\n- {name: y, score: -.inf}\n- {name: z, score: 2}\n");
    write(&folder, "bad.yaml", "a: [1\n");
    write(&folder, "two.yaml", "a: 1\n---\na: 2\n");
    let doc = init(tmp.path(), &folder, "y");
    let want = rows_of(&[("configs", 2), ("scores", 3)]);
    assert_eq!(init_rows(&doc), want);
    let sources = source_paths(&doc);
    assert_eq!(sources["configs_raw"], ("yaml".into(), strings(&["raw/configs/*.yaml"])));
    let nr = not_read(&doc);
    assert_eq!(nr.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(), ["bad.yaml", "two.yaml"]);
    assert!(nr[0].1.contains("not YAML at line 2"), "{nr:?}");
    assert!(nr[1].1.contains("holds 2 YAML documents"), "{nr:?}");
    let release = build_from_elsewhere(tmp.path(), "y");
    assert_eq!(release_rows(&release), want);
    let csv = query(&release, "SELECT model, loss_scale FROM configs ORDER BY model");
    assert_eq!(csv, "model,loss_scale\nllama,NaN\nqwen,Infinity\n");
    // a sweep's document with its runs listed: the runs a table of their own, as in a JSON
    // document, the rest of the document another
    let folder = tmp.path().join("sweeps");
    let runs =
        "runs:\n  - {run: lr1e-5, lr: 1.0e-5, final_reward: 0.61}\n  - {run: lr4e-5, lr: 4.0e-5, final_reward: 0.72}\n";
    write(&folder, "a/sweep.yaml", &format!("name: lr-sweep\nbase_model: Qwen/Qwen3-8B\n{runs}notes: second\n"));
    write(&folder, "b/sweep.yaml", &format!("name: lr-sweep-2\nbase_model: Qwen/Qwen3-8B\n{runs}notes: third\n"));
    let doc = init(tmp.path(), &folder, "sweeps");
    assert_eq!(init_rows(&doc), rows_of(&[("sweep_runs", 4), ("sweep", 2)]));
    let sources = source_paths(&doc);
    assert_eq!(sources["sweep_runs_raw"], ("yaml".into(), strings(&["raw/{run_dir}/sweep.yaml"])));
    assert_eq!(key(&doc, "sweep_runs"), ["run_dir", "run"], "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/sweeps/pipeline.toml")).unwrap();
    assert!(toml.contains("format = \"yaml\"\nrecord_path = \"/runs\"\n"), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "sweeps");
    let csv = query(&release, "SELECT run_dir, run, final_reward, _source_line FROM sweep_runs ORDER BY run_dir, run");
    let want = "run_dir,run,final_reward,_source_line\na,lr1e-5,0.61,/runs/0\na,lr4e-5,0.72,/runs/1\n\
                b,lr1e-5,0.61,/runs/0\nb,lr4e-5,0.72,/runs/1\n";
    assert_eq!(csv, want);
    let csv = query(&release, "SELECT name, notes FROM sweep ORDER BY name");
    assert_eq!(csv, "name,notes\nlr-sweep,second\nlr-sweep-2,third\n");
    // a record that holds a key JSON cannot (`1: x`) is set aside alone, not its document's
    // other records; the rest of the document, which holds it too, is said to give no table
    let folder = tmp.path().join("odd_key");
    write(&folder, "s.yaml", "name: s\nruns:\n  - {run: a, 1: x}\n  - {run: b}\n  - {run: c}\n  - {run: d}\n");
    let doc = init(tmp.path(), &folder, "odd_key");
    assert_eq!(init_rows(&doc), rows_of(&[("s_runs", 3)]), "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/odd_key/pipeline.toml")).unwrap();
    assert!(toml.contains("on_invalid = \"reject\"   # 1 bad record among good ones"), "{toml}");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("s (yaml): no table, as s.yaml cannot be read so: /runs/0: expected string keys"),
        "{notes}"
    );
    // the same as JSON: the folders' capture is named after no column of the runs either (a
    // `{run}` capture beside the records' `run` lost the runs' table)
    let folder = tmp.path().join("json_sweeps");
    for x in ["a", "b"] {
        let doc = format!(
            "{{\"name\": \"{x}\", \"runs\": [{{\"run\": \"r1\", \"lr\": 0.1}}, {{\"run\": \"r2\", \"lr\": 0.2}}]}}"
        );
        write(&folder, &format!("{x}/sweep.json"), &doc);
    }
    let doc = init(tmp.path(), &folder, "json_sweeps");
    assert_eq!(init_rows(&doc), rows_of(&[("sweep_runs", 4), ("sweep", 2)]));
    // a sweep that logged no run yet (`"runs": []`), first of the folders: one source still,
    // each run named by its folder
    write(&folder, "0/sweep.json", "{\"name\": \"none yet\", \"runs\": []}");
    let doc = init(tmp.path(), &folder, "json_sweeps_empty");
    assert_eq!(init_rows(&doc), rows_of(&[("sweep_runs", 4), ("sweep", 3)]));
    assert_eq!(source_paths(&doc)["sweep_runs_raw"], ("json".into(), strings(&["raw/{run_dir}/sweep.json"])));
    assert_eq!(key(&doc, "sweep_runs"), ["run_dir", "run"], "{doc}");
    // an array of records that no table of its own can read is kept in the rest of its
    // document, as JSON text, and said
    let folder = tmp.path().join("odd");
    write(&folder, "doc.json", "{\"name\": \"x\", \"runs\": [{\"\": 1, \"a\": 2}], \"notes\": \"n\"}");
    let doc = init(tmp.path(), &folder, "odd");
    assert_eq!(init_rows(&doc), rows_of(&[("doc", 1)]));
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains(
            "doc_runs (json): no table, as doc.json cannot be read so: a record has a key that is the empty string"
        ),
        "{notes}"
    );
    assert!(notes.contains("table doc keeps `runs` as JSON text"), "{notes}");
    let release = build_from_elsewhere(tmp.path(), "odd");
    assert_eq!(query(&release, "SELECT name, runs FROM doc"), "name,runs\nx,\"[{\"\"\"\":1,\"\"a\"\":2}]\"\n");
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(
        card.contains("The documents of `raw/doc.json`, one row per file.") && !card.contains("without the array"),
        "{card}"
    );
}

#[test]
fn init_recognises_a_folder_mixing_the_families() {
    let tmp = tempfile::tempdir().unwrap();
    let parts =
        [("trackio", "trackio"), ("inspect", "inspect"), ("lm-eval", "lm-eval"), ("tinker-cookbook", "cookbook")];
    let folder = bundled_raw(tmp.path(), &parts);
    write(&folder, "configs/a.yaml", "model: qwen\nlr: 0.0001\n");
    let doc = init(tmp.path(), &folder, "m");
    let want = rows_of(&[
        ("trackio_metrics", 13),
        ("trackio_runs", 3),
        ("trackio_system_metrics", 2),
        ("inspect_evals", 10),
        ("inspect_samples", 8),
        ("lm_eval_results", 4),
        ("lm_eval_samples", 7),
        ("a", 1),
    ]);
    let want: BTreeMap<String, u64> = want.into_iter().chain(rows_of(COOKBOOK_TABLES)).collect();
    assert_eq!(init_rows(&doc), want);
    // every column of the known formats' tables is described in the card (config.json and
    // runs.jsonl are plain JSON)
    assert_eq!(undescribed(tmp.path(), "m", &["a", "config", "runs"]), Vec::<String>::new());
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "m")), want);
    let sources = source_paths(&doc);
    assert_eq!(sources["trackio_metrics_raw"].1, ["raw/trackio/demo.db", "raw/trackio/inbox/*/*.jsonl"]);
    assert_eq!(sources["inspect_evals_raw"].1, ["raw/inspect/*.eval", "raw/inspect/*.json"]);
    assert_eq!(sources["lm_eval_results_raw"].1, ["raw/lm-eval/{model}/results_{date_id}.json"]);
    assert_eq!(sources["a_raw"], ("yaml".into(), strings(&["raw/configs/a.yaml"])));
    assert_eq!(not_read(&doc), vec![("lm-eval/NOTE.md".to_string(), not_read(&doc)[0].1.clone())]);
}

#[test]
fn history_dumps_of_a_generic_name_are_named_by_their_folder() {
    let Some(shared) = shared() else { return };
    let dump = shared.join("corpus/wandb-history/oraby8_research_tts/wandb_history.csv");
    let tmp = tempfile::tempdir().unwrap();
    for run in ["run-a1", "run-b2"] {
        std::fs::create_dir_all(tmp.path().join("raw").join(run)).unwrap();
        std::fs::copy(&dump, tmp.path().join("raw").join(run).join("wandb_history.csv")).unwrap();
    }
    init(tmp.path(), Path::new("raw"), "dumps");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/dumps/pipeline.toml")).unwrap();
    assert!(toml.contains("path = \"raw/{run}/wandb_history.csv\""), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "dumps");
    let o = run(bin().arg("query").arg(&release).args([
        "--format",
        "csv",
        "SELECT run_id, count(*) AS n FROM wandb_history_dumps GROUP BY 1 ORDER BY 1",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[1].starts_with("run-a1,") && lines[2].starts_with("run-b2,"), "{out}");
    // both runs hold the same rows: each run's count is the dump's
    assert_eq!(lines[1].split(',').nth(1), lines[2].split(',').nth(1), "{out}");
}

#[test]
fn a_file_left_out_for_several_problems_lists_every_one_in_the_json_report() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "raw/x.jsonl", "{\"a\": 1}\n{\"a\": 2\n{\"a\": 3}\n{bad\n{\"a\": 5}\nnope\n");
    write(tmp.path(), "raw/ok.jsonl", "{\"b\": 1}\n");
    let doc = init(tmp.path(), Path::new("raw"), "several");
    let left = doc["not_read"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{doc}");
    assert_eq!(left[0]["file"], "x.jsonl");
    let reason = left[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("line 2: not valid JSON") && reason.contains("(and 2 more problems in it"), "{reason}");
    let problems: Vec<&str> = left[0]["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    for (p, line) in problems.iter().zip(["line 2:", "line 4:", "line 6:"]) {
        assert!(p.starts_with(line), "{p}");
    }
}

#[test]
fn a_release_s_own_parquet_in_the_folder_is_left_out_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("mixed");
    // a release whose table keeps its source's provenance columns
    let p = tmp.path().join("p");
    write(&p, "a.jsonl", "{\"k\": 1}\n");
    write(&p, "pipeline.toml", &one_source("p", "a.jsonl", "jsonl", "", "SELECT * FROM raw", ""));
    let o = build(&p, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(release(&p, "p").join("data/t.parquet"), d.join("copied.parquet")).unwrap();
    write(&d, "steps.jsonl", "{\"step\": 1, \"loss\": 0.5}\n{\"step\": 2, \"loss\": 0.4}\n");
    let doc = init(tmp.path(), &d, "mixed");
    assert_eq!(init_rows(&doc), BTreeMap::from([("steps".into(), 2)]));
    let left = not_read(&doc);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].0, "copied.parquet");
    assert!(left[0].1.contains("which runpack adds to every source's rows itself"), "{left:?}");
    build_from_elsewhere(tmp.path(), "mixed");
}

#[test]
fn an_init_killed_while_writing_leaves_nothing_a_second_init_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("many");
    // many sources, so that writing their schemas takes a while
    for i in 0..60 {
        // names without digits, so that no two files read as one source's pattern
        let word: String = format!("{i:02}").bytes().map(|b| (b'a' + b - b'0') as char).collect();
        write(&d, &format!("log_{word}.jsonl"), &format!("{{\"step\": 1, \"v_{word}\": 0.5}}\n"));
    }
    // a killed init cannot remove its scratch folder: it is left here, not in the system's
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let mut finished_first = 0;
    for (attempt, delay_ms) in [5u64, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 600, 700, 800].iter().enumerate()
    {
        let name = format!("m{attempt}");
        let mut child = bin()
            .current_dir(tmp.path())
            .arg("init")
            .arg(&d)
            .args(["--name", &name, "-q"])
            .env("TMPDIR", &scratch)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(*delay_ms));
        let _ = child.kill();
        let status = child.wait().unwrap();
        let toml = tmp.path().join("pipelines").join(&name).join("pipeline.toml");
        if status.success() || toml.exists() {
            // written before the kill: a second init refuses to overwrite it
            let o = run(bin().current_dir(tmp.path()).arg("init").arg(&d).args(["--name", &name]));
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains("exists already"), "{}", stderr(&o));
            finished_first += 1;
            continue;
        }
        let o = run(bin().current_dir(tmp.path()).arg("init").arg(&d).args(["--name", &name]));
        assert!(o.status.success(), "after a kill at {delay_ms} ms: {}", stderr(&o));
        assert!(toml.exists());
        let schemas = std::fs::read_dir(tmp.path().join("schemas").join(&name)).unwrap();
        let names: Vec<String> = schemas.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| !n.starts_with('.')), "no temporary file left: {names:?}");
        assert_eq!(names.len(), 60, "{names:?}");
    }
    assert!(finished_first < 14, "every init finished before its kill: the test killed none");
}

#[test]
fn files_with_the_same_bytes_are_noted() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("dups");
    let results = "{\"runs\": [{\"run\": \"a\", \"acc\": 0.5}, {\"run\": \"b\", \"acc\": 0.7}]}\n";
    write(&d, "results.json", results);
    write(&d, "copies/results.json", results);
    // the same size, other bytes: not a copy
    write(&d, "other.json", &results.replace("0.5", "0.6"));
    let doc = init(tmp.path(), &d, "dups");
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    let said: Vec<&&str> = notes.iter().filter(|n| n.contains("have the same bytes")).collect();
    assert_eq!(said.len(), 1, "{notes:?}");
    assert!(said[0].starts_with("copies/results.json, results.json have the same bytes"), "{notes:?}");
}

#[test]
fn a_wandb_latest_run_link_is_not_noted_as_a_copy() {
    // `wandb/latest-run` links the newest run folder: left out, so no copy is read
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("wandb");
    copy_tree(&repo().join("pipelines/tinker-wandb/raw/wandb"), &runs);
    let newest = std::fs::read_dir(&runs).unwrap().map(|e| e.unwrap().file_name()).max().unwrap();
    std::os::unix::fs::symlink(&newest, runs.join("latest-run")).unwrap();
    let doc = init(tmp.path(), &runs, "wl");
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(!notes.iter().any(|n| n.contains("have the same bytes")), "{notes:?}");
}

#[test]
fn keys_a_table_cannot_name_a_column_are_renamed_in_its_sql_with_a_note() {
    // a blank at an edge (Frictionless readers trim it), a NUL (the datasets library cuts
    // it), and a trimmed name another key has already
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("odd");
    write(
        &d,
        "a.jsonl",
        "{\" lead\": 1, \"lead\": 2, \"a\\u0000b\": 3}\n{\" lead\": 4, \"lead\": 5, \"a\\u0000b\": 6}\n",
    );
    let doc = init(tmp.path(), &d, "odd");
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.contains(&"table a: column \" lead\" is named \"lead_\" in the table's SQL (a column name cannot begin or end with a blank, nor hold a NUL: readers trim or cut it)"), "{notes:?}");
    assert!(notes.iter().any(|n| n.starts_with("table a: column \"a\\0b\" is named \"a_b\"")), "{notes:?}");
    let columns = &table(&doc, "a")["columns"];
    assert_eq!(columns.as_array().unwrap().iter().filter(|c| c == &"lead_" || c == &"a_b").count(), 2, "{columns}");
    let release = build_from_elsewhere(tmp.path(), "odd");
    assert_eq!(query(&release, "SELECT \"lead_\", lead, a_b FROM a ORDER BY lead"), "lead_,lead,a_b\n1,2,3\n4,5,6\n");
}

#[test]
fn files_init_leaves_out_are_listed_as_not_read_and_a_file_added_later_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("runs");
    write(&d, "a/metrics.jsonl", "{\"step\": 0, \"loss\": 1.5}\n");
    write(&d, "broken.json", "{\"a\": ");
    // a name a path pattern cannot hold, and a key that is the empty string
    write(&d, "st*ar.json", "{\"a\": 1}\n");
    write(&d, "sub/empty-key.jsonl", "{\"k\": 1, \"\": 2}\n");
    let doc = init(tmp.path(), &d, "nr");
    let left: Vec<(String, String)> = not_read(&doc);
    assert_eq!(
        left.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
        ["broken.json", "st*ar.json", "sub/empty-key.jsonl"]
    );
    assert!(left[2].1.starts_with("a record has a key that is the empty string"), "{left:?}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/nr/pipeline.toml")).unwrap();
    assert!(toml.contains("not_read = [\n    \"raw/broken.json\", # "), "{toml}");
    let quiet = |o: &std::process::Output| !stderr(o).contains("read by no source");
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/nr"]));
    assert!(o.status.success() && quiet(&o), "{}", stderr(&o));
    // a run logged after init: its pattern reads it; a results file it names is new
    write(&d, "b/metrics.jsonl", "{\"step\": 0, \"loss\": 1.25}\n");
    write(&d, "results.json", "{\"acc\": 0.5}\n");
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/nr", "--force"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "note: 1 file under raw/ is read by no source (added since the pipeline was written?): raw/results.json"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tab_separated_files_are_csv_sources_split_on_tabs() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    // a TSV and a CSV of the same columns: one source each, never one table split two ways
    write(&raw, "scores.tsv", "id\tscore\tnote\n1\t0.5\tshort, plain\n2\t0.25\t\"a\ttab\"\n");
    write(&raw, "more.csv", "id,score,note\n3,0.75,x\n");
    let doc = init(tmp.path(), &raw, "t");
    assert!(not_read(&doc).is_empty(), "{:?}", not_read(&doc));
    let scores = source(&doc, "scores_raw");
    assert_eq!(scores["format"], "csv");
    assert_eq!(scores["delimiter"], "\t");
    assert!(source(&doc, "more_raw").get("delimiter").is_none(), "{}", source(&doc, "more_raw"));
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/t/pipeline.toml")).unwrap();
    assert!(toml.contains("path = \"raw/scores.tsv\"\nformat = \"csv\"\ndelimiter = \"\\t\"\n"), "{toml}");
    assert_eq!(init_rows(&doc), BTreeMap::from([("more".into(), 1), ("scores".into(), 2)]));
    let release = build_from_elsewhere(tmp.path(), "t");
    let o = run(bin()
        .args(["query", "--format", "csv"])
        .arg(&release)
        .arg("SELECT id, score, note, arrow_typeof(score) AS t FROM scores ORDER BY id"));
    assert_eq!(
        stdout(&o),
        "id,score,note,t\n1,0.5,\"short, plain\",Float64\n2,0.25,a\ttab,Float64\n",
        "{}",
        stderr(&o)
    );

    // pandas' to_csv(sep="\t"): its index unnamed, NaN an empty cell, a tab or quote in a cell
    // quoted; what pandas reads back from the release is the frame it wrote
    let pd = tmp.path().join("pd");
    std::fs::create_dir_all(&pd).unwrap();
    let script = r#"
import sys, pandas as pd, numpy as np
df = pd.DataFrame({"step": [1, 2, 3], "loss": [0.5, np.nan, 0.125], "note": ["a\tb", 'say "hi"', "x, y"]})
df.to_csv(sys.argv[1] + "/log.tsv", sep="\t")
# an index of labels: describe()'s statistics
import os
os.makedirs(sys.argv[1] + "/stats")
df[["step", "loss"]].describe().to_csv(sys.argv[1] + "/stats/summary.tsv", sep="\t")
# frames of two tasks one after the other, each counting its rows from 0
os.makedirs(sys.argv[1] + "/scores")
a = pd.DataFrame({"model": ["base", "sft"], "task": "gsm8k", "score": [0.25, 0.5]})
pd.concat([a, a.assign(task="arc", score=[0.66, 0.7])]).to_csv(sys.argv[1] + "/scores/all.tsv", sep="\t")
"#;
    let o = run(std::process::Command::new(python()).arg("-c").arg(python_script(script)).arg(&pd));
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = init(tmp.path(), &pd, "pd");
    assert!(not_read(&doc).is_empty(), "{:?}", not_read(&doc));
    let release = build_from_elsewhere(tmp.path(), "pd");
    let script = r#"
import sys, pandas as pd, numpy as np
got = pd.read_parquet(sys.argv[1] + "/data/log.parquet").sort_values("step").reset_index(drop=True)
want = pd.DataFrame({"step": [1, 2, 3], "loss": [0.5, np.nan, 0.125], "note": ["a\tb", 'say "hi"', "x, y"]})
pd.testing.assert_frame_equal(got[["step", "loss", "note"]], want, check_dtype=False)
summary = pd.read_parquet(sys.argv[1] + "/data/summary.parquet").set_index("index")
pd.testing.assert_frame_equal(summary.loc[want.describe().index, ["step", "loss"]], want[["step", "loss"]].describe(), check_names=False)
scores = pd.read_parquet(sys.argv[1] + "/data/all.parquet").sort_values(["task", "model"])
assert scores[["index", "task", "model"]].values.tolist() == [
    [0, "arc", "base"], [1, "arc", "sft"], [0, "gsm8k", "base"], [1, "gsm8k", "sft"]], scores
print("same")
"#;
    let o = run(std::process::Command::new(python()).arg("-c").arg(python_script(script)).arg(&release));
    assert_eq!(stdout(&o), "same\n", "{}", stderr(&o));
}

#[test]
fn init_names_the_delimiter_of_csv_files_of_semicolons_and_reads_any_case_of_tsv() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    // a European CSV: semicolons, decimal commas (kept as text: never read as another number)
    write(&raw, "eu.csv", "run;loss\na;0,5\nb;1,5\n");
    // a tab-separated file under an upper-case, compressed name
    write_gz(&raw, "C.TSV.GZ", b"run\tsteps\na\t10\n");
    let doc = init(tmp.path(), &raw, "d");
    assert!(not_read(&doc).is_empty(), "{:?}", not_read(&doc));
    assert_eq!(source(&doc, "eu_raw")["delimiter"], ";");
    assert_eq!(source(&doc, "c_raw")["delimiter"], "\t");
    let release = build_from_elsewhere(tmp.path(), "d");
    assert_eq!(query(&release, "SELECT run, loss FROM eu ORDER BY run"), "run,loss\na,\"0,5\"\nb,\"1,5\"\n");
    assert_eq!(query(&release, "SELECT run, steps FROM c"), "run,steps\na,10\n");
}

#[test]
fn a_delimiter_is_one_character_of_a_csv_source() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (format, delimiter, expected)) in [
        ("csv", "\";;\"", "delimiter = \";;\": expected one ASCII character other than a quote or a line end"),
        ("csv", "\"\\\"\"", "expected one ASCII character other than a quote"),
        ("jsonl", "\"\\t\"", "`delimiter` applies to format = \"csv\" only"),
        (
            "csv\"\nquote = \"ab",
            "\",\"",
            "quote = \"ab\": expected one ASCII character other than a line end and the delimiter",
        ),
        (
            "csv\"\nquote = \",",
            "\",\"",
            "quote = \",\": expected one ASCII character other than a line end and the delimiter",
        ),
        ("jsonl\"\nquote = \"", "\",\"", "`quote` applies to format = \"csv\" only"),
        (
            "csv\"\ncomment = \",",
            "\",\"",
            "comment = \",\": expected one ASCII character other than a blank, a line end, the delimiter and the quote",
        ),
        ("csv\"\ncomment = \"##", "\",\"", "comment = \"##\": expected one ASCII character"),
        ("jsonl\"\ncomment = \"#", "\",\"", "`comment` applies to format = \"csv\" only"),
        ("csv\"\nheader_row = 0 #", "\",\"", "header_row = 0: expected the line of the header, from 1"),
        ("jsonl\"\nheader_row = 2 #", "\",\"", "`header_row` applies to format = \"csv\" only"),
    ]
    .into_iter()
    .enumerate()
    {
        let p = tmp.path().join(format!("p{i}"));
        write(&p, "raw/a.csv", "a\n1\n");
        let text = format!(
            "name = \"p\"\n[[source]]\nname = \"s\"\npath = \"raw/a.csv\"\nformat = \"{format}\"\ndelimiter = {delimiter}\n\
             [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n"
        );
        write(&p, "pipeline.toml", &text);
        let o = bin().arg("build").arg(&p).arg("--releases-dir").arg(tmp.path().join("r")).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{delimiter}: {}", stderr(&o));
        // at the line of the key it is about
        let key = ["quote", "comment", "header_row"]
            .into_iter()
            .find(|k| expected.starts_with(k) || expected.starts_with(&format!("`{k}`")))
            .map_or("\ndelimiter".to_string(), |k| format!("\n{k}"));
        let key = key.as_str();
        let line = line_at(&text, text.find(key).unwrap() + 1);
        assert!(stderr(&o).contains(&format!("pipeline.toml:{line} (source s): ")), "{line}: {}", stderr(&o));
    }
    // the name other tools give the format: the option that reads it
    let p = tmp.path().join("tsv");
    write(&p, "raw/a.tsv", "a\tb\n1\t2\n");
    write(
        &p,
        "pipeline.toml",
        "name = \"p\"\n[[source]]\nname = \"s\"\npath = \"raw/a.tsv\"\nformat = \"tsv\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT * FROM s\"\n",
    );
    let o = bin().arg("build").arg(&p).arg("--releases-dir").arg(tmp.path().join("r")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pipeline.toml:5:10: unknown variant `tsv`"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("hint: a tab-separated file is read by format = \"csv\" with delimiter = \"\\t\""),
        "{}",
        stderr(&o)
    );
    // pandas' and DuckDB's name for the option
    let text = std::fs::read_to_string(p.join("pipeline.toml")).unwrap();
    write(&p, "pipeline.toml", &text.replace("format = \"tsv\"", "format = \"csv\"\nsep = \"\\t\""));
    let o = bin().arg("build").arg(&p).arg("--releases-dir").arg(tmp.path().join("r")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("hint: the character between a CSV file's cells is `delimiter`"), "{}", stderr(&o));
}

#[test]
fn a_plain_file_there_both_plain_and_compressed_is_two_tables_not_rows_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    write(&raw, "r1/scores.tsv", "a\tb\n1\t2\n3\t4\n");
    write_gz(&raw, "r1/scores.tsv.gz", b"a\tb\n1\t2\n3\t4\n5\t6\n");
    let doc = init(tmp.path(), &raw, "pg");
    assert_eq!(init_rows(&doc), BTreeMap::from([("scores".into(), 2), ("scores_2".into(), 3)]));
    assert_eq!(release_rows(&build_from_elsewhere(tmp.path(), "pg")), init_rows(&doc));
}

/// A tinker-cookbook run resumed from its checkpoint 000002 appends that checkpoint and the
/// next again: the checkpoints table keeps its key, with the last row of each kept. Its
/// `log_summary` rows have no step: they are a table of their own, the last of each metric
/// kept, and the training log keeps its key. A table without a key says why in a note.
#[test]
fn a_resumed_runs_repeated_checkpoints_keep_the_last_and_a_table_without_key_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cookbook");
    let ckpt = |name: &str, batch: u32, attempt: u32| {
        format!(
            "{{\"name\": \"{name}\", \"batch\": {batch}, \"state_path\": \"tinker://r{attempt}:train:0/weights/{name}\"}}\n"
        )
    };
    let checkpoints = [ckpt("000001", 1, 1), ckpt("000002", 2, 1), ckpt("000003", 3, 1), ckpt("000003", 3, 2)].concat()
        + &ckpt("000004", 4, 2);
    write(&d, "run-a/checkpoints.jsonl", &checkpoints);
    write(&d, "run-b/checkpoints.jsonl", &[ckpt("000001", 1, 1), ckpt("000002", 2, 1)].concat());
    write(
        &d,
        "run-a/metrics.jsonl",
        "{\"step\": 1, \"loss\": 0.5}\n{\"tokens/cumulative/input\": 100}\n{\"step\": 2, \"loss\": 0.25}\n\
         {\"tokens/cumulative/input\": 250}\n",
    );
    write(&d, "runs.jsonl", "{\"run_id\": \"a\", \"lr\": 0.1}\n{\"run_id\": null, \"lr\": 0.2}\n");
    let doc = init(tmp.path(), &d, "cookbook");
    let checkpoints = table(&doc, "checkpoints");
    assert_eq!(key(&doc, "checkpoints"), ["run", "name"]);
    assert_eq!(checkpoints["on_duplicate_key"], "keep-last");
    assert_eq!(checkpoints["rows"], 6);
    assert_eq!(key(&doc, "metrics"), ["run", "step", "metric"]);
    assert!(table(&doc, "metrics").get("on_duplicate_key").is_none());
    assert_eq!(key(&doc, "metrics_summary"), ["run", "metric"]);
    assert_eq!(table(&doc, "metrics_summary")["on_duplicate_key"], "keep-last");
    assert_eq!(table(&doc, "metrics_summary")["rows"], 1);
    assert!(key(&doc, "runs").is_empty());
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(
        notes.contains(
            &"table runs: no primary key, so rows are not checked for duplicates: (run_id) is no key: `run_id` is \
              null at runs.jsonl:2; declare `primaryKey` in its schema once the table's SQL makes one hold"
        ),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.starts_with(
            "table metrics_summary: key (run, metric) repeats in 1 row (run \"run-a\", metric \"tokens/cumulative/input\" \
             again at run-a/metrics.jsonl:4: each `log_summary` call restates a run's running totals)"
        )),
        "{notes:?}"
    );
    assert!(
        notes.contains(
            &"table checkpoints: key (run, name) repeats in 1 row (run \"run-a\", name \"000003\" again at \
              run-a/checkpoints.jsonl:4: a run resumed from a checkpoint logs the steps after it again); the table \
              keeps the last row of each key (on_duplicate_key = \"keep-last\"), and each build names the rows set \
              aside"
        ),
        "{notes:?}"
    );
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/cookbook/pipeline.toml")).unwrap();
    assert!(toml.contains("on_duplicate_key = \"keep-last\"   # run \"run-a\", name \"000003\" again at"), "{toml}");
    // the build keeps the resumed attempt's row, and says which it set aside
    let o = run(bin().current_dir(tmp.path()).arg("build").arg("pipelines/cookbook"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("table checkpoints: 6 rows in 1 Parquet file, 1 duplicate superseded"),
        "{}",
        stderr(&o)
    );
    let release = tmp.path().join(stdout(&o).trim());
    assert_eq!(
        query(&release, "SELECT state_path FROM checkpoints WHERE run = 'run-a' AND name = '000003'"),
        "state_path\ntinker://r2:train:0/weights/000003\n"
    );
    assert_eq!(release_rows(&release)["checkpoints"], 6);
    assert_eq!(
        query(&release, "SELECT run, metric, value FROM metrics_summary"),
        "run,metric,value\nrun-a,tokens/cumulative/input,250.0\n"
    );
    assert_eq!(release_rows(&release)["metrics"], 2);
}

/// A run resumed from step 40 after reaching step 45, and stopped at 42: init says that steps
/// 43 to 45 are the stopped attempt's alone.
#[test]
fn a_resumed_run_that_stopped_short_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cookbook");
    let lines: String =
        (0..46).chain(40..43).map(|s| format!("{{\"step\": {s}, \"reward\": {}}}\n", s as f64 / 100.0)).collect();
    write(&d, "runA/metrics.jsonl", &lines);
    // a run that went on past where it had been: nothing to say
    let on: String = (0..10).chain(5..20).map(|s| format!("{{\"step\": {s}, \"reward\": 0.5}}\n")).collect();
    write(&d, "runB/metrics.jsonl", &on);
    let doc = init(tmp.path(), &d, "short");
    let notes = doc["notes"].to_string();
    let said = "table metrics: the run went back to step 40 at runA/metrics.jsonl:47, after reaching step 45, and \
                logged up to step 42 since: its steps 43 to 45 are the stopped attempt's alone";
    assert!(notes.contains(said), "{notes}");
    assert_eq!(notes.matches("the run went back to step").count(), 1, "{notes}");
    // pipeline.toml says it beside the table's SQL, and the card in the table's description
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/short/pipeline.toml")).unwrap();
    assert!(toml.contains(&format!("# {}", &said["table metrics: ".len()..])), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "short");
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains("Rows of a branch a run went back from stay: the run went back to step 40"), "{card}");
}

/// A plain log of one run per file that a resumed run appended to again (steps 3 and 4 logged
/// twice) keeps the last row of each step, as a Tinker metrics log does; a log of several runs
/// (a `run` column), or one that logs a step twice without going back, is not taken for one.
#[test]
fn a_plain_log_a_resumed_run_appended_to_keeps_the_last_row_of_each_step() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("runs");
    let lines = |steps: &[u32]| -> String {
        steps.iter().enumerate().map(|(i, s)| format!("{{\"step\": {s}, \"loss\": 0.{i}}}\n")).collect()
    };
    write(&d, "x/train_log.jsonl", &lines(&[0, 1, 2, 3, 4, 3, 4, 5]));
    write(&d, "y/train_log.jsonl", &lines(&[0, 1, 2]));
    let doc = init(tmp.path(), &d, "resumed");
    assert_eq!(table(&doc, "train_log")["on_duplicate_key"], "keep-last", "{doc}");
    assert_eq!(key(&doc, "train_log"), ["run", "step"]);
    let release = build_from_elsewhere(tmp.path(), "resumed");
    let csv =
        query(&release, "SELECT step, loss, _source_line FROM train_log WHERE run = 'x' AND step >= 3 ORDER BY step");
    assert_eq!(csv, "step,loss,_source_line\n3,0.5,6\n4,0.6,7\n5,0.7,8\n");
    // a step logged twice without going back (an evaluation's row beside training's): no resume
    let no_resume = |name: &str, text: &str, said: &str| {
        write(&d, "x/train_log.jsonl", text);
        let doc = init(tmp.path(), &d, name);
        assert!(table(&doc, "train_log").get("on_duplicate_key").is_none_or(Value::is_null), "{name}: {doc}");
        assert!(doc["notes"].to_string().contains(said), "{name}: {doc}");
    };
    no_resume("twice", &lines(&[0, 1, 1, 2]), "step 1 again at x/train_log.jsonl:3, where the steps had not gone back");
    // nor after a resume, past the step the stopped attempt had reached
    no_resume(
        "after",
        &format!("{}{{\"step\": 7, \"eval_acc\": 0.9}}\n", lines(&[1, 2, 3, 4, 5, 3, 4, 5, 6, 7])),
        "step 7 again at x/train_log.jsonl:11, past the step the run had reached before its steps went back",
    );
    // nor a step the resumed attempt logs twice (its evaluation's line beside its training's):
    // keep-last would set its training row aside for its evaluation's
    no_resume(
        "eval_after",
        "{\"step\": 1, \"loss\": 1.0}\n{\"step\": 2, \"loss\": 0.9}\n{\"step\": 3, \"loss\": 0.8}\n\
         {\"step\": 2, \"loss\": 0.85}\n{\"step\": 2, \"eval_acc\": 0.5}\n{\"step\": 3, \"loss\": 0.75}\n",
        "step 2 again at x/train_log.jsonl:5, logged twice by the attempt after its steps went back",
    );
    // steps written as text tell no order ("10" comes before "9" as text)
    let text: String =
        ["8", "9", "10", "10", "11"].iter().map(|s| format!("{{\"step\": \"{s}\", \"loss\": 0.5}}\n")).collect();
    no_resume("text_steps", &text, "again at x/train_log.jsonl:4, and its steps are text, which tell no order");
}

/// A step logged three times: the second attempt's row that superseded the first's is itself set
/// aside with its record, and the first's says where the step's rows are kept.
#[test]
fn a_row_superseded_by_one_set_aside_with_its_record_names_the_rows_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cookbook");
    write(
        &d,
        "run-a/metrics.jsonl",
        "{\"step\": 0, \"loss\": 1.0, \"x\": 1}\n{\"step\": 1, \"loss\": 0.9, \"x\": 2}\n\
         {\"step\": 0, \"loss\": 0.98, \"x\": 3}\n{\"step\": 1, \"loss\": 0.91, \"x\": 4}\n\
         {\"step\": 0, \"loss\": 0.99}\n{\"step\": 1, \"loss\": 0.92}\n",
    );
    let doc = init(tmp.path(), &d, "thrice");
    assert_eq!(table(&doc, "metrics")["on_duplicate_key"], "keep-last", "{doc}");
    let o = run(bin().current_dir(tmp.path()).arg("build").arg("pipelines/thrice"));
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "raw/run-a/metrics.jsonl:2: duplicate primary key (run=run-a, step=1, metric=x); superseded by the row \
                at raw/run-a/metrics.jsonl:4 (keep-last rule), itself set aside with its record for the rows at \
                raw/run-a/metrics.jsonl:6";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let release = tmp.path().join(stdout(&o).trim());
    let rejects = std::fs::read_to_string(release.join("rejects/metrics.jsonl")).unwrap();
    assert!(rejects.contains("itself set aside with its record"), "{rejects}");
    assert_eq!(
        query(&release, "SELECT step, metric, value FROM metrics ORDER BY step, metric"),
        "step,metric,value\n0,loss,0.99\n1,loss,0.92\n"
    );
}

/// A resumed attempt whose first line of a step logged again is an evaluation (before its
/// training line, which supersedes the stopped attempt's): that line is the resumed attempt's,
/// and stays; so does the stopped attempt's own line of a metric the resumed attempt logs
/// only later.
#[test]
fn a_resumed_attempts_evaluation_before_its_training_line_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cookbook");
    let mut lines: Vec<String> = (0..=5).map(|s| format!("{{\"step\": {s}, \"loss\": 1.{s}}}")).collect();
    lines.extend([
        "{\"step\": 2, \"eval/acc\": 0.2}".to_string(),
        "{\"step\": 2, \"loss\": 0.25}".to_string(),
        "{\"step\": 3, \"loss\": 0.35}".to_string(),
        "{\"step\": 4, \"eval/acc\": 0.4}".to_string(),
        "{\"step\": 4, \"loss\": 0.45}".to_string(),
    ]);
    write(&d, "run-x/metrics.jsonl", &(lines.join("\n") + "\n"));
    init(tmp.path(), &d, "ev");
    let o = run(bin().current_dir(tmp.path()).arg("build").arg("pipelines/ev"));
    assert!(o.status.success(), "{}", stderr(&o));
    let release = tmp.path().join(stdout(&o).trim());
    assert_eq!(
        query(&release, "SELECT step, metric, value, _source_line FROM metrics WHERE step >= 2 ORDER BY step, metric"),
        "step,metric,value,_source_line\n2,eval/acc,0.2,7\n2,loss,0.25,8\n3,loss,0.35,9\n4,eval/acc,0.4,10\n\
         4,loss,0.45,11\n5,loss,1.5,6\n"
    );
}

/// A run resumed from its checkpoint at step 1 logs steps 1 and 2 again: at a step logged
/// again, the stopped attempt's records are set aside, with the metrics the resumed attempt did
/// not log there (they stayed beside the resumed attempt's, unnamed), those it logged on a line
/// of their own too. A run's `log_summary` lines are no steps: the last of each metric is kept.
#[test]
fn a_step_logged_again_keeps_the_resumed_attempts_record_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cookbook");
    write(
        &d,
        "run-a/metrics.jsonl",
        "{\"step\": 0, \"loss\": 1.0, \"lr\": 0.1}\n{\"step\": 1, \"loss\": 0.9, \"lr\": 0.1}\n\
         {\"step\": 2, \"loss\": 0.8, \"lr\": 0.1, \"eval/acc\": 0.5}\n{\"step\": 2, \"eval/extra\": 0.7}\n\
         {\"step\": 1, \"loss\": 0.95, \"lr\": 0.1}\n{\"step\": 2, \"loss\": 0.85, \"lr\": 0.1}\n\
         {\"step\": 3, \"loss\": 0.8, \"lr\": 0.1, \"eval/acc\": 0.6}\n\
         {\"tokens\": 10, \"cost\": 1.5}\n{\"tokens\": 20}\n{\"tokens\": 30, \"time\": 5}\n",
    );
    let doc = init(tmp.path(), &d, "resumed");
    assert_eq!(key(&doc, "metrics"), ["run", "step", "metric"]);
    assert_eq!(table(&doc, "metrics")["on_duplicate_key"], "keep-last");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/resumed/pipeline.toml")).unwrap();
    let said = "record_columns = [\"run\", \"step\"]   # a step logged again keeps the later records alone";
    assert!(toml.contains(said), "{toml}");
    assert_eq!(toml.matches("record_columns").count(), 1, "{toml}");
    let o = run(bin().current_dir(tmp.path()).arg("build").arg("pipelines/resumed"));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("table metrics: 9 rows in 1 Parquet file, 6 duplicates superseded"), "{err}");
    let release = tmp.path().join(stdout(&o).trim());
    assert_eq!(
        query(
            &release,
            "SELECT step, metric, value, _source_line FROM metrics WHERE step IN (1, 2) ORDER BY step, metric"
        ),
        "step,metric,value,_source_line\n1,loss,0.95,5\n1,lr,0.1,5\n2,loss,0.85,6\n2,lr,0.1,6\n"
    );
    let said = "raw/run-a/metrics.jsonl:3: row (run=run-a, step=2, metric=eval/acc) of a record whose other rows \
                were superseded by the rows at raw/run-a/metrics.jsonl:6 (keep-last rule): a record is kept or set \
                aside whole";
    assert!(err.contains(said), "{err}");
    let said = "raw/run-a/metrics.jsonl:4: row (run=run-a, step=2, metric=eval/extra) of a step that the record at \
                raw/run-a/metrics.jsonl:6 logs again (keep-last rule)";
    assert!(err.contains(said), "{err}");
    let rejects = std::fs::read_to_string(release.join("rejects/metrics.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 6, "{rejects}");
    // the rows set aside with their records leave their keys to no row: said apart, and named
    // in the card
    assert!(err.contains("6 duplicates superseded (2 set aside with their records: keys in no row kept)"), "{err}");
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    let said = "- table `metrics`: 2 rows set aside with their records (`record_columns`: a stopped attempt's record of \
                a step logged again), their keys in no row kept; the first: run=run-a, step=2, metric=eval/acc \
                (raw/run-a/metrics.jsonl:3); run=run-a, step=2, metric=eval/extra (raw/run-a/metrics.jsonl:4).";
    assert!(card.contains(said), "{card}");
    // the summary keeps the last value of each metric, of whichever line
    assert_eq!(
        query(&release, "SELECT metric, value FROM metrics_summary ORDER BY metric"),
        "metric,value\ncost,1.5\ntime,5.0\ntokens,30.0\n"
    );
    // the columns must be the key's first ones
    let toml = toml.replace("record_columns = [\"run\", \"step\"]", "record_columns = [\"step\"]");
    write(&tmp.path().join("pipelines/resumed"), "pipeline.toml", &toml);
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/resumed", "--force"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "record_columns [step] must be the primary key's first columns, fewer than all of it (the key: [run, \
                step, metric])";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    // at its line of pipeline.toml
    let line = toml.lines().position(|l| l.starts_with("record_columns")).unwrap() + 1;
    assert!(stderr(&o).contains(&format!("pipeline.toml:{line}")), "{}", stderr(&o));
}

/// Records kept whole over many record batches: a run resumed every 1,000 steps, each time
/// logging its last 10 steps again without one of their metrics.
#[test]
fn records_are_kept_whole_across_record_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("long");
    let mut log = String::new();
    for s in 0..20_000 {
        log.push_str(&format!("{{\"step\": {s}, \"loss\": 1.5, \"lr\": 0.1, \"extra\": 2.5}}\n"));
        if s % 1000 == 999 {
            for again in s - 9..=s {
                log.push_str(&format!("{{\"step\": {again}, \"loss\": 0.5, \"lr\": 0.1}}\n"));
            }
        }
    }
    write(&d, "run-a/metrics.jsonl", &log);
    init(tmp.path(), &d, "long");
    let release = build_from_elsewhere(tmp.path(), "long");
    assert_eq!(
        query(
            &release,
            "SELECT count(*) AS n, sum(CASE WHEN metric = 'extra' THEN 1 ELSE 0 END) AS extra, \
             sum(CASE WHEN value = 0.5 THEN 1 ELSE 0 END) AS resumed FROM metrics"
        ),
        "n,extra,resumed\n59800,19800,200\n"
    );
    let rejects = std::fs::read_to_string(release.join("rejects/metrics.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 600);
}

/// A `.json` file of one JSON document per line, as some tools write their logs, is read as
/// JSON Lines (it was left out as "not JSON: trailing characters").
#[test]
fn a_json_file_of_one_document_per_line_is_read_as_json_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("logs");
    write(&d, "train_log.json", "{\"step\": 1, \"loss\": 0.5}\n{\"step\": 2, \"loss\": 0.25}\n");
    let doc = init(tmp.path(), &d, "logs");
    assert!(not_read(&doc).is_empty(), "{doc}");
    assert_eq!(doc["sources"][0]["format"], "jsonl");
    assert_eq!(init_rows(&doc), BTreeMap::from([("train_log".into(), 2)]));
    let release = build_from_elsewhere(tmp.path(), "logs");
    assert_eq!(release_rows(&release)["train_log"], 2);
}

/// Two trackio projects' databases are read with the project captured (their runs were one
/// table, told apart by `_source_file` alone); SQLite's and trackio's working files beside
/// them, and tinker-cookbook's copy of a log made at a resume, are named for what they are.
#[test]
fn two_trackio_projects_stay_apart_and_working_files_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = bundled_raw(tmp.path(), &[("trackio", "")]);
    std::fs::remove_dir_all(folder.join("inbox")).unwrap();
    // another project: its own runs and log calls (a copy would be read once, as trackio reads it)
    std::fs::copy(folder.join("demo.db"), folder.join("sweep.db")).unwrap();
    let script = "import sys, sqlite3\n\
                  c = sqlite3.connect(sys.argv[1])\n\
                  for t in ('metrics', 'system_metrics', 'configs'):\n\
                  \x20   c.execute(f\"UPDATE {t} SET run_id = run_id || 's'\")\n\
                  for t in ('metrics', 'system_metrics'):\n\
                  \x20   c.execute(f\"UPDATE {t} SET log_id = log_id || 's'\")\n\
                  c.commit()\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(folder.join("sweep.db")));
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["demo.db-shm", "demo.db-wal", "demo.lock", "sweep.lock"] {
        std::fs::write(folder.join(f), "").unwrap();
    }
    std::fs::write(folder.join("metrics.jsonl.pre_resume_000005"), "{\"step\": 5}\n").unwrap();
    let doc = init(tmp.path(), &folder, "two");
    let sources = source_paths(&doc);
    assert_eq!(sources["trackio_metrics_raw"], ("trackio-metrics".into(), strings(&["raw/{project}.db"])));
    assert_eq!(sources["trackio_runs_raw"], ("trackio-runs".into(), strings(&["raw/{project}.db"])));
    assert_eq!(key(&doc, "trackio_runs"), ["project", "run_id"]);
    let reasons: BTreeMap<String, String> = not_read(&doc).into_iter().collect();
    assert!(reasons["demo.db-wal"].starts_with("SQLite's working file of the database beside it"), "{reasons:?}");
    assert_eq!(reasons["sweep.lock"], "trackio's lock of the project database beside it");
    assert!(
        reasons["metrics.jsonl.pre_resume_000005"].starts_with("tinker-cookbook's copy of metrics.jsonl"),
        "{reasons:?}"
    );
    let release = build_from_elsewhere(tmp.path(), "two");
    assert_eq!(
        query(&release, "SELECT project, count(*) AS runs FROM trackio_runs GROUP BY project ORDER BY project"),
        "project,runs\ndemo,3\nsweep,3\n"
    );
}

/// Files init cannot read are named with what is wrong, as a build says it: a CSV saved as
/// UTF-16, a trackio database and an Inspect log cut short.
#[test]
fn files_cut_short_or_in_utf16_are_said_for_what_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("mixed");
    let utf16: Vec<u8> =
        [0xFF, 0xFE].into_iter().chain("run,acc\na,0.5\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("results.csv"), utf16).unwrap();
    let db = std::fs::read(repo().join("pipelines/trackio/raw/demo.db")).unwrap();
    std::fs::write(d.join("demo.db"), &db[..db.len() / 2]).unwrap();
    std::fs::write(d.join("log.eval"), b"PK\x03\x04 cut").unwrap();
    write(&d, "ok.csv", "x\n1\n");
    let doc = init(tmp.path(), &d, "mixed");
    let reasons: BTreeMap<String, String> = not_read(&doc).into_iter().collect();
    assert_eq!(
        reasons["results.csv"],
        "line 1: the file is UTF-16 little-endian text (its byte order mark says so); save it as UTF-8 (\"CSV UTF-8\" in Excel)"
    );
    assert!(reasons["demo.db"].starts_with("an SQLite database that SQLite cannot read ("), "{reasons:?}");
    assert!(reasons["log.eval"].starts_with("a `.eval` file that is no ZIP archive ("), "{reasons:?}");
}

/// A run whose log cannot be read is left out by `not_read`, and the others keep their folder's
/// `{run}`: the runs were merged into one table without a `run` column (and, where their
/// steps met, one run's rows superseded the other's).
#[test]
fn a_run_left_out_keeps_the_others_run_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("runs");
    write(&d, "r1/metrics.jsonl", "{\"step\": 1, \"loss\": 0.5}\n{\"step\": 2, \"lo\n{\"step\": 3, \"lo\n");
    write(&d, "r2/metrics.jsonl", "{\"step\": 1, \"loss\": 0.9}\n{\"step\": 2, \"loss\": 0.8}\n");
    write(&d, "r3/metrics.jsonl", "{\"step\": 1, \"loss\": 0.7}\n{\"step\": 2, \"loss\": 0.6}\n");
    let doc = init(tmp.path(), &d, "runs");
    assert_eq!(source_paths(&doc)["metrics_raw"].1, strings(&["raw/{run}/metrics.jsonl"]));
    assert_eq!(key(&doc, "metrics"), ["run", "step", "metric"]);
    assert!(table(&doc, "metrics").get("on_duplicate_key").is_none());
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/runs/pipeline.toml")).unwrap();
    assert!(toml.contains("    \"raw/r1/metrics.jsonl\", # line 2: not valid JSON"), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "runs");
    assert_eq!(
        query(&release, "SELECT run, count(*) AS n FROM metrics GROUP BY run ORDER BY run"),
        "run,n\nr2,2\nr3,2\n"
    );
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains("raw/r1/metrics.jsonl"), "{card}");
}

/// Keys that repeat in a log whose steps never went back (several records per step, not a
/// resumed run) give no key and no keep-last: keep-last dropped every record but the last.
#[test]
fn keys_repeated_without_a_resume_give_no_keep_last() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("evals");
    write(
        &d,
        "evalrun/metrics.jsonl",
        "{\"step\": 100, \"benchmark\": \"gsm8k\", \"score\": 0.5}\n{\"step\": 100, \"benchmark\": \"math\", \"score\": 0.3}\n",
    );
    let doc = init(tmp.path(), &d, "evals");
    assert!(key(&doc, "metrics").is_empty());
    assert!(table(&doc, "metrics").get("on_duplicate_key").is_none());
    let notes = doc["notes"].to_string();
    assert!(notes.contains("again at evalrun/metrics.jsonl:2, where the steps had not gone back"), "{notes}");
    let release = build_from_elsewhere(tmp.path(), "evals");
    assert_eq!(release_rows(&release)["metrics"], 4);
}

/// A `.jsonl` file that holds one JSON document over several lines (lm-eval 0.4.0 wrote its
/// samples as one indented array) is read as the document it is.
#[test]
fn a_jsonl_file_holding_one_json_array_is_read_as_a_document() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("samples.jsonl"),
        "[\n  {\n    \"doc_id\": 0,\n    \"target\": \"4\"\n  },\n  {\n    \"doc_id\": 1,\n    \"target\": \"7\"\n  }\n]\n",
    )
    .unwrap();
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["sources"][0]["format"], "json", "{doc}");
    assert_eq!(doc["tables"][0]["rows"], 2, "{doc}");
}

#[test]
fn a_file_left_out_alone_is_named_once_with_the_line_of_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    write(&d, "pivot.csv", "n,n\n1,2\n");
    write(&d, "ok.jsonl", "{\"a\": 1}\n");
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&d).args(["--name", "p"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("  pivot.csv: line 1: the CSV header names column `n` twice; rename one"),
        "{}",
        stderr(&o)
    );
}

/// A few bad records among good ones are set aside, not their file left out: the pipeline says
/// `on_invalid = "reject"` with the first, and each build keeps them in `rejects/`.
#[test]
fn init_sets_aside_a_few_bad_records_rather_than_their_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("outputs");
    // verl's validation dumps: one sample's scorer timed out, and wrote its error as the score
    let line = |i: u32, score: &str| {
        format!("{{\"input\": \"q{i}\", \"output\": \"o\", \"gts\": \"1\", \"score\": {score}, \"step\": 10}}\n")
    };
    let dump: String = (0..5).map(|i| line(i, if i == 3 { "\"error: timeout\"" } else { "1.0" })).collect();
    write(&d, "val/10.jsonl", &dump);
    write(&d, "val/20.jsonl", &(0..5).map(|i| line(i, "0.5")).collect::<String>());
    let doc = init(tmp.path(), &d, "dumps");
    assert_eq!(not_read(&doc), vec![], "{doc}");
    assert_eq!(init_rows(&doc)["verl_generations"], 9, "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/dumps/pipeline.toml")).unwrap();
    let said = "on_invalid = \"reject\"   # 1 bad record among good ones, set aside in rejects/ and named in the \
                card; the first: val/10.jsonl, line 4, $.score: expected a number, found string \"error: timeout\"";
    assert!(toml.contains(said), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "dumps");
    assert_eq!(query(&release, "SELECT count(*) AS n FROM verl_generations"), "n\n9\n");
    let rejects = std::fs::read_to_string(release.join("rejects/verl_generations_raw.jsonl")).unwrap();
    assert!(rejects.contains("error: timeout") && rejects.contains("\"_source_line\":4"), "{rejects}");
    // a file of more bad records than good is left out still
    let bad: String = (0..5).map(|i| line(i, if i == 0 { "1.0" } else { "\"nan?\"" })).collect();
    write(&d, "val/30.jsonl", &bad);
    let doc = init(tmp.path(), &d, "more");
    let reasons: BTreeMap<String, String> = not_read(&doc).into_iter().collect();
    assert!(reasons["val/30.jsonl"].starts_with("line 2, $.score: expected a number"), "{reasons:?}");
    assert_eq!(init_rows(&doc)["verl_generations"], 9, "{doc}");
}

/// A column of numbers with a few strings keeps its type, those records set aside; strings
/// that stand for a missing value are read as null (`missingValues`); strings more than one
/// record in ten keep every record and the column's values as JSON text.
#[test]
fn a_few_strings_among_numbers_are_set_aside_and_missing_markers_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("evals");
    let lines = |n: u32, odd: &dyn Fn(u32) -> Option<&'static str>| -> String {
        (0..n)
            .map(|i| {
                let score = odd(i).map_or(format!("0.{i}"), |s| format!("\"{s}\""));
                format!("{{\"id\": {i}, \"score\": {score}, \"passed\": true}}\n")
            })
            .collect()
    };
    write(&d, "scores.jsonl", &lines(20, &|i| (i == 7).then_some("error: timeout")));
    let doc = init(tmp.path(), &d, "few");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/few/pipeline.toml")).unwrap();
    let said = "on_invalid = \"reject\"   # 1 bad record among good ones, set aside in rejects/ and named in the card; \
                the first: scores.jsonl, line 8, $.score: expected number, found string \"error: timeout\"";
    assert!(toml.contains(said), "{toml}");
    assert!(!toml.contains("type = \"any\""), "{toml}");
    assert_eq!(init_rows(&doc)["scores"], 19, "{doc}");
    let release = build_from_elsewhere(tmp.path(), "few");
    assert_eq!(query(&release, "SELECT count(*) AS n, sum(score) > 1 AS numbers FROM scores"), "n,numbers\n19,true\n");
    let rejects = std::fs::read_to_string(release.join("rejects/scores_raw.jsonl")).unwrap();
    assert!(rejects.contains("\"score\":\"error: timeout\""), "{rejects}");
    // texts that stand for a missing value: the records are kept, the column a number column
    // that reads them as null
    write(&d, "scores.jsonl", &lines(20, &|i| [(7, ""), (9, "n/a"), (12, "-")].iter().find(|x| x.0 == i).map(|x| x.1)));
    let doc = init(tmp.path(), &d, "missing");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/missing/pipeline.toml")).unwrap();
    let said = "name = \"score\"\ntype = \"number\"\nmissingValues = [\"\", \"n/a\", \"-\"]\n";
    assert!(toml.contains(said) && !toml.contains("on_invalid"), "{toml}");
    assert_eq!(init_rows(&doc)["scores"], 20, "{doc}");
    let release = build_from_elsewhere(tmp.path(), "missing");
    assert_eq!(query(&release, "SELECT count(*) AS n, count(score) AS scores FROM scores"), "n,scores\n20,17\n");
    // a missing value's text in a part of a column: no missingValues reads it, and the reason
    // names the part
    let part = lines(3, &|_| None).replace("\"passed\": true", "\"stats\": {\"max\": 1}");
    write(&d, "scores.jsonl", &part.replacen("{\"max\": 1}", "{\"max\": \"-\"}", 2));
    init(tmp.path(), &d, "part");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/part/pipeline.toml")).unwrap();
    assert!(toml.contains("[[source.field]]   # at $.stats.max, expected"), "{toml}");
    assert!(toml.contains("name = \"stats\"\ntype = \"any\"\n") && !toml.contains("missingValues"), "{toml}");
    // beside "NaN" strings, in any order: a number column that reads both
    for (i, order) in
        [["\"n/a\"", "\"NaN\"", "1.5"], ["\"NaN\"", "\"n/a\"", "1.5"], ["1.5", "\"NaN\"", "\"n/a\""]].iter().enumerate()
    {
        let text: String = order.iter().enumerate().map(|(n, v)| format!("{{\"id\": {n}, \"x\": {v}}}\n")).collect();
        write(&d, "scores.jsonl", &text);
        init(tmp.path(), &d, &format!("order{i}"));
        let toml = std::fs::read_to_string(tmp.path().join(format!("pipelines/order{i}/pipeline.toml"))).unwrap();
        assert!(toml.contains("coerce_nonfinite_strings = true"), "{order:?}: {toml}");
        assert!(toml.contains("name = \"x\"\ntype = \"number\"\nmissingValues = [\"n/a\"]\n"), "{order:?}: {toml}");
    }
    // the first record's "n/a" types nothing
    write(&d, "scores.jsonl", &lines(20, &|i| (i == 0).then_some("N/A")));
    init(tmp.path(), &d, "first");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/first/pipeline.toml")).unwrap();
    assert!(toml.contains("name = \"score\"\ntype = \"number\"\nmissingValues = [\"N/A\"]\n"), "{toml}");
    // one in ten: kept
    write(&d, "scores.jsonl", &lines(10, &|i| (i == 7).then_some("error: timeout")));
    let doc = init(tmp.path(), &d, "tenth");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/tenth/pipeline.toml")).unwrap();
    assert!(toml.contains("on_invalid = \"reject\"") && !toml.contains("type = \"any\""), "{toml}");
    assert_eq!(init_rows(&doc)["scores"], 9, "{doc}");
    // three strings in 20 records (more than one in ten): the same as a missing value
    write(&d, "scores.jsonl", &lines(20, &|i| (i % 7 == 3).then_some("error")));
    let doc = init(tmp.path(), &d, "many");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/many/pipeline.toml")).unwrap();
    assert!(toml.contains("name = \"score\"\ntype = \"any\"") && !toml.contains("on_invalid"), "{toml}");
    assert_eq!(init_rows(&doc)["scores"], 20, "{doc}");
}

/// A results table merged by hand gets the columns that name its rows as its key; one that
/// gives a result twice gets a note naming the repeat instead.
#[test]
fn a_results_table_is_keyed_by_what_names_its_rows_and_a_repeat_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("results");
    let head = "run,checkpoint,benchmark,accuracy,notes\n";
    write(
        &d,
        "clean.csv",
        &format!("{head}lr1e-5,final,gsm8k,0.725,\nlr1e-5,final,arc,0.80,rerun\nlr4e-5,final,gsm8k,0.61,\n"),
    );
    let doc = init(tmp.path(), &d, "clean");
    assert_eq!(key(&doc, "clean"), ["run", "checkpoint", "benchmark"], "{doc}");
    // a result given twice later: the build names both lines
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/clean/pipeline.toml")).unwrap();
    assert!(!toml.is_empty());
    let text = std::fs::read_to_string(d.join("clean.csv")).unwrap();
    write(&d, "clean.csv", &format!("{text}lr1e-5,final,gsm8k,0.700,\n"));
    let o = run(bin().current_dir(tmp.path()).arg("build").arg("pipelines/clean"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 rows share this primary key: raw/clean.csv:2, raw/clean.csv:5"), "{}", stderr(&o));
    // merged with the repeat already there: no key, and the note names it
    let doc = init(tmp.path(), &d, "merged");
    assert_eq!(key(&doc, "clean"), Vec::<String>::new(), "{doc}");
    let notes = doc["notes"].to_string();
    let said = "(run, checkpoint, benchmark) is no key: run \\\"lr1e-5\\\", checkpoint \\\"final\\\", benchmark \\\"gsm8k\\\" \
                again at clean.csv:5";
    assert!(notes.contains(said), "{notes}");
    // a CSV column of numbers with "n/a" and empty cells: both read as null
    let d = tmp.path().join("na");
    write(&d, "r.csv", "run,benchmark,accuracy\na,gsm8k,0.5\na,math,n/a\nb,gsm8k,\nb,math,0.7\n");
    init(tmp.path(), &d, "na");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/na/pipeline.toml")).unwrap();
    assert!(toml.contains("name = \"accuracy\"\ntype = \"number\"\nmissingValues = [\"\", \"n/a\"]\n"), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "na");
    assert_eq!(query(&release, "SELECT count(*) AS n, count(accuracy) AS known FROM r"), "n,known\n4,2\n");
    // "n/a" in the first row types nothing: the column is a number column still
    write(&d, "r.csv", "run,benchmark,accuracy\na,gsm8k,n/a\na,math,0.5\nb,gsm8k,#N/A\nb,math,0.7\nc,gsm8k,0.25\n");
    init(tmp.path(), &d, "na_first");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/na_first/pipeline.toml")).unwrap();
    let said = "[[source.field]]   # \"n/a\", \"#N/A\", empty values among numbers read as null, as missingValues says, \
                the first at r.csv:2\nname = \"accuracy\"\ntype = \"number\"\nmissingValues = [\"\", \"n/a\", \"#N/A\"]\n";
    assert!(toml.contains(said), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "na_first");
    let max = "SELECT count(accuracy) AS known, max(accuracy) AS best, arrow_typeof(max(accuracy)) AS t FROM r";
    assert_eq!(query(&release, max), "known,best,t\n3,0.7,Float64\n");
    // numbers with thousands separators too: a result given twice is then said, not keyed by them
    let d = tmp.path().join("sep");
    write(
        &d,
        "r.csv",
        "model,benchmark,n_samples\nm1,gsm8k,\"1,319\"\nm1,math,500\nm2,gsm8k,\"1,319\"\nm2,gsm8k,\"1,318\"\n",
    );
    let doc = init(tmp.path(), &d, "sep");
    assert_eq!(key(&doc, "r"), Vec::<String>::new(), "{doc}");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("(model, benchmark) is no key: model \\\"m2\\\", benchmark \\\"gsm8k\\\" again at r.csv:5"),
        "{notes}"
    );
    let said = "n_samples holds numbers written with thousands separators (\\\"1,319\\\" at r.csv:2), kept as text; to \
                read them as numbers, select CAST(trim(replace(n_samples, ',', '')) AS BIGINT) AS n_samples";
    assert!(notes.contains(said), "{notes}");
    // a CSV separated by semicolons writes its decimals with a comma: said, with the SQL that
    // reads them, and no part of a key
    let d = tmp.path().join("semi");
    write(&d, "r.csv", "model;task;acc\nm1;gsm8k;0,71\nm1;math;0,5\nm2;gsm8k;n/a\nm2;gsm8k;0,65\n");
    let doc = init(tmp.path(), &d, "semi");
    assert_eq!(key(&doc, "r"), Vec::<String>::new(), "{doc}");
    let said = "acc holds numbers written with a decimal comma (\\\"0,71\\\" at r.csv:2), kept as text; to read them as \
                numbers, select CAST(trim(replace(CASE WHEN acc IN ('n/a') THEN NULL ELSE acc END, ',', '.')) AS DOUBLE) AS \
                acc";
    assert!(doc["notes"].to_string().contains(said), "{doc}");
    // there a dot before three digits is a thousands separator, likely: said, the value read
    write(&d, "r.csv", "model;acc;n\nm1;0,71;1.319\nm2;0,5;14.042\nm3;0,65;2.500\n");
    let doc = init(tmp.path(), &d, "semi_dots");
    let said = "n holds numbers with a dot before three digits (1.319 at r.csv:2) in a file whose decimals are written \
                with a comma, kept as text: if its dot separates thousands there (1.319 for 1319), select \
                CAST(replace(n, '.', '') AS BIGINT) AS n in the table's SQL; if it is a decimal dot, CAST(n AS DOUBLE) AS n";
    assert!(doc["notes"].to_string().contains(said), "{doc}");
    // kept as written, and said in the card
    let release = build_from_elsewhere(tmp.path(), "semi_dots");
    assert_eq!(query(&release, "SELECT n FROM r ORDER BY n"), "n\n1.319\n14.042\n2.500\n");
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    let described = "| `n` | `Utf8` | Written as text in the input: numbers with a dot before three digits (1.319 at \
                     r.csv:2) in a file whose decimals are written with a comma; `CAST(replace(n, '.', '') AS BIGINT)` \
                     reads the dot as a thousands separator (1.319 as 1319), `CAST(n AS DOUBLE)` as a decimal dot. |";
    assert!(card.contains(described), "{card}");
    // a CSV written with a blank after each separator: its numbers are text, said with the SQL
    // that reads them, under the name the table gives the column
    let d = tmp.path().join("blanks");
    write(&d, "r.csv", "task, acc\ngsm8k, 0.6\nmath, 0.7\n");
    let doc = init(tmp.path(), &d, "blanks");
    let said = "table r: \\\" acc\\\" holds numbers written with blanks around them (\\\" 0.6\\\" at r.csv:2), kept as \
                text; to read them as numbers, select CAST(trim(\\\" acc\\\") AS DOUBLE) AS acc in the table's SQL";
    assert!(doc["notes"].to_string().contains(said), "{doc}");
    // a number with a blank after it, then percentages beside fractions: the SQL reads both
    // (its `TRY_CAST` would have made `71%` null)
    let d = tmp.path().join("padded");
    write(&d, "r.csv", "run,benchmark,score\na,gsm8k,0.71 \na,math,0.42\nb,gsm8k,71%\n");
    let doc = init(tmp.path(), &d, "padded");
    let said = "score holds percentages written with their sign (\\\"71%\\\" at r.csv:4) beside fractions (\\\"0.71 \\\" at \
                r.csv:2): two scales";
    assert!(doc["notes"].to_string().contains(said), "{doc}");
    let cast = "CASE WHEN ends_with(trim(score), '%') THEN CAST(trim(rtrim(trim(score), '%')) || 'e-2' AS DOUBLE) ELSE \
                CAST(trim(score) AS DOUBLE) END AS score";
    let release = read_as_number(tmp.path(), "padded", "score", cast);
    assert_eq!(
        query(&release, "SELECT run, score FROM r ORDER BY run, benchmark"),
        "run,score\na,0.71\na,0.42\nb,0.71\n"
    );
    // percentages written with their sign are results, not names, and said
    let d = tmp.path().join("pct");
    write(&d, "r.csv", "model,win_rate\nm1,55.5%\nm2,N/A\nm3,48 %\n");
    let doc = init(tmp.path(), &d, "pct");
    assert_eq!(key(&doc, "r"), ["model"], "{doc}");
    let notes = doc["notes"].to_string();
    let said = "table r: win_rate holds percentages written with their sign (\\\"55.5%\\\" at r.csv:2), kept as text; \
                to read them as numbers, select CAST(trim(rtrim(trim(CASE WHEN win_rate IN ('N/A') THEN NULL ELSE \
                win_rate END), '%')) AS DOUBLE) AS win_rate in the table's SQL";
    assert!(notes.contains(said), "{notes}");
    // the SQL it gives reads them, and stops at a value it cannot read
    let cast =
        "CAST(trim(rtrim(trim(CASE WHEN win_rate IN ('N/A') THEN NULL ELSE win_rate END), '%')) AS DOUBLE) AS win_rate";
    let release = read_as_number(tmp.path(), "pct", "win_rate", cast);
    assert_eq!(
        query(&release, "SELECT model, win_rate FROM r ORDER BY model"),
        "model,win_rate\nm1,55.5\nm2,\nm3,48.0\n"
    );
    write(&d, "r.csv", "model,win_rate\nm1,55.5%\nm2,N/A\nm3,4B %\n");
    let o = run(bin().current_dir(tmp.path()).args(["build", "--force", "pipelines/pct"]));
    assert!(!o.status.success(), "{}", stderr(&o));
    // percentages beside fractions: two scales, said, and the SQL given reads them as one
    let d = tmp.path().join("scales");
    write(&d, "r.csv", "model,gsm8k\nm1,0.3131\nm2,41.2%\nm3,0.4049\nm4,-3 %\n");
    let doc = init(tmp.path(), &d, "scales");
    let notes = doc["notes"].to_string();
    let said = "table r: gsm8k holds percentages written with their sign (\\\"41.2%\\\" at r.csv:3) beside fractions \
                (\\\"0.3131\\\" at r.csv:2): two scales, which the SQL makes one, reading a percentage as a fraction \
                (41.2% as 0.412), kept as text; to read them as numbers, select CASE WHEN ends_with(trim(gsm8k), '%') \
                THEN CAST(trim(rtrim(trim(gsm8k), '%')) || 'e-2' AS DOUBLE) ELSE CAST(trim(gsm8k) AS DOUBLE) END AS gsm8k";
    assert!(notes.contains(said), "{notes}");
    // the schema's description (so the card) says what the texts are, and the SQL
    let schema = std::fs::read_to_string(tmp.path().join("schemas/scales/r.json")).unwrap();
    let described = "\"description\": \"Written as text in the input: percentages written with their sign (\\\"41.2%\\\" at r.csv:3) \
                     beside fractions";
    assert!(schema.contains(described), "{schema}");
    // percentages with a decimal comma, in a file separated by semicolons: results, read by the SQL
    let d = tmp.path().join("eu_pct");
    write(&d, "r.csv", "Modell;Checkpoint;Winrate\nm1;ckpt-100;41,5%\nm1;ckpt-200;48,25%\nm2;ckpt-100;39%\n");
    let doc = init(tmp.path(), &d, "eu_pct");
    assert_eq!(key(&doc, "r"), ["Modell", "Checkpoint"], "{doc}");
    let notes = doc["notes"].to_string();
    let said = "select CAST(trim(rtrim(trim(replace(\\\"Winrate\\\", ',', '.')), '%')) AS DOUBLE) AS \\\"Winrate\\\"";
    assert!(notes.contains(said), "{notes}");
    // fractions and percentages both with a decimal comma: two scales, which the SQL makes one
    let d = tmp.path().join("eu_scales");
    write(&d, "r.csv", "Modell;Aufgabe;Genauigkeit\nm1;gsm8k;0,71\nm1;math;41,5%\nm2;gsm8k;0,65\n");
    let notes = init(tmp.path(), &d, "eu_scales")["notes"].to_string();
    let cast = "CASE WHEN ends_with(trim(replace(\"Genauigkeit\", ',', '.')), '%') THEN \
                CAST(trim(rtrim(trim(replace(\"Genauigkeit\", ',', '.')), '%')) || 'e-2' AS DOUBLE) ELSE \
                CAST(trim(replace(\"Genauigkeit\", ',', '.')) AS DOUBLE) END";
    let said = "beside fractions (\\\"0,71\\\" at r.csv:2): two scales";
    assert!(notes.contains(said), "{notes}");
    assert!(notes.contains(&cast.replace('"', "\\\"")), "{notes}");
    let release = read_as_number(tmp.path(), "eu_scales", "\"Genauigkeit\"", &format!("{cast} AS \"Genauigkeit\""));
    assert_eq!(
        query(&release, "SELECT \"Modell\", \"Genauigkeit\" FROM r ORDER BY 2"),
        "Modell,Genauigkeit\nm1,0.415\nm2,0.65\nm1,0.71\n"
    );
    // numbers beyond 1 beside percentages: said, the scale left to the reader
    let d = tmp.path().join("mixed");
    write(&d, "r.csv", "model,win\nm1,41.2%\nm2,0.31\nm3,55\n");
    let notes = init(tmp.path(), &d, "mixed")["notes"].to_string();
    let said = "beside numbers written without it (\\\"0.31\\\" at r.csv:3), which the SQL reads as they are: see \
                that the two are on one scale";
    assert!(notes.contains(said), "{notes}");
    // a typo among numbers: the column is text, and its description says why and how to read
    // the numbers
    let d = tmp.path().join("typo");
    write(&d, "r.csv", "model,acc\nm1,0.5\nm2,0.4l67\nm3,0.7\n");
    let notes = init(tmp.path(), &d, "typo")["notes"].to_string();
    // and a note says it, with the SQL
    let said = "table r: acc is kept as text: expected number, found string \\\"0.4l67\\\"";
    assert!(
        notes.contains(said) && notes.contains("`TRY_CAST(acc AS DOUBLE)` reads the numbers among them"),
        "{notes}"
    );
    // short git hashes, some written with digits alone: names, not numbers with a typo
    let d = tmp.path().join("hashes");
    write(&d, "r.csv", "model,revision,acc\nm1,4021553,0.5\nm2,989aa79,0.4\n");
    let notes = init(tmp.path(), &d, "hashes")["notes"].to_string();
    assert!(!notes.contains("TRY_CAST"), "{notes}");
    let schema = std::fs::read_to_string(tmp.path().join("schemas/hashes/r.json")).unwrap();
    let described = "Hexadecimal identifiers such as \\\"989aa79\\\" (as git writes commits), kept as text";
    assert!(schema.contains(described), "{schema}");
    // Excel's error values are no missing values: a note says what reads the numbers
    let d = tmp.path().join("excel");
    write(&d, "r.csv", "run,loss\na,1.2\nb,#DIV/0!\nc,0.9\n");
    let notes = init(tmp.path(), &d, "excel")["notes"].to_string();
    let said = "table r: loss is kept as text: expected number, found string \\\"#DIV/0!\\\"";
    assert!(notes.contains(said) && notes.contains("`TRY_CAST(loss AS DOUBLE)`"), "{notes}");
    let schema = std::fs::read_to_string(tmp.path().join("schemas/typo/r.json")).unwrap();
    let described = "\"description\": \"Written as text in the input: expected number, found string \\\"0.4l67\\\"";
    assert!(schema.contains(described), "{schema}");
    assert!(schema.contains("`TRY_CAST(acc AS DOUBLE)` reads the numbers among them (null where a value is none)."));
    let cast = "CASE WHEN ends_with(trim(gsm8k), '%') THEN CAST(trim(rtrim(trim(gsm8k), '%')) || 'e-2' AS DOUBLE) \
                ELSE CAST(trim(gsm8k) AS DOUBLE) END AS gsm8k";
    let release = read_as_number(tmp.path(), "scales", "gsm8k", cast);
    assert_eq!(
        query(&release, "SELECT model, gsm8k FROM r ORDER BY model"),
        "model,gsm8k\nm1,0.3131\nm2,0.412\nm3,0.4049\nm4,-0.03\n"
    );
    // the description stays true once the note is followed: it tells the input, not the column
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(
        card.contains("| `gsm8k` | `Float64` | Written as text in the input: percentages written with their sign"),
        "{card}"
    );
    // a step beside what names a row: the named candidates fail, the columns that name rows hold
    let d = tmp.path().join("steps");
    write(&d, "r.csv", "run,step,benchmark,accuracy\na,10,gsm8k,0.5\na,10,math,0.2\na,20,gsm8k,0.6\nb,10,gsm8k,0.4\n");
    let doc = init(tmp.path(), &d, "steps");
    assert_eq!(key(&doc, "r"), ["run", "step", "benchmark"], "{doc}");
    // one row names itself: no key
    let d = tmp.path().join("one");
    write(&d, "r.csv", "run,benchmark,accuracy\na,gsm8k,0.5\n");
    let doc = init(tmp.path(), &d, "one");
    assert_eq!(key(&doc, "r"), Vec::<String>::new(), "{doc}");
    // counts of a result, and remarks, are no part of the key
    let d = tmp.path().join("counts");
    write(&d, "r.csv", "run,benchmark,num_correct,notes,seed\na,gsm8k,50,x,1\na,math,20,x,1\nb,gsm8k,55,y,2\n");
    let doc = init(tmp.path(), &d, "counts");
    assert_eq!(key(&doc, "r"), ["run", "benchmark"], "{doc}");
}

/// A row pasted twice into a table merged by hand: no key holds, and the note names the two
/// rows, not only the first candidate's repeat.
#[test]
fn a_row_given_twice_whole_is_named_in_the_note_of_a_table_without_a_key() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("out");
    write(&d, "r.csv", "model,task,acc\nm1,gsm8k,0.5\nm1,math,0.6\nm2,,0.4\nm2,,0.4\n");
    let doc = init(tmp.path(), &d, "whole");
    assert_eq!(key(&doc, "r"), Vec::<String>::new(), "{doc}");
    let said = "table r: no primary key, so rows are not checked for duplicates: (model) is no key: model \\\"m1\\\" again \
                at r.csv:3; and r.csv:5 repeats r.csv:4 cell for cell, which no key tells apart: drop one of the two (in \
                the file, or in the table's SQL)";
    assert!(doc["notes"].to_string().contains(said), "{doc}");
    // rows that differ in a cell are no repeat
    write(&d, "r.csv", "model,task,acc\nm1,gsm8k,0.5\nm1,math,0.6\nm2,,0.4\nm2,,0.45\n");
    let doc = init(tmp.path(), &d, "whole2");
    assert!(!doc["notes"].to_string().contains("cell for cell"), "{doc}");
}

/// Bad records are weighed against the records a file gives, not its rows: a metrics line of
/// ten metrics is one record, ten rows.
#[test]
fn bad_records_are_weighed_against_records_not_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("runs");
    let wide = |s: u32| {
        let m: Vec<String> = (0..10).map(|i| format!("\"m{i}\": {i}.5")).collect();
        format!("{{\"step\": {s}, {}}}\n", m.join(", "))
    };
    let bad = "{\"step\": \"x\", \"m0\": 1.5}\n";
    // 2 good records (20 rows) and 3 bad: left out
    write(&d, "r1/metrics.jsonl", &format!("{}{}{bad}{bad}{bad}", wide(0), wide(1)));
    // 3 good records of one metric and 2 bad: read, the bad set aside
    write(
        &d,
        "r2/metrics.jsonl",
        &format!(
            "{{\"step\": 0, \"m0\": 1.0}}\n{bad}{{\"step\": 1, \"m0\": 2.0}}\n{bad}{{\"step\": 2, \"m0\": 3.0}}\n"
        ),
    );
    let doc = init(tmp.path(), &d, "weigh");
    let reasons: BTreeMap<String, String> = not_read(&doc).into_iter().collect();
    assert!(reasons.contains_key("r1/metrics.jsonl") && !reasons.contains_key("r2/metrics.jsonl"), "{reasons:?}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/weigh/pipeline.toml")).unwrap();
    assert!(toml.contains("on_invalid = \"reject\"   # 2 bad records among good ones"), "{toml}");
    // and so does init's report
    let notes = doc["notes"].to_string();
    assert!(notes.contains("table metrics: 2 bad records among good ones, set aside in rejects/"), "{notes}");
    assert!(notes.contains("(on_invalid = \\\"reject\\\")"), "{notes}");
}

/// A JSON Lines file whose first line is bad (a stray header, a line cut short) is told by its
/// first good line, and its bad lines are weighed as any others; a file of bad lines alone is
/// left out with the first.
#[test]
fn a_bad_first_line_does_not_leave_its_file_out() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("m");
    let good: String = (0..4).map(|s| format!("{{\"step\": {s}, \"loss\": 0.5}}\n")).collect();
    write(&d, "metrics.jsonl", &format!("nope\n{good}"));
    write(&d, "other.jsonl", "nope\nnot either\n");
    let doc = init(tmp.path(), &d, "first");
    let reasons: BTreeMap<String, String> = not_read(&doc).into_iter().collect();
    assert!(!reasons.contains_key("metrics.jsonl"), "{reasons:?}");
    assert!(reasons["other.jsonl"].starts_with("line 1: "), "{reasons:?}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/first/pipeline.toml")).unwrap();
    assert!(toml.contains("on_invalid = \"reject\"   # 1 bad record among good ones"), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "first");
    assert_eq!(query(&release, "SELECT count(*) AS n FROM metrics"), "n\n4\n");
}

#[test]
fn a_metrics_log_of_another_trainer_is_not_called_tinkers() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    write(
        &logs,
        "a/metrics.jsonl",
        "{\"step\": 0, \"loss\": 1.5, \"learning_rate\": 0.001}\n{\"step\": 1, \"loss\": 1.2}\n",
    );
    write(&logs, "b/metrics.jsonl", "{\"step\": 0, \"loss\": 1.4}\n");
    // names that only begin as tinker-cookbook's do are another trainer's
    write(&logs, "c/metrics.jsonl", "{\"step\": 0, \"optim/lr_decay\": 0.9, \"env/allowed\": 1}\n");
    init(tmp.path(), &logs, "other");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/other/pipeline.toml")).unwrap();
    assert!(toml.contains("\"Metrics logs (`metrics.jsonl`) in long form: one row per step and metric"), "{toml}");
    assert!(!toml.contains("Tinker") && !toml.contains("tinker\""), "{toml}");
    std::fs::remove_file(logs.join("c/metrics.jsonl")).unwrap();
    // beside a Tinker checkpoint index, the same log is Tinker's
    write(
        &logs,
        "b/checkpoints.jsonl",
        "{\"name\": \"final\", \"batch\": 2, \"state_path\": \"tinker://b:train:0/weights/final\"}\n",
    );
    init(tmp.path(), &logs, "tinker");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/tinker/pipeline.toml")).unwrap();
    assert!(toml.contains("\"Tinker metrics logs (`metrics.jsonl`)") && toml.contains("tags = [\"tinker\"]"), "{toml}");
}

#[test]
fn init_keeps_the_last_log_of_a_trackio_run_resumed_from_a_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("trackio");
    // the real trackio client: a run killed after step 5, resumed (`resume="must"`) from
    // its checkpoint at step 3, which logs steps 4 and 5 again, then 6; a second run whose
    // stopped attempt logged a metric the resumed one does not
    let script = "import trackio\n\
                  trackio.init(project='sft', name='r1', auto_log_gpu=False)\n\
                  for s in range(6):\n    trackio.log({'train/loss': 2.0 - s / 10}, step=s)\n\
                  trackio.log({'eval/acc': 0.5}, step=4)\n\
                  trackio.finish()\n\
                  trackio.init(project='sft', name='r1', resume='must', auto_log_gpu=False)\n\
                  for s in range(4, 7):\n    trackio.log({'train/loss': 1.0 - s / 10}, step=s)\n\
                  trackio.finish()\n\
                  trackio.init(project='sft', name='r2', auto_log_gpu=False)\n\
                  for s in range(6):\n    trackio.log({'train/loss': 3.0 - s / 10, 'train/chosen': s / 10}, step=s)\n\
                  trackio.finish()\n\
                  trackio.init(project='sft', name='r2', resume='must', auto_log_gpu=False)\n\
                  for s in range(4, 7):\n    trackio.log({'train/loss': 2.0 - s / 10}, step=s)\n\
                  trackio.finish()\n";
    trackio_project(&folder, script);
    let doc = init(tmp.path(), &folder, "t");
    assert_eq!(key(&doc, "trackio_metrics"), ["project", "run_id", "step", "metric"], "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/t/pipeline.toml")).unwrap();
    // the stopped attempt's records at a step logged again are set aside whole, as of a
    // Tinker or W&B run's
    assert!(toml.contains("on_duplicate_key = \"keep-last\""), "{toml}");
    assert!(toml.contains("record_columns = [\"project\", \"run_id\", \"step\"]"), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "t");
    // r1: the stopped attempt's losses at steps 4 and 5 are set aside; its eval at step 4,
    // logged after step 5, is kept. r2: its chosen rewards at steps 4 and 5 go with the
    // stopped attempt's records, not beside the resumed attempt's losses
    assert_eq!(
        query(
            &release,
            "SELECT step, metric, round(value, 2) AS v FROM trackio_metrics WHERE run = 'r1' ORDER BY step, metric"
        ),
        "step,metric,v\n0,train/loss,2.0\n1,train/loss,1.9\n2,train/loss,1.8\n3,train/loss,1.7\n\
         4,eval/acc,0.5\n4,train/loss,0.6\n5,train/loss,0.5\n6,train/loss,0.4\n"
    );
    assert_eq!(
        query(
            &release,
            "SELECT metric, count(*) AS n, max(step) AS last FROM trackio_metrics WHERE run = 'r2' GROUP BY \
             metric ORDER BY metric"
        ),
        "metric,n,last\ntrain/chosen,4,3\ntrain/loss,7,6\n"
    );
    // a run that logs a metric at a step twice in one attempt (its steps do not go back):
    // each row on its own, the other metrics of the step kept
    let folder = tmp.path().join("twice");
    let script = "import trackio\n\
                  trackio.init(project='p', name='r', auto_log_gpu=False)\n\
                  for s in range(3):\n    trackio.log({'train/loss': float(s), 'lr': 0.1}, step=s)\n\
                  trackio.log({'train/loss': 9.0}, step=2)\n\
                  trackio.finish()\n";
    trackio_project(&folder, script);
    init(tmp.path(), &folder, "t2");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/t2/pipeline.toml")).unwrap();
    assert!(toml.contains("on_duplicate_key = \"keep-last\"") && !toml.contains("record_columns"), "{toml}");
    assert!(toml.contains("logging it twice: its steps did not go back between"), "{toml}");
    let release = build_from_elsewhere(tmp.path(), "t2");
    assert_eq!(
        query(&release, "SELECT metric, value FROM trackio_metrics WHERE step = 2 ORDER BY metric"),
        "metric,value\nlr,0.1\ntrain/loss,9.0\n"
    );
}

/// Runs `script` with the real trackio client, writing its projects under `folder`.
fn trackio_project(folder: &Path, script: &str) {
    let o = run(std::process::Command::new(python())
        .arg("-c")
        .arg(script)
        .env("TRACKIO_DIR", folder)
        .env("HF_HUB_OFFLINE", "1")
        .env_remove("HF_TOKEN"));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_first_line_nested_too_deep_is_said_once_and_the_good_lines_read() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("logs");
    // a first line that does not read and starts with `{`, then a document's closing lines:
    // each of the two readers tries the other once, not in turn for ever
    let deep = format!("{{\"id\": 1, \"x\": {}{}}}\n", "[".repeat(200), "]".repeat(200));
    let good: String = (2..6).map(|i| format!("{{\"id\": {i}, \"x\": []}}\n")).collect();
    write(&d, "x.jsonl", &format!("{deep}{good}"));
    let doc = init(tmp.path(), &d, "deep");
    assert_eq!(init_rows(&doc), rows_of(&[("x", 4)]), "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/deep/pipeline.toml")).unwrap();
    assert!(toml.contains("on_invalid = \"reject\"") && toml.contains("nested 128 or more"), "{toml}");
}

#[test]
fn a_plain_log_compressed_in_one_run_folder_joins_the_other_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("runs");
    let log = |run: u32| -> String { (0..3).map(|s| format!("{{\"step\": {s}, \"loss\": {run}.{s}}}\n")).collect() };
    write_gz(&d, "r1/log.jsonl.gz", log(1).as_bytes());
    write(&d, "r2/log.jsonl", &log(2));
    write(&d, "r3/log.jsonl", &log(3));
    let doc = init(tmp.path(), &d, "gz");
    assert_eq!(
        source(&doc, "log_raw")["path"],
        serde_json::json!(["raw/{run}/log.jsonl", "raw/{run}/log.jsonl.gz"]),
        "{doc}"
    );
    assert_eq!(key(&doc, "log"), ["run", "step"]);
    let release = build_from_elsewhere(tmp.path(), "gz");
    assert_eq!(
        query(&release, "SELECT run, count(*) AS n FROM log GROUP BY run ORDER BY run"),
        "run,n\nr1,3\nr2,3\nr3,3\n"
    );
    // a run's log there plain and compressed, the same bytes: read once
    write_gz(&d, "r2/log.jsonl.gz", log(2).as_bytes());
    let doc = init(tmp.path(), &d, "both");
    assert_eq!(init_rows(&doc), rows_of(&[("log", 9)]), "{doc}");
    assert_eq!(
        not_read(&doc),
        vec![(
            "r2/log.jsonl.gz".to_string(),
            "the bytes of r2/log.jsonl beside it, compressed: read there once".to_string()
        )]
    );
    let release = build_from_elsewhere(tmp.path(), "both");
    assert_eq!(query(&release, "SELECT count(*) AS n FROM log WHERE run = 'r2'"), "n\n3\n");
    // other records under the compressed name: both read, and said
    write_gz(&d, "r2/log.jsonl.gz", log(4).as_bytes());
    let doc = init(tmp.path(), &d, "other");
    assert!(
        doc["notes"].to_string().contains(
            "r2/log.jsonl and r2/log.jsonl.gz are one file's name plain and compressed, but hold other records"
        ),
        "{doc}"
    );
}

#[test]
fn a_column_of_integers_kept_as_text_for_one_beyond_64_bits_is_no_key() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("res");
    write(&d, "a.csv", "task,h,acc\nt1,18446744073709551617,0.5\nt1,123,0.6\nt2,-5,0.7\n");
    let doc = init(tmp.path(), &d, "big");
    // `h`, integers one of which no Int64 holds, is a value, no name of a row: no key
    assert_eq!(key(&doc, "a"), Vec::<String>::new(), "{doc}");
}

//! The second example (pipelines/tinker-wandb): Tinker runs next to the W&B runs that backfill
//! them, read from `.wandb` logs the real `wandb` client wrote offline, and the links between them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::*;

/// The pipeline, built once per test run (read-only).
pub fn release() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, p) = BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let o = run(bin()
            .args(["build", "-q"])
            .arg(repo().join("pipelines/tinker-wandb"))
            .arg("--releases-dir")
            .arg(dir.path()));
        assert!(o.status.success(), "build failed: {}", stderr(&o));
        let release = PathBuf::from(stdout(&o).trim());
        (dir, release)
    });
    p
}

fn query_json(release: &Path, sql: &str) -> Vec<Value> {
    let o = run(bin().args(["query", "-q", "--format", "json"]).arg(release).arg(sql));
    assert!(o.status.success(), "query failed: {sql}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn manifest(release: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap()
}

fn raw_json(rel: &str) -> Value {
    let p = repo().join("pipelines/tinker-wandb/raw/experiments/tinker-runs/results").join(rel);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

const TABLES: [(&str, u64); 5] =
    [("training_runs", 23), ("training_steps", 670), ("wandb_runs", 13), ("wandb_history", 1_262), ("run_links", 12)];

#[test]
fn tinker_wandb_builds_every_table_with_its_row_count() {
    let r = release();
    assert!(r.ends_with("tinker-wandb/1.0.0"), "{}", r.display());
    let m = manifest(r);
    for (name, rows) in TABLES {
        let t = m["tables"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap();
        assert_eq!(t["rows"], rows, "{name}");
    }
    // 11 tinker-rl-lab result files and 13 W&B run logs
    let inputs = m["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 24, "raw files read");
    let logs = inputs.iter().filter(|i| i["path"].as_str().unwrap().ends_with(".wandb")).count();
    assert_eq!(logs, 13);
    assert_eq!(m["report"]["warnings"], 0, "{}", m["report"]);
}

#[test]
fn tinker_wandb_links_per_rule() {
    let r = release();
    assert_eq!(
        query(
            r,
            "SELECT rule, count(*) AS links, count(DISTINCT training_run_id) AS tinker_runs, \
                    count(*) FILTER (WHERE by_url_run_id AND by_config_tinker_run_id) AS both_rules, \
                    count(*) FILTER (WHERE tinker_run_id_repaired) AS repaired \
             FROM run_links GROUP BY rule ORDER BY rule"
        ),
        "rule,links,tinker_runs,both_rules,repaired\nconfig_tinker_run_id,8,8,0,4\nurl_run_id,4,4,4,0\n"
    );
    // the four recorded 8-character ids name W&B runs of this release, at the very URL recorded
    assert_eq!(
        query(
            r,
            "SELECT experiment, wandb_run_id, recorded_wandb_url = wandb_url AS same_url FROM run_links \
             WHERE rule = 'url_run_id' ORDER BY experiment"
        ),
        "experiment,wandb_run_id,same_url\n\
         w1_llama33-70b-inst_s123,rr9b9tn0,true\n\
         w1_llama33-70b-inst_s42,3zwb7akd,true\n\
         w1_llama33-70b-inst_s456,0orv0eyr,true\n\
         w1_llama33-70b-inst_s789,3eryah20,true\n"
    );
    // a doubled suffix in the W&B config is repaired before matching
    assert_eq!(
        query(
            r,
            "SELECT l.training_run_id, w.config_tinker_run_id, w.tinker_run_id FROM run_links l \
             JOIN wandb_runs w ON w.run_id = l.wandb_run_id WHERE l.experiment = 'w6_rank4_t0.8_b2'"
        ),
        "training_run_id,config_tinker_run_id,tinker_run_id\n\
         34500c82-2e58-502f-84aa-9d917ed59d83:train:0,34500c82-2e58-502f-84aa-9d917ed59d83:train:0:train:0,34500c82-2e58-502f-84aa-9d917ed59d83:train:0\n"
    );
    // recorded URLs that hold a Tinker id link nothing by themselves
    assert_eq!(
        query(
            r,
            "SELECT wandb_url_id_style, count(*) AS runs, count(wandb_run_id) AS with_wandb_id FROM training_runs \
             GROUP BY wandb_url_id_style ORDER BY wandb_url_id_style NULLS LAST"
        ),
        "wandb_url_id_style,runs,with_wandb_id\ntinker_run_id,12,0\ntinker_uuid,3,0\nwandb_run_id,4,4\n,4,0\n"
    );
    // the card says the same, computed from the release
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    for row in [
        "| runs in this release | 23 | 13 |",
        "| linked by the W&B run id in the recorded URL (url_run_id) | 4 | 4 |",
        "| … of which the W&B config tinker_run_id agrees | 4 | 4 |",
        "| linked by the W&B config tinker_run_id only (config_tinker_run_id) | 8 | 8 |",
        "| … of which after repairing a doubled :train:N suffix | 4 | 4 |",
        "| linked by either rule | 12 | 12 |",
        "| not linked | 11 | 1 |",
        "| qxnbjv9s | gsm8k-qwen3-235b-moe-seed042-tinker | partial-from-console |",
        "| train/accuracy | 320 | 320 |",
        "| train/reward_mean | 350 | 350 |",
        "| train/loss | 230 | 230 |",
    ] {
        assert!(card.contains(row), "card lacks {row}:\n{card}");
    }
}

fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn tinker_wandb_history_holds_the_result_files_values() {
    let r = release();
    // w1_llama33-70b-inst_s789 (W&B 3eryah20): reward trace only; step 17 is trace[16]
    let seeds = raw_json("llama33_70b_seeds.json");
    let s789 = seeds["results"].as_array().unwrap().iter().find(|x| x["tag"] == "w1_llama33-70b-inst_s789").unwrap();
    let trace: Vec<f64> = s789["reward_trace"].as_array().unwrap().iter().map(f64_of).collect();
    assert_eq!(trace[16], 0.625);
    let rows = query_json(
        r,
        "SELECT metric, value FROM wandb_history WHERE run_id = '3eryah20' AND step = 17 ORDER BY metric",
    );
    let got: std::collections::BTreeMap<String, f64> =
        rows.iter().map(|x| (x["metric"].as_str().unwrap().to_string(), f64_of(&x["value"]))).collect();
    assert_eq!(got["train/reward_mean"].to_bits(), trace[16].to_bits());
    assert_eq!(got["train/accuracy"], 62.5, "percent in W&B");
    assert_eq!(got["train/accuracy"], 100.0 * trace[16]);
    assert_eq!(got["train/step"], 17.0);
    assert!(!got.contains_key("train/loss"), "a reward trace has no loss");
    // 1-based: W&B steps 1..=30, no step 0
    assert_eq!(
        query(
            r,
            "SELECT min(step) AS first, max(step) AS last, count(*) AS n FROM wandb_history WHERE run_id = '3eryah20' AND metric = 'train/reward_mean'"
        ),
        "first,last,n\n1,30,30\n"
    );
    // summary: percent accuracy, fractional mean reward, the Tinker id
    let w = &query_json(
        r,
        "SELECT final_accuracy, peak_accuracy, mean_last10_reward, total_steps, tinker_run_id FROM wandb_runs WHERE run_id = '3eryah20'",
    )[0];
    assert_eq!(f64_of(&w["final_accuracy"]), 100.0 * trace[29]);
    assert_eq!(f64_of(&w["peak_accuracy"]), 100.0);
    let last10: f64 = trace[20..].iter().sum::<f64>() / 10.0;
    assert!((f64_of(&w["mean_last10_reward"]) - last10).abs() < 1e-12);
    assert!((f64_of(&w["mean_last10_reward"]) - f64_of(&s789["last10_avg"])).abs() < 1e-12);
    assert_eq!(w["total_steps"], 30);
    assert_eq!(w["tinker_run_id"], s789["run_id"]);

    // w6_rank4_t0.8_b2 (W&B 2e4mchfl): a step log with loss; W&B step = step-log step
    let wave6 = raw_json("wave6_ablations.json");
    let rank4 = wave6["runs"].as_array().unwrap().iter().find(|x| x["tag"] == "w6_rank4_t0.8_b2").unwrap();
    let entry = rank4["step_log"].as_array().unwrap().iter().find(|s| s["step"] == 3).unwrap();
    let rows = query_json(
        r,
        "SELECT h.metric, h.value, s.reward, s.loss FROM run_links l \
         JOIN wandb_history h ON h.run_id = l.wandb_run_id \
         JOIN training_steps s ON s.training_run_id = l.training_run_id AND s.step = h.step \
         WHERE l.experiment = 'w6_rank4_t0.8_b2' AND h.step = 3 ORDER BY h.metric",
    );
    assert_eq!(rows.len(), 4, "{rows:?}");
    for x in &rows {
        let want = match x["metric"].as_str().unwrap() {
            "train/loss" => f64_of(&entry["loss"]),
            "train/reward_mean" => f64_of(&entry["reward"]),
            "train/accuracy" => 100.0 * f64_of(&entry["reward"]),
            "train/step" => 3.0,
            m => panic!("unexpected metric {m}"),
        };
        assert_eq!(f64_of(&x["value"]).to_bits(), want.to_bits(), "{x}");
        assert_eq!(f64_of(&x["reward"]).to_bits(), f64_of(&entry["reward"]).to_bits());
        assert_eq!(f64_of(&x["loss"]).to_bits(), f64_of(&entry["loss"]).to_bits());
    }
    // the tool-use run logs no accuracy
    assert_eq!(
        query(
            r,
            "SELECT count(*) FILTER (WHERE h.metric = 'train/accuracy') AS accuracy_rows, count(*) AS rows \
             FROM run_links l JOIN wandb_history h ON h.run_id = l.wandb_run_id WHERE l.experiment = 'cross_tool_llama-8b-inst'"
        ),
        "accuracy_rows,rows\n0,90\n"
    );
}

#[test]
fn tinker_wandb_verify_passes() {
    let o = run(bin().arg("verify").arg(release()));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn tinker_wandb_datasets_loads_every_config() {
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/load_release.py"))
        .arg(release())
        .env("HF_HOME", tempfile::tempdir().unwrap().path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(got.as_object().unwrap().len(), TABLES.len());
    for (t, n) in TABLES {
        assert_eq!(got[t]["datasets_rows"], n, "{t}");
        assert_eq!(got[t]["pyarrow_rows"], n, "{t}");
    }
}

/// The committed `.wandb` logs are what make_wandb_runs.py writes with the real client: run it
/// again (offline) on a copy of the pipeline and compare every logged value and run attribute.
#[test]
fn tinker_wandb_logs_are_what_the_script_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = tmp.path().join("pipelines/tinker-wandb");
    copy_tree(&repo().join("pipelines/tinker-wandb"), &pipeline);
    copy_tree(&repo().join("schemas/tinker-wandb"), &tmp.path().join("schemas/tinker-wandb"));
    let o = run(std::process::Command::new(python())
        .arg(pipeline.join("make_wandb_runs.py"))
        .env("WANDB_MODE", "offline")
        .env_remove("WANDB_API_KEY")
        .env("NO_PROXY", "*")
        .env("HTTPS_PROXY", "http://127.0.0.1:9"));
    assert!(o.status.success(), "make_wandb_runs.py failed: {}", stderr(&o));
    let logs: Vec<_> = walkdir::WalkDir::new(pipeline.join("raw/wandb"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(logs.len(), 13, "only the .wandb logs are kept: {logs:?}");
    assert!(logs.iter().all(|l| l.starts_with("run-") && l.ends_with(".wandb")), "{logs:?}");
    let o = run(bin().args(["build", "-q"]).arg(&pipeline).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    let again = PathBuf::from(stdout(&o).trim());
    for sql in [
        "SELECT run_id, step, metric, value FROM wandb_history ORDER BY run_id, step, metric",
        "SELECT run_id, entity, project, name, state, \"group\", job_type, last_step, config FROM wandb_runs ORDER BY run_id",
        "SELECT * FROM run_links ORDER BY training_run_id, wandb_run_id",
    ] {
        assert_eq!(query(&again, sql), query(release(), sql), "{sql}");
    }
    // summaries agree but for the times the client stamps them with
    let summaries = |r: &Path| -> Vec<Value> {
        query_json(r, "SELECT summary FROM wandb_runs ORDER BY run_id")
            .iter()
            .map(|x| {
                let mut s: serde_json::Map<String, Value> =
                    serde_json::from_str(x["summary"].as_str().unwrap()).unwrap();
                s.remove("_runtime");
                s.remove("_timestamp");
                Value::Object(s)
            })
            .collect()
    };
    let committed = summaries(release());
    assert_eq!(summaries(&again), committed);
    assert_eq!(committed[0]["final_reward"], 1.0, "{}", committed[0]);
}

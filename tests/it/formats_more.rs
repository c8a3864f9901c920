//! More of the newer tools' formats: lighteval results and details, verl generation dumps, and
//! W&B metrics logged against their own x-axis (`define_metric(…, step_metric=…)`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::*;

/// `python <pipelines/<name>/make_raw.py> <dir>`, asserting success.
fn make_raw(name: &str, dir: &Path) {
    let o = run(std::process::Command::new(python())
        .arg(repo().join("pipelines").join(name).join("make_raw.py"))
        .arg(dir)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_DATASETS_OFFLINE", "1"));
    assert!(o.status.success(), "{name}/make_raw.py failed: {}", stderr(&o));
}

/// Every file under `dir`, relative, sorted, with its bytes.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A bundled pipeline's raw/ is what its make_raw.py writes, byte for byte; the pipeline is
/// then built once per test run.
fn built(name: &'static str, cell: &'static OnceLock<(tempfile::TempDir, PathBuf)>) -> &'static Path {
    let (_, p) = cell.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        make_raw(name, &dir.path().join("raw"));
        let bundled = files_under(&repo().join("pipelines").join(name).join("raw"));
        let written = files_under(&dir.path().join("raw"));
        let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&bundled), names(&written), "{name}: raw/ is not what make_raw.py writes");
        assert!(bundled == written, "{name}: raw/ differs from what make_raw.py writes");
        let o = run(bin()
            .args(["build", "-q"])
            .arg(repo().join("pipelines").join(name))
            .arg("--releases-dir")
            .arg(dir.path().join("out")));
        assert!(o.status.success(), "build of {name} failed: {}", stderr(&o));
        (dir, PathBuf::from(stdout(&o).trim()))
    });
    p
}

fn manifest(release: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap()
}

fn rows_of(release: &Path, table: &str) -> u64 {
    let m = manifest(release);
    let t = m["tables"].as_array().unwrap().iter().find(|t| t["name"] == table).unwrap_or_else(|| panic!("{table}"));
    t["rows"].as_u64().unwrap()
}

/// No text of `needles` is in the release's data files.
fn no_texts(release: &Path, needles: &[&str]) {
    for f in std::fs::read_dir(release.join("data")).unwrap() {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        for n in needles {
            assert!(!String::from_utf8_lossy(&bytes).contains(n), "{n}");
        }
    }
}

// ------------------------------------------------------------------------------ lighteval

fn lighteval() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    built("lighteval", &BUILT)
}

#[test]
fn lighteval_results_and_details_keep_metrics_and_non_finite_values() {
    let r = lighteval();
    assert_eq!((rows_of(r, "evaluations"), rows_of(r, "eval_samples")), (6, 5));
    assert_eq!(
        query(
            r,
            "SELECT task, metric, value, stderr, isnan(stderr) AS nan_stderr, version, model_name, date_id, lighteval_sha, \
             start_time, hashes FROM evaluations ORDER BY task, metric"
        ),
        "task,metric,value,stderr,nan_stderr,version,model_name,date_id,lighteval_sha,start_time,hashes\n\
         all,acc,0.5,0.5,false,,HuggingFaceTB/SmolLM2-135M,2026-11-30T12-00-00.000000,0c1e0f3,1764504000.5,\n\
         all,em,0.5,0.5,false,,HuggingFaceTB/SmolLM2-135M,2026-11-30T12-00-00.000000,0c1e0f3,1764504000.5,\n\
         leaderboard|arc:challenge|0,acc,0.5,0.5,false,0,HuggingFaceTB/SmolLM2-135M,2026-11-30T12-00-00.000000,0c1e0f3,1764504000.5,\"{\"\"hash_examples\"\":\"\"aa00bb11cc22dd33\"\",\"\"hash_full_prompts\"\":\"\"ee44ff5566778899\"\"}\"\n\
         leaderboard|arc:challenge|0,acc_norm,1.0,0.0,false,0,HuggingFaceTB/SmolLM2-135M,2026-11-30T12-00-00.000000,0c1e0f3,1764504000.5,\"{\"\"hash_examples\"\":\"\"aa00bb11cc22dd33\"\",\"\"hash_full_prompts\"\":\"\"ee44ff5566778899\"\"}\"\n\
         lighteval|gsm8k|0,em,0.5,0.5,false,0,HuggingFaceTB/SmolLM2-135M,2026-11-30T12-00-00.000000,0c1e0f3,1764504000.5,\"{\"\"hash_examples\"\":\"\"8a0f3b1c2d4e5f60\"\",\"\"hash_full_prompts\"\":\"\"1b2c3d4e5f607182\"\"}\"\n\
         lighteval|gsm8k|0,maj@4,Infinity,NaN,true,0,HuggingFaceTB/SmolLM2-135M,2026-11-30T12-00-00.000000,0c1e0f3,1764504000.5,\"{\"\"hash_examples\"\":\"\"8a0f3b1c2d4e5f60\"\",\"\"hash_full_prompts\"\":\"\"1b2c3d4e5f607182\"\"}\"\n"
    );
    assert_eq!(
        query(
            r,
            "SELECT task, doc_id, gold_index, metrics, logprobs, argmax_logits_eq_gold, truncated_tokens_count, \
             padded_tokens_count, num_samples, _source_row FROM eval_samples ORDER BY task, doc_id"
        ),
        "task,doc_id,gold_index,metrics,logprobs,argmax_logits_eq_gold,truncated_tokens_count,padded_tokens_count,num_samples,_source_row\n\
         leaderboard|arc:challenge|0,0,[0],\"{\"\"acc\"\":1.0,\"\"acc_norm\"\":1.0}\",\"[-0.5,-1.25,\"\"-Infinity\"\"]\",[true],1,0,1,1\n\
         leaderboard|arc:challenge|0,1,\"[1,2]\",\"{\"\"acc\"\":1.0,\"\"acc_norm\"\":1.0}\",\"[-2.0,-0.25,-3.0]\",[true],0,0,1,2\n\
         lighteval|gsm8k|0,0,0,\"{\"\"em\"\":1.0,\"\"maj@4\"\":1.0}\",[],[],0,0,1,1\n\
         lighteval|gsm8k|0,1,0,\"{\"\"em\"\":0.0,\"\"maj@4\"\":0.0}\",[],[],0,1,1,2\n\
         lighteval|gsm8k|0,2,0,\"{\"\"em\"\":\"\"NaN\"\",\"\"maj@4\"\":\"\"Infinity\"\"}\",[],[],0,2,1,3\n"
    );
    // no query, choice or generated text
    no_texts(r, &["Tom has 3 apples", "Answer with a letter"]);
    // read back by pyarrow: the non-finite values are IEEE values
    let data = r.join("data");
    let o = run(std::process::Command::new(python()).arg("-c").arg(format!(
        "import pyarrow.parquet as pq, glob, math\n\
         t = pq.read_table(glob.glob({:?} + '/evaluations*.parquet')[0]).to_pylist()\n\
         v = [(r['metric'], r['value'], r['stderr']) for r in t if r['task'] == 'lighteval|gsm8k|0']\n\
         assert sorted(v, key=lambda x: x[0])[1][1] == math.inf and math.isnan(sorted(v, key=lambda x: x[0])[1][2]), v\n\
         print(len(t))",
        data.to_str().unwrap()
    )));
    assert_eq!(stdout(&o).trim(), "6", "{}", stderr(&o));
}

#[test]
fn lighteval_details_keep_texts_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_raw("lighteval", &dir.join("raw"));
    std::fs::write(
        dir.join("pipeline.toml"),
        one_source(
            "texts",
            "raw/details/*/*/*/*.parquet",
            "lighteval-details",
            "keep_text = true\n",
            "SELECT task, doc_id, query, instruction, choices, text FROM raw",
            "",
        ),
    )
    .unwrap();
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "texts"), "SELECT * FROM t WHERE doc_id = '0' ORDER BY task"),
        "task,doc_id,query,instruction,choices,text\n\
         leaderboard|arc:challenge|0,0,Question 0: which is right?,Answer with a letter.,\"[\"\" A\"\",\"\" B\"\",\"\" C\"\"]\",[]\n\
         lighteval|gsm8k|0,0,Tom has 3 apples and buys 2 more. How many apples does he have?,,\"[\"\"5\"\"]\",\"[\"\"5\"\"]\"\n"
    );
}

#[test]
fn lighteval_bad_rows_name_file_row_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a details file whose metric values are strings (as a broken writer leaves them)
    let o = run(std::process::Command::new(python()).arg("-c").arg(format!(
        "import pyarrow as pa, pyarrow.parquet as pq\n\
         doc = [{{'query': 'q', 'choices': ['a'], 'gold_index': 0, 'id': '0', 'task_name': 't|x|0'}},\n\
                {{'query': 'q', 'choices': ['a'], 'gold_index': 0, 'id': '1', 'task_name': 't|x|0'}}]\n\
         t = pa.table({{'doc': doc, 'metric': pa.array([{{'em': '1.0'}}, {{'em': 'high'}}]), 'model_response': [{{'text': ['a']}}, {{'text': ['b']}}]}})\n\
         pq.write_table(t, {:?})",
        dir.join("details_t|x|0_2026-01-01T00-00-00.parquet").to_str().unwrap()
    )));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(
        dir.join("results_2026-01-01T00-00-00.json"),
        "{\"config_general\": {\"model_name\": \"m\"},\n \"results\": {\"t|x|0\": {\"em\": 0.5, \"em_stderr\": \"wide\"}}}\n",
    )
    .unwrap();
    let toml = |path: &str, format: &str| one_source("bad", path, format, "", "SELECT * FROM raw", "");
    std::fs::write(dir.join("pipeline.toml"), toml("details_*.parquet", "lighteval-details")).unwrap();
    let o = build(dir, &[]);
    assert_violations(
        &o,
        2,
        &[
            "details_t|x|0_2026-01-01T00-00-00.parquet:1",
            "$.metric.em",
            "expected a number, found string \"1.0\"",
            "details_t|x|0_2026-01-01T00-00-00.parquet:2",
            "expected a number, found string \"high\"",
        ],
    );
    std::fs::write(dir.join("pipeline.toml"), toml("results_*.json", "lighteval-results")).unwrap();
    let o = build(dir, &["--force"]);
    assert_violations(
        &o,
        1,
        &[
            "results_2026-01-01T00-00-00.json",
            "$.results[\"t|x|0\"].em_stderr",
            "expected a number, found string \"wide\"",
        ],
    );
    // a Parquet file that is no lighteval details is an error naming what it lacks
    let o = run(std::process::Command::new(python()).arg("-c").arg(format!(
        "import pyarrow as pa, pyarrow.parquet as pq\npq.write_table(pa.table({{'x': [1]}}), {:?})",
        dir.join("details_y_2026.parquet").to_str().unwrap()
    )));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(dir.join("pipeline.toml"), toml("details_y_*.parquet", "lighteval-details")).unwrap();
    let o = build(dir, &["--force"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("details_y_2026.parquet") && err.contains("missing [\"doc\", \"metric\", \"model_response\"]"),
        "{err}"
    );
}

// ------------------------------------------------------------------------------ verl

fn verl() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    built("verl", &BUILT)
}

#[test]
fn verl_generations_keep_steps_scores_and_reward_extras() {
    let r = verl();
    assert_eq!(rows_of(r, "eval_samples"), 8);
    assert_eq!(
        query(
            r,
            "SELECT phase, step, sample_index, score, isnan(score) AS nan, gts, extra, _source_file, _source_line \
             FROM eval_samples ORDER BY phase, step, sample_index"
        ),
        "phase,step,sample_index,score,nan,gts,extra,_source_file,_source_line\n\
         rollout,1,0,1.0,false,5,\"{\"\"request_id\"\":\"\"req-0\"\",\"\"format_penalty\"\":0.0}\",raw/rollout/1.jsonl,1\n\
         rollout,1,1,-Infinity,false,42,\"{\"\"request_id\"\":\"\"req-1\"\",\"\"format_penalty\"\":\"\"Infinity\"\"}\",raw/rollout/1.jsonl,2\n\
         val,0,0,1.0,false,5,\"{\"\"reward\"\":1.0,\"\"acc\"\":true,\"\"pred\"\":\"\"5\"\"}\",raw/val/0.jsonl,1\n\
         val,0,1,0.0,false,42,\"{\"\"reward\"\":0.0,\"\"acc\"\":false,\"\"pred\"\":\"\"40\"\"}\",raw/val/0.jsonl,2\n\
         val,0,2,0.0,false,\"[\"\"11\"\",\"\"13\"\"]\",\"{\"\"reward\"\":0.0,\"\"acc\"\":false,\"\"pred\"\":\"\"9.\"\"}\",raw/val/0.jsonl,3\n\
         val,10,0,1.0,false,5,\"{\"\"reward\"\":1.0,\"\"acc\"\":true,\"\"pred\"\":\"\"5\"\"}\",raw/val/10.jsonl,1\n\
         val,10,1,1.0,false,42,\"{\"\"reward\"\":1.0,\"\"acc\"\":true,\"\"pred\"\":\"\"42\"\"}\",raw/val/10.jsonl,2\n\
         val,10,2,NaN,true,\"[\"\"11\"\",\"\"13\"\"]\",\"{\"\"reward\"\":\"\"NaN\"\",\"\"acc\"\":false,\"\"pred\"\":\"\"prime.\"\"}\",raw/val/10.jsonl,3\n"
    );
    no_texts(r, &["Think step by step", "11 is prime"]);
}

#[test]
fn verl_bad_lines_name_file_line_and_path_and_texts_stay_out_of_rejects() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("val")).unwrap();
    std::fs::write(
        dir.join("val/3.jsonl"),
        "{\"input\": \"secret prompt\", \"output\": \"o\", \"gts\": \"1\", \"score\": 1.0, \"step\": 3}\n\
         {\"input\": \"secret prompt\", \"output\": \"o\", \"gts\": \"1\", \"score\": \"high\", \"step\": 3}\n\
         {\"input\": \"q\", \"output\": \"o\", \"gts\": \"1\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        one_source("bad", "val/*.jsonl", "verl-generations", "", "SELECT step, score FROM raw", ""),
    )
    .unwrap();
    let o = build(dir, &[]);
    assert_violations(
        &o,
        2,
        &[
            "val/3.jsonl:2",
            "$.score",
            "expected a number, found string \"high\"",
            "val/3.jsonl:3",
            "expected a verl generation (`input`, `output`, `gts`, `score`, `step`, …), missing [\"step\", \"score\"]",
        ],
    );
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "bad");
    assert_eq!(query(&r, "SELECT step, score FROM t"), "step,score\n3,1.0\n");
    let rejects = std::fs::read_to_string(r.join("rejects/raw.jsonl")).unwrap();
    assert!(rejects.contains("\"high\"") && !rejects.contains("secret prompt"), "{rejects}");
}

#[test]
fn verl_file_logger_lines_are_read_in_long_form_and_a_resumed_run_keeps_its_last_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("outputs");
    // `$VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl`: validation before training at
    // step 0, training steps 1 to 4 (validation at 3), killed; resumed from step 2's
    // checkpoint: validation at 2 again, then steps 3 to 5
    let line = |step: u32, data: &str| format!("{{\"step\": {step}, \"data\": {{{data}}}}}\n");
    let mut log = line(0, "\"val-core/openai/gsm8k/reward/mean@1\": 0.5");
    for step in 1..=4 {
        log.push_str(&line(step, &format!("\"actor/pg_loss\": {step}.5, \"critic/score/mean\": NaN")));
        if step == 3 {
            log.push_str(&line(3, "\"val-core/openai/gsm8k/reward/mean@1\": 0.6"));
        }
    }
    log.push_str(&line(2, "\"val-core/openai/gsm8k/reward/mean@1\": 0.55"));
    for step in 3..=5 {
        log.push_str(&line(step, &format!("\"actor/pg_loss\": {step}.25, \"critic/score/mean\": 0.{step}")));
    }
    write(&logs, "verl_grpo_gsm8k/qwen2_5_grpo.jsonl", &log);
    write(&logs, "val/0.jsonl", "{\"input\": \"q\", \"output\": \"a\", \"gts\": \"5\", \"score\": 1.0, \"step\": 0}\n");
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&logs).args(["--name", "v", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let metrics = doc["sources"].as_array().unwrap().iter().find(|s| s["format"] == "verl-metrics").expect("{doc}");
    assert_eq!(metrics["path"], serde_json::json!(["raw/verl_grpo_gsm8k/{experiment}.jsonl"]), "{doc}");
    let table = doc["tables"].as_array().unwrap().iter().find(|t| t["name"] == "verl_metrics").expect("{doc}");
    assert_eq!(table["primary_key"], serde_json::json!(["experiment", "step", "metric"]), "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/v/pipeline.toml")).unwrap();
    assert!(toml.contains("on_duplicate_key = \"keep-last\"") && toml.contains("tags = [\"verl\"]"), "{toml}");
    assert!(!toml.contains("record_columns"), "{toml}");
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/v"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let r = tmp.path().join("releases/v/0.1.0");
    // the first attempt's steps 3 and 4 are set aside (4 rows), each row on its own: its
    // validation at 3, logged once, is kept, as the training rows of step 2, at which the
    // resumed run validated again (the checkpoint it loaded holds that step)
    assert_eq!(
        query(&r, "SELECT step, metric, value, _source_line FROM verl_metrics WHERE step >= 2 ORDER BY step, metric"),
        "step,metric,value,_source_line\n\
         2,actor/pg_loss,2.5,3\n\
         2,critic/score/mean,NaN,3\n\
         2,val-core/openai/gsm8k/reward/mean@1,0.55,7\n\
         3,actor/pg_loss,3.25,8\n\
         3,critic/score/mean,0.3,8\n\
         3,val-core/openai/gsm8k/reward/mean@1,0.6,5\n\
         4,actor/pg_loss,4.25,9\n\
         4,critic/score/mean,0.4,9\n\
         5,actor/pg_loss,5.25,10\n\
         5,critic/score/mean,0.5,10\n"
    );
    assert!(stderr(&o).contains("superseded by the row at raw/verl_grpo_gsm8k/qwen2_5_grpo.jsonl:8"), "{}", stderr(&o));
    // the dumps' prompts and responses are left out, and both pipeline.toml and the card say so
    assert!(
        toml.contains(
            "keep_text = false   # the texts `input`, `output` are left out (true reads them: then select them in the \
             table's query and declare them in its schema)"
        ),
        "{toml}"
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(
        card.contains(
            "The source `verl_generations_raw` (verl-generations) leaves the texts `input`, `output` out \
             (`keep_text = false`): no table holds them."
        ),
        "{card}"
    );
    // a line whose data is no object is a bad record, named with its place
    write(&logs, "verl_grpo_gsm8k/qwen2_5_grpo.jsonl", "{\"step\": 1, \"data\": [0.5]}\n");
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/v", "--force"]));
    assert_violations(
        &o,
        1,
        &["raw/verl_grpo_gsm8k/qwen2_5_grpo.jsonl:1", "$.data", "expected an object of metrics, found an array"],
    );
}

// ------------------------------------------------------------------------------ transformers Trainer states (TRL)

fn trl() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    built("trl", &BUILT)
}

#[test]
fn trainer_states_give_every_logged_value_of_every_run() {
    let r = trl();
    // two runs: four log calls of 14 values and the end's 5 speed metrics each
    assert_eq!(rows_of(r, "training_log"), 2 * (4 * 14 + 5));
    assert_eq!(
        query(
            r,
            "SELECT run, step, epoch, entry, value, isnan(value) AS nan FROM training_log \
             WHERE metric = 'grad_norm' AND run = 'grpo-lr3e-06' ORDER BY step"
        ),
        "run,step,epoch,entry,value,nan\n\
         grpo-lr3e-06,5,0.25,0,0.404108,false\n\
         grpo-lr3e-06,10,0.5,1,0.445598,false\n\
         grpo-lr3e-06,15,0.75,2,NaN,true\n\
         grpo-lr3e-06,20,1.0,3,0.591295,false\n"
    );
    // the end of training: the speed metrics, logged after the last step's values
    assert_eq!(
        query(r, "SELECT run, entry, value FROM training_log WHERE metric = 'train_runtime' ORDER BY run"),
        "run,entry,value\ngrpo-lr1e-06,4,612.5\ngrpo-lr3e-06,4,612.5\n"
    );
}

#[test]
fn init_reads_each_runs_trainer_state_once() {
    // the output folders' states are read; the checkpoints' earlier saves are left out, said
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    make_raw("trl", &folder);
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let left: Vec<&str> = doc["not_read"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["file"].as_str().unwrap())
        .filter(|f| f.ends_with("trainer_state.json"))
        .collect();
    assert_eq!(
        left,
        [
            "grpo-lr1e-06/checkpoint-10/trainer_state.json",
            "grpo-lr1e-06/checkpoint-20/trainer_state.json",
            "grpo-lr3e-06/checkpoint-10/trainer_state.json",
            "grpo-lr3e-06/checkpoint-20/trainer_state.json",
        ]
    );
    let first_state = doc["not_read"].as_array().unwrap().iter().find(|n| n["file"] == left[0]).unwrap();
    assert!(
        first_state["reason"]
            .as_str()
            .unwrap()
            .contains("no later than grpo-lr1e-06/trainer_state.json, which holds the log as far or further"),
        "{doc}"
    );
    // what each checkpoint saved of the model is no table: left out as such, by globs
    let model: Vec<(&str, &str)> = doc["not_read"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["file"].as_str().unwrap(), n["reason"].as_str().unwrap()))
        .filter(|(f, _)| f.starts_with("grpo-lr1e-06/checkpoint-10/"))
        .collect();
    assert_eq!(
        model.iter().map(|(f, _)| f.rsplit('/').next().unwrap()).collect::<Vec<_>>(),
        [
            "adapter_config.json",
            "adapter_model.safetensors",
            "config.json",
            "generation_config.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "trainer_state.json"
        ]
    );
    for (f, reason) in &model[..6] {
        let kind = if f.ends_with(".safetensors") {
            "not a format runpack reads"
        } else {
            "a model's or tokenizer's own file"
        };
        assert!(reason.starts_with(kind), "{f}: {reason}");
    }
    let tables: Vec<&str> = doc["tables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tables, ["trainer_log", "trainer_runs", "train_results"], "{doc}");
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/x/pipeline.toml")).unwrap();
    // the Trainer's metrics files are read as they are: no field declared for them
    assert!(!toml.contains("[[source.field]]"), "{toml}");
    let list = toml.split("not_read = [\n").nth(1).unwrap().split("\n]").next().unwrap();
    let not_read: Vec<&str> = list.lines().map(|l| l.split('"').nth(1).unwrap()).collect();
    assert_eq!(
        not_read,
        [
            "raw/*/adapter_config.json",
            "raw/*/checkpoint-*/adapter_config.json",
            "raw/*/checkpoint-*/config.json",
            "raw/*/checkpoint-*/generation_config.json",
            "raw/*/checkpoint-*/tokenizer.json",
            "raw/*/checkpoint-*/tokenizer_config.json",
            "raw/*/config.json",
            "raw/*/generation_config.json",
            "raw/*/tokenizer.json",
            "raw/*/tokenizer_config.json",
            "raw/*/all_results.json",
            "raw/grpo-lr1e-06/checkpoint-10/trainer_state.json",
            "raw/grpo-lr1e-06/checkpoint-20/trainer_state.json",
            "raw/grpo-lr3e-06/checkpoint-10/trainer_state.json",
            "raw/grpo-lr3e-06/checkpoint-20/trainer_state.json",
        ],
        "{toml}"
    );
    // a run resumed after init saves a checkpoint past the state read: a build names it, and
    // the release's card says that its tables stop at the earlier save
    let later = folder.join("grpo-lr1e-06/checkpoint-30");
    std::fs::create_dir_all(&later).unwrap();
    std::fs::copy(folder.join("grpo-lr1e-06/checkpoint-20/trainer_state.json"), later.join("trainer_state.json"))
        .unwrap();
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/x"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("read by no source")
            && stderr(&o).contains("grpo-lr1e-06/checkpoint-30/trainer_state.json"),
        "{}",
        stderr(&o)
    );
    // (a save at a step the read one passed is no later save)
    assert!(!stderr(&o).contains("is a save of the run"), "{}", stderr(&o));
    let state = later.join("trainer_state.json");
    let mut doc30: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let step = doc30["global_step"].as_u64().unwrap();
    doc30["global_step"] = serde_json::json!(step + 1000);
    std::fs::write(&state, doc30.to_string()).unwrap();
    let o = run(bin().current_dir(tmp.path()).args(["build", "--release-version", "0.0.2", "pipelines/x"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let said = format!(
        "warning: trainer_log_raw: raw/grpo-lr1e-06/checkpoint-30/trainer_state.json is a save of the run in \
         raw/grpo-lr1e-06 at step {}, later than raw/grpo-lr1e-06/trainer_state.json",
        step + 1000
    );
    assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    let card = std::fs::read_to_string(tmp.path().join("releases/x/0.0.2/README.md")).unwrap();
    assert!(card.contains("checkpoint-30/trainer_state.json is a save of the run"), "{card}");
    // another run's state in the folder (other planned steps) is no later save; one cut short
    // while saving, past the step read, may be
    doc30["max_steps"] = serde_json::json!(999_999);
    std::fs::write(&state, doc30.to_string()).unwrap();
    let o = run(bin().current_dir(tmp.path()).args(["build", "--release-version", "0.0.3", "pipelines/x"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("is a save of the run"), "{}", stderr(&o));
    let text = doc30.to_string();
    std::fs::write(&state, &text[..text.len() / 2]).unwrap();
    let o = run(bin().current_dir(tmp.path()).args(["build", "--release-version", "0.0.4", "pipelines/x"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "raw/grpo-lr1e-06/checkpoint-30/trainer_state.json, a save of the run in raw/grpo-lr1e-06 no source \
                reads, does not read as a Trainer state (";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    std::fs::remove_dir_all(&later).unwrap();
    let source = &doc["sources"][0];
    assert_eq!(source["format"], "trainer-state");
    assert_eq!(
        source["path"],
        serde_json::json!(["raw/grpo-lr1e-06/trainer_state.json", "raw/grpo-lr3e-06/trainer_state.json"])
    );
    assert_eq!(doc["tables"][0]["primary_key"], serde_json::json!(["output_dir", "step", "metric", "entry"]), "{doc}");
    init_and_build("trl", &[("trainer_log", 122), ("trainer_runs", 2), ("train_results", 2)], &["trainer-state"]);
    // a run killed before its end (its latest checkpoint read) beside one that ended: one
    // table, each run named by its output folder
    let (_tmp, release) = init_and_build_without(
        "trl",
        &["grpo-lr3e-06/trainer_state.json", "grpo-lr3e-06/train_results.json", "grpo-lr3e-06/all_results.json"],
        &[("trainer_log", 4 * 14 + 5 + 4 * 14), ("trainer_runs", 2), ("train_results", 1)],
        &["trainer-state", "trainer-runs"],
    );
    // the one run's split metrics name their run, as two runs' would
    assert_eq!(
        query(&release, "SELECT run, _source_file FROM train_results"),
        "run,_source_file\ngrpo-lr1e-06,raw/grpo-lr1e-06/train_results.json\n"
    );
    // a state in the output folder older than a later checkpoint's (training resumed and
    // killed): the later one is read
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    make_raw("trl", &folder);
    let run_dir = folder.join("grpo-lr1e-06");
    let later = std::fs::read_to_string(run_dir.join("trainer_state.json"))
        .unwrap()
        .replace("\"global_step\": 20", "\"global_step\": 30")
        .replace("\"step\": 20\n", "\"step\": 20\n    },\n    {\n      \"loss\": 0.5,\n      \"step\": 30\n");
    std::fs::create_dir_all(run_dir.join("checkpoint-30")).unwrap();
    std::fs::write(run_dir.join("checkpoint-30/trainer_state.json"), later).unwrap();
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let paths = doc["sources"][0]["path"].to_string();
    assert!(paths.contains("grpo-lr1e-06/checkpoint-30/trainer_state.json"), "{paths}");
}

/// A run resumed from an earlier checkpoint after it had gone further, saved since and
/// stopped: the save written last is read, and the branch it went back from is left out, said.
#[test]
fn a_run_that_went_back_to_an_earlier_checkpoint_is_read_from_the_branch_it_went_on_with() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    let script = r#"
import json, os, sys
run = os.path.join(sys.argv[1], "grpo")
def save(name, log, when):
    os.makedirs(os.path.join(run, name), exist_ok=True)
    path = os.path.join(run, name, "trainer_state.json")
    with open(path, "w") as f:
        json.dump({"global_step": log[-1]["step"], "max_steps": 40, "log_history": log}, f, indent=2)
    os.utime(path, (when, when))
log = [{"loss": 1.0, "step": 5}, {"loss": 0.9, "step": 10}]
save("checkpoint-10", log, 100)
log += [{"loss": 0.8, "step": 15}, {"loss": 0.7, "step": 20}]
save("checkpoint-20", log, 200)
save("checkpoint-30", log + [{"loss": 9.99, "step": 25}, {"loss": 9.99, "step": 30}], 300)
save("checkpoint-25", log + [{"loss": 0.45, "step": 25}], 400)
"#;
    let o = run(std::process::Command::new(python()).args(["-c", script]).arg(&folder));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["sources"][0]["path"], serde_json::json!(["raw/grpo/checkpoint-25/trainer_state.json"]), "{doc}");
    let abandoned =
        doc["not_read"].as_array().unwrap().iter().find(|n| n["file"] == "grpo/checkpoint-30/trainer_state.json");
    assert!(
        abandoned.unwrap()["reason"].as_str().unwrap().starts_with(
            "a save of a branch its run went back from: the run went on from grpo/checkpoint-25/trainer_state.json"
        ),
        "{doc}"
    );
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    assert_eq!(
        query(&release, "SELECT step, value FROM trainer_log WHERE step > 15 ORDER BY step"),
        "step,value\n20,0.7\n25,0.45\n"
    );
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains("a save of a branch its run went back from"), "{card}");
}

#[test]
fn what_is_no_trainer_state_is_said_at_its_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("trainer_state.json"),
        "{\"global_step\": 2, \"log_history\": [{\"loss\": 1.0, \"step\": 1}, {\"loss\": 0.5, \"step\": \"two\"}]}",
    )
    .unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        one_source("ts", "trainer_state.json", "trainer-state", "", "SELECT step, metric, value FROM raw", ""),
    )
    .unwrap();
    let o = build(dir, &[]);
    assert_violations(
        &o,
        1,
        &[
            "trainer_state.json:/log_history/1",
            "$.step",
            "expected the step logged at (an integer, 0 or more), found string \"two\"",
        ],
    );
}

// ------------------------------------------------------------------------------ W&B x-axes

/// A run logged offline by the real `wandb` client with `define_metric`: eval metrics (a glob)
/// against `eval/step`, `test/loss` against `epoch`, and `train/loss` with a summary only.
const DEFINE_METRIC_RUN: &str = r#"
import math, os, sys
os.environ.update(WANDB_MODE="offline", WANDB_DIR=sys.argv[1], WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
import wandb
run = wandb.init(project="axes", id="axes01", config={"lr": 0.1})
run.define_metric("eval/step")
run.define_metric("eval/*", step_metric="eval/step")
run.define_metric("test/loss", step_metric="epoch")
run.define_metric("train/loss", summary="min")
for i in range(4):
    run.log({"train/loss": 1.0 / (i + 1)})
    if i % 2 == 1:
        run.log({"eval/step": 100 * i, "eval/acc": [math.nan, math.inf][i // 2]})
run.log({"eval/acc": -math.inf})
run.log({"epoch": 2.5, "test/loss": 0.25})
run.finish()
"#;

#[test]
fn wandb_metrics_defined_against_a_step_metric_keep_their_own_x() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    wandb_client(DEFINE_METRIC_RUN, dir);
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"axes\"\n[[source]]\nname = \"h\"\npath = \"wandb/**\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"history\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT step, metric, value, x_axis, x FROM h\"\n",
    )
    .unwrap();
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // eval/acc sits at _step 2, 4 and 6, and at eval/step 100, 300 and (copied by the client
    // into the row it logs without it) 300; the step metric itself has no x-axis
    assert_eq!(
        query(&release(dir, "axes"), "SELECT * FROM t ORDER BY step, metric"),
        "step,metric,value,x_axis,x\n\
         0,train/loss,1.0,,\n\
         1,train/loss,0.5,,\n\
         2,eval/acc,NaN,eval/step,100.0\n\
         2,eval/step,100.0,,\n\
         3,train/loss,0.3333333333333333,,\n\
         4,train/loss,0.25,,\n\
         5,eval/acc,Infinity,eval/step,300.0\n\
         5,eval/step,300.0,,\n\
         6,eval/acc,-Infinity,eval/step,300.0\n\
         6,eval/step,300.0,,\n\
         7,epoch,2.5,,\n\
         7,test/loss,0.25,epoch,2.5\n"
    );
    // the runs table: the client writes the run's environment in the log, not in
    // wandb-metadata.json; it is the run's metadata, redacted as the file would be
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"axes\"\n[[source]]\nname = \"h\"\npath = \"wandb/**\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"runs\"\nredact = [\"host\"]\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT run_id, metadata FROM h\"\n",
    )
    .unwrap();
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(
            &release(dir, "axes"),
            "SELECT run_id, json_get(metadata, 'host') AS host, json_get(metadata, 'python') LIKE '%Python 3.%' AS py FROM t"
        ),
        "run_id,host,py\naxes01,\"\"\"REDACTED\"\"\",true\n"
    );
    assert!(!stderr(&o).contains("environment record"), "{}", stderr(&o));
    // and the card says what was redacted
    let card = std::fs::read_to_string(release(dir, "axes").join("README.md")).unwrap();
    assert!(card.contains("- source `h`: the runs' `metadata` has `host` replaced by `REDACTED`"), "{card}");
    // the record edited by protobuf's own classes: a GPU on NUMA node 0 keeps its node (an
    // `optional` field), and a time that is no timestamp is the run's bad record, not clamped
    let run_dir = std::fs::read_dir(dir.join("wandb"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("offline-run-"))
        .unwrap();
    let log = run_dir.join("run-axes01.wandb");
    let edit_record = |kind: &str, change: &str| {
        let script = format!(
            "import sys; sys.path.insert(0, {:?})\n\
             from wandb_log import records, write\n\
             from wandb.proto import wandb_internal_pb2 as pb\n\
             out = []\n\
             for data in records(sys.argv[1]):\n\
             \x20   r = pb.Record(); r.ParseFromString(data)\n\
             \x20   if r.WhichOneof('record_type') == '{kind}':\n\
             \x20       e = getattr(r, '{kind}')\n\
             \x20       {change}\n\
             \x20   out.append(r.SerializeToString())\n\
             write(sys.argv[1], out)\n",
            repo().join("tests/python").display().to_string()
        );
        python_edit(&script, &log);
    };
    let edit = |change: &str| edit_record("environment", change);
    // (the client writes two records, the software's then the hardware's, merged into one)
    edit("if e.cpu_count: g = e.gpu_nvidia.add(); g.name = 'H100'; g.numa_node = 0");
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "axes"), "SELECT json_get(metadata, 'gpu_nvidia') AS g FROM t"),
        "g\n\"[{\"\"name\"\":\"\"H100\"\",\"\"numaNode\"\":0}]\"\n"
    );
    edit("e.started_at.nanos = -1");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the run's environment record: started_at: seconds ")
            && stderr(&o).contains(" and nanos -1 are no timestamp"),
        "{}",
        stderr(&o)
    );
    // the run record's start time too, rather than the environment's taken in its place
    edit("e.started_at.nanos = 5");
    edit_record("run", "e.start_time.seconds = 253402300800");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("the run record's start_time: seconds 253402300800 and nanos "), "{}", stderr(&o));
}

#[test]
fn credentials_in_a_wandb_run_s_texts_are_replaced_and_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = "import sys, wandb\n\
                  r = wandb.init(project='p', id='cred0001', dir=sys.argv[1], notes='see ghp_abcdefghijklmnopqrstuvwxyz0123456789',\n\
                  \x20   config={'api_key': 'hf_abcdefghijklmnopqrstuvwxyz123456', 'remote': 'https://user:pass@github.com/a/b.git', 'lr': 0.1,\n\
                  \x20           'wandb_api_key': '9f8e7d6c5b4a39281706f5e4d3c2b1a098765432', 'eos_token': '<|endoftext|>'})\n\
                  r.log({'loss': 0.5, 'msg': 'called with key hf_HISTSECRETabcdefghijklmnopq'})\n\
                  r.summary['note'] = 'token sk-abcdefghijklmnopqrstuvwxyz'\n\
                  r.finish()\n";
    wandb_client(script, dir);
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"cred\"\n[[source]]\nname = \"r\"\npath = \"wandb/**\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"runs\"\n\
         [[source]]\nname = \"h\"\npath = \"wandb/**\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"history\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT run_id, notes, config, config_raw, summary FROM r\"\n\
         [[table]]\nname = \"history\"\nquery = \"SELECT metric, value, value_text FROM h\"\n",
    )
    .unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 run holds credentials (a URL's user and password, access tokens) in its texts, replaced by REDACTED: cred0001 (notes, config, config_raw, summary)"),
        "{}",
        stderr(&o)
    );
    // a logged text too
    assert!(
        stderr(&o).contains("1 run holds credentials (a URL's user and password, access tokens) in its texts, replaced by REDACTED: cred0001 (value_text of msg)"),
        "{}",
        stderr(&o)
    );
    let r = release(dir, "cred");
    // no column holds them (Parquet pages are compressed: asked of the values, not the bytes)
    assert_eq!(
        query(
            &r,
            "SELECT count(*) AS n FROM t WHERE concat(notes, config, config_raw, summary) ~ \
             '(ghp_abcdefghij|hf_abcdefghij|user:pass|sk-abcdefghij|9f8e7d6c5b4a)'"
        ),
        "n\n0\n"
    );
    // a key that names a credential, in the config as read and as written; a tokenizer's
    // special token is no secret
    assert_eq!(
        query(
            &r,
            "SELECT json_get(config, 'wandb_api_key') AS k, json_get(config_raw, 'wandb_api_key') AS raw, json_get(config, 'eos_token') AS eos FROM t"
        ),
        "k,raw,eos\n\"\"\"REDACTED\"\"\",\"\"\"REDACTED\"\"\",\"\"\"<|endoftext|>\"\"\"\n"
    );
    assert_eq!(
        query(&r, "SELECT value_text FROM history WHERE metric = 'msg'"),
        "value_text\n\"\"\"called with key REDACTED\"\"\"\n"
    );
    assert!(query(&r, "SELECT summary FROM t").contains("token REDACTED"));
    assert_eq!(
        query(&r, "SELECT notes, json_get(config, 'remote') AS remote, json_get(config, 'lr') AS lr FROM t"),
        "notes,remote,lr\nsee REDACTED,\"\"\"https://REDACTED@github.com/a/b.git\"\"\",0.1\n"
    );
}

#[test]
fn a_synced_run_config_names_the_x_axes_of_a_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files = dir.join("wandb/run-20261130_120000-sync01/files");
    std::fs::create_dir_all(&files).unwrap();
    // config.yaml as W&B writes it for a synced run: `_wandb.value.m` lists the definitions by
    // MetricRecord field number, "5" the 1-based index of the step metric in the list
    std::fs::write(
        files.join("config.yaml"),
        "_wandb:\n  value:\n    m:\n    - \"1\": train/global_step\n      \"6\":\n      - 3\n    - \"1\": train/reward\n      \"5\": 1\n      \"6\":\n      - 1\n      - 3\nlr:\n  value: 0.1\n",
    )
    .unwrap();
    std::fs::write(
        files.join("wandb-history.jsonl"),
        "{\"_step\": 0, \"train/global_step\": 8, \"train/reward\": 0.5, \"loss\": 2.0}\n\
         {\"_step\": 1, \"train/global_step\": 16, \"train/reward\": NaN}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"axes\"\n[[source]]\nname = \"h\"\npath = \"wandb/**\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"history\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT step, metric, value, x_axis, x FROM h\"\n",
    )
    .unwrap();
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "axes"), "SELECT * FROM t ORDER BY step, metric"),
        "step,metric,value,x_axis,x\n\
         0,loss,2.0,,\n\
         0,train/global_step,8.0,,\n\
         0,train/reward,0.5,train/global_step,8.0\n\
         1,train/global_step,16.0,,\n\
         1,train/reward,NaN,train/global_step,16.0\n"
    );
}

// ------------------------------------------------------------------------------ dependency-graph scores

fn graph_eval() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    built("graph-eval", &BUILT)
}

#[test]
fn graph_pass_rates_and_score_reports_keep_their_shape() {
    let r = graph_eval();
    assert_eq!((rows_of(r, "pass_rates"), rows_of(r, "scores")), (16, 5));
    assert_eq!(
        query(
            r,
            "SELECT checkpoint, template, op, k, pass_at_k, prompts FROM pass_rates \
             WHERE template = 'story' OR template IS NULL ORDER BY template NULLS LAST, op NULLS LAST, k"
        ),
        "checkpoint,template,op,k,pass_at_k,prompts\n\
         checkpoint-200,story,2,1,1.0,2\n\
         checkpoint-200,story,2,2,1.0,2\n\
         checkpoint-200,story,,1,1.0,2\n\
         checkpoint-200,story,,2,1.0,2\n\
         checkpoint-200,,10,1,0.25,4\n\
         checkpoint-200,,10,2,0.5,4\n\
         checkpoint-200,,2,1,0.8,6\n\
         checkpoint-200,,2,2,1.0,6\n\
         checkpoint-200,,,1,0.6,10\n\
         checkpoint-200,,,2,0.8,10\n"
    );
    assert_eq!(
        query(
            r,
            "SELECT run, scope, file, skipped, total, perfect, files, skipped_files, template_stats FROM scores \
             ORDER BY run, scope DESC, file"
        ),
        "run,scope,file,skipped,total,perfect,files,skipped_files,template_stats\n\
         1,file,results/eval/checkpoint-100_id_generations.jsonl,false,8,4,,,\"{\"\"default\"\":{\"\"total\"\":8,\"\"perfect\"\":4}}\"\n\
         1,aggregate,,,8,4,1,0,\"{\"\"default\"\":{\"\"total\"\":8}}\"\n\
         2,file,results/eval/checkpoint-100_id_generations.jsonl,true,,,,,\n\
         2,file,results/eval/checkpoint-200_id_generations.jsonl,false,8,6,,,\"{\"\"default\"\":{\"\"total\"\":6,\"\"perfect\"\":5},\"\"story\"\":{\"\"total\"\":2,\"\"perfect\"\":1}}\"\n\
         2,aggregate,,,8,6,1,1,\"{\"\"default\"\":{\"\"total\"\":8}}\"\n"
    );
}

#[test]
fn graph_bad_values_name_file_line_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("graph_results/ck")).unwrap();
    std::fs::write(
        dir.join("graph_results/ck/results.json"),
        "{\"files\": {\"a.graph_results.jsonl\": {\"total\": {\"per_op_pass_at_k\": {\"2\": {\"pass@1\": \"high\"}}, \
         \"total_pass_at_k\": {\"pass_at_1\": 0.5}}}}}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("x_score_report.jsonl"),
        "{\"per_file\": [{\"file\": \"f\", \"total\": 3}], \"aggregate\": {\"files\": 1, \"total\": 3}}\n\
         {\"per_file\": [{\"file\": \"f\", \"total\": \"three\"}, 7], \"aggregate\": {\"files\": 1}}\n",
    )
    .unwrap();
    let toml = |path: &str, format: &str| one_source("bad", path, format, "", "SELECT * FROM raw", "");
    std::fs::write(dir.join("pipeline.toml"), toml("graph_results/*/results.json", "graph-pass-results")).unwrap();
    let o = build(dir, &[]);
    assert_violations(
        &o,
        2,
        &[
            "graph_results/ck/results.json",
            "$.files[\"a.graph_results.jsonl\"].total.per_op_pass_at_k.2[\"pass@1\"]: expected a number, found string \"high\"",
            "$.files[\"a.graph_results.jsonl\"].total.total_pass_at_k.pass_at_1: expected a key \"pass@<k>\", found \"pass_at_1\"",
        ],
    );
    std::fs::write(dir.join("pipeline.toml"), toml("*_score_report.jsonl", "graph-score-report")).unwrap();
    let o = build(dir, &["--force"]);
    assert_violations(
        &o,
        2,
        &[
            "x_score_report.jsonl:2",
            "$.per_file[0].total: expected an integer count, found string \"three\"",
            "$.per_file[1]: expected an object of counts, found number 7",
        ],
    );
    let o = build(dir, &["--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "bad"), "SELECT scope, total FROM t ORDER BY scope"),
        "scope,total\naggregate,3\nfile,3\n"
    );
}

// ------------------------------------------------------------------------------ trackio exports

/// A trackio project logged and exported by the real `trackio` client now
/// (pipelines/trackio-export/make_raw.py), and pipelines/trackio-export built over it.
fn trackio_export() -> &'static (tempfile::TempDir, PathBuf) {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let o = run(std::process::Command::new(python())
            .arg(repo().join("pipelines/trackio-export/make_raw.py"))
            .arg(d.path().join("raw"))
            .env("HF_HUB_OFFLINE", "1")
            .env("NO_PROXY", "*")
            .env("HTTPS_PROXY", "http://127.0.0.1:9"));
        assert!(o.status.success(), "the trackio client failed: {}", stderr(&o));
        std::fs::copy(repo().join("pipelines/trackio-export/pipeline.toml"), d.path().join("pipeline.toml")).unwrap();
        let o = build(d.path(), &["-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let release = PathBuf::from(stdout(&o).trim());
        (d, release)
    })
}

#[test]
fn trackio_parquet_exports_read_as_the_database_is() {
    let (dir, r) = trackio_export();
    let m = manifest(r);
    assert_eq!((rows_of(r, "runs"), rows_of(r, "metrics"), rows_of(r, "system_metrics")), (3, 13, 2));
    // the export's 8 log calls repeat the database's, log_id for log_id, and are read once
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("8 records repeat a log_id already read with the same content"), "{card}");
    assert_eq!(m["report"]["warnings"], 2, "{}", m["report"]);
    // the export alone gives the database's rows, value for value
    let one = |path: &str, name: &str| {
        std::fs::write(
            dir.path().join("pipeline.toml"),
            one_source(
                name,
                path,
                "trackio-metrics",
                "",
                "SELECT run, run_id, step, timestamp, metric, value, value_text, log_id FROM raw",
                "",
            ),
        )
        .unwrap();
        let o = build(dir.path(), &["-q", "--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        query(
            &release(dir.path(), name),
            "SELECT run, step, metric, value, isnan(value) AS nan, value_text, log_id, timestamp FROM t ORDER BY run, step, metric",
        )
    };
    let from_db = one("raw/demo.db", "db");
    let from_parquet = one("raw/metrics.parquet", "pq");
    assert_eq!(from_db, from_parquet);
    assert_eq!(from_db.lines().count(), 14, "{from_db}");
    assert!(from_parquet.contains(",train/loss,NaN,true,,") && from_parquet.contains(",train/acc,-Infinity,false,,"));
    assert!(from_parquet.contains(",10,eval/note,,,held-out,"), "{from_parquet}");
    // system metrics and configs, with the NaN the client logged
    assert_eq!(
        query(r, "SELECT run, metric, value, isnan(value) AS nan FROM system_metrics ORDER BY metric"),
        "run,metric,value,nan\nbaseline,gpu/0/power,NaN,true\nbaseline,gpu/0/utilization,55.0,false\n"
    );
    assert_eq!(
        query(r, "SELECT run, regexp_replace(config, ',\"_Created\":\"[^\"]*\"', '') AS config FROM runs ORDER BY run"),
        "run,config\n\
         baseline,\"{\"\"lr\"\":0.001,\"\"seed\"\":1}\"\n\
         fragments,\"{\"\"lr\"\":0.01}\"\n\
         tuned,\"{\"\"lr\"\":0.0003,\"\"seed\"\":2,\"\"tags\"\":[\"\"b\"\"]}\"\n"
    );
}

#[test]
fn trackio_exports_of_another_shape_and_conflicting_log_ids_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a metrics export without run_name and step, and one whose log_id repeats another's with
    // other content (as two exports of diverging copies would)
    std::fs::create_dir_all(dir.join("d")).unwrap();
    let o = run(std::process::Command::new(python()).arg("-c").arg(format!(
        "import pyarrow as pa, pyarrow.parquet as pq\n\
         pq.write_table(pa.table({{'id': [1], 'loss': [1.0]}}), {:?})\n\
         rows = [{{'id': 1, 'run_id': 'r', 'timestamp': 't', 'run_name': 'a', 'step': 0, 'log_id': 'L', 'loss': 1.0}}]\n\
         pq.write_table(pa.Table.from_pylist(rows), {:?})\n\
         rows[0]['loss'] = 2.0\n\
         pq.write_table(pa.Table.from_pylist(rows), {:?})",
        dir.join("other.parquet").to_str().unwrap(),
        dir.join("d/a.parquet").to_str().unwrap(),
        dir.join("d/b.parquet").to_str().unwrap()
    )));
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = |path: &str| one_source("bad", path, "trackio-metrics", "", "SELECT * FROM raw", "");
    std::fs::write(dir.join("pipeline.toml"), toml("other.parquet")).unwrap();
    let o = build(dir, &[]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("other.parquet") && err.contains("missing [\"run_name\", \"step\"]"), "{err}");
    std::fs::write(dir.join("pipeline.toml"), toml("d/*.parquet")).unwrap();
    let o = build(dir, &["--force"]);
    assert_violations(&o, 1, &["d/b.parquet:1", "log_id \"L\" was read at d/a.parquet:1 with other content"]);
}

// ------------------------------------------------------------------------------ init

/// `runpack init` on a folder of `files` (copied from pipelines/<example>/raw), then `build`
/// with no edit in between: the tables and their row counts.
fn init_and_build(example: &str, table_rows: &[(&str, u64)], formats: &[&str]) {
    init_and_build_without(example, &[], table_rows, formats);
}

/// [`init_and_build`] with the files `leave_out` removed from the folder first.
fn init_and_build_without(
    example: &str,
    leave_out: &[&str],
    table_rows: &[(&str, u64)],
    formats: &[&str],
) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    make_raw(example, &folder);
    for f in leave_out {
        std::fs::remove_file(folder.join(f)).unwrap();
    }
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "-q"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/x/pipeline.toml")).unwrap();
    for f in formats {
        assert!(toml.contains(&format!("format = \"{f}\"")), "{f}\n{toml}");
    }
    // every column of the formats' tables is described in the card
    assert_eq!(undescribed(tmp.path(), "x", &[]), Vec::<String>::new());
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    let m = manifest(&release);
    let got: Vec<(String, u64)> = m["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["rows"].as_u64().unwrap()))
        .collect();
    let want: Vec<(String, u64)> = table_rows.iter().map(|(n, r)| (n.to_string(), *r)).collect();
    assert_eq!(got, want);
    (tmp, release)
}

#[test]
fn init_recognises_lighteval_verl_graph_scores_and_trackio_exports() {
    init_and_build(
        "lighteval",
        &[("lighteval_details", 5), ("lighteval_results", 6)],
        &["lighteval-details", "lighteval-results"],
    );
    init_and_build("verl", &[("verl_generations", 8)], &["verl-generations"]);
    init_and_build(
        "graph-eval",
        &[("graph_pass_rates", 16), ("graph_scores", 5)],
        &["graph-pass-results", "graph-score-report"],
    );
    // trackio's Parquet exports (the database, runs.json and settings.json left out)
    init_and_build_without(
        "trackio-export",
        &["demo.db", "runs.json", "settings.json"],
        &[("trackio_runs", 3), ("trackio_system_metrics", 2), ("trackio_metrics", 13)],
        &["trackio-metrics", "trackio-system", "trackio-runs"],
    );
}

// ------------------------------------------------------------------------------ TensorBoard event files

/// Two runs of a sweep logged by tensorboardX's `SummaryWriter` (as the Trainer's
/// `report_to="tensorboard"` and verl's `tensorboard` logger use it), in verl's layout
/// `tensorboard_log/<project>/<experiment>/`: scalars (a NaN among them), a text, a histogram
/// and the run's hyperparameters (`add_hparams`, which writes a folder of its own below).
const TENSORBOARD_RUNS: &str = r#"
import sys
import numpy as np
from tensorboardX import SummaryWriter
for lr in (1e-06, 3e-06):
    w = SummaryWriter(f"{sys.argv[1]}/tensorboard_log/grpo/lr{lr:.0e}")
    for step in range(1, 5):
        w.add_scalar("actor/pg_loss", 0.5 / step, step)
        w.add_scalar("actor/grad_norm", float("nan") if step == 3 else 0.25 * step, step)
    w.add_text("val/sample", f"lr {lr}: the answer is 4", 4)
    w.add_histogram("response_length", np.arange(8), 4)
    w.add_hparams({"lr": lr, "algorithm": "grpo"}, {"hparam/val_score": 0.5})
    w.close()
"#;

#[test]
fn tensorboard_event_files_give_every_scalar_text_and_hyperparameter() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    let o = run(std::process::Command::new(python()).args(["-c", TENSORBOARD_RUNS]).arg(&folder));
    assert!(o.status.success(), "tensorboardX failed: {}", stderr(&o));
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    // the hyperparameters' folders are their runs': one table
    assert_eq!(doc["sources"][0]["format"], "tensorboard", "{doc}");
    assert_eq!(doc["sources"][0]["path"], serde_json::json!(["raw/tensorboard_log/**/events.out.tfevents.*"]));
    assert_eq!(doc["tables"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(undescribed(tmp.path(), "x", &[]), Vec::<String>::new());
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    assert_eq!(
        query(
            &release,
            "SELECT log_dir, step, tag, kind, value, value_text FROM tensorboard \
             WHERE log_dir LIKE '%lr3e-06' AND kind <> 'hparams' ORDER BY kind, tag, step"
        ),
        "log_dir,step,tag,kind,value,value_text\n\
         raw/tensorboard_log/grpo/lr3e-06,4,response_length,histogram,,\n\
         raw/tensorboard_log/grpo/lr3e-06,0,algorithm,hparam,,grpo\n\
         raw/tensorboard_log/grpo/lr3e-06,0,lr,hparam,3e-6,\n\
         raw/tensorboard_log/grpo/lr3e-06,1,actor/grad_norm,scalar,0.25,\n\
         raw/tensorboard_log/grpo/lr3e-06,2,actor/grad_norm,scalar,0.5,\n\
         raw/tensorboard_log/grpo/lr3e-06,3,actor/grad_norm,scalar,NaN,\n\
         raw/tensorboard_log/grpo/lr3e-06,4,actor/grad_norm,scalar,1.0,\n\
         raw/tensorboard_log/grpo/lr3e-06,1,actor/pg_loss,scalar,0.5,\n\
         raw/tensorboard_log/grpo/lr3e-06,2,actor/pg_loss,scalar,0.25,\n\
         raw/tensorboard_log/grpo/lr3e-06,3,actor/pg_loss,scalar,0.1666666716337204,\n\
         raw/tensorboard_log/grpo/lr3e-06,4,actor/pg_loss,scalar,0.125,\n\
         raw/tensorboard_log/grpo/lr3e-06,0,hparam/val_score,scalar,0.5,\n\
         raw/tensorboard_log/grpo/lr3e-06,4,val/sample/text_summary,text,,lr 3e-06: the answer is 4\n"
    );
    // a file cut inside a record (a writer killed mid-write) is said at its record
    let log = folder.join("tensorboard_log/grpo/lr1e-06");
    let file = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("events.out.tfevents."))
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 5]).unwrap();
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out2")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("the file ends inside event record") && err.contains("rule truncated)"), "{err}");
    assert!(err.contains(&format!("{}:", file.file_name().unwrap().to_string_lossy())), "{err}");
    // with `on_truncated = "reject"` the cut record is set aside and said, the others read
    let toml = tmp.path().join("pipelines/x/pipeline.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    let text = text.replacen("format = \"tensorboard\"\n", "format = \"tensorboard\"\non_truncated = \"reject\"\n", 1);
    std::fs::write(&toml, text).unwrap();
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out3")));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("the file ends inside event record") && err.contains("set aside in rejects/"), "{err}");
    assert!(err.contains("1 row rejected while reading"), "{err}");

    // a damaged length in the other run's file: with --on-invalid reject, that record is set
    // aside and every record after it read (the third record: grad_norm at step 1)
    let count = |release: &Path| {
        query(release, "SELECT count(*) AS n FROM tensorboard WHERE log_dir LIKE '%lr3e-06'").trim().to_string()
    };
    let before = count(&release);
    let log = folder.join("tensorboard_log/grpo/lr3e-06");
    let file = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("events.out.tfevents."))
        .unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let mut at = 0usize;
    for _ in 0..2 {
        at += 12 + u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize + 4;
    }
    bytes[at + 1] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let o = run(bin()
        .arg("build")
        .arg(tmp.path().join("pipelines/x"))
        .args(["--on-invalid", "reject"])
        .arg("--releases-dir")
        .arg(tmp.path().join("out4")));
    assert!(o.status.success(), "{}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    let n = |s: &str| s.lines().nth(1).unwrap().parse::<u64>().unwrap();
    assert_eq!(n(&count(&release)), n(&before) - 1);
    assert_eq!(
        query(
            &release,
            "SELECT count(*) AS n FROM tensorboard WHERE log_dir LIKE '%lr3e-06' AND tag = 'actor/grad_norm'"
        ),
        "n\n3\n"
    );
    let rejected = std::fs::read_to_string(release.join("rejects/tensorboard_raw.jsonl")).unwrap();
    assert!(rejected.contains("its length's checksum does not match (a damaged file);"), "{rejected}");
}

#[test]
fn a_runs_trainer_state_that_does_not_read_gives_way_to_its_latest_checkpoint_and_the_card_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    make_raw("trl", &folder);
    // the output folder's state of one run holds a bad entry: its checkpoint-20 is read instead
    let state = folder.join("grpo-lr1e-06/trainer_state.json");
    let text = std::fs::read_to_string(&state).unwrap().replacen("\"step\": 15\n", "\"step\": \"15\"\n", 1);
    std::fs::write(&state, text).unwrap();
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        doc["sources"][0]["path"],
        serde_json::json!(["raw/grpo-lr1e-06/checkpoint-20/trainer_state.json", "raw/grpo-lr3e-06/trainer_state.json"]),
        "{doc}"
    );
    let left = &doc["tables"][0]["left_out"][0];
    assert_eq!(left["file"], "grpo-lr1e-06/trainer_state.json");
    let reason = left["reason"].as_str().unwrap();
    assert!(reason.starts_with("record /log_history/2, $.step: expected the step logged at"), "{reason}");
    assert!(
        reason.ends_with("its run's log is read from grpo-lr1e-06/checkpoint-20/trainer_state.json, saved earlier")
    );
    // the earlier checkpoint is named for the state read now
    let ten = doc["not_read"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["file"] == "grpo-lr1e-06/checkpoint-10/trainer_state.json");
    assert!(ten.unwrap()["reason"].as_str().unwrap().contains("no later than grpo-lr1e-06/checkpoint-20/"), "{doc}");
    // each build says what the table lacks, and so does the card
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    assert!(
        stderr(&o).contains("note: table trainer_log leaves out raw/grpo-lr1e-06/trainer_state.json"),
        "{}",
        stderr(&o)
    );
    let release = PathBuf::from(stdout(&o).trim());
    assert_eq!(rows_of(&release, "trainer_log"), 4 * 14 + 4 * 14 + 5);
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains("- table `trainer_log` leaves out `raw/grpo-lr1e-06/trainer_state.json`"), "{card}");
    // a state cut short while saved (not JSON at all) gives way too, and is said the same way
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    make_raw("trl", &folder);
    let state = folder.join("grpo-lr3e-06/trainer_state.json");
    let text = std::fs::read_to_string(&state).unwrap();
    std::fs::write(&state, &text[..text.len() / 2]).unwrap();
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "-q"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/x/pipeline.toml")).unwrap();
    let entry = toml.split("[[left_out]]").nth(1).unwrap_or_default();
    assert!(entry.contains("file = \"raw/grpo-lr3e-06/trainer_state.json\""), "{toml}");
    assert!(entry.contains("its run's log is read from grpo-lr3e-06/checkpoint-20/trainer_state.json"), "{toml}");
}

#[test]
fn a_run_written_again_into_its_output_folder_is_read_not_the_stale_checkpoint_of_the_run_before() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("outputs/out");
    let state = |steps: u64, losses: &[(u64, f64)]| {
        let log: Vec<String> =
            losses.iter().map(|(s, l)| format!("{{\"step\": {s}, \"epoch\": 1.0, \"loss\": {l}}}")).collect();
        format!("{{\"global_step\": {steps}, \"max_steps\": {steps}, \"log_history\": [{}]}}", log.join(", "))
    };
    // the first run (100 steps) left checkpoint-100; the second (40 steps) wrote after it
    for (dir, text) in [
        ("checkpoint-100", state(100, &[(50, 1.5), (100, 1.0)])),
        ("checkpoint-40", state(40, &[(20, 2.5)])),
        (".", state(40, &[(20, 2.5), (40, 2.0)])),
    ] {
        std::fs::create_dir_all(out.join(dir)).unwrap();
        std::fs::write(out.join(dir).join("trainer_state.json"), text).unwrap();
    }
    let day_before = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    let stale = std::fs::File::options().write(true).open(out.join("checkpoint-100/trainer_state.json")).unwrap();
    stale.set_modified(day_before).unwrap();
    let o = run(bin()
        .current_dir(tmp.path())
        .arg("init")
        .arg(tmp.path().join("outputs"))
        .args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["sources"][0]["path"], serde_json::json!(["raw/out/trainer_state.json"]), "{doc}");
    let reason = doc["not_read"][0]["reason"].as_str().unwrap();
    assert_eq!(doc["not_read"][0]["file"], "out/checkpoint-100/trainer_state.json");
    assert!(reason.starts_with("a Trainer state of another run written into the same output folder"), "{reason}");
    assert_eq!(doc["tables"][0]["rows"], 2);
}

#[test]
fn lm_eval_folders_of_a_model_given_by_a_relative_path_are_read_and_hidden_ones_named() {
    let tmp = tempfile::tempdir().unwrap();
    let evals = tmp.path().join("evals");
    // `lm_eval --model_args pretrained=./out/checkpoint-200` writes `.__out__checkpoint-200/`
    for (model, acc) in [(".__out__checkpoint-200", 0.25), ("gpt2", 0.5)] {
        std::fs::create_dir_all(evals.join(model)).unwrap();
        let results = format!(
            "{{\"results\": {{\"hellaswag\": {{\"alias\": \"hellaswag\", \"acc,none\": {acc}}}}}, \
             \"versions\": {{\"hellaswag\": 1}}, \"n-shot\": {{\"hellaswag\": 0}}}}"
        );
        std::fs::write(evals.join(model).join("results_2026-12-01T10-00-00.json"), results).unwrap();
    }
    std::fs::create_dir_all(evals.join(".cache")).unwrap();
    std::fs::write(evals.join(".cache/state.json"), "{}").unwrap();
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&evals).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["found"]["hidden"], serde_json::json!([".cache"]), "{doc}");
    assert_eq!(doc["sources"][0]["path"], serde_json::json!(["raw/{model}/results_{date_id}.json"]), "{doc}");
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&evals).args(["--name", "y"]));
    assert!(stderr(&o).contains("1 hidden file(s) or folder(s) (.*) not looked at: .cache"), "{}", stderr(&o));
}

#[test]
fn a_compressed_tensorboard_event_file_is_read_through_its_compression() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    let o = run(std::process::Command::new(python()).args(["-c", TENSORBOARD_RUNS]).arg(&folder));
    assert!(o.status.success(), "tensorboardX failed: {}", stderr(&o));
    // every event file of one run gzipped in place, as an archive of old runs holds them
    let gzip = "import gzip, pathlib, shutil, sys\n\
                for p in pathlib.Path(sys.argv[1]).rglob('events.out.tfevents.*'):\n\
                \x20   with open(p, 'rb') as f, gzip.open(str(p) + '.gz', 'wb') as g: shutil.copyfileobj(f, g)\n\
                \x20   p.unlink()\n";
    let o =
        run(std::process::Command::new(python()).args(["-c", gzip]).arg(folder.join("tensorboard_log/grpo/lr1e-06")));
    assert!(o.status.success(), "gzip failed: {}", stderr(&o));
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x", "--format", "json"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["not_read"], serde_json::json!([]), "{doc}");
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    assert_eq!(
        query(&release, "SELECT log_dir, count(*) AS n FROM tensorboard WHERE kind = 'scalar' GROUP BY 1 ORDER BY 1"),
        "log_dir,n\nraw/tensorboard_log/grpo/lr1e-06,9\nraw/tensorboard_log/grpo/lr3e-06,9\n"
    );
}

/// A run that logs its command line as a text and its arguments as hyperparameters, a token
/// among them: the release keeps none of it, and the build says where it was.
#[test]
fn credentials_in_tensorboard_texts_and_hyperparameters_are_replaced_and_said() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("outputs");
    let secret = format!("hf_{}", "Q".repeat(34));
    let script = "import sys\n\
                  from tensorboardX import SummaryWriter\n\
                  w = SummaryWriter(sys.argv[1] + '/runs/a')\n\
                  w.add_scalar('loss', 0.5, 1)\n\
                  w.add_text('cmd', 'train.py --push https://bob:' + sys.argv[2] + '@hf.co/x --lr 1e-5', 1)\n\
                  w.add_text('note', 'a plain text', 1)\n\
                  w.add_text('args', '--api_key ' + sys.argv[2][3:] + ' --max_new_tokens 51234567', 1)\n\
                  w.add_text('config', '{\"hub_token\": \"' + sys.argv[2][3:] + '\", \"lr\": 1e-05}', 1)\n\
                  w.add_hparams({'hub_token': 'x' + sys.argv[2], 'pad_token': '<pad>', 'train/password': sys.argv[2][3:], 'lr': 1e-5}, {'m': 1.0})\n\
                  w.close()\n";
    let o = run(std::process::Command::new(python()).args(["-c", script]).arg(&folder).arg(&secret));
    assert!(o.status.success(), "tensorboardX failed: {}", stderr(&o));
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(&folder).args(["--name", "x"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    assert!(
        stderr(&o).contains("5 values hold credentials (access tokens, a URL's password, a flag or key that names one), replaced by REDACTED in `value_text`; by tag, where first met: args/text_summary (raw/runs/a/events.out.tfevents."),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        query(&release, "SELECT tag, value_text FROM tensorboard WHERE value_text IS NOT NULL ORDER BY tag"),
        "tag,value_text\n\
         args/text_summary,--api_key REDACTED --max_new_tokens 51234567\n\
         cmd/text_summary,train.py --push https://REDACTED@hf.co/x --lr 1e-5\n\
         config/text_summary,\"{\"\"hub_token\"\": \"\"REDACTED\"\", \"\"lr\"\": 1e-05}\"\n\
         hub_token,REDACTED\n\
         note/text_summary,a plain text\n\
         pad_token,<pad>\n\
         train/password,REDACTED\n"
    );
    // nowhere in the release: not in its tables, card or rejects
    for (file, bytes) in files_under(&release) {
        let bare = &secret[3..];
        assert!(!bytes.windows(bare.len()).any(|w| w == bare.as_bytes()), "{file} holds the token");
    }
}

/// A run resumed offline (the same id, `resume="allow"`) writes a folder per session, each
/// counting `_step` from 0: the warning says those are different steps, and the build's hint
/// does not take them for steps logged again.
#[test]
fn a_run_resumed_offline_counts_its_steps_again_and_the_warning_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = "import sys, time, wandb\n\
                  for session in range(2):\n\
                  \x20   r = wandb.init(project='p', id='resumed1', dir=sys.argv[1], resume='allow')\n\
                  \x20   for i in range(3):\n\
                  \x20       r.log({'loss': 1.0 / (10 * session + i + 1)})\n\
                  \x20   r.finish()\n\
                  \x20   time.sleep(1.1)\n";
    wandb_client(script, dir);
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"res\"\n[[source]]\nname = \"h\"\npath = \"wandb/**\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"history\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT run_id, step, metric, value FROM h\"\n",
    )
    .unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("both files count `_step` from the same start, as each session of a run resumed offline does"),
        "{}",
        stderr(&o)
    );
    assert_eq!(query(&release(dir, "res"), "SELECT count(*) AS n FROM t WHERE metric = 'loss'"), "n\n6\n");
}

/// A trackio run's config holding a token (the run's arguments passed whole) has it replaced,
/// as a W&B run's, and a warning names the run.
#[test]
fn credentials_in_a_trackio_runs_config_are_replaced_and_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::copy(repo().join("pipelines/trackio/raw/demo.db"), dir.join("raw/demo.db")).unwrap();
    let script = "import sys, sqlite3\n\
                  c = sqlite3.connect(sys.argv[1])\n\
                  c.execute(\"UPDATE configs SET config = '{\\\"lr\\\": 0.001, \\\"hf_token\\\": \\\"hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123\\\", \\\"eos_token\\\": \\\"<|endoftext|>\\\"}' WHERE run_name = 'baseline'\")\n\
                  c.commit()\n";
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(dir.join("raw/demo.db")));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"tr\"\n[[source]]\nname = \"r\"\npath = \"raw/demo.db\"\nformat = \"trackio-runs\"\n\
         [[table]]\nname = \"t\"\nquery = \"SELECT run, config FROM r\"\n",
    )
    .unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 run holds credentials (access tokens, a key that names one) in its config, replaced by REDACTED: baseline"),
        "{}",
        stderr(&o)
    );
    let config = query(&release(dir, "tr"), "SELECT config FROM t WHERE run = 'baseline'");
    assert!(config.contains("REDACTED") && !config.contains("hf_AbCd") && config.contains("<|endoftext|>"), "{config}");
}

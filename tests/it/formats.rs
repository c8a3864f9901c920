//! The formats of the newer tools, read as those tools write them: tinker-cookbook's current run
//! layout (timing spans, rollout summaries in both layouts, the eval store) and trackio projects
//! (SQLite and JSONL fragments, de-duplicated by log_id), Inspect AI logs, lm-eval outputs and YAML
//! documents.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::*;

/// A bundled example pipeline, built once per test run (read-only).
fn built(name: &'static str, cell: &'static OnceLock<(tempfile::TempDir, PathBuf)>) -> &'static Path {
    let (_, p) = cell.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let o = run(bin()
            .args(["build", "-q"])
            .arg(repo().join("pipelines").join(name))
            .arg("--releases-dir")
            .arg(dir.path()));
        assert!(o.status.success(), "build of {name} failed: {}", stderr(&o));
        let release = PathBuf::from(stdout(&o).trim());
        (dir, release)
    });
    p
}

fn manifest_rows(release: &Path) -> Vec<(String, u64)> {
    let m: Value = serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    m["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["rows"].as_u64().unwrap()))
        .collect()
}

fn warnings(release: &Path) -> Value {
    let m: Value = serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    m["report"].clone()
}

// ------------------------------------------------------------------------------ tinker-cookbook

/// pipelines/tinker-cookbook. Its raw/ was written by tinker-cookbook 0.6.1's own writers
/// (make_raw.py); [`tinker_cookbook_writers_write_the_bundled_raw_files`] writes it again at
/// test time (the package is installed without its dependencies: tml-renderers>=0.4.1 is not
/// on PyPI, and its rollout and eval types, which import torch, are mirrored in make_raw.py).
fn cookbook() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    built("tinker-cookbook", &BUILT)
}

fn raw_lines(rel: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join("pipelines/tinker-cookbook/raw").join(rel)).unwrap();
    // Python's json writes bare NaN/Infinity tokens: make them strings to read the rest
    let text = text.replace("-Infinity", "\"-inf\"").replace("Infinity", "\"inf\"").replace("NaN", "\"nan\"");
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn tinker_cookbook_writers_write_the_bundled_raw_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tinker-cookbook");
    std::fs::create_dir(&dir).unwrap();
    for f in ["pipeline.toml", "make_raw.py"] {
        std::fs::copy(repo().join("pipelines/tinker-cookbook").join(f), dir.join(f)).unwrap();
    }
    let o = run(std::process::Command::new(python()).arg("make_raw.py").current_dir(&dir));
    assert!(o.status.success(), "make_raw.py (tinker-cookbook's writers) failed: {}", stderr(&o));
    let bundled = repo().join("pipelines/tinker-cookbook/raw");
    let files = |root: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = walkdir::WalkDir::new(root)
            .into_iter()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().is_file())
            .map(|e| e.path().strip_prefix(root).unwrap().to_path_buf())
            .collect();
        v.sort();
        v
    };
    assert_eq!(files(&dir.join("raw")), files(&bundled));
    // the same bytes, but for what the writers take from the clock: span durations and times,
    // and an eval run's timestamp
    for rel in files(&bundled) {
        let (ours, theirs) =
            (std::fs::read(dir.join("raw").join(&rel)).unwrap(), std::fs::read(bundled.join(&rel)).unwrap());
        let name = rel.file_name().unwrap().to_str().unwrap();
        if ["timing_spans.jsonl", "metadata.json", "runs.jsonl"].contains(&name) {
            assert_eq!(
                ours.iter().filter(|&&b| b == b'\n').count(),
                theirs.iter().filter(|&&b| b == b'\n').count(),
                "{rel:?}"
            );
        } else {
            assert!(ours == theirs, "{rel:?} differs from the bundled file");
        }
    }
    // and the pipeline reads what the writers wrote as it reads the bundled files
    let out = tmp.path().join("releases");
    let o = run(bin().args(["build", "-q"]).arg(&dir).arg("--releases-dir").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(manifest_rows(Path::new(stdout(&o).trim())), manifest_rows(cookbook()));
}

#[test]
fn tinker_cookbook_tables_have_exact_row_counts() {
    let r = cookbook();
    let rows = manifest_rows(r);
    let want = [
        ("training_runs", 2),
        ("metrics", 24),
        ("checkpoints", 6),
        ("timings", 12),
        ("rollouts", 14),
        ("rollout_steps", 22),
        ("evaluations", 2),
        ("eval_samples", 3),
    ];
    for (name, n) in want {
        assert!(rows.contains(&(name.to_string(), n)), "{name}: {rows:?}");
    }
    assert_eq!(warnings(r)["warnings"], 0, "{}", warnings(r));
    assert_eq!(
        query(r, "SELECT run, steps_logged, checkpoints, trajectories FROM training_runs ORDER BY run"),
        "run,steps_logged,checkpoints,trajectories\ngrpo-math,3,3,7\ngrpo-math-v0,3,3,7\n"
    );
}

#[test]
fn tinker_cookbook_rollouts_of_both_layouts_read_alike() {
    let r = cookbook();
    // the same trajectories, from iteration_NNNNNN/ folders and from flat names
    assert_eq!(
        query(
            r,
            "SELECT run, layout, split, iteration, count(*) AS n, sum(num_steps) AS steps FROM rollouts \
             GROUP BY run, layout, split, iteration ORDER BY 1, 2, 3, 4"
        ),
        "run,layout,split,iteration,n,steps\n\
         grpo-math,iteration-folder,eval/gsm8k,0,2,2\n\
         grpo-math,iteration-folder,train,0,3,5\n\
         grpo-math,iteration-folder,train,1,2,4\n\
         grpo-math-v0,flat,eval/gsm8k,0,2,2\n\
         grpo-math-v0,flat,train,0,3,5\n\
         grpo-math-v0,flat,train,1,2,4\n"
    );
    // ±Infinity rewards stay infinite; a NaN inside trajectory_metrics is JSON text "NaN"
    assert_eq!(
        query(
            r,
            "SELECT iteration, group_idx, traj_idx, NOT isnan(total_reward) AND total_reward > 1e308 AS pos_inf, total_reward < -1e308 AS neg_inf, \
             sampling_client_step, array_to_string(tags, '|') AS tags, trajectory_metrics \
             FROM rollouts WHERE run = 'grpo-math' AND split = 'train' ORDER BY 1, 2, 3"
        ),
        "iteration,group_idx,traj_idx,pos_inf,neg_inf,sampling_client_step,tags,trajectory_metrics\n\
         0,0,0,false,false,,math,\"{\"\"correct\"\":1.0}\"\n\
         0,0,1,false,false,,math,\"{\"\"correct\"\":0.0}\"\n\
         0,1,0,false,false,,math|hard,\"{\"\"correct\"\":\"\"NaN\"\"}\"\n\
         1,0,0,false,true,1,math,\"{\"\"correct\"\":0.0}\"\n\
         1,0,1,true,false,1,math,\"{\"\"correct\"\":1.0}\"\n"
    );
    assert_eq!(
        query(
            r,
            "SELECT step_idx, ob_len, ac_len, reward, episode_done, metrics, logs FROM rollout_steps \
             WHERE run = 'grpo-math' AND split = 'train' AND iteration = 1 AND traj_idx = 0 ORDER BY step_idx"
        ),
        "step_idx,ob_len,ac_len,reward,episode_done,metrics,logs\n\
         0,40,12,0.5,false,{},{}\n\
         1,50,13,0.5,false,{},{}\n\
         2,60,14,-Infinity,true,\"{\"\"format\"\":1.0}\",\"{\"\"extracted\"\":\"\"0\"\"}\"\n"
    );
}

#[test]
fn tinker_cookbook_timings_checkpoints_and_metrics_keep_their_values() {
    let r = cookbook();
    // every span of the raw file, value for value
    let raw = raw_lines("runs/grpo-math/timing_spans.jsonl");
    let mut want = String::from("step,span_index,span,duration,wall_start,wall_end\n");
    for line in &raw {
        for (i, s) in line["spans"].as_array().unwrap().iter().enumerate() {
            want.push_str(&format!(
                "{},{i},{},{},{},{}\n",
                line["step"],
                s["name"].as_str().unwrap(),
                s["duration"],
                s["wall_start"],
                s["wall_end"]
            ));
        }
    }
    assert_eq!(
        query(
            r,
            "SELECT step, span_index, span, duration, wall_start, wall_end FROM timings WHERE run = 'grpo-math' ORDER BY 1, 2"
        ),
        want
    );
    // unknown checkpoint keys are kept in `extra`, in their order
    assert_eq!(
        query(
            r,
            "SELECT name, batch, rolling, sampler_path IS NULL AS no_sampler, extra FROM checkpoints WHERE run = 'grpo-math' ORDER BY _source_line"
        ),
        "name,batch,rolling,no_sampler,extra\n000002,2,,false,\n000002-rolling,2,true,true,\"{\"\"elapsed_tokens\"\":123456,\"\"ttl_seconds\"\":7200}\"\n\
         final,3,,false,\n"
    );
    assert_eq!(
        query(
            r,
            "SELECT metric, isnan(value) AS nan, NOT isnan(value) AND value > 1e308 AS pos_inf, value < -1e308 AS neg_inf FROM metrics \
             WHERE run = 'grpo-math' AND step = 1 AND metric IN ('train_mean_nll', 'optim/grad_norm', 'optim/min_logprob') ORDER BY metric"
        ),
        "metric,nan,pos_inf,neg_inf\noptim/grad_norm,false,true,false\noptim/min_logprob,false,false,true\ntrain_mean_nll,true,false,false\n"
    );
}

#[test]
fn tinker_cookbook_eval_store_joins_run_metadata_to_results() {
    let r = cookbook();
    assert_eq!(
        query(
            r,
            "SELECT eval_run, model_name, checkpoint_name, benchmark, score, num_examples, num_errors, \
             cardinality(pass_at_k) AS n, pass_at_k[1]['k'] AS k1, pass_at_k[2]['k'] AS k2, pass_at_k[2]['value'] AS v2, metrics \
             FROM evaluations ORDER BY benchmark"
        ),
        "eval_run,model_name,checkpoint_name,benchmark,score,num_examples,num_errors,n,k1,k2,v2,metrics\n\
         final_20261201_120000_a1b2c3,Qwen/Qwen3-4B,final,gsm8k,0.3333333333333333,3,1,2,1,2,0.5,\"{\"\"total_turns\"\":4,\"\"mean_nll\"\":\"\"NaN\"\"}\"\n\
         final_20261201_120000_a1b2c3,Qwen/Qwen3-4B,final,math500,0.0,0,0,0,,,,{}\n"
    );
    assert_eq!(
        query(
            r,
            "SELECT example_id, reward, correct, error, num_turns, response_tokens FROM eval_samples ORDER BY idx"
        ),
        "example_id,reward,correct,error,num_turns,response_tokens\n\
         gsm8k_0000,1.0,true,,2,7\ngsm8k_0001,0.0,false,,2,8\ngsm8k_0002,0.0,false,timeout (300s),0,0\n"
    );
}

#[test]
fn tinker_cookbook_bad_lines_name_file_line_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("run/iteration_000002")).unwrap();
    std::fs::write(
        dir.join("run/timing_spans.jsonl"),
        "{\"step\": 0, \"spans\": [{\"name\": \"a\", \"duration\": 1.0, \"wall_start\": 0.0, \"wall_end\": 1.0}]}\n\
         {\"step\": 1, \"spans\": [{\"name\": \"a\", \"duration\": \"slow\", \"wall_start\": 0.0, \"wall_end\": 1.0}, 7]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("run/iteration_000002/train_rollout_summaries.jsonl"),
        "{\"schema_version\": 2, \"split\": \"train\", \"iteration\": 2, \"group_idx\": 0, \"traj_idx\": 0, \"steps\": []}\n",
    )
    .unwrap();
    let toml = |path: &str, format: &str| one_source("bad", path, format, "", "SELECT * FROM raw", "");
    std::fs::write(dir.join("pipeline.toml"), toml("run/timing_spans.jsonl", "tinker-timings")).unwrap();
    let o = build(dir, &[]);
    assert_violations(
        &o,
        2,
        &[
            "run/timing_spans.jsonl:2",
            "$.spans[0].duration",
            "expected a number, found string \"slow\"",
            "$.spans[1]",
            "expected a span object, found number 7",
        ],
    );
    // rejected whole: the good line's row is kept, the bad line in the rejects file
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "bad");
    assert_eq!(query(&r, "SELECT step, span, duration FROM t"), "step,span,duration\n0,a,1.0\n");
    let rejects = std::fs::read_to_string(r.join("rejects/raw.jsonl")).unwrap();
    assert!(rejects.contains("\"slow\""), "{rejects}");
    std::fs::write(dir.join("pipeline.toml"), toml("run/iteration_*/*_rollout_summaries.jsonl", "tinker-rollouts"))
        .unwrap();
    let o = build(dir, &["--force"]);
    assert_violations(
        &o,
        1,
        &[
            "run/iteration_000002/train_rollout_summaries.jsonl:1",
            "expected schema_version 1 (the rollout summary version runpack reads), found 2",
        ],
    );
}

// ------------------------------------------------------------------------------ trackio

/// A trackio project logged by the real `trackio` client at test time (pipelines/trackio/make_raw.py).
fn trackio_project() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let o = run(std::process::Command::new(python())
            .arg(repo().join("pipelines/trackio/make_raw.py"))
            .arg(d.path().join("raw"))
            .env("HF_HUB_OFFLINE", "1")
            .env("NO_PROXY", "*")
            .env("HTTPS_PROXY", "http://127.0.0.1:9"));
        assert!(o.status.success(), "the trackio client failed: {}", stderr(&o));
        d
    })
    .path()
}

/// pipelines/trackio built over a project logged now.
fn trackio_release() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = trackio_project();
        std::fs::copy(repo().join("pipelines/trackio/pipeline.toml"), dir.join("pipeline.toml")).unwrap();
        let o = build(dir, &["-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
        PathBuf::from(stdout(&o).trim())
    })
}

/// The bundled trackio project's fragments (`inbox/`) copied into `dir`: a run's first
/// fragment file, and its text.
fn trackio_fragments_in(dir: &Path) -> (PathBuf, String) {
    copy_tree(&trackio_project().join("raw/inbox"), &dir.join("inbox"));
    let fragment = std::fs::read_dir(dir.join("inbox")).unwrap().next().unwrap().unwrap().path().join("00000000.jsonl");
    let text = std::fs::read_to_string(&fragment).unwrap();
    (fragment, text)
}

#[test]
fn trackio_project_from_sqlite_and_fragments() {
    let r = trackio_release();
    let rows = manifest_rows(r);
    for (name, n) in [("runs", 3), ("metrics", 13), ("system_metrics", 2)] {
        assert!(rows.contains(&(name.to_string(), n)), "{name}: {rows:?}");
    }
    // the fragments' two records, read again with the same log_ids, are read once and said
    // and the text value of `eval/note`
    assert_eq!(warnings(r)["warnings"], 2, "{}", warnings(r));
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("2 records repeat a log_id already read with the same content"), "{card}");
    assert!(card.contains("1 metric value is no float"), "{card}");
    assert_eq!(
        query(
            r,
            "SELECT run, step, metric, value, value_text, isnan(value) AS nan, NOT isnan(value) AND value > 1e308 AS pos_inf, value < -1e308 AS neg_inf, \
             length(log_id) AS id_len, _source_file FROM metrics ORDER BY run, step, metric"
        ),
        "run,step,metric,value,value_text,nan,pos_inf,neg_inf,id_len,_source_file\n\
         baseline,0,train/acc,0.25,,false,false,false,32,raw/demo.db\n\
         baseline,0,train/loss,2.0,,false,false,false,32,raw/demo.db\n\
         baseline,1,train/acc,0.5,,false,false,false,32,raw/demo.db\n\
         baseline,1,train/loss,NaN,,true,false,false,32,raw/demo.db\n\
         baseline,2,train/acc,-Infinity,,false,false,true,32,raw/demo.db\n\
         baseline,2,train/loss,Infinity,,false,true,false,32,raw/demo.db\n\
         baseline,10,eval/note,,held-out,,,,32,raw/demo.db\n\
         baseline,10,eval/score,0.75,,false,false,false,32,raw/demo.db\n\
         fragments,0,train/loss,-Infinity,,false,false,true,32,raw/demo.db\n\
         fragments,1,train/acc,NaN,,true,false,false,32,raw/demo.db\n\
         fragments,1,train/loss,0.5,,false,false,false,32,raw/demo.db\n\
         tuned,0,train/loss,1.5,,false,false,false,32,raw/demo.db\n\
         tuned,1,train/loss,1.25,,false,false,false,32,raw/demo.db\n"
    );
    // one log call, one log_id: shared by its metrics
    assert_eq!(query(r, "SELECT count(DISTINCT log_id) AS calls FROM metrics"), "calls\n8\n");
    assert_eq!(
        query(r, "SELECT metric, value, isnan(value) AS nan FROM system_metrics ORDER BY metric"),
        "metric,value,nan\ngpu/0/power,NaN,true\ngpu/0/utilization,55.0,false\n"
    );
    assert_eq!(
        query(r, "SELECT run, lr FROM runs ORDER BY run"),
        "run,lr\nbaseline,0.001\nfragments,0.01\ntuned,0.0003\n"
    );
}

#[test]
fn trackio_fragments_alone_and_a_conflicting_log_id() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (fragment, text) = trackio_fragments_in(dir);
    let toml = one_source(
        "frag",
        "inbox/*/*.jsonl",
        "trackio-metrics",
        "",
        "SELECT run, step, metric, value, log_id, _source_line FROM raw",
        "",
    );
    std::fs::write(dir.join("pipeline.toml"), &toml).unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "frag");
    assert_eq!(
        query(
            &r,
            "SELECT step, metric, value < -1e308 AS neg_inf, isnan(value) AS nan, _source_line FROM t ORDER BY step, metric"
        ),
        "step,metric,neg_inf,nan,_source_line\n0,train/loss,true,false,1\n1,train/acc,false,true,2\n1,train/loss,false,false,2\n"
    );
    // the second record again, with another value under the same log_id: a violation at its line
    let second = text.lines().nth(1).unwrap();
    let changed = second.replace("\"train/loss\":0.5", "\"train/loss\":0.75");
    assert_ne!(second, changed);
    std::fs::write(dir.join("inbox/later.jsonl"), format!("{changed}\n")).unwrap();
    std::fs::write(dir.join("pipeline.toml"), toml.replace("inbox/*/*.jsonl", "inbox/**/*.jsonl")).unwrap();
    let o = build(dir, &["--force"]);
    let first = fragment.strip_prefix(dir).unwrap().display().to_string();
    assert_violations(&o, 1, &["inbox/later.jsonl:1", &format!("was read at {first}:2 with other content")]);
}

#[test]
fn a_trackio_database_beside_a_write_ahead_log_not_empty_is_said_with_what_to_do() {
    let src = trackio_project();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(src.join("raw/demo.db"), dir.join("demo.db")).unwrap();
    // a project copied while trackio wrote to it
    std::fs::write(dir.join("demo.db-wal"), b"frames").unwrap();
    let sql = "SELECT run, metric FROM raw";
    std::fs::write(dir.join("pipeline.toml"), one_source("w", "demo.db", "trackio-metrics", "", sql, "")).unwrap();
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("demo.db: the database's write-ahead log demo.db-wal is not empty: it may hold writes"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("PRAGMA wal_checkpoint(TRUNCATE)"), "{}", stderr(&o));
}

#[test]
fn credentials_a_trackio_text_holds_are_redacted_and_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (fragment, text) = trackio_fragments_in(dir);
    let second = text.lines().nth(1).unwrap();
    // a note and a command line logged as metrics, each holding a token
    let logged = second.replace(
        "\"train/loss\":0.5",
        "\"train/loss\":0.5,\"note\":\"push with hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 ok\",\
         \"cmd\":\"train.py --hub_token hf_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ --lr 1\"",
    );
    assert_ne!(second, logged);
    std::fs::write(&fragment, text.replace(second, &logged)).unwrap();
    let sql = "SELECT metric, value_text FROM raw WHERE value_text IS NOT NULL";
    std::fs::write(dir.join("pipeline.toml"), one_source("frag", "inbox/*/*.jsonl", "trackio-metrics", "", sql, ""))
        .unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "frag"), "SELECT * FROM t ORDER BY metric"),
        "metric,value_text\ncmd,train.py --hub_token REDACTED --lr 1\nnote,push with REDACTED ok\n"
    );
    assert!(stderr(&o).contains("2 values hold credentials"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("replaced by REDACTED in `value_text`; by metric, where first met: cmd ("),
        "{}",
        stderr(&o)
    );
}

// ------------------------------------------------------------------------------ Inspect AI

/// An Inspect eval logged by the real `inspect-ai` package with its mock model at test time, as
/// `.eval` and `.json` (pipelines/inspect/make_raw.py), and pipelines/inspect built over it.
fn inspect_release() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, p) = BUILT.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let o = run(std::process::Command::new(python())
            .arg(repo().join("pipelines/inspect/make_raw.py"))
            .arg(d.path().join("raw"))
            .env("INSPECT_LOG_DIR", d.path().join("raw"))
            .env("NO_PROXY", "*")
            .env("HTTPS_PROXY", "http://127.0.0.1:9"));
        assert!(o.status.success(), "inspect-ai failed: {}", stderr(&o));
        std::fs::copy(repo().join("pipelines/inspect/pipeline.toml"), d.path().join("pipeline.toml")).unwrap();
        let o = build(d.path(), &["-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let release = PathBuf::from(stdout(&o).trim());
        (d, release)
    });
    p
}

#[test]
fn inspect_eval_and_json_logs_read_alike() {
    let r = inspect_release();
    let rows = manifest_rows(r);
    for (name, n) in [("evaluations", 10), ("eval_samples", 8)] {
        assert!(rows.contains(&(name.to_string(), n)), "{name}: {rows:?}");
    }
    // the same metrics from both formats; the ratio scorer's mean is not finite
    let per_format = |f: &str| {
        query(
            r,
            &format!(
                "SELECT task, model, status, total_samples, scorer, metric, value, isnan(value) OR value > 1e308 AS non_finite, \
                 length(eval_id) > 0 AS has_id FROM evaluations WHERE log_format = '{f}' ORDER BY scorer, metric"
            ),
        )
    };
    let eval = per_format("eval");
    assert_eq!(eval, per_format("json"));
    assert_eq!(
        eval.lines().filter(|l| l.contains(",ratio,mean,")).map(|l| l.ends_with(",true,true")).collect::<Vec<_>>(),
        vec![true],
        "{eval}"
    );
    assert!(
        eval.starts_with(
            "task,model,status,total_samples,scorer,metric,value,non_finite,has_id\n\
         arith,mockllm/model,success,4,includes,accuracy,0.0,false,true\n\
         arith,mockllm/model,success,4,includes,stderr,0.0,false,true\n\
         arith,mockllm/model,success,4,match,accuracy,0.0,false,true\n"
        ),
        "{eval}"
    );
    // what tells evals apart: the tags and metadata given to `eval()`
    let told = |f: &str| {
        query(
            r,
            &format!(
                "SELECT DISTINCT tags, json_str(json_get(metadata, 'checkpoint')) AS c FROM evaluations WHERE log_format = '{f}'"
            ),
        )
    };
    assert_eq!(told("eval"), "tags,c\n\"[\"\"smoke\"\"]\",final\n");
    assert_eq!(told("json"), told("eval"));
    // samples: ids as text, epochs, targets, per-scorer values (NaN and Infinity as JSON strings)
    let samples = |f: &str| {
        query(
            r,
            &format!(
                "SELECT sample_id, epoch, target, scores, input_tokens > 0 AS counted, extra FROM eval_samples \
                 WHERE log_format = '{f}' ORDER BY sample_id, epoch"
            ),
        )
    };
    let eval = samples("eval");
    assert_eq!(eval, samples("json"));
    assert_eq!(
        eval,
        "sample_id,epoch,target,scores,counted,extra\n\
         2,1,\"[\"\"hi\"\",\"\"hello\"\"]\",\"{\"\"match\"\":\"\"I\"\",\"\"includes\"\":\"\"I\"\",\"\"ratio\"\":\"\"NaN\"\"}\",true,\n\
         2,2,\"[\"\"hi\"\",\"\"hello\"\"]\",\"{\"\"match\"\":\"\"I\"\",\"\"includes\"\":\"\"I\"\",\"\"ratio\"\":0.5}\",true,\n\
         q1,1,4,\"{\"\"match\"\":\"\"I\"\",\"\"includes\"\":\"\"I\"\",\"\"ratio\"\":\"\"Infinity\"\"}\",true,\"{\"\"level\"\":1}\"\n\
         q1,2,4,\"{\"\"match\"\":\"\"I\"\",\"\"includes\"\":\"\"I\"\",\"\"ratio\"\":\"\"Infinity\"\"}\",true,\"{\"\"level\"\":1}\"\n"
    );
    // the .eval rows name their ZIP member; the .json rows their JSON pointer
    assert_eq!(
        query(
            r,
            "SELECT log_format, min(_source_line) AS first, max(_source_line) AS last FROM eval_samples GROUP BY log_format ORDER BY 1"
        ),
        "log_format,first,last\neval,samples/2_epoch_1.json,samples/q1_epoch_2.json\njson,/samples/0,/samples/3\n"
    );
    // no prompt or output text is kept
    let data = std::fs::read_dir(r.join("data")).unwrap();
    for f in data {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("Default output from mockllm") && !text.contains("What is 2+2"));
    }
}

#[test]
fn inspect_bad_members_are_named_by_member_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // an archive whose sample member has a bad epoch, another whose member is no JSON
    let write_zip = |name: &str, members: &[(&str, &str)]| {
        let f = std::fs::File::create(dir.join(name)).unwrap();
        let mut z = zip::ZipWriter::new(f);
        for (m, text) in members {
            z.start_file(*m, zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Zstd))
                .unwrap();
            std::io::Write::write_all(&mut z, text.as_bytes()).unwrap();
        }
        z.finish().unwrap();
    };
    let header = r#"{"version": 2, "status": "success", "eval": {"eval_id": "e", "task": "t", "model": "m"}}"#;
    write_zip(
        "a.eval",
        &[("header.json", header), ("samples/1_epoch_1.json", r#"{"id": 1, "epoch": "one", "scores": {}}"#)],
    );
    write_zip("b.eval", &[("header.json", header), ("samples/1_epoch_1.json", "{\"id\": 1, \"epoch\": ")]);
    std::fs::write(
        dir.join("pipeline.toml"),
        one_source("bad", "*.eval", "inspect-samples", "", "SELECT sample_id, epoch FROM raw", ""),
    )
    .unwrap();
    let o = build(dir, &[]);
    assert_violations(
        &o,
        2,
        &[
            "a.eval:samples/1_epoch_1.json",
            "$.epoch",
            "expected an epoch (an integer of at least 1), found string \"one\"",
            "b.eval:samples/1_epoch_1.json",
            "ZIP member samples/1_epoch_1.json",
        ],
    );
}

#[test]
fn an_eval_archive_listing_a_member_twice_or_missing_samples_is_said() {
    // the bundled log, its archive written to again (a member of the same name, which Python's
    // zipfile writes) and cut down (members removed)
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = std::fs::read_dir(repo().join("pipelines/inspect/raw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "eval"))
        .unwrap();
    let script = r#"
import sys, shutil, zipfile, warnings
warnings.simplefilter("ignore")
src, out = sys.argv[1], sys.argv[2]
shutil.copy(src, out + "/twice.eval")
with zipfile.ZipFile(out + "/twice.eval", "a") as z:
    z.writestr("samples/q1_epoch_1.json", '{"id": "q1", "epoch": 1, "scores": {}}')
"#;
    let o = run(std::process::Command::new(python()).arg("-c").arg(python_script(script)).arg(&log).arg(dir));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut z = zip::ZipArchive::new(std::fs::File::open(&log).unwrap()).unwrap();
    let mut w = zip::ZipWriter::new(std::fs::File::create(dir.join("cut.eval")).unwrap());
    for i in 0..z.len() {
        let member = z.by_index_raw(i).unwrap();
        if !["samples/q1_epoch_2.json", "samples/2_epoch_2.json"].contains(&member.name()) {
            w.raw_copy_file(member).unwrap();
        }
    }
    w.finish().unwrap();
    std::fs::write(
        dir.join("pipeline.toml"),
        one_source("twice", "*.eval", "inspect-samples", "", "SELECT sample_id, epoch, _source_file FROM raw", ""),
    )
    .unwrap();
    let o = build(dir, &[]);
    assert_violations(
        &o,
        2,
        &[
            "twice.eval:samples/q1_epoch_1.json",
            "the archive lists ZIP member samples/q1_epoch_1.json 2 times",
            "cut.eval:samples/",
            "the log's header counts 4 samples (results.total_samples) and the archive holds 2 sample members: \
             samples/q1_epoch_2.json, samples/2_epoch_2.json missing",
        ],
    );
    // set aside, the other samples are kept
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "twice"), "SELECT _source_file, count(*) AS n FROM t GROUP BY 1 ORDER BY 1"),
        "_source_file,n\ncut.eval,2\ntwice.eval,3\n"
    );
}

// ------------------------------------------------------------------------------ lm-eval

/// pipelines/lm-eval, whose raw files are hand-made following lm-eval's writers (raw/NOTE.md):
/// lm-eval needs torch, too large for the test venv, so its dummy model cannot write them here.
fn lm_eval() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    built("lm-eval", &BUILT)
}

#[test]
fn lm_eval_results_and_samples_keep_metrics_filters_and_hashes() {
    let r = lm_eval();
    let rows = manifest_rows(r);
    for (name, n) in [("evaluations", 4), ("eval_samples", 7)] {
        assert!(rows.contains(&(name.to_string(), n)), "{name}: {rows:?}");
    }
    assert_eq!(
        query(
            r,
            "SELECT task, metric, filter, value, stderr, isnan(stderr) AS nan_stderr, version, n_shot, n_samples_effective, \
             higher_is_better, model_name, date FROM evaluations ORDER BY task, metric, filter"
        ),
        "task,metric,filter,value,stderr,nan_stderr,version,n_shot,n_samples_effective,higher_is_better,model_name,date\n\
         arith,acc,none,0.6666666666666666,0.3333333333333333,false,1.0,0,3,true,EleutherAI/pythia-160m,1764504000.25\n\
         arith,acc_norm,none,1.0,,,1.0,0,3,true,EleutherAI/pythia-160m,1764504000.25\n\
         gsm8k_mini,exact_match,flexible-extract,Infinity,0.5,false,3.0,5,2,true,EleutherAI/pythia-160m,1764504000.25\n\
         gsm8k_mini,exact_match,strict-match,0.5,NaN,true,3.0,5,2,true,EleutherAI/pythia-160m,1764504000.25\n"
    );
    // each row names the place of its value in the document
    assert_eq!(
        query(r, "SELECT task, metric, filter, _source_line FROM evaluations ORDER BY task, metric, filter"),
        "task,metric,filter,_source_line\n\
         arith,acc,none,\"/results/arith/acc,none\"\n\
         arith,acc_norm,none,\"/results/arith/acc_norm,none\"\n\
         gsm8k_mini,exact_match,flexible-extract,\"/results/gsm8k_mini/exact_match,flexible-extract\"\n\
         gsm8k_mini,exact_match,strict-match,\"/results/gsm8k_mini/exact_match,strict-match\"\n"
    );
    // the hashes as written, one per document (the filters of a document share them)
    let raw = std::fs::read_to_string(
        repo().join("pipelines/lm-eval/raw/EleutherAI__pythia-160m/samples_arith_2026-11-30T12-00-00.000000.jsonl"),
    )
    .unwrap();
    let mut want = String::from("doc_id,doc_hash,prompt_hash,target_hash,metrics\n");
    for line in raw.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        want.push_str(&format!(
            "{},{},{},{},\"{{\"\"acc\"\":{:?},\"\"acc_norm\"\":1.0}}\"\n",
            v["doc_id"],
            v["doc_hash"].as_str().unwrap(),
            v["prompt_hash"].as_str().unwrap(),
            v["target_hash"].as_str().unwrap(),
            v["acc"].as_f64().unwrap()
        ));
    }
    assert_eq!(
        query(
            r,
            "SELECT doc_id, doc_hash, prompt_hash, target_hash, metrics FROM eval_samples WHERE task = 'arith' ORDER BY doc_id"
        ),
        want
    );
    assert_eq!(
        query(
            r,
            "SELECT doc_id, filter, metrics, target FROM eval_samples WHERE task = 'gsm8k_mini' ORDER BY doc_id, filter"
        ),
        "doc_id,filter,metrics,target\n\
         0,flexible-extract,\"{\"\"exact_match\"\":\"\"Infinity\"\"}\",5\n\
         0,strict-match,\"{\"\"exact_match\"\":1.0}\",5\n\
         1,flexible-extract,\"{\"\"exact_match\"\":\"\"NaN\"\"}\",9\n\
         1,strict-match,\"{\"\"exact_match\"\":0.0}\",9\n"
    );
    // gsm8k_mini ran on 2 of its 1,319 documents (`--limit 2`): its scores are said to be theirs
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    let said = "1 lm-eval task was run on fewer documents than it holds (`--limit`): its scores are of those \
                documents alone, not comparable with a whole run's (`n_samples_effective` against \
                `n_samples_original`): gsm8k_mini 2 of 1,319 \
                (raw/EleutherAI__pythia-160m/results_2026-11-30T12-00-00.000000.json)";
    assert!(card.contains(said), "{card}");
    // no document, prompt or response text
    for f in std::fs::read_dir(r.join("data")).unwrap() {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("Tom has 3 apples"));
    }
}

/// Counts of documents no run gives (more run than the task holds, fewer than none) are kept
/// as written and said; a task run on part of its documents is said as such.
#[test]
fn lm_eval_document_counts_no_run_gives_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::write(
        dir.join("raw/results_2026.json"),
        r#"{"results": {"a": {"acc,none": 0.5}, "b": {"acc,none": 0.25}, "c": {"acc,none": 0.75}},
            "n-samples": {"a": {"original": 50, "effective": 500}, "b": {"original": 100, "effective": -5},
                          "c": {"original": 1319, "effective": 100}},
            "model_name": "m"}"#,
    )
    .unwrap();
    let sql = "SELECT task, metric, value, n_samples_original, n_samples_effective FROM raw";
    std::fs::write(
        dir.join("pipeline.toml"),
        one_source("evals", "raw/results_*.json", "lm-eval-results", "", sql, ""),
    )
    .unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "2 lm-eval tasks count documents run that no run gives (`n-samples`: `effective` above `original`, \
                or below 0), kept as written in `n_samples_effective` and `n_samples_original`: a 500 of 50 \
                (raw/results_2026.json), b -5 of 100 (raw/results_2026.json)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    assert!(stderr(&o).contains("(`--limit`): its scores are of those documents alone"), "{}", stderr(&o));
    assert!(stderr(&o).contains("c 100 of 1,319 (raw/results_2026.json)"), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "evals"), "SELECT task, n_samples_original, n_samples_effective FROM t ORDER BY task"),
        "task,n_samples_original,n_samples_effective\na,50,500\nb,100,-5\nc,1319,100\n"
    );
    // counts written as text: the option that reads them is named
    std::fs::write(
        dir.join("raw/results_2026.json"),
        r#"{"results": {"a": {"acc,none": 0.5}}, "n-samples": {"a": {"original": "100", "effective": "100"}}}"#,
    )
    .unwrap();
    let o = build(dir, &["--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let said =
        "raw/results_2026.json:/results/a/acc,none:$.n_samples_effective: expected integer, found string \"100\"";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let said = "hint: numbers written as strings (\"0.001\", \"12\") are read as numbers when their source says so: \
                `coerce_numeric_strings = true` in the [[source]] of raw";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
}

#[test]
fn lm_eval_0_3_results_name_each_value_by_its_key() {
    // lm-eval 0.3 wrote metrics without a filter, and groups in a section of their own
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::write(
        dir.join("raw/results_2023.json"),
        r#"{"results": {"arc_easy": {"acc": 0.5, "acc_stderr": 0.1}}, "groups": {"mmlu": {"acc,none": 0.25}},
            "versions": {"arc_easy": 0}, "config": {"model": "hf", "model_args": "pretrained=gpt2"}}"#,
    )
    .unwrap();
    let toml = one_source(
        "evals",
        "raw/results_*.json",
        "lm-eval-results",
        "",
        "SELECT task, metric, filter, value, model_name, _source_line FROM raw",
        "",
    );
    std::fs::write(dir.join("pipeline.toml"), &toml).unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "evals"), "SELECT * FROM t ORDER BY task"),
        "task,metric,filter,value,model_name,_source_line\n\
         arc_easy,acc,none,0.5,gpt2,/results/arc_easy/acc\n\
         mmlu,acc,none,0.25,gpt2,\"/groups/mmlu/acc,none\"\n"
    );
}

#[test]
fn an_lm_eval_value_that_is_no_number_sets_aside_its_metric_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // one value of five is text; a standard error of another is no number either
    write(
        dir,
        "raw/results_2026.json",
        r#"{"results": {"arc": {"alias": "arc", "acc,none": "0.5 (approx)", "acc_stderr,none": 0.1,
            "acc_norm,none": 0.6, "acc_norm_stderr,none": "big"},
            "mmlu": {"acc,none": 0.25, "acc_stderr,none": "N/A"}, "gsm": {"exact_match,strict-match": 0.4,
            "exact_match,flexible-extract": 0.45}}, "model_name": "m"}"#,
    );
    let toml = one_source(
        "evals",
        "raw/results_*.json",
        "lm-eval-results",
        "",
        "SELECT task, metric, filter, value, stderr, _source_line FROM raw",
        "",
    );
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert_violations(
        &o,
        2,
        &[
            "raw/results_2026.json:/results/arc/acc,none:$.results.arc[\"acc,none\"]: expected a number, found string \"0.5 (approx)\"",
            "raw/results_2026.json:/results/arc/acc_norm,none:$.results.arc[\"acc_norm_stderr,none\"]: expected a number or \"N/A\"",
        ],
    );
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 rows rejected while reading"), "{}", stderr(&o));
    let r = release(dir, "evals");
    // the other results are all there, each at its place
    assert_eq!(
        query(&r, "SELECT task, metric, filter, value, _source_line FROM t ORDER BY task, metric, filter"),
        "task,metric,filter,value,_source_line\n\
         gsm,exact_match,flexible-extract,0.45,\"/results/gsm/exact_match,flexible-extract\"\n\
         gsm,exact_match,strict-match,0.4,\"/results/gsm/exact_match,strict-match\"\n\
         mmlu,acc,none,0.25,\"/results/mmlu/acc,none\"\n"
    );
    // each metric set aside is kept with its standard error, at its own pointer
    let rejects = std::fs::read_to_string(r.join("rejects/raw.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 2, "{rejects}");
    assert!(
        rejects.contains(
            r#""record":{"results":{"arc":{"acc,none":"0.5 (approx)","acc_stderr,none":0.1}},"model_name":"m"}"#
        ),
        "{rejects}"
    );
    assert!(
        rejects.contains(
            r#""record":{"results":{"arc":{"acc_norm,none":0.6,"acc_norm_stderr,none":"big"}},"model_name":"m"}"#
        ),
        "{rejects}"
    );
    // a document that is no results document is set aside whole, as before
    write(dir, "raw/results_2027.json", r#"{"model_name": "m"}"#);
    let o = build(dir, &["--force"]);
    assert!(stderr(&o).contains("raw/results_2027.json"), "{}", stderr(&o));
    // a number written as text names the option that reads it, and the option reads it, counted
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "raw/results_2026.json", r#"{"results": {"arc": {"acc,none": "0.6011", "acc_norm,none": 0.7}}}"#);
    let sql = "SELECT task, metric, value FROM raw";
    write(dir, "pipeline.toml", &one_source("evals", "raw/results_*.json", "lm-eval-results", "", sql, ""));
    let o = build(dir, &[]);
    assert_violations(
        &o,
        1,
        &["found string \"0.6011\" (`coerce_numeric_strings = true` in the source reads it as the number)"],
    );
    let toml = one_source("evals", "raw/results_*.json", "lm-eval-results", "coerce_numeric_strings = true\n", sql, "");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("string \"0.6011\" read as"), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "evals"), "SELECT * FROM t ORDER BY metric"),
        "task,metric,value\narc,acc,0.6011\narc,acc_norm,0.7\n"
    );
}

#[test]
fn an_lm_eval_rows_reject_holds_its_part_of_the_document_and_init_reads_numbers_written_as_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a model name that is no text fails every row: each reject holds its own part, not the
    // whole document once per row
    let tasks: Vec<String> =
        (0..50).map(|i| format!("\"t{i}\": {{\"acc,none\": 0.{i}, \"acc_stderr,none\": 0.01}}")).collect();
    let doc = format!(
        "{{\"results\": {{{}}}, \"versions\": {{\"t7\": 1}}, \"model_name\": 5, \"config\": {{\"model\": \"hf\", \"model_args\": \"pretrained=m\", \"gen_kwargs\": {{\"t\": 1}}}}}}",
        tasks.join(", ")
    );
    write(dir, "raw/results_2026.json", &doc);
    let sql = "SELECT task, metric, value, model_name, _source_file, _source_line FROM raw";
    let toml = one_source("evals", "raw/results_*.json", "lm-eval-results", "on_invalid = \"reject\"\n", sql, "");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "evals").join("rejects/raw.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 50, "{rejects}");
    let line = rejects.lines().find(|l| l.contains("/results/t7/acc,none")).unwrap();
    let want = r#""record":{"results":{"t7":{"acc,none":0.7,"acc_stderr,none":0.01}},"versions":{"t7":1},"model_name":5,"config":{"model":"hf","model_args":"pretrained=m"}}"#;
    assert!(line.contains(want), "{line}");
    // init: a number written as text is read by the option, said in pipeline.toml, not set aside
    let raw = tmp.path().join("outputs/m");
    write(
        &raw,
        "results_2026-01-01T00-00-00.000000.json",
        r#"{"results": {"arc": {"acc,none": "0.6011", "acc_norm,none": 0.7, "ppl,none": "Infinity"}}, "versions": {"arc": 1}, "n-shot": {"arc": 0}, "config": {"model": "hf"}, "model_name": "m"}"#,
    );
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(tmp.path().join("outputs")).args(["--name", "lm", "-q"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/lm/pipeline.toml")).unwrap();
    assert!(toml.contains("coerce_numeric_strings = true   # m/results_2026-01-01T00-00-00.000000.json:/results/arc/acc,none: $.results.arc[\"acc,none\"]: expected a number, found string \"0.6011\": a number written as text"), "{toml}");
    assert!(toml.contains("coerce_nonfinite_strings = true   # m/results_2026-01-01T00-00-00.000000.json:/results/arc/ppl,none: $.results.arc[\"ppl,none\"]: expected a number, found string \"Infinity\": a non-finite float written as text"), "{toml}");
    assert!(!toml.contains("on_invalid"), "{toml}");
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/lm"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let rel = tmp.path().join("releases/lm/0.1.0");
    assert_eq!(
        query(&rel, "SELECT metric, value FROM lm_eval_results ORDER BY metric"),
        "metric,value\nacc,0.6011\nacc_norm,0.7\nppl,Infinity\n"
    );
}

// ------------------------------------------------------------------------------ YAML

#[test]
fn yaml_documents_are_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("configs")).unwrap();
    // a framework's config dump per run, with YAML's non-finite numbers
    std::fs::write(
        dir.join("configs/run-a.yaml"),
        "model: Qwen/Qwen3-4B\noptim:\n  lr: 1.0e-5\n  clip: .inf\nseed: 1\nloss_floor: .nan\ntags: [grpo, math]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("configs/run-b.yaml"),
        "model: Qwen/Qwen3-8B\noptim:\n  lr: 2.0e-5\n  clip: 1.0\nseed: 2\nloss_floor: 0.0\ntags: []\n",
    )
    .unwrap();
    let toml = one_source(
        "cfg",
        "configs/{run}.yaml",
        "yaml",
        "",
        "SELECT run, model, optim['lr'] AS lr, optim['clip'] AS clip, seed, isnan(loss_floor) AS nan, cardinality(tags) AS tags, _source_line FROM raw",
        "",
    );
    std::fs::write(dir.join("pipeline.toml"), &toml).unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "cfg"), "SELECT * FROM t ORDER BY run"),
        "run,model,lr,clip,seed,nan,tags,_source_line\n\
         run-a,Qwen/Qwen3-4B,0.00001,Infinity,1,true,2,\"\"\n\
         run-b,Qwen/Qwen3-8B,0.00002,1.0,2,false,0,\"\"\n"
    );
    // a key JSON cannot hold is a violation at its record
    std::fs::write(
        dir.join("configs/run-c.yaml"),
        "model: m\n1: one\noptim: {lr: 0.1, clip: 1.0}\nseed: 3\nloss_floor: 0.0\ntags: []\n",
    )
    .unwrap();
    let o = build(dir, &["--force"]);
    assert_violations(&o, 1, &["configs/run-c.yaml", "expected string keys, found the key 1"]);
    // records set aside keep their text as written (a key JSON cannot hold, a tag), and an
    // integer beyond 64 bits sets aside its record alone, not its document
    let sweep = tempfile::tempdir().unwrap();
    let dir = sweep.path();
    write(dir, "a.yaml", "runs: [{run: a, 1: x}, {run: b, acc: 0.5}]\n");
    write(dir, "b.yaml", "runs: [{run: c, acc: !custom 3}, {run: d, acc: 1}]\n");
    write(dir, "c.yaml", "runs: [{run: e, acc: 123456789012345678901234567890}, {run: f, acc: 2}, {run: g, acc: 3}]\n");
    let toml = one_source("sw", "*.yaml", "yaml", "record_path = \"/runs\"\n", "SELECT run, acc FROM raw", "");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("3 rows rejected while reading"), "{}", stderr(&o));
    let r = release(dir, "sw");
    assert_eq!(query(&r, "SELECT run FROM t ORDER BY run"), "run\nb\nd\nf\ng\n");
    let rejects = std::fs::read_to_string(r.join("rejects/raw.jsonl")).unwrap();
    assert!(rejects.contains("\"raw\":\"{run: a, 1: x}\""), "{rejects}");
    assert!(rejects.contains("\"raw\":\"{run: c, acc: !custom 3}\""), "{rejects}");
    assert!(rejects.contains("\"record\":{\"run\":\"e\",\"acc\":123456789012345678901234567890}"), "{rejects}");
    // a record_path that is no JSON pointer is the pipeline's error, at its line
    write(dir, "pipeline.toml", &toml.replace("record_path = \"/runs\"", "record_path = \"runs\""));
    let o = build(dir, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "pipeline.toml:6 (source raw): expected a JSON pointer (RFC 6901) for `record_path`: \"\" \
                for the document's root, or a path starting with '/' such as \"/runs\"; found \"runs\"";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
}

#[test]
fn a_yaml_number_a_float_would_change_is_held_to_its_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a float reads 1e-400 as 0, 2.0000000000000000001 as 2 and 1e400 as infinite (the YAML
    // parser gives it as a string)
    write(dir, "c/a.yaml", "seed: 2.0000000000000000001\nlr: 1.0e-5\nfloor: 1e-400\nclip: 1e400\n");
    let fields = "[[source.field]]\nname = \"seed\"\ntype = \"integer\"\n\
                  [[source.field]]\nname = \"lr\"\ntype = \"number\"\n\
                  [[source.field]]\nname = \"floor\"\ntype = \"number\"\n\
                  [[source.field]]\nname = \"clip\"\ntype = \"number\"\n";
    let sql = "SELECT seed, lr, floor, clip FROM raw";
    write(dir, "pipeline.toml", &one_source("y", "c/*.yaml", "yaml", fields, sql, ""));
    let o = build(dir, &[]);
    assert_violations(
        &o,
        3,
        &[
            "c/a.yaml:$.seed: fractional value 2.0000000000000000001 for integer column",
            "c/a.yaml:$.floor: number 1e-400 is too small for a 64-bit float (it would read as 0)",
            "c/a.yaml:$.clip: number 1e400 is out of range for a 64-bit float",
        ],
    );
    // beyond the float's range in an integer column: out of range, not a fraction
    write(dir, "c/a.yaml", "seed: 1e400\nlr: 1.0e-5\nfloor: 0.5\nclip: 1.0\n");
    let o = build(dir, &["--force"]);
    assert_violations(&o, 1, &["c/a.yaml:$.seed: integer 1e400 out of range for Int64"]);
    // a number column takes the nearest float, as from JSON; JSON text keeps the number as written
    write(dir, "c/a.yaml", "seed: 2.0000000000000000001\nnear: 0.99999999999999999\nfloor: 1e-400\n");
    let fields = "[[source.field]]\nname = \"seed\"\ntype = \"number\"\n\
                  [[source.field]]\nname = \"near\"\ntype = \"number\"\n\
                  [[source.field]]\nname = \"floor\"\ntype = \"any\"\n";
    let sql = "SELECT seed, near, floor FROM raw";
    write(dir, "pipeline.toml", &one_source("y", "c/*.yaml", "yaml", fields, sql, ""));
    let o = build(dir, &["--force", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "y"), "SELECT * FROM t"), "seed,near,floor\n2.0,1.0,1e-400\n");
}

#[test]
fn a_copied_trackio_database_is_said_to_add_no_row() {
    let src = trackio_project();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("db")).unwrap();
    std::fs::copy(src.join("raw/demo.db"), dir.join("db/demo.db")).unwrap();
    std::fs::copy(src.join("raw/demo.db"), dir.join("db/copy.db")).unwrap();
    let sql = "SELECT run, step, metric, value, log_id FROM raw";
    std::fs::write(dir.join("pipeline.toml"), one_source("cp", "db/*.db", "trackio-metrics", "", sql, "")).unwrap();
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "each log call is read once, by its log_id, so the copies add no row";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    assert!(!stderr(&o).contains("the rows of each are read"), "{}", stderr(&o));
    // the database's own metric rows (the fragments of the project not read here), once
    let once = query(&release(dir, "cp"), "SELECT count(*) AS n, count(DISTINCT log_id) AS ids FROM t");
    let (n, ids) = once.lines().nth(1).unwrap().split_once(',').unwrap();
    assert!(n.parse::<u64>().unwrap() > 0 && ids.parse::<u64>().unwrap() > 0, "{once}");
    let single = {
        std::fs::remove_file(dir.join("db/copy.db")).unwrap();
        let o = build(dir, &["-q", "--force"]);
        assert!(o.status.success(), "{}", stderr(&o));
        query(&release(dir, "cp"), "SELECT count(*) AS n, count(DISTINCT log_id) AS ids FROM t")
    };
    assert_eq!(once, single);
    // runs too: read once by run_id and config
    std::fs::copy(src.join("raw/demo.db"), dir.join("db/copy.db")).unwrap();
    let sql = "SELECT run_id, run, created_at FROM raw";
    std::fs::write(dir.join("pipeline.toml"), one_source("cp", "db/*.db", "trackio-runs", "", sql, "")).unwrap();
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("each run is read once, by its run_id and config, so the copies add no row"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("a run already read with the same run_id and config"), "{}", stderr(&o));
    let runs = query(&release(dir, "cp"), "SELECT count(*) AS n, count(DISTINCT run_id) AS ids FROM t");
    let (n, ids) = runs.lines().nth(1).unwrap().split_once(',').unwrap();
    assert_eq!(n, ids, "{runs}");
}

/// The text of the `.json` log that `inspect-ai` wrote for [`inspect_release`] (its bare NaN
/// tokens make it a text to edit, not a JSON document).
fn inspect_json_log() -> String {
    let project = inspect_release().ancestors().nth(3).unwrap().join("raw");
    let log = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    std::fs::read_to_string(&log).unwrap()
}

#[test]
fn an_inspect_log_that_did_not_finish_is_named_in_a_warning() {
    // the real log, as an eval that failed writes it: status `error`, no results (the JSON
    // holds bare NaN tokens, so it is edited as text)
    let text = inspect_json_log();
    let (status, results) = ("\"status\": \"success\"", "\"results\": {");
    assert!(text.contains(status) && text.contains(results), "{}", &text[..400.min(text.len())]);
    // and its error, as Inspect writes it: the message is kept, the traceback left out
    let error = "\"status\": \"error\", \"error\": {\"message\": \"RuntimeError('boom')\", \"traceback\": \"Traceback ...\", \"traceback_ansi\": \"\"}";
    let doc = text.replacen(status, error, 1).replacen(results, "\"results_of_another_run\": {", 1);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "logs/failed.json", &doc);
    let sql = "SELECT eval_id, status, error, scorer, metric FROM raw";
    write(dir, "pipeline.toml", &one_source("fl", "logs/*.json", "inspect-evals", "", sql, ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "1 Inspect log without results: logs/failed.json (status error); each gives one row whose scorer, \
                metric and value are null";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "fl"), "SELECT status, error, scorer FROM t"),
        "status,error,scorer\nerror,RuntimeError('boom'),\n"
    );
}

/// Samples that ended with an error (left out of the eval's metrics) and samples stopped at a
/// limit (scored on what they had) are counted in warnings, the first of each named, and
/// their columns hold what stopped them.
#[test]
fn inspect_samples_stopped_by_an_error_or_a_limit_are_counted() {
    let text = inspect_json_log();
    let retries = "\"error_retries\": []";
    assert_eq!(text.matches(retries).count(), 4);
    // the first sample stopped at a token limit, the second and third with an error
    let mut parts = text.split(retries);
    let mut doc = parts.next().unwrap().to_string();
    for (i, rest) in parts.enumerate() {
        doc.push_str(match i {
            0 => "\"limit\": {\"type\": \"token\", \"limit\": 40}, \"error_retries\": []",
            1 | 2 => "\"error\": {\"message\": \"RuntimeError('503')\", \"traceback\": \"T\"}, \"error_retries\": []",
            _ => retries,
        });
        doc.push_str(rest);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "logs/a.json", &doc);
    let sql = "SELECT sample_id, epoch, error, \"limit\", _source_line FROM raw";
    write(dir, "pipeline.toml", &one_source("st", "logs/*.json", "inspect-samples", "", sql, ""));
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    for said in [
        "2 Inspect samples ended with an error (the first: logs/a.json:/samples/1): the eval's metrics leave them out \
         (`completed_samples` below `total_samples`), and `error` holds each one's message",
        "1 Inspect sample stopped at a limit (token; the first: logs/a.json:/samples/0), scored on what it had: \
         `limit` names it",
    ] {
        assert!(stderr(&o).contains(said), "{}", stderr(&o));
    }
    let card = std::fs::read_to_string(release(dir, "st").join("README.md")).unwrap();
    assert!(card.contains("1 Inspect sample stopped at a limit (token;"), "{card}");
    assert_eq!(query(&release(dir, "st"), "SELECT count(error) AS e, count(\"limit\") AS l FROM t"), "e,l\n2,1\n");
}

#[test]
fn empty_yaml_and_json_documents_hold_no_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "y/a.yaml", "seed: 1\n");
    // created and never written, comments alone, an explicit null, a document marker alone
    for (name, text) in [("b.yaml", ""), ("c.yaml", "# nothing yet\n"), ("d.yaml", "~\n"), ("e.yaml", "---\n")] {
        write(dir, &format!("y/{name}"), text);
    }
    write(dir, "j/a.json", "[{\"seed\": 2}]");
    write(dir, "j/b.json", "");
    let toml = "name = \"e\"\n[[source]]\nname = \"y\"\npath = \"y/*.yaml\"\nformat = \"yaml\"\n\
                [[source]]\nname = \"j\"\npath = \"j/*.json\"\nformat = \"json\"\n\
                [[table]]\nname = \"t\"\nquery = \"SELECT seed FROM y UNION ALL SELECT seed FROM j\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "e"), "SELECT seed FROM t ORDER BY seed"), "seed\n1\n2\n");
    // the files of no bytes are named, as for any format
    assert!(stderr(&o).contains("source y read 1 empty file (0 bytes, no record): y/b.yaml"), "{}", stderr(&o));
    assert!(stderr(&o).contains("source j read 1 empty file (0 bytes, no record): j/b.json"), "{}", stderr(&o));
}

#[test]
fn a_source_that_gives_no_record_says_why_it_has_no_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // one YAML document with a repeated key: rejected whole, so no record names a column
    write(dir, "r.yaml", "- id: 1\n  score: 0.5\n  score: 0.6\n- id: 2\n  score: 0.7\n");
    write(dir, "pipeline.toml", &one_source("y", "r.yaml", "yaml", "", "SELECT id, score FROM raw", ""));
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let said = "(source raw): no column: a source's columns come from its records, and no record could be read \
                from its 1 file: 1 record set aside (the first: r.yaml: expected each key of a mapping once, found \
                \"score\" again at line 3, column 3 (in .[0])). Mend them, or declare its columns ([[source.field]], \
                a name and a type each) to read its records with those columns";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    // without reject, the record is a violation at its place, said as such
    let o = build(dir, &["-q"]);
    assert_violations(&o, 1, &["r.yaml:$: expected each key of a mapping once, found \"score\" again at line 3"]);
    // a record cut short that the source sets aside: no column either, said so
    write(dir, "c.jsonl", "{\"id\": 1");
    let toml = one_source("c", "c.jsonl", "jsonl", "on_truncated = \"reject\"\n", "SELECT id FROM raw", "");
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no record could be read from its 1 file: 1 record set aside"), "{}", stderr(&o));
    write(dir, "pipeline.toml", &one_source("y", "r.yaml", "yaml", "", "SELECT id, score FROM raw", ""));
    // files that hold no record: the columns declared build a table without rows
    write(dir, "r.yaml", "# nothing yet\n");
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("and its 1 file holds none (r.yaml): declare its columns"), "{}", stderr(&o));
    let fields =
        "[[source.field]]\nname = \"id\"\ntype = \"integer\"\n[[source.field]]\nname = \"score\"\ntype = \"number\"\n";
    write(dir, "pipeline.toml", &one_source("y", "r.yaml", "yaml", fields, "SELECT id, score FROM raw", ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "y"), "SELECT count(*) AS n FROM t"), "n\n0\n");
}

#[test]
fn a_fields_missing_values_are_read_as_null_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "s.csv", "run,acc\na,0.80\nb,n/a\nc,-\n");
    write(
        dir,
        "s.jsonl",
        "{\"run\": \"d\", \"acc\": 0.5}\n{\"run\": \"e\", \"acc\": \"n/a\"}\n{\"run\": \"f\", \"acc\": \"\"}\n",
    );
    let field = |m: &str| format!("[[source.field]]\nname = \"acc\"\ntype = \"number\"\nmissingValues = {m}\n");
    let toml = format!(
        "name = \"mv\"\n[[source]]\nname = \"c\"\npath = \"s.csv\"\nformat = \"csv\"\n{}\
         [[source]]\nname = \"j\"\npath = \"s.jsonl\"\nformat = \"jsonl\"\n{}\
         [[table]]\nname = \"t\"\nquery = \"SELECT run, acc FROM c UNION ALL SELECT run, acc FROM j\"\n",
        field("[\"n/a\", \"-\"]"),
        field("[\"n/a\", \"\"]")
    );
    write(dir, "pipeline.toml", &toml);
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("strings coerced in c: 2\n  s.csv:3:$.acc string \"n/a\" read as null (missingValues)"),
        "{err}"
    );
    assert!(err.contains("s.jsonl:3:$.acc string \"\" read as null (missingValues)"), "{err}");
    let r = release(dir, "mv");
    assert_eq!(query(&r, "SELECT run, acc FROM t ORDER BY run"), "run,acc\na,0.8\nb,\nc,\nd,0.5\ne,\nf,\n");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["report"]["coerced_values"], serde_json::json!({"c": 2, "j": 2}));
    // the card names each value changed, where a reader of the data looks
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    let said = "- source `c`: 2 strings read as numbers or nulls (the source's options), the first: s.csv:3:$.acc \
                string \"n/a\" read as null (missingValues); s.csv:4:$.acc string \"-\" read as null (missingValues).";
    assert!(card.contains(said), "{card}");
    // and `--format json` gives each with its place
    let o = build(dir, &["--force", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["coerced_values"]["c"]["count"], 2, "{doc}");
    assert_eq!(doc["coerced_values"]["c"]["examples"][0], "s.csv:3:$.acc string \"n/a\" read as null (missingValues)");
    // a text the list does not hold is a violation still; the field's list replaces the
    // source's, so an empty cell is one too
    write(dir, "s.csv", "run,acc\na,0.80\nb,N/A\nc,\n");
    let o = build(dir, &["--force"]);
    assert_violations(&o, 2, &["s.csv:3:$.acc: expected number, found string \"N/A\"", "s.csv:4:$.acc"]);
    // a Parquet source's values are read as stored
    write(
        dir,
        "pipeline.toml",
        &toml.replace("format = \"csv\"", "format = \"parquet\"").replace("s.csv", "p.parquet"),
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("field `acc`: missingValues applies to the fields of a `csv`, `jsonl`, `json` or `yaml` source"),
        "{}",
        stderr(&o)
    );
}

/// In a source typed by reading it, a text that stands for a missing value decides no type,
/// wherever it comes: the column is its numbers' (or booleans'), the text is named, and the
/// hint says how to read it as null.
#[test]
fn a_missing_values_text_types_no_column_and_the_hint_says_how_to_read_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "s.csv", "run,acc\na,n/a\nb,0.5\nc,-\n");
    write(dir, "s.jsonl", "{\"run\": \"d\", \"ok\": \"none\"}\n{\"run\": \"e\", \"ok\": true}\n");
    let toml = "name = \"mv\"\n[[source]]\nname = \"c\"\npath = \"s.csv\"\nformat = \"csv\"\n\
                [[source]]\nname = \"j\"\npath = \"s.jsonl\"\nformat = \"jsonl\"\n\
                [[table]]\nname = \"t\"\nquery = \"SELECT c.run, acc, ok FROM c FULL JOIN j ON c.run = j.run\"\n";
    write(dir, "pipeline.toml", toml);
    let o = build(dir, &[]);
    assert_violations(
        &o,
        3,
        &[
            "s.csv:2:$.acc: expected number, found string \"n/a\" (the column holds float64 values, the type the \
             value at s.csv:3 decided)",
            "s.csv:4:$.acc: expected number, found string \"-\"",
            "s.jsonl:1:$.ok: expected boolean, found string \"none\" (the column holds boolean values, the type the \
             value at s.jsonl:2 decided)",
        ],
    );
    let hint = "hint: a text that stands for a missing value among numbers or booleans (c.acc, j.ok) is read as null, \
                and counted, when its source's field lists it among its missingValues: a [[source.field]] table for \
                each (name = \"acc\", type = \"number\" and missingValues = [\"-\", \"n/a\"]; name = \"ok\", \
                type = \"boolean\" and missingValues = [\"none\"]), each key on a line of its own (with the texts \
                the field lists already;";
    assert!(stderr(&o).contains(hint), "{}", stderr(&o));
    assert!(!stderr(&o).contains("several types on purpose"), "{}", stderr(&o));
    // texts of that kind alone are text
    write(dir, "s.csv", "run,acc\na,n/a\nb,-\n");
    write(dir, "s.jsonl", "{\"run\": \"d\", \"ok\": \"none\"}\n");
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(dir, "mv");
    assert_eq!(
        query(&r, "SELECT arrow_typeof(acc) AS a, arrow_typeof(ok) AS o FROM t LIMIT 1"),
        "a,o\nUtf8View,Utf8View\n"
    );
    // in a part of a column, no missingValues reads it: the hint says so of the whole column
    write(dir, "s.jsonl", "{\"run\": \"d\", \"ok\": {\"max\": 1.0}}\n{\"run\": \"e\", \"ok\": {\"max\": \"-\"}}\n");
    let o = build(dir, &["--force"]);
    assert_violations(&o, 1, &["s.jsonl:2:$.ok.max: expected number, found string \"-\""]);
    assert!(!stderr(&o).contains("missingValues"), "{}", stderr(&o));
    assert!(stderr(&o).contains("several types on purpose (j.ok)"), "{}", stderr(&o));
}

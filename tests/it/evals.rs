//! Evaluation outputs in each documented layout (tinker-cookbook benchmark runner, per-checkpoint
//! eval folders) load into `evaluations` and `eval_samples` with exact counts and values; large
//! inputs are sharded.

use std::path::Path;

use crate::util::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A tinker-cookbook benchmark runner save_dir with two benchmarks, one in pass@k mode.
fn tinker_runner(dir: &Path) {
    let ck = dir.join("raw/step100");
    write(&ck.join("summary.json"), r#"{"gsm8k": {"score": 0.5, "num_examples": 4, "num_correct": 2}}"#);
    write(
        &ck.join("gsm8k/result.json"),
        r#"{"name": "gsm8k", "score": 0.5, "num_examples": 4, "num_correct": 2, "num_errors": 1, "num_truncated": 0,
            "metrics": {"total_turns": 8}, "time_seconds": 12.5, "pass_at_k": {}}"#,
    );
    let mut lines = String::new();
    for (i, reward, err) in [(2, 1.0, "null"), (0, 0.0, "\"timeout (300s)\""), (1, 1.0, "null"), (3, 0.0, "null")] {
        let turns = if err == "null" {
            format!(
                r#"[{{"role":"user","content":"q{i}","token_count":9,"metadata":{{}}}},{{"role":"assistant","content":"answer {i}","token_count":{},"metadata":{{}}}}]"#,
                10 + i
            )
        } else {
            "[]".to_string()
        };
        lines.push_str(&format!(
            "{{\"idx\": {i}, \"benchmark\": \"gsm8k\", \"example_id\": \"h{i}\", \"turns\": {turns}, \"reward\": {reward}, \"metrics\": {{}}, \"logs\": {{}}, \"error\": {err}, \"time_seconds\": 1.5}}\n"
        ));
    }
    write(&ck.join("gsm8k/trajectories.jsonl"), &lines);
    write(
        &ck.join("math/result.json"),
        r#"{"name": "math", "score": 0.25, "num_examples": 2, "num_correct": 1, "num_errors": 0, "num_truncated": 1,
            "metrics": {}, "time_seconds": 3.0, "pass_at_k": {"1": 0.25, "2": 0.5}}"#,
    );
    // pass@k mode: every sample is appended with the same idx/example_id
    write(
        &ck.join("math/trajectories.jsonl"),
        "{\"idx\": 0, \"benchmark\": \"math\", \"turns\": [], \"reward\": 1.0, \"metrics\": {}, \"logs\": {}, \"error\": null, \"time_seconds\": 1.0}\n\
         {\"idx\": 0, \"benchmark\": \"math\", \"turns\": [], \"reward\": 0.0, \"metrics\": {}, \"logs\": {}, \"error\": null, \"time_seconds\": 1.0}\n",
    );
}

/// A per-checkpoint eval folder (metrics JSON, generations, summary table).
fn checkpoint_folder(dir: &Path) {
    let d = dir.join("raw/results/qwen-grpo");
    write(
        &d.join("checkpoint-100_metrics.json"),
        r#"{"checkpoint": "checkpoint-100",
            "id": {"answer_accuracy": 0.75, "avg_response_len": 120.5, "avg_loss": 0.0, "count": 2, "validation_metrics": {}, "pass_at_k": {"pass@1": 0.75, "pass@2": 1.0}},
            "ood": {"answer_accuracy": 0.5, "avg_response_len": 140.0, "avg_loss": 0.0, "count": 2, "validation_metrics": {}, "pass_at_k": {"pass@1": 0.5, "pass@2": 0.5}},
            "total": {"answer_accuracy": 0.625, "avg_loss": 0.0, "count": 4, "validation_metrics": {"id": {}, "ood": {}}, "pass_at_k": {"pass@1": 0.625}}}"#,
    );
    let generations = |split: &str, rows: &[(i64, i64, i64)]| {
        rows.iter()
            .map(|(idx, em, tok)| format!("{{\"op\": 3, \"__idx\": {idx}, \"prompt\": \"p{idx}\", \"gold_answer\": \"4\", \"gen_answer\": \"{}\", \"gold_answer_raw\": \"4\", \"gen_answer_raw\": \"x\", \"resp_tokens\": {tok}, \"gen_solution_answer\": \"long text {split} {idx}\", \"exact_match\": {em}, \"template\": null}}\n", if *em == 1 { "4" } else { "5" }))
            .collect::<String>()
    };
    write(
        &d.join("checkpoint-100_id_generations.jsonl"),
        &generations("id", &[(0, 1, 100), (0, 1, 110), (1, 1, 120), (1, 0, 130)]),
    );
    write(
        &d.join("checkpoint-100_ood_generations.jsonl"),
        &generations("ood", &[(0, 1, 140), (0, 0, 150), (1, 0, 130), (1, 0, 140)]),
    );
    write(
        &d.join("summary.csv"),
        "checkpoint,id_acc,ood_acc,total_acc,id_avg_loss,ood_avg_loss,total_avg_loss,id_avg_resp_len,ood_avg_resp_len,count_id,count_ood,count_total\ncheckpoint-100,0.75,0.5,0.625,0.0,0.0,0.0,120.5,140.0,2,2,4\n",
    );
}

const PIPELINE: &str = r#"
name = "evals"

[[source]]
name = "runner_results"
path = "raw/{checkpoint}/{bench}/result.json"
format = "tinker-eval-result"

[[source]]
name = "runner_samples"
path = "raw/{checkpoint}/{bench}/trajectories.jsonl"
format = "tinker-eval-trajectories"
keep_text = true

[[source]]
name = "ckpt_metrics"
path = "raw/results/{model}/{ckpt}_metrics.json"
format = "eval-metrics"

[[source]]
name = "generations"
path = "raw/results/{model}/{checkpoint}_{split}_generations.jsonl"
format = "eval-generations"

[[source]]
name = "summary"
path = "raw/results/{model}/summary.csv"
format = "csv"

[[table]]
name = "evaluations"
query = """
SELECT checkpoint, benchmark, 'test' AS split, score,
       CAST(num_correct AS DOUBLE) / (num_examples - num_errors - num_truncated) AS score_completed,
       num_examples, num_correct, num_errors, num_truncated, pass_at_k, time_seconds,
       CAST(NULL AS DOUBLE) AS id_accuracy, CAST(NULL AS DOUBLE) AS ood_accuracy, CAST(NULL AS DOUBLE) AS total_accuracy,
       _source_file
FROM runner_results
UNION ALL
SELECT m.model || '/' || m.checkpoint, 'interplay', m.split, m.answer_accuracy AS score, m.answer_accuracy AS score_completed,
       m."count", CAST(round(m.answer_accuracy * m."count") AS BIGINT), CAST(NULL AS BIGINT) AS num_errors, CAST(NULL AS BIGINT) AS num_truncated,
       m.pass_at_k, CAST(NULL AS DOUBLE), s.id_acc, s.ood_acc, s.total_acc, m._source_file
FROM ckpt_metrics m LEFT JOIN summary s ON s.checkpoint = m.checkpoint AND s.model = m.model
"""

[[table]]
name = "eval_samples"
query = """
SELECT checkpoint, benchmark, 'test' AS split, example_id,
       row_number() OVER (PARTITION BY checkpoint, benchmark, example_id ORDER BY _source_line) - 1 AS sample,
       reward, correct, error IS NOT NULL AS errored, response_tokens, text, _source_file, CAST(_source_line AS VARCHAR) AS _source_line
FROM runner_samples
UNION ALL
SELECT model || '/' || checkpoint, 'interplay', split, example_id,
       row_number() OVER (PARTITION BY model, checkpoint, split, example_id ORDER BY _source_line) - 1,
       CASE WHEN exact_match THEN 1.0 ELSE 0.0 END, exact_match, false AS errored, response_tokens, CAST(NULL AS VARCHAR) AS text,
       _source_file, CAST(_source_line AS VARCHAR)
FROM generations
"""
"#;

#[test]
fn evaluation_layouts_load_with_exact_counts_and_values() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    tinker_runner(dir);
    checkpoint_folder(dir);
    std::fs::write(dir.join("pipeline.toml"), PIPELINE).unwrap();
    let o = run(bin().args(["build", "-q"]).arg(dir).arg("--releases-dir").arg(dir.join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    let r = dir.join("out/evals/0.1.0");
    assert_eq!(
        query(
            &r,
            "SELECT checkpoint, benchmark, split, score, score_completed, num_examples, num_errors, time_seconds FROM evaluations ORDER BY 1, 2, 3"
        ),
        "checkpoint,benchmark,split,score,score_completed,num_examples,num_errors,time_seconds\n\
         qwen-grpo/checkpoint-100,interplay,id,0.75,0.75,2,,\n\
         qwen-grpo/checkpoint-100,interplay,ood,0.5,0.5,2,,\n\
         qwen-grpo/checkpoint-100,interplay,total,0.625,0.625,4,,\n\
         step100,gsm8k,test,0.5,0.6666666666666666,4,1,12.5\n\
         step100,math,test,0.25,1.0,2,0,3.0\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT benchmark, split, cardinality(pass_at_k) AS n, pass_at_k[2]['k'] AS k2, pass_at_k[2]['value'] AS v2, id_accuracy FROM evaluations ORDER BY 1, 2"
        ),
        "benchmark,split,n,k2,v2,id_accuracy\ngsm8k,test,0,,,\ninterplay,id,2,2,1.0,0.75\ninterplay,ood,2,2,0.5,0.75\ninterplay,total,1,,,0.75\nmath,test,2,2,0.5,\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT benchmark, count(*) AS n, sum(CAST(correct AS INT)) AS correct, max(sample) AS max_sample, sum(response_tokens) AS tokens, count(text) AS texts FROM eval_samples GROUP BY benchmark ORDER BY 1"
        ),
        "benchmark,n,correct,max_sample,tokens,texts\ngsm8k,4,2,0,36,3\ninterplay,8,4,1,1020,0\nmath,2,1,1,0,0\n"
    );
    assert_eq!(
        query(&r, "SELECT example_id, errored, text FROM eval_samples WHERE benchmark = 'gsm8k' ORDER BY example_id"),
        "example_id,errored,text\nh0,true,\nh1,false,answer 1\nh2,false,answer 2\nh3,false,answer 3\n"
    );
}

#[test]
fn a_large_input_is_sharded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // about 200 MB of generations, each with ~1 KB of text
    let text = "x".repeat(1000);
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("gen.jsonl")).unwrap());
    use std::io::Write;
    let rows = 190_000u64;
    for i in 0..rows {
        writeln!(f, "{{\"op\": {}, \"__idx\": {i}, \"resp_tokens\": {}, \"gen_solution_answer\": \"{text}\", \"exact_match\": {}}}", i % 7, i % 500, i % 2).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    std::fs::write(
        dir.join("pipeline.toml"),
        "name = \"big\"\nformats = [\"parquet\", \"jsonl\"]\n[[source]]\nname = \"g\"\npath = \"gen.jsonl\"\nformat = \"eval-generations\"\nkeep_text = true\n\
         [[table]]\nname = \"eval_samples\"\nquery = \"SELECT example_id, op, exact_match, response_tokens, text, _source_line FROM g\"\n",
    )
    .unwrap();
    let o = run(bin()
        .args(["build", "-q", "--max-shard-bytes", "50000000"])
        .arg(dir)
        .arg("--releases-dir")
        .arg(dir.join("out")));
    assert!(o.status.success(), "{}", stderr(&o));
    let r = dir.join("out/big/0.1.0");
    let mut parquet = 0;
    for sub in ["data", "jsonl"] {
        for e in std::fs::read_dir(r.join(sub)).unwrap().flatten() {
            assert!(e.metadata().unwrap().len() <= 50_000_000, "{}", e.path().display());
            parquet += (sub == "data") as usize;
        }
    }
    assert!(parquet >= 4, "{parquet} shards");
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("path: data/eval_samples-*-of-*.parquet"), "the card globs the shards");
    assert_eq!(
        query(&r, "SELECT count(*), count(DISTINCT _source_line) FROM eval_samples"),
        format!("count(*),count(DISTINCT eval_samples._source_line)\n{rows},{rows}\n")
    );
    let o = run(bin().args(["verify", "--data"]).arg(&r));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // a shard taken out of the release, everything sealed again: the numbering tells
    let first = "data/eval_samples-00000-of-";
    let gone = std::fs::read_dir(r.join("data"))
        .unwrap()
        .flatten()
        .map(|e| format!("data/{}", e.file_name().to_string_lossy()))
        .find(|f| f.starts_with(first))
        .unwrap();
    std::fs::remove_file(r.join(&gone)).unwrap();
    let path = r.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["files"].as_array_mut().unwrap().retain(|f| f["path"] != gone.as_str());
    for t in m["tables"].as_array_mut().unwrap() {
        t["files"].as_array_mut().unwrap().retain(|f| f != gone.as_str());
        for s in t["splits"].as_array_mut().unwrap() {
            s["files"].as_array_mut().unwrap().retain(|f| f != gone.as_str());
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    reseal(&r);
    let o = run(bin().arg("verify").arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(&format!(" shards, but split train of table eval_samples has {} files", parquet - 1)),
        "{}",
        stdout(&o)
    );
}

#[test]
fn each_split_row_of_a_metrics_document_names_its_own_object() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("raw/ck-100_metrics.json"),
        r#"{"checkpoint": "ck-100", "id": {"count": 4}, "ood": {"count": 2}, "total": {"count": 6}}"#,
    );
    let sql = "SELECT checkpoint, split, \"count\", _source_file, _source_line FROM raw";
    write(&dir.join("pipeline.toml"), &one_source("m", "raw/{ck}_metrics.json", "eval-metrics", "", sql, ""));
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "m"), "SELECT split, \"count\", _source_line FROM t ORDER BY split"),
        "split,count,_source_line\nid,4,/id\nood,2,/ood\ntotal,6,/total\n"
    );
}

#[test]
fn non_finite_values_inside_kept_objects_are_named_by_their_raw_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("raw/c_metrics.json"),
        r#"{"checkpoint": "c", "id": {"count": 1, "per_op_accuracy": {"3": NaN}}, "total": {"count": 1},
            "per_template": {"A": [1, -Infinity]}}"#,
    );
    write(
        &dir.join("pipeline.toml"),
        &one_source("m", "raw/{ck}_metrics.json", "eval-metrics", "", "SELECT * FROM raw", ""),
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("raw/c_metrics.json:/id:$.id.per_op_accuracy.3 NaN"), "{err}");
    assert!(err.contains("raw/c_metrics.json:/total:$.per_template.A[1] -Infinity"), "{err}");
    // a split's own per_template is in the split's object; a null one clashes with nothing
    write(
        &dir.join("raw/c_metrics.json"),
        r#"{"checkpoint": "c", "ood": {"count": 2, "per_template": {"Q": Infinity}}, "total": {"count": 1, "per_template": null},
            "per_template": {"A": NaN}}"#,
    );
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("raw/c_metrics.json:/ood:$.ood.per_template.Q Infinity"), "{err}");
    assert!(err.contains("raw/c_metrics.json:/total:$.per_template.A NaN"), "{err}");
}

#[test]
fn records_of_another_shape_are_violations_one_per_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a metrics line where a trajectory belongs, an error that is no text, a generation that is a list
    write(
        &dir.join("raw/gsm8k/trajectories.jsonl"),
        "{\"step\": 0, \"optim/lr\": 0.001}\n{\"idx\": 1, \"error\": false, \"turns\": []}\n{\"idx\": 2, \"error\": null, \"turns\": []}\n",
    );
    let sql = "SELECT idx, error, _source_line FROM raw";
    write(
        &dir.join("pipeline.toml"),
        &one_source("tr", "raw/{bench}/trajectories.jsonl", "tinker-eval-trajectories", "", sql, ""),
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "raw/gsm8k/trajectories.jsonl:1:$: expected a trajectory (`idx` or `example_id`, `turns`, `reward`, …)"
        ),
        "{err}"
    );
    assert!(
        err.contains("raw/gsm8k/trajectories.jsonl:2:$.error: expected a string or null, found boolean false"),
        "{err}"
    );
    assert!(err.contains("2 violations found"), "{err}");
    // several problems of one record: a violation each, one reject with a reason each
    write(
        &dir.join("raw/c_metrics.json"),
        r#"{"checkpoint": "c", "id": {"count": 1, "pass_at_k": {"pass@": 0.1, "PASS@2": 0.4}}}"#,
    );
    write(
        &dir.join("raw/d_metrics.json"),
        r#"[{"checkpoint": "d", "id": {"count": 1}}, {"checkpoint": "e", "id": {"count": 2}}]"#,
    );
    write(
        &dir.join("pipeline.toml"),
        &one_source("m", "raw/{ck}_metrics.json", "eval-metrics", "", "SELECT checkpoint, split FROM raw", ""),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("3 violations found"), "{err}");
    assert!(
        err.contains("raw/d_metrics.json:$: expected a JSON object (one record), found an array of 2 item(s)"),
        "{err}"
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "m").join("rejects/raw.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = rejects.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{rejects}");
    assert_eq!(lines[0]["_reasons"].as_array().unwrap().len(), 2, "{rejects}");
}

#[test]
fn a_rejected_document_is_rejected_whole_and_without_the_texts_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a result written twice into one file: rejected whole, its row not kept as well
    write(&dir.join("raw/a/result.json"), r#"{"name":"g","score":0.5}{"name":"g","score":0.5}"#);
    write(&dir.join("raw/b/result.json"), r#"{"name":"other","score":0.25}"#);
    write(
        &dir.join("pipeline.toml"),
        &one_source("rr", "raw/{b}/result.json", "tinker-eval-result", "", "SELECT benchmark, b FROM raw", ""),
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "rr"), "SELECT benchmark, b FROM t"), "benchmark,b\nother,b\n");
    let rejects = std::fs::read_to_string(release(dir, "rr").join("rejects/raw.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 1, "{rejects}");
    assert!(rejects.contains("\"_source_file\":\"raw/a/result.json\""), "{rejects}");
    // a compressed document cut short is a read error, as for JSON Lines, not a line 0 of JSON
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, br#"{"name":"z","score":1.0}"#).unwrap();
    let bytes = gz.finish().unwrap();
    std::fs::remove_file(dir.join("raw/b/result.json")).unwrap();
    std::fs::write(dir.join("raw/b/result.json.gz"), &bytes[..bytes.len() - 4]).unwrap();
    write(
        &dir.join("pipeline.toml"),
        &one_source("rr", "raw/{b}/result.json*", "tinker-eval-result", "", "SELECT benchmark, b FROM raw", ""),
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    // a compressed stream that breaks is broken data, as a Parquet file that does not read
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("raw/b/result.json.gz: the compressed stream breaks before the end of the document: unexpected end of file; the file is cut short"),
        "{}",
        stderr(&o)
    );
    // without keep_text, a rejected generation or trajectory keeps no text its row leaves out
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("raw/c1_id_generations.jsonl"),
        "{\"__idx\": 0, \"op\": 1, \"prompt\": \"p0\", \"gen_solution_answer\": \"secret text\", \"exact_match\": 2, \"resp_tokens\": 3}\n",
    );
    write(
        &dir.join("pipeline.toml"),
        &one_source(
            "g",
            "raw/{ck}_{split}_generations.jsonl",
            "eval-generations",
            "",
            "SELECT example_id, ck FROM raw",
            "",
        ),
    );
    // and a line cut short, whose text cannot be parsed to leave the texts out
    std::fs::write(
        dir.join("raw/c1_ood_generations.jsonl"),
        "{\"__idx\": 1, \"gen_solution_answer\": \"secret cut\", \"exact_match\": 1",
    )
    .unwrap();
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "g").join("rejects/raw.jsonl")).unwrap();
    assert!(!rejects.contains("secret text") && rejects.contains("\"exact_match\":2"), "{rejects}");
    assert!(!rejects.contains("secret cut") && rejects.contains("c1_ood_generations.jsonl"), "{rejects}");
    assert!(rejects.contains("\"prompt\":\"p0\""), "{rejects}");
    write(
        &dir.join("raw/gsm8k/trajectories.jsonl"),
        "{\"idx\": 1, \"reward\": \"high\", \"turns\": [{\"role\": \"user\", \"content\": \"question\", \"token_count\": 2}, {\"role\": \"assistant\", \"content\": \"secret answer\", \"token_count\": 3}]}\n",
    );
    write(
        &dir.join("pipeline.toml"),
        &one_source("tr", "raw/{bench}/trajectories.jsonl", "tinker-eval-trajectories", "", "SELECT idx FROM raw", ""),
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "tr").join("rejects/raw.jsonl")).unwrap();
    assert!(!rejects.contains("secret answer") && !rejects.contains("question"), "{rejects}");
    assert!(rejects.contains("\"token_count\":3") && rejects.contains("\"reward\":\"high\""), "{rejects}");
    // with keep_text, the assistant's text, which the table keeps, and still not the prompt
    write(
        &dir.join("pipeline.toml"),
        &one_source(
            "tr",
            "raw/{bench}/trajectories.jsonl",
            "tinker-eval-trajectories",
            "keep_text = true\n",
            "SELECT idx FROM raw",
            "",
        ),
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "tr").join("rejects/raw.jsonl")).unwrap();
    assert!(rejects.contains("secret answer") && !rejects.contains("question"), "{rejects}");
}

#[test]
fn an_eval_folder_under_two_names_is_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(&dir.join("raw/m1/c_metrics.json"), r#"{"checkpoint": "c", "id": {"count": 1}}"#);
    std::os::unix::fs::symlink("m1", dir.join("raw/m2")).unwrap();
    write(
        &dir.join("pipeline.toml"),
        &one_source("m", "raw/{model}/{ck}_metrics.json", "eval-metrics", "", "SELECT model, checkpoint FROM raw", ""),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = "source raw read 2 files with the same bytes (";
    let card = std::fs::read_to_string(release(dir, "m").join("README.md")).unwrap();
    assert!(card.contains(said) && card.contains("raw/m1/c_metrics.json, raw/m2/c_metrics.json; the rows"), "{card}");
    let o = build(dir, &["--force"]);
    assert_eq!(stderr(&o).matches(said).count(), 1, "{}", stderr(&o));
}

#[test]
fn a_metrics_split_with_a_problem_is_rejected_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("raw/c_metrics.json"),
        r#"{"checkpoint": "c", "id": {"count": 1}, "ood": {"count": 2, "pass_at_k": {"pass@0": 1}}, "total": {"count": 3}}"#,
    );
    let sql = "SELECT checkpoint, split, \"count\", _source_line FROM raw";
    write(&dir.join("pipeline.toml"), &one_source("m", "raw/{ck}_metrics.json", "eval-metrics", "", sql, ""));
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "m"), "SELECT split, \"count\", _source_line FROM t ORDER BY split"),
        "split,count,_source_line\nid,1,/id\ntotal,3,/total\n"
    );
    let rejects = std::fs::read_to_string(release(dir, "m").join("rejects/raw.jsonl")).unwrap();
    let r: serde_json::Value = serde_json::from_str(rejects.trim()).unwrap();
    assert_eq!(r["_source_line"], "/ood", "{rejects}");
    assert_eq!(r["record"], serde_json::json!({"checkpoint": "c", "ood": {"count": 2, "pass_at_k": {"pass@0": 1}}}));
    // a split given as null is no split left to make a row of, and no problem
    write(&dir.join("raw/c_metrics.json"), r#"{"checkpoint": "c", "id": {"count": -3}, "ood": null}"#);
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 violation found"), "{}", stderr(&o));
    // a problem of the whole document still rejects it whole
    write(
        &dir.join("raw/c_metrics.json"),
        r#"{"checkpoint": "c", "id": {"count": 1}, "ood": {"count": -2}, "extra_key": 1}"#,
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "m"), "SELECT count(*) AS n FROM t"), "n\n0\n");
    let rejects = std::fs::read_to_string(release(dir, "m").join("rejects/raw.jsonl")).unwrap();
    assert!(
        rejects.contains("$.ood.count: expected a count (a whole number of at least 0), found number -2"),
        "{rejects}"
    );
}

#[test]
fn eval_counts_and_pass_at_k_values_out_of_range_are_violations() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("raw/gsm8k/result.json"),
        r#"{"name": "gsm8k", "score": 0.5, "num_examples": 4.0, "num_correct": 9, "num_errors": -1, "pass_at_k": {"1": 1.7, "2": 0.3, "3": -Infinity, "4": NaN, "18446744073709551616": 0.5}}"#,
    );
    write(
        &dir.join("pipeline.toml"),
        &one_source("rr", "raw/{b}/result.json", "tinker-eval-result", "", "SELECT benchmark FROM raw", ""),
    );
    let o = build(dir, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    for said in [
        "$.num_errors: expected a count (a whole number of at least 0), found number -1",
        "$.num_correct: expected at most num_examples (4) correct examples, found 9",
        "$.pass_at_k.1: expected a pass@k value from 0 to 1, found number 1.7",
        "$.pass_at_k.3: expected a pass@k value from 0 to 1, found -Infinity",
        "positive integer (this k is beyond 64 bits)",
        "5 violations found",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
}

#[test]
fn a_trajectory_whose_turns_are_not_objects_puts_no_prompt_in_a_reject() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("raw/gsm8k/trajectories.jsonl"),
        "{\"idx\": 1, \"reward\": 1.0, \"turns\": [\"PROMPT_A secret\", {\"role\": \"assistant\", \"content\": \"x\", \"token_count\": 1}]}\n\
         {\"idx\": 2, \"reward\": 1.0, \"turns\": \"PROMPT_E secret\"}\n\
         {\"idx\": 3, \"reward\": 1.0, \"turns\": [[{\"role\": \"user\", \"content\": \"PROMPT_H secret\"}]]}\n",
    );
    write(
        &dir.join("pipeline.toml"),
        &one_source("tr", "raw/{bench}/trajectories.jsonl", "tinker-eval-trajectories", "", "SELECT idx FROM raw", ""),
    );
    let o = build(dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "tr").join("rejects/raw.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 3, "{rejects}");
    assert!(!rejects.contains("secret"), "{rejects}");
    assert!(rejects.contains("found a string of 15 characters"), "{rejects}");
    let o = build(dir, &["-q", "--force"]);
    assert!(!stderr(&o).contains("secret"), "{}", stderr(&o));
}

//! W&B exports as sources: every flavour in ../shared/corpus/wandb-*, the W&B field cases
//! (B23, B25, B26, B27, B29), run directories written by the real `wandb` client in offline
//! mode, and a truncated `.wandb` log.

use std::path::{Path, PathBuf};

use crate::util::*;

/// A pipeline with one W&B source per (name, path TOML, wandb options) and one table per
/// (name, SQL, extra TOML).
fn pipeline(name: &str, sources: &[(&str, &str, &str)], tables: &[(&str, &str, &str)]) -> String {
    let mut t = format!("name = \"{name}\"\n");
    for (n, path, opts) in sources {
        t.push_str(&format!("[[source]]\nname = \"{n}\"\npath = {path}\nformat = \"wandb\"\nwandb = {opts}\n"));
    }
    for (n, sql, extra) in tables {
        t.push_str(&format!("[[table]]\nname = \"{n}\"\nquery = \"\"\"{sql}\"\"\"\n{extra}\n"));
    }
    t
}

/// `../shared/corpus` linked into a temp pipeline folder, or None (the test then skips).
fn corpus_pipeline() -> Option<(tempfile::TempDir, PathBuf)> {
    let Some(shared) = shared() else {
        eprintln!("skipped: ../shared/corpus is absent (the W&B corpus is not redistributable and is read in place)");
        return None;
    };
    let corpus = shared.join("corpus");
    if !corpus.join("wandb-offline").is_dir() {
        eprintln!("skipped: ../shared/corpus/wandb-* is absent");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&corpus, dir.join("corpus")).unwrap();
    Some((tmp, dir))
}

#[test]
fn corpus_every_wandb_flavour_reads() {
    let Some((_t, dir)) = corpus_pipeline() else { return };
    let ui = r#"["corpus/wandb-ui-export/oraby8_research_tts/*.csv", "corpus/wandb-ui-export/Lucas-longxutang_Comp3242_Group_Project_nanoGPT/**/*.csv", "corpus/wandb-ui-export/Bowen-n_GNN-Kernel-Test/*.csv"]"#;
    let charts = r#"["corpus/wandb-ui-export/druidowm_nanoGPT/*.csv", "corpus/wandb-ui-export/Junyoungpark_snet-analysis/*.csv"]"#;
    let toml = pipeline(
        "corpus",
        &[
            ("ui", ui, r#"{ table = "runs", column = [{ name = "lr", from = "learning_rate", type = "number" }] }"#),
            ("api", "\"corpus/wandb-api-runs/**/*.csv\"", r#"{ table = "runs" }"#),
            ("chart", charts, r#"{ table = "history", on_sampled = "accept" }"#),
            (
                "hist",
                "\"corpus/wandb-history/oraby8_research_tts/{run}.csv\"",
                r#"{ table = "history", run_capture = "run" }"#,
            ),
            ("dirs", "\"corpus/wandb-offline/**\"", r#"{ table = "runs" }"#),
            // two of the runs logged steps (their summaries say so) whose history is not in the corpus
            ("dirhist", "\"corpus/wandb-offline/**\"", r#"{ table = "history", on_sampled = "accept" }"#),
            ("dirsys", "\"corpus/wandb-offline/**\"", r#"{ table = "system" }"#),
            ("dirhg", "\"corpus/wandb-offline/**\"", r#"{ table = "histograms" }"#),
        ],
        &[
            ("t_ui", "SELECT * FROM ui", ""),
            ("t_api", "SELECT * FROM api", ""),
            ("t_chart", "SELECT * FROM chart", ""),
            ("t_hist", "SELECT * FROM hist", ""),
            ("t_dirs", "SELECT * FROM dirs", ""),
            ("t_dirhist", "SELECT * FROM dirhist", ""),
            ("t_dirsys", "SELECT * FROM dirsys", ""),
            ("t_dirhg", "SELECT * FROM dirhg", ""),
        ],
    );
    write(&dir, "pipeline.toml", &toml);
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "corpus");
    // named when built, and in the card whatever the number of other warnings
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    for run in ["jnyhr7aj: sampled export: history missing", "5milpyx4: sampled export: history missing"] {
        assert!(stderr(&o).contains(run), "{run}: {}", stderr(&o));
        assert!(card.contains(run), "{run}: {card}");
    }
    assert!(card.contains("run breezy-cloud-41: sampled export"), "{card}");
    // UI runs tables
    assert_eq!(
        query(&r, "SELECT _source_file, count(*), count(run_id) FROM t_ui GROUP BY 1 ORDER BY 1"),
        "_source_file,count(*),count(t_ui.run_id)\n\
         corpus/wandb-ui-export/Bowen-n_GNN-Kernel-Test/wandb_export.csv,54,0\n\
         corpus/wandb-ui-export/Lucas-longxutang_Comp3242_Group_Project_nanoGPT/training_records/wandb_export.csv,64,0\n\
         corpus/wandb-ui-export/oraby8_research_tts/wandb_export_2026-03-02T10_38_30.064+02_00.csv,1,0\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT name, state, runtime_s, created_at, array_to_string(tags, '|') AS tags, lr, \
             json_float(json_get(fields, 'best_test_acc')) AS acc FROM t_ui \
             WHERE name IN ('run_20260302_075455', 'CiteSeer_graphsage_256_3_3_max') OR created_at = '2026-05-25T14:08:33Z' ORDER BY name"
        ),
        "name,state,runtime_s,created_at,tags,lr,acc\n\
         CiteSeer_graphsage_256_3_3_max,,,,,,0.7509999871253967\n\
         G1_ternary_weights,finished,732.0,2026-05-25T14:08:33Z,full,0.001,\n\
         run_20260302_075455,running,2536.0,2026-03-02T07:54:57Z,,0.00002,\n"
    );
    // api.runs() dumps
    assert_eq!(
        query(
            &r,
            "SELECT _source_file, count(*), count(DISTINCT run_id), count(DISTINCT name) FROM t_api GROUP BY 1 ORDER BY 1"
        ),
        "_source_file,count(*),count(DISTINCT t_api.run_id),count(DISTINCT t_api.name)\n\
         corpus/wandb-api-runs/Lucas-longxutang_Comp3242_Group_Project_nanoGPT/wandb_summary.csv,96,96,16\n\
         corpus/wandb-api-runs/MaxLEAF3824_gpt_mi/runs.csv,705,0,407\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT run_id, name, entity, project, runtime_s, last_step, state, \"group\", array_to_string(tags, '|') AS tags, \
             created_at, json_get(summary, '_wandb') AS w FROM t_api WHERE run_id = 'ub5c1qiz' OR (name = 'kind-pond-1772' AND _source_line = 2)"
        ),
        "run_id,name,entity,project,runtime_s,last_step,state,group,tags,created_at,w\n\
         ub5c1qiz,baseline,madhavkrishnan747-australian-national-university,nanogpt-ablations,1257.0,522,finished,,,2026-05-23T13:20:37Z,\n\
         ,kind-pond-1772,,,1883.6169786453247,1259,finished,triviaqa_long,seed_9999|soft,2024-05-13T12:59:30Z,\n"
    );
    // chart panels: long rows per run, split on the last " - "
    assert_eq!(
        query(
            &r,
            "SELECT x_axis, count(*), count(DISTINCT run_name), count(DISTINCT metric), min(step), max(step) FROM t_chart GROUP BY 1 ORDER BY 1"
        ),
        "x_axis,count(*),count(DISTINCT t_chart.run_name),count(DISTINCT t_chart.metric),min(t_chart.step),max(t_chart.step)\n\
         Step,1184,8,1,0,385\nepoch_id,4214,14,1,1,3301\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT run_name, step, value, value_min, value_max, metric FROM t_chart WHERE run_name = 'gpt2' ORDER BY step LIMIT 1"
        ),
        "run_name,step,value,value_min,value_max,metric\ngpt2,0,10.95404052734375,10.95404052734375,10.95404052734375,train/loss\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT count(DISTINCT run_name) FROM t_chart WHERE run_name = 'gpt2_char_to_token1729578574.2848036'"
        ),
        "count(DISTINCT t_chart.run_name)\n1\n"
    );
    // history dump: run id from the capture, ints printed as floats, index column dropped
    assert_eq!(
        query(
            &r,
            "SELECT run_id, count(*), count(DISTINCT step), max(step), count(DISTINCT metric) FROM t_hist GROUP BY 1"
        ),
        "run_id,count(*),count(DISTINCT t_hist.step),max(t_hist.step),count(DISTINCT t_hist.metric)\nwandb_history,464,42,41,14\n"
    );
    assert_eq!(query(&r, "SELECT value FROM t_hist WHERE metric = 'trainable_parameters'"), "value\n533476352.0\n");
    // run directories of wandb 0.8, 0.16 and 0.18
    assert_eq!(
        query(
            &r,
            "SELECT run_id, state, project, runtime_s, last_step, created_at, json_get(metadata, 'email') AS email, \
             json_float(json_get(config, 'lr')) AS lr, json_float(json_get(config, 'min_lr')) AS min_lr FROM t_dirs ORDER BY run_id"
        ),
        "run_id,state,project,runtime_s,last_step,created_at,email,lr,min_lr\n\
         18kqfww9,killed,pytorch-ac-mountaincarcont,252.23263502120972,180,2020-03-24T21:34:32.615444Z,,,\n\
         5milpyx4,running,,480.24479389190674,1275,2023-12-11T19:01:52.357295Z,,,\n\
         94w65e4d,killed,pytorch-vpg-mountaincarcont,6.334512233734131,1,2020-03-24T02:01:46.594824Z,,0.0005,\n\
         jnyhr7aj,,,539.711665184,10,2024-10-12T22:33:25.977172Z,\"\"\"REDACTED\"\"\",,0.00006\n\
         ohlnfnqx,running,,525.0,,2023-11-30T02:56:20.582546Z,,,\n"
    );
    assert!(!query(&r, "SELECT config_raw FROM t_dirs WHERE run_id = '18kqfww9'").contains("REDACTED"));
    assert!(query(&r, "SELECT config_raw FROM t_dirs WHERE run_id = '18kqfww9'").contains("desc"));
    assert_eq!(
        query(&r, "SELECT run_id, count(*), count(DISTINCT step) FROM t_dirhist GROUP BY 1 ORDER BY 1"),
        "run_id,count(*),count(DISTINCT t_dirhist.step)\n18kqfww9,728,181\n94w65e4d,4,2\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT run_id, count(*), count(DISTINCT timestamp), min(timestamp) FROM t_dirsys GROUP BY 1 ORDER BY 1"
        ),
        "run_id,count(*),count(DISTINCT t_dirsys.timestamp),min(t_dirsys.timestamp)\n18kqfww9,81,9,1585085701.0\n94w65e4d,9,1,1585015312.0\n"
    );
    assert_eq!(query(&r, "SELECT count(*) FROM t_dirhist WHERE metric LIKE 'system.%'"), "count(*)\n0\n");
    assert_eq!(
        query(
            &r,
            "SELECT run_id, count(*) AS n, count(*) FILTER (WHERE origin = 'summary') AS s FROM t_dirhg GROUP BY 1"
        ),
        "run_id,n,s\n18kqfww9,12,6\n"
    );
}

#[test]
fn a_wandb_table_export_is_refused_with_a_pointer_to_csv() {
    let Some((_t, dir)) = corpus_pipeline() else { return };
    write(
        &dir,
        "pipeline.toml",
        &pipeline(
            "tbl",
            &[("x", "\"corpus/wandb-table/**/*.csv\"", r#"{ table = "runs" }"#)],
            &[("t", "SELECT * FROM x", "")],
        ),
    );
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("corpus/wandb-table/LeoGrin_rlhf_experiments/wandb.csv: cannot tell which W&B export"), "{e}");
    assert!(e.contains("columns: text, score") && e.contains("format = \"csv\""), "{e}");
    // read as a plain CSV it has its 128 rows, multi-line cells included
    write(
        &dir,
        "pipeline.toml",
        "name = \"tbl\"\n[[source]]\nname = \"x\"\npath = \"corpus/wandb-table/**/*.csv\"\nformat = \"csv\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM x\"\n",
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(&dir, "tbl"), "SELECT count(*) FROM t"), "count(*)\n128\n");
}

#[test]
fn b23_sampled_history_fails_and_full_history_builds() {
    let (_t, dir) = case("B23");
    std::fs::remove_file(dir.join("history/k3v9x2qa.csv")).ok();
    make(&dir, &[]);
    let sources = [("hist", r#"["runs.json", "history/*.csv"]"#, r#"{ table = "history" }"#)];
    let tables = [("history", "SELECT run_id, step, metric, value, sampled FROM hist", "")];
    write(&dir, "pipeline.toml", &pipeline("b23", &sources, &tables));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(
            "history incomplete: history/k3v9x2qa.csv has 500 rows (max `_step` 9980); the run reports 10,000 rows (lastHistoryStep 9999)"
        ),
        "{e}"
    );
    assert!(!e.contains("p2m8d5wn"), "{e}");
    // without the run list, the constant stride still gives it away
    let sources_alone = [("hist", r#""history/*.csv""#, r#"{ table = "history" }"#)];
    write(&dir, "pipeline.toml", &pipeline("b23", &sources_alone, &tables));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("history looks sampled: history/k3v9x2qa.csv has 500 rows with `_step` every 20 (0 … 9980)"),
        "{}",
        stderr(&o)
    );
    // accepted as a sampled export: built, marked, and said in the card
    let accept = [("hist", r#"["runs.json", "history/*.csv"]"#, r#"{ table = "history", on_sampled = "accept" }"#)];
    write(&dir, "pipeline.toml", &pipeline("b23", &accept, &tables));
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b23");
    assert_eq!(
        query(&r, "SELECT run_id, bool_and(sampled) AS s, count(*) FROM history GROUP BY 1 ORDER BY 1"),
        "run_id,s,count(*)\nk3v9x2qa,true,500\np2m8d5wn,false,5\n"
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("run k3v9x2qa: sampled export"), "{card}");
    // the full history builds: 10,005 rows keyed by (run id, _step), no index column
    make(&dir, &["--full"]);
    write(&dir, "pipeline.toml", &pipeline("b23", &sources, &tables));
    let o = build(&dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(
            &r,
            "SELECT count(*) AS n, count(DISTINCT run_id || '/' || CAST(step AS VARCHAR)) AS keys, count(DISTINCT metric) AS m, bool_or(sampled) AS s FROM history"
        ),
        "n,keys,m,s\n10005,10005,1,false\n"
    );
}

fn b25_build(dir: &Path) -> std::process::Output {
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "b25",
            &[("runs", "\"runs-page-*.json\"", r#"{ table = "runs" }"#)],
            &[("wandb_runs", "SELECT run_id, name, summary FROM runs", "")],
        ),
    );
    build(dir, &["-q", "--force"])
}

#[test]
fn b25_duplicate_and_missing_runs_in_pages() {
    let (_t, dir) = case("B25");
    let o = b25_build(&dir);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("expected 100 runs, got 99 unique (duplicate: r0000050, in runs-page-1.json and runs-page-2.json)"),
        "{e}"
    );
    assert!(e.contains("1 run(s) reported by the API are missing"), "{e}");
    // totalCount 99: builds with one row per id, one identical duplicate dropped and counted
    for p in ["runs-page-1.json", "runs-page-2.json"] {
        let t = std::fs::read_to_string(dir.join(p)).unwrap().replace("\"totalCount\": 100", "\"totalCount\": 99");
        write(&dir, p, &t);
    }
    let o = b25_build(&dir);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b25");
    assert_eq!(
        query(&r, "SELECT count(*), count(DISTINCT run_id) FROM wandb_runs"),
        "count(*),count(DISTINCT wandb_runs.run_id)\n99,99\n"
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["report"]["duplicates_dropped"]["runs"], 1, "{}", m["report"]);
    // copies that differ: both files and the field are named
    let t = std::fs::read_to_string(dir.join("runs-page-2.json")).unwrap();
    let i = t.find("\"r0000050\"").unwrap();
    let j = i + t[i..].find("\"reward\": ").unwrap() + "\"reward\": ".len();
    let k = j + t[j..].find(['\n', '}']).unwrap();
    write(&dir, "runs-page-2.json", &format!("{}0.999{}", &t[..j], &t[k..]));
    let o = b25_build(&dir);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("run r0000050 is listed twice with different values at $.summary.reward"), "{e}");
    assert!(e.contains("runs-page-1.json:50") && e.contains("runs-page-2.json:1"), "{e}");
}

#[test]
fn b26_config_shapes_normalise_alike_and_keep_the_original() {
    let (_t, dir) = case("B26");
    let cols = r#"column = [{ name = "lr", from = "config.lr", type = "number" }, { name = "batch_size", from = "config.batch_size", type = "integer" }]"#;
    write(
        &dir,
        "pipeline.toml",
        &pipeline(
            "b26",
            &[
                ("api", "\"runs.jsonl\"", &format!("{{ table = \"runs\", {cols} }}")),
                ("dirs", "\"run-dirs/**\"", &format!("{{ table = \"runs\", {cols} }}")),
            ],
            &[(
                "wandb_runs",
                "SELECT run_id, config, config_raw, lr, batch_size, source FROM api UNION ALL SELECT run_id, config, config_raw, lr, batch_size, source FROM dirs",
                "",
            )],
        ),
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b26");
    assert_eq!(
        query(
            &r,
            "SELECT run_id, lr, batch_size, json_float(json_get(config, 'lr')) AS clr, json_int(json_get(config, 'batch_size')) AS cbs, \
             json_get(config, 'schedule') AS schedule, json_typeof(json_get(config, '_wandb')) AS w, source FROM wandb_runs ORDER BY run_id"
        ),
        "run_id,lr,batch_size,clr,cbs,schedule,w,source\n\
         a1a1a1a1,0.001,64,0.001,64,,,api-runs-json\n\
         b2b2b2b2,0.001,64,0.001,64,,,api-runs-json\n\
         c3c3c3c3,0.001,64,0.001,64,,,api-runs-json\n\
         d4d4d4d4,0.001,64,0.001,64,\"{\"\"unit\"\":\"\"steps\"\",\"\"value\"\":100}\",,run-dir\n\
         e5e5e5e5,0.001,64,0.001,64,,,run-dir\n"
    );
    // same normalised value for every shape but d4d4d4d4
    let configs = query(&r, "SELECT config FROM wandb_runs WHERE run_id <> 'd4d4d4d4' ORDER BY run_id");
    for line in configs.lines().skip(1) {
        let text = line.trim_matches('"').replace("\"\"", "\"");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, serde_json::json!({"batch_size": 64, "lr": 0.001}), "{line}");
    }
    assert_eq!(crate_type(&r, "lr"), "Float64");
    assert_eq!(crate_type(&r, "batch_size"), "Int64");
    // the untouched original is kept
    let raw = query(&r, "SELECT run_id, config_raw FROM wandb_runs ORDER BY run_id");
    assert!(raw.contains("cli_version") && raw.contains("per device") && raw.contains("{\"\"lr\"\": 0.001, "), "{raw}");
}

fn crate_type(release: &Path, column: &str) -> String {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(release.join("manifest.json")).unwrap()).unwrap();
    let t = &m["tables"][0];
    t["arrow_schema"].as_array().unwrap().iter().find(|f| f["name"] == column).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn b27_rich_summary_values_never_become_strings() {
    let (_t, dir) = case("B27");
    let cols = r#"column = [{ name = "loss", from = "summary.loss", type = "number" }, { name = "reward_mean", from = "summary.reward_mean", type = "number" }]"#;
    write(
        &dir,
        "pipeline.toml",
        &pipeline(
            "b27",
            &[
                ("runs", "\"run-*/**\"", &format!("{{ table = \"runs\", {cols} }}")),
                ("hg", "\"run-*/**\"", r#"{ table = "histograms" }"#),
            ],
            &[
                ("wandb_runs", "SELECT run_id, loss, reward_mean, last_step, runtime_s, summary FROM runs", ""),
                ("histograms", "SELECT run_id, key, step, bin_edges, counts FROM hg", ""),
            ],
        ),
    );
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let said = "2 media value(s) skipped (`attention` (image-file), `samples` (table-file)): media values are \
                references to files, not data, and are not read";
    assert!(e.contains(said), "{e}");
    // the histograms the runs table skips are read by the pipeline's histograms source: not said
    assert!(!e.contains("histogram value(s) skipped"), "{e}");
    let r = release(&dir, "b27");
    assert_eq!(
        query(&r, "SELECT run_id, loss, reward_mean, last_step, runtime_s FROM wandb_runs"),
        "run_id,loss,reward_mean,last_step,runtime_s\nx7c2m9qp,0.31,0.58,120,360.5\n"
    );
    assert_eq!(crate_type(&r, "loss"), "Float64");
    let summary = query(&r, "SELECT summary FROM wandb_runs");
    for bad in ["_type", "predictions", "logits", "samples", "attention", "_wandb"] {
        assert!(!summary.contains(bad), "{bad} in {summary}");
    }
    let h = query(
        &r,
        "SELECT key, step, array_to_string(counts, ',') AS c, array_to_string(bin_edges, ',') AS e FROM histograms ORDER BY key",
    );
    assert!(h.starts_with("key,step,c,e\nlogits,120,\"1,4,4,1\",\"-2,-1,0,1,2\"\npredictions,120,\"3,5,2\""), "{h}");
    // a `from` that no run has is a mistake, not a column of nulls
    let typo = r#"column = [{ name = "loss", from = "summary.los", type = "number" }]"#;
    write(
        &dir,
        "pipeline.toml",
        &pipeline(
            "b27",
            &[("runs", "\"run-*/**\"", &format!("{{ table = \"runs\", {typo} }}"))],
            &[("wandb_runs", "SELECT run_id, loss FROM runs", "")],
        ),
    );
    let o = build(&dir, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "pipeline.toml:3 (source runs), [[source.wandb.column]] loss: from = \"summary.los\" names a key none of the 1 \
             run(s) read has"
        ),
        "{}",
        stderr(&o)
    );
    let edges = query(&r, "SELECT unnest(bin_edges) AS e FROM histograms WHERE key = 'predictions'");
    let got: Vec<f64> = edges.lines().skip(1).map(|l| l.parse().unwrap()).collect();
    for (g, w) in got.iter().zip([0.0, 0.1, 0.2, 0.3]) {
        assert!((g - w).abs() < 1e-12, "{got:?}");
    }
    assert_eq!(got.len(), 4);
    // a key every run holds as null (a hyperparameter left None) is a column of nulls
    write(
        &dir,
        "run-20250303_120000-x7c2m9qp/files/config.yaml",
        "wandb_version: 1\nwarmup:\n  desc: null\n  value: null\n",
    );
    let none = r#"column = [{ name = "warmup", from = "config.warmup", type = "number" }]"#;
    write(
        &dir,
        "pipeline.toml",
        &pipeline(
            "b27",
            &[("runs", "\"run-*/**\"", &format!("{{ table = \"runs\", {none} }}"))],
            &[("wandb_runs", "SELECT run_id, warmup FROM runs", "")],
        ),
    );
    let o = build(&dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(&dir, "b27"), "SELECT run_id, warmup FROM wandb_runs"), "run_id,warmup\nx7c2m9qp,\n");
}

#[test]
fn b29_system_metrics_are_a_separate_time_keyed_table() {
    let (_t, dir) = case("B29");
    let wide = "SELECT run_id, timestamp AS _timestamp, \
        max(CASE WHEN metric = 'system.gpu.0.gpu' THEN value END) AS \\\"system.gpu.0.gpu\\\", \
        max(CASE WHEN metric = 'system.gpu.0.memoryAllocated' THEN value END) AS \\\"system.gpu.0.memoryAllocated\\\", \
        max(CASE WHEN metric = 'system.cpu' THEN value END) AS \\\"system.cpu\\\" FROM sys GROUP BY run_id, timestamp";
    let toml = pipeline(
        "b29",
        &[("hist", "\"run-*/**\"", r#"{ table = "history" }"#), ("sys", "\"run-*/**\"", r#"{ table = "system" }"#)],
        &[
            ("history", "SELECT run_id, step, metric, value FROM hist", ""),
            (
                "system_metrics",
                wide,
                "description = \"System metrics: periodic samples keyed by time (run id, `_timestamp`), not by step.\"",
            ),
        ],
    ) + "[card]\n[[card.section]]\ntitle = \"System metrics\"\ntext = \"Periodic samples keyed by time, never joined on steps; seconds between samples per run:\"\nquery = \"SELECT run_id, count(*) AS samples, (max(_timestamp) - min(_timestamp)) / (count(*) - 1) AS seconds_between_samples FROM system_metrics GROUP BY run_id\"\n";
    // [card] must come before the tables in TOML terms only by key; sections are fine after
    write(&dir, "pipeline.toml", &toml);
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "b29");
    assert_eq!(
        query(
            &r,
            "SELECT count(*) AS n, count(DISTINCT step) AS steps, count(*) FILTER (WHERE metric LIKE 'system.%') AS sys FROM history"
        ),
        "n,steps,sys\n12,6,0\n"
    );
    assert_eq!(
        query(&r, "SELECT * FROM system_metrics ORDER BY _timestamp"),
        "run_id,_timestamp,system.gpu.0.gpu,system.gpu.0.memoryAllocated,system.cpu\n\
         p4t8n2wz,1741075230.0,87.0,41.2,12.5\n\
         p4t8n2wz,1741075260.0,91.5,41.9,13.0\n\
         p4t8n2wz,1741075290.0,89.25,42.0,12.75\n"
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains("periodic samples keyed by time"), "{card}");
    assert!(card.contains("| p4t8n2wz | 3 | 30.0 |"), "{card}");
}

/// Runs the real `wandb` client (offline) once per test run and returns its output folder.
fn offline_runs() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let o = run(std::process::Command::new(python())
            .arg(repo().join("tests/python/wandb_offline_runs.py"))
            .arg(d.path())
            .env("WANDB_MODE", "offline")
            .env_remove("WANDB_API_KEY")
            .env("NO_PROXY", "*")
            .env("HTTPS_PROXY", "http://127.0.0.1:9"));
        assert!(o.status.success(), "the wandb client failed: {}", stderr(&o));
        d
    })
    .path()
}

/// A run resumed in a folder W&B names after the first session's (`-1`: the name was taken):
/// init keeps each step's later session, record by record, and says so.
#[test]
fn init_keeps_the_later_session_of_a_resumed_run() {
    later_session_kept(|first, _| format!("{first}-1"));
}

/// A run resumed in a folder whose name sorts before the first session's (started under a time
/// zone hours behind, or offline after an online start: `offline-run-…` before `run-…`): the
/// time each record was logged, not the folder's name, makes the resumed session the later.
#[test]
fn init_keeps_the_later_session_whatever_its_folders_name() {
    later_session_kept(|_, second| format!("offline-run-19991231{}", &second["offline-run-YYYYMMDD".len()..]));
    later_session_kept(|first, _| first.replacen("offline-run-", "aaa-offline-run-", 1));
}

/// Renames the resumed run's second session folder to what `name(first, second)` gives, runs
/// init and a build, and checks that the second session's values are kept.
fn later_session_kept(name: impl Fn(&str, &str) -> String) {
    let src = offline_runs();
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("out/wandb");
    copy_files(&src.join("wandb"), &runs);
    let mut sessions: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with("-resume01"))
        .collect();
    sessions.sort();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    std::fs::rename(runs.join(&sessions[1]), runs.join(name(&sessions[0], &sessions[1]))).unwrap();
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(tmp.path().join("out")).args(["--name", "w", "-q"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/w/pipeline.toml")).unwrap();
    let table = &toml[toml.find("name = \"wandb_history\"").expect("the history table")..];
    assert!(table.contains("on_duplicate_key = \"keep-last\""), "{toml}");
    assert!(table.contains("record_columns = [\"run_id\", \"step\"]"), "{toml}");
    assert!(table.contains("order_by = \"timestamp\""), "{toml}");
    assert!(table.contains("step 5, metric \"reward\" also at"), "{toml}");
    let o = run(bin().current_dir(tmp.path()).args(["build", "pipelines/w"]));
    assert!(o.status.success(), "{}", stderr(&o));
    // the steps logged again are a note, the table keeping the later session's: no warning,
    // and nothing in the card that reads as a problem left open
    let err = stderr(&o);
    assert!(err.contains("table wandb_history keeps the later session's rows of each step"), "{err}");
    assert!(!err.contains("warning: wandb/"), "{err}");
    let card = std::fs::read_to_string(tmp.path().join("releases/w/0.1.0/README.md")).unwrap();
    assert!(!card.contains("logged in more than one of the run's files"), "{card}");
    let r = tmp.path().join("releases/w/0.1.0");
    // steps 5-9 came twice: the resumed session's values are kept
    let report =
        query(&r, "SELECT value FROM wandb_history WHERE run_id = 'resume01' AND step = 7 AND metric = 'reward'");
    assert_eq!(report, "value\n101.75\n");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert!(m["report"]["duplicates_dropped"]["wandb_history"].as_u64().unwrap() >= 5, "{m}");
}

#[test]
fn real_wandb_offline_runs_are_recovered_exactly() {
    let src = offline_runs();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    copy_files(&src.join("wandb"), &dir.join("wandb"));
    let toml = pipeline(
        "offline",
        &[
            ("hist", "\"wandb/**\"", r#"{ table = "history" }"#),
            ("runs", "\"wandb/**\"", r#"{ table = "runs" }"#),
            ("hg", "\"wandb/**\"", r#"{ table = "histograms" }"#),
        ],
        &[
            (
                "history",
                "SELECT run_id, step, metric, value, _source_file, _source_line FROM hist",
                "on_duplicate_key = \"keep-last\"\nschema = \"history.json\"",
            ),
            (
                "wandb_runs",
                "SELECT run_id, name, state, entity, project, \"group\", job_type, tags, config, summary, last_step, \
                 metadata, source_files FROM runs",
                "",
            ),
            ("histograms", "SELECT run_id, key, step, bin_edges, counts FROM hg", ""),
        ],
    );
    write(&dir, "pipeline.toml", &toml);
    write(
        &dir,
        "history.json",
        r#"{"fields":[{"name":"run_id","type":"string"},{"name":"step","type":"integer"},{"name":"metric","type":"string"},{"name":"value","type":"number"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["run_id","step","metric"]}"#,
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "offline");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("expected.json")).unwrap()).unwrap();
    // every logged value, exactly (JSON output: NaN and infinities as strings)
    let mut got = std::collections::BTreeMap::new();
    let o = run(bin()
        .args(["query", "-q", "--format", "json"])
        .arg(&r)
        .arg("SELECT run_id, step, metric, value FROM history"));
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
    for v in rows {
        got.insert(
            format!("{}/{}/{}", v["run_id"].as_str().unwrap(), v["step"], v["metric"].as_str().unwrap()),
            v["value"].clone(),
        );
    }
    let mut n = 0;
    for (run_id, values) in expected["values"].as_object().unwrap() {
        for (key, want) in values.as_object().unwrap() {
            let k = format!("{run_id}/{key}");
            let g = got.get(&k).unwrap_or_else(|| panic!("{k} missing"));
            match (g.as_f64(), want.as_f64()) {
                (Some(a), Some(b)) => assert!(a.to_bits() == b.to_bits(), "{k}: {a} vs {b}"),
                _ => assert_eq!(g, want, "{k}"),
            }
            n += 1;
        }
    }
    assert_eq!(n, got.len(), "runpack has rows the client never logged");
    assert_eq!(n, 20_000 + 15);
    // the resumed run: steps 5-9 came twice, the resumed values win
    let report = query(&r, "SELECT value FROM history WHERE run_id = 'resume01' AND step = 7");
    assert_eq!(report, "value\n101.75\n");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["report"]["duplicates_dropped"]["history"], 5);
    // runs: identity from the log, nested config, summary scalars
    assert_eq!(
        query(
            &r,
            "SELECT run_id, name, state, entity, project, \"group\", job_type, array_to_string(tags, ',') AS tags, last_step FROM wandb_runs ORDER BY run_id, last_step"
        ),
        "run_id,name,state,entity,project,group,job_type,tags,last_step\n\
         longrun1,long-run,finished,rp-entity,rp-test,g1,train,\"a,b\",9999\n\
         resume01,resumed,finished,rp-entity,rp-test,,,\"\",9\n\
         resume01,,finished,rp-entity,rp-test,,,\"\",14\n"
    );
    let config = query(&r, "SELECT config FROM wandb_runs WHERE run_id = 'longrun1'");
    let text = config.lines().nth(1).unwrap().trim_matches('"').replace("\"\"", "\"");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), expected["config"]);
    assert_eq!(
        query(
            &r,
            "SELECT json_str(json_get(summary, 'note')) AS note, json_str(json_get(summary, 'loss')) AS loss FROM wandb_runs WHERE run_id = 'longrun1'"
        ),
        "note,loss\ndone,NaN\n"
    );
    assert_eq!(
        query(
            &r,
            "SELECT key, step, array_to_string(counts, ',') AS c, array_to_string(bin_edges, ',') AS e FROM histograms"
        ),
        "key,step,c,e\nweights,9999,\"1,4,4,1\",\"-2,-1,0,1,2\"\n"
    );
    // the client writes no wandb-metadata.json offline: each log's environment record is the
    // run's metadata, as protobuf's own JSON mapping writes it
    let o = run(bin()
        .args(["query", "-q", "--format", "json"])
        .arg(&r)
        .arg("SELECT source_files, metadata FROM wandb_runs"));
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let environments = expected["environments"].as_object().unwrap();
    assert_eq!(rows.len(), environments.len());
    for row in rows {
        let files = row["source_files"].as_array().unwrap();
        let log = files.iter().map(|f| f.as_str().unwrap()).find(|f| f.ends_with(".wandb")).unwrap();
        let got: serde_json::Value = serde_json::from_str(row["metadata"].as_str().unwrap()).unwrap();
        // who ran it, where, and the command line are redacted by default
        let mut want = environments[log].clone();
        for k in ["email", "username", "host", "args"] {
            if let Some(v) = want.get_mut(k) {
                *v = "REDACTED".into();
            }
        }
        assert_eq!(got, want, "{log}");
        assert!(got["host"] == "REDACTED" && got["startedAt"].is_string() && got["python"].is_string(), "{got}");
    }
    // the files/ folders were looked at: what they hold is named in a warning
    let o = run(bin().arg("build").arg(&dir).arg("--releases-dir").arg(dir.join("out2")));
    assert!(
        stderr(&o).contains("files/requirements.txt (a run-directory file runpack does not read)"),
        "{}",
        stderr(&o)
    );
}

/// A writable copy of the real offline runs under `tmp/p`: (that folder, the path of the
/// long run's `.wandb` log in it).
fn longrun_copy(tmp: &Path) -> (PathBuf, PathBuf) {
    let dir = tmp.join("p");
    copy_files(&offline_runs().join("wandb"), &dir.join("wandb"));
    let log = walkdir::WalkDir::new(dir.join("wandb"))
        .into_iter()
        .flatten()
        .find(|e| e.file_name() == "run-longrun1.wandb" && !e.path().to_string_lossy().contains("latest-run"))
        .unwrap()
        .into_path();
    (dir, log)
}

/// A W&B log's records as (start, end, kind, `_step`), read with the wandb client's own protobuf
/// module, not with runpack's reader.
fn log_records(log: &Path) -> Vec<(u64, u64, Option<String>, Option<i64>)> {
    let script = r#"
import struct, sys, zlib, json
from wandb.proto import wandb_internal_pb2 as pb
data = open(sys.argv[1], 'rb').read()
off, buf, start, recs = 7, b'', None, []
while off + 7 <= len(data):
    left = 32768 - off % 32768
    if left < 7:
        off += left; continue
    crc, ln, ty = struct.unpack('<IHB', data[off:off+7])
    if crc == 0 and ln == 0 and ty == 0:
        off += left; continue
    assert zlib.crc32(bytes([ty]) + data[off+7:off+7+ln]) == crc
    if ty in (1, 2): start = off
    buf += data[off+7:off+7+ln]
    off += 7 + ln
    if ty in (1, 4):
        m = pb.Record(); m.ParseFromString(buf)
        kind = m.WhichOneof('record_type')
        step = None
        if kind == 'history':
            for it in m.history.item:
                if (it.key or '.'.join(it.nested_key)) == '_step': step = int(it.value_json)
        recs.append([start, off, kind, step]); buf = b''
print(json.dumps(recs))
"#;
    let o = run(std::process::Command::new(python()).arg("-c").arg(script).arg(log));
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn a_truncated_wandb_log_gives_its_intact_records_and_the_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, log) = longrun_copy(tmp.path());
    // the record boundaries and steps, read independently with the wandb client's own protobuf module
    let recs = log_records(&log);
    // cut in the middle of a history record near the middle of the file
    let (i, cut_rec) = recs
        .iter()
        .enumerate()
        .find(|(_, r)| r.2.as_deref() == Some("history") && r.0 > std::fs::metadata(&log).unwrap().len() / 2)
        .unwrap();
    let cut = (cut_rec.0 + cut_rec.1) / 2;
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..cut as usize]).unwrap();
    let intact_steps: std::collections::BTreeSet<i64> =
        recs[..i].iter().filter(|r| r.2.as_deref() == Some("history")).filter_map(|r| r.3).collect();
    let rel = log.strip_prefix(&dir).unwrap().to_string_lossy().to_string();
    let toml = |opts: &str| {
        pipeline(
            "cut",
            &[("hist", &format!("\"{rel}\""), opts)],
            &[("history", "SELECT run_id, step, metric, value, sampled FROM hist", "")],
        )
    };
    // records lost: the history is incomplete, a violation unless accepted (then marked sampled)
    write(&dir, "pipeline.toml", &toml(r#"{ table = "history" }"#));
    let o = build(&dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        // the violation says what the warning says (a failed build prints no warning)
        stderr(&o).contains(&format!(
            "history incomplete, its log cut short or damaged: {rel}: reading stopped at byte {}",
            cut_rec.0
        )),
        "{}",
        stderr(&o)
    );
    write(&dir, "pipeline.toml", &toml(r#"{ table = "history", on_sampled = "accept" }"#));
    let o = build(&dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(&dir, "cut"), "SELECT DISTINCT sampled FROM history"), "sampled\ntrue\n");
    let e = stderr(&o);
    assert!(e.contains(&format!("{rel}: reading stopped at byte {}", cut_rec.0)), "{e}");
    assert!(e.contains(&format!("the {i} intact record(s) before it were read")), "{e}");
    let r = release(&dir, "cut");
    assert_eq!(
        query(&r, "SELECT count(DISTINCT step), min(step), max(step), count(*) FROM history"),
        format!(
            "count(DISTINCT history.step),min(history.step),max(history.step),count(*)\n{},0,{},{}\n",
            intact_steps.len(),
            intact_steps.iter().max().unwrap(),
            intact_steps.len() * 2
        )
    );
    let card = std::fs::read_to_string(r.join("README.md")).unwrap();
    assert!(card.contains(&format!("reading stopped at byte {}", cut_rec.0)), "{card}");
    // cut where a record starts: nothing is damaged, and the missing exit record is said
    std::fs::write(&log, &bytes[..cut_rec.0 as usize]).unwrap();
    let o = build(&dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{rel}: the log ends without the run's exit record after {i} intact record(s)")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_run_summary_whose_step_is_no_step_is_a_bad_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "wandb/run-20240101_000000-strstep1/files/wandb-history.jsonl", "{\"_step\": 0, \"loss\": 1}\n");
    write(dir, "wandb/run-20240101_000000-strstep1/files/wandb-summary.json", r#"{"_step": "20", "loss": 0.5}"#);
    write(dir, "wandb/run-20240101_000000-goodrun1/files/wandb-summary.json", r#"{"_step": 3}"#);
    // a violation of that run (exit 1), not the end of the build (exit 2)
    let o = wandb_build(dir, "wandb/**", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("wandb-summary.json: the run's summary: `_step` must be an integer step, found string \"20\""),
        "{}",
        stderr(&o)
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT run_id, last_step FROM t"), "run_id,last_step\ngoodrun1,3\n");
}

#[test]
fn a_wandb_csv_export_without_its_last_line_break_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // cut inside the last number: 0.179243 of 0.17924313247203827 still reads as a number
    write(dir, "h/abcd1234.csv", ",_step,loss\n0,0,0.5\n1,1,0.179243");
    let o = wandb_build(dir, "h/*.csv", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = build(dir, &["--force"]);
    assert!(
        stderr(&o)
            .contains("h/abcd1234.csv:3: w: the file ends without a line break or a closing quote after this line"),
        "{}",
        stderr(&o)
    );
    write(dir, "h/abcd1234.csv", ",_step,loss\n0,0,0.5\n1,1,0.17924313247203827\n");
    let o = build(dir, &["--force"]);
    assert!(!stderr(&o).contains("line break"), "{}", stderr(&o));
    // W&B's own exports quote every cell and end with the last closing quote: whole
    let ui = "\"Name\",\"State\",\"val/loss\"\n\"r1\",\"finished\",\"0.5\"\n\"r2\",\"finished\",\"1.8229146003723145\"";
    write(dir, "wandb_export.csv", ui);
    let o = wandb_build(dir, "wandb_export.csv", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = build(dir, &["--force"]);
    assert!(!stderr(&o).contains("line break"), "{}", stderr(&o));
    // cut inside the last quoted cell: 1.82 would read as a number, so the file is refused
    write(dir, "wandb_export.csv", &ui[..ui.len() - 17]);
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("wandb_export.csv:3: a quoted cell of this record is never closed: the file ends inside it, so it was cut short"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_lists_say_what_their_api_fields_mean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // lastHistoryStep -1 is the API's "no history", not a history of which nothing was read
    write(dir, "history/run00001.csv", "_step,_runtime,_timestamp,loss\n0,1,1,0.1\n1,1,1,0.2\n");
    write(
        dir,
        "runs.json",
        r#"[{"id": "run00001", "historyLineCount": 2, "lastHistoryStep": 1, "summary": {"_step": 1}},
            {"id": "run00003", "historyLineCount": 0, "lastHistoryStep": -1, "summary": {}}]"#,
    );
    let list = r#"["runs.json", "history/*.csv"]"#;
    write(
        dir,
        "pipeline.toml",
        &pipeline("wb", &[("w", list, r#"{ table = "history" }"#)], &[("t", "SELECT * FROM w", "")]),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // a history of every 10th step that the list says is whole (100 rows, last step 990) is
    // not taken for a sample of it
    let rows: String = (0..100).map(|i| format!("{},1,1,{}\n", i * 10, i)).collect();
    write(dir, "history/run00001.csv", &format!("_step,_runtime,_timestamp,loss\n{rows}"));
    write(
        dir,
        "runs.json",
        r#"[{"id": "run00001", "historyLineCount": 100, "lastHistoryStep": 990, "summary": {"_step": 990}}]"#,
    );
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT count(*) AS n, bool_or(sampled) AS s FROM t"), "n,s\n100,false\n");
    // the same history without the list still looks sampled
    write(dir, "runs.json", "[]");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("history looks sampled"), "{}", stderr(&o));
}

#[test]
fn a_run_summary_or_key_that_cannot_be_kept_whole_is_a_bad_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // an api.runs() summary cell that is no dict (a set inside): not a run without a summary
    write(
        dir,
        "project.csv",
        ",summary,config,name\n0,\"{'loss': 0.5, '_step': 10, 'ids': {1, 2}}\",{},run-a\n1,\"{'loss': 0.25, '_step': 5}\",{},run-b\n",
    );
    let o = wandb_build(dir, "project.csv", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("project.csv:2:$: $.summary: expected an object of summary values (JSON, or a Python dict as `api.runs()` writes it), found text that is neither"),
        "{}",
        stderr(&o)
    );
    // Python's None is no summary, as null is
    write(dir, "runs.json", r#"[{"id": "run00001", "summary": "None"}, {"id": "run00002", "summary": null}]"#);
    let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    for (summary, found) in [(r#""[1,2]""#, "found an array"), ("5", "found number 5")] {
        write(dir, "runs.json", &format!(r#"[{{"id": "run00001", "summary": {summary}}}]"#));
        let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(&format!("$.summary: expected an object of summary values (JSON, or a Python dict as `api.runs()` writes it), {found}")), "{}", stderr(&o));
    }
    // a flat column that gives a key the object gives otherwise
    write(dir, "runs.json", r#"[{"id": "run00001", "summary": {"loss": 1}, "summary.loss": 2}]"#);
    let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            r#"$["summary.loss"]: summary key "loss" is given twice, as number 1 in the summary and as number 2 here"#
        ),
        "{}",
        stderr(&o)
    );
    write(dir, "runs.json", r#"[{"id": "run00001", "config": {"a": 1}, "config.a": 2}]"#);
    let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            r#"config key "a" is given twice, as number 1 in the config and as number 2 in a `config.a` column"#
        ),
        "{}",
        stderr(&o)
    );
    // text fields and tags of another shape would be lost as null
    for (run, said) in [
        (r#"{"id": "run00001", "entity": {"name": "team"}}"#, "$.entity: expected a string, found an object"),
        (r#"{"id": "run00001", "tags": 5}"#, "$.tags: expected a list of tags (or their text), found number 5"),
    ] {
        write(dir, "runs.json", &format!("[{run}]"));
        let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(said), "{}", stderr(&o));
    }
    // the same value twice loses nothing: as written, as a float (pandas' column with a gap),
    // empty, or as the dotted path of a nested value
    write(
        dir,
        "runs.json",
        r#"[{"id": "run00001", "config": {"a": 1, "o": {"p": 2}}, "config.a": 1.0, "config.o.p": 2, "summary": {"loss": 1, "_step": 10, "n": {"m": 3}}, "summary.loss": null, "summary._step": 10.0, "summary.n.m": 3}]"#,
    );
    let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "wb"), "SELECT config, summary FROM t"),
        "config,summary\n\"{\"\"a\"\":1,\"\"o\"\":{\"\"p\"\":2}}\",\"{\"\"loss\"\":1,\"\"_step\"\":10,\"\"n\"\":{\"\"m\"\":3}}\"\n"
    );
    // a nested value given otherwise by its dotted path
    write(dir, "runs.json", r#"[{"id": "run00001", "summary": {"a": {"b": 1}}, "summary.a.b": 2}]"#);
    let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(r#"summary key "a.b" is given twice, as number 1 in the summary and as number 2 here"#),
        "{}",
        stderr(&o)
    );
}

#[test]
fn non_finite_values_in_run_config_and_summary_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "project.csv",
        ",summary,config,name\n0,\"{'loss': nan, 'acc': inf, '_step': 9}\",\"{'lr': 1e-05, 'floor': -inf}\",run-a\n",
    );
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "nf",
            &[("r", "\"project.csv\"", r#"{ table = "runs" }"#)],
            &[("t", "SELECT name, config, summary FROM r", "")],
        ),
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("non-finite values read: 3"), "{e}");
    for at in [
        "project.csv:2:$.summary.loss NaN",
        "project.csv:2:$.summary.acc Infinity",
        "project.csv:2:$.config.floor -Infinity",
    ] {
        assert!(e.contains(at), "{at}: {e}");
    }
    // the JSON text stays strict JSON
    assert_eq!(
        query(&release(dir, "nf"), "SELECT config FROM t"),
        "config\n\"{\"\"lr\"\":0.00001,\"\"floor\"\":\"\"-Infinity\"\"}\"\n"
    );
}

#[test]
fn a_run_directory_history_shorter_than_its_summary_is_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let history: String = (0..5).map(|i| format!("{{\"_step\": {i}, \"loss\": 0.5}}\n")).collect();
    write(dir, "wandb/run-20240101_000000-short001/files/wandb-history.jsonl", &history);
    write(dir, "wandb/run-20240101_000000-short001/files/wandb-summary.json", r#"{"_step": 9, "loss": 0.1}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "run short001: history incomplete: wandb/run-20240101_000000-short001/files/wandb-history.jsonl has 5 rows \
             (max `_step` 4); the run's wandb/run-20240101_000000-short001/files/wandb-summary.json reports summary \
             _step 9"
        ),
        "{}",
        stderr(&o)
    );
    // the whole history, or one accepted as incomplete, builds
    write(dir, "wandb/run-20240101_000000-short001/files/wandb-summary.json", r#"{"_step": 4, "loss": 0.1}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    write(dir, "wandb/run-20240101_000000-short001/files/wandb-summary.json", r#"{"_step": 9, "loss": 0.1}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history", on_sampled = "accept" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    // a whole float is a step too, and a resumed run's later directory counts (the highest)
    write(dir, "wandb/run-20240101_000000-short001/files/wandb-summary.json", r#"{"_step": 9.0, "loss": NaN}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    write(dir, "wandb/run-20240101_000000-short001/files/wandb-summary.json", r#"{"_step": 4}"#);
    write(dir, "wandb/run-20240102_000000-short001/files/wandb-history.jsonl", "{\"_step\": 5, \"loss\": 0.4}\n");
    write(dir, "wandb/run-20240102_000000-short001/files/wandb-summary.json", r#"{"_step": 8}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has 6 rows (max `_step` 5)") && stderr(&o).contains("reports summary _step 8"),
        "{}",
        stderr(&o)
    );
    write(dir, "wandb/run-20240102_000000-short001/files/wandb-summary.json", r#"{"_step": 5}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn runs_accepted_as_sampled_are_named_in_the_card_past_its_warnings_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "wandb/run-20240101_000000-late0001/files/wandb-summary.json", r#"{"_step": 9}"#);
    // 30 runs that log a step twice: a warning each, before the sampled run's
    for i in 0..30 {
        write(
            dir,
            &format!("wandb/run-20240101_000000-aaaa{i:04}/files/wandb-history.jsonl"),
            &format!("{{\"_step\": 0, \"m{i}\": 1}}\n{{\"_step\": 0, \"m{i}\": 2}}\n"),
        );
    }
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history", on_sampled = "accept" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(release(dir, "wb").join("README.md")).unwrap();
    assert!(card.contains("run late0001: sampled export: history missing"), "{card}");
    assert!(card.contains("- … and 10 more warnings (the build prints them all)."), "{card}");
}

#[test]
fn a_non_finite_value_inside_a_logged_list_is_named_by_its_raw_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "wandb/run-20240101_000000-lists001/files/wandb-history.jsonl",
        "{\"_step\": 0, \"lst\": [1, 2, NaN], \"loss\": NaN}\n",
    );
    write(dir, "wandb/run-20240101_000000-lists001/files/wandb-summary.json", r#"{"_step": 0}"#);
    write(
        dir,
        "pipeline.toml",
        &pipeline("wb", &[("w", "\"wandb/**\"", r#"{ table = "history" }"#)], &[("t", "SELECT * FROM w", "")]),
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("wandb-history.jsonl:1:$.lst[2] NaN"), "{e}");
    assert!(e.contains("wandb-history.jsonl:1:$.loss NaN"), "{e}");
    assert!(!e.contains("$.value_text"), "{e}");
}

#[test]
fn a_run_capture_that_names_no_capture_is_placed_in_the_pipeline_file() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "h/abcd1234.csv", "_step,loss\n0,1\n");
    let o = wandb_build(tmp.path(), "h/{run}.csv", r#"{ table = "history", run_capture = "rn" }"#);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pipeline.toml:3 (source w): run_capture = \"rn\" names no {capture} of the source's path"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_run_directory_without_history_rows_is_missing_its_history() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = "wandb/run-20240101_000000-none0001/files";
    write(dir, &format!("{run}/wandb-summary.json"), r#"{"_step": 99, "loss": 0.5}"#);
    write(dir, &format!("{run}/config.yaml"), "wandb_version: 1\nlr:\n  desc: null\n  value: 0.001\n");
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{run}/wandb-summary.json:run none0001: history missing: wandb/run-20240101_000000-none0001 has no \
             wandb-history.jsonl or .wandb log among the matched files; the run's {run}/wandb-summary.json reports \
             summary _step 99"
        )),
        "{}",
        stderr(&o)
    );
    // an empty history file is no history either
    write(dir, &format!("{run}/wandb-history.jsonl"), "");
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("history missing: {run}/wandb-history.jsonl holds no history row")),
        "{}",
        stderr(&o)
    );
    // accepted, it builds with a warning; a summary without `_step` (nothing logged) says nothing
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history", on_sampled = "accept" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    write(dir, &format!("{run}/wandb-summary.json"), r#"{"loss": 0.5}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_damaged_part_inside_a_wandb_log_is_skipped_and_reading_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, log) = longrun_copy(tmp.path());
    let rel = log.strip_prefix(&dir).unwrap().to_string_lossy().to_string();
    write(
        &dir,
        "pipeline.toml",
        &pipeline(
            "dmg",
            &[
                ("hist", &format!("\"{rel}\""), r#"{ table = "history" }"#),
                ("runs", &format!("\"{rel}\""), r#"{ table = "runs" }"#),
            ],
            &[
                ("history", "SELECT run_id, step, metric, value FROM hist", ""),
                ("wandb_runs", "SELECT run_id, state, last_step FROM runs", ""),
            ],
        ),
    );
    let o = build(&dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = query(&release(&dir, "dmg"), "SELECT count(*) AS n, max(step) AS last FROM history");
    // one byte changed in the second block: its records are lost, the later blocks' are read
    let mut bytes = std::fs::read(&log).unwrap();
    assert!(bytes.len() > 4 * 32768, "{}", bytes.len());
    bytes[32768 + 1000] ^= 0x55;
    std::fs::write(&log, &bytes).unwrap();
    let o = build(&dir, &["--force"]);
    assert_eq!(o.status.code(), Some(1), "records lost: {}", stderr(&o));
    let toml = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    write(
        &dir,
        "pipeline.toml",
        &toml.replacen(r#"{ table = "history" }"#, r#"{ table = "history", on_sampled = "accept" }"#, 1),
    );
    let o = build(&dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{rel}: bytes ")) && e.contains("are damaged (checksum mismatch in the chunk at byte"),
        "{e}"
    );
    assert!(!e.contains("reading stopped"), "{e}");
    let r = release(&dir, "dmg");
    let got = query(&r, "SELECT count(*) AS n, max(step) AS last FROM history");
    let n = |t: &str| t.lines().nth(1).unwrap().split(',').map(|x| x.parse::<i64>().unwrap()).collect::<Vec<_>>();
    let (before, after) = (n(&whole), n(&got));
    // the last step is still read, and at most the records of about one block are lost
    assert_eq!(after[1], before[1], "{got}");
    assert!(after[0] < before[0] && after[0] > before[0] - 2000, "{whole} vs {got}");
    // a damaged part is no sign that the run crashed
    assert!(!query(&r, "SELECT state FROM wandb_runs").contains("crashed"));
}

/// Builds one W&B source `w` (path, options) into table `t` (`SELECT *`); the output.
fn wandb_build(dir: &Path, path: &str, opts: &str) -> std::process::Output {
    write(
        dir,
        "pipeline.toml",
        &pipeline("wb", &[("w", &format!("\"{path}\""), opts)], &[("t", "SELECT * FROM w", "")]),
    );
    build(dir, &["-q", "--force"])
}

#[test]
fn wandb_values_are_never_lost_merged_or_retyped_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let history = r#"{ table = "history" }"#;
    // a CSV header naming a column twice: one copy's values would be lost
    write(dir, "h/abcd1234.csv", "_step,acc,acc\n0,1,2\n1,0.5,\n");
    let o = wandb_build(dir, "h/*.csv", history);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("h/abcd1234.csv:1: the CSV header names column `acc` twice"), "{}", stderr(&o));
    std::fs::remove_dir_all(dir.join("h")).unwrap();
    // CRLF line ends: rows and errors name their own lines (the header is line 1)
    write(dir, "h/abcd1234.csv", "_step,loss\r\n0,0.5\r\n1.5,0.6\r\n2,0.7\r\n");
    let o = wandb_build(dir, "h/*.csv", history);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("h/abcd1234.csv:3:$: `_step` must be an integer step, found the fraction 1.5"),
        "{}",
        stderr(&o)
    );
    let o = run(bin().arg("build").arg(dir).arg("--releases-dir").arg(dir.join("out")).args([
        "-q",
        "--on-invalid",
        "reject",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "wb"), "SELECT step, value, _source_line FROM t ORDER BY step"),
        "step,value,_source_line\n0,0.5,2\n2,0.7,4\n"
    );
    std::fs::remove_dir_all(dir.join("h")).unwrap();
    // steps that are not integers are violations at their line, in every layout
    write(
        dir,
        "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl",
        "{\"_step\": \"3\", \"loss\": 1}\n{\"_step\": 3.5, \"loss\": 2}\n{\"_step\": 1e20, \"loss\": 3}\n{\"_step\": true, \"loss\": 4}\n{\"_step\": 4.0, \"loss\": 5}\n",
    );
    let o = wandb_build(dir, "wandb/**", history);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    for (line, found) in
        [(1, "string \"3\""), (2, "the fraction 3.5"), (3, "1e+20, beyond 64-bit integers"), (4, "boolean true")]
    {
        assert!(
            e.contains(&format!("wandb-history.jsonl:{line}:$: `_step` must be an integer step, found {found}")),
            "{e}"
        );
    }
    assert!(e.contains("4 violations found"), "{e}");
    // nested keys that join into an existing dotted key
    write(
        dir,
        "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl",
        "{\"_step\": 3, \"loss\": 0.3, \"a.b\": 1, \"a\": {\"b\": 2}}\n",
    );
    let o = wandb_build(dir, "wandb/**", history);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("wandb-history.jsonl:1:$: the keys $[\"a.b\"] and $.a.b both name metric `a.b`"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(dir.join("wandb")).unwrap();
    // UI runs export: text that only looks like a number stays text; a numeric id keeps its digits
    write(
        dir,
        "ui.csv",
        "\"Name\",\"State\",\"ID\",\"date\",\"tag\",\"ver\",\"code\",\"lr\"\n\"r\",\"finished\",\"12345678\",\"2024_01_01\",\"000020\",\"1.10\",\"+1\",\"1e-05\"\n",
    );
    let o = wandb_build(dir, "ui.csv", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let fields = query(&release(dir, "wb"), "SELECT fields FROM t");
    assert!(
        fields
            .contains(r#"""date"":""2024_01_01"",""tag"":""000020"",""ver"":""1.10"",""code"":""+1"",""lr"":0.00001"#),
        "{fields}"
    );
    // histograms that are not what W&B writes are violations, each named by key
    write(
        dir,
        "wandb/run-20240101_000000-abcd1234/files/wandb-summary.json",
        r#"{"_step": 5,
            "h0": {"_type": "histogram", "values": [1, 2], "bins": [0, 1, 2]},
            "h1": {"_type": "histogram", "values": [1, 2], "bins": [0, 1]},
            "h2": {"_type": "histogram", "values": [1, 2, 3], "packedBins": {"min": 0, "size": 0.1, "count": 2}},
            "h4": {"_type": "histogram"},
            "h5": {"_type": "histogram", "values": "x", "bins": 3}}"#,
    );
    let o = wandb_build(dir, "wandb/**", r#"{ table = "histograms" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    for message in [
        "histogram `h1`: 2 bin edges for 2 counts; a histogram has one edge more than counts",
        "histogram `h2`: `packedBins.count` is 2, and `values` holds 3 counts",
        "histogram `h4`: no `values` (the counts)",
        "histogram `h5`: `values` must be a list of counts, found string \"x\"",
    ] {
        assert!(e.contains(&format!("wandb-summary.json:1:$: {message}")), "{e}");
    }
    assert!(e.contains("4 violations found"), "{e}");
    // violations of history rows name the record's own keys, not the long row's columns
    write(
        dir,
        "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl",
        "{\"_step\":7,\"_timestamp\":\"yesterday\",\"_runtime\":[1],\"big\":9007199254740993}\n",
    );
    let o = wandb_build(dir, "wandb/**", history);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    for at in ["$._runtime: expected number", "$._timestamp: expected number"] {
        assert!(e.contains(&format!("wandb-history.jsonl:1:{at}")), "{e}");
    }
    // an integer a float cannot hold keeps its digits in value_text, at 2^53 + 1 as beyond 64
    // bits; a histogram is counted in a warning, not dropped unsaid
    write(
        dir,
        "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl",
        "{\"_step\":7,\"big\":9007199254740993,\"huge\":123456789012345678901234567890,\"ok\":9007199254740992,\
         \"h\":{\"_type\":\"histogram\",\"values\":[1,2],\"bins\":[0,1,2]}}\n",
    );
    write(
        dir,
        "pipeline.toml",
        &pipeline("wb", &[("w", "\"wandb/**\"", history)], &[("t", "SELECT metric, value, value_text FROM w", "")]),
    );
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "1 histogram value(s) skipped (`h`): histograms are not part of this table (read them with a source of \
             table = \"histograms\")"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        query(&release(dir, "wb"), "SELECT metric, value, value_text FROM t ORDER BY metric"),
        "metric,value,value_text\nbig,,9007199254740993\nhuge,,123456789012345678901234567890\nok,9007199254740992.0,\n"
    );
    std::fs::remove_dir_all(dir.join("wandb")).unwrap();
    write(dir, "runs.jsonl", "{\"id\": 12345678, \"name\": \"numid\", \"state\": \"finished\", \"config\": {}}\n");
    let o = wandb_build(dir, "runs.jsonl", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT run_id FROM t"), "run_id\n12345678\n");
}

#[test]
fn a_history_csv_written_with_a_float_format_keeps_its_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // pandas' to_csv(float_format="%.4f") of run.history()
    write(dir, "abcd1234.csv", "_step,loss,lr,big\n0,0.5000,0.0010,1e400\n1,0.2500,0.0010,2\n");
    let o = wandb_build(dir, "*.csv", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = query(
        &release(dir, "wb"),
        "SELECT step, metric, value, value_text FROM t WHERE metric IN ('loss', 'big') ORDER BY metric, step",
    );
    // a number beyond the float range keeps its text, as written (a JSON string in value_text)
    assert_eq!(rows, "step,metric,value,value_text\n0,big,,\"\"\"1e400\"\"\"\n1,big,2.0,\n0,loss,0.5,\n1,loss,0.25,\n");
}

#[test]
fn history_of_several_runs_in_one_csv_and_runs_without_history_are_read_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // several runs' run.history() in one file, with the columns that say whose
    write(
        dir,
        "all_history.csv",
        ",run_id,name,_step,_runtime,_timestamp,loss\n0,abcd1234,run-a,0,1.0,1700000000.0,0.5\n\
         1,abcd1234,run-a,1,2.0,1700000001.0,0.4\n2,efgh5678,run-b,0,1.0,1700000000.0,0.9\n",
    );
    let o = wandb_build(dir, "all_history.csv", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "wb"), "SELECT run_id, run_name, step, value FROM t ORDER BY run_id, step"),
        "run_id,run_name,step,value\nabcd1234,run-a,0,0.5\nabcd1234,run-a,1,0.4\nefgh5678,run-b,0,0.9\n"
    );
    // several runs named, and no id but the one the file name gives: not merged into one run
    write(dir, "history.csv", ",name,_step,loss\n0,run-a,0,0.5\n1,run-b,0,0.9\n");
    let o = wandb_build(dir, "history.csv", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("history.csv:3: the rows name several runs (`run-a`, `run-b`), and the file name gives"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(dir.join("history.csv")).unwrap();
    // a listed run with history, none of which was read, is no complete history
    write(
        dir,
        "runs.json",
        r#"{"totalCount": 2, "runs": [
 {"id": "aaaa0001", "name": "a", "state": "finished", "historyLineCount": 3, "summary": {"_step": 2}},
 {"id": "bbbb0002", "name": "b", "state": "finished", "historyLineCount": 100, "summary": {"_step": 99}}
]}"#,
    );
    write(dir, "hist/aaaa0001.csv", ",_step,loss\n0,0,1.0\n1,1,0.5\n2,2,0.1\n");
    let history = r#"{ table = "history" }"#;
    write(
        dir,
        "pipeline.toml",
        &pipeline("wb", &[("w", "[\"runs.json\", \"hist/*.csv\"]", history)], &[("t", "SELECT * FROM w", "")]),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_violations(
        &o,
        1,
        &["runs.json:2:run bbbb0002: history missing: no history row of the run was read; the run reports 100 \
           rows, summary _step 99"],
    );
}

#[test]
fn a_runs_csv_that_lists_a_run_twice_is_checked_as_run_lists_are() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "runs.csv",
        "id,name,state,summary\naaaa0001,a,finished,\"{'loss': 0.1}\"\naaaa0001,a,crashed,\"{'loss': 0.9}\"\n",
    );
    let o = wandb_build(dir, "runs.csv", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    for line in [2, 3] {
        assert!(
            stderr(&o).contains(&format!(
                "runs.csv:{line}:$: run aaaa0001 is listed twice with different values at $.state: string \"finished\" \
                 at runs.csv:2 vs string \"crashed\" at runs.csv:3; neither copy is kept"
            )),
            "{}",
            stderr(&o)
        );
    }
    // with --on-invalid reject, both copies go to the rejects file, each with its record
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT count(*) AS n FROM t"), "n\n0\n");
    let rejects = std::fs::read_to_string(release(dir, "wb").join("rejects/w.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 2, "{rejects}");
    assert!(rejects.contains("crashed") && rejects.contains("finished"), "{rejects}");
    // identical copies: one row, the other counted as dropped
    write(dir, "runs.csv", "id,name,state\naaaa0001,a,finished\naaaa0001,a,finished\nbbbb0002,b,finished\n");
    let o = wandb_build(dir, "runs.csv", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT run_id FROM t ORDER BY run_id"), "run_id\naaaa0001\nbbbb0002\n");
    let manifest = std::fs::read_to_string(release(dir, "wb").join("manifest.json")).unwrap();
    assert!(manifest.contains("\"duplicates_dropped\": {\n      \"w\": 1"), "{manifest}");
}

#[test]
fn a_run_creation_time_that_does_not_read_is_a_violation_not_a_null() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "runs.json",
        r#"[{"id": "aaaa0001", "name": "a", "state": "finished", "created_at": "13/05/2024 12:00"},
 {"id": "bbbb0002", "name": "b", "state": "finished", "created_at": 1715600486000},
 {"id": "cccc0003", "name": "c", "state": "finished", "created_at": 1715600486.5},
 {"id": "dddd0004", "name": "d", "state": "finished", "created_at": null}]"#,
    );
    let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
    assert_violations(
        &o,
        2,
        &[
            "runs.json:1:$: $.created_at: expected an ISO 8601 time",
            "found string \"13/05/2024 12:00\" (source w, rule wandb-run)",
            "runs.json:2:$: $.created_at: epoch seconds 1715600486000 are not a time in the years 1 to 9999",
        ],
    );
    // a runs CSV gives epoch seconds as text
    write(
        dir,
        "api.csv",
        "id,name,state,createdAt\naaaa0001,a,finished,1715605641\nbbbb0002,b,finished,1715605641000\n",
    );
    let o = wandb_build(dir, "api.csv", r#"{ table = "runs" }"#);
    assert_violations(&o, 1, &["api.csv:3:$: $.createdAt: epoch seconds 1715605641000 are not a time"]);
}

#[test]
fn a_run_summary_that_is_not_json_is_a_bad_record_of_its_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "wandb/run-20240101_000000-bbbb0002/files/wandb-summary.json", "{\"loss\": 1, \"acc\": 2,}");
    write(dir, "wandb/run-20240102_000000-cccc0003/files/wandb-summary.json", "{\"loss\": 1}");
    let o = wandb_build(dir, "wandb/**", r#"{ table = "runs" }"#);
    assert_violations(
        &o,
        1,
        &["the run's summary (wandb/run-20240101_000000-bbbb0002/files/wandb-summary.json:1): not valid JSON"],
    );
}

#[test]
fn a_second_summary_of_a_run_directory_is_named_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "wandb/run-20240101_000000-dddd0004/files/wandb-summary.json", "{\"where\": \"files\", \"loss\": 9}");
    write(dir, "wandb/run-20240101_000000-dddd0004/wandb-summary.json", "{\"where\": \"top\", \"loss\": 1}");
    let o = wandb_build(dir, "wandb/**", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = build(dir, &["--force"]);
    assert!(
        stderr(&o).contains(
            "wandb/run-20240101_000000-dddd0004/wandb-summary.json (a second wandb-summary.json of its run \
             directory: wandb/run-20240101_000000-dddd0004/files/wandb-summary.json is the one read)"
        ),
        "{}",
        stderr(&o)
    );
    let row = query(&release(dir, "wb"), "SELECT summary, source_files FROM t");
    assert!(row.contains("files") && !row.contains("top"), "{row}");
}

#[test]
fn exports_are_read_as_the_table_asks_and_bad_cells_or_summaries_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a header a runs dump and several runs' history both fit: read as the table asks
    write(
        dir,
        "runs.csv",
        ",id,name,_step,_runtime,_timestamp,loss\n0,abcd1234,run-a,99,100.5,1700000100.0,0.25\n\
         1,efgh5678,run-b,199,200.5,1700000200.0,0.15\n",
    );
    let o = wandb_build(dir, "runs.csv", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT run_id FROM t ORDER BY run_id"), "run_id\nabcd1234\nefgh5678\n");
    std::fs::remove_file(dir.join("runs.csv")).unwrap();
    // a chart export names runs by display name: a run list that gives the id matches it
    write(dir, "chart.csv", "\"Step\",\"run a - loss\"\n\"0\",\"0.5\"\n\"1\",\"0.4\"\n");
    write(
        dir,
        "runs.json",
        r#"[{"id": "aaaa0001", "name": "run a", "state": "finished", "historyLineCount": 2, "summary": {"_step": 1}}]"#,
    );
    let history = r#"{ table = "history" }"#;
    write(
        dir,
        "pipeline.toml",
        &pipeline("wb", &[("w", "[\"chart.csv\", \"runs.json\"]", history)], &[("t", "SELECT * FROM w", "")]),
    );
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // a bound that is no number is said, not made null
    write(
        dir,
        "chart.csv",
        "\"Step\",\"run a - loss\",\"run a - loss__MIN\",\"run a - loss__MAX\"\n\"0\",\"0.5\",\"1e400\",\"0.6\"\n",
    );
    let o = wandb_build(dir, "chart.csv", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("chart.csv:2:$: run run a: `loss__MIN` holds string \"1e400\", not a number"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(dir.join("chart.csv")).unwrap();
    std::fs::remove_file(dir.join("runs.json")).unwrap();
    // a summary that is no JSON: a bad record for the histograms, and no check of the history
    write(dir, "wandb/run-20240101_000000-bbbb0002/files/wandb-summary.json", "{\"_step\": 3, \"x\": tru}");
    write(dir, "wandb/run-20240101_000000-bbbb0002/files/wandb-history.jsonl", "{\"_step\": 0, \"loss\": 1}\n");
    let o = wandb_build(dir, "wandb/**", r#"{ table = "histograms" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "the run's summary (wandb/run-20240101_000000-bbbb0002/files/wandb-summary.json:1): not valid JSON"
        ),
        "{}",
        stderr(&o)
    );
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("history not checked: "), "{}", stderr(&o));
}

#[test]
fn a_wandb_log_is_read_over_its_run_folders_files_and_an_empty_one_is_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, log) = longrun_copy(tmp.path());
    let run_dir = log.parent().unwrap();
    // a stale files/ copy beside the log: the log, which holds every update, is what is read
    std::fs::create_dir_all(run_dir.join("files")).unwrap();
    std::fs::write(run_dir.join("files/config.yaml"), "lr:\n  value: 999\n").unwrap();
    std::fs::write(run_dir.join("files/wandb-summary.json"), r#"{"_step": 50, "loss": 7}"#).unwrap();
    let o = wandb_build(&dir, "wandb/offline-run-*longrun1/**", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let sql = r#"SELECT last_step, summary LIKE '%"note":"done"%' AS note, config LIKE '%999%' AS stale FROM t"#;
    let got = query(&release(&dir, "wb"), sql);
    assert_eq!(got, "last_step,note,stale\n9999,true,false\n");
    // a log cut short may have lost the last updates: the folder's files are read over it
    let whole = std::fs::read(&log).unwrap();
    let half = whole.len() as u64 / 2;
    let inside = log_records(&log).into_iter().find(|r| r.0 > half).unwrap();
    std::fs::write(&log, &whole[..((inside.0 + inside.1) / 2) as usize]).unwrap();
    let o = wandb_build(&dir, "wandb/offline-run-*longrun1/**", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = query(&release(&dir, "wb"), sql);
    assert_eq!(got, "last_step,note,stale\n50,false,true\n");
    // a log of its header alone: the run's history is not there, and the build says so
    std::fs::write(&log, &std::fs::read(&log).unwrap()[..7]).unwrap();
    let o = wandb_build(&dir, "wandb/offline-run-*longrun1/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("run longrun1: history incomplete, its log cut short or damaged: ")
            && stderr(&o).contains("run-longrun1.wandb: the log holds no record after its header"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_wandb_path_that_matches_only_files_it_does_not_read_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // wandb/* in a client's folder: its debug logs, beside the run folders it does not enter
    write(dir, "wandb/run-20240101_000000-abcd1234/files/wandb-summary.json", r#"{"_step": 0}"#);
    write(dir, "wandb/debug.log", "2024-01-01 INFO started\n");
    let o = wandb_build(dir, "wandb/*", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the path matches 1 file(s), none of which this W&B reader reads: wandb/debug.log"),
        "{}",
        stderr(&o)
    );
    let o = wandb_build(dir, "wandb/**", r#"{ table = "runs" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_step_logged_twice_in_one_history_file_is_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "h/abcd1234.csv", "_step,_runtime,_timestamp,loss\n0,1,1,0.5\n1,2,2,0.2\n1,3,3,0.9\n2,4,4,0.1\n");
    let o = wandb_build(dir, "h/*.csv", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = build(dir, &["--force"]);
    assert!(
        stderr(&o).contains("h/abcd1234.csv: w: run abcd1234: 1 history record(s) repeat a `_step` logged before in this file (the first: 1)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(query(&release(dir, "wb"), "SELECT count(*) AS n FROM t WHERE step = 1"), "n\n2\n");
}

#[test]
fn rejected_wandb_records_keep_their_text_and_bad_counts_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a history step that is no step: the record goes to the rejects file whole
    write(
        dir,
        "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl",
        "{\"_step\": 0, \"loss\": 0.5}\n{\"_step\": \"1\", \"loss\": 0.4}\n{\"_step\": 2, \"loss\": 0.3}\n",
    );
    write(dir, "wandb/run-20240101_000000-abcd1234/files/wandb-summary.json", r#"{"_step": 2, "loss": 0.3}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "wb").join("rejects/w.jsonl")).unwrap();
    let r: serde_json::Value = serde_json::from_str(rejects.trim()).unwrap();
    assert_eq!(r["_source_line"], 2, "{rejects}");
    assert_eq!(r["raw"], r#"{"_step":"1","loss":0.4}"#, "{rejects}");
    // a CSV value under a column without a name is a bad row, kept as its text
    std::fs::remove_dir_all(dir.join("wandb")).unwrap();
    write(dir, "history/abcd1234.csv", "_step,,loss\n0,,0.5\n1,8,0.4\n");
    let o = wandb_build(dir, "history/*.csv", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("history/abcd1234.csv:3:$: cell 2 holds a value but its column has no name in the header"),
        "{}",
        stderr(&o)
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "wb").join("rejects/w.jsonl")).unwrap();
    assert!(rejects.contains(r#""raw":"1,8,0.4""#), "{rejects}");
    assert_eq!(query(&release(dir, "wb"), "SELECT step, metric, value FROM t"), "step,metric,value\n0,loss,0.5\n");
    // a cell that is not UTF-8 is said in words, with its cell
    std::fs::write(dir.join("history/abcd1234.csv"), b"_step,loss\n0,0.5\n1,\xff\n").unwrap();
    let o = build(dir, &["-q", "--force"]);
    assert!(
        stderr(&o).contains("history/abcd1234.csv:3:$: cell 2 is not valid UTF-8 (a bad byte 0 bytes into the cell)"),
        "{}",
        stderr(&o)
    );
    // a run list's history count that is no count: the history cannot be checked against it
    write(dir, "history/abcd1234.csv", "_step,loss\n0,0.5\n1,0.4\n");
    write(dir, "runs.json", r#"[{"id": "abcd1234", "historyLineCount": "500", "lastHistoryStep": 499}]"#);
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[
                ("w", r#"["runs.json", "history/*.csv"]"#, r#"{ table = "history" }"#),
                ("r", r#""runs.json""#, r#"{ table = "runs" }"#),
            ],
            &[("t", "SELECT * FROM w", ""), ("u", "SELECT run_id, history_rows FROM r", "")],
        ),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "run abcd1234: history not checked: history/abcd1234.csv has 2 rows (max `_step` 1), and the run list"
        ),
        "{err}"
    );
    assert!(
        err.contains("runs.json:1:$: `historyLineCount` must be a whole number of at least 0, found string \"500\""),
        "{err}"
    );
    // lastHistoryStep -1 is the API's word for no history, not a bad value
    write(dir, "runs.json", r#"[{"id": "abcd1234", "historyLineCount": 2, "lastHistoryStep": -1}]"#);
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // a whole number written as a float is one (pandas writes integer columns with gaps so)
    write(dir, "runs.json", r#"[{"id": "abcd1234", "historyLineCount": 2.0, "lastHistoryStep": 1.0}]"#);
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT history_rows FROM u"), "history_rows\n2\n");
}

#[test]
fn a_run_folder_file_that_cannot_be_read_is_a_bad_record_of_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files = "wandb/run-20240101_000000-abcd1234/files";
    write(dir, &format!("{files}/wandb-summary.json"), r#"{"_step": 2}"#);
    write(dir, &format!("{files}/wandb-metadata.json"), "{\"state\": \n");
    write(dir, "wandb/run-20240101_000000-good0001/files/wandb-summary.json", r#"{"_step": 3}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "runs" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("the run's metadata ({files}/wandb-metadata.json:2): not valid JSON")),
        "{}",
        stderr(&o)
    );
    // JSON, but no object: a bad record too (a null would hide the log's environment record)
    for text in ["null", "[]", "\"x\""] {
        write(dir, &format!("{files}/wandb-metadata.json"), text);
        let o = build(dir, &["-q", "--force"]);
        assert_eq!(o.status.code(), Some(1), "{text}: {}", stderr(&o));
        assert!(
            stderr(&o)
                .contains(&format!("{files}/wandb-metadata.json: the run's metadata: expected a JSON object, found")),
            "{text}: {}",
            stderr(&o)
        );
    }
    std::fs::remove_file(dir.join(format!("{files}/wandb-metadata.json"))).unwrap();
    write(dir, &format!("{files}/config.yaml"), "lr:\n  value: 1\nlr:\n  value: 2\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("the run's config ({files}/config.yaml) cannot be read: duplicate entry")),
        "{}",
        stderr(&o)
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT run_id FROM t"), "run_id\ngood0001\n");
}

#[test]
fn a_chart_export_with_an_unnamed_column_an_empty_export_and_a_list_for_an_id() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "chart.csv", "\"Step\",\"r1 - loss\",\"\"\n\"0\",\"0.5\",\"\"\n\"1\",\"0.4\",\"x\"\n");
    write(dir, "history/abcd1234.csv", "");
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[("w", r#"["chart.csv", "history/*.csv"]"#, r#"{ table = "history" }"#)],
            &[("t", "SELECT run_name, step, metric, value FROM w", "")],
        ),
    );
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("history/abcd1234.csv (an empty file: no header, no record)"), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT * FROM t"), "run_name,step,metric,value\nr1,0,loss,0.5\n");
    let rejects = std::fs::read_to_string(release(dir, "wb").join("rejects/w.jsonl")).unwrap();
    assert!(rejects.contains("cell 3 holds a value but its column has no name"), "{rejects}");
    // pandas' name for a column without one is no name either
    write(dir, "chart.csv", "Step,r1 - loss,Unnamed: 2\n0,0.5,\n1,0.4,x\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("chart.csv:3:$: cell 3 holds a value but its column has no name"), "{}", stderr(&o));
    // a run id given as a list would be lost as null: a bad record; tags as text in the API's
    // JSON are no list either (a CSV cell's `a, b` is)
    write(
        dir,
        "runs.json",
        r#"[{"id": ["x"], "name": "a", "state": "finished"}, {"id": "abcd1234", "name": "b", "tags": "a,b"}]"#,
    );
    let o = wandb_build(dir, "runs.json", r#"{ table = "runs" }"#);
    assert_violations(
        &o,
        2,
        &[
            "runs.json:1:$: $.id: expected a string, found an array",
            "runs.json:2:$: $.tags: expected a list of tags, found string \"a,b\"",
        ],
    );
}

#[test]
fn a_history_that_cannot_be_checked_against_its_run_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files = "wandb/run-20240101_000000-abcd1234/files";
    write(dir, &format!("{files}/wandb-history.jsonl"), "{\"_step\": 0, \"loss\": 1}\n{\"_step\": 1, \"loss\": 2}\n");
    write(dir, &format!("{files}/wandb-summary.json"), r#"{"_step": "9"}"#);
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_violations(
        &o,
        1,
        &[
            "history not checked: wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl has 2 rows (max `_step` 1), \
           and the run's summary, which says how far the run logged, cannot be read",
        ],
    );
    // a run folder with no history and a summary whose `_step` is no step: not shown to be whole
    let other = "wandb/run-20240101_000000-efgh5678/files";
    write(dir, &format!("{other}/wandb-summary.json"), r#"{"_step": -9}"#);
    let o = build(dir, &["-q", "--force"]);
    assert!(
        stderr(&o).contains(
            "run efgh5678: history not checked: wandb/run-20240101_000000-efgh5678 has no wandb-history.jsonl"
        ),
        "{}",
        stderr(&o)
    );
    // a run list's run of which no history is read, with counts that cannot be read
    std::fs::remove_dir_all(dir.join("wandb")).unwrap();
    write(dir, "history/abcd1234.csv", "_step,loss\n0,0.5\n");
    write(
        dir,
        "runs.json",
        r#"[{"id": "abcd1234", "historyLineCount": 1}, {"id": "zzzz9999", "historyLineCount": "500"}]"#,
    );
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[("w", r#"["runs.json", "history/*.csv"]"#, r#"{ table = "history" }"#)],
            &[("t", "SELECT * FROM w", "")],
        ),
    );
    let o = build(dir, &["-q", "--force"]);
    assert_violations(
        &o,
        1,
        &[
            "run zzzz9999: history not checked: no history row of the run was read, and the run list, which says how far \
           the run logged, cannot be read: `historyLineCount` must be a whole number of at least 0, found string \"500\"",
        ],
    );
}

#[test]
fn wandb_logged_values_keep_their_json_type_and_a_logged_none_is_a_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl",
        "{\"_step\": 0, \"flag\": true, \"word\": \"true\", \"n\": 5, \"s\": \"5\", \"gone\": null, \"l\": [1, \"a\"]}\n",
    );
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[("w", "\"wandb/**\"", r#"{ table = "history" }"#)],
            &[("t", "SELECT step, metric, value, value_text FROM w", "")],
        ),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // value_text is JSON text: the boolean true and the string "true", the integer 5 and the
    // string "5" differ; a logged None is a row with neither value nor text
    assert_eq!(
        query(&release(dir, "wb"), "SELECT step, metric, value, value_text FROM t ORDER BY metric"),
        "step,metric,value,value_text\n0,flag,,true\n0,gone,,\n0,l,,\"[1,\"\"a\"\"]\"\n0,n,5.0,\n0,s,,\"\"\"5\"\"\"\n\
         0,word,,\"\"\"true\"\"\"\n"
    );
    // a chart-panel export's text and booleans alike
    std::fs::remove_dir_all(dir.join("wandb")).unwrap();
    write(dir, "chart.csv", "\"Step\",\"r - ok\",\"r - note\"\n\"0\",\"true\",\"fine\"\n");
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[("w", "\"chart.csv\"", r#"{ table = "history" }"#)],
            &[("t", "SELECT metric, value_text FROM w", "")],
        ),
    );
    let o = build(dir, &["-q", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "wb"), "SELECT metric, value_text FROM t ORDER BY metric"),
        "metric,value_text\nnote,\"\"\"fine\"\"\"\nok,true\n"
    );
}

#[test]
fn wandb_steps_repeated_across_a_runs_files_are_named_with_both_places() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a resumed run: its second folder logs step 2 again
    let first = "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl";
    let second = "wandb/run-20240102_000000-abcd1234/files/wandb-history.jsonl";
    write(dir, first, "{\"_step\": 0, \"loss\": 0.5}\n{\"_step\": 1, \"loss\": 0.4}\n{\"_step\": 2, \"loss\": 0.3}\n");
    write(dir, second, "{\"_step\": 2, \"loss\": 0.35}\n{\"_step\": 3, \"loss\": 0.2}\n");
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = build(dir, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = format!(
        "{second}: w: run abcd1234: 1 `_step` value(s) are logged in more than one of the run's files (the first: 2, in \
         {first} and in {second}; a resumed run's folders log the steps since its last checkpoint again); each record \
         becomes rows of the table, which a primaryKey (run_id, step, metric) refuses, unless the table keeps the \
         later session's (on_duplicate_key = \"keep-last\" with record_columns = [\"run_id\", \"step\"] and \
         order_by = \"timestamp\", as `runpack init` writes)"
    );
    assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    assert_eq!(query(&release(dir, "wb"), "SELECT count(*) AS n FROM t WHERE step = 2"), "n\n2\n");
    // under a primary key, a violation that names both rows
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[("w", "\"wandb/**\"", r#"{ table = "history" }"#)],
            &[(
                "t",
                "SELECT run_id, step, metric, value, _source_file, _source_line FROM w",
                "schema = \"history.json\"",
            )],
        ),
    );
    write(
        dir,
        "history.json",
        r#"{"fields":[{"name":"run_id","type":"string"},{"name":"step","type":"integer"},{"name":"metric","type":"string"},{"name":"value","type":"number"},{"name":"_source_file","type":"string"},{"name":"_source_line","type":"integer"}],"primaryKey":["run_id","step","metric"]}"#,
    );
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 rows share this primary key"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{first}:3")) && stderr(&o).contains(&format!("{second}:1")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_dotted_key_collision_names_both_keys_and_the_rejected_record_keeps_its_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let line = "{\"_step\": 3, \"loss\": 0.3, \"a.b\": 1, \"a\": {\"b\": 2}}";
    write(dir, "wandb/run-20240101_000000-abcd1234/files/wandb-history.jsonl", &format!("{line}\n"));
    let o = wandb_build(dir, "wandb/**", r#"{ table = "history" }"#);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "wandb-history.jsonl:1:$: the keys $[\"a.b\"] and $.a.b both name metric `a.b` once nested keys are joined \
             with dots; one value would be lost: rename one when logging"
        ),
        "{}",
        stderr(&o)
    );
    let o = build(dir, &["-q", "--force", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "wb").join("rejects/w.jsonl")).unwrap();
    let r: serde_json::Value = serde_json::from_str(rejects.trim()).unwrap();
    assert_eq!(r["raw"], r#"{"_step":3,"loss":0.3,"a.b":1,"a":{"b":2}}"#, "{rejects}");
}

#[test]
fn a_grouped_chart_export_reads_with_its_mean_step_and_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a grouped panel (series `<group key>: <value>`) over a custom x axis: `_step` is the
    // group's mean step, with its min and max
    write(
        dir,
        "chart.csv",
        "\"epoch\",\"algo: UCEA - _step\",\"algo: UCEA - _step__MIN\",\"algo: UCEA - _step__MAX\",\"algo: UCEA - reward\",\"algo: UCEA - reward__MIN\",\"algo: UCEA - reward__MAX\"\n\
         \"1\",\"26.5\",\"20\",\"33\",\"0.5\",\"0.4\",\"0.6\"\n\
         \"2\",\"52.5\",\"40\",\"65\",\"0.7\",\"0.65\",\"0.8\"\n",
    );
    write(
        dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[("w", "\"chart.csv\"", r#"{ table = "history" }"#)],
            &[("t", "SELECT run_name, step, metric, value, value_min, value_max, x_axis, x FROM w", "")],
        ),
    );
    let o = build(dir, &["-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        query(&release(dir, "wb"), "SELECT * FROM t ORDER BY x, metric"),
        "run_name,step,metric,value,value_min,value_max,x_axis,x\n\
         algo: UCEA,,_step,26.5,20.0,33.0,epoch,1.0\n\
         algo: UCEA,,reward,0.5,0.4,0.6,epoch,1.0\n\
         algo: UCEA,,_step,52.5,40.0,65.0,epoch,2.0\n\
         algo: UCEA,,reward,0.7,0.65,0.8,epoch,2.0\n"
    );
    // a run's own fractional `_step` is still a violation
    write(dir, "chart.csv", "\"epoch\",\"run-a - _step\",\"run-a - reward\"\n\"1\",\"26.5\",\"0.5\"\n");
    let o = build(dir, &["-q", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("chart.csv:2:$: run run-a: `_step` must be an integer step, found the fraction 26.5"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_real_wandb_log_keeps_logged_nones_json_types_and_colliding_records() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("client");
    let o = run(std::process::Command::new(python())
        .arg(repo().join("tests/python/wandb_logged_values.py"))
        .arg(&out)
        .env("WANDB_MODE", "offline")
        .env_remove("WANDB_API_KEY")
        .env("NO_PROXY", "*")
        .env("HTTPS_PROXY", "http://127.0.0.1:9"));
    assert!(o.status.success(), "the wandb client failed: {}", stderr(&o));
    let dir = tmp.path().join("p");
    copy_files(&out.join("wandb"), &dir.join("wandb"));
    write(
        &dir,
        "pipeline.toml",
        &pipeline(
            "wb",
            &[("w", "\"wandb/**\"", r#"{ table = "history" }"#)],
            &[("t", "SELECT step, metric, value, value_text FROM w", "")],
        ),
    );
    let o = build(&dir, &["-q", "--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = release(&dir, "wb");
    assert_eq!(
        query(&r, "SELECT step, metric, value, value_text FROM t ORDER BY step, metric"),
        "step,metric,value,value_text\n0,flag,,true\n0,loss,0.5,\n0,n,5.0,\n0,s,,\"\"\"5\"\"\"\n0,word,,\"\"\"true\"\"\"\n\
         0,x,,\n"
    );
    // the step whose keys collide is set aside whole, both keys named, the record as logged kept
    let rejects = std::fs::read_to_string(r.join("rejects/w.jsonl")).unwrap();
    let rejected: serde_json::Value = serde_json::from_str(rejects.trim()).unwrap();
    assert!(rejected["_source_file"].as_str().unwrap().ends_with("run-values01.wandb"), "{rejects}");
    // (the client writes the two keys in either order)
    let reason = rejected["_reasons"][0].as_str().unwrap();
    assert!(
        [("$.a.b", "$[\"a.b\"]"), ("$[\"a.b\"]", "$.a.b")].iter().any(|(a, b)| reason
            == format!(
                "the keys {a} and {b} both name metric `a.b` once nested keys are joined with dots; one value would be \
                 lost: rename one when logging"
            )),
        "{rejects}"
    );
    let raw: serde_json::Value = serde_json::from_str(rejected["raw"].as_str().unwrap()).unwrap();
    assert_eq!(
        (raw["a.b"].as_i64(), raw["a"]["b"].as_i64(), raw["loss"].as_f64(), raw["_step"].as_i64()),
        (Some(1), Some(2), Some(0.4), Some(1))
    );
}

#[test]
fn credentials_in_a_runs_export_are_replaced_whole_and_their_runs_named_by_place() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // an export without its ID column; an AWS secret holds `/`; a token in a query string
    write(
        dir,
        "raw/runs.csv",
        ",name,state,group,tags,val_dst_path\n\
         0,run-a,finished,g,\"['x']\",s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY@bucket/x\n\
         1,run-b,finished,https://bob:pa/ss@host.example/g,\"['x']\",https://api.example.com/x?api_key=abcdef0123&page=2\n",
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"wb\"\n[[source]]\nname = \"runs_src\"\npath = \"raw/runs.csv\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"runs\"\n[[table]]\nname = \"runs\"\n\
         query = \"SELECT name, \\\"group\\\", fields, _source_file, _source_line FROM runs_src\"\n",
    );
    let o = build(dir, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = query(&release(dir, "wb"), "SELECT name, \"group\", fields FROM runs ORDER BY name");
    for secret in ["wJalrXUtnFEMI", "K7MDENG", "bob", "pa/ss", "abcdef0123"] {
        assert!(!rows.contains(secret), "{secret} in {rows}");
    }
    assert!(rows.contains("s3://REDACTED@bucket/x") && rows.contains("api_key=REDACTED&page=2"), "{rows}");
    assert!(
        stderr(&o).contains("2 runs hold credentials") && stderr(&o).contains("raw/runs.csv:2 (fields)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_rejected_run_keeps_no_credential_in_the_rejects_file_or_the_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // one run listed twice with different values: both copies are bad records
    write(
        dir,
        "raw/runs.csv",
        "name,id,state,config,summary,notes\n\
         r1,abcd1234,finished,\"{'remote': 'https://alice:TOPSECRET@github.com/o/r'}\",{},note https://u:NOTESECRET@h.io\n\
         r1,abcd1234,crashed,\"{'remote': 'https://alice:TOPSECRET@github.com/o/r'}\",{},note2\n",
    );
    write(
        dir,
        "pipeline.toml",
        "name = \"d5\"\n[[source]]\nname = \"wandb_runs\"\npath = \"raw/runs.csv\"\nformat = \"wandb\"\n\
         [source.wandb]\ntable = \"runs\"\n[[table]]\nname = \"runs\"\nquery = \"SELECT * FROM wandb_runs\"\n",
    );
    let o = build(dir, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("SECRET"), "{}", stderr(&o));
    let o = build(dir, &["--on-invalid", "reject"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("SECRET"), "{}", stderr(&o));
    // the run is named once in the warning
    assert_eq!(stderr(&o).matches("abcd1234 (").count(), 1, "{}", stderr(&o));
    let rejects = std::fs::read_to_string(release(dir, "d5").join("rejects/wandb_runs.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 2, "{rejects}");
    assert!(!rejects.contains("SECRET") && rejects.contains("REDACTED"), "{rejects}");
}

#[test]
fn init_reads_a_killed_runs_wandb_history_as_it_is_marked_and_named_in_the_card() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, log) = longrun_copy(tmp.path());
    // the run was killed: its log holds its first half
    let whole = std::fs::read(&log).unwrap();
    let half = whole.len() as u64 / 2;
    let inside = log_records(&log).into_iter().find(|r| r.0 > half).unwrap();
    std::fs::write(&log, &whole[..((inside.0 + inside.1) / 2) as usize]).unwrap();
    let o = run(bin().current_dir(tmp.path()).arg("init").arg(dir.join("wandb")).args(["--name", "x", "-q"]));
    assert!(o.status.success(), "init failed: {}", stderr(&o));
    let toml = std::fs::read_to_string(tmp.path().join("pipelines/x/pipeline.toml")).unwrap();
    let history = toml.split("table = \"history\"").nth(1).unwrap_or_else(|| panic!("{toml}"));
    assert!(history.trim_start().starts_with("on_sampled = \"accept\"   # run longrun1: history incomplete"), "{toml}");
    let o =
        run(bin().arg("build").arg(tmp.path().join("pipelines/x")).arg("--releases-dir").arg(tmp.path().join("out")));
    assert!(o.status.success(), "build failed: {}", stderr(&o));
    let release = PathBuf::from(stdout(&o).trim());
    let card = std::fs::read_to_string(release.join("README.md")).unwrap();
    assert!(card.contains("run longrun1: history incomplete, its log cut short or damaged"), "{card}");
    assert!(!card.contains("run longrun1: sampled export"), "{card}");
    let n = query(&release, "SELECT DISTINCT sampled FROM wandb_history WHERE run_id = 'longrun1'");
    assert_eq!(n, "sampled\ntrue\n");
}

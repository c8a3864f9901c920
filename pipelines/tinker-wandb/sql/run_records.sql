-- One row per description of a Tinker training run in the copied result files, with the field
-- aliases of tinker-rl-lab resolved:
--   experiment    <- experiment_id | experiment | name | tag
--   group_size    <- group_size | group (only when `group` is a number; otherwise it is a label)
--   steps         <- steps_completed | steps | num_steps
--   peak_accuracy <- peak_accuracy | peak_reward | peak
--   last10_avg    <- last10_avg | last_10_avg
--   wandb_run_url <- wandb_run_url | wandb_url (only master_results.json records W&B URLs)
-- precedence: 1 = the per-run result files under experiments/tinker-runs/results,
--             2 = experiments/master_results.json
-- training_run_id: the Tinker run id `<uuid>:train:<n>` from run_id or from the checkpoint URI,
-- with the doubled suffix (`:train:0:train:0`) written by string concatenation repaired.
-- Rows that name no Tinker run (partial runs: run_id "partial-from-console") have a null id.
WITH described AS (
    SELECT 1 AS precedence, experiment, model, model_short, task, seed, "rank", lr, "group" AS group_size,
           coalesce(steps_completed, steps) AS steps, peak AS peak_accuracy, last10_avg,
           CASE WHEN partial THEN 'partial' END AS status,
           run_id, checkpoint AS uri, CAST(NULL AS VARCHAR) AS wandb_run_url, _source_file, _source_line
    FROM single_runs
    UNION ALL
    SELECT 1, tag, model, NULL, 'gsm8k', seed, NULL, lr, group_size, steps,
           peak_reward, last10_avg, status, run_id, final_checkpoint, NULL, _source_file, _source_line
    FROM llama_seeds
    UNION ALL
    SELECT 1, tag, model, model_short, task, seed, "rank", lr, group_size, steps,
           coalesce(peak_reward, peak), last10_avg, status, run_id, checkpoint, NULL, _source_file, _source_line
    FROM wave6
    UNION ALL
    SELECT 2, coalesce(experiment_id, experiment, name, tag), model, model_short, task, seed, "rank",
           json_float(lr),
           CASE WHEN json_typeof("group") = 'number' THEN json_int("group") ELSE json_int(group_size) END,
           coalesce(steps_completed, steps, num_steps),
           coalesce(peak_accuracy, peak_reward, peak), coalesce(last10_avg, last_10_avg),
           status, run_id, coalesce(checkpoint, hf_checkpoint_url), coalesce(wandb_run_url, wandb_url),
           _source_file, _source_line
    FROM master
),
ids AS (
    SELECT *,
           coalesce(
               CASE WHEN run_id ~ '^[0-9a-f-]{36}(:train:[0-9]+)+$' THEN run_id END,
               tinker_run_id(uri)
           ) AS raw_run_id
    FROM described
)
SELECT regexp_replace(raw_run_id, '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS training_run_id,
       raw_run_id <> regexp_replace(raw_run_id, '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS id_repaired,
       precedence, experiment, model, model_short, task, seed, "rank", lr, group_size, steps,
       peak_accuracy, last10_avg, status, wandb_run_url, _source_file, _source_line
FROM ids

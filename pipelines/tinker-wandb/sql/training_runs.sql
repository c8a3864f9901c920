-- One row per Tinker training run named in the copied result files. Each attribute is taken
-- from the highest-precedence description that has it (per-run result file, then
-- master_results.json; ties broken by file and position).
-- wandb_url_id_style: what the run segment of the recorded W&B URL is (see the card):
--   wandb_run_id   8 lowercase letters or digits, a W&B run id (`3eryah20`);
--   tinker_run_id  the Tinker run id with its suffix (`<uuid>:train:0`);
--   tinker_uuid    the bare Tinker UUID;
--   run_name       anything else (a display name such as `ppo-gsm8k-Qwen3-8B-s42`).
WITH described AS (
    SELECT training_run_id,
        first_value(experiment ORDER BY precedence, _source_file, _source_line) FILTER (WHERE experiment IS NOT NULL) AS experiment,
        first_value(model ORDER BY precedence, _source_file, _source_line) FILTER (WHERE model LIKE '%/%') AS model,
        first_value(model_short ORDER BY precedence, _source_file, _source_line) FILTER (WHERE model_short IS NOT NULL) AS model_short,
        first_value(task ORDER BY precedence, _source_file, _source_line) FILTER (WHERE task IS NOT NULL) AS task,
        first_value(seed ORDER BY precedence, _source_file, _source_line) FILTER (WHERE seed IS NOT NULL) AS seed,
        first_value("rank" ORDER BY precedence, _source_file, _source_line) FILTER (WHERE "rank" IS NOT NULL) AS "rank",
        first_value(lr ORDER BY precedence, _source_file, _source_line) FILTER (WHERE lr IS NOT NULL) AS lr,
        first_value(group_size ORDER BY precedence, _source_file, _source_line) FILTER (WHERE group_size IS NOT NULL) AS group_size,
        first_value(steps ORDER BY precedence, _source_file, _source_line) FILTER (WHERE steps IS NOT NULL) AS steps,
        first_value(last10_avg ORDER BY precedence, _source_file, _source_line) FILTER (WHERE last10_avg IS NOT NULL) AS last10_avg,
        first_value(peak_accuracy ORDER BY precedence, _source_file, _source_line) FILTER (WHERE peak_accuracy IS NOT NULL) AS peak_accuracy,
        first_value(status ORDER BY precedence, _source_file, _source_line) FILTER (WHERE status IS NOT NULL) AS status,
        first_value(wandb_run_url ORDER BY precedence, _source_file, _source_line) FILTER (WHERE wandb_run_url IS NOT NULL) AS wandb_run_url,
        bool_or(id_repaired) AS id_repaired,
        array_agg(_source_file || ':' || _source_line ORDER BY precedence, _source_file, _source_line) AS source_files
    FROM run_records
    WHERE training_run_id IS NOT NULL
    GROUP BY training_run_id
),
urls AS (
    SELECT *, regexp_replace(regexp_replace(wandb_run_url, '^.*/runs/', ''), '[/?#].*$', '') AS url_segment
    FROM described
)
SELECT training_run_id, experiment, model, model_short, task, seed, "rank", lr, group_size, steps,
       last10_avg, peak_accuracy, status, wandb_run_url,
       CASE WHEN wandb_run_url IS NULL THEN NULL
            WHEN wandb_run_id(wandb_run_url) IS NOT NULL THEN 'wandb_run_id'
            WHEN url_segment ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:train:[0-9]+$' THEN 'tinker_run_id'
            WHEN url_segment ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN 'tinker_uuid'
            ELSE 'run_name' END AS wandb_url_id_style,
       wandb_run_id(wandb_run_url) AS wandb_run_id,
       id_repaired,
       source_files
FROM urls

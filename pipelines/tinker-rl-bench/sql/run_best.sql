-- One row per Tinker training run named anywhere in the raw files. Each attribute is taken from
-- the highest-precedence description that has it (per-run raw file, then the consolidated file,
-- then master_results.json; ties broken by file and position).
WITH all_ids AS (
    SELECT training_run_id FROM run_records WHERE training_run_id IS NOT NULL
    UNION
    SELECT training_run_id FROM checkpoint_mentions
),
described AS (
    SELECT training_run_id,
        first_value(experiment ORDER BY precedence, _source_file, _source_line) FILTER (WHERE experiment IS NOT NULL) AS experiment,
        first_value(model ORDER BY precedence, _source_file, _source_line) FILTER (WHERE model LIKE '%/%') AS model,
        first_value(model_short ORDER BY precedence, _source_file, _source_line) FILTER (WHERE model_short IS NOT NULL) AS model_short,
        first_value(model ORDER BY precedence, _source_file, _source_line) FILTER (WHERE model IS NOT NULL AND model NOT LIKE '%/%') AS model_label,
        first_value(task ORDER BY precedence, _source_file, _source_line) FILTER (WHERE task IS NOT NULL) AS task,
        first_value(seed ORDER BY precedence, _source_file, _source_line) FILTER (WHERE seed IS NOT NULL) AS seed,
        first_value("rank" ORDER BY precedence, _source_file, _source_line) FILTER (WHERE "rank" IS NOT NULL) AS "rank",
        first_value(lr ORDER BY precedence, _source_file, _source_line) FILTER (WHERE lr IS NOT NULL) AS lr,
        first_value(group_size ORDER BY precedence, _source_file, _source_line) FILTER (WHERE group_size IS NOT NULL) AS group_size,
        first_value(steps ORDER BY precedence, _source_file, _source_line) FILTER (WHERE steps IS NOT NULL) AS steps,
        first_value(platform ORDER BY precedence, _source_file, _source_line) FILTER (WHERE platform IS NOT NULL) AS platform,
        first_value(last10_avg ORDER BY precedence, _source_file, _source_line) FILTER (WHERE last10_avg IS NOT NULL) AS last10_avg,
        first_value(peak_accuracy ORDER BY precedence, _source_file, _source_line) FILTER (WHERE peak_accuracy IS NOT NULL) AS peak_accuracy,
        first_value(last10_accuracy ORDER BY precedence, _source_file, _source_line) FILTER (WHERE last10_accuracy IS NOT NULL) AS last10_accuracy,
        first_value(status ORDER BY precedence, _source_file, _source_line) FILTER (WHERE status IS NOT NULL) AS status,
        first_value(wandb_run_url ORDER BY precedence, _source_file, _source_line) FILTER (WHERE wandb_run_url IS NOT NULL) AS wandb_run_url,
        bool_or(id_repaired) AS id_repaired
    FROM run_records
    WHERE training_run_id IS NOT NULL
    GROUP BY training_run_id
),
logs AS (
    SELECT training_run_id, min(log_name) AS log_name, max(batch) AS last_batch,
           bool_or(id_repaired) AS id_repaired
    FROM checkpoint_mentions
    GROUP BY training_run_id
)
SELECT a.training_run_id,
       coalesce(d.experiment, l.log_name) AS experiment,
       coalesce(d.model, d.model_label) AS model,
       coalesce(d.model_short, d.model_label) AS model_short,
       d.task, d.seed, d."rank", d.lr, d.group_size,
       coalesce(d.steps, l.last_batch) AS steps,
       coalesce(d.platform, 'tinker') AS platform,
       d.last10_avg, d.peak_accuracy, d.last10_accuracy, d.status, d.wandb_run_url,
       coalesce(d.id_repaired, false) OR coalesce(l.id_repaired, false) AS id_repaired,
       l.log_name
FROM all_ids a
LEFT JOIN described d ON d.training_run_id = a.training_run_id
LEFT JOIN logs l ON l.training_run_id = a.training_run_id

-- One row per description of a training run found in the hand-made result files, with the
-- field aliases of tinker-rl-lab resolved (see the card's "Selection and normalisation" section):
--   experiment   <- experiment_id | experiment | name | tag
--   group_size   <- group_size | group (only when `group` is a number; otherwise it is a label)
--   steps        <- steps | steps_completed | num_steps
--   peak_accuracy<- peak_accuracy | peak_reward | peak
--   last10_avg   <- last10_avg | last_10_avg
--   wandb_run_url<- wandb_run_url | wandb_url
--   platform     <- lower case, '-' -> '_' (Tinker -> tinker, Modal-H100 -> modal_h100)
-- precedence: 1 = the per-run raw result files under experiments/tinker-runs/results (and the
--             per-prompt probe under experiments/results),
--             2 = experiments/all_results_consolidated.json, 3 = experiments/master_results.json
-- training_run_id: the Tinker run id `<uuid>:train:<n>` from run_id or from the checkpoint URI,
-- with the doubled suffix (`:train:0:train:0`) written by string concatenation repaired.
WITH described AS (
    SELECT 1 AS precedence, experiment, model, model_short, task, seed, "rank", lr, "group" AS group_size,
           coalesce(steps_completed, steps) AS steps, CAST(NULL AS VARCHAR) AS platform,
           peak AS peak_accuracy, last10_avg, CAST(NULL AS DOUBLE) AS last10_accuracy,
           CASE WHEN partial THEN 'partial' END AS status,
           run_id, checkpoint AS uri, CAST(NULL AS VARCHAR) AS wandb_run_url, _source_file, _source_line
    FROM single_runs
    UNION ALL
    SELECT 1, experiment, model, model_short, task, seed, "rank", lr, "group", steps, NULL,
           peak, last10_avg, NULL, NULL, run_id, checkpoint, NULL, _source_file, _source_line
    FROM parallel
    UNION ALL
    SELECT 1, tag, model, model_short, task, seed, "rank", lr, group_size, steps, NULL,
           coalesce(peak_reward, peak), last10_avg, NULL, status, run_id, checkpoint, NULL, _source_file, _source_line
    FROM wave6
    UNION ALL
    SELECT 1, tag, model, NULL, 'gsm8k', seed, NULL, lr, group_size, steps, NULL,
           peak_reward, last10_avg, NULL, status, run_id, final_checkpoint, NULL, _source_file, _source_line
    FROM llama_seeds
    UNION ALL
    SELECT 1, tag, model, model_short, task, seed, "rank", lr, group_size, steps, NULL,
           peak_reward, last10_avg, NULL, status, run_id, checkpoint, NULL, _source_file, _source_line
    FROM zvf_probe
    UNION ALL
    SELECT 1, tag, model, NULL, task, seed, NULL, NULL, group_size, NULL, NULL,
           NULL, NULL, NULL, status, run_id, NULL, NULL, _source_file, _source_line
    FROM prompt_probe
    UNION ALL
    SELECT 1, tag, model, NULL, NULL, seed, NULL, lr, group_size, steps, NULL,
           peak_reward, last10_avg, NULL, status, run_id, final_checkpoint, NULL, _source_file, _source_line
    FROM campaigns
    UNION ALL
    SELECT 2, experiment, model, model_short, task, seed, "rank", lr, "group", coalesce(steps_completed, steps),
           platform, coalesce(peak_accuracy, peak), last10_avg, last10_accuracy,
           CASE WHEN partial THEN 'partial' END, run_id, checkpoint, NULL, _source_file, _source_line
    FROM consolidated
    UNION ALL
    SELECT 3, coalesce(experiment_id, experiment, name, tag), model, model_short, task, seed, "rank",
           json_float(lr),
           CASE WHEN json_typeof("group") = 'number' THEN json_int("group") ELSE json_int(group_size) END,
           coalesce(steps, steps_completed, num_steps), platform,
           coalesce(peak_accuracy, peak_reward, peak), coalesce(last10_avg, last_10_avg), last10_accuracy,
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
       lower(replace(platform, '-', '_')) AS platform, peak_accuracy, last10_avg, last10_accuracy, status,
       uri, wandb_run_url, _source_file, _source_line
FROM ids

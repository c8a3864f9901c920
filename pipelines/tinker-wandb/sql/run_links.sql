-- One row per (Tinker run, W&B run) pair that either rule links:
--   url_run_id            the W&B run id in the W&B URL recorded for the Tinker run
--                         (`wandb_run_id(url)`: 8 lowercase letters or digits) is the W&B run's id;
--   config_tinker_run_id  the W&B run's normalised config `tinker_run_id` (see wandb_runs.sql)
--                         is the Tinker run's id.
-- `rule` is the first rule that holds, in that order; `by_*` say which hold.
WITH by_url AS (
    SELECT t.training_run_id, w.run_id AS wandb_run_id
    FROM training_runs t JOIN wandb_runs w ON w.run_id = t.wandb_run_id
),
by_config AS (
    SELECT t.training_run_id, w.run_id AS wandb_run_id
    FROM training_runs t JOIN wandb_runs w ON w.tinker_run_id = t.training_run_id
),
pairs AS (
    SELECT training_run_id, wandb_run_id FROM by_url
    UNION
    SELECT training_run_id, wandb_run_id FROM by_config
)
SELECT p.training_run_id,
       p.wandb_run_id,
       CASE WHEN u.wandb_run_id IS NOT NULL THEN 'url_run_id' ELSE 'config_tinker_run_id' END AS rule,
       u.wandb_run_id IS NOT NULL AS by_url_run_id,
       c.wandb_run_id IS NOT NULL AS by_config_tinker_run_id,
       t.experiment,
       t.wandb_run_url AS recorded_wandb_url,
       w.url AS wandb_url,
       w.config_tinker_run_id,
       w.tinker_run_id_repaired
FROM pairs p
JOIN training_runs t ON t.training_run_id = p.training_run_id
JOIN wandb_runs w ON w.run_id = p.wandb_run_id
LEFT JOIN by_url u ON u.training_run_id = p.training_run_id AND u.wandb_run_id = p.wandb_run_id
LEFT JOIN by_config c ON c.training_run_id = p.training_run_id AND c.wandb_run_id = p.wandb_run_id

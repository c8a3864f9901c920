-- One row per Tinker training run, with its checkpoints (ordered by step, then name) taken
-- from the checkpoint list (the rows of the `checkpoints` table) and the raw places that describe it.
WITH ckpt AS (
    SELECT training_run_id,
           array_agg(tinker_uri ORDER BY step, name) FILTER (WHERE kind = 'weights') AS weight_checkpoints,
           array_agg(tinker_uri ORDER BY step, name) FILTER (WHERE kind = 'sampler_weights') AS sampler_weight_checkpoints,
           count(*) AS n_checkpoints
    FROM checkpoint_list
    GROUP BY training_run_id
),
places AS (
    SELECT training_run_id, min(precedence) AS precedence, _source_file || ':' || _source_line AS place
    FROM (
        SELECT training_run_id, precedence, _source_file, _source_line FROM run_records WHERE training_run_id IS NOT NULL
        UNION ALL
        SELECT training_run_id, 4, _source_file, _source_line FROM checkpoint_mentions
    )
    GROUP BY training_run_id, _source_file || ':' || _source_line
),
sources AS (
    -- highest precedence first: the first entry is where the run's attributes come from
    SELECT training_run_id, array_agg(place ORDER BY precedence, place) AS source_files FROM places GROUP BY training_run_id
)
SELECT r.training_run_id,
       r.experiment, r.model, r.model_short, r.task, r.seed, r."rank", r.lr, r.group_size, r.steps,
       r.platform, r.last10_avg, r.peak_accuracy, r.last10_accuracy, r.status,
       coalesce(c.weight_checkpoints, make_array()) AS weight_checkpoints,
       coalesce(c.sampler_weight_checkpoints, make_array()) AS sampler_weight_checkpoints,
       wandb_run_id(r.wandb_run_url) AS wandb_run_id,
       r.wandb_run_url,
       r.id_repaired,
       r.log_name IS NOT NULL AS has_checkpoint_index,
       r.seed IS NOT NULL AND r."rank" IS NOT NULL AND r.lr IS NOT NULL AND r.group_size IS NOT NULL AS complete_metadata,
       s.source_files
FROM run_best r
LEFT JOIN ckpt c ON c.training_run_id = r.training_run_id
JOIN sources s ON s.training_run_id = r.training_run_id

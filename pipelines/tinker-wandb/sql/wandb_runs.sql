-- One row per W&B run, read from the runs' `.wandb` transaction logs (the `runs` table of
-- runpack's W&B reader), with the config values the links use.
-- tinker_run_id: the config's `tinker_run_id` normalised: a doubled suffix written by string
-- concatenation (`<uuid>:train:0:train:0`) is repaired to `<uuid>:train:0`; values that are not
-- a Tinker run id (`partial-from-console`) are kept as written.
-- url: the run's page, https://wandb.ai/<entity>/<project>/runs/<run_id>.
SELECT run_id, entity, project, name, state, "group", job_type, created_at, runtime_s, last_step,
       'https://wandb.ai/' || entity || '/' || project || '/runs/' || run_id AS url,
       config_tinker_run_id,
       regexp_replace(config_tinker_run_id, '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS tinker_run_id,
       coalesce(config_tinker_run_id <> regexp_replace(config_tinker_run_id, '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1'), false) AS tinker_run_id_repaired,
       model, seed, lora_rank, learning_rate,
       final_accuracy, peak_accuracy, mean_last10_reward, total_steps,
       config, summary, source, source_files
FROM wandb_run_logs

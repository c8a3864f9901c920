-- One row per (W&B run, step, metric) as logged, read from the runs' `.wandb` transaction logs
-- (the `history` table of runpack's W&B reader): complete, never sampled. `timestamp` and
-- `runtime_s` are the times the backfill was logged at, not the times of the Tinker steps.
SELECT run_id, step, metric, value, timestamp, runtime_s, _source_file, _source_line
FROM wandb_history_logs

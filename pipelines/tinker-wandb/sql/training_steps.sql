-- Per-step results of each Tinker run, one row per (run, step), from the run's own result file
-- under experiments/tinker-runs/results: its step log when it has one (loss, reward, zvf, gu),
-- else its reward trace (reward only; the trace's i-th value is step i). Steps are 1-based as the
-- result files number them (Tinker's 0-based batch index is step - 1), which is also the step the
-- W&B backfill logs them at. The copies in master_results.json are not used.
WITH logs AS (
    SELECT run_id, unnest(step_log) AS s, _source_file, _source_line FROM single_runs
    UNION ALL
    SELECT run_id, unnest(step_log) AS s, _source_file, _source_line FROM wave6
),
from_logs AS (
    SELECT run_id, s['step'] AS step, s['loss'] AS loss, s['reward'] AS reward, s['zvf'] AS zvf, s['gu'] AS gu,
           'step_log' AS source, _source_file, _source_line
    FROM logs
),
traces AS (
    SELECT run_id, reward_trace, _source_file, _source_line FROM single_runs
    UNION ALL SELECT run_id, reward_trace, _source_file, _source_line FROM llama_seeds
    UNION ALL SELECT run_id, reward_trace, _source_file, _source_line FROM wave6
),
trace_rows AS (
    SELECT run_id, reward_trace, unnest(range(1, CAST(array_length(reward_trace) AS BIGINT) + 1)) AS i,
           _source_file, _source_line
    FROM traces
    WHERE array_length(reward_trace) > 0
),
logged AS (
    SELECT DISTINCT _source_file, _source_line FROM from_logs
),
from_traces AS (
    SELECT run_id, i AS step, CAST(NULL AS DOUBLE) AS loss, reward_trace[i] AS reward,
           CAST(NULL AS DOUBLE) AS zvf, CAST(NULL AS DOUBLE) AS gu,
           'reward_trace' AS source, _source_file, _source_line
    FROM trace_rows t
    WHERE NOT EXISTS (SELECT 1 FROM logged g WHERE g._source_file = t._source_file AND g._source_line = t._source_line)
)
SELECT regexp_replace(run_id, '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS training_run_id,
       step, loss, reward, zvf, gu, source, _source_file, _source_line
FROM (SELECT * FROM from_logs UNION ALL SELECT * FROM from_traces)
WHERE run_id ~ '^[0-9a-f-]{36}(:train:[0-9]+)+$'

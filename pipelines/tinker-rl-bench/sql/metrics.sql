-- Per-step training metrics in long form.
--   source 'metrics.jsonl': every numeric key of the Tinker metrics logs (step is the 0-based
--     batch index, as Tinker writes it);
--   source 'step_log': loss, reward, zvf, gu of the step logs in the per-run result files
--     (their 1-based `step` is shifted to the 0-based batch index);
--   source 'reward_trace': reward per step for runs that have a trace but no step log.
-- For step logs and traces, the per-run raw result file is used (then the consolidated file,
-- then master_results.json), as for run attributes; the other copies are ignored.
-- A metric logged as text is kept in `value_text` (with `value` null); a key logged as null
-- holds no measurement and makes no row.
-- `run` is the Tinker training_run_id, or, for a metrics log whose run has no checkpoint
-- index, or whose checkpoint index names several runs (a log is one run's: it is not copied
-- onto each of them), the log's name.
WITH log_runs AS (
    SELECT log_name, min(training_run_id) AS training_run_id
    FROM (SELECT DISTINCT log_name, training_run_id FROM checkpoint_mentions WHERE log_name IS NOT NULL)
    GROUP BY log_name
    HAVING count(training_run_id) = 1
),
from_logs AS (
    SELECT coalesce(l.training_run_id, m.run) AS run, l.training_run_id, 'metrics.jsonl' AS source,
           m.step, m.metric, m.value, m.value_text, m._source_file, CAST(m._source_line AS VARCHAR) AS _source_line
    FROM metrics_log m LEFT JOIN log_runs l ON l.log_name = m.run
    WHERE m.value IS NOT NULL OR m.value_text IS NOT NULL
),
step_entries AS (
    SELECT 1 AS precedence, run_id, s['step'] AS st, s['loss'] AS loss, s['reward'] AS reward, s['zvf'] AS zvf, s['gu'] AS gu, _source_file, _source_line
    FROM (SELECT run_id, unnest(step_log) AS s, _source_file, _source_line FROM single_runs)
    UNION ALL SELECT 1, run_id, s['step'], s['loss'], s['reward'], s['zvf'], s['gu'], _source_file, _source_line
    FROM (SELECT run_id, unnest(step_log) AS s, _source_file, _source_line FROM parallel)
    UNION ALL SELECT 1, run_id, s['step'], s['loss'], s['reward'], s['zvf'], s['gu'], _source_file, _source_line
    FROM (SELECT run_id, unnest(step_log) AS s, _source_file, _source_line FROM wave6)
    UNION ALL SELECT 1, run_id, s['step'], s['loss'], s['reward'], s['zvf'], s['gu'], _source_file, _source_line
    FROM (SELECT run_id, unnest(step_log) AS s, _source_file, _source_line FROM zvf_probe)
    UNION ALL SELECT 2, run_id, s['step'], s['loss'], s['reward'], s['zvf'], s['gu'], _source_file, _source_line
    FROM (SELECT run_id, unnest(step_log) AS s, _source_file, _source_line FROM consolidated)
),
chosen_step_log AS (
    SELECT training_run_id, _source_file, _source_line FROM (
        SELECT regexp_replace(run_id, '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS training_run_id,
               _source_file, _source_line,
               row_number() OVER (PARTITION BY run_id ORDER BY precedence, _source_file, _source_line) AS rn
        FROM (SELECT DISTINCT precedence, run_id, _source_file, _source_line FROM step_entries)
        WHERE run_id ~ '^[0-9a-f-]{36}(:train:[0-9]+)+$'
    ) WHERE rn = 1
),
step_rows AS (
    SELECT c.training_run_id, e.st, e.loss, e.reward, e.zvf, e.gu, e._source_file, e._source_line
    FROM step_entries e
    JOIN chosen_step_log c ON c._source_file = e._source_file AND c._source_line = e._source_line
),
from_step_logs AS (
    SELECT training_run_id AS run, training_run_id, 'step_log' AS source, st - 1 AS step, 'loss' AS metric, loss AS value, CAST(NULL AS VARCHAR) AS value_text, _source_file, _source_line FROM step_rows
    UNION ALL SELECT training_run_id AS run, training_run_id, 'step_log', st - 1, 'reward', reward, NULL, _source_file, _source_line FROM step_rows
    UNION ALL SELECT training_run_id AS run, training_run_id, 'step_log', st - 1, 'zvf', zvf, NULL, _source_file, _source_line FROM step_rows
    UNION ALL SELECT training_run_id AS run, training_run_id, 'step_log', st - 1, 'gu', gu, NULL, _source_file, _source_line FROM step_rows
),
chosen_trace AS (
    SELECT training_run_id, reward_trace, _source_file, _source_line FROM (
        SELECT t.training_run_id, t.reward_trace, t._source_file, t._source_line,
               row_number() OVER (PARTITION BY t.training_run_id ORDER BY t.precedence, t._source_file, t._source_line) AS rn
        FROM (
            SELECT r.training_run_id, r.precedence, x.reward_trace, r._source_file, r._source_line
            FROM run_records r
            JOIN (
                SELECT reward_trace, _source_file, _source_line FROM single_runs
                UNION ALL SELECT reward_trace, _source_file, _source_line FROM parallel
                UNION ALL SELECT reward_trace, _source_file, _source_line FROM wave6
                UNION ALL SELECT reward_trace, _source_file, _source_line FROM llama_seeds
                UNION ALL SELECT reward_trace, _source_file, _source_line FROM zvf_probe
                UNION ALL SELECT reward_trace, _source_file, _source_line FROM campaigns
                UNION ALL SELECT reward_trace, _source_file, _source_line FROM consolidated
                UNION ALL SELECT reward_trace, _source_file, _source_line FROM master
            ) x ON x._source_file = r._source_file AND x._source_line = r._source_line
            WHERE r.training_run_id IS NOT NULL AND array_length(x.reward_trace) > 0
        ) t
    ) WHERE rn = 1 AND training_run_id NOT IN (SELECT training_run_id FROM chosen_step_log)
),
trace_rows AS (
    SELECT training_run_id, reward_trace, unnest(range(1, CAST(array_length(reward_trace) AS BIGINT) + 1)) AS i, _source_file, _source_line
    FROM chosen_trace
),
from_traces AS (
    SELECT training_run_id AS run, training_run_id, 'reward_trace' AS source, i - 1 AS step, 'reward' AS metric,
           reward_trace[i] AS value, CAST(NULL AS VARCHAR) AS value_text, _source_file, _source_line
    FROM trace_rows
)
SELECT * FROM from_logs
UNION ALL SELECT * FROM from_step_logs WHERE value IS NOT NULL
UNION ALL SELECT * FROM from_traces WHERE value IS NOT NULL

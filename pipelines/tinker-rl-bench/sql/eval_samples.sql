-- One row per evaluated example: the held-out GSM8K per-problem results of each checkpoint.
-- `correct` is reward > 0 (the benchmark's reward is 1 for a correct final answer, else 0);
-- null for a NaN reward, which SQL would otherwise order above every number (NaN > 0 is true).
WITH p AS (
    SELECT h.checkpoint, regexp_replace(m.heldout_split, '\[.*$', '') AS benchmark,
           regexp_replace(regexp_replace(m.heldout_split, '^[^\[]*\[', ''), '\]$', '') AS split,
           unnest(h.per_problem) AS pr, h._source_file, h._source_line
    FROM heldout h CROSS JOIN heldout_meta m
)
SELECT regexp_replace(checkpoint, '^tinker://([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+/', 'tinker://\1/') AS tinker_uri,
       benchmark, split,
       CAST(pr['idx'] AS VARCHAR) AS example_id,
       CAST(0 AS BIGINT) AS sample,
       pr['reward'] AS reward,
       CASE WHEN isnan(pr['reward']) THEN NULL ELSE pr['reward'] > 0 END AS correct,
       pr['completion_tokens'] AS response_tokens,
       pr['answer'] AS answer,
       _source_file,
       _source_line
FROM p

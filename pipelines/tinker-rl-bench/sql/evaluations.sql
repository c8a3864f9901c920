-- One row per (checkpoint, benchmark, split) evaluation. The held-out GSM8K file evaluates
-- sampler checkpoints on `openai/gsm8k[test]` (its metadata names the split) with one sample
-- per problem, so pass@k is not defined and errors/truncations were not recorded.
SELECT regexp_replace(h.checkpoint, '^tinker://([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+/', 'tinker://\1/') AS tinker_uri,
       regexp_replace(tinker_run_id(h.checkpoint), '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS training_run_id,
       regexp_replace(m.heldout_split, '\[.*$', '') AS benchmark,
       regexp_replace(regexp_replace(m.heldout_split, '^[^\[]*\[', ''), '\]$', '') AS split,
       h.model,
       h.heldout_accuracy AS score,
       CAST(h.heldout_correct AS DOUBLE) / h.heldout_n AS score_completed,
       h.heldout_n AS num_examples,
       h.heldout_correct AS num_correct,
       CAST(NULL AS BIGINT) AS num_errors,
       CAST(NULL AS BIGINT) AS num_truncated,
       h.ci95_low,
       h.ci95_high,
       h.mean_completion_tokens,
       h.elapsed_seconds AS time_seconds,
       h.heldout_rank AS rank_in_file,
       h._source_file,
       h._source_line
FROM heldout h CROSS JOIN heldout_meta m

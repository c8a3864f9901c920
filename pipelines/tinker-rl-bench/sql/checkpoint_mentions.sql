-- Every place a raw file names a Tinker checkpoint URI
-- (tinker://<training_run_id>/<weights|sampler_weights>/<name>), with the doubled run-id suffix
-- repaired. `batch` and `final` come from the checkpoint indices (checkpoints.jsonl) only.
WITH uris AS (
    SELECT state_path AS uri, batch, "final" AS final_flag, run AS log_name,
           _source_file, CAST(_source_line AS VARCHAR) AS _source_line
    FROM checkpoint_index
    UNION ALL
    SELECT sampler_path, batch, "final", run, _source_file, CAST(_source_line AS VARCHAR)
    FROM checkpoint_index
    UNION ALL
    SELECT uri, NULL, NULL, NULL, _source_file, _source_line FROM run_records
    UNION ALL
    SELECT initial_sampler, NULL, NULL, NULL, _source_file, _source_line FROM zvf_probe
    UNION ALL
    SELECT latest_sampler, NULL, NULL, NULL, _source_file, _source_line FROM zvf_probe
)
SELECT regexp_replace(tinker_run_id(uri), '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS training_run_id,
       tinker_kind(uri) AS kind,
       tinker_checkpoint(uri) AS name,
       tinker_run_id(uri) <> regexp_replace(tinker_run_id(uri), '^([0-9a-f-]{36}:train:[0-9]+)(:train:[0-9]+)+$', '\1') AS id_repaired,
       batch, final_flag, log_name, _source_file, _source_line
FROM uris
WHERE tinker_run_id(uri) ~ '^[0-9a-f-]{36}(:train:[0-9]+)+$'

-- One row per Tinker checkpoint (training_run_id, kind, name) named in any raw file.
-- step: the completed optimizer steps; from `batch` in the checkpoint index, else from the name
-- (`000020` -> 20, `s15` -> 15), else, for `final`, the run's step count.
-- is_final: the name is `final` or the index row says `"final": true`.
WITH grouped AS (
    SELECT training_run_id, kind, name,
           max(batch) AS batch,
           bool_or(coalesce(final_flag, false)) AS final_flag,
           bool_or(id_repaired) AS id_repaired,
           array_sort(array_distinct(array_agg(_source_file || ':' || _source_line))) AS source_files
    FROM checkpoint_mentions
    GROUP BY training_run_id, kind, name
)
SELECT g.training_run_id,
       g.kind,
       g.name,
       coalesce(
           g.batch,
           CASE WHEN g.name ~ '^[0-9]+$' THEN CAST(g.name AS BIGINT)
                WHEN g.name ~ '^s[0-9]+$' THEN CAST(substr(g.name, 2) AS BIGINT)
                WHEN g.name = 'final' THEN r.steps END
       ) AS step,
       g.name = 'final' OR g.final_flag AS is_final,
       'tinker://' || g.training_run_id || '/' || g.kind || '/' || g.name AS tinker_uri,
       g.id_repaired AS uri_repaired,
       r.experiment, r.model, r.task, r.seed,
       g.source_files
FROM grouped g
JOIN run_best r ON r.training_run_id = g.training_run_id

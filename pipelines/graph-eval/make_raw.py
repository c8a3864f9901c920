"""Writes raw/ of the graph-eval example: `python make_raw.py [DIR]` (default: raw/ beside this file,
replaced).

The files are those of one model's evaluation folder scored for dependency graphs (input-formats
notes §8; Interplay-LM-Reasoning at c6676bc, whose scripts need its gold graphs and generations
to run), written as its writers write them:
- `scripts/score_dependency_graphs.py` appends one line per scoring run to
  `<results_dir>/<generated_path name>_score_report.jsonl` (`append_jsonl`: `json.dumps(payload)`
  and a newline): `gold_dir`, `generated_path`, `results_dir`, `per_file` (the counts of each
  generations file scored, `skipped: true` for one whose results existed) and `aggregate` (their
  sums, `files`, `skipped` as a count, `unused_gold_entries`, `aggregated`, `report_path`,
  `template_stats`);
- `scripts/aggregate_graph_pass_results.py` writes `graph_results/<run>/results.json`
  (`json.dump(data, handle, indent=2)`): `{"files": {<file name>: {per_template, total, ks,
  prompt_counts}}}`, each block with `per_op_pass_at_k`, `per_op_pass_at_columns` (the same values
  keyed by k first) and `total_pass_at_k`, operations sorted by number.
"""

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COUNTS = ("total", "missing_solution", "missing_gold", "parse_fail", "perfect", "value_mismatch",
          "dependency_mismatch", "answer_mismatch", "extra_nodes", "missing_nodes", "perfect_with_extra")


def append_jsonl(path, payload):
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(payload))
        handle.write("\n")


def file_stats(name, counts, templates, skipped=False):
    stats = {"file": f"results/eval/{name}"}
    if skipped:
        stats["skipped"] = True
        return stats
    stats.update(dict(zip(COUNTS, counts)))
    stats["unused_gold_entries"] = 2
    stats["template_stats"] = templates
    stats["results_path"] = f"results/graphs/{name.replace('.jsonl', '.graph_results.jsonl')}"
    return stats


def report(out):
    folder = out / "graphs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "eval_score_report.jsonl"
    runs = [
        [file_stats("checkpoint-100_id_generations.jsonl", [8, 0, 1, 1, 4, 1, 1, 1, 2, 0, 1],
                    {"default": {"total": 8, "perfect": 4}})],
        [file_stats("checkpoint-100_id_generations.jsonl", [], {}, skipped=True),
         file_stats("checkpoint-200_id_generations.jsonl", [8, 0, 0, 0, 6, 0, 1, 0, 1, 1, 0],
                    {"default": {"total": 6, "perfect": 5}, "story": {"total": 2, "perfect": 1}})],
    ]
    for per_file in runs:
        aggregate = {"files": 0, **{k: 0 for k in COUNTS}, "skipped": 0}
        for stats in per_file:
            if stats.get("skipped"):
                aggregate["skipped"] += 1
                continue
            aggregate["files"] += 1
            for k in COUNTS:
                aggregate[k] += int(stats.get(k, 0))
        aggregate["unused_gold_entries"] = 2
        aggregate["aggregated"] = True
        aggregate["report_path"] = str(path.relative_to(out))
        aggregate["template_stats"] = {"default": {"total": sum(s.get("total", 0) for s in per_file)}}
        append_jsonl(path, {"gold_dir": "data/gold", "generated_path": "results/eval", "results_dir": "results/graphs",
                            "per_file": per_file, "aggregate": aggregate})


def block(per_op, total):
    columns = {}
    for op, rates in per_op.items():
        for k, v in rates.items():
            columns.setdefault(k, {})[op] = v
    return {"per_op_pass_at_k": per_op, "per_op_pass_at_columns": columns, "total_pass_at_k": total}


def results(out):
    folder = out / "graph_results" / "checkpoint-200"
    folder.mkdir(parents=True, exist_ok=True)
    per_op = {"2": {"pass@1": 0.75, "pass@2": 1.0}, "10": {"pass@1": 0.25, "pass@2": 0.5}}
    story = {"2": {"pass@1": 1.0, "pass@2": 1.0}}
    data = {"files": {"checkpoint-200_id_generations.graph_results.jsonl": {
        "per_template": {"default": block(per_op, {"pass@1": 0.5, "pass@2": 0.75}),
                         "story": block(story, {"pass@1": 1.0, "pass@2": 1.0})},
        "total": block({"2": {"pass@1": 0.8, "pass@2": 1.0}, "10": {"pass@1": 0.25, "pass@2": 0.5}},
                       {"pass@1": 0.6, "pass@2": 0.8}),
        "ks": [1, 2],
        "prompt_counts": {"per_template": {"default": {"per_op": {"2": 4, "10": 4}, "total": 8},
                                           "story": {"per_op": {"2": 2}, "total": 2}},
                          "total": {"per_op": {"2": 6, "10": 4}, "total": 10}},
    }}}
    with (folder / "results.json").open("w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "raw"
    if out.exists():
        shutil.rmtree(out)
    report(out)
    results(out)


if __name__ == "__main__":
    main()

"""Writes raw/ of the lighteval example the way lighteval 0.13 writes its outputs:
`python make_raw.py [DIR]` (default: raw/ beside this file, replaced).

lighteval needs torch and a model to run, too large for the test environment, so its evaluation
cannot run here. This script keeps its writers' code instead (lighteval 0.13,
`src/lighteval/logging/evaluation_tracker.py`, `EvaluationTracker.save`):
- the details of each task: `Dataset.from_list([asdict(detail) for detail in task_details])`, its
  columns sorted (`doc`, `metric`, `model_response`, each a struct), written with
  `dataset.to_parquet` to `details/<model_name>/<date_id>/details_<task>_<date_id>.parquet`;
- the results: `json.dumps(results_dict, cls=EnhancedJSONEncoder, indent=2, ensure_ascii=False)` to
  `results/<model_name>/results_<date_id>.json`, with `config_general`, `results` (task → metric →
  value, and `<metric>_stderr`; NaN where no stderr was computed), `versions`, `config_tasks`,
  `summary_tasks` and `summary_general`.
`Doc`, `ModelResponse` and `Detail` below are lighteval's dataclasses (`tasks/requests.py`,
`models/model_output.py`, `logging/info_loggers.py`) with their fields in the same order.
"""

import json
import math
import shutil
import sys
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path

from datasets import Dataset

HERE = Path(__file__).resolve().parent
MODEL = "HuggingFaceTB/SmolLM2-135M"
DATE_ID = "2026-11-30T12-00-00.000000"


class SamplingMethod(str, Enum):
    GENERATIVE = "GENERATIVE"
    LOGPROBS = "LOGPROBS"
    PERPLEXITY = "PERPLEXITY"


@dataclass(slots=True)
class Doc:
    query: str
    choices: list
    gold_index: object
    instruction: str | None = None
    images: list | None = None
    specific: dict | None = None
    unconditioned_query: str | None = None
    original_query: str | None = None
    id: str = ""
    task_name: str = ""
    fewshot_samples: list = field(default_factory=list)
    sampling_methods: list = field(default_factory=list)
    fewshot_sorting_class: str | None = None
    generation_size: int | None = None
    stop_sequences: list | None = None
    use_logits: bool = False
    num_samples: int = 1
    generation_grammar: None = None


@dataclass
class ModelResponse:
    input: str | list | None = None
    input_tokens: list = field(default_factory=list)
    text: list = field(default_factory=list)
    output_tokens: list = field(default_factory=list)
    text_post_processed: list | None = None
    reasonings: list = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    argmax_logits_eq_gold: list = field(default_factory=list)
    logits: list | None = None
    unconditioned_logprobs: list | None = None
    truncated_tokens_count: int = 0
    padded_tokens_count: int = 0


@dataclass
class Detail:
    doc: Doc
    model_response: ModelResponse
    metric: dict


def gsm8k():
    task = "lighteval|gsm8k|0"
    rows = [
        ("Tom has 3 apples and buys 2 more. How many apples does he have?", "5", "5", 1.0),
        ("A box holds 4 pens. How many pens are in 2 boxes?", "8", "6", 0.0),
        ("What is 10 divided by 0?", "undefined", "inf", math.nan),
    ]
    details = []
    for i, (q, gold, said, em) in enumerate(rows):
        doc = Doc(query=q, choices=[gold], gold_index=0, id=str(i), task_name=task,
                  sampling_methods=[SamplingMethod.GENERATIVE], generation_size=256, stop_sequences=["\n\n"],
                  specific={"source": "mini"})
        resp = ModelResponse(input=q, input_tokens=[1, 2, 3], text=[said], output_tokens=[[4]],
                             reasonings=[None], truncated_tokens_count=0, padded_tokens_count=i)
        details.append(Detail(doc, resp, {"em": em, "maj@4": math.inf if i == 2 else em}))
    return task, details


def arc():
    task = "leaderboard|arc:challenge|0"
    details = []
    for i, (logprobs, gold) in enumerate([([-0.5, -1.25, -math.inf], [0]), ([-2.0, -0.25, -3.0], [1, 2])]):
        doc = Doc(query=f"Question {i}: which is right?", choices=[" A", " B", " C"], gold_index=gold,
                  instruction="Answer with a letter.", id=str(i), task_name=task,
                  sampling_methods=[SamplingMethod.LOGPROBS])
        best = max(range(3), key=lambda k: logprobs[k])
        golds = gold if isinstance(gold, list) else [gold]
        resp = ModelResponse(input=doc.query, input_tokens=[7, 8], logprobs=logprobs,
                             argmax_logits_eq_gold=[best in golds], truncated_tokens_count=1 - i)
        details.append(Detail(doc, resp, {"acc": float(best in golds), "acc_norm": 1.0}))
    return task, details


def save_details(out, task, task_details):
    dataset = Dataset.from_list([asdict(detail) for detail in task_details])
    column_names = dataset.column_names
    if "id" in dataset.column_names:
        column_names = [t for t in dataset.column_names if t != "id"]
    dataset = dataset.select_columns(sorted(column_names))
    folder = out / "details" / MODEL / DATE_ID
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"details_{task}_{DATE_ID}.parquet", "wb") as f:
        dataset.to_parquet(f)


def results_dict():
    return {
        "config_general": {
            "lighteval_sha": "0c1e0f3",
            "num_fewshot_seeds": 1,
            "max_samples": 3,
            "job_id": "0",
            "start_time": 1764504000.5,
            "end_time": 1764504060.25,
            "total_evaluation_time_secondes": "59.75",
            "model_config": {"model_name": MODEL, "batch_size": 1},
            "model_name": MODEL,
        },
        "results": {
            "lighteval|gsm8k|0": {"em": 0.5, "em_stderr": 0.5, "maj@4": math.inf, "maj@4_stderr": math.nan},
            "leaderboard|arc:challenge|0": {"acc": 0.5, "acc_stderr": 0.5, "acc_norm": 1.0, "acc_norm_stderr": 0.0},
            "all": {"em": 0.5, "em_stderr": 0.5, "acc": 0.5, "acc_stderr": 0.5},
        },
        "versions": {"lighteval|gsm8k|0": 0, "leaderboard|arc:challenge|0": 0},
        "config_tasks": {"lighteval|gsm8k|0": {"name": "gsm8k", "hf_repo": "openai/gsm8k"}},
        "summary_tasks": {
            "lighteval|gsm8k|0": {"hashes": {"hash_examples": "8a0f3b1c2d4e5f60", "hash_full_prompts": "1b2c3d4e5f607182"},
                                   "truncated": 0, "non_truncated": 3, "padded": 3, "non_padded": 0},
            "leaderboard|arc:challenge|0": {"hashes": {"hash_examples": "aa00bb11cc22dd33", "hash_full_prompts": "ee44ff5566778899"},
                                             "truncated": 1, "non_truncated": 1, "padded": 0, "non_padded": 2},
        },
        "summary_general": {"hashes": {}, "truncated": 1, "non_truncated": 4, "padded": 3, "non_padded": 2},
    }


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "raw"
    if out.exists():
        shutil.rmtree(out)
    for task, details in (gsm8k(), arc()):
        save_details(out, task, details)
    folder = out / "results" / MODEL
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"results_{DATE_ID}.json", "w") as f:
        f.write(json.dumps(results_dict(), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

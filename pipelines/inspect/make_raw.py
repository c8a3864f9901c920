"""Writes Inspect AI eval logs with the real `inspect-ai` package and its mock model, offline:
`python make_raw.py [DIR]` (default: raw/ beside this file, replaced).

One task (`arith`, two in-code samples, two epochs, tagged `smoke`, `checkpoint` in its metadata) run on
`mockllm/model`, logged twice: as a `.eval` archive (zstd-compressed members) and as a `.json` log.
Scorers: `match`, `includes` and `ratio`, a scorer that gives sample "q1" an infinite value and sample 2
a NaN in its first epoch, so that the logs hold non-finite numbers.

The mock model counts prompt tokens with tiktoken's o200k_base encoding, which tiktoken downloads on
first use: that count is replaced by a word count here (the only change; the logs are written by
Inspect's own recorders).
"""

import math
import shutil
import sys
from pathlib import Path

import inspect_ai.model._model as _model
import inspect_ai.model._tokens as _tokens


async def _count_words(self, text):
    return max(1, len(text.split()))


_model.ModelAPI.count_text_tokens = _count_words
_tokens.count_text_tokens = lambda text: max(1, len(text.split()))

from inspect_ai import Task, eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.scorer import Score, Target, includes, match, mean, scorer  # noqa: E402
from inspect_ai.solver import TaskState, generate  # noqa: E402


@scorer(metrics=[mean()])
def ratio():
    async def score(state: TaskState, target: Target) -> Score:
        if state.sample_id == "q1":
            return Score(value=math.inf)
        return Score(value=math.nan if state.epoch == 1 else 0.5)

    return score


def task():
    return Task(
        dataset=[
            Sample(input="What is 2+2?", target="4", id="q1", metadata={"level": 1}),
            Sample(input="Say hi", target=["hi", "hello"], id=2),
        ],
        solver=[generate()],
        scorer=[match(), includes(), ratio()],
        name="arith",
    )


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "raw"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for fmt in ["eval", "json"]:
        logs = inspect_eval(
            task(),
            model="mockllm/model",
            log_dir=str(out),
            log_format=fmt,
            epochs=2,
            display="none",
            tags=["smoke"],
            metadata={"checkpoint": "final"},
        )
        assert logs[0].status == "success", logs[0].error

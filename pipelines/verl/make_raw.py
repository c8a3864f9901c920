"""Writes raw/ of the verl example with verl's own dump code: `python make_raw.py [DIR]` (default:
raw/ beside this file, replaced).

verl needs torch, ray and a model to train, too large for the test environment, so its trainer
cannot run here. `dump_generations` below is `RayPPOTrainer._dump_generations` of verl 0.8
(`verl/trainer/ppo/ray_trainer.py`) as it is, with `self.global_steps` made an argument. The trainer
calls it with the decoded prompts and responses, the ground truths (`reward_model.ground_truth`),
the scores (`token_level_scores.sum(-1)`) and the reward function's extra information:
- after validation, into `trainer.validation_data_dir` (here raw/val/), with `reward` (the scores
  again) among the extra keys;
- after a training step, into `trainer.rollout_data_dir` (here raw/rollout/), with `request_id`.
A NaN and an infinite score are written by Python's json as bare `NaN` and `Infinity`.
"""

import json
import math
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def dump_generations(global_steps, inputs, outputs, gts, scores, reward_extra_infos_dict, dump_path):
    """Dump rollout/validation samples as JSONL."""
    os.makedirs(dump_path, exist_ok=True)
    filename = os.path.join(dump_path, f"{global_steps}.jsonl")

    n = len(inputs)
    base_data = {
        "input": inputs,
        "output": outputs,
        "gts": gts,
        "score": scores,
        "step": [global_steps] * n,
    }

    for k, v in reward_extra_infos_dict.items():
        if len(v) == n:
            base_data[k] = v

    lines = []
    for i in range(n):
        entry = {k: v[i] for k, v in base_data.items()}
        lines.append(json.dumps(entry, ensure_ascii=False))

    with open(filename, "w") as f:
        f.write("\n".join(lines) + "\n")

    print(f"Dumped generations to {filename}")


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "raw"
    if out.exists():
        shutil.rmtree(out)
    prompts = ["What is 2+3? Think step by step.", "What is 7*6? Think step by step.", "Name a prime above 10."]
    for step, outputs, scores in [
        (0, ["2+3 = 5. #### 5", "7*6 = 40. #### 40", "I think 9."], [1.0, 0.0, 0.0]),
        (10, ["#### 5", "#### 42", "11 is prime."], [1.0, 1.0, math.nan]),
    ]:
        extra = {
            "reward": scores,
            "acc": [s == 1.0 for s in scores],
            "pred": [o.split()[-1] for o in outputs],
            # a key with fewer values than samples is left out by verl
            "mean_len": [12.5],
        }
        dump_generations(step, prompts, outputs, ["5", "42", ["11", "13"]], scores, extra, str(out / "val"))
    dump_generations(
        1,
        prompts[:2],
        ["5", "-42"],
        ["5", "42"],
        [1.0, -math.inf],
        {"request_id": ["req-0", "req-1"], "format_penalty": [0.0, math.inf]},
        str(out / "rollout"),
    )


if __name__ == "__main__":
    main()

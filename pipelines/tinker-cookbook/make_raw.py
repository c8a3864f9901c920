"""Writes raw/ of the tinker-cookbook example with tinker-cookbook's own writers (0.6.1).

Run from this folder: `python make_raw.py` (writes raw/, replacing it). No Tinker service is needed:
only the package's logging and storage code runs. `pip install --no-deps tinker-cookbook==0.6.1
chz==0.4.0 tinker==0.38.0` installs what it imports (the package's own dependency tml-renderers>=0.4.1
is not on PyPI, so it does not install with its dependencies, and so is not in the test venv).

Writers used:
- `utils.ml_log.JsonLogger` → config.json, metrics.jsonl (NaN and ±Infinity as Python's json writes them);
- `utils.trace.trace_iteration` + `TrainingRunStore.write_timing_spans` → timing_spans.jsonl;
- `checkpoint_utils.CheckpointRecord.to_dict` + `TrainingRunStore.write_checkpoint` → checkpoints.jsonl
  (unknown keys kept at the top level);
- `TrainingRunStore.write_rollouts` → iteration_NNNNNN/{train,eval_gsm8k}_rollout_summaries.jsonl. The
  records follow `rl.rollout_logging.serialize_rollout_summaries`, which cannot be imported without
  torch; the older flat layout (`train_iteration_NNNNNN_rollout_summaries.jsonl`) is written with the
  same `json.dumps` lines, as its deprecated `write_rollout_summaries_jsonl` did;
- `stores.eval_store.EvalStore` → evals/runs.jsonl, runs/<run_id>/metadata.json, result.json
  (`pass_at_k` with string keys), trajectories.jsonl (its result and trajectory types are mirrored
  below: their module needs torch).
"""

import json
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tinker_cookbook.checkpoint_utils import CheckpointRecord
from tinker_cookbook.stores.eval_store import EvalStore
from tinker_cookbook.utils import trace
from tinker_cookbook.utils.ml_log import JsonLogger

# `eval.benchmarks._types` imports the renderers, which need torch: its BenchmarkResult and
# StoredTrajectory are mirrored here field for field (EvalStore serialises them with `asdict` and
# `to_dict`, the same dict shapes).
@dataclass
class BenchmarkResult:
    name: str
    score: float
    num_examples: int
    num_correct: int
    num_errors: int = 0
    num_truncated: int = 0
    metrics: dict = field(default_factory=dict)
    time_seconds: float = 0.0
    pass_at_k: dict = field(default_factory=dict)


@dataclass
class StoredTurn:
    role: str
    content: str
    token_count: int = 0
    metadata: dict = field(default_factory=dict)


@dataclass
class StoredTrajectory:
    idx: int
    benchmark: str
    example_id: str = ""
    turns: list = field(default_factory=list)
    reward: float = 0.0
    metrics: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)
    error: str | None = None
    time_seconds: float = 0.0

    def to_dict(self):
        d = asdict(self)
        d["turns"] = [asdict(t) for t in self.turns]
        return d


RAW = Path(__file__).resolve().parent / "raw"
URI = "tinker://5b1c0f7e-1111-5222-8333-444455556666:train:0"
URI_V0 = "tinker://0a9e8d7c-2222-5333-8444-555566667777:train:0"


def rollout(split, iteration, group_idx, traj_idx, rewards, tags=("math",), step=None, metrics=None, tag=None):
    tags = [tag if t == "math" and tag else t for t in tags]
    steps = [
        {
            "step_idx": i,
            "ob_len": 40 + 10 * i,
            "ac_len": 12 + i,
            "reward": r,
            "episode_done": i == len(rewards) - 1,
            "metrics": {"format": 1.0} if i == len(rewards) - 1 else {},
            "logs": {"extracted": str(group_idx)} if i == len(rewards) - 1 else {},
        }
        for i, r in enumerate(rewards)
    ]
    return {
        "schema_version": 1,
        "split": split,
        "iteration": iteration,
        "group_idx": group_idx,
        "traj_idx": traj_idx,
        "tags": tags,
        "sampling_client_step": step,
        "total_reward": sum(rewards),
        "final_reward": 0.0,
        "trajectory_metrics": metrics if metrics is not None else {"correct": float(sum(rewards) > 0)},
        "steps": steps,
        "final_ob_len": 40 + 10 * len(rewards),
    }


def training_run(log_dir: Path, flat: bool):
    # the two runs differ in learning rate, Tinker run and tags (same shapes, other bytes)
    lr = 2e-05 if flat else 4e-05
    uri = URI_V0 if flat else URI
    tag = "math-v0" if flat else "math"
    logger = JsonLogger(log_dir)
    logger.log_hparams({"model_name": "Qwen/Qwen3-4B", "learning_rate": lr, "lora_rank": 32, "save_every": 2})
    store = logger.store
    for i_batch in range(3):
        with trace.trace_iteration(step=i_batch) as window:
            with trace.scope_span_sync("sample"):
                time.sleep(0.002)
            with trace.scope_span_sync("train_step"):
                time.sleep(0.001)
        window.save_timing(i_batch, store=store)
        metrics = {"progress/batch": i_batch, "optim/lr": lr, "env/all/reward/total": 0.25 * (i_batch + 1)}
        if i_batch == 1:
            # a supervised metric with no weight is NaN; an optimizer metric can be infinite
            metrics.update({"train_mean_nll": math.nan, "optim/grad_norm": math.inf, "optim/min_logprob": -math.inf})
        logger.log_metrics(metrics, step=i_batch)
        if i_batch == 2:
            store.write_checkpoint(
                CheckpointRecord(
                    name="000002", batch=2, state_path=f"{uri}/weights/000002", sampler_path=f"{uri}/sampler_weights/000002"
                ).to_dict()
            )
            store.write_checkpoint(
                CheckpointRecord(name="000002-rolling", batch=2, state_path=f"{uri}/weights/000002-rolling",
                                 extra={"rolling": True, "elapsed_tokens": 123456, "ttl_seconds": 7200}).to_dict()
            )
    store.write_checkpoint(
        CheckpointRecord(name="final", batch=3, state_path=f"{uri}/weights/final", sampler_path=f"{uri}/sampler_weights/final").to_dict()
    )
    train = {
        0: [rollout("train", 0, 0, 0, [0.0, 1.0], tag=tag), rollout("train", 0, 0, 1, [0.0, 0.0], tag=tag),
            rollout("train", 0, 1, 0, [1.0], tags=("math", "hard"), metrics={"correct": math.nan}, tag=tag)],
        1: [rollout("train", 1, 0, 0, [0.5, 0.5, -math.inf], step=1, tag=tag), rollout("train", 1, 0, 1, [math.inf], step=1, tag=tag)],
    }
    evals = {0: [rollout("eval/gsm8k", 0, 0, 0, [1.0], tag=tag), rollout("eval/gsm8k", 0, 1, 0, [0.0], tag=tag)]}
    for iteration, records in train.items():
        if flat:
            path = log_dir / f"train_iteration_{iteration:06d}_rollout_summaries.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
        else:
            store.write_rollouts(iteration, records, base_name="train")
    for iteration, records in evals.items():
        if flat:
            path = log_dir / f"eval_gsm8k_iteration_{iteration:06d}_rollout_summaries.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
        else:
            store.write_rollouts(iteration, records, base_name="eval_gsm8k")


def eval_store(prefix: Path):
    store = EvalStore(str(prefix))
    run_id = store.create_run(
        model_name="Qwen/Qwen3-4B",
        benchmarks=["gsm8k", "math500"],
        checkpoint_path=f"{URI}/sampler_weights/final",
        checkpoint_name="final",
        config={"temperature": 0.0, "num_samples": 2},
        run_id="final_20261201_120000_a1b2c3",
    )
    for idx, (reward, error) in enumerate([(1.0, None), (0.0, None), (0.0, "timeout (300s)")]):
        turns = [] if error else [
            StoredTurn(role="user", content=f"question {idx}", token_count=20),
            StoredTurn(role="assistant", content=f"answer {idx}", token_count=7 + idx),
        ]
        store.write_trajectory(run_id, "gsm8k", StoredTrajectory(
            idx=idx, benchmark="gsm8k", example_id=f"gsm8k_{idx:04x}", turns=turns, reward=reward,
            metrics={"correct": reward}, logs={"expected": "4"}, error=error, time_seconds=1.5 * (idx + 1)))
    store.write_result(run_id, BenchmarkResult(
        name="gsm8k", score=1 / 3, num_examples=3, num_correct=1, num_errors=1, num_truncated=0,
        metrics={"total_turns": 4, "mean_nll": math.nan}, time_seconds=4.5, pass_at_k={1: 1 / 3, 2: 0.5}))
    store.write_result(run_id, BenchmarkResult(
        name="math500", score=0.0, num_examples=0, num_correct=0, num_errors=0, num_truncated=0,
        metrics={}, time_seconds=0.0))
    store.finalize_run(run_id)


if __name__ == "__main__":
    shutil.rmtree(RAW, ignore_errors=True)
    training_run(RAW / "runs" / "grpo-math", flat=False)
    training_run(RAW / "runs" / "grpo-math-v0", flat=True)
    eval_store(RAW / "evals")
    # code.diff holds the writing machine's git state: not part of the example
    for p in RAW.rglob("code.diff"):
        p.unlink()

"""Writes the W&B run directories under raw/wandb/ of the tinker-wandb pipeline.

The runs are written by the real `wandb` client (the version pinned in
tests/python/requirements.txt) in offline mode: no account, no network. Each one backfills a
Tinker training run from the tinker-rl-lab result files copied under raw/experiments/, the way
tinker-rl-lab's `upload_tinker_to_wandb.py` backfilled W&B from its Tinker logs:

- config `{model, seed, lora_rank, learning_rate, tinker_run_id, algorithm: "grpo",
  environment: <the task, "gsm8k" or "tool_use">, source: "tinker-api"}`;
- history `train/step`, `train/loss` (runs with a step log), `train/reward_mean` and, for GSM8K,
  `train/accuracy` at `step=<the 1-based step of the result file>`; accuracy is in percent
  (100 x the GSM8K reward, which is the fraction of correct answers);
- summary `final_reward`, `mean_last10_reward`, `total_steps`, `tinker_run_id` and, for GSM8K,
  `final_accuracy` and `peak_accuracy` (percent).

The per-step values come from the run's own result file under raw/experiments/tinker-runs/results/:
its `step_log` when it has one (loss and reward), else its `reward_trace` (reward only).

Which runs (13), and what links them to their Tinker run:
- the four `w1_llama33-70b-inst_s*` runs: master_results.json records their W&B URLs with real
  8-character run ids (`3zwb7akd`, `rr9b9tn0`, `0orv0eyr`, `3eryah20`); those ids, that entity and
  that project (`arvindcr4-pes-university/tinker-rl-lab-world-class`) are used here;
- `cross_tool_llama-8b-inst` (a tool-use run), `frontier_gsm8k_deepseek-v3.1` and
  `scale_gsm8k_qwen3-8b` (their recorded URLs hold the Tinker UUID, not a W&B id), and
  `scale_gsm8k_llama-8b-inst` (no URL recorded): config `tinker_run_id` as the result file
  writes it;
- the four wave-6 rank-sweep runs `w6_rank{4,8,16,64}_t0.8_b2`: config `tinker_run_id` as
  master_results.json spells the run in its checkpoint URI, doubled `:train:0:train:0` suffix
  included (their recorded URLs hold the Tinker run id, not a W&B id);
- `frontier_gsm8k_qwen3-235b`, an interrupted run whose result file has no Tinker id
  (`run_id: "partial-from-console"`): a W&B run that links to no Tinker run.
Runs other than the four with recorded ids go to project `tinker-rl-scaling`, as in
upload_tinker_to_wandb.py, with an id derived from the Tinker run id (or the experiment name):
the first 8 base-36 digits of its SHA-256, so that a second run of this script gives the same ids.

What the client does not let us fix: the folder names (`offline-run-<local time>-<id>`), the
times in the logs (`_timestamp`, `_runtime`, the start time) and the client's record bookkeeping;
a new run of this script therefore gives other bytes with the same logged values. Only the
`run-<id>.wandb` transaction logs are kept (in offline mode the client writes config, summary and
history nowhere else); its debug logs, `files/requirements.txt` and the `latest-run` link are
removed. System metrics, machine metadata, console capture, git and code saving are switched off.

Usage (from anywhere; replaces raw/wandb/):

    WANDB_MODE=offline $HOME/.cache/runpack/venv/bin/python pipelines/tinker-wandb/make_wandb_runs.py
"""
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RAW = os.path.join(HERE, "raw")
RESULTS = os.path.join(RAW, "experiments", "tinker-runs", "results")
OUT = os.path.join(RAW, "wandb")

ENTITY = "arvindcr4-pes-university"
RECORDED_PROJECT = "tinker-rl-lab-world-class"
BACKFILL_PROJECT = "tinker-rl-scaling"

# Offline and quiet; the client's caches and settings go to a temporary folder, not $HOME.
scratch = tempfile.mkdtemp(prefix="tinker-wandb-")
os.environ.update(
    WANDB_MODE="offline",
    WANDB_DIR=RAW,
    WANDB_SILENT="true",
    WANDB_DISABLE_GIT="true",
    WANDB_DISABLE_CODE="true",
    WANDB_CACHE_DIR=os.path.join(scratch, "cache"),
    WANDB_CONFIG_DIR=os.path.join(scratch, "config"),
    WANDB_DATA_DIR=os.path.join(scratch, "data"),
)
os.environ.pop("WANDB_API_KEY", None)
import wandb  # noqa: E402


def load(name):
    with open(os.path.join(RESULTS, name)) as f:
        return json.load(f)


def derived_id(key):
    """8 base-36 digits of sha256(key): W&B's id alphabet and length, stable across runs."""
    n = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    digits = ""
    for _ in range(8):
        n, r = divmod(n, 36)
        digits += "0123456789abcdefghijklmnopqrstuvwxyz"[r]
    return digits


def steps_of(rec):
    """[(1-based step, loss or None, reward)] from the step log, else the reward trace."""
    if rec.get("step_log"):
        return [(s["step"], s.get("loss"), s["reward"]) for s in rec["step_log"]]
    return [(i + 1, None, r) for i, r in enumerate(rec["reward_trace"])]


with open(os.path.join(RAW, "experiments", "master_results.json")) as f:
    master = json.load(f)["experiments"]


def master_row(key):
    return next(r for r in master if (r.get("experiment_id") or r.get("experiment")) == key)


def recorded_url_id(key):
    url = master_row(key).get("wandb_run_url") or ""
    m = re.fullmatch(r"https://wandb\.ai/([^/]+)/([^/]+)/runs/([a-z0-9]{8})", url)
    assert m and m.group(1) == ENTITY and m.group(2) == RECORDED_PROJECT, url
    return m.group(3)


def checkpoint_run_id(key):
    """The Tinker run id as master_results.json writes it in the run's checkpoint URI."""
    uri = master_row(key)["hf_checkpoint_url"]
    return uri[len("tinker://"):].split("/")[0]


runs = []  # (wandb id, project, name, group, config, steps)


def add(rec, *, key, short, group, wandb_id=None, project=BACKFILL_PROJECT, tinker_run_id=None, rank=None):
    tinker_run_id = tinker_run_id or rec["run_id"]
    task = rec.get("task", "gsm8k")
    config = {
        "model": rec["model"],
        "seed": rec["seed"],
        "lora_rank": rec.get("rank", rank),
        "learning_rate": rec["lr"],
        "tinker_run_id": tinker_run_id,
        "algorithm": "grpo",
        "environment": task,
        "source": "tinker-api",
    }
    name = f"{task.replace('_', '-')}-{short}-seed{rec['seed']:03d}-tinker"
    runs.append((wandb_id or derived_id(tinker_run_id if ":train:" in tinker_run_id else key), project, name, group,
                 config, steps_of(rec)))


for rec in load("llama33_70b_seeds.json")["results"]:
    tag = rec["tag"]
    add(rec, key=tag, short="llama33-70b-inst", group="gsm8k-grpo-llama33-70b-inst",
        wandb_id=recorded_url_id(tag), project=RECORDED_PROJECT, rank=master_row(tag).get("rank"))
for exp in ["cross_tool_llama-8b-inst", "frontier_gsm8k_deepseek-v3.1", "scale_gsm8k_qwen3-8b",
            "scale_gsm8k_llama-8b-inst", "frontier_gsm8k_qwen3-235b"]:
    rec = load(f"{exp}.json")
    add(rec, key=exp, short=rec["model_short"], group=f"{rec['task'].replace('_', '-')}-grpo-{rec['model_short']}")
wave6 = {r["tag"]: r for r in load("wave6_ablations.json")["runs"]}
for rank in [4, 8, 16, 64]:
    tag = f"w6_rank{rank}_t0.8_b2"
    rec = wave6[tag]
    add(rec, key=tag, short=f"qwen3-8b-rank{rank}", group="gsm8k-ablations",
        tinker_run_id=checkpoint_run_id(f"wave6_{tag}"))

shutil.rmtree(OUT, ignore_errors=True)
settings = wandb.Settings(x_disable_stats=True, x_disable_meta=True, console="off", save_code=False,
                          disable_git=True)
for wandb_id, project, name, group, config, steps in runs:
    run = wandb.init(entity=ENTITY, project=project, id=wandb_id, name=name, group=group, job_type="train",
                     config=config, settings=settings)
    gsm8k = config["environment"] == "gsm8k"
    rewards = []
    for step, loss, reward in steps:
        row = {"train/step": step}
        if loss is not None:
            row["train/loss"] = loss
        row["train/reward_mean"] = reward
        if gsm8k:
            row["train/accuracy"] = reward * 100
        run.log(row, step=step)
        rewards.append(reward)
    summary = {
        "final_reward": rewards[-1],
        "mean_last10_reward": sum(rewards[-10:]) / len(rewards[-10:]),
        "total_steps": len(steps),
        "tinker_run_id": config["tinker_run_id"],
    }
    if gsm8k:
        summary["final_accuracy"] = rewards[-1] * 100
        summary["peak_accuracy"] = max(rewards) * 100
    run.summary.update(summary)
    run.finish()

# keep only the transaction logs
for entry in os.listdir(OUT):
    path = os.path.join(OUT, entry)
    if os.path.islink(path) or not os.path.isdir(path):
        os.remove(path)
        continue
    for member in os.listdir(path):
        p = os.path.join(path, member)
        if not (member.startswith("run-") and member.endswith(".wandb")):
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.remove(p)
shutil.rmtree(scratch, ignore_errors=True)
print(f"{len(runs)} runs written to {os.path.relpath(OUT)}", file=sys.stderr)

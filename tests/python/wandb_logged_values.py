"""Writes one W&B offline run with the real `wandb` client, for runpack's tests of logged values.

Usage: python wandb_logged_values.py <out_dir>
Sets WANDB_MODE=offline and WANDB_DIR=<out_dir> (no network). Run `values01` logs:
- step 0: `x` None, `loss` 0.5, `flag` True, `word` "true", `n` 5, `s` "5";
- step 1: a key `a.b` and a nested `a` → `b` (which name one metric once joined with dots), `loss` 0.4.
"""
import os
import sys

out = os.path.abspath(sys.argv[1])
os.makedirs(out, exist_ok=True)
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_DIR"] = out
os.environ["WANDB_SILENT"] = "true"
os.environ["WANDB_DISABLE_GIT"] = "true"
os.environ["WANDB_DISABLE_CODE"] = "true"
import wandb  # noqa: E402

run = wandb.init(project="rp-test", entity="rp-entity", id="values01")
run.log({"x": None, "loss": 0.5, "flag": True, "word": "true", "n": 5, "s": "5"})
run.log({"a.b": 1, "a": {"b": 2}, "loss": 0.4})
run.finish()

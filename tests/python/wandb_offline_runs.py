"""Writes W&B offline run directories with the real `wandb` client, for runpack's tests.

Usage: python wandb_offline_runs.py <out_dir>
Sets WANDB_MODE=offline and WANDB_DIR=<out_dir> (no network). Writes:
- run `longrun1`: 10,000 logged steps (`loss`, `acc`; `loss` is NaN every 1,000th step, `acc`
  +Infinity at step 7), a nested config, a histogram and a string in the summary;
- run `resume01`, twice: a first session logs steps 0-9, a second one (resume="allow", same id)
  logs steps 5-14 again with other values.
and <out_dir>/expected.json: every logged value per (run id, step, metric), the last write winning,
with non-finite floats as the strings "NaN", "Infinity", "-Infinity"; the configs; and each log's
environment record, decoded by the client's own protobuf classes and written by protobuf's
JSON mapping (what wandb-metadata.json holds), by the log's path under <out_dir>.
"""
import glob
import json
import math
import os
import sys
import time

out = os.path.abspath(sys.argv[1])
os.makedirs(out, exist_ok=True)
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_DIR"] = out
os.environ["WANDB_SILENT"] = "true"
os.environ["WANDB_DISABLE_GIT"] = "true"
os.environ["WANDB_DISABLE_CODE"] = "true"
import wandb  # noqa: E402

expected = {}


def put(run, step, metric, v):
    if isinstance(v, float) and not math.isfinite(v):
        v = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    expected.setdefault(run, {})[f"{step}/{metric}"] = v


config = {"lr": 0.001, "model": {"layers": 4, "act": "gelu", "dims": [64, 128]}, "seed": 42, "use_kl": True}
run = wandb.init(project="rp-test", entity="rp-entity", id="longrun1", name="long-run", group="g1",
                 job_type="train", tags=["a", "b"], config=config)
for i in range(10000):
    loss = float("nan") if i % 1000 == 999 else 1.0 / (i + 1) + i * 1e-7
    acc = float("inf") if i == 7 else (i % 97) / 97.0
    run.log({"loss": loss, "acc": acc}, step=i)
    put("longrun1", i, "loss", loss)
    put("longrun1", i, "acc", acc)
run.summary["weights"] = wandb.Histogram(np_histogram=([1, 4, 4, 1], [-2.0, -1.0, 0.0, 1.0, 2.0]))
run.summary["note"] = "done"
run.finish()

run = wandb.init(project="rp-test", entity="rp-entity", id="resume01", name="resumed", config={"lr": 0.01})
for i in range(10):
    run.log({"reward": i * 0.5}, step=i)
    put("resume01", i, "reward", i * 0.5)
run.finish()
time.sleep(1.2)  # run directories are named by the second
run = wandb.init(project="rp-test", entity="rp-entity", id="resume01", resume="allow")
for i in range(5, 15):
    run.log({"reward": i * 0.25 + 100}, step=i)
    put("resume01", i, "reward", i * 0.25 + 100)
run.finish()

from google.protobuf import json_format  # noqa: E402
from wandb.proto import wandb_internal_pb2  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wandb_log import records  # noqa: E402


environments = {}
for log in sorted(glob.glob(os.path.join(out, "wandb", "offline-run-*", "*.wandb"))):
    merged = None
    for data in records(log):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        if record.WhichOneof("record_type") == "environment":
            if merged is None:
                merged = wandb_internal_pb2.EnvironmentRecord()
            merged.MergeFrom(record.environment)
    if merged is not None:
        merged.ClearField("writer_id")
        merged.ClearField("_info")
        environments[os.path.relpath(log, out)] = json_format.MessageToDict(merged)

with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump({"values": expected, "config": config, "environments": environments}, f, allow_nan=False)

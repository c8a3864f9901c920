"""Writes a trackio project with the real `trackio` client, offline: `python make_raw.py [DIR]`
(default: raw/ beside this file, replaced).

DIR/demo.db: two runs logged to SQLite (`trackio.init`, `trackio.log` with NaN and ±Infinity,
`trackio.finish`); a third run, `fragments`, logged with TRACKIO_STORAGE_MODE=jsonl to
DIR/inbox/<writer>/<n>.jsonl and then imported into demo.db by trackio's own importer
(`trackio.fragments.import_inbox_dir`), whose fragments are put back afterwards, as a crash
between the import and their deletion leaves them: every record of that run is then in both places,
with the same log_id. Automatic system metrics are off (their values depend on the machine); one
record is logged with `trackio.log_system`.
"""

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def log_sqlite():
    import trackio

    trackio.init(project="demo", name="baseline", config={"lr": 0.001, "seed": 1}, auto_log_gpu=False)
    for step, (loss, acc) in enumerate([(2.0, 0.25), (math.nan, 0.5), (math.inf, -math.inf)]):
        trackio.log({"train/loss": loss, "train/acc": acc})
    trackio.log({"eval/score": 0.75, "eval/note": "held-out"}, step=10)
    trackio.log_system({"gpu/0/utilization": 55.0, "gpu/0/power": math.nan})
    trackio.finish()
    trackio.init(project="demo", name="tuned", config={"lr": 0.0003, "seed": 2, "tags": ["b"]}, auto_log_gpu=False)
    trackio.log({"train/loss": 1.5})
    trackio.log({"train/loss": 1.25})
    trackio.finish()


def log_fragments():
    import trackio

    trackio.init(project="demo", name="fragments", config={"lr": 0.01}, auto_log_gpu=False)
    trackio.log({"train/loss": -math.inf})
    trackio.log({"train/loss": 0.5, "train/acc": math.nan})
    trackio.finish()


def import_fragments(out: Path):
    from trackio import fragments

    kept = out.parent / (out.name + ".inbox-copy")
    shutil.copytree(out / "inbox", kept)
    fragments.import_inbox_dir(out / "inbox")
    shutil.rmtree(out / "inbox", ignore_errors=True)
    shutil.move(kept, out / "inbox")


def child(step: str, out: Path, mode: str):
    env = dict(os.environ, TRACKIO_DIR=str(out), TRACKIO_STORAGE_MODE=mode, HF_HUB_OFFLINE="1")
    env.pop("HF_TOKEN", None)
    subprocess.run([sys.executable, __file__, "--step", step], env=env, check=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--step":
        {"sqlite": log_sqlite, "fragments": log_fragments, "import": lambda: import_fragments(Path(os.environ["TRACKIO_DIR"]))}[
            sys.argv[2]
        ]()
        sys.exit(0)
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "raw"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    child("sqlite", out, "sqlite")
    child("fragments", out, "jsonl")
    child("import", out, "sqlite")
    for p in out.glob("*.lock"):
        p.unlink()

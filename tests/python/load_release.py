"""Loads a runpack release with the `datasets` library (offline) and pyarrow.

Usage: load_release.py <release-dir>
Prints one JSON object: {config: {"datasets_rows": n, "pyarrow_rows": n, "columns": [...], "splits": {split: n}}}.
Fails (non-zero exit) if any config cannot be loaded or its row count differs from the card.
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import pyarrow.parquet as pq  # noqa: E402
from datasets import load_dataset  # noqa: E402
from huggingface_hub import DatasetCard  # noqa: E402

release = sys.argv[1]
card = DatasetCard.load(os.path.join(release, "README.md"))
infos = {i["config_name"]: i for i in card.data["dataset_info"]}
out = {}
import glob
for cfg in card.data["configs"]:
    name = cfg["config_name"]
    dsd = load_dataset(release, name)
    expected = {s["name"]: s["num_examples"] for s in infos[name]["splits"]}
    got = {split: ds.num_rows for split, ds in dsd.items()}
    if got != expected:
        sys.exit(f"{name}: datasets loaded {got}, the card says {expected}")
    rows = 0
    for entry in cfg["data_files"]:
        paths = entry["path"] if isinstance(entry["path"], list) else [entry["path"]]
        for p in paths:
            rows += sum(pq.ParquetFile(f).metadata.num_rows for f in glob.glob(os.path.join(release, p)))
    first = next(iter(dsd.values()))
    out[name] = {"datasets_rows": sum(got.values()), "pyarrow_rows": rows, "columns": first.column_names, "splits": got}
print(json.dumps(out, sort_keys=True))
# pyarrow's thread pools, left running by `datasets`, now and then abort the interpreter's
# teardown after all output is written (apache/arrow#45214): leave without it.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)

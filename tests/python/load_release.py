"""Loads a runpack release with the `datasets` library (offline) and pyarrow.

Usage: load_release.py <release-dir>
Prints one JSON object: {config: {"datasets_rows": n, "pyarrow_rows": n, "columns": [...]}}.
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
for cfg in card.data["configs"]:
    name = cfg["config_name"]
    ds = load_dataset(release, name, split="train")
    expected = infos[name]["splits"][0]["num_examples"]
    if ds.num_rows != expected:
        sys.exit(f"{name}: datasets loaded {ds.num_rows} rows, the card says {expected}")
    files = [cfg["data_files"][0]["path"]] if "*" not in cfg["data_files"][0]["path"] else None
    import glob
    paths = glob.glob(os.path.join(release, cfg["data_files"][0]["path"]))
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    out[name] = {"datasets_rows": ds.num_rows, "pyarrow_rows": rows, "columns": ds.column_names}
print(json.dumps(out, sort_keys=True))

"""Writes raw/ of the trackio-export example with the real `trackio` client, offline:
`python make_raw.py [DIR]` (default: raw/ beside this file, replaced).

The project of the trackio example (../trackio/make_raw.py: runs logged to SQLite with NaN and
±Infinity, a run logged as JSONL fragments and imported) is logged into a scratch folder, then
exported as trackio exports a project for a static Space or a dataset
(`trackio.sqlite_storage.SQLiteStorage.export_for_static_space`): DIR/metrics.parquet,
DIR/aux/system_metrics.parquet, DIR/aux/configs.parquet (the JSON columns flattened into one
column per key), DIR/runs.json and DIR/settings.json. DIR/demo.db is the database it was
exported from.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "raw"
    if out.exists():
        shutil.rmtree(out)
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "raw"
        subprocess.run([sys.executable, str(HERE.parent / "trackio" / "make_raw.py"), str(project)], check=True)
        from trackio.sqlite_storage import SQLiteStorage

        SQLiteStorage.export_for_static_space("demo", out, db_path_override=project / "demo.db")
        shutil.copy(project / "demo.db", out / "demo.db")


if __name__ == "__main__":
    main()

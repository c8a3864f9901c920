"""Reads every JSON Lines copy of a runpack release with polars, DuckDB and pandas.

Usage: read_copies.py <release-dir>
For each table whose manifest `formats` list "jsonl", each copy must read without error:
- polars.read_ndjson with the table's types (from manifest `arrow_schema`);
- DuckDB's read_json_auto, whose detected types must be the declared ones for scalar columns,
  and where avg() of every float column runs;
- pandas.read_json(lines=True) with the text columns read as text, float columns float64.
Each copy's values must be its Parquet file's, a NaN or infinity being null in the copy, and the
nulls standing for non-finite values must add up to the manifest's `nonfinite_values`.
Prints one JSON object {table: {"rows": n, "nulls_for_nonfinite": n, "avg": {...}}}; exits 1
with the reason otherwise.
"""
import json
import math
import os
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow.parquet as pq

release = sys.argv[1]
manifest = json.load(open(os.path.join(release, "manifest.json")))

POLARS = {"Int64": pl.Int64, "UInt64": pl.UInt64, "Float64": pl.Float64, "Utf8": pl.String, "Boolean": pl.Boolean}
DUCKDB = {"Int64": "BIGINT", "UInt64": "UBIGINT", "Float64": "DOUBLE", "Utf8": "VARCHAR", "Boolean": "BOOLEAN"}


def polars_type(arrow):
    if arrow in POLARS:
        return POLARS[arrow]
    if arrow.startswith("List<") and arrow[5:-1] in POLARS:
        return pl.List(POLARS[arrow[5:-1]])
    return None


def nonfinite(v):
    return isinstance(v, float) and not math.isfinite(v)


def count_nonfinite(v):
    if isinstance(v, list):
        return sum(count_nonfinite(x) for x in v)
    if isinstance(v, dict):
        return sum(count_nonfinite(x) for x in v.values())
    return 1 if nonfinite(v) else 0


def as_copy(v):
    """A Parquet value as its JSON Lines copy holds it: NaN and infinities as None."""
    if isinstance(v, list):
        return [as_copy(x) for x in v]
    if isinstance(v, dict):
        return {k: as_copy(x) for k, x in v.items()}
    return None if nonfinite(v) else v


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


out = {}
for t in manifest["tables"]:
    if "jsonl" not in t.get("formats", ["parquet", "jsonl"]):
        continue
    types = {f["name"]: f["type"] for f in t["arrow_schema"]}
    copies = [f for f in manifest["files"] if f["kind"] == "jsonl" and f.get("table") == t["name"]]
    rows = 0
    nulls_for_nonfinite = 0
    counted = {}
    averages = {}
    for f in copies:
        path = os.path.join(release, f["path"])
        parquet = os.path.join(release, "data", f["path"][len("jsonl/"):-len(".jsonl")] + ".parquet")
        want = pq.read_table(parquet).to_pylist()
        if f["rows"] == 0:
            continue
        # polars, with the declared types
        schema = {c: polars_type(a) for c, a in types.items()}
        if all(v is not None for v in schema.values()):
            df = pl.read_ndjson(path, schema=schema)
        else:
            df = pl.read_ndjson(path, schema_overrides={c: v for c, v in schema.items() if v is not None})
        for c, a in types.items():
            if schema[c] is not None and df.schema[c] != schema[c]:
                fail(f"{path}: polars reads {c} as {df.schema[c]}, declared {a}")
        got = df.to_dicts()
        if len(got) != len(want):
            fail(f"{path}: polars reads {len(got)} rows, Parquet has {len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            for c, a in types.items():
                if schema[c] is None:
                    continue
                if g[c] != as_copy(w[c]):
                    fail(f"{path}: row {i + 1} column {c}: polars reads {g[c]!r}, Parquet holds {w[c]!r}")
                n = count_nonfinite(w[c])
                if n:
                    counted[c] = counted.get(c, 0) + n
                    nulls_for_nonfinite += n
        # DuckDB, types detected
        con = duckdb.connect()
        described = {r[0]: r[1] for r in con.sql(f"DESCRIBE SELECT * FROM read_json_auto('{path}')").fetchall()}
        for c, a in types.items():
            # a column of nulls alone says no type
            if all(w[c] is None for w in want):
                continue
            if a in ("Float64", "Int64", "Boolean") and described.get(c) != DUCKDB[a]:
                fail(f"{path}: DuckDB's read_json_auto types {c} {described.get(c)}, declared {a}")
            if a == "Float64":
                avg = con.sql(f'SELECT avg("{c}") FROM read_json_auto(\'{path}\')').fetchall()[0][0]
                finite = [w[c] for w in want if w[c] is not None and math.isfinite(w[c])]
                expected = sum(finite) / len(finite) if finite else None
                if (avg is None) != (expected is None) or (avg is not None and abs(avg - expected) > 1e-9 * max(1, abs(expected))):
                    fail(f"{path}: DuckDB's avg({c}) is {avg}, the finite Parquet values average {expected}")
                averages[c] = avg
        # pandas, text columns as text
        text = {c: "str" for c, a in types.items() if a == "Utf8"}
        frame = pd.read_json(path, lines=True, dtype=text)
        if len(frame) != len(want):
            fail(f"{path}: pandas reads {len(frame)} rows, Parquet has {len(want)}")
        for c, a in types.items():
            if a == "Float64" and str(frame[c].dtype) != "float64":
                fail(f"{path}: pandas reads {c} as {frame[c].dtype}, declared Float64")
            if a == "Utf8":
                for i, w in enumerate(want):
                    v = frame[c].iloc[i]
                    v = None if pd.isna(v) else v
                    if v != w[c]:
                        fail(f"{path}: row {i + 1}: pandas reads {c} as {v!r}, Parquet holds {w[c]!r}")
        rows += len(want)
    listed = {c: sum(n.values()) for c, n in t.get("nonfinite_values", {}).items()}
    if {c: n for c, n in counted.items() if n} != listed:
        fail(f"table {t['name']}: the copies hold null for {counted} non-finite values, the manifest counts {listed}")
    out[t["name"]] = {"rows": rows, "nulls_for_nonfinite": nulls_for_nonfinite, "avg": averages}
print(json.dumps(out, sort_keys=True))

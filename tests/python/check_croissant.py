"""Validates a runpack release's croissant.json with `mlcroissant` and loads its record sets.

Usage: check_croissant.py <release-dir> [record-set ...]
The document must load without validation errors; each named record set (every one when none
is named) is read to its end, and its records counted. Each FileObject's sha256 must be its
file's. Prints one JSON object {"records": {record_set: n}, "files": n, "warnings": [...]}; exits 1
with the reason otherwise.
"""
import hashlib
import json
import os
import sys

import mlcroissant as mlc

release = sys.argv[1]
path = os.path.join(release, "croissant.json")
dataset = mlc.Dataset(jsonld=path)
issues = dataset.metadata.ctx.issues
if issues.errors:
    print("\n".join(sorted(issues.errors)), file=sys.stderr)
    sys.exit(1)
doc = json.load(open(path))
files = 0
for d in doc["distribution"]:
    if d["@type"] != "cr:FileObject":
        continue
    digest = hashlib.sha256(open(os.path.join(release, d["contentUrl"]), "rb").read()).hexdigest()
    if digest != d["sha256"]:
        print(f"{d['contentUrl']}: sha256 {digest}, croissant.json says {d['sha256']}", file=sys.stderr)
        sys.exit(1)
    files += 1
names = sys.argv[2:] or [r["@id"] for r in doc["recordSet"]]
records = {name: sum(1 for _ in dataset.records(record_set=name)) for name in names}
print(json.dumps({"records": records, "files": files, "warnings": sorted(issues.warnings)}, sort_keys=True))

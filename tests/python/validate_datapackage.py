"""Validates a runpack release's datapackage.json with the `frictionless` library.

Usage: validate_datapackage.py <release-dir>
Checks every JSON Lines row of every table against its Table Schema (types, constraints,
primaryKey, foreignKeys). Prints one JSON object {resource: rows}; on failure prints the first
errors of each invalid resource and exits 1.
"""
import json
import os
import sys

from frictionless import Package, system  # noqa: E402

release = sys.argv[1]
with system.use_context(trusted=True):
    report = Package(os.path.join(release, "datapackage.json")).validate()
rows = {task.name: task.stats.get("rows") or 0 for task in report.tasks}
if not report.valid:
    for error in report.errors:
        print(f"package: {error.message}", file=sys.stderr)
    for task in report.tasks:
        for error in task.errors[:5]:
            print(f"{task.name}: {error.message}", file=sys.stderr)
    sys.exit(1)
print(json.dumps(rows, sort_keys=True))

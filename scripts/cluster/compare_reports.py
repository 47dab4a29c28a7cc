#!/usr/bin/env python3
"""Whether two results folders report the same table, seconds aside (the cluster tests).

    compare_reports.py RECBENCH REFERENCE_FOLDER SHARDS_FOLDER LABEL

Prints one line and exits 1 when the tables differ.
"""
import csv
import io
import subprocess
import sys


def table(recbench, folder):
    out = subprocess.run([recbench, "report", folder, "--format", "csv"], capture_output=True, text=True, check=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    keep = [i for i, name in enumerate(rows[0]) if not name.endswith("_seconds")]
    return sorted(tuple(row[i] for i in keep) for row in rows)


recbench, reference, shards, label = sys.argv[1:5]
same = table(recbench, reference) == table(recbench, shards)
print(f"{label}: report {'identical to' if same else 'DIFFERS from'} the single-process sweep's")
sys.exit(0 if same else 1)

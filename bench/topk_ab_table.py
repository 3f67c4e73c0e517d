#!/usr/bin/env python3
"""Markdown table of an A/B of two builds' `featmatch-bench logos` lines, each line tagged with
"build" ("old" or "new") and "rep": per library size and k, the range of each build's medians and
the change of the median of the new build's against the old's.
Usage: topk_ab_table.py ab.jsonl > table.md"""
import collections
import json
import statistics
import sys

rows = collections.defaultdict(lambda: collections.defaultdict(list))
with open(sys.argv[1]) as f:
    for line in f:
        d = json.loads(line)
        rows[(d["library"], d["k"])][d["build"]].append(d["median_ms"])


def span(xs):
    return f"{min(xs):.1f}-{max(xs):.1f}" if len(xs) > 1 else f"{xs[0]:.1f}"


print("| library rows | k | before (ms) | pool (ms) | change |")
print("|---:|---:|---:|---:|---:|")
for (lib, k), v in sorted(rows.items()):
    old, new = v.get("old", []), v.get("new", [])
    if not old or not new:
        continue
    mo, mn = statistics.median(old), statistics.median(new)
    print(f"| {lib} | {k} | {span(old)} | {span(new)} | {100 * (mn - mo) / mo:+.0f} % |")

#!/usr/bin/env python3
"""Markdown table of `featmatch-bench select --json` output beside the torch peer's JSON lines.
Usage: select_table.py select.jsonl torch.jsonl > select.md"""
import json
import sys
from collections import defaultdict


def main():
    ours = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    peer = [json.loads(l) for l in open(sys.argv[2]) if l.strip()] if len(sys.argv) > 2 else []
    t = defaultdict(dict)
    read = {}
    for r in ours:
        if r["algo"] == "read":
            read[(r["rows"], r["N"])] = r
            continue
        t[(r["rows"], r["N"], r["k"])][r["algo"]] = r
    torch = {(r["rows"], r["N"], r["k"]): r for r in peer if r.get("algo") == "torch.topk"}
    algos = ["tbis", "merge-queue", "quick-multiselect", "sort", "auto"]
    dev = ours[0]["device"] if ours else "?"
    print(f"Device: {dev}. Cells: median ms (fraction of the read bandwidth measured in the same "
          "run). torch.topk from the same device call.\n")
    print("| rows | N | k | read ms | " + " | ".join(algos) + " | torch.topk ms |")
    print("|---|---|---|---|" + "---|" * (len(algos) + 1))
    for key in sorted(t):
        cells = []
        for a in algos:
            r = t[key].get(a)
            cells.append(f"{r['median_ms']:.3f} ({r['frac_read_bw']:.2f})" if r else "-")
        tr = torch.get(key)
        rd = read[(key[0], key[1])]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {rd['median_ms']:.3f} | " + " | ".join(cells) +
              f" | {tr['median_ms']:.3f} |" if tr else " | - |")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Per-instruction profile of one selection kernel (device call, after select_device_run.sh built
# /tmp/b): ncu's SASS source page with executed instructions per SASS line, summarised by opcode
# and by the hottest lines. Usage: ALGO=... KERNEL=... bench/select_sass_profile.sh OUTDIR k
set -u
OUT=${1:?outdir}; K=${2:-32}
ALGO=${ALGO:-quick-multiselect}
KERNEL=${KERNEL:-QuickMultiSelectKernel}
timeout 200 ncu --clock-control none -k regex:$KERNEL --launch-skip 3 --launch-count 1 \
  --section SourceCounters --page source --print-source sass --csv \
  /tmp/b/bench/featmatch-bench select --rows 8192 --cols 65536 --k $K --algos $ALGO --runs 1 \
  > /tmp/sass_$K.csv 2>&1
python3 - /tmp/sass_$K.csv <<'PY' | tee $OUT/sass_${ALGO}_k$K.txt
import csv, sys, collections
rows = []
with open(sys.argv[1]) as f:
    lines = [l for l in f if l.startswith('"')]
start = next(i for i, l in enumerate(lines) if l.startswith('"Address"'))
r = csv.reader(lines[start:])
hdr = next(r)
def col(name):
    for i, h in enumerate(hdr):
        if h == name: return i
    return None
ia = col("Address"); isrc = col("Source")
iex = next((i for i, h in enumerate(hdr) if h.startswith("Instructions Executed")), None)
ist = next((i for i, h in enumerate(hdr) if h.startswith("Warp Stall Sampling (All")), None)
if iex is None:
    print(hdr); sys.exit()
for row in r:
    try: rows.append((row[ia], row[isrc], int(row[iex].replace(',', '') or 0), int(row[ist].replace(',', '') or 0)))
    except Exception: pass
tot = sum(x[2] for x in rows); stt = sum(x[3] for x in rows) or 1
print("total warp instructions", tot, "lines", len(rows))
ops = collections.Counter()
for a, s, n, st in rows: ops[s.split()[0] if not s.startswith('@') else s.split()[1]] += n
for op, n in ops.most_common(25): print(f"{op:12s} {n:12d} {n/tot:6.3f}")
print("-- hottest lines")
for i, (a, s, n, st) in enumerate(rows):
    if n > tot * 0.004 or st > stt * 0.01: print(f"{i:5d} {n:11d} stall {st/stt:5.3f} {s}")
PY

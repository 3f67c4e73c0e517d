# Summary of ncu's per-SASS-line source page (--page source --print-source sass --csv): warp
# instructions executed by opcode and the hottest lines with their share of stall samples.
# Usage: python3 bench/sass_summary.py NCU_CSV [LINES_OUT]  (LINES_OUT: every line with its counts)
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
    try:
        rows.append((row[ia], row[isrc], int(row[iex].replace(',', '') or 0),
                     int(row[ist].replace(',', '') or 0)))
    except Exception: pass
tot = sum(x[2] for x in rows); stt = sum(x[3] for x in rows) or 1
print("total warp instructions", tot, "lines", len(rows))
ops = collections.Counter()
for a, s, n, st in rows: ops[s.split()[0] if not s.startswith('@') else s.split()[1]] += n
for op, n in ops.most_common(25): print(f"{op:12s} {n:12d} {n/tot:6.3f}")
print("-- hottest lines")
for i, (a, s, n, st) in enumerate(rows):
    if n > tot * 0.004 or st > stt * 0.01: print(f"{i:5d} {n:11d} stall {st/stt:5.3f} {s}")
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        for i, (a, s, n, st) in enumerate(rows):
            f.write(f"{i:5d} {n:11d} {st/stt:6.4f} {s}\n")

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
python3 bench/sass_summary.py /tmp/sass_$K.csv | tee $OUT/sass_${ALGO}_k$K.txt

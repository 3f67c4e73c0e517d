#!/usr/bin/env bash
# Profiling helper for the k-selection kernels (device call, after select_device_run.sh built
# /tmp/b): spill check in the SASS, then ncu on one launch of the warp merge queue per k
# (instruction count, stall reasons per issued instruction, DRAM throughput).
# Usage: [ALGO=quick-multiselect KERNEL=QuickMultiSelectKernel] \
#   bench/select_profile.sh OUTDIR [k ...]
set -u
OUT=${1:?outdir}; shift
KS=${*:-32 256}
ALGO=${ALGO:-merge-queue}
KERNEL=${KERNEL:-WarpMergeQueueKernel}
M='smsp__inst_executed.sum,smsp__cycles_active.avg'
M="$M,dram__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
for k in $KS; do
  echo "== k=$k"
  timeout 120 ncu --clock-control none -k regex:$KERNEL --launch-skip 3 --launch-count 1 \
    --metrics "$M" /tmp/b/bench/featmatch-bench select --rows 8192 --cols 65536 --k $k \
    --algos $ALGO --runs 1 > $OUT/ncu_${ALGO}_k$k.txt 2>&1
  grep -E "inst_executed|cycles_active|dram__|duration|warps_active" $OUT/ncu_${ALGO}_k$k.txt
  grep -E "issue_stalled" $OUT/ncu_${ALGO}_k$k.txt | sort -k3 -rn | head -7
done

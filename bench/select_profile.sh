#!/usr/bin/env bash
# Profiling helper for the k-selection kernels (device call, after select_device_run.sh built
# /tmp/b): spill check in the SASS and ncu on one launch of the warp merge queue per k.
# Usage: bench/select_profile.sh OUTDIR [k ...]
set -u
OUT=${1:?outdir}; shift
KS=${*:-32 256}
cuobjdump -sass /tmp/b/gpu/libfm_gpu.a > /tmp/sass.txt 2>/dev/null
awk '/Function : /{name=$3} /LDL|STL/{n[name]++} END{for (f in n) print n[f], f}' /tmp/sass.txt |
  grep -i warp | sort -rn | head -12
for k in $KS; do
  timeout 120 ncu --clock-control none -k regex:WarpMergeQueueKernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    /tmp/b/bench/featmatch-bench select --rows 8192 --cols 65536 --k $k --algos merge-queue \
    --runs 1 > $OUT/ncu_k$k.txt 2>&1
  grep -E "DRAM Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Warp Cycles Per Issued|Issue Slots|Compute \(SM\)|Stall|Local" $OUT/ncu_k$k.txt | head -30
done

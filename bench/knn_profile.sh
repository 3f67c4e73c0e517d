#!/usr/bin/env bash
# Profile of the fused kNN path's scoring kernel (device call, after a GPU-only build in
# /tmp/fm-gpu):
# for benchmark shapes 0 (8192 x 65536, k = 32) and 3 (8192 x 2^20, k = 128), ncu's throughput,
# scheduler and warp-state sections for the last level's launch, then the executed-instruction
# profile by SASS opcode and line (every line in sass_lines_SHAPE.txt). Usage:
# KERNEL=regex SHAPES="0 3" bench/knn_profile.sh OUTDIR
set -u
OUT=${1:?outdir}
KERNEL=${KERNEL:-FusedWgmma}
BENCH=/tmp/fm-gpu/bench/featmatch-bench
GMMA=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
GMMA=$GMMA,sm__inst_executed_pipe_tensor_op_gmma.sum
for shape in ${SHAPES:-0 3}; do
  skip=3; [ "$shape" = 3 ] && skip=4  # launches of the kernel before the last level's
  set -- $shape $skip
  timeout 200 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --metrics $GMMA \
    -k regex:$KERNEL --launch-skip $2 --launch-count 1 $BENCH knn --json --only $1 --runs 1 \
    > $OUT/ncu_knn_$1.txt 2>&1
  grep -E "Duration|Issue Slots|Eligible|Warp Cycles Per Issued|Active Threads|gmma|L2 Hit" \
    $OUT/ncu_knn_$1.txt
  timeout 200 ncu --clock-control none -k regex:$KERNEL --launch-skip $2 --launch-count 1 \
    --section SourceCounters --page source --print-source sass --csv \
    $BENCH knn --json --only $1 --runs 1 > /tmp/knn_sass_$1.csv 2>&1
  python3 bench/sass_summary.py /tmp/knn_sass_$1.csv $OUT/sass_lines_$1.txt > $OUT/sass_knn_$1.txt
  head -22 $OUT/sass_knn_$1.txt
done

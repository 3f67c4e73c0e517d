#!/usr/bin/env bash
# ncu on one row-parallel quick multi-select (pivot, filter, finish, hand-back kernels) per k on
# 8192 x 65536: time, DRAM throughput, instructions, active warps. Device call, after
# select_device_run.sh built /tmp/b. Usage: bench/qms_split_profile.sh k [k ...]
M='gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed'
M="$M,smsp__inst_executed.sum"
M="$M,sm__warps_active.avg.pct_of_peak_sustained_active"
for k in "$@"; do
  echo "== k=$k"
  timeout 120 ncu --clock-control none -k regex:'Qms|QuickMultiSelectList' --launch-skip 8 \
    --launch-count 4 --metrics "$M" /tmp/b/bench/featmatch-bench select --rows 8192 \
    --cols 65536 --k "$k" --algos quick-multiselect --runs 2 2>&1 |
    grep -E "Qms|QuickMulti|duration|dram__|inst_exec|warps_active" | grep -v PROF |
    sed 's/(fm::gpu::detail::SelectArgs.*//'
done

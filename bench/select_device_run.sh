#!/usr/bin/env bash
# One GPU-machine call for the k-selection kernels: build (select sources only), tests, sanitizers,
# benchmark and the torch peer. Usage: bench/select_device_run.sh OUTDIR [fast|quick|full]
set -u -o pipefail
OUT=${1:?outdir}
MODE=${2:-full}
SRC=/tmp/selsrc
rm -rf $SRC && mkdir -p $SRC && cp -r . $SRC/ && cd $SRC || exit 1
# Build in a clean copy (no build folders from this machine).
rm -rf build*
cmake -S . -B /tmp/b -G Ninja -DFM_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DGTEST_SOURCE_DIR=/usr/src/googletest > $OUT/build.log 2>&1 &&
cmake --build /tmp/b -j16 --target fm_gpu_tests featmatch-bench >> $OUT/build.log 2>&1 ||
  { tail -40 $OUT/build.log; exit 1; }
echo "== build ok"
T=/tmp/b/tests/fm_gpu_tests
timeout 240 $T --gtest_filter='*Select*' --gtest_brief=1 > $OUT/tests.log 2>&1
echo "== tests rc=$?"; grep -E "FAILED|PASSED|Failure" $OUT/tests.log | head -30
if [ "$MODE" = fast ]; then  # iteration: tests and the reduced grid only
  timeout 120 /tmp/b/bench/featmatch-bench select --rows 8192 --cols 65536 --k 32,256,1024 \
    --algos merge-queue,quick-multiselect --runs 10 | tee $OUT/select_quick.txt
  timeout 60 /tmp/b/bench/featmatch-bench select --rows 1024 --cols 1048576 --k 32,1024 \
    --algos merge-queue,quick-multiselect --runs 10 | tee -a $OUT/select_quick.txt
  exit 0
fi
SAN='AlgoKShape/SelectKTest.*_k33_*:*quick_multiselect_k32_*8k*:*quick_multiselect_k32_*16k'
SAN="$SAN:*quick_multiselect_k32_dups_12k:*quick_multiselect_k32_inf_nan_wide"
SAN="$SAN:AlgoKShape/SelectKTest.*_k1000_*:AlgoKShape/SelectKTest.*_k2048_n33:SelectKArgs.*"
SAN="$SAN-*big_n1m*:*many_rows*"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $T --gtest_filter="$SAN" \
  --gtest_brief=1 > $OUT/memcheck.log 2>&1
echo "== memcheck rc=$?"; tail -4 $OUT/memcheck.log
RACE='*quick_multiselect_k1000_crowded_8k:AlgoKShape/SelectKTest.*_k33_n33'
RACE="$RACE:AlgoKShape/SelectKTest.*_k1000_random:AlgoKShape/SelectKTest.*_k100_dups"
RACE="$RACE:AlgoKShape/SelectKTest.*_k2048_inf_nan:*quick_multiselect_k256_mixed_rows"
RACE="$RACE:*quick_multiselect_k33_sample_trap_16k:*quick_multiselect_k32_mixed_8k"
RACE="$RACE:*quick_multiselect_k31_dups_12k:*quick_multiselect_k32_rows_8k_misaligned"
# The fused filter and finish at k <= 256 and on rows where k is a large share of the row.
RACE="$RACE:*quick_multiselect_k100_mixed_8k:*quick_multiselect_k256_dups_12k"
RACE="$RACE:*quick_multiselect_k1000_mixed_3k:*quick_multiselect_k1000_mixed_5k"
# Long rows as pieces: the merge of the pieces' sorted results in shared memory.
RACE="$RACE:*quick_multiselect_k256_long_pieces:*auto_k2048_long_pieces_300k"
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 $T --gtest_filter="$RACE" \
  --gtest_brief=1 > $OUT/racecheck.log 2>&1
echo "== racecheck rc=$?"; tail -4 $OUT/racecheck.log
if [ "$MODE" = quick ]; then
  timeout 120 /tmp/b/bench/featmatch-bench select --rows 8192 --cols 65536 --k 32,256,1024 \
    --algos merge-queue,quick-multiselect --runs 10 | tee $OUT/select_quick.txt
  timeout 60 /tmp/b/bench/featmatch-bench select --rows 1024 --cols 1048576 --k 32,1024 \
    --algos merge-queue,quick-multiselect --runs 10 | tee -a $OUT/select_quick.txt
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/torch_topk_peer.py --quick > $OUT/torch.jsonl
else
  timeout 300 /tmp/b/bench/featmatch-bench select --json --runs 15 > $OUT/select.jsonl
  echo "== bench rc=$?"
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/torch_topk_peer.py > $OUT/torch.jsonl
fi
echo "== torch rc=$?"; cat $OUT/torch.jsonl | cut -c1-200

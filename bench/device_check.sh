#!/usr/bin/env bash
# One call on the GPU machine for the whole GPU side: GPU-only build, every GPU, backend and core
# test, compute-sanitizer (memcheck on every GPU and backend test, racecheck on a subset),
# and the GPU benchmarks. Usage: bench/device_check.sh OUTDIR
set -u -o pipefail
OUT=${1:?outdir}
B=/tmp/fm-gpu
cmake -S . -B $B -G Ninja -DFM_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DGTEST_SOURCE_DIR=/usr/src/googletest > $OUT/build.log 2>&1 &&
  cmake --build $B -j16 >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "== build ok"; nvidia-smi -L
T=$B/tests/fm_gpu_tests
timeout 60 $B/tests/fm_core_tests --gtest_brief=1 > $OUT/tests.log 2>&1
echo "== core tests rc=$?"
# The GPU backend the application runs on (fm::backend), against the reference.
FM_REQUIRE_GPU=1 timeout 60 $B/tests/fm_backend_tests --gtest_brief=1 >> $OUT/tests.log 2>&1
echo "== backend tests rc=$?"
timeout 240 $T --gtest_brief=1 >> $OUT/tests.log 2>&1
echo "== gpu tests rc=$?"; grep -E "FAILED|PASSED|tests ran|Failure" $OUT/tests.log | head -20
# memcheck over every GPU test (about a minute on an H100).
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 $T --gtest_brief=1 \
  > $OUT/memcheck.log 2>&1
echo "== memcheck rc=$?"; tail -3 $OUT/memcheck.log
FM_REQUIRE_GPU=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
  $B/tests/fm_backend_tests --gtest_brief=1 >> $OUT/memcheck.log 2>&1
echo "== memcheck backend rc=$?"; tail -3 $OUT/memcheck.log
RACE='KnnIndex.FusedPathIsTakenAndExact:KnnIndex.RealSiftExact:AlgoKShape/SelectKTest.*_k100_dups'
# Rows handed back to the one-block path (sample traps, mixed rows) run its retry branch.
# The fused filter and finish (256 and 128 threads a block; k <= 256, k above; whole rows and
# wider pivot ranks where k is a large share of the row).
RACE="$RACE:*quick_multiselect_k1000_mixed_8k:*quick_multiselect_k500_mixed_8k"
RACE="$RACE:*quick_multiselect_k100_mixed_8k:*quick_multiselect_k256_dups_12k"
RACE="$RACE:*quick_multiselect_k1000_mixed_3k:*quick_multiselect_k1000_mixed_5k"
# The fused kernel's pieces by bulk copies into a slot a warp (forced on any device).
RACE="$RACE:*quick_multiselect_k100_slot_8k:*quick_multiselect_k256_slot_6000"
# 128-thread fused blocks on 16384 columns (forced on any device).
RACE="$RACE:*quick_multiselect_k256_narrow_16k"
# Long rows as pieces: the merge of the pieces' sorted results in shared memory.
RACE="$RACE:*quick_multiselect_k256_long_pieces:*auto_k2048_long_pieces_300k"
RACE="$RACE:*quick_multiselect_k1000_crowded_8k:*quick_multiselect_k256_mixed_rows"
RACE="$RACE:*quick_multiselect_k33_sample_trap_16k:*quick_multiselect_k32_mixed_8k"
RACE="$RACE:*quick_multiselect_k31_dups_12k:*quick_multiselect_k32_rows_8k_misaligned"
# Crowded finishes selected again from the survivor list, or their buckets ranked in place (rows
# of 256 values).
RACE="$RACE:*quick_multiselect_k256_levels_64k:*quick_multiselect_k1000_levels_40k_ids"
RACE="$RACE:*quick_multiselect_k1000_levels_16k"
# The merge queue's warps: the queue in registers (k <= 128) with its candidates in shared
# memory, several rows a warp; the queue in shared memory above.
RACE="$RACE:*merge_queue_k100_short_9k:*merge_queue_k64_short_9k_misaligned_ids"
RACE="$RACE:*merge_queue_k256_mixed_8k"
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 $T --gtest_filter="$RACE" \
  --gtest_brief=1 > $OUT/racecheck.log 2>&1
echo "== racecheck rc=$?"; tail -3 $OUT/racecheck.log
timeout 60 $B/bench/featmatch-bench select --rows 8192 --cols 65536 --k 32,256,1024 \
  --algos auto,merge-queue,quick-multiselect --runs 10 > $OUT/select_auto.jsonl
# Rows under 512 columns: TBiS a warp a row, the merge queue, and auto's choice between them.
timeout 60 $B/bench/featmatch-bench select --rows 8192 --cols 100,256,384 --k 2,32,128,256 \
  --algos auto,tbis,merge-queue --runs 10 >> $OUT/select_auto.jsonl
# Short rows (for k <= 32 on an H100 held whole in shared memory).
timeout 60 $B/bench/featmatch-bench select --rows 8192 --cols 8192,16384 --k 32,64 \
  --algos auto,merge-queue,quick-multiselect --runs 10 >> $OUT/select_auto.jsonl
# Rows of few values (256 levels): crowded buckets ranked in place (16384 columns) or the rows
# selected again from the survivor list (most of 65536).
echo "data: ties" >> $OUT/select_auto.jsonl
timeout 60 $B/bench/featmatch-bench select --rows 8192 --cols 16384,65536 --k 32,256,1024 \
  --algos auto,merge-queue,quick-multiselect --runs 10 --data ties >> $OUT/select_auto.jsonl
echo "== select rc=$?"
timeout 150 $B/bench/featmatch-bench knn --json --check > $OUT/knn.jsonl
echo "== knn rc=$?"
# At most 8 files come back from the machine: the two application benchmarks share apps.jsonl
# and the torch peers torch.jsonl.
timeout 60 $B/bench/featmatch-bench logos-gpu > $OUT/apps.jsonl
echo "== logos-gpu rc=$?"
timeout 80 $B/bench/featmatch-bench batch-gpu --runs 3 >> $OUT/apps.jsonl
echo "== batch-gpu rc=$?"; cat $OUT/apps.jsonl
if [ "${FM_WITH_TORCH:-0}" = 1 ]; then  # torch peers in the same call
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/torch_knn_peer.py 5 > $OUT/torch.jsonl
  echo "== torch knn rc=$?"
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/torch_topk_peer.py --quick >> $OUT/torch.jsonl
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/torch_topk_peer.py --quick --ties >> $OUT/torch.jsonl
  echo "== torch topk rc=$?"
fi

#!/usr/bin/env bash
# How long `featmatch batch` takes to exit after Ctrl-C while it matches: SIGINT at staggered
# times (13.3 to 18.8 s into a run on a fresh database) into six runs over a folder of images.
# Usage: bench/batch_cancel_latency.sh FEATMATCH FOLDER [WORKDIR]
set -u
B=${1:?featmatch binary}; F=${2:?image folder}; W=${3:-$(mktemp -d)}
for i in 1 2 3 4 5 6; do
  rm -f "$W"/cancel.db*
  "$B" batch "$F" --db "$W/cancel.db" --quiet > "$W/log.txt" 2>&1 &
  pid=$!
  sleep $((12 + i)).$((i * 3))
  t0=$(date +%s.%N); kill -INT $pid; wait $pid; rc=$?; t1=$(date +%s.%N)
  secs=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
  echo "run $i: exit $rc after $secs s; $(grep -o '[0-9]* matched now' "$W/log.txt")"
done

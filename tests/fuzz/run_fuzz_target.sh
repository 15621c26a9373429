#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time, as ctest's `fuzz: NAME` (tests/fuzz/CMakeLists.txt) and
# `scripts/dev.sh fuzz` do:
#   run_fuzz_target.sh BINARY SECONDS WORK_DIR CORPUS_DIR "EXTRA_SEED_DIRS" [libFuzzer options...]
# The checked-in corpus (CORPUS_DIR: seeds and regression inputs) and any extra seed folders are read, never
# written: what the run finds new goes to WORK_DIR/corpus, kept between runs of the same build. Exit 0 when the
# time ran out with nothing found; otherwise libFuzzer's report, the input that did it (WORK_DIR/artifacts/) and
# what to do with it.
set -uo pipefail
binary=$1 seconds=$2 work=$3 corpus=$4 extra=$5
shift 5
name=$(basename "$binary")
mkdir -p "$work/corpus" "$work/artifacts"
seeds=("$corpus")
for dir in $extra; do seeds+=("$dir"); done
log="$work/last-run.log"
rm -f "$work/summary.txt"
# Each input gets 10 s and 2 GiB; the sanitizers stop at the first report; leaks are checked per input.
ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}" \
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "${seeds[@]}" >"$log" 2>&1
rc=$?
runs=$(grep -o -E 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 | grep -o -E '[0-9]+' | head -n 1)
inputs=$(find "$work/corpus" "${seeds[@]}" -maxdepth 1 -type f 2>/dev/null | wc -l)
coverage=$(grep -o -E 'cov: [0-9]+' "$log" | tail -n 1)
if ((rc == 0)); then
  # Also kept beside the work folder: scripts/dev.sh prints every target's line after the run.
  echo "fuzz: $name: ${runs:-?} executions in $seconds s, ${coverage:-cov: ?}, $inputs inputs in its corpus, nothing found" |
    tee "$work/summary.txt"
  exit 0
fi
echo "fuzz: $name: FOUND A PROBLEM after ${runs:-?} executions (exit $rc)" >"$work/summary.txt"
cat "$log"
echo
echo "fuzz: $name FOUND A PROBLEM (exit $rc) after ${runs:-?} executions: the input is in $work/artifacts/:"
ls -1 "$work/artifacts/"
echo "Reproduce it with: $binary $work/artifacts/FILE"
echo "Once fixed, copy it into $corpus/ as crash-<what it found>, so every later run replays it."
exit 1

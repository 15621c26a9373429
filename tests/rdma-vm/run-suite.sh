#!/bin/sh
# Runs every test of a Catch2 program separately inside the guest, so that one test that reports itself
# skipped (it ends its process with 77) does not hide the others, and prints one line per test and a summary.
# Usage: run-suite.sh PROGRAM [TAG-OR-NAME-FILTER]   (the filter is a Catch test spec, e.g. "[transport]")
# Exit: 0 when every test passed or skipped, 1 when one failed, 77 when none ran.
program=$1
filter=${2:-}
names=$(mktemp)
if [ -n "$filter" ]; then
  "$program" --list-test-names-only "$filter" | grep -v '^$' > "$names"
else
  "$program" --list-test-names-only | grep -v '^$' > "$names"
fi
passed=0 skipped=0 failed=0
output=$(mktemp)
# The transport's capabilities, asked of daqx-executive by the first case and read by the others from here
# (transport_profile.cpp): in the emulated guest each query costs seconds.
DAQX_TEST_CAPABILITIES_CACHE=$(mktemp -d)
export DAQX_TEST_CAPABILITIES_CACHE
while IFS= read -r name; do
  # A comma separates alternatives in a Catch test spec: escape the ones inside the name.
  spec=$(printf '%s' "$name" | sed 's/,/\\,/g')
  started=$(date +%s)
  "$program" --warn NoTests "$spec" > "$output" 2>&1
  rc=$?
  took=$(( $(date +%s) - started ))
  case $rc in
    0) passed=$((passed + 1)); echo "passed  ${took}s  $name" ;;
    77) skipped=$((skipped + 1)); echo "skipped ${took}s  $name: $(grep -m1 SKIPPED "$output")" ;;
    *) failed=$((failed + 1)); echo "FAILED  ${took}s  $name (exit $rc)"
       # What the guest's kernel said lately (an rxe warning, an oops, the OOM killer) may be why; its routine
       # lines about the dummy device are left out.
       echo "guest kernel, last lines:"; dmesg 2>/dev/null | grep -v "speed is unknown" | tail -n 15
       cat "$output" ;;
  esac
done < "$names"
rm -rf "$names" "$output" "$DAQX_TEST_CAPABILITIES_CACHE"
echo "run-suite: $passed passed, $skipped skipped, $failed failed"
[ "$failed" -gt 0 ] && exit 1
[ "$passed" -eq 0 ] && exit 77
exit 0

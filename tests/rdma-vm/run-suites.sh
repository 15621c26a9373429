#!/usr/bin/env bash
# Inside the guest: runs several suites in one boot, one after another, so that a build's guest suites cost one
# boot. Each group is [NAME=VALUE ...] COMMAND [ARGS ...], run with those variables set; groups are separated by
# --then. A group that fails does not stop the next ones.
#
#   run-suites.sh smoke.sh PROBE --then DAQX_TRANSPORT=ibv run-suite.sh PROGRAM --then ...
# Exit: 1 when a group failed, 77 when every group was skipped (exit 77), 0 otherwise.
set -u

passed=0 skipped=0 failed=0
summary=()
group=()

run_group() {
  ((${#group[@]})) || return 0
  local assignments=()
  while ((${#group[@]})) && [[ ${group[0]} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
    assignments+=("${group[0]}")
    group=("${group[@]:1}")
  done
  local what="${assignments[*]:+${assignments[*]} }$(basename "${group[0]}") ${group[*]:1}"
  echo "run-suites: == $what"
  local started=$SECONDS rc=0
  env "${assignments[@]}" "${group[@]}" || rc=$?
  local line="$((SECONDS - started))s  $what"
  case $rc in
    0) passed=$((passed + 1)); summary+=("passed  $line") ;;
    77) skipped=$((skipped + 1)); summary+=("skipped $line") ;;
    *) failed=$((failed + 1)); summary+=("FAILED  $line (exit $rc)") ;;
  esac
  group=()
}

for argument in "$@"; do
  if [[ $argument == --then ]]; then run_group; else group+=("$argument"); fi
done
run_group

echo "run-suites: the groups of this boot:"
printf '  %s\n' "${summary[@]}"
echo "run-suites: $passed passed, $skipped skipped, $failed failed"
((failed > 0)) && exit 1
((passed == 0)) && exit 77
exit 0

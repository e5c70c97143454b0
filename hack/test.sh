#!/usr/bin/env bash
# Every check of `make test`, at once: the suite mostly waits (on processes, the API server, a
# node's pods) rather than computes, so the static checks and the node's tests run beside the
# pytest suite instead of after it. pytest keeps the terminal (its progress is the long one);
# the others write to logs under $TEST_LOGS, shown when they end, and the run fails if any did.
#
#   bash hack/test.sh            everything make test runs (its prerequisites already built)
#   NODE_TESTS=0 bash hack/test.sh   all but tests/cluster (no root, no node)
#
# The Makefile builds what each part needs first (the venv, the control plane, helm, the
# node's binaries, the web UI), so nothing here downloads or builds.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=.venv/bin
WORKERS="${WORKERS:-2}"
NODE_TESTS="${NODE_TESTS:-1}"
logs="${TEST_LOGS:-$(mktemp -d)}"
mkdir -p "$logs"
controlplane="$(bash hack/controlplane/build.sh)"
started=$SECONDS

declare -A pids=() took=()
run_beside() {  # run_beside <name> <command...>: in the background, its output to a log
  local name="$1"
  shift
  (
    begun=$SECONDS
    "$@" >"$logs/$name.log" 2>&1
    status=$?
    echo "$((SECONDS - begun))" >"$logs/$name.seconds"
    exit "$status"
  ) &
  pids[$name]=$!
}

checks() {
  set -e
  echo "== ruff"
  $BIN/ruff check tiny_harness tests
  $BIN/ruff format --check tiny_harness tests
  echo "== mypy --strict"
  $BIN/mypy
  echo "== import contracts"
  $BIN/lint-imports
  echo "== the web UI's typecheck and unit tests"
  (cd web && npm run typecheck && npm test)
}

run_beside checks checks
if [[ "$NODE_TESTS" == 1 ]]; then
  run_beside cluster env TINY_HARNESS_NODE_TESTS=1 PATH="$controlplane:$PATH" \
    $BIN/pytest -q -n 0 --tb=native -p no:cacheprovider tests/cluster
fi
beside="the static checks"
[[ "$NODE_TESTS" == 1 ]] && beside+=" and tests/cluster"
echo "== pytest (-n $WORKERS; beside it: $beside, logs in $logs)"
begun=$SECONDS
PATH="$controlplane:$PATH" $BIN/pytest -q -n "$WORKERS" --dist loadgroup --tb=native
pytest_status=$?
pytest_took=$((SECONDS - begun))

failed=()
((pytest_status == 0)) || failed+=(pytest)
for name in checks cluster; do
  [[ -n "${pids[$name]:-}" ]] || continue
  status=0
  wait "${pids[$name]}" || status=$?
  echo
  echo "== $name (beside pytest): $( ((status == 0)) && echo passed || echo "FAILED ($status)")"
  if ((status == 0)); then tail -n 3 "$logs/$name.log"; else cat "$logs/$name.log"; fi
  ((status == 0)) || failed+=("$name")
  took[$name]="$(cat "$logs/$name.seconds" 2>/dev/null || echo '?')"
done

echo
echo "== make test took $((SECONDS - started))s: pytest ${pytest_took}s, the static checks ${took[checks]}s${took[cluster]:+, tests/cluster ${took[cluster]}s}"
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]} (logs in $logs)" >&2
  exit 1
fi

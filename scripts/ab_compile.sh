#!/usr/bin/env bash
# A/B of the engine's cold compile and warm speed between two commits, alternating rounds in one session:
#   scripts/ab_compile.sh BEFORE AFTER [ROUNDS]
# Each commit is checked out in a temporary worktree and run with this checkout's Python environment.
set -euo pipefail
before=$1 after=$2 rounds=${3:-2}
py=${PYTHON:-$(pwd)/.venv/bin/python}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/a" 2>/dev/null; git worktree remove --force "$work/b" 2>/dev/null; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/a" "$before"
git worktree add -q --detach "$work/b" "$after"
for round in $(seq "$rounds"); do
  for side in a b; do
    rm -rf "$work/cache_$side"
    start=$(date +%s.%N)
    (cd "$work/$side" && CANASTA_CACHE_DIR="$work/cache_$side" PYTHONPATH="$work/$side" "$py" -m train.common.warmup >/dev/null 2>&1)
    echo "round $round $side cold warm-up: $("$py" -c "print(round($(date +%s.%N) - $start, 1))") s"
  done
done
for round in $(seq "$rounds"); do
  for side in a b; do
    (cd "$work/$side" && CANASTA_CACHE_DIR="$work/cache_$side" PYTHONPATH="$work/$side" "$py" -m train.cli bench \
      --rules classic_4p --batch 1 64 1024 --seconds 2 --json 2>/dev/null) | "$py" -c "
import json, sys
for line in sys.stdin:
    row = json.loads(line)
    print('round $round $side batch', row['batch'], f\"{row['decisions_per_s']:,.0f} decisions/s\")"
  done
done

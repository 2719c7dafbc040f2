#!/usr/bin/env bash
# Fail when a committed golden manifest differs from what `nemotron-operator render` prints now.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
[ -x "$PY" ] || ensure_venv
PYTHONPATH="$ROOT/operator:$ROOT" "$PY" -m tests.golden.cases --check

#!/usr/bin/env bash
# Regenerate the golden manifests (tests/golden/expected/) from tests/golden/cases.py: each is
# exactly what `nemotron-operator render` prints for its case. Review the diff before committing.
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
PYTHONPATH="$ROOT/operator:$ROOT" "$PY" -m tests.golden.cases
echo "wrote tests/golden/expected"

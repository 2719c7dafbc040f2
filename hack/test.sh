#!/usr/bin/env bash
# The README's test command: install everything (pinned) into .venv, then lint, type-check and
# run the whole test suite. Extra arguments go to pytest.
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
"$ROOT/hack/lint.sh"
# pytest exits 5 when it collects no tests; that is a failure here, never a pass.
pytest "$@"

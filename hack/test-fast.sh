#!/usr/bin/env bash
# The fast loop (make test-fast): the unit tier and the integration tier's pure checks — no
# control plane, no simulated cluster, no helm, nothing marked slow. Under two minutes on an idle
# two-core machine (docs/testing.md has the figure); the full suite is hack/test.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
# Properties run 25 examples each here (the "fast" profile of tests/conftest.py), 100 in the suite.
pytest -m "not slow and not cluster" --hypothesis-profile=fast -q tests/unit tests/integration "$@"

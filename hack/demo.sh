#!/usr/bin/env bash
# The README's main job. Filled in by the simulated-cluster work; until then it says so.
source "$(dirname "$0")/lib.sh"
ensure_venv
echo "demo: not yet available (needs the simulated cluster)" >&2
exit 2

#!/usr/bin/env bash
# Regenerate the CRD from the pydantic API models into crds/ (and the chart's crds/).
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
"$PY" -m nemotron_operator.crd "${CRD_DIRS[@]}"
echo "wrote ${CRD_DIRS[*]}"

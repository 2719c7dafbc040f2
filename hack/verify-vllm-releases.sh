#!/usr/bin/env bash
# Fail when the committed per-release vLLM data (operator/nemotron_operator/catalog/
# vllm_release_data) differs from what hack/gen-vllm-releases.py reads out of each release's
# wheel. The wheels (pinned by sha256, ~1.2 GB for the four) are downloaded into
# .cache/vllm-wheels/ once; a warm run takes a few seconds.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
[ -x "$PY" ] || ensure_venv
data=operator/nemotron_operator/catalog/vllm_release_data
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$PY" hack/gen-vllm-releases.py --out "$tmp/data" >/dev/null
if ! diff -ru -x __init__.py -x __pycache__ "$data" "$tmp/data"; then
  echo "verify-vllm-releases: $data is out of date; run hack/gen-vllm-releases.py" >&2
  exit 1
fi

#!/usr/bin/env bash
# Fail when the committed CRD differs from what the API models generate.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
[ -x "$PY" ] || ensure_venv
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
status=0
for dir in "${CRD_DIRS[@]}"; do
  "$PY" -m nemotron_operator.crd "$tmp/$dir"
  if ! diff -ru "$dir" "$tmp/$dir"; then
    echo "verify-crds: $dir is out of date with the API models; run hack/update-crds.sh" >&2
    status=1
  fi
done
exit $status

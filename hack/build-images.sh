#!/usr/bin/env bash
# Build the images the simulated cluster's real nodes run, without Docker (hack/build-images.py
# says how): .cache/images/{pause,operator,vllm-stub}.tar. Root; a no-op when up to date.
source "$(dirname "$0")/lib.sh"
ensure_venv
exec "$PY" "$ROOT/hack/build-images.py" "$@"

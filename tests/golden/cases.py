"""The golden manifests: each case is a `nemotron-operator render` invocation, and its expected
output is exactly what the command prints (tests/golden/expected/<case>.yaml).

Regenerate with hack/update-golden.sh; hack/verify-golden.sh (and tests/unit/render/
test_golden.py, in-process) fail when the committed files differ.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
EXPECTED = GOLDEN / "expected"
INPUTS = "tests/golden/inputs"

# case name → render arguments (paths relative to the repository root)
CASES: dict[str, tuple[str, ...]] = {
    "minimal": ("-f", "examples/minimal.yaml"),
    "minimal-on-h200-nodes": (
        "-f",
        "examples/minimal.yaml",
        "--gpu-inventory",
        f"{INPUTS}/nodes-h200.yaml",
    ),
    "super-vl-bf16-h200": ("-f", "examples/super-vl-bf16-h200.yaml"),
    "super-nvfp4-b200": ("-f", "examples/super-nvfp4-b200.yaml"),
    "nano-bf16": ("-f", "examples/nano-bf16.yaml"),
    "nano-object-store": ("-f", "examples/nano-object-store.yaml"),
    "custom-architecture": ("-f", "examples/custom-architecture.yaml"),
    "multi-node-h100": ("-f", f"{INPUTS}/multi-node-h100.yaml"),
    "karpenter-h200": ("-f", f"{INPUTS}/karpenter-h200.yaml"),
    "plugin-parser": ("-f", f"{INPUTS}/plugin-parser.yaml"),
    "nano-gateway": ("-f", "examples/nano-gateway.yaml"),
    "nano-dra-b200": ("-f", "examples/nano-dra-b200.yaml"),
    "nano-canary-scale-to-zero": ("-f", "examples/nano-canary-scale-to-zero.yaml"),
    "nano-keda": ("-f", "examples/nano-keda.yaml"),
    "gateway-multi-node-no-prefix": ("-f", f"{INPUTS}/gateway-multi-node-no-prefix.yaml"),
    "network-policy-multi-node": ("-f", f"{INPUTS}/network-policy-multi-node.yaml"),
    "leader-worker-set-h100": ("-f", f"{INPUTS}/leader-worker-set-h100.yaml"),
}


def render(case: str) -> str:
    """Run `nemotron-operator render` for ``case`` in this process; return what it prints."""
    from nemotron_operator.cli import main

    args = [a if not a.endswith((".yaml", ".yml")) else str(ROOT / a) for a in CASES[case]]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["render", *args])
    if code != 0:
        raise RuntimeError(f"render {case} exited {code}: {err.getvalue()}")
    return out.getvalue()


def expected_path(case: str) -> Path:
    return EXPECTED / f"{case}.yaml"  # EXPECTED looked up at call time: tests point it elsewhere


def main(argv: list[str]) -> int:
    """``--check``: report cases whose committed output differs; otherwise rewrite them."""
    check = "--check" in argv
    stale = []
    for case in CASES:
        text = render(case)
        path = expected_path(case)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(case)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    known = {f"{case}.yaml" for case in CASES}
    extra = sorted(p.name for p in EXPECTED.glob("*.yaml") if p.name not in known)
    if check and (stale or extra):
        for case in stale:
            print(f"verify-golden: tests/golden/expected/{case}.yaml is out of date")
        for name in extra:
            print(
                f"verify-golden: tests/golden/expected/{name} has no case in tests/golden/cases.py"
            )
        print("verify-golden: run hack/update-golden.sh and review the diff")
        return 1
    for name in extra if not check else []:
        (EXPECTED / name).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

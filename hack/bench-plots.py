#!/usr/bin/env python3
"""Render the operator benchmark's plots (PNG) from one or more run JSONs.

    hack/bench-plots.py docs/benchmarks/operator.json [MORE.json ...] --out docs/benchmarks/

Writes convergence-vs-n.png (operator and floor), operator-cpu-vs-n.png and
idle-cpu-over-time.png, one line per run (headless: matplotlib's Agg backend; matplotlib is a
dev dependency).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "hack")]

from opbench import plots  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="JSON written by bench-operator.py")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks")
    args = parser.parse_args(argv)
    runs = [(path.stem, json.loads(path.read_text())) for path in args.runs]
    for path in plots.render(runs, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The benchmark's pure helpers live under hack/ (``opbench``), outside the operator package."""

import sys
from pathlib import Path

HACK = str(Path(__file__).resolve().parents[3] / "hack")
if HACK not in sys.path:
    sys.path.insert(0, HACK)

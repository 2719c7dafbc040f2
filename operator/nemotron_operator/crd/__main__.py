"""``python -m nemotron_operator.crd DIR...``: write the generated CRD into each directory."""

from __future__ import annotations

import sys
from pathlib import Path

from nemotron_operator.crd import CRD_FILE_NAME, render_crd_yaml


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m nemotron_operator.crd DIR...", file=sys.stderr)  # noqa: T201
        return 2
    text = render_crd_yaml()
    for directory in argv:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        (path / CRD_FILE_NAME).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Small helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Protocol

# Exit codes: 0 success, 1 the request is valid but cannot be met (e.g. nothing fits),
# 2 bad input or unavailable feature (argparse also uses 2).
EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_USAGE = 2


class SubParsers(Protocol):
    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def fail(message: str, code: int = EXIT_USAGE) -> int:
    """Print ``message`` to stderr prefixed with the program name; return ``code``."""
    print(f"nemotron-operator: {message}", file=sys.stderr)
    return code


def not_available(feature: str) -> int:
    return fail(f"{feature} is not available yet in this version", EXIT_USAGE)

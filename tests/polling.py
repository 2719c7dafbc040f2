"""Bounded polling, shared by the integration tier and the e2e suite (which must not import the
simulated cluster, so this lives apart from tests/integration/conftest.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], *, seconds: float, every: float, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy; fail the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what or check}")
        time.sleep(every)

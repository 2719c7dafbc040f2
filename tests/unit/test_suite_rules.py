"""The suite's own rules (docs/testing.md), read from its source: no module imports a test module
(helpers live in non-test modules, so running one test module never collects another's tests),
and no unit test waits on the wall clock (a unit test drives time itself: a fake clock, an
event, a turn of the event loop)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
UNIT = TESTS / "unit"
# A fake server that answers slowly is the behaviour under test, not a wait: the scraper's
# timeout and its one-scrape-at-a-time rule are measured against a pod that takes 0.3-0.5 s.
SLOW_FAKES = {"controller/test_scraping.py"}


def modules(root: Path) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def imported(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    found = [
        f"{path.relative_to(TESTS)} imports {name}"
        for path, tree in modules(TESTS)
        for name in imported(tree)
        if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert not found, "move the shared helpers into a non-test module:\n" + "\n".join(found)


def sleeps(tree: ast.Module) -> Iterator[int]:
    """Lines that sleep: ``time.sleep(...)``, or ``asyncio.sleep(x)`` unless ``x`` is 0 (a turn
    of the event loop)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if node.func.attr != "sleep" or not isinstance(owner, ast.Name):
            continue
        turn = node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0
        if owner.id == "time" or (owner.id == "asyncio" and not turn):
            yield node.lineno


def test_no_unit_test_sleeps() -> None:
    found = [
        f"{path.relative_to(UNIT)}:{line}"
        for path, tree in modules(UNIT)
        if str(path.relative_to(UNIT)) not in SLOW_FAKES
        for line in sleeps(tree)
    ]
    assert not found, "drive time in the test (a fake clock or an event):\n" + "\n".join(found)


def test_the_scan_sees_a_sleep_and_an_import_of_a_test_module() -> None:
    tree = ast.parse(
        "import asyncio, time\nfrom tests.unit.status import test_startup\n"
        "time.sleep(1)\nasyncio.sleep(0)\nasyncio.sleep(0.1)\n"
    )
    assert list(sleeps(tree)) == [3, 5]
    assert "tests.unit.status.test_startup" in set(imported(tree))

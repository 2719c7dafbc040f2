"""Remembered CEL verdicts: the same rule on the same typed values is interpreted once, and a
value that differs only in its CEL type (int against double) is not mistaken for another."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.admission import cel_rules

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "ratio": {"type": "number"}},
    "x-kubernetes-validations": [
        {"rule": "!has(self.count) || self.count < 3", "message": "count too big"},
        {"rule": "!has(self.ratio) || self.ratio < 0.5", "message": "ratio too big"},
        {"rule": "!has(self.count) || self.count / 0 == 1"},  # an evaluation error
    ],
}


def _messages(value: dict[str, Any]) -> list[str]:
    return [c.message for c in cel_rules.evaluate(value, None, SCHEMA, "spec", has_old=False)]


def test_repeated_objects_are_interpreted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _messages({"count": 7})
    runs: list[str] = []
    real = cel_rules._program

    def counting(rule: str) -> Any:
        runs.append(rule)
        return real(rule)

    monkeypatch.setattr(cel_rules, "_program", counting)
    assert _messages({"count": 7}) == first
    assert runs == []
    assert any("count too big" in m for m in first)
    assert any("rule evaluation error" in m for m in first)


def test_verdicts_follow_the_value_and_its_type() -> None:
    assert not any("too big" in m for m in _messages({"count": 1, "ratio": 0.25}))
    assert any("ratio too big" in m for m in _messages({"ratio": 1}))
    assert not any("ratio too big" in m for m in _messages({"ratio": 0}))
    assert any("count too big" in m for m in _messages({"count": 3}))
    assert not any("count too big" in m for m in _messages({"count": 2}))
    # 2 == 2.0 in Python, but a CEL int and a CEL double are different values.
    assert any("divide by zero" in m for m in _messages({"count": 2}))
    assert any("no matching overload" in m for m in _messages({"count": 2.0}))

"""The controllers' selector index answers exactly what trying every selector with
``match_labels`` answers, in the order the selectors were first set."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.selectors import match_labels
from nemotron_sim.controllers.selector_index import SelectorIndex

SELECTORS: dict[str, Any] = {
    "app-a": {"matchLabels": {"app": "nemotron", "instance": "a"}},
    "app-b": {"matchLabels": {"app": "nemotron", "instance": "b"}},
    "app-any": {"matchLabels": {"app": "nemotron"}},
    "empty": {},
    "none": None,
    "expr-in": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]},
    "expr-absent": {"matchExpressions": [{"key": "legacy", "operator": "DoesNotExist"}]},
    "mixed": {
        "matchLabels": {"app": "nemotron"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["y"]}],
    },
    "int-value": {"matchLabels": {"replicas": 1}},
    "empty-value": {"matchLabels": {"flag": ""}},
    # Not plain: the text form "k=x,y" reads as k=x and a label y that exists.
    "comma-value": {"matchLabels": {"k": "x,y"}},
}
LABEL_SETS: list[dict[str, Any]] = [
    {},
    {"app": "nemotron"},
    {"app": "nemotron", "instance": "a"},
    {"app": "nemotron", "instance": "b", "tier": "y"},
    {"app": "other", "instance": "a", "tier": "x"},
    {"legacy": "1", "tier": "x"},
    {"replicas": "1"},
    {"replicas": 1},
    {"flag": ""},
    {"k": "x", "y": "anything"},
    {"k": "x,y"},
    {"app": "nemotron", "unhashable": ["x"]},
]


def _index(selectors: dict[str, Any]) -> SelectorIndex[str]:
    index: SelectorIndex[str] = SelectorIndex()
    for key, selector in selectors.items():
        index.set(key, selector)
    return index


@pytest.mark.parametrize("labels", LABEL_SETS, ids=repr)
def test_matches_what_trying_every_selector_matches(labels: dict[str, Any]) -> None:
    expected = [k for k, sel in SELECTORS.items() if match_labels(sel, labels)]
    assert _index(SELECTORS).matching(labels) == expected


def test_order_is_first_set_and_survives_updates_and_deletes() -> None:
    index = _index({"s1": {"matchLabels": {"app": "x"}}, "s2": {"matchLabels": {"app": "x"}}})
    index.set("s1", {"matchLabels": {"app": "x", "extra": "1"}})  # moved to another pair
    index.set("s3", {"matchLabels": {"app": "x"}})
    assert index.matching({"app": "x", "extra": "1"}) == ["s1", "s2", "s3"]
    assert index.matching({"app": "x"}) == ["s2", "s3"]
    index.discard("s2")
    index.discard("missing")
    assert index.matching({"app": "x", "extra": "1"}) == ["s1", "s3"]
    assert len(index) == 2


def test_many_selectors_sharing_a_label_still_match_exactly() -> None:
    selectors = {
        f"svc-{i}": {"matchLabels": {"app": "nemotron", "instance": f"d{i}"}} for i in range(50)
    }
    index = _index(selectors)
    for i, extra in itertools.product(range(0, 50, 7), ({}, {"tier": "x"})):
        labels = {"app": "nemotron", "instance": f"d{i}", **extra}
        assert index.matching(labels) == [f"svc-{i}"]
    assert index.matching({"app": "nemotron"}) == []


def test_an_unparsable_selector_fails_when_matched_as_before() -> None:
    index = _index({"bad": {"matchExpressions": [{"key": "k", "operator": "Near"}]}})
    with pytest.raises(ApiError):
        index.matching({"k": "v"})

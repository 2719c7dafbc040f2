"""Which of many label selectors select a pod, without trying every one of them.

The Service and PodDisruptionBudget controllers ask this for every pod event; with a thousand
Services in a namespace, trying each selector made a pod event cost milliseconds. A selector is
filed under one of its ``matchLabels`` pairs (every object it selects carries that pair), so a
pod's labels name the few candidates; selectors without ``matchLabels`` are always tried.
Matching itself is exactly :func:`~nemotron_sim.apiserver.selectors.match_labels`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Hashable, Mapping
from typing import Any, Generic, TypeVar

from nemotron_sim.apiserver.selectors import (
    LabelPredicate,
    label_predicate,
    match_labels,
    selector_to_string,
)

K = TypeVar("K", bound=Hashable)
Pair = tuple[Any, str]


class SelectorIndex(Generic[K]):
    """Label selectors (``LabelSelector`` objects) by key, in the order they were first set."""

    def __init__(self) -> None:
        self._selectors: dict[K, tuple[int, LabelPredicate, Pair | None]] = {}
        self._by_pair: dict[Pair, set[K]] = {}
        self._unfiled: set[K] = set()
        self._order = 0

    def set(self, key: K, selector: Mapping[str, Any] | None) -> None:
        previous = self._selectors.get(key)
        if previous is None:
            self._order += 1
            order = self._order
        else:
            order = previous[0]
            self._unfile(key, previous[2])
        # The pair with the fewest selectors filed under it: a label many selectors share
        # (``app.kubernetes.io/name``) would make every pod a candidate.
        pair = min(_pairs(selector), key=lambda p: len(self._by_pair.get(p, ())), default=None)
        self._selectors[key] = (order, _matcher(selector), pair)
        if pair is None:
            self._unfiled.add(key)
        else:
            self._by_pair.setdefault(pair, set()).add(key)

    def discard(self, key: K) -> None:
        previous = self._selectors.pop(key, None)
        if previous is not None:
            self._unfile(key, previous[2])

    def matching(self, labels: Mapping[str, str]) -> list[K]:
        """The keys whose selector selects ``labels``, in the order they were first set."""
        candidates = set(self._unfiled)
        for pair in labels.items():
            try:
                filed = self._by_pair.get(pair)
            except TypeError:  # an unhashable label value matches no filed pair
                continue
            if filed:
                candidates |= filed
        ordered = sorted(candidates, key=lambda k: self._selectors[k][0])
        return [k for k in ordered if self._selectors[k][1](labels)]

    def __len__(self) -> int:
        return len(self._selectors)

    def _unfile(self, key: K, pair: Pair | None) -> None:
        if pair is None:
            self._unfiled.discard(key)
            return
        filed = self._by_pair.get(pair)
        if filed is not None:
            filed.discard(key)
            if not filed:
                del self._by_pair[pair]


def _matcher(selector: Mapping[str, Any] | None) -> LabelPredicate:
    """``match_labels`` with the selector parsed once (an unparsable one fails as it would)."""
    try:
        predicate = label_predicate(selector_to_string(selector))
    except Exception:  # noqa: BLE001 - raised again by match_labels, at match time
        return functools.partial(match_labels, selector)
    return _everything if predicate is None else predicate


def _everything(labels: Mapping[str, str]) -> bool:
    return True


def _pairs(selector: Mapping[str, Any] | None) -> list[Pair]:
    """The ``matchLabels`` pairs, each of which every selected label map holds; none (always
    tried) unless all are plain (label-key and label-value characters), so that the selector's
    text form ``k=v,...`` reads back as exactly these equality requirements."""
    if not selector or not isinstance(selector, Mapping):
        return []
    match = selector.get("matchLabels")
    if not isinstance(match, Mapping):
        return []
    pairs = [(k, str(v)) for k, v in match.items()]
    if not all(isinstance(k, str) and _PLAIN_KEY.fullmatch(k) for k, _ in pairs):
        return []
    if not all(_PLAIN_VALUE.fullmatch(v) for _, v in pairs):
        return []
    return pairs


_PLAIN_KEY = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_./]*")
_PLAIN_VALUE = re.compile(r"[-A-Za-z0-9_.]*")

"""JSON text kept in memory is kept at its own size (``kube/json_text.py``)."""

from __future__ import annotations

import tracemalloc

from nemotron_operator.kube import json_text


def test_a_short_text_takes_about_its_own_size_in_memory() -> None:
    value = {"metadata": {"name": "nano", "labels": {"app": "x" * 200}}}
    tracemalloc.start()
    try:
        texts = [json_text.dumps(value) for _ in range(200)]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = len(texts[0])
    assert 200 < size < 300
    # orjson's own bytes take at least 4 KiB each; a copy takes its length and a header.
    assert held < 200 * (size + 200)


def test_sorted_keys_make_equal_values_equal_texts_and_loads_reads_them_back() -> None:
    a, b = {"b": 1, "a": [1, {"y": 2, "x": 3}]}, {"a": [1, {"x": 3, "y": 2}], "b": 1}
    assert json_text.dumps(a, sort_keys=True) == json_text.dumps(b, sort_keys=True)
    assert json_text.loads(json_text.dumps(a)) == a

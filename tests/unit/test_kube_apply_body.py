"""A server-side apply body reads back, as YAML, exactly as the object it was made from: any
string, including characters beyond U+FFFF (which ``json.dumps`` writes as surrogate pairs, a
YAML decoder's error), control characters and YAML 1.1's line breaks."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nemotron_operator.kube.client import apply_body

# What the property-based bad-input test found: a spec.model.servedName kube-apiserver stored,
# and the StatefulSet carrying it refused with "found invalid Unicode character escape code".
FOUND = "&Í\x1cäU¸F¸ò\x99i\U0009108d"


def test_the_served_name_that_was_refused_reads_back_unchanged() -> None:
    body = {"spec": {"args": ["--served-model-name", FOUND], "emoji": "\U0001f680"}}
    text = apply_body(body)
    assert text.isascii()
    assert "\\ud" not in text.lower()  # no surrogate escape, which YAML refuses
    assert "\\U0009108d" in text
    assert yaml.safe_load(text) == body


def test_the_plain_json_of_the_same_body_does_not_read_back() -> None:
    """Why the encoding exists: the surrogate pair becomes two lone surrogates (PyYAML) or a
    refusal (kube-apiserver's go-yaml)."""
    assert yaml.safe_load(json.dumps({"name": FOUND})) != {"name": FOUND}


@pytest.mark.slow  # 300 examples: ~16 s; in the suite, not in make test-fast
@settings(max_examples=300, deadline=None)
@given(
    obj=st.dictionaries(
        st.text(max_size=8),
        st.one_of(st.text(), st.lists(st.text(), max_size=3), st.integers(), st.booleans()),
        max_size=4,
    )
)
def test_any_object_reads_back_unchanged(obj: dict[str, Any]) -> None:
    text = apply_body(obj)
    assert text.isascii()
    assert yaml.safe_load(text) == obj

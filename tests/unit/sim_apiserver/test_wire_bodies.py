"""YAML request bodies (server-side apply): JSON read as JSON, other YAML with libyaml, and the
same objects as PyYAML's pure-Python safe loader reads for what clients send."""

from __future__ import annotations

import json

import pytest
import yaml

from nemotron_sim.apiserver.wire import load_yaml

KUBECTL_STYLE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web, "quoted": "yes"}
  annotations:
    note: |
      two
      lines
spec:
  ports:
  - port: 80
    targetPort: http
    protocol: TCP
  selector:
    app: web
  sessionAffinity: None
  publishNotReadyAddresses: true
  ipFamilies: [IPv4]
  extra: ~
  ratio: 0.5
  date: 2024-01-02
"""


def test_block_yaml_reads_as_the_safe_loader_reads_it() -> None:
    assert load_yaml(KUBECTL_STYLE.encode()) == yaml.safe_load(KUBECTL_STYLE)


def test_json_reads_as_json() -> None:
    body = {"a": [1, 2.5, "x", None, True], "b": {"c": "\u00e9"}, "big": 10**20, "e": 1e21}
    raw = json.dumps(body).encode()
    assert load_yaml(raw) == body
    # PyYAML (YAML 1.1) would read 1e+21 as a string; the API server reads JSON numbers.
    assert load_yaml(b' {"e": 1e+21}')["e"] == 1e21


@pytest.mark.parametrize(
    "text",
    [
        "{a: 1, b: [x, y]}",  # flow-style YAML that is not JSON
        '{"n": NaN, "i": Infinity}',  # JSON's constants are plain strings in YAML
        "[1, 2, {k: v}]",
        "- a\n- b\n",
    ],
)
def test_yaml_that_is_not_json_reads_as_yaml(text: str) -> None:
    assert load_yaml(text.encode()) == yaml.safe_load(text)


def test_invalid_yaml_raises_a_yaml_error() -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml(b"a: [1, 2\nb: }")

"""The stand-in kubelet's check of secretKeyRef (CreateContainerConfigError), pure."""

from __future__ import annotations

from nemotron_sim.kubelet.podenv import missing_secret

CONTAINER = {
    "name": "download",
    "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
}


def test_missing_secret_and_key_are_reported_like_the_kubelet() -> None:
    assert missing_secret(CONTAINER, "ai", {}) == 'secret "hf" not found'
    wrong_key = {"hf": {"data": {"other": "eA=="}}}
    assert missing_secret(CONTAINER, "ai", wrong_key) == "couldn't find key token in Secret ai/hf"
    assert missing_secret(CONTAINER, "ai", {"hf": {"data": {"token": "eA=="}}}) is None


def test_optional_references_and_plain_env_never_block() -> None:
    optional = {
        "env": [
            {"name": "A", "value": "1"},
            {
                "name": "B",
                "valueFrom": {"secretKeyRef": {"name": "x", "key": "k", "optional": True}},
            },
        ]
    }
    assert missing_secret(optional, "ai", {}) is None

"""The status merge patch removes a nested figure that became None (a JSON merge patch merges
nested objects, so leaving the key out would keep the stale value)."""

from __future__ import annotations

from nemotron_operator.controller.observability import scrape_targets
from nemotron_operator.controller.reconcile import _merge_patch


def test_nested_keys_no_longer_set_are_sent_as_null() -> None:
    old = {"phase": "Ready", "throughput": {"generationTokensPerSecond": 5.0,
                                            "mtpAcceptanceRate": 0.8}, "gone": 1}  # fmt: skip
    new = {"phase": "Ready", "throughput": {"generationTokensPerSecond": 0.0}}
    assert _merge_patch(old, new) == {
        "phase": "Ready",
        "throughput": {"generationTokensPerSecond": 0.0, "mtpAcceptanceRate": None},
        "gone": None,
    }


def test_only_ready_leaders_with_an_ip_are_scraped() -> None:
    def pod(name: str, *, ready: bool = True, role: str = "leader", ip: str | None = "127.9.0.1"):
        return {
            "metadata": {"name": name, "uid": f"uid-{name}",
                         "labels": {"serving.nemotron.io/role": role}},
            "status": {"podIP": ip, "conditions": [{"type": "Ready",
                                                    "status": "True" if ready else "False"}]},
        }  # fmt: skip

    targets = scrape_targets(
        [pod("a-0"), pod("a-1", ready=False), pod("a-2", role="worker"), pod("a-3", ip=None)]
    )
    assert [(t.pod, t.key, t.url) for t in targets] == [
        ("a-0", "uid-a-0", "http://127.9.0.1:8000/metrics")
    ]

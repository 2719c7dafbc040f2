from __future__ import annotations

from nemotron_sim.kubelet.podenv import container_env, expand, expanded_argv

POD = {
    "metadata": {
        "name": "sv-0-w-1",
        "namespace": "ai",
        "labels": {"apps.kubernetes.io/pod-index": "1"},
    },
    "spec": {"nodeName": "sim-h200-3"},
    "status": {"podIP": "127.100.0.9"},
}


def test_expansion_follows_kubernetes_rules() -> None:
    env = {"A": "x", "B": "y"}
    assert expand("$(A)-$(B)", env) == "x-y"
    assert expand("$(MISSING)", env) == "$(MISSING)"
    assert expand("$$(A)", env) == "$(A)"
    assert expand("cost $5", env) == "cost $5"


def test_env_from_values_and_field_refs() -> None:
    container = {
        "env": [
            {
                "name": "RANK",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}
                },
            },
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "WHO", "value": "rank-$(RANK)"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}},
        ]
    }
    assert container_env(POD, container) == {"RANK": "1", "IP": "127.100.0.9", "WHO": "rank-1"}


def test_command_and_args_are_expanded() -> None:
    container = {
        "command": ["vllm", "serve"],
        "args": ["m", "--node-rank", "$(NODE_RANK)", "--host", "$(POD_IP)"],
        "env": [
            {
                "name": "NODE_RANK",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}
                },
            },
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
    }
    assert expanded_argv(POD, container) == [
        "vllm",
        "serve",
        "m",
        "--node-rank",
        "1",
        "--host",
        "127.100.0.9",
    ]


def test_an_entry_without_value_or_source_is_set_empty_as_the_kubelet_does() -> None:
    # What kube-apiserver stores for `value: ""` (omitempty drops it); KEDA refuses to start
    # when WATCH_NAMESPACE is unset, and watches every namespace when it is empty.
    container = {"env": [{"name": "WATCH_NAMESPACE"}, {"name": "A", "value": "x"}]}
    assert container_env({}, container) == {"WATCH_NAMESPACE": "", "A": "x"}

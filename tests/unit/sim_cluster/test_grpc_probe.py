"""The simulated kubelet's gRPC probe (nemotron_sim/kubelet/grpc_probe.py): its HTTP/2 and
HPACK encoding by the RFCs' own examples, the health status read from the answer, and the
probe spec read from a pod. (The probe against a real gRPC server: the endpoint picker's, in
tests/integration/addons/test_gateway_picker.py.)"""

from __future__ import annotations

import asyncio

from nemotron_sim.kubelet.grpc_probe import (
    PREFACE,
    frame,
    grpc_probe,
    health_status,
    hpack_integer,
    hpack_literal,
    request,
)
from nemotron_sim.kubelet.probes import ProbeSpec


def test_hpack_integers_and_literals_as_rfc_7541_encodes_them() -> None:
    assert hpack_integer(10, 5) == b"\x0a"  # C.1.1
    assert hpack_integer(1337, 5) == b"\x1f\x9a\x0a"  # C.1.2
    assert hpack_integer(42, 8) == b"\x2a"  # C.1.3
    # C.2.3: literal never indexed, "password: secret"
    assert hpack_literal("password", "secret") == bytes.fromhex(
        "100870617373776f726406736563726574"
    )


def test_the_request_is_a_preface_settings_headers_and_one_data_frame() -> None:
    raw = request("10.0.0.1:9003", "envoy.service.ext_proc.v3.ExternalProcessor")
    assert raw.startswith(PREFACE + frame(0x4, 0, 0))
    rest = raw[len(PREFACE) + 9 :]
    kinds = []
    while rest:
        length = int.from_bytes(rest[:3], "big")
        kinds.append((rest[3], rest[4], int.from_bytes(rest[5:9], "big")))
        payload, rest = rest[9 : 9 + length], rest[9 + length :]
    assert kinds == [(0x1, 0x4, 1), (0x0, 0x1, 1)]  # HEADERS END_HEADERS, DATA END_STREAM
    service = b"envoy.service.ext_proc.v3.ExternalProcessor"
    assert (
        payload
        == b"\x00"
        + (len(service) + 2).to_bytes(4, "big")
        + b"\x0a"
        + bytes([len(service)])
        + service
    )


def test_the_health_status_is_field_one() -> None:
    assert health_status(b"\x08\x01") == 1
    assert health_status(b"\x08\x02") == 2
    assert health_status(b"") == 0


def test_a_grpc_probe_is_read_from_the_pod_and_fails_when_nothing_answers() -> None:
    spec = ProbeSpec.parse(
        {"grpc": {"port": 9003, "service": "x"}, "periodSeconds": 5}, {}, time_scale=0.1
    )
    assert spec is not None
    assert (spec.kind, spec.port, spec.service, spec.period) == ("grpc", 9003, "x", 0.5)
    ok, message = asyncio.run(grpc_probe("127.0.0.1", 1, "x", 1.0))
    assert not ok
    assert message.startswith('timeout: failed to connect service "127.0.0.1:1"')

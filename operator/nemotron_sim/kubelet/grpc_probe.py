"""The kubelet's ``grpc`` probe: one ``grpc.health.v1.Health/Check`` call in cleartext HTTP/2
(prior knowledge, as the kubelet's gRPC prober dials), SERVING or not.

A gRPC client library is not needed for one unary call: the request is a client preface, a
SETTINGS frame, a HEADERS frame (HPACK literals, never indexed, no Huffman coding) and one
DATA frame; of the answer only the DATA frame's message matters (``HealthCheckResponse``, field
1 the status: 1 SERVING, 2 NOT_SERVING, 3 SERVICE_UNKNOWN), and a call without one (an error
status in trailers) is not serving. Failure messages are the kubelet's (pkg/probe/grpc).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}
SERVING = 1
PATH = "/grpc.health.v1.Health/Check"


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes((kind, flags))
        + struct.pack(">I", stream)
        + payload
    )


def hpack_integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out, value = [first | limit], value - limit
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes((*out, value))


def hpack_literal(name: str, value: str) -> bytes:
    """A header field as a literal never indexed with a literal name (RFC 7541 §6.2.3)."""
    encoded = b"\x10"
    for text in (name, value):
        raw = text.encode()
        encoded += hpack_integer(len(raw), 7) + raw
    return encoded


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def request(authority: str, service: str) -> bytes:
    fields = (
        (":method", "POST"), (":scheme", "http"), (":path", PATH), (":authority", authority),
        ("content-type", "application/grpc"), ("te", "trailers"),
    )  # fmt: skip
    block = b"".join(hpack_literal(name, value) for name, value in fields)
    message = b"\x0a" + varint(len(service.encode())) + service.encode() if service else b""
    body = b"\x00" + struct.pack(">I", len(message)) + message
    return (
        PREFACE
        + frame(SETTINGS, 0, 0)
        + frame(HEADERS, END_HEADERS, 1, block)
        + frame(DATA, END_STREAM, 1, body)
    )


def health_status(message: bytes) -> int:
    """``HealthCheckResponse.status`` (field 1, a varint); 0 (UNKNOWN) when absent."""
    at = 0
    while at < len(message):
        key, at = _varint(message, at)
        if key == 0x08:
            value, _ = _varint(message, at)
            return value
        wire = key & 0x7
        if wire == 0:
            _, at = _varint(message, at)
        elif wire == 2:
            length, at = _varint(message, at)
            at += length
        else:
            return 0
    return 0


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(data):
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    return value, at


async def _call(host: str, port: int, service: str) -> int | None:
    """The health status the server answered, or None for a call that ended without one."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(request(f"{host}:{port}", service))
        await writer.drain()
        body = b""
        while True:
            head = await reader.readexactly(9)
            length = int.from_bytes(head[:3], "big")
            kind, flags, stream = head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            payload = await reader.readexactly(length)
            if kind == SETTINGS and not flags & ACK:
                writer.write(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                writer.write(frame(PING, ACK, 0, payload))
            elif kind == DATA and stream == 1:
                body += payload
            elif kind == GOAWAY or (kind == RST_STREAM and stream == 1):
                return None
            if stream == 1 and kind in (DATA, HEADERS) and flags & END_STREAM:
                break
        if len(body) < 5:
            return None
        return health_status(body[5 : 5 + int.from_bytes(body[1:5], "big")])
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def grpc_probe(host: str, port: int, service: str, seconds: float) -> tuple[bool, str]:
    """(success, failure message as the kubelet words it)."""
    address = f"{host}:{port}"
    try:
        status = await asyncio.wait_for(_call(host, port, service), seconds)
    except TimeoutError:
        return False, f"timeout: health rpc did not complete within {seconds:g}s"
    except (OSError, asyncio.IncompleteReadError) as error:
        return False, f'timeout: failed to connect service "{address}" within {seconds:g}s: {error}'
    if status == SERVING:
        return True, ""
    named = "an error" if status is None else STATUS.get(status, str(status))
    return False, f'service unhealthy (responded with "{named}")'

"""An HTTPS probe is answered without verifying the server's certificate, as the kubelet does
("the kubelet sends an HTTPS request skipping the certificate verification"): KEDA's metrics
adapter serves its /readyz with a certificate of KEDA's own CA, which no one on this machine
trusts."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import aiohttp
from aiohttp import web

from nemotron_sim.kubelet.probes import ProbeSpec, probe_once
from sim_cluster.controlplane.pki import Authority


async def serve_https(tmp_path: Path) -> tuple[web.AppRunner, int]:
    authority = Authority(tmp_path / "ca", datetime.datetime.now(datetime.UTC))
    pair = authority.issue("server", "server", server=True, ips=("127.0.0.1",))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pair.cert, pair.key)
    app = web.Application()

    async def ready(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.router.add_get("/readyz", ready)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    return runner, int(port)


def spec(scheme: str, port: int) -> ProbeSpec:
    container = {"ports": [{"name": "https", "containerPort": port}]}
    probe = {"httpGet": {"path": "/readyz", "port": "https", "scheme": scheme}}
    parsed = ProbeSpec.parse(probe, container, 1.0)
    assert parsed is not None
    return parsed


async def test_an_https_probe_skips_certificate_verification(tmp_path: Path) -> None:
    runner, port = await serve_https(tmp_path)
    try:
        async with aiohttp.ClientSession() as session:
            ok, message = await probe_once(spec("HTTPS", port), "127.0.0.1", session)
            assert (ok, message) == (True, "")
            # The control: plain HTTP to the TLS port fails.
            ok, message = await probe_once(spec("HTTP", port), "127.0.0.1", session)
            assert not ok
    finally:
        await runner.cleanup()

"""A tiny workload for the simulated cluster's process runner (run through the image mapping).

Lists the ConfigMaps of its namespace with the ServiceAccount kubeconfig the kubelet gives it
(``KUBECONFIG``), prints the names, serves ``/healthz`` on the pod IP for probes, and records the
signals it gets in ``$SIGNAL_LOG``. A 403 is printed and makes it exit 1. ``EXIT_AFTER`` seconds
and ``EXIT_CODE`` make it exit on its own; ``TERM_DELAY`` makes it linger after SIGTERM;
``UNHEALTHY_AFTER`` seconds makes ``/livez`` answer 500; ``BIND_HOST``/``PORT`` override where
it listens (default: the pod IP, port 8080).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import yaml


def record(text: str) -> None:
    target = os.environ.get("SIGNAL_LOG")
    if target:
        with Path(target).open("a") as handle:
            handle.write(f"{text} pid={os.getpid()}\n")


def list_configmaps() -> list[str]:
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    cluster = config["clusters"][0]["cluster"]
    server = cluster["server"]
    authority = cluster.get("certificate-authority-data")
    context = (
        ssl.create_default_context(cadata=base64.b64decode(authority).decode())
        if authority
        else None
    )
    token = config["users"][0]["user"].get("token", "")
    namespace = os.environ.get("POD_NAMESPACE", "default")
    url = f"{server}/api/v1/namespaces/{namespace}/configmaps"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - loopback API
    with urllib.request.urlopen(request, timeout=5, context=context) as response:  # noqa: S310
        body: dict[str, Any] = json.load(response)
    return [item["metadata"]["name"] for item in body.get("items", [])]


STARTED = time.monotonic()


class Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        unhealthy_after = os.environ.get("UNHEALTHY_AFTER")
        failing = unhealthy_after and time.monotonic() - STARTED > float(unhealthy_after)
        code = 500 if self.path == "/livez" and failing else 200
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"ok" if code == 200 else b"unhealthy")

    def log_message(self, *args: Any) -> None:
        pass


def main() -> int:
    def on_term(signum: int, frame: Any) -> None:
        record("SIGTERM")
        print("got SIGTERM", flush=True)
        time.sleep(float(os.environ.get("TERM_DELAY", "0")))
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    record("started")
    mounts = json.loads(os.environ.get("NEMOTRON_SIM_MOUNTS", "{}"))
    print(f"mounts: {sorted(mounts)}", flush=True)
    print(f"greeting: {os.environ.get('GREETING', '')}", flush=True)
    try:
        names = list_configmaps()
    except urllib.error.HTTPError as error:
        print(f"listing failed: {error.code} {json.load(error).get('message')}", flush=True)
        return 1
    print(f"listed {len(names)} configmaps: {', '.join(names)}", flush=True)
    port = int(os.environ.get("PORT", "8080"))
    host = os.environ.get("BIND_HOST") or os.environ.get("NEMOTRON_SIM_POD_IP") or "127.0.0.1"
    server = HTTPServer((host, port), Health)  # fails like any server whose port is taken
    threading.Thread(target=server.serve_forever, daemon=True).start()
    exit_after = os.environ.get("EXIT_AFTER")
    if exit_after:
        time.sleep(float(exit_after))
        print("exiting on purpose", flush=True)
        return int(os.environ.get("EXIT_CODE", "3"))
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())

"""A stand-in for the ingress in front of a NemotronDeployment scaled to zero, as far as
examples/nano-keda.yaml's KEDA query reads it: it answers every request (whether or not a replica
runs, as an ingress does) and counts them as ingress-nginx does,
``nginx_ingress_controller_requests{namespace, ingress}``, on ``/metrics`` for a real Prometheus.
The metrics answer carries the text format's Content-Type: Prometheus 3.x refuses a scrape
without one ("non-compliant scrape target sending blank Content-Type"), the target is down and
the query finds no series (KEDA reads that as 0, so nothing would ever wake).

Run as a pod's process by the simulated kubelet: ``python ingress_counter.py NAMESPACE INGRESS``;
it listens on its pod's address, port 8080.
"""

from __future__ import annotations

import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = 8080
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus' text exposition format


def main(namespace: str, ingress: str) -> None:
    lock = threading.Lock()
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                with lock:
                    value = count[0]
                body = (
                    "# TYPE nginx_ingress_controller_requests counter\n"
                    f'nginx_ingress_controller_requests{{namespace="{namespace}",'
                    f'ingress="{ingress}",status="503"}} {value}\n'
                ).encode()
            else:
                with lock:
                    count[0] += 1
                body = b"counted\n"
            self.send_response(200)
            self.send_header("Content-Type", TEXT_FORMAT)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    address = os.environ.get("NEMOTRON_SIM_POD_IP") or "127.0.0.1"
    ThreadingHTTPServer((address, PORT), Handler).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

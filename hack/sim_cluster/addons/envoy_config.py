"""What the ``gateway`` add-on programs into Envoy: from the Gateways of its class, the
HTTPRoutes attached to them and the InferencePools those routes send to, Envoy's listeners and
clusters (xDS resources, v3) — the part of a Gateway implementation with Inference Extension
support that a request meets, nothing more.

Per InferencePool an ``ext_proc`` filter (off by default, switched on by the pool's routes) asks
the pool's endpoint picker — the ready endpoints of the Service ``endpointPickerRef`` names —
for the pod, and the route's cluster goes where the picker's ``x-gateway-destination-endpoint``
header says. ``failureMode`` decides what a request meets when the picker does not answer:
``FailClose`` → the filter fails the request (Envoy answers 500), the cluster follows only
the picker's header (an original-destination cluster, as the Inference Extension's own Envoy
configuration has it: config/charts/standalone, test/testdata/envoy.yaml); ``FailOpen`` → the
filter lets the request through and the cluster (the pool's ready pods on its target port)
takes the header when present, else balances round-robin (Envoy's ``override_host`` policy).

Left out: hostnames, query-parameter matches, filters and weights of HTTPRoute rules (the first
InferencePool backend of a rule is its backend), TLS listeners, any status but the Gateways'
addresses (the program writes those).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

GATEWAY_CLASS = "nemotron-sim"
POOL_GROUP = "inference.networking.k8s.io"
DESTINATION = "x-gateway-destination-endpoint"
_TYPES = "type.googleapis.com/envoy."
_EXT_PROC = _TYPES + "extensions.filters.http.ext_proc.v3.ExternalProcessor"
Key = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class Pool:
    """An InferencePool as the gateway needs it: where its pods and its picker answer."""

    key: Key
    fail_open: bool
    endpoints: tuple[str, ...] = ()  # ready selected pods, host:port (the pool's target port)
    pickers: tuple[str, ...] = ()  # ready endpoint-picker endpoints, host:port


@dataclass(frozen=True)
class Snapshot:
    gateways: Sequence[dict[str, Any]]
    routes: Sequence[dict[str, Any]]
    pools: Mapping[Key, Pool] = field(default_factory=dict)


def served(gateways: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [g for g in gateways if (g.get("spec") or {}).get("gatewayClassName") == GATEWAY_CLASS]


def key(obj: Mapping[str, Any]) -> Key:
    md = obj.get("metadata") or {}
    return str(md.get("namespace") or ""), str(md.get("name") or "")


def rule_pool(route: Mapping[str, Any], rule: Mapping[str, Any]) -> Key | None:
    """The InferencePool a route's rule sends to: its first such backend."""
    for ref in rule.get("backendRefs") or []:
        if ref.get("group") == POOL_GROUP and ref.get("kind") == "InferencePool":
            return str(ref.get("namespace") or key(route)[0]), str(ref["name"])
    return None


def pools_routed(routes: Iterable[Mapping[str, Any]]) -> set[Key]:
    return {
        pool
        for route in routes
        for rule in (route.get("spec") or {}).get("rules") or []
        if (pool := rule_pool(route, rule)) is not None
    }


def listener_ports(gateway: Mapping[str, Any], route: Mapping[str, Any]) -> list[int]:
    """The ports of the gateway's HTTP listeners the route attaches to (none if it does not)."""
    route_ns = key(route)[0]
    gw_ns, gw_name = key(gateway)
    ports = []
    for parent in (route.get("spec") or {}).get("parentRefs") or []:
        if parent.get("kind", "Gateway") != "Gateway" or parent.get("name") != gw_name:
            continue
        if str(parent.get("namespace") or route_ns) != gw_ns:
            continue
        for listener in (gateway.get("spec") or {}).get("listeners") or []:
            if listener.get("protocol") != "HTTP":
                continue
            if parent.get("sectionName") not in (None, listener.get("name")):
                continue
            allowed = ((listener.get("allowedRoutes") or {}).get("namespaces") or {}).get("from")
            if allowed == "All" or (allowed in (None, "Same") and route_ns == gw_ns):
                ports.append(int(listener["port"]))
    return ports


def route_matches(rule: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A rule's matches as Envoy route matches (HTTPRoute's default: PathPrefix /)."""
    out = []
    for match in rule.get("matches") or [{}]:
        path = match.get("path") or {"type": "PathPrefix", "value": "/"}
        value = str(path.get("value") or "/")
        if path.get("type") == "Exact":
            envoy: dict[str, Any] = {"path": value}
        elif path.get("type") == "RegularExpression":
            envoy = {"safe_regex": {"regex": value}}
        elif value.rstrip("/"):
            envoy = {"path_separated_prefix": value.rstrip("/")}
        else:
            envoy = {"prefix": "/"}
        headers = [
            {
                "name": h["name"].lower(),
                "string_match": {"safe_regex": {"regex": h["value"]}}
                if h.get("type") == "RegularExpression"
                else {"exact": h["value"]},
            }
            for h in match.get("headers") or []
        ]
        if match.get("method"):
            headers.append({"name": ":method", "string_match": {"exact": match["method"]}})
        if headers:
            envoy["headers"] = headers
        out.append(envoy)
    return out


def _precedence(route: dict[str, Any]) -> tuple[int, int, int]:
    match = route["match"]
    exact = 1 if "path" in match else 0
    length = len(str(match.get("path") or match.get("path_separated_prefix") or ""))
    return (-exact, -length, -len(match.get("headers") or []))


def name(kind: str, pool: Key) -> str:
    return f"{kind}/{pool[0]}/{pool[1]}"


def routes_by_port(snapshot: Snapshot) -> dict[int, list[dict[str, Any]]]:
    by_port: dict[int, list[dict[str, Any]]] = {}
    for gateway in served(snapshot.gateways):
        for listener in (gateway.get("spec") or {}).get("listeners") or []:
            if listener.get("protocol") == "HTTP":
                by_port.setdefault(int(listener["port"]), [])
        for route in snapshot.routes:
            ports = listener_ports(gateway, route)
            for rule in (route.get("spec") or {}).get("rules") or []:
                pool = rule_pool(route, rule)
                if pool is None or pool not in snapshot.pools:
                    continue
                action = {
                    "route": {"cluster": name("pool", pool), "timeout": "300s"},
                    "typed_per_filter_config": {
                        name("epp", pool): {
                            "@type": _TYPES + "config.route.v3.FilterConfig",
                            "config": {},
                        }
                    },
                }
                for port in ports:
                    by_port[port].extend({"match": m, **action} for m in route_matches(rule))
    return {p: sorted(r, key=_precedence) for p, r in by_port.items()}


def ext_proc(pool: Pool) -> dict[str, Any]:
    return {
        "name": name("epp", pool.key),
        "disabled": True,
        "typed_config": {
            "@type": _EXT_PROC,
            "grpc_service": {
                "envoy_grpc": {"cluster_name": name("epp", pool.key)},
                "timeout": "10s",
            },
            "failure_mode_allow": pool.fail_open,
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
    }


def listeners(snapshot: Snapshot, address: str) -> list[dict[str, Any]]:
    filters = [ext_proc(pool) for _, pool in sorted(snapshot.pools.items())]
    router = {
        "name": "envoy.filters.http.router",
        "typed_config": {"@type": _TYPES + "extensions.filters.http.router.v3.Router"},
    }
    out = []
    for port, routes in sorted(routes_by_port(snapshot).items()):
        hcm = {
            "@type": _TYPES + "extensions.filters.network.http_connection_manager.v3"
            ".HttpConnectionManager",
            "stat_prefix": f"http-{port}",
            "route_config": {
                "name": f"http-{port}",
                "virtual_hosts": [{"name": "all", "domains": ["*"], "routes": routes}],
            },
            "http_filters": [*filters, router],
        }
        out.append(
            {
                "@type": _TYPES + "config.listener.v3.Listener",
                "name": f"http-{port}",
                "address": {"socket_address": {"address": address, "port_value": port}},
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
        )
    return out


def _assignment(cluster: str, endpoints: Iterable[str]) -> dict[str, Any]:
    lb_endpoints = []
    for endpoint in endpoints:
        host, port = endpoint.rsplit(":", 1)
        address = {"socket_address": {"address": host, "port_value": int(port)}}
        lb_endpoints.append({"endpoint": {"address": address}})
    return {"cluster_name": cluster, "endpoints": [{"lb_endpoints": lb_endpoints}]}


def _policy(extension: str, message: str, **config: Any) -> dict[str, Any]:
    typed = {"@type": _TYPES + f"extensions.load_balancing_policies.{message}", **config}
    return {"policies": [{"typed_extension_config": {"name": extension, "typed_config": typed}}]}


def clusters(snapshot: Snapshot) -> list[dict[str, Any]]:
    out = []
    for _, pool in sorted(snapshot.pools.items()):
        backend = name("pool", pool.key)
        if pool.fail_open:
            round_robin = _policy(
                "envoy.load_balancing_policies.round_robin", "round_robin.v3.RoundRobin"
            )
            out.append(
                {
                    "name": backend,
                    "type": "STATIC",
                    "connect_timeout": "5s",
                    "load_assignment": _assignment(backend, pool.endpoints),
                    "load_balancing_policy": _policy(
                        "envoy.load_balancing_policies.override_host",
                        "override_host.v3.OverrideHost",
                        override_host_sources=[{"header": DESTINATION}],
                        fallback_policy=round_robin,
                    ),
                }
            )
        else:
            out.append(
                {
                    "name": backend,
                    "type": "ORIGINAL_DST",
                    "connect_timeout": "5s",
                    "lb_policy": "CLUSTER_PROVIDED",
                    "original_dst_lb_config": {
                        "use_http_header": True,
                        "http_header_name": DESTINATION,
                    },
                }
            )
        picker = name("epp", pool.key)
        options = {
            "@type": _TYPES + "extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {"http2_protocol_options": {}},
        }
        out.append(
            {
                "name": picker,
                "type": "STATIC",
                "connect_timeout": "1s",
                "typed_extension_protocol_options": {
                    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": options
                },
                "load_assignment": _assignment(picker, pool.pickers),
            }
        )
    return [{"@type": _TYPES + "config.cluster.v3.Cluster", **c} for c in out]


def bootstrap(lds: str, cds: str) -> dict[str, Any]:
    """Envoy's bootstrap: listeners and clusters from files the program replaces (xDS from the
    filesystem: Envoy reloads a file when another is moved over it)."""

    def source(path: str) -> dict[str, Any]:
        return {"resource_api_version": "V3", "path_config_source": {"path": path}}

    return {
        "node": {"id": "nemotron-sim-gateway", "cluster": "nemotron-sim-gateway"},
        "dynamic_resources": {"lds_config": source(lds), "cds_config": source(cds)},
    }

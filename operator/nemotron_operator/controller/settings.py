"""``OperatorConfig``: every knob of ``nemotron-operator run``, from flags and environment.

Each flag has an environment variable ``NEMOTRON_OPERATOR_<FLAG>`` (dashes → underscores,
upper case); a flag given on the command line wins over the environment, which wins over the
default. Namespaces are a comma-separated list; empty means all namespaces.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from nemotron_operator.api import DEFAULT_IMAGE

ENV_PREFIX = "NEMOTRON_OPERATOR_"
IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"


@dataclass(frozen=True)
class OperatorConfig:
    namespaces: tuple[str, ...] = ()  # () = all namespaces
    resync_seconds: float = 60.0  # the timer: every object is reconciled this often
    log_format: str = "plain"  # plain | json
    log_level: str = "INFO"
    bind_address: str = "0.0.0.0"  # noqa: S104 (a pod serves its probes on its own IP)
    health_port: int = 8080
    metrics_port: int = 8081
    default_image: str = DEFAULT_IMAGE
    standalone: bool = False  # True: no Lease (a second replica would fight this one)
    lease_name: str = "nemotron-operator"
    lease_namespace: str = "default"
    lease_seconds: float = 30.0
    # 16, as many as the floor's writes in flight: with 4, 1,000 deployments created at once
    # waited in the queue (converged in 2.08 × the floor's time, the operator busy 25 % of it);
    # with 16, 1.05 × (docs/benchmarks.md, full runs).
    workers: int = 16
    retry_base_seconds: float = 1.0  # first retry after a transient API error; doubles
    retry_max_seconds: float = 60.0
    liveness_stale_seconds: float = 0.0  # 0: 3 × resync_seconds + 60
    watch_error_backoffs: tuple[float, ...] = (1, 2, 4, 8, 15, 30, 30, 30, 30, 30)
    kubeconfig: str | None = None
    allow_remote_code: bool = False
    # spec.gateway: manage InferencePools, their endpoint pickers and HTTPRoutes (the chart sets
    # it with rbac.inferenceGateway, which grants those kinds; without it they are never read).
    inference_gateway: bool = False
    # /metrics only for callers kube-apiserver authenticates and RBAC allows (TokenReview and
    # SubjectAccessReview, controller/runtime/metrics_auth.py). The chart turns it on by default.
    metrics_auth: bool = False
    # capacity.gpu.allocation DRA: ResourceClaimTemplates written, ResourceSlices and
    # ResourceClaims watched by the GPU inventory (the chart sets it with rbac.dra, which grants
    # them; without it those kinds are never read).
    dra: bool = False
    # The metrics scraper (docs/observability.md): every serving pod's /metrics this often
    # (0: off), a timeout per pod, pods scraped at once, and the plan check's shortfall threshold.
    scrape_seconds: float = 30.0
    # A deployment with no traffic and no autoscaler is scraped this often instead (None: 4 ×
    # scrape_seconds; 0: always every scrape_seconds): at 1,000 idle deployments the scrapes
    # were most of the operator's idle CPU (docs/benchmarks.md).
    scrape_quiet_seconds: float | None = None
    scrape_timeout_seconds: float = 2.0
    scrape_concurrency: int = 16
    plan_shortfall_threshold: float = 0.05
    # A status write that is nothing but a step of progress before Ready waits at most this
    # long, so that steps in quick succession are written together (0: each at once;
    # controller/reconcile/progress_hold.py).
    progress_hold_seconds: float = 5.0
    # Unique per process: two local processes share a host name, and a restarted process must
    # not mistake the Lease its predecessor held for its own.
    # In a pod: its name (POD_NAME from the downward API, else HOSTNAME, which the runtime sets
    # to it). Never the user's name: a UID may have no passwd entry.
    identity: str = field(
        default_factory=lambda: (
            f"{os.environ.get('POD_NAME') or os.environ.get('HOSTNAME') or 'local'}-{os.getpid()}"
        )
    )

    @property
    def liveness_stale_after(self) -> float:
        if self.liveness_stale_seconds > 0:
            return self.liveness_stale_seconds
        return 3 * self.resync_seconds + 60.0


def _env(environ: Mapping[str, str], flag: str) -> str | None:
    return environ.get(ENV_PREFIX + flag.replace("-", "_").upper())


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``run`` flags (defaults are applied by :func:`config_from_args`, after the
    environment, so that ``--help`` shows what each one does)."""
    add = parser.add_argument
    add("--namespaces", help="comma-separated namespaces to serve (default: all)")
    add("--resync-seconds", type=float, help="reconcile every object this often (default 60)")
    add("--log-format", choices=("plain", "json"), help="default: json in a pod, else plain")
    add("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="default INFO")
    add("--bind-address", help="address of the health and metrics servers (default 0.0.0.0)")
    add("--health-port", type=int, help="port of /healthz (default 8080; 0 picks one)")
    add("--metrics-port", type=int, help="port of /metrics (default 8081; 0 picks one)")
    add(
        "--metrics-auth",
        action="store_const",
        const="true",
        help="answer /metrics only to bearer tokens kube-apiserver authenticates (TokenReview) "
        "and authorizes for get on /metrics (SubjectAccessReview); the chart's default",
    )
    add("--default-image", help=f"vLLM image where the spec keeps the default {DEFAULT_IMAGE}")
    add(
        "--standalone",
        action="store_const",
        const="true",
        help="do not hold the single-replica Lease (development only)",
    )
    add("--lease-name", help="name of the coordination.k8s.io Lease (default nemotron-operator)")
    add("--lease-namespace", help="namespace of the Lease (default: POD_NAMESPACE or default)")
    add("--lease-seconds", type=float, help="Lease duration (default 30; renewed every third)")
    add("--workers", type=int, help="objects reconciled concurrently (default 16)")
    add("--retry-base-seconds", type=float, help="first retry delay after an API error (1)")
    add("--retry-max-seconds", type=float, help="longest retry delay (default 60)")
    add(
        "--liveness-stale-seconds",
        type=float,
        help="/healthz fails when no resync succeeded for this long (default 3 x resync + 60)",
    )
    add(
        "--watch-error-backoffs",
        help="comma-separated seconds kopf waits between failed watch/list requests before "
        "giving up (default 1,2,4,8,15,30,30,30,30,30: about 3 minutes)",
    )
    add("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, else in-cluster)")
    add("--scrape-seconds", type=float, help="scrape serving pods' /metrics this often (30; 0 off)")
    add(
        "--scrape-quiet-seconds",
        type=float,
        help="scrape deployments with no traffic and no autoscaling this often "
        "(default 4 x --scrape-seconds; 0: as often as the others)",
    )
    add("--scrape-timeout-seconds", type=float, help="timeout of one pod's scrape (default 2)")
    add("--scrape-concurrency", type=int, help="pods scraped at once (default 16)")
    add(
        "--progress-hold-seconds",
        type=float,
        help="a status write that is only a step of progress before Ready waits at most this "
        "long, so quick steps are written together (default 5; 0: each at once)",
    )
    add(
        "--plan-shortfall-threshold",
        type=float,
        help="PlanAccurate=False when vLLM allocates more than this fraction less KV cache than "
        "planned (default 0.05)",
    )
    add(
        "--allow-remote-code",
        action="store_const",
        const="true",
        help="allow --trust-remote-code for models outside the catalog",
    )
    add(
        "--inference-gateway",
        action="store_const",
        const="true",
        help="manage spec.gateway's InferencePools, endpoint pickers and HTTPRoutes (needs "
        "their RBAC: the chart's rbac.inferenceGateway)",
    )
    add(
        "--dra",
        action="store_const",
        const="true",
        help="serve capacity.gpu.allocation DRA: write ResourceClaimTemplates and count the GPUs "
        "of ResourceSlices and ResourceClaims (needs their RBAC: the chart's rbac.dra)",
    )


def config_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> OperatorConfig:
    environ = os.environ if environ is None else environ

    def pick(flag: str) -> str | None:
        value = getattr(args, flag.replace("-", "_"), None)
        if value is not None:
            return str(value)
        return _env(environ, flag)

    default = OperatorConfig()
    values: dict[str, object] = {}
    if (raw := pick("namespaces")) is not None:
        values["namespaces"] = tuple(ns.strip() for ns in raw.split(",") if ns.strip())
    for name in (
        "resync-seconds",
        "lease-seconds",
        "retry-base-seconds",
        "retry-max-seconds",
        "liveness-stale-seconds",
        "scrape-seconds",
        "scrape-quiet-seconds",
        "scrape-timeout-seconds",
        "plan-shortfall-threshold",
        "progress-hold-seconds",
    ):
        if (raw := pick(name)) is not None:
            values[name.replace("-", "_")] = float(raw)
    for name in ("health-port", "metrics-port", "workers", "scrape-concurrency"):
        if (raw := pick(name)) is not None:
            values[name.replace("-", "_")] = int(raw)
    for name in ("bind-address", "default-image", "lease-name", "kubeconfig"):
        if (raw := pick(name)) is not None:
            values[name.replace("-", "_")] = raw
    for name in ("standalone", "allow-remote-code", "inference-gateway", "metrics-auth", "dra"):
        if (raw := pick(name)) is not None:
            values[name.replace("-", "_")] = _truthy(raw)
    if (raw := pick("watch-error-backoffs")) is not None:
        values["watch_error_backoffs"] = tuple(float(x) for x in raw.split(",") if x.strip())
    in_pod = bool(environ.get(IN_CLUSTER_HOST))
    values["log_format"] = pick("log-format") or ("json" if in_pod else default.log_format)
    values["log_level"] = (pick("log-level") or default.log_level).upper()
    values["lease_namespace"] = (
        pick("lease-namespace") or environ.get("POD_NAMESPACE") or default.lease_namespace
    )
    config = OperatorConfig(**values)  # type: ignore[arg-type]
    _check(config)
    return config


def _check(config: OperatorConfig) -> None:
    if config.resync_seconds <= 0:
        raise ValueError("--resync-seconds must be > 0")
    if config.workers < 1:
        raise ValueError("--workers must be ≥ 1")
    if config.scrape_seconds < 0 or config.scrape_timeout_seconds <= 0:
        raise ValueError("--scrape-seconds must be ≥ 0 and --scrape-timeout-seconds > 0")
    quiet = config.scrape_quiet_seconds
    if quiet is not None and quiet != 0 and quiet < config.scrape_seconds:
        raise ValueError(
            "--scrape-quiet-seconds must be 0 (off) or ≥ --scrape-seconds "
            f"({config.scrape_seconds:g})"
        )
    if config.scrape_concurrency < 1:
        raise ValueError("--scrape-concurrency must be ≥ 1")
    if config.progress_hold_seconds < 0:
        raise ValueError("--progress-hold-seconds must be ≥ 0 (0 writes every step at once)")
    if not 0 < config.plan_shortfall_threshold < 1:
        raise ValueError("--plan-shortfall-threshold must be between 0 and 1, e.g. 0.05")
    if config.log_format not in ("plain", "json"):
        raise ValueError("--log-format must be plain or json")
    if not config.watch_error_backoffs:
        raise ValueError("--watch-error-backoffs needs at least one delay")

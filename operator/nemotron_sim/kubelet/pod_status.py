"""The pod status a kubelet reports, built from a small mutable model of the pod's containers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The order a real kubelet reports them in.
_CONDITION_ORDER = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)


@dataclass
class ContainerState:
    """One container as the simulated runtime sees it; ``state`` is a Kubernetes ContainerState."""

    name: str
    image: str
    state: dict[str, Any] = field(
        default_factory=lambda: {"waiting": {"reason": "PodInitializing"}}
    )
    ready: bool = False
    started: bool = False
    restart_count: int = 0
    last_state: dict[str, Any] = field(default_factory=dict)

    def run(self, now: str) -> None:
        self.state = {"running": {"startedAt": now}}
        self.started = True

    def exited(self, code: int, message: str, started_at: str, now: str) -> None:
        """A process instance ended; ``state.terminated`` until the kubelet acts on it."""
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": started_at,
            "finishedAt": now,
        }
        if message:
            terminated["message"] = message
        self.state = {"terminated": terminated}
        self.ready = False
        self.started = False

    def wait(self, reason: str, message: str) -> None:
        """Waiting to (re)start; the last terminated instance moves to ``lastState``."""
        if "terminated" in self.state:
            self.last_state = self.state
        self.state = {"waiting": {"reason": reason, "message": message}}
        self.ready = False
        self.started = False

    def restart(self, now: str) -> None:
        if "terminated" in self.state:
            self.last_state = self.state
        self.state = {"running": {"startedAt": now}}
        self.started = False

    def to_status(self, container_id: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "image": self.image,
            "imageID": f"sim://{self.image}",
            "containerID": f"sim://{container_id}",
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
            "state": self.state,
            "lastState": self.last_state,
        }


@dataclass
class PodModel:
    """What the kubelet knows about one pod; ``render`` turns it into ``status``."""

    uid: str
    host_ip: str
    pod_ip: str
    start_time: str
    qos_class: str
    init_containers: list[ContainerState]
    containers: list[ContainerState]
    phase: str = "Pending"
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)
    # spec.readinessGates' condition types, and those conditions as last read from the API
    # (others set them; the kubelet repeats them, as a merge patch replaces the whole list).
    readiness_gates: tuple[str, ...] = ()
    gate_conditions: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def for_pod(cls, pod: Mapping[str, Any], host_ip: str, pod_ip: str, now: str) -> PodModel:
        spec = pod.get("spec") or {}

        def states(key: str) -> list[ContainerState]:
            return [
                ContainerState(c.get("name", ""), c.get("image", "")) for c in spec.get(key) or []
            ]

        return cls(
            uid=pod.get("metadata", {}).get("uid", ""),
            host_ip=host_ip,
            pod_ip=pod_ip,
            start_time=now,
            qos_class=qos_class(pod),
            init_containers=states("initContainers"),
            containers=states("containers"),
            readiness_gates=tuple(
                str(g.get("conditionType")) for g in spec.get("readinessGates") or []
            ),
        )

    def observe_gates(self, pod: Mapping[str, Any]) -> bool:
        """Take the readiness-gate conditions from the pod as the API has it; True when they
        changed (the kubelet then writes the status again, with Ready recomputed)."""
        current = {
            str(c.get("type")): dict(c)
            for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type") in self.readiness_gates
        }
        if current == self.gate_conditions:
            return False
        self.gate_conditions = current
        return True

    def _gates_pass(self) -> bool:
        return all(
            self.gate_conditions.get(gate, {}).get("status") == "True"
            for gate in self.readiness_gates
        )

    def set_condition(self, kind: str, status: bool, now: str) -> None:
        value = "True" if status else "False"
        previous = self.transitions.get(kind)
        if previous is None or previous[0] != value:
            self.transitions[kind] = (value, now)

    def ready_overwritten(self, pod: Mapping[str, Any]) -> bool:
        """The server's Ready condition is not the one this model last reported."""
        mine = self.transitions.get("Ready")
        conditions = (pod.get("status") or {}).get("conditions") or []
        theirs = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
        return mine is not None and theirs is not None and theirs != mine[0]

    def render(self, now: str) -> dict[str, Any]:
        initialized = all("terminated" in c.state for c in self.init_containers)
        ready = initialized and all(c.ready for c in self.containers)
        # A merge patch replaces the whole list, so the scheduler's condition is repeated here.
        self.set_condition("PodScheduled", True, now)
        self.set_condition("PodReadyToStartContainers", True, now)
        self.set_condition("Initialized", initialized, now)
        self.set_condition("ContainersReady", ready, now)
        # As the kubelet: Ready needs the containers and every readiness gate's condition True.
        self.set_condition("Ready", ready and self._gates_pass(), now)
        conditions = [
            {"type": kind, "status": value, "lastTransitionTime": since}
            for kind in _CONDITION_ORDER
            for value, since in [self.transitions[kind]]
        ]
        conditions += [
            self.gate_conditions[g] for g in self.readiness_gates if g in self.gate_conditions
        ]
        status: dict[str, Any] = {
            "phase": self.phase,
            "conditions": conditions,
            "hostIP": self.host_ip,
            "hostIPs": [{"ip": self.host_ip}],
            "podIP": self.pod_ip,
            "podIPs": [{"ip": self.pod_ip}],
            "startTime": self.start_time,
            "qosClass": self.qos_class,
            "containerStatuses": [c.to_status(f"{self.uid}-{c.name}") for c in self.containers],
        }
        if self.init_containers:
            status["initContainerStatuses"] = [
                c.to_status(f"{self.uid}-{c.name}") for c in self.init_containers
            ]
        return status


def qos_class(pod: Mapping[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort, from cpu and memory requests and limits."""
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        for name in ("cpu", "memory"):
            if name in requests or name in limits:
                any_set = True
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"

"""The single-replica guard: a ``coordination.k8s.io`` Lease held by the active operator.

Why a Lease and not kopf peering: kopf peering (1.45) has no leader election — two operators at
the same priority both *freeze*, and at different priorities the lower one pauses; either way
it costs a keep-alive PATCH per minute on a cluster-scoped KopfPeering CRD that the chart would
have to install. A Lease is the Kubernetes convention (client-go leader election), needs only
get/create/update on one Lease in the operator's namespace, and lets a second replica started by
mistake wait as a hot standby instead of fighting: it takes over when the holder stops renewing.

Costs: one PUT per ``duration / 3`` seconds on the Lease (the only periodic write the operator
makes). A process that stops cleanly releases the Lease, so its successor starts at once; one
that is killed is succeeded after ``duration`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from nemotron_operator.kube import ApiError, KubeClient, writes
from nemotron_operator.kube.resources import LEASES
from nemotron_operator.kube.timestamps import parse_time

logger = logging.getLogger(__name__)


class LeaseGuard:
    def __init__(
        self, kube: KubeClient, *, namespace: str, name: str, identity: str, duration: float
    ) -> None:
        self._kube = kube
        self._namespace = namespace
        self._name = name
        self.identity = identity
        self.duration = max(1.0, duration)
        self.leader = asyncio.Event()
        self.holder: str | None = None
        self._renewed_at = -1e9  # event-loop time of the last successful take or renewal

    async def try_acquire(self) -> bool:
        """One attempt to take or renew the Lease; True while this process holds it."""
        now = datetime.now(UTC)
        lease = await self._kube.get(LEASES, self._namespace, self._name)
        if lease is not None:
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or None
            renewed = parse_time(spec.get("renewTime"))
            duration = float(spec.get("leaseDurationSeconds") or self.duration)
            expired = renewed is None or renewed + timedelta(seconds=duration) < now
            self.holder = holder
            if holder not in (None, self.identity) and not expired:
                return False
        # Creates it, or updates the version read: 409 if someone was faster.
        await writes.write_lease(
            self._kube,
            self._namespace,
            self._name,
            lease,
            identity=self.identity,
            duration=self.duration,
            now=now,
        )
        return True

    async def run(self) -> None:
        """Hold the Lease until cancelled; ``leader`` is set while held."""
        interval = self.duration / 3
        last_success = 0.0
        reported: str | None = None  # the holder last logged, so a standby logs once
        loop = asyncio.get_running_loop()
        while True:
            try:
                held = await self.try_acquire()
                now = loop.time()
                if held and self.leader.is_set() and now - self._renewed_at > self.duration:
                    logger.warning(
                        "Lease %s/%s renewed %.1f s after the previous renewal (duration %.0f s):"
                        " the event loop or the API server was slow; not acting meanwhile",
                        self._namespace,
                        self._name,
                        now - self._renewed_at,
                        self.duration,
                    )
                last_success = now
                if held:
                    self._renewed_at = now
            except ApiError as exc:
                held = self.leader.is_set() and loop.time() - last_success < self.duration * 2 / 3
                logger.warning("Lease %s/%s: %s", self._namespace, self._name, exc)
            if held and not self.leader.is_set():
                logger.info("holding Lease %s/%s as %s", self._namespace, self._name, self.identity)
                self.leader.set()
            elif not held and self.leader.is_set():
                logger.warning("lost Lease %s/%s to %s", self._namespace, self._name, self.holder)
                self.leader.clear()
            elif not held and self.holder != reported:
                logger.info(
                    "standing by: Lease %s/%s is held by %s",
                    self._namespace,
                    self._name,
                    self.holder,
                )
            reported = None if held else self.holder
            await asyncio.sleep(interval)

    def valid(self) -> bool:
        """Held and renewed within the Lease's duration. A holder whose renewals stalled (a
        blocked event loop, a slow API server) stops acting before a standby may take over."""
        loop = asyncio.get_running_loop()
        return self.leader.is_set() and loop.time() - self._renewed_at < self.duration

    async def release(self) -> None:
        if not self.leader.is_set():
            return
        self.leader.clear()
        try:
            lease = await self._kube.get(LEASES, self._namespace, self._name)
            if (
                lease is not None
                and (lease.get("spec") or {}).get("holderIdentity") == self.identity
            ):
                await writes.release_lease(self._kube, lease)
        except ApiError as exc:
            logger.warning("could not release Lease %s/%s: %s", self._namespace, self._name, exc)

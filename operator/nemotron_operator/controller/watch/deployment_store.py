"""``DeploymentStore``: the NemotronDeployments as kopf's watch delivered them, so that a
reconcile reads its object, and the resync timer finds every object, without a request.

kopf's ``on.event`` handler puts every event in (``controller/runtime/kopf_wiring.py``); the
reconcile puts in the answers of its own writes (status, finalizers), which are newer than any event
so far. kopf lists the objects when it starts and again after a ``410 Gone`` or a lost connection,
and marks listed objects with the event type ``None`` (kopf 1.45.2, ``_cogs/clients/watching.py``,
``continuous_watch``); an object deleted while kopf was not watching simply is not listed again. So
each listing starts a new epoch, and ``sweep`` (the resync timer, long after a listing has ended)
forgets what the latest listing did not mention. A sweep that runs while a listing is still arriving
forgets objects not listed *yet*: they come back with their listing event, and a reconcile in
between reads them with a GET (a miss costs one request, never a wrong answer).
"""

from __future__ import annotations

from typing import Any

from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import NEMOTRON_DEPLOYMENTS
from nemotron_operator.kube.store import ObjectKey, ObjectStore, object_key


class DeploymentStore(ObjectStore):
    def __init__(self) -> None:
        super().__init__(NEMOTRON_DEPLOYMENTS)
        self._epoch = 0
        self._listing = False  # the last event was part of a listing
        self._seen: dict[ObjectKey, int] = {}  # key → the epoch it was last heard of in

    def event(self, kind: str | None, obj: dict[str, Any]) -> None:
        """One event of kopf's watch: ``kind`` None for an object of a listing."""
        key = object_key(obj)
        if kind is None:
            if not self._listing:
                self._epoch += 1
                self._listing = True
            self.store(obj, snapshot=True)
        elif kind == "DELETED":
            self._listing = False
            self.drop(*key, (obj.get("metadata") or {}).get("resourceVersion"))
            self._seen.pop(key, None)
            return
        else:
            self._listing = False
            self.store(obj)
        self._seen[key] = self._epoch

    async def read(self, kube: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as kopf's watch delivered it; a GET when the store does not have it (yet)."""
        raw = self.get(namespace, name)
        if raw is None:
            raw = await kube.get(NEMOTRON_DEPLOYMENTS, namespace, name)
            if raw is not None:
                self.written(raw)
        return raw

    def written(self, obj: Any) -> None:
        """The answer of our own write to a NemotronDeployment."""
        if isinstance(obj, dict) and obj.get("metadata"):
            self.store(obj)
            self._seen[object_key(obj)] = self._epoch

    def forget(self, key: ObjectKey) -> None:
        """The server says it is gone (a 404 to a read or a write)."""
        self.remove(key)
        self._seen.pop(key, None)

    def sweep(self) -> list[ObjectKey]:
        """Forget the objects the latest listing did not mention; the keys forgotten."""
        self._listing = False
        gone = [key for key in self.object_keys() if self._seen.get(key, -1) < self._epoch]
        for key in gone:
            self.forget(key)
        return gone

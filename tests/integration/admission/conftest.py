"""Admission of NemotronDeployments by the real kube-apiserver.

The CRD in ``crds/`` is installed in the session's shared cluster (server-side apply, when it is
absent) and every case is a server-side dry run (``?dryRun=All``): kube-apiserver decodes,
prunes, defaults and validates the object — OpenAPI schema, CEL rules, transition rules — and
answers as it would for ``kubectl apply``, but stores nothing. Creates are POSTs; updates are
PUTs or merge PATCHes against objects that really exist in the package's namespace.

All of it runs over one keep-alive HTTPS connection (``apiserver.py``) in this process; the
package holds the cluster, its namespace and the CRD for all its tests, so ~600 cases cost a few
seconds, not a kubectl process each.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nemotron_operator.kube.transport import APPLY, MERGE
from tests.integration.admission.apiserver import CRDS, Answer, ApiServer, Cause
from tests.integration.admission.objects import CRD_NAME, crd_file, raw_bases

if TYPE_CHECKING:
    from tests.kube import KubeHandle

FIELD_MANAGER = "admission-tests"
# The cause kube-apiserver adds when a schema error (a wrong type, a missing required field, an
# unsupported enum value, too long, too many) kept it from running the CEL rules.
NOT_CHECKED = Cause(
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
    "FieldValueInvalid",
)


def established(crd: Any) -> bool:
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def wait_for(check: Any, what: str, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Admission:
    """kube-apiserver as the suite uses it: dry runs in the package's namespace."""

    api: ApiServer
    namespace: str
    crd: dict[str, Any]  # the NemotronDeployment CRD as kube-apiserver serves it
    cluster: KubeHandle | None = None  # for kubectl, as a user runs it

    def _body(self, obj: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(obj)
        body.setdefault("metadata", {})["namespace"] = self.namespace
        return body

    def create(self, obj: dict[str, Any], *, field_validation: str = "Strict") -> Answer:
        """A dry-run POST of ``obj`` (its namespace replaced by the package's)."""
        path = self.api.path(self.namespace)
        return self.api.dry_run("POST", path, self._body(obj), field_validation=field_validation)

    def update(self, obj: dict[str, Any], *, subresource: str | None = None) -> Answer:
        """A dry-run PUT of ``obj``, an object that exists (with its resourceVersion)."""
        path = self.api.path(self.namespace, obj["metadata"]["name"], subresource)
        return self.api.dry_run("PUT", path, self._body(obj))

    def patch(self, name: str, patch: dict[str, Any]) -> Answer:
        """A dry-run JSON merge patch of the existing object ``name``."""
        path = self.api.path(self.namespace, name)
        return self.api.dry_run("PATCH", path, patch, content_type=MERGE)

    def store(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Really create ``obj`` (its status, if any, written through /status); as stored."""
        body = self._body(obj)
        status = body.pop("status", None)
        answer = self.api.request("POST", self.api.path(self.namespace), body)
        assert answer.code == 201, answer
        stored: dict[str, Any] = answer.body
        if status is not None:
            stored["status"] = status
            path = self.api.path(self.namespace, stored["metadata"]["name"], "status")
            answer = self.api.request("PUT", path, stored)
            assert answer.code == 200, answer
            stored = answer.body
        return stored


def admitted(answer: Answer, code: int = 201) -> dict[str, Any]:
    """The object kube-apiserver would store; fail the test if it refused."""
    assert answer.code == code, f"refused, but should have been admitted: {answer}"
    body: dict[str, Any] = answer.body
    return body


def refused(answer: Answer, code: int = 422) -> Answer:
    """The refusal; fail the test if the object was admitted or refused otherwise."""
    assert answer.code == code, f"expected HTTP {code}: {answer}"
    assert answer.body["kind"] == "Status", answer
    assert answer.body["status"] == "Failure", answer
    assert answer.body["reason"] == {400: "BadRequest", 422: "Invalid"}[code], answer
    return answer


@contextlib.contextmanager
def _shared_cluster(request: pytest.FixtureRequest, workdir: Path) -> Iterator[KubeHandle]:
    """The session's shared cluster, held by this package for all its tests."""
    from tests.kube import SHARED_OPTIONS

    pool = request.getfixturevalue("cluster_pool")
    with pool.lease({**SHARED_OPTIONS, "purpose": "shared"}, workdir) as handle:
        yield handle


def apply_crd(api: ApiServer, crd: dict[str, Any]) -> dict[str, Any]:
    """Server-side apply ``crd`` and wait until kube-apiserver serves it (Established)."""
    name = crd["metadata"]["name"]
    answer = api.request(
        "PATCH", f"{CRDS}/{name}", crd,
        params={"fieldManager": FIELD_MANAGER}, content_type=APPLY,
    )  # fmt: skip
    assert answer.code in (200, 201), answer
    return served_crd(api, name)


def served_crd(api: ApiServer, name: str) -> dict[str, Any]:
    """The CRD ``name`` as kube-apiserver serves it, once it is Established."""

    def ready() -> dict[str, Any] | None:
        crd: dict[str, Any] = api.request("GET", f"{CRDS}/{name}").body
        return crd if established(crd) else None

    found: dict[str, Any] = wait_for(ready, f"CRD {name} to be established")
    return found


def delete_crd(api: ApiServer, name: str) -> None:
    answer = api.request("DELETE", f"{CRDS}/{name}")
    assert answer.code in (200, 202, 404), answer
    wait_for(lambda: api.request("GET", f"{CRDS}/{name}").code == 404, f"CRD {name} to go", 60)


@contextlib.contextmanager
def temporary_crd(api: ApiServer, crd: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A CRD of the test's own (a group no one else uses), deleted afterwards."""
    served = apply_crd(api, crd)
    try:
        yield served
    finally:
        delete_crd(api, crd["metadata"]["name"])


@pytest.fixture(scope="package")
def admission(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Admission]:
    """The project's CRD installed in the shared cluster, and a namespace of the package's own.

    The CRD is applied only when absent (another test may have installed it: it is left as it
    was) and removed afterwards only if this package installed it."""
    with _shared_cluster(request, tmp_path_factory.mktemp("admission")) as cluster:
        url, ca, token = cluster.call(
            lambda c: (c.control_plane.api_url, c.control_plane.ca_pem, c.control_plane.admin_token)
        )
        api = ApiServer(url, ca, token)
        installed_here = api.request("GET", f"{CRDS}/{CRD_NAME}").code == 404
        try:
            if installed_here:
                apply_crd(api, crd_file())
            served = served_crd(api, CRD_NAME)
            with cluster.namespace("admission") as namespace:
                yield Admission(api, namespace, served, cluster)
        finally:
            if installed_here:
                delete_crd(api, CRD_NAME)
            api.close()


@pytest.fixture(scope="package")
def stored_bases(admission: Admission) -> tuple[dict[str, Any], ...]:
    """The bases (objects.py), created for real: as kube-apiserver stores them."""
    return tuple(admission.store(obj) for obj in raw_bases())


@pytest.fixture
def bases(stored_bases: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """Fresh copies of the stored bases (tests mutate them)."""
    return copy.deepcopy(list(stored_bases))

"""Identity and RBAC on the simulated API server, through kubectl v1.37, the Python client and
a kopf-style watch: ServiceAccount tokens, 401/403 as kube-apiserver answers, Roles and
bindings, ``kubectl auth can-i`` and impersonation."""

from __future__ import annotations

import base64
import json
import ssl
from pathlib import Path

import aiohttp
import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from nemotron_sim.apiserver import ResourceKey, SimApiServer
from nemotron_sim.apiserver.authz import ROLE_BINDINGS, ROLES
from nemotron_sim.apiserver.tokens import SERVICE_ACCOUNTS
from tests.integration.apiserver.conftest import CRD_FILE, ApiHandle

SA = "system:serviceaccount:default:op"
CONFIGMAPS = ResourceKey("", "v1", "configmaps")
POD_READER = """
apiVersion: rbac.authorization.k8s.io/v1
kind: {kind}
metadata: {{name: pod-reader{namespace}}}
rules: [{{apiGroups: [""], resources: [pods], verbs: [get, list, watch]}}]
"""


def binding(name: str, namespace: str, role_kind: str, role: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": role_kind,
                "name": role,
            },
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "default"}],
        }
    )


def service_account_token(api: ApiHandle) -> str:
    api.kubectl("create", "serviceaccount", "op")
    return api.kubectl("create", "token", "op").stdout.strip()


def test_kubectl_create_token_needs_the_service_account_and_a_real_lifetime(
    api: ApiHandle,
) -> None:
    missing = api.kubectl("create", "token", "op", check=False)
    assert 'serviceaccounts "op" not found' in missing.stderr
    token = service_account_token(api)
    user = api.store(lambda _: api.thread._require().tokens.authenticate(token))
    assert user is not None
    assert user.username == SA
    short = api.kubectl("create", "token", "op", "--duration", "1m", check=False)
    assert "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than" in (
        short.stderr
    )


def test_kubectl_with_a_token_is_denied_then_allowed_by_a_role(api: ApiHandle) -> None:
    token = service_account_token(api)
    as_sa = ("--token", token)
    denied = api.kubectl("get", "pods", *as_sa, check=False)
    assert denied.returncode != 0
    assert denied.stderr.strip().endswith(
        f'Error from server (Forbidden): pods is forbidden: User "{SA}" cannot list resource '
        '"pods" in API group "" in the namespace "default"'
    )
    nodes = api.kubectl("get", "nodes", *as_sa, check=False)
    assert (
        f'nodes is forbidden: User "{SA}" cannot list resource "nodes" in API group "" at the '
        "cluster scope"
    ) in nodes.stderr
    assert api.kubectl("auth", "can-i", "list", "pods", *as_sa, check=False).stdout == "no\n"

    api.kubectl("apply", "-f", "-", input=POD_READER.format(kind="Role", namespace=""))
    api.kubectl("apply", "-f", "-", input=binding("read", "default", "Role", "pod-reader"))
    assert "No resources found" in api.kubectl("get", "pods", *as_sa).stderr
    assert api.kubectl("auth", "can-i", "watch", "pods", *as_sa).stdout == "yes\n"
    assert api.kubectl("auth", "can-i", "delete", "pods", *as_sa, check=False).stdout == "no\n"
    listing = api.kubectl("auth", "can-i", "--list", *as_sa).stdout
    assert any(
        line.split()[0] == "pods" and "[get list watch]" in line for line in listing.splitlines()
    )
    assert "selfsubjectaccessreviews.authorization.k8s.io" in listing  # system:basic-user
    assert "[/version]" in listing  # system:discovery
    whoami = api.kubectl("auth", "whoami", *as_sa).stdout
    assert SA in whoami
    assert "system:serviceaccounts:default" in whoami

    bad = api.kubectl("get", "pods", "--token", "sim-sa-token.forged", check=False)
    assert "error: You must be logged in to the server (Unauthorized)" in bad.stderr


def test_a_cluster_role_bound_by_a_role_binding_grants_in_one_namespace(api: ApiHandle) -> None:
    token = service_account_token(api)
    api.kubectl("create", "namespace", "ml")
    api.kubectl("apply", "-f", "-", input=POD_READER.format(kind="ClusterRole", namespace=""))
    api.kubectl("apply", "-f", "-", input=binding("read", "ml", "ClusterRole", "pod-reader"))
    can_i = ("auth", "can-i", "list", "pods", "--token", token)
    assert api.kubectl(*can_i, "-n", "ml").stdout == "yes\n"
    assert api.kubectl(*can_i, "-n", "default", check=False).stdout == "no\n"
    assert api.kubectl(*can_i, "--all-namespaces", check=False).stdout == "no\n"
    denied = api.kubectl("get", "pods", "-A", "--token", token, check=False)
    assert "at the cluster scope" in denied.stderr


def test_can_i_as_another_user_through_impersonation(api: ApiHandle) -> None:
    api.kubectl("create", "serviceaccount", "op")
    as_sa = ("--as", SA)
    assert api.kubectl("auth", "can-i", "list", "pods", *as_sa, check=False).stdout == "no\n"
    api.kubectl("apply", "-f", "-", input=POD_READER.format(kind="Role", namespace=""))
    api.kubectl("apply", "-f", "-", input=binding("read", "default", "Role", "pod-reader"))
    assert api.kubectl("auth", "can-i", "list", "pods", *as_sa).stdout == "yes\n"
    assert "pods" in api.kubectl("auth", "can-i", "--list", *as_sa).stdout
    assert api.kubectl("auth", "can-i", "list", "pods", "--as", "bob", check=False).stdout == "no\n"
    # An identity without the impersonate verb may not impersonate.
    token = api.kubectl("create", "token", "op").stdout.strip()
    refused = api.kubectl("get", "pods", "--token", token, "--as", "bob", check=False)
    assert (
        f'users "bob" is forbidden: User "{SA}" cannot impersonate resource "users" in API group '
        '"" at the cluster scope'
    ) in refused.stderr


def _token_kubeconfig(api: ApiHandle, token: str, path: Path) -> Path:
    return api.thread.call(lambda: api.thread._require().kubeconfig(path, token=token))


def test_python_client_with_a_token_kubeconfig(api: ApiHandle, tmp_path: Path) -> None:
    token = service_account_token(api)
    kubeconfig = _token_kubeconfig(api, token, tmp_path / "sa-kubeconfig")
    with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
        core = client.CoreV1Api(api_client)
        with pytest.raises(ApiException) as denied:
            core.list_namespaced_pod("default")
        assert denied.value.status == 403
        assert json.loads(denied.value.body)["message"] == (
            f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" in the '
            'namespace "default"'
        )
        api.kubectl("apply", "-f", "-", input=POD_READER.format(kind="Role", namespace=""))
        api.kubectl("apply", "-f", "-", input=binding("read", "default", "Role", "pod-reader"))
        assert core.list_namespaced_pod("default").items == []


async def test_a_watch_with_a_token_is_refused_until_granted(server: SimApiServer) -> None:
    """As kopf watches: a long GET with ``watch=true`` over HTTPS with the pod's token."""
    server.store.create(SERVICE_ACCOUNTS, {"metadata": {"name": "op", "namespace": "default"}})
    token = server.tokens.issue("default", "op")
    assert server.certificate is not None
    context = ssl.create_default_context(cadata=server.certificate.pem.decode())
    headers = {"Authorization": f"Bearer {token}"}
    watch_url = f"{server.secure_url}/api/v1/namespaces/default/configmaps?watch=true"
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.get(watch_url, ssl=context) as response:
            assert response.status == 403
            body = await response.json()
        assert body["reason"] == "Forbidden"
        assert body["message"] == (
            f'configmaps is forbidden: User "{SA}" cannot watch resource "configmaps" in API '
            'group "" in the namespace "default"'
        )
        _grant_configmap_watch(server)
        async with session.get(watch_url + "&timeoutSeconds=1", ssl=context) as response:
            assert response.status == 200
            server.store.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "default"}})
            line = await response.content.readline()
            assert json.loads(line)["object"]["metadata"]["name"] == "c"
        async with session.get(f"{server.secure_url}/api", ssl=context) as response:
            assert response.status == 200  # discovery: system:discovery
        bad = {"Authorization": "Bearer nope"}
        async with session.get(watch_url, ssl=context, headers=bad) as response:
            assert response.status == 401
            assert (await response.json())["reason"] == "Unauthorized"


def _grant_configmap_watch(server: SimApiServer) -> None:
    server.store.create(
        ROLES,
        {
            "metadata": {"name": "cm", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["watch"]}],
        },
    )
    server.store.create(ROLE_BINDINGS, yaml.safe_load(binding("cm", "default", "Role", "cm")))


def test_the_admin_kubeconfig_trusts_the_server_certificate(api: ApiHandle) -> None:
    kubeconfig = yaml.safe_load(Path(api.kubeconfig).read_text())
    cluster = kubeconfig["clusters"][0]["cluster"]
    assert cluster["server"].startswith("https://127.0.0.1:")
    assert base64.b64decode(cluster["certificate-authority-data"]).startswith(b"-----BEGIN CERT")
    assert "system:admin" in api.kubectl("auth", "whoami").stdout


def test_kubectl_explain_reads_custom_resource_schemas(api: ApiHandle) -> None:
    api.kubectl("apply", "-f", str(CRD_FILE))  # no --validate=false needed
    engine = api.kubectl("explain", "nemotrondeployment.spec.engine").stdout
    assert "KIND:       NemotronDeployment" in engine
    assert "VERSION:    v1alpha1" in engine
    assert "vLLM engine settings." in engine
    assert "gpuMemoryUtilization\t<number>" in engine
    assert "Fraction of each GPU's memory vLLM may use" in engine
    top = api.kubectl("explain", "nd").stdout
    assert "NemotronDeployment serves one NVIDIA Nemotron model" in top
    assert "APIVersion defines the versioned schema" in top


async def test_token_and_subject_access_reviews(
    server: SimApiServer, http: aiohttp.ClientSession
) -> None:
    server.store.create(SERVICE_ACCOUNTS, {"metadata": {"name": "op", "namespace": "default"}})
    _grant_configmap_watch(server)
    token = server.tokens.issue("default", "op")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    async with http.post("/apis/authentication.k8s.io/v1/tokenreviews",
                         json={**review, "spec": {"token": token}}) as response:  # fmt: skip
        assert response.status == 201
        status = (await response.json())["status"]
    assert status["authenticated"] is True
    assert status["user"]["username"] == SA
    async with http.post("/apis/authentication.k8s.io/v1/tokenreviews",
                         json={**review, "spec": {"token": "forged"}}) as response:  # fmt: skip
        assert (await response.json())["status"]["authenticated"] is False

    def access(namespace: str, verb: str) -> dict[str, object]:
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": SA,
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "resourceAttributes": {"namespace": namespace, "verb": verb,
                                       "resource": "configmaps"},
            },
        }  # fmt: skip

    sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    async with http.post(sar, json=access("default", "watch")) as response:
        assert (await response.json())["status"] == {
            "allowed": True,
            "reason": 'RBAC: allowed by RoleBinding "cm/default" of Role "cm" to ServiceAccount '
            '"op/default"',
        }
    async with http.post(sar, json=access("default", "delete")) as response:
        assert (await response.json())["status"] == {"allowed": False}
    local = "/apis/authorization.k8s.io/v1/namespaces/kube-system/localsubjectaccessreviews"
    async with http.post(local, json=access("default", "watch")) as response:
        assert response.status == 400  # the namespace must be the URL's
    # A SelfSubjectAccessReview over HTTP without credentials is the admin's.
    ssar = {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}}
    async with http.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                         json=ssar) as response:  # fmt: skip
        assert (await response.json())["status"]["allowed"] is True
    async with http.get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews") as response:
        assert response.status == 405

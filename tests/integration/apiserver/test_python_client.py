"""The official ``kubernetes`` Python client (37.0.2) against the simulated API server."""

from __future__ import annotations

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.integration.apiserver.conftest import WIDGET_CRD, ApiHandle

GROUP, VERSION, PLURAL = "test.sim.nemotron.io", "v1", "widgets"


def test_typed_and_custom_object_apis_and_watch(api: ApiHandle) -> None:
    api.kubectl("apply", "-f", str(WIDGET_CRD))
    with config.new_client_from_config(config_file=str(api.kubeconfig)) as api_client:
        core = client.CoreV1Api(api_client)
        assert "default" in [ns.metadata.name for ns in core.list_namespace().items]
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "1"})
        )
        assert core.read_namespaced_config_map("c", "default").data == {"a": "1"}

        custom = client.CustomObjectsApi(api_client)
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
        }
        created = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, "default", PLURAL, "w", {"status": {"phase": "Ready"}}
        )
        with pytest.raises(ApiException) as refused:  # validated before the name clash
            custom.create_namespaced_custom_object(
                GROUP, VERSION, "default", PLURAL, {**body, "spec": {"size": 99}}
            )
        assert refused.value.status == 422

        stream = watch.Watch()
        seen = []
        for event in stream.stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            "default",
            PLURAL,
            resource_version=created["metadata"]["resourceVersion"],
            timeout_seconds=2,
        ):
            seen.append((event["type"], event["object"]["status"]["phase"]))
            stream.stop()
        assert seen == [("MODIFIED", "Ready")]

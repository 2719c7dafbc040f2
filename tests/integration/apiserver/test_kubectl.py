"""kubectl v1.37 against the simulated API server: the verbs a user and the demo use."""

from __future__ import annotations

import json
import subprocess
import threading

import yaml

from nemotron_sim.apiserver import ResourceKey
from tests.integration.apiserver.conftest import CRD_FILE, WIDGET_CRD, ApiHandle, wait_until
from tests.integration.conftest import kubectl_binary

WIDGETS = ResourceKey("test.sim.nemotron.io", "v1", "widgets")
PODS = ResourceKey("", "v1", "pods")


def widget(name: str, size: int, **labels: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "test.sim.nemotron.io/v1",
            "kind": "Widget",
            "metadata": {"name": name, "labels": labels},
            "spec": {"size": size},
        }
    )


def names(result: subprocess.CompletedProcess[str]) -> list[str]:
    return sorted(line.split("/")[-1] for line in result.stdout.split())


def test_custom_resources_through_apply_get_patch_scale_replace_delete(api: ApiHandle) -> None:
    # No --validate=false: kubectl finds fieldValidation support in /openapi/v3.
    api.kubectl("apply", "-f", str(WIDGET_CRD))
    resources = api.kubectl("api-resources", "--api-group=test.sim.nemotron.io").stdout
    assert "widgets" in resources
    assert "wd" in resources
    api.kubectl("apply", "-f", "-", input=widget("small", 2))
    api.kubectl("apply", "-f", "-", input=widget("big", 5, tier="big"))

    table = api.kubectl("get", "wd").stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "COLOUR", "READY", "AGE"]
    assert table[1].split()[:3] == ["big", "5", "grey"]  # colour defaulted from the schema

    selectors = {
        "tier=big": ["big"],
        "tier!=big": ["small"],
        "tier in (big,huge)": ["big"],
        "tier notin (big)": ["small"],
        "tier": ["big"],
        "!tier": ["small"],
    }
    for selector, expected in selectors.items():
        assert names(api.kubectl("get", "wd", "-l", selector, "-o", "name")) == expected, selector

    api.kubectl("patch", "wd", "small", "--type=merge", "-p", '{"spec":{"size":3}}')
    add_colour = '[{"op":"add","path":"/spec/colour","value":"blue"}]'
    api.kubectl("patch", "wd", "small", "--type=json", "-p", add_colour)
    api.kubectl("scale", "wd", "small", "--replicas=4")
    small = json.loads(api.kubectl("get", "wd", "small", "-o", "json").stdout)
    assert small["spec"] == {"size": 4, "colour": "blue"}
    assert small["metadata"]["generation"] == 4

    small["spec"]["size"] = 1
    api.kubectl("replace", "-f", "-", input=json.dumps(small))
    stale = api.kubectl("replace", "-f", "-", input=json.dumps(small), check=False)
    assert stale.returncode != 0
    assert "the object has been modified" in stale.stderr
    del small["metadata"]["resourceVersion"]  # kubectl replace would fill it in; raw PUT
    path = "/apis/test.sim.nemotron.io/v1/namespaces/default/widgets/small"
    status, refused = api.request("PUT", path, small)
    assert status == 422
    assert "must be specified for an update" in refused["message"]  # custom resources only

    api.kubectl("delete", "wd", "small", "big")
    gone = api.kubectl("get", "wd", "small", check=False)
    assert 'widgets.test.sim.nemotron.io "small" not found' in gone.stderr


def test_get_watch_prints_added_modified_deleted(api: ApiHandle) -> None:
    api.kubectl("apply", "-f", str(WIDGET_CRD))
    api.kubectl("apply", "-f", "-", input=widget("w", 1))
    watcher = subprocess.Popen(
        [kubectl_binary(), "get", "wd", "-w", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=api.env,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watcher.stdout or []), daemon=True)
    reader.start()
    try:
        wait_until(lambda: api.store(lambda s: s.watchers_for(WIDGETS)) >= 1, what="a watch")
        api.kubectl("patch", "wd", "w", "--type=merge", "-p", '{"spec":{"size":2}}')
        api.kubectl("delete", "wd", "w")
        wait_until(lambda: any(line.startswith("DELETED") for line in lines), what="DELETED")
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
        reader.join(timeout=10)
    events = [line.split()[0] for line in lines[1:]]
    assert events == ["ADDED", "MODIFIED", "DELETED"], lines


def test_invalid_custom_resource_is_refused_with_the_field_path(api: ApiHandle) -> None:
    api.kubectl("apply", "-f", str(CRD_FILE))
    namespace = {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "ai"}}
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(namespace))
    bad = {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": "bad", "namespace": "ai"},
        "spec": {"model": {"id": "nvidia/x"}, "engine": {"maxModelLen": -5}},
    }
    refused = api.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert refused.returncode != 0
    assert "spec.engine.maxModelLen" in refused.stderr
    assert 'NemotronDeployment "bad" is invalid' in refused.stderr
    deployments = ResourceKey("serving.nemotron.io", "v1alpha1", "nemotrondeployments")
    assert api.store(lambda s: s.peek(deployments, "ai", "bad")) is None

    api.kubectl("apply", "-f", str(WIDGET_CRD))
    cel = api.kubectl("apply", "-f", "-", input=widget("huge", 9), check=False)
    assert "sizes above 8 must be red" in cel.stderr
    typo = widget("typo", 1).replace("size: 1", "size: 1\n  colr: red")
    unknown = api.kubectl("apply", "-f", "-", input=typo, check=False)
    assert 'unknown field "spec.colr"' in unknown.stderr


def test_builtin_kinds_strategic_merge_and_server_side_apply(api: ApiHandle) -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "a", "image": "a:1", "args": ["--x"]},
                        {"name": "b", "image": "b:1"},
                    ]
                },
            },
        },
    }
    api.kubectl("apply", "-f", "-", input=json.dumps(sts))
    sts["spec"]["template"]["spec"]["containers"][1]["image"] = "b:2"
    api.kubectl("apply", "-f", "-", input=json.dumps(sts))  # a strategic merge patch
    stored = json.loads(api.kubectl("get", "sts", "web", "-o", "json").stdout)
    containers = stored["spec"]["template"]["spec"]["containers"]
    assert containers == [
        {"name": "a", "image": "a:1", "args": ["--x"]},
        {"name": "b", "image": "b:2"},
    ]
    assert "READY" in api.kubectl("get", "sts").stdout.splitlines()[0]

    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "1", "b": "2"},
    }
    api.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(config))
    del config["data"]["b"]
    api.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(config))
    stored = json.loads(api.kubectl("get", "cm", "c", "-o", "json").stdout)
    assert stored["data"] == {"a": "1"}  # a field the manager stopped applying is removed
    namespaces = api.kubectl("get", "ns", "-o", "name").stdout.split()
    assert "namespace/default" in namespaces


def test_typed_create_commands_send_protobuf_and_are_understood(api: ApiHandle) -> None:
    api.kubectl("create", "namespace", "ai")
    api.kubectl("create", "configmap", "c", "-n", "ai", "--from-literal=a=b")
    api.kubectl("create", "secret", "generic", "s", "-n", "ai", "--from-literal=k=v")
    configmap = json.loads(api.kubectl("get", "cm", "c", "-n", "ai", "-o", "json").stdout)
    assert configmap["data"] == {"a": "b"}
    secret = json.loads(api.kubectl("get", "secret", "s", "-n", "ai", "-o", "json").stdout)
    assert secret["data"] == {"k": "dg=="}  # base64 of "v"
    refused = api.kubectl("create", "deployment", "d", "--image=x", check=False)
    assert "decodes protobuf only for" in refused.stderr

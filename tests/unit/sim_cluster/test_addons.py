"""The simulated cluster's add-ons (nemotron_sim/addons): their names, the key of their build
directory (the same as hack/build-addons.sh prints), and the edits the stand-in
config-reloader and the programs make to paths and listen addresses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from nemotron_sim import addons
from nemotron_sim.addons.apply import in_namespace, resource_key
from nemotron_sim.addons.binaries import MODULES, addon_dir
from nemotron_sim.addons.programs import (
    EPP_CONFIG_API_VERSION,
    edited,
    epp_config,
    remapped,
    with_listen,
)

ROOT = Path(__file__).resolve().parents[3]


def test_addon_names_are_parsed_and_an_unknown_one_is_named() -> None:
    assert addons.parse("monitoring, keda,monitoring") == ("monitoring", "keda")
    assert addons.parse("") == ()
    with pytest.raises(
        ValueError, match="unknown add-on\\(s\\) gateways; known: monitoring, keda, gateway"
    ):
        addons.parse("monitoring,gateways")


@pytest.mark.parametrize("component", sorted(MODULES))
def test_the_build_directory_is_the_one_the_script_prints(component: str) -> None:
    printed = subprocess.run(
        ["bash", str(ROOT / "hack" / "build-addons.sh"), "--print-dir", component],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert printed == str(addon_dir(component))
    assert f"/{component}-v" in printed


def test_config_paths_go_to_the_mounts_and_kubernetes_sd_gets_the_kubeconfig(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHARD", "0")
    mounts = {"/etc/prometheus/certs": "/pods/p/certs", "/etc/prometheus": "/pods/p/etc"}
    generated = yaml.safe_dump(
        {
            "global": {"external_labels": {"prometheus_replica": "$(POD_NAME)"}},
            "scrape_configs": [
                {
                    "job_name": "podMonitor/ai/nano/0",
                    "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": ["ai"]}}],
                    "relabel_configs": [{"action": "keep", "regex": "$(SHARD)"}],
                    "tls_config": {"ca_file": "/etc/prometheus/certs/ca.crt"},
                }
            ],
        }
    )
    out = yaml.safe_load(edited(generated, mounts, "/pods/p/kubeconfig"))
    (job,) = out["scrape_configs"]
    assert job["kubernetes_sd_configs"][0]["kubeconfig_file"] == "/pods/p/kubeconfig"
    assert job["relabel_configs"][0]["regex"] == "0"  # $(SHARD) from the environment
    assert job["tls_config"]["ca_file"] == "/pods/p/certs/ca.crt"  # the longest mount wins
    # A variable the environment lacks stays as the real reloader leaves it.
    assert out["global"]["external_labels"]["prometheus_replica"] == "$(POD_NAME)"


def test_flags_with_container_paths_and_listen_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = {"/prometheus": "/pods/p/db"}
    assert remapped("--storage.tsdb.path=/prometheus", mounts) == "--storage.tsdb.path=/pods/p/db"
    assert remapped("--web.route-prefix=/", mounts) == "--web.route-prefix=/"
    assert remapped("/elsewhere/x", mounts) == "/elsewhere/x"
    monkeypatch.setenv("NEMOTRON_SIM_POD_IP", "10.1.2.3")
    assert with_listen(["--a", "--web.listen-address=:9090"], "--web.listen-address", 9090) == [
        "--a",
        "--web.listen-address=10.1.2.3:9090",
    ]


def test_published_manifests_move_into_the_addon_namespace() -> None:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "prometheus-operator"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "prometheus-operator", "namespace": "default"}
        ],
    }
    moved = in_namespace(binding, "monitoring")
    assert "namespace" not in moved["metadata"]
    assert moved["subjects"][0]["namespace"] == "monitoring"
    deployment = in_namespace(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}, "keda"
    )
    assert deployment["metadata"]["namespace"] == "keda"
    prometheus = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": {}}
    assert resource_key(prometheus).plural == "prometheuses"
    assert resource_key(deployment).api_version == "apps/v1"


def test_the_picker_config_gets_the_pickers_own_group_and_nothing_else() -> None:
    rendered = (ROOT / "tests" / "golden" / "expected" / "nano-gateway.yaml").read_text()
    (config_map,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "ConfigMap"]
    text = config_map["data"]["epp-config.yaml"]
    assert text.startswith("apiVersion: llm-d.ai/v1alpha1\n")
    edited_text = epp_config(text)
    assert edited_text.splitlines()[0] == f"apiVersion: {EPP_CONFIG_API_VERSION}"
    assert edited_text.splitlines()[1:] == text.splitlines()[1:]

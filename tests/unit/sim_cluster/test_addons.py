"""The simulated cluster's add-ons (sim_cluster/addons): their names, the key of their build
directory (the same as hack/build-addons.sh prints), and the edits the stand-in
config-reloader and the programs make to paths and listen addresses."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from sim_cluster import addons
from sim_cluster.addons import keda
from sim_cluster.addons.apply import in_namespace, resource_key
from sim_cluster.addons.binaries import MODULES, addon_dir
from sim_cluster.addons.programs import (
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


def test_what_a_manifest_puts_in_kube_system_stays_there() -> None:
    # KEDA's config/metrics-server/role_binding.yaml: the adapter may read kube-system's
    # extension-apiserver-authentication ConfigMap, and the HPA controller may read its metrics.
    reader = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "keda-auth-reader", "namespace": "kube-system"},
        "subjects": [{"kind": "ServiceAccount", "name": "keda-operator", "namespace": "keda"}],
    }
    assert in_namespace(reader, "elsewhere")["metadata"]["namespace"] == "kube-system"
    assert reader["subjects"][0]["namespace"] == "elsewhere"
    hpa = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "keda-hpa-controller-external-metrics"},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": "horizontal-pod-autoscaler",
                "namespace": "kube-system",
            }
        ],
    }
    assert in_namespace(hpa, "keda")["subjects"][0]["namespace"] == "kube-system"


def test_kedas_certificate_serves_both_services_and_is_its_own_client() -> None:
    certs = keda.certificates(datetime.datetime.now(datetime.UTC))
    ca = x509.load_pem_x509_certificate(certs["ca.crt"])
    leaf = x509.load_pem_x509_certificate(certs["tls.crt"])
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = set(names.get_values_for_type(x509.DNSName))
    # kube-apiserver verifies the adapter as <service>.<namespace>.svc; the adapter dials the
    # operator's gRPC service with that name as its authority.
    assert {"keda-metrics-apiserver.keda.svc", "keda-operator.keda.svc"} <= dns
    assert "keda-operator.keda.svc.cluster.local" in dns
    usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH} <= set(usages)
    assert certs["tls.key"].startswith(b"-----BEGIN PRIVATE KEY-----")


def test_the_programs_use_the_simulated_kubelets_variables_and_mount_rule() -> None:
    """Copied into programs.py, not imported (a program's start counts against its probes)."""
    from nemotron_sim.kubelet.podfiles import MOUNTS_ENV
    from nemotron_sim.kubelet.process_runner import POD_IP_ENV
    from nemotron_sim.vllm.lora import resolve_mount
    from sim_cluster.addons import programs

    assert (programs.MOUNTS_ENV, programs.POD_IP_ENV) == (MOUNTS_ENV, POD_IP_ENV)
    mounts = {"/a": "/pods/a", "/a/b": "/pods/ab", "/c/": "/pods/c"}
    for path in ("/a", "/a/x", "/a/b/y", "/ab", "/c/z", "/d"):
        assert programs.resolve_mount(path, mounts) == resolve_mount(path, mounts), path


def test_kedas_containers_get_a_startup_probe_like_their_liveness_probe() -> None:
    adapter = {
        "kind": "Deployment",
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "keda-metrics-apiserver",
                            "livenessProbe": {
                                "httpGet": {"scheme": "HTTPS", "path": "/healthz", "port": 6443},
                                "initialDelaySeconds": 5,
                            },
                        },
                        {"name": "no-probe"},
                    ]
                }
            }
        },
    }
    probed, plain = keda.with_startup_probe(adapter)["spec"]["template"]["spec"]["containers"]
    assert probed["startupProbe"] == {
        "httpGet": {"scheme": "HTTPS", "path": "/healthz", "port": 6443},
        "failureThreshold": keda.STARTUP_FAILURES,
    }
    assert probed["livenessProbe"]["initialDelaySeconds"] == 5  # liveness as published
    assert "startupProbe" not in plain

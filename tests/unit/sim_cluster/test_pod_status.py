from __future__ import annotations

from nemotron_sim.kubelet.pod_status import PodModel, qos_class


def pod(**spec: object) -> dict[str, object]:
    return {"metadata": {"uid": "u1", "name": "p"}, "spec": spec}


def test_status_walks_from_init_to_ready_with_transition_times() -> None:
    model = PodModel.for_pod(
        pod(
            initContainers=[{"name": "fetch", "image": "hf"}],
            containers=[{"name": "vllm", "image": "vllm/vllm-openai:v0.31.0"}],
        ),
        "127.250.0.1",
        "127.100.0.7",
        "t0",
    )
    first = model.render("t0")
    assert first["phase"] == "Pending"
    assert first["podIP"] == "127.100.0.7"
    assert first["initContainerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    conditions = {c["type"]: c["status"] for c in first["conditions"]}
    assert conditions == {
        "PodReadyToStartContainers": "True",
        "Initialized": "False",
        "Ready": "False",
        "ContainersReady": "False",
        "PodScheduled": "True",
    }
    model.init_containers[0].run("t1")
    model.init_containers[0].exited(0, "", "t1", "t2")
    model.phase = "Running"
    model.containers[0].run("t2")
    model.containers[0].ready = True
    done = model.render("t3")
    by_type = {c["type"]: c for c in done["conditions"]}
    assert by_type["Ready"] == {"type": "Ready", "status": "True", "lastTransitionTime": "t3"}
    assert by_type["PodScheduled"]["lastTransitionTime"] == "t0"
    assert done["containerStatuses"][0]["state"] == {"running": {"startedAt": "t2"}}
    assert done["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_crash_keeps_the_error_and_waits_in_crash_loop_back_off() -> None:
    model = PodModel.for_pod(pod(containers=[{"name": "vllm", "image": "x"}]), "h", "p", "t0")
    error = "vllm serve: error: unrecognized arguments: --bogus"
    model.containers[0].exited(1, error, "t1", "t1")  # as the kubelet's crash loop reports it
    model.containers[0].wait("CrashLoopBackOff", error)
    status = model.render("t1")["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert "--bogus" in status["state"]["waiting"]["message"]
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["ready"] is False


def test_qos_class() -> None:
    assert qos_class(pod(containers=[{}])) == "BestEffort"
    same = {"cpu": "1", "memory": "1Gi"}
    assert qos_class(pod(containers=[{"resources": {"requests": same, "limits": same}}])) == (
        "Guaranteed"
    )
    assert qos_class(pod(containers=[{"resources": {"requests": {"cpu": "1"}}}])) == "Burstable"


def test_readiness_gates_hold_ready_until_their_condition_is_true() -> None:
    gate = "serving.nemotron.io/verified"
    spec = pod(
        containers=[{"name": "vllm", "image": "v"}], readinessGates=[{"conditionType": gate}]
    )
    model = PodModel.for_pod(spec, "127.250.0.1", "127.100.0.7", "t0")
    model.phase = "Running"
    model.containers[0].run("t1")
    model.containers[0].ready = True

    def conditions(now: str) -> dict[str, str]:
        return {c["type"]: c["status"] for c in model.render(now)["conditions"]}

    assert conditions("t2")["ContainersReady"] == "True"
    assert conditions("t2")["Ready"] == "False"
    assert model.observe_gates({"status": {"conditions": []}}) is False
    set_by_operator = {"type": gate, "status": "True", "reason": "Passed"}
    seen = {"status": {"conditions": [{"type": "Ready", "status": "False"}, set_by_operator]}}
    assert model.observe_gates(seen) is True
    assert model.observe_gates(seen) is False  # unchanged: no status write
    after = conditions("t3")
    assert after["Ready"] == "True"
    assert after[gate] == "True"  # repeated: a merge patch replaces the whole list
    withdrawn = {"status": {"conditions": [{**set_by_operator, "status": "False"}]}}
    assert model.observe_gates(withdrawn) is True
    assert conditions("t4")["Ready"] == "False"

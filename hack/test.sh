#!/usr/bin/env bash
# The README's test command: install everything (pinned) into .venv, build the control plane,
# then lint, type-check and run the whole test suite. Extra arguments go to pytest.
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
# The real control plane the simulated cluster runs on (kube-apiserver, etcd, ...): built from
# Go modules on the first run (8-9 minutes on 2 cores), a no-op afterwards.
"$ROOT/hack/build-controlplane.sh"
# Karpenter with its kwok cloud provider (the GPU node pool tests): ~150 s of CPU the first time.
"$ROOT/hack/build-karpenter.sh"
# The LeaderWorkerSet controller the `lws` add-on runs (tests/integration/lws): about 3.5 minutes
# of CPU on a cold Go cache, a no-op afterwards.
"$ROOT/hack/build-lws.sh"
"$ROOT/hack/lint.sh"
# pytest exits 5 when it collects no tests; that is a failure here, never a pass.
pytest "$@"

#!/usr/bin/env bash
# Build the real control plane the simulated cluster runs on: kube-apiserver,
# kube-controller-manager and kube-scheduler from k8s.io/kubernetes, and etcd from
# go.etcd.io/etcd/server/v3, at the versions hack/controlplane/go.mod pins, with CGO off and the
# version stamped (kube-apiserver --version prints the module's version). Only Go modules are
# fetched, through the module proxy; nothing else is downloaded and no binary is committed.
#
#   hack/build-controlplane.sh              build into .cache/controlplane/<key>/bin (git ignores
#                                           it); the key names both versions and a hash of
#                                           go.mod and go.sum. A second run is a no-op. The
#                                           third-party CRDs go to .cache/controlplane/crds-<hash
#                                           of crds/go.mod and go.sum>: a CRD added there never
#                                           rebuilds the binaries.
#   hack/build-controlplane.sh --print-dir  print that directory (build nothing)
#   CONTROLPLANE_BIN_DIR=DIR                use binaries you already have (for example those
#                                           controller-runtime's setup-envtest installs, plus an
#                                           etcd): they are checked, not built
#
# A first build takes 8-9 minutes on 2 cores with an empty Go build cache (docs/simulated-
# cluster.md has the measured figures); GOCACHE and GOMODCACHE keep what it compiled.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECIPE="$ROOT/hack/controlplane"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)

required() { sed -n "s|^[[:space:]]*$1 \(v[^ ]*\).*|\1|p" "$RECIPE/go.mod" | head -1; }
K8S_VERSION="$(required k8s.io/kubernetes)"
ETCD_VERSION="$(required go.etcd.io/etcd/server/v3)"
# Two keys: the binaries by their recipe only (a 9-minute build), the CRDs by theirs (seconds).
HASH="$(cat "$RECIPE/go.mod" "$RECIPE/go.sum" | sha256sum | cut -c1-12)"
CRD_HASH="$(cat "$RECIPE/crds/go.mod" "$RECIPE/crds/go.sum" | sha256sum | cut -c1-12)"
KEY="kubernetes-${K8S_VERSION}_etcd-${ETCD_VERSION}_${HASH}"
OUT="$ROOT/.cache/controlplane/$KEY/bin"
CRDS="$ROOT/.cache/controlplane/crds-$CRD_HASH"
# (module, file in it) of each third-party CRD the test control plane installs
CRD_FILES=(
  "sigs.k8s.io/karpenter pkg/apis/crds/karpenter.sh_nodepools.yaml"
  "sigs.k8s.io/karpenter pkg/apis/crds/karpenter.sh_nodeclaims.yaml"
  "github.com/prometheus-operator/prometheus-operator example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml"
  "github.com/prometheus-operator/prometheus-operator example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
  "sigs.k8s.io/gateway-api-inference-extension config/crd/bases/inference.networking.k8s.io_inferencepools.yaml"
  "sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_gateways.yaml"
  "sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"
  "github.com/kedacore/keda/v2 config/crd/bases/keda.sh_scaledobjects.yaml"
)

say() { echo "build-controlplane: $*" >&2; }

check() {  # check DIR: every binary there, at the pinned versions
  local dir="$1" name
  for name in "${COMPONENTS[@]}"; do
    [ -x "$dir/$name" ] || { say "missing $dir/$name"; return 1; }
  done
  local got
  got="$("$dir/kube-apiserver" --version 2>/dev/null || true)"
  [ "$got" = "Kubernetes $K8S_VERSION" ] \
    || { say "$dir/kube-apiserver --version says '$got', expected 'Kubernetes $K8S_VERSION'"; return 1; }
  for name in kube-controller-manager kube-scheduler; do
    got="$("$dir/$name" --version 2>/dev/null || true)"
    [ "$got" = "Kubernetes $K8S_VERSION" ] \
      || { say "$dir/$name --version says '$got', expected 'Kubernetes $K8S_VERSION'"; return 1; }
  done
  got="$("$dir/etcd" --version 2>/dev/null | sed -n 's/^etcd Version: //p')"
  [ "v$got" = "$ETCD_VERSION" ] \
    || { say "$dir/etcd --version says '$got', expected '${ETCD_VERSION#v}'"; return 1; }
}

crds() {  # copy the third-party CRDs out of their modules (pinned by crds/go.mod and go.sum)
  local entry module file dir
  [ "$(find "$CRDS" -name "*.yaml" 2>/dev/null | wc -l)" = "${#CRD_FILES[@]}" ] && return 0
  mkdir -p "$CRDS"
  for entry in "${CRD_FILES[@]}"; do
    read -r module file <<<"$entry"
    dir="$(cd "$RECIPE/crds" && GOFLAGS=-mod=readonly go mod download -json "$module" \
      | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')"
    [ -f "$dir/$file" ] || { say "no $file in $module ($dir)"; exit 1; }
    cp "$dir/$file" "$CRDS/"
    chmod 0644 "$CRDS/$(basename "$file")"
  done
  say "third-party CRDs: $CRDS"
}

if [ "${1:-}" = "--print-dir" ]; then echo "$OUT"; exit 0; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
command -v go >/dev/null || { say "go is not on PATH (Go >= 1.26 is needed to build the control plane)"; exit 1; }
crds
if [ -n "${CONTROLPLANE_BIN_DIR:-}" ]; then
  check "$CONTROLPLANE_BIN_DIR" || { say "CONTROLPLANE_BIN_DIR=$CONTROLPLANE_BIN_DIR is not usable"; exit 1; }
  say "using CONTROLPLANE_BIN_DIR=$CONTROLPLANE_BIN_DIR"
  exit 0
fi
if check "$OUT" 2>/dev/null; then
  say "up to date: $OUT"
  exit 0
fi

# The module's own Go version is enough (GOTOOLCHAIN=local above): no toolchain is fetched.
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
cd "$RECIPE"
say "Kubernetes $K8S_VERSION and etcd $ETCD_VERSION from Go modules into $OUT"
say "(the first build compiles ~2,500 packages: about 8-9 minutes on 2 cores; later builds reuse the Go caches)"
say "downloading the modules through the Go module proxy (about 600 MB on a fresh machine)"
go mod download
# The date Kubernetes' own build stamps (hack/lib/version.sh): the release's time as the module
# proxy records it. The proxy does not record the git commit, so gitCommit stays empty.
INFO="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Info": "\([^"]*\)".*/\1/p')"
DATE="$(sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p' "$INFO" | head -1)"
MINOR="$(echo "$K8S_VERSION" | cut -d. -f2)"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
  LDFLAGS+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=${DATE}"
done
TOTAL="$(go list -deps k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler go.etcd.io/etcd/server/v3 | wc -l)"
TMP="$OUT.tmp.$$"
rm -rf "$TMP"; mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
progress() {  # `go build -v` names each package it compiles: count them; pass anything else on
  awk -v total="$TOTAL" -v start="$START" '
    /^[A-Za-z0-9._~\/-]+$/ { n++; if (n % 100 == 0) { "date +%s" | getline now; close("date +%s");
      printf "build-controlplane: compiled %d packages (of at most %d), %ds\n", n, total, now - start > "/dev/stderr" }; next }
    { print > "/dev/stderr" }'
}
build() {  # build OUTPUT PACKAGE LDFLAGS
  go build -v -trimpath -ldflags "$3" -o "$TMP/$1" "$2"
}
START="$(date +%s)"
{  # one count over the four: they share most packages, compiled once
  build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$LDFLAGS"
  build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$LDFLAGS"
  build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$LDFLAGS"
  build etcd go.etcd.io/etcd/server/v3 "-s -w"
} 2>&1 | progress
check "$TMP"
mkdir -p "$(dirname "$OUT")"
rm -rf "$OUT"
mv "$TMP" "$OUT"
trap - EXIT
say "built in $(( $(date +%s) - START )) s: $OUT"

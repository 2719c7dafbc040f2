#!/usr/bin/env bash
# Build what the simulated cluster's real nodes run (python -m sim_cluster --real-nodes N):
# kubelet from k8s.io/kubernetes at the control plane's version, the fake GPU device plugin
# (hack/nodes/gpu-device-plugin) and the pod sandbox's pause program (hack/nodes/pause), from the recipe module hack/nodes (its go.mod pins the same
# modules as hack/controlplane's). With --install-packages (root), first the node's runtime from
# Debian's archive at the versions hack/nodes/apt-packages.txt pins: containerd, runc, the CNI
# plugins, and mmdebstrap + umoci for hack/build-images.sh.
#
#   hack/build-nodes.sh [--install-packages]   build into .cache/nodes/<key>/bin (a no-op when
#                                              built: the key names the version and a hash of
#                                              the recipe)
#   hack/build-nodes.sh --print-dir            print that directory (build nothing)
#
# With the control plane's Go build cache warm the build takes well under a minute; cold, the
# kubelet alone compiles ~1,500 packages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECIPE="$ROOT/hack/nodes"
say() { echo "build-nodes: $*" >&2; }

K8S_VERSION="$(sed -n 's|^[[:space:]]*k8s.io/kubernetes \(v[^ ]*\).*|\1|p' "$RECIPE/go.mod" | head -1)"
HASH="$(cat "$RECIPE/go.mod" "$RECIPE/go.sum" "$RECIPE"/*/*.go | sha256sum | cut -c1-12)"
OUT="$ROOT/.cache/nodes/kubelet-${K8S_VERSION}_${HASH}/bin"

install_packages() {  # the pinned Debian packages, when any is missing or at another version
  local want=() line pkg version
  while read -r line; do
    line="${line%%#*}"; [ -n "${line// }" ] || continue
    read -r pkg version <<<"$line"
    [ "$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null || true)" = "$version" ] || want+=("$pkg=$version")
  done <"$RECIPE/apt-packages.txt"
  [ "${#want[@]}" -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || { say "installing ${want[*]} needs root (apt-get)"; exit 1; }
  say "installing ${want[*]}"
  local start; start="$(date +%s)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${want[@]}" >&2 \
    || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
         --no-install-recommends "${want[@]}" >&2; }
  say "packages installed in $(( $(date +%s) - start )) s"
}

case "${1:-}" in
  --print-dir) echo "$OUT"; exit 0 ;;
  --install-packages) install_packages ;;
  "") ;;
  *) say "unknown argument $1"; exit 2 ;;
esac
got="$("$OUT/kubelet" --version 2>/dev/null || true)"
if [ "$got" = "Kubernetes $K8S_VERSION" ] && [ -x "$OUT/gpu-device-plugin" ] && [ -x "$OUT/pause" ]; then
  say "up to date: $OUT"; exit 0
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
command -v go >/dev/null || { say "go is not on PATH (Go >= 1.26 builds the kubelet)"; exit 1; }
cd "$RECIPE"
# The version stamp Kubernetes' own build sets (as hack/build-controlplane.sh does).
INFO="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Info": "\([^"]*\)".*/\1/p')"
DATE="$(sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p' "$INFO" | head -1)"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1"
  LDFLAGS+=" -X $pkg.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean"
  LDFLAGS+=" -X $pkg.buildDate=$DATE"
done
TMP="$OUT.tmp.$$"
rm -rf "$TMP"; mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
START="$(date +%s)"
say "kubelet $K8S_VERSION and the fake GPU device plugin into $OUT"
go build -trimpath -ldflags "$LDFLAGS" -o "$TMP/kubelet" k8s.io/kubernetes/cmd/kubelet
go build -trimpath -ldflags "-s -w" -o "$TMP/gpu-device-plugin" ./gpu-device-plugin
go build -trimpath -ldflags "-s -w" -o "$TMP/pause" ./pause
[ "$("$TMP/kubelet" --version)" = "Kubernetes $K8S_VERSION" ] || { say "kubelet --version is wrong"; exit 1; }
rm -rf "$OUT"; mv "$TMP" "$OUT"; trap - EXIT
say "built in $(( $(date +%s) - START )) s: $OUT"

#!/usr/bin/env bash
# Build the real neighbours the simulated cluster's add-ons run (docs/simulated-cluster.md,
# "Add-ons"): each from its own Go module through the module proxy, one recipe module per
# component under hack/addons/<component>/ (their Kubernetes library versions differ; one module
# graph would upgrade them all). CGO off, cached and stamped like the control plane: the output
# directory's key names the component's version and a hash of its recipe's go.mod and go.sum, so
# a second run is a no-op.
#
#   hack/build-addons.sh COMPONENT...        build into .cache/addons/<key>/ (git ignores it): the
#                                            binaries in bin/, and the project's own CRDs and
#                                            manifests (RBAC, Deployment) copied out of the same
#                                            module version into crds/ and manifests/
#   hack/build-addons.sh --print-dir COMPONENT   print that directory (build nothing)
#
# Components, their entry points (tool lines of the recipe module) and the files copied out of
# their modules are listed in hack/addons/components:
#   prometheus-operator  github.com/prometheus-operator/prometheus-operator/cmd/operator
#   prometheus           github.com/prometheus/prometheus/cmd/prometheus (Kubernetes SD only)
#   keda                 github.com/kedacore/keda/v2/cmd/operator and cmd/adapter (its metrics
#                        adapter, external.metrics.k8s.io, as bin/keda-adapter)
#   epp                  sigs.k8s.io/gateway-api-inference-extension/cmd/epp (the endpoint picker,
#                        v1.5.0: the last release with the full picker; v1.6 keeps a round robin)
# Measured cold CPU figures are in docs/simulated-cluster.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "build-addons: $*" >&2; }

COMPONENTS="$ROOT/hack/addons/components"
line() { grep "^$1|" "$COMPONENTS" || true; }  # line COMPONENT: its line of hack/addons/components
known() { grep -v '^#' "$COMPONENTS" | cut -d'|' -f1 | tr '\n' ' '; }

# component -> "main module|binary=package ...|build tags|crds/ files|manifests/ files"
spec() {
  local found
  found="$(line "$1")"
  [ -n "$found" ] || { say "unknown component '$1' (known: $(known))"; exit 2; }
  echo "${found#*|}"
}

outdir() {  # outdir COMPONENT
  local recipe="$ROOT/hack/addons/$1" module version hash
  module="$(spec "$1" | cut -d'|' -f1)"
  version="$(sed -n "s|^[[:space:]]*$module \(v[^ ]*\).*|\1|p" "$recipe/go.mod" | head -1)"
  hash="$( { cat "$recipe/go.mod" "$recipe/go.sum"; line "$1"; } | sha256sum | cut -c1-12)"
  echo "$ROOT/.cache/addons/$1-${version}_$hash"
}

build_one() {  # build_one COMPONENT
  local name="$1" recipe="$ROOT/hack/addons/$1" out module binaries tags crds manifests tmp start
  local pair version dir file src rel
  IFS='|' read -r module binaries tags crds manifests <<<"$(spec "$name")"
  out="$(outdir "$name")"
  if [ -f "$out/.complete" ]; then say "up to date: $out"; return 0; fi
  version="$(basename "$out" | sed "s/^$name-//; s/_[0-9a-f]*$//")"
  say "$name $version from Go modules into $out"
  tmp="$out.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp/bin" "$tmp/crds" "$tmp/manifests"
  start="$(date +%s)"
  trap 'rm -rf "$tmp"' EXIT
  (  # set -e holds in here: a failed step fails the build (no `||` after it, which would not)
    cd "$recipe"
    export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
    go mod download
    for pair in $binaries; do
      # prometheus/common's version package is what these print with --version
      go build -trimpath -tags "$tags" -o "$tmp/bin/${pair%%=*}" \
        -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version#v}" "${pair#*=}"
    done
    dir="$(go mod download -json "$module" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')"
    [ -n "$dir" ] || { say "no module directory for $module"; exit 1; }
    for file in $crds; do eval cp "$dir/$file" "$tmp/crds/"; done
    for file in $manifests; do  # at their path inside the module
      for src in $(eval echo "$dir/$file"); do
        rel="${src#"$dir"/}"
        mkdir -p "$tmp/manifests/$(dirname "$rel")"
        cp "$src" "$tmp/manifests/$rel"
      done
    done
    chmod -R u+w "$tmp"
  )
  trap - EXIT
  echo "$version" >"$tmp/.complete"
  rm -rf "$out"; mkdir -p "$(dirname "$out")"; mv "$tmp" "$out"
  say "built $name in $(( $(date +%s) - start )) s: $out ($(du -sh "$out" | cut -f1))"
}

if [ "${1:-}" = "--print-dir" ]; then spec "$2" >/dev/null; outdir "$2"; exit 0; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
command -v go >/dev/null || { say "go is not on PATH (Go >= 1.26 is needed to build the add-ons)"; exit 1; }
[ $# -gt 0 ] || { say "usage: $0 COMPONENT... ($(known))"; exit 2; }
for c in "$@"; do build_one "$c"; done

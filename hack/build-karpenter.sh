#!/usr/bin/env bash
# Build Karpenter with its kwok cloud provider (sigs.k8s.io/karpenter/kwok) at the version
# hack/karpenter/go.mod pins, CGO off, the version stamped (Karpenter logs it at start). Its
# scheduler, provisioner, disruption and limits are Karpenter's own; only its "cloud" differs: it
# creates Node objects instead of instances. Only Go modules are fetched, through the module proxy;
# no binary is committed. The CRDs it needs are copied next to the binary.
#
#   hack/build-karpenter.sh              build into .cache/karpenter/<key>/bin (git ignores it) and
#                                        the CRDs into .cache/karpenter/<key>/crds; the key names the
#                                        version and a hash of go.mod and go.sum. A second run is a
#                                        no-op.
#   hack/build-karpenter.sh --print-dir  print the <key> directory (build nothing)
#
# A first build takes ~2.5 minutes of CPU with an empty Go build cache (docs/simulated-cluster.md
# has the measured figures); GOCACHE and GOMODCACHE keep what it compiled.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECIPE="$ROOT/hack/karpenter"
VERSION="$(sed -n 's|^[[:space:]]*sigs.k8s.io/karpenter \(v[^ ]*\).*|\1|p' "$RECIPE/go.mod" | head -1)"
HASH="$(cat "$RECIPE/go.mod" "$RECIPE/go.sum" | sha256sum | cut -c1-12)"
DIR="$ROOT/.cache/karpenter/karpenter-${VERSION}_$HASH"
# The CRDs Karpenter with the kwok provider needs, as files of its module.
CRD_FILES=(
  pkg/apis/crds/karpenter.sh_nodepools.yaml
  pkg/apis/crds/karpenter.sh_nodeclaims.yaml
  pkg/apis/crds/karpenter.sh_nodeoverlays.yaml
  kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml
)

say() { echo "build-karpenter: $*" >&2; }

check() {  # check DIR: the binary, stamped with the pinned version, and every CRD
  local dir="$1" file
  [ -x "$dir/bin/karpenter-kwok" ] || { say "missing $dir/bin/karpenter-kwok"; return 1; }
  [ "$(cat "$dir/bin/VERSION" 2>/dev/null)" = "$VERSION" ] || { say "$dir/bin/VERSION is not $VERSION"; return 1; }
  # The module it was built from (-trimpath keeps -ldflags, hence the -X stamp, out of the
  # build info; the binary logs the stamped version when it starts).
  go version -m "$dir/bin/karpenter-kwok" | grep -qE "^[[:space:]]+(mod|dep)[[:space:]]+sigs.k8s.io/karpenter[[:space:]]+$VERSION" \
    || { say "$dir/bin/karpenter-kwok is not built from sigs.k8s.io/karpenter $VERSION"; return 1; }
  for file in "${CRD_FILES[@]}"; do
    [ -f "$dir/crds/$(basename "$file")" ] || { say "missing $dir/crds/$(basename "$file")"; return 1; }
  done
}

if [ "${1:-}" = "--print-dir" ]; then echo "$DIR"; exit 0; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
command -v go >/dev/null || { say "go is not on PATH (Go >= 1.26 is needed to build Karpenter)"; exit 1; }
if check "$DIR" 2>/dev/null; then
  say "up to date: $DIR"
  exit 0
fi

export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
cd "$RECIPE"
say "Karpenter $VERSION (kwok provider) from Go modules into $DIR"
say "(the first build compiles ~900 packages: about 2.5 minutes of CPU; later builds reuse the Go caches)"
go mod download
SRC="$(go mod download -json "sigs.k8s.io/karpenter@$VERSION" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')"
TMP="$DIR.tmp.$$"
rm -rf "$TMP"; mkdir -p "$TMP/bin" "$TMP/crds"
trap 'rm -rf "$TMP"' EXIT
START="$(date +%s)"
go build -trimpath -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=$VERSION" \
  -o "$TMP/bin/karpenter-kwok" sigs.k8s.io/karpenter/kwok
echo "$VERSION" >"$TMP/bin/VERSION"
for file in "${CRD_FILES[@]}"; do
  [ -f "$SRC/$file" ] || { say "no $file in sigs.k8s.io/karpenter@$VERSION"; exit 1; }
  cp "$SRC/$file" "$TMP/crds/"
  chmod 0644 "$TMP/crds/$(basename "$file")"
done
check "$TMP"
mkdir -p "$(dirname "$DIR")"
rm -rf "$DIR"
mv "$TMP" "$DIR"
trap - EXIT
say "built in $(( $(date +%s) - START )) s: $DIR"

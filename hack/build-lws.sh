#!/usr/bin/env bash
# Build the LeaderWorkerSet controller (sigs.k8s.io/lws ./cmd, at the version hack/lws/go.mod pins)
# that the simulated cluster runs with `--addons lws`, with CGO off and the version stamped
# (`lws --version` prints it), and copy its CRD out of the same module. Only Go modules are fetched,
# through the module proxy; nothing else is downloaded and no binary is committed.
#
#   hack/build-lws.sh              build into .cache/lws/<key>/ (git ignores it): bin/lws and
#                                  crds/*.yaml; the key names the version and a hash of go.mod and
#                                  go.sum. A second run is a no-op.
#   hack/build-lws.sh --print-dir  print that directory (build nothing)
#
# A first build takes about 2 minutes of CPU with a warm Go module cache (docs/simulated-cluster.md
# has the measured figures); GOCACHE keeps what it compiled, shared with the control plane's build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECIPE="$ROOT/hack/lws"
VERSION="$(sed -n 's|^[[:space:]]*sigs.k8s.io/lws \(v[^ ]*\).*|\1|p' "$RECIPE/go.mod" | head -1)"
HASH="$(cat "$RECIPE/go.mod" "$RECIPE/go.sum" | sha256sum | cut -c1-12)"
OUT="$ROOT/.cache/lws/lws-${VERSION}_${HASH}"
# the CRDs the controller serves (DisaggregatedSet is not used, but the controller watches it),
# and its webhook configurations (the simulated cluster points them at the process it runs)
CRD_FILES=(config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml
  config/crd/bases/disaggregatedset.x-k8s.io_disaggregatedsets.yaml)
WEBHOOK_FILES=(config/webhook/manifests.yaml)

say() { echo "build-lws: $*" >&2; }
check() {  # check DIR: the binary at the pinned version and the CRDs
  local got
  got="$("$1/bin/lws" --version 2>/dev/null | sed -n 's/^Version: //p')"
  [ "$got" = "$VERSION" ] || { say "$1/bin/lws --version says '$got', expected '$VERSION'"; return 1; }
  [ "$(find "$1/crds" -name "*.yaml" | wc -l)" = "${#CRD_FILES[@]}" ] \
    && [ "$(find "$1/webhook" -name "*.yaml" | wc -l)" = "${#WEBHOOK_FILES[@]}" ]
}

if [ "${1:-}" = "--print-dir" ]; then echo "$OUT"; exit 0; fi
if check "$OUT" 2>/dev/null; then say "up to date: $OUT"; exit 0; fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
command -v go >/dev/null || { say "go is not on PATH (Go >= 1.26 is needed to build LeaderWorkerSet)"; exit 1; }
cd "$RECIPE"
say "LeaderWorkerSet $VERSION from Go modules into $OUT (about 2 minutes of CPU on a cold Go cache)"
go mod download
INFO="$(go mod download -json "sigs.k8s.io/lws@$VERSION")"
DIR="$(echo "$INFO" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')"
DATE="$(sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p' "$(echo "$INFO" | sed -n 's/.*"Info": "\([^"]*\)".*/\1/p')" | head -1)"
TMP="$OUT.tmp.$$"
rm -rf "$TMP"; mkdir -p "$TMP/bin" "$TMP/crds" "$TMP/webhook"
trap 'rm -rf "$TMP"' EXIT
START="$(date +%s)"
go build -trimpath -o "$TMP/bin/lws" \
  -ldflags "-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$VERSION -X sigs.k8s.io/lws/pkg/version.GitCommit= -X sigs.k8s.io/lws/pkg/version.BuildDate=$DATE" \
  sigs.k8s.io/lws/cmd
copy() {  # copy DIR FILE...: out of the module (read-only there)
  local into="$1" file; shift
  for file in "$@"; do cp "$DIR/$file" "$into/"; chmod 0644 "$into/$(basename "$file")"; done
}
copy "$TMP/crds" "${CRD_FILES[@]}"
copy "$TMP/webhook" "${WEBHOOK_FILES[@]}"
check "$TMP"
rm -rf "$OUT"; mv "$TMP" "$OUT"; trap - EXIT
say "built in $(( $(date +%s) - START )) s: $OUT"

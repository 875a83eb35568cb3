#!/usr/bin/env bash
# Make sure a helm binary exists and print its path on the LAST line of stdout (progress goes to
# stderr), so callers can do   HELM="$(hack/helm.sh | tail -n1)"
#
# Order of preference:
#   1. $HELM, when it is an executable file;
#   2. the cache ${FLEETSCHED_CACHE_DIR:-$HOME/.cache/fleetsched}/helm/<version>/helm;
#   3. a build from the Go module helm.sh/helm/v4 at a pinned release (no prebuilt helm can be
#      downloaded here), as hack/envtest.sh builds kube-apiserver. A lock stops two builds at once.
set -euo pipefail

HELM_VERSION=${FLEETSCHED_HELM_VERSION:-v4.3.2}
CACHE_DIR=${FLEETSCHED_CACHE_DIR:-$HOME/.cache/fleetsched}
root="$CACHE_DIR/helm/$HELM_VERSION"

log() { printf 'helm.sh: %s\n' "$*" >&2; }

if [[ -n "${HELM:-}" && -x "${HELM}" ]]; then
  echo "$HELM"
  exit 0
fi
if [[ -x "$root/helm" ]]; then
  echo "$root/helm"
  exit 0
fi

command -v go >/dev/null || { log "error: helm is not cached and 'go' is not on PATH to build it"; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

mkdir -p "$root"
exec 9>"$root/.build.lock"
flock 9
if [[ -x "$root/helm" ]]; then
  echo "$root/helm"
  exit 0
fi

start=$(date +%s)
rm -rf "$root/bin.tmp"
mkdir -p "$root/bin.tmp"
log "building helm.sh/helm/v4/cmd/helm@$HELM_VERSION (a cold build takes a few minutes)"
GOBIN="$root/bin.tmp" go install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" >&2
"$root/bin.tmp/helm" version >&2
mv "$root/bin.tmp/helm" "$root/helm"
rm -rf "$root/bin.tmp"
log "built in $(( $(date +%s) - start ))s into $root/helm"
echo "$root/helm"

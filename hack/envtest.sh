#!/usr/bin/env bash
# Make sure kube-apiserver, kubectl, kube-controller-manager and etcd exist and print their directory.
#
# The directory is printed on the LAST line of stdout; all progress goes to stderr, so callers can do
#   assets="$(hack/envtest.sh | tail -n1)"
#
# Order of preference:
#   1. $KUBEBUILDER_ASSETS, when it holds all four binaries (the envtest convention);
#   2. the cache directory ${FLEETSCHED_CACHE_DIR:-$HOME/.cache/fleetsched}/envtest/<k8s-version>/bin;
#   3. a build from the Go module k8s.io/kubernetes at a pinned release (newest first, falling back
#      to the next release when a build fails). No prebuilt Kubernetes binary can be downloaded here.
#
# The build happens in a scratch module that maps every staging module (k8s.io/api, ...) to its
# published v0.<minor>.<patch> tag, read from the release's own go.mod, because `go install` refuses
# modules with replace directives. etcd comes from go.etcd.io/etcd/server/v3 at the version that
# k8s.io/apiserver requires. GOMODCACHE/GOCACHE stay at their defaults, so a rebuild is warm.
# Only the first run pays; a lock file stops two concurrent callers from building twice.
set -euo pipefail

# Newest first; override with FLEETSCHED_K8S_VERSIONS="v1.36.3 v1.35.4".
K8S_VERSIONS=${FLEETSCHED_K8S_VERSIONS:-"v1.36.3 v1.35.4"}
CACHE_DIR=${FLEETSCHED_CACHE_DIR:-$HOME/.cache/fleetsched}
BINARIES=(kube-apiserver kubectl kube-controller-manager etcd)

log() { printf 'envtest: %s\n' "$*" >&2; }

has_all() {
  local dir=$1 b
  for b in "${BINARIES[@]}"; do
    [[ -x "$dir/$b" ]] || return 1
  done
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if has_all "$KUBEBUILDER_ASSETS"; then
    log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
    echo "$KUBEBUILDER_ASSETS"
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks one of: ${BINARIES[*]}; using the cache instead"
fi

for v in $K8S_VERSIONS; do
  if has_all "$CACHE_DIR/envtest/$v/bin"; then
    echo "$CACHE_DIR/envtest/$v/bin"
    exit 0
  fi
done

command -v go >/dev/null || { log "error: no binaries cached and 'go' is not on PATH to build them"; exit 1; }
command -v jq >/dev/null || { log "error: 'jq' is needed to read the release's go.mod"; exit 1; }

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

# build VERSION: builds the four binaries into $CACHE_DIR/envtest/VERSION/bin (atomically).
build() {
  local version=$1 minor patch staging_version root scratch gomod etcd_version start
  minor=$(cut -d. -f2 <<<"$version")
  patch=$(cut -d. -f3 <<<"$version")
  staging_version="v0.${minor}.${patch}"
  root="$CACHE_DIR/envtest/$version"
  scratch="$root/src"
  start=$(date +%s)
  rm -rf "$scratch" "$root/bin.tmp"
  mkdir -p "$scratch" "$root/bin.tmp"
  cd "$scratch"

  log "[$version] preparing scratch module in $scratch"
  go mod init fleetsched.local/envtest >&2 2>&1
  gomod=$(go mod download -json "k8s.io/kubernetes@$version" | jq -r .GoMod)
  [[ -f "$gomod" ]] || { log "[$version] could not download k8s.io/kubernetes go.mod"; return 1; }

  # Map each staging module (replaced by ./staging/src/... upstream) to its published tag.
  local edits=() mod
  while IFS= read -r mod; do
    edits+=("-replace=${mod}=${mod}@${staging_version}")
  done < <(go mod edit -json "$gomod" | jq -r '.Replace[]? | select(.New.Path | startswith("./staging/")) | .Old.Path')
  [[ ${#edits[@]} -gt 0 ]] || { log "[$version] no staging replaces found in $gomod"; return 1; }
  log "[$version] mapping ${#edits[@]} staging modules to $staging_version"
  # godebug lines only apply in the main module; copy the release's.
  while IFS= read -r mod; do
    edits+=("-godebug=${mod}")
  done < <(go mod edit -json "$gomod" | jq -r '.Godebug[]? | "\(.Key)=\(.Value)"')
  go mod edit "${edits[@]}"

  log "[$version] resolving modules (go get -tool)"
  go get -tool \
    "k8s.io/kubernetes/cmd/kube-apiserver@$version" \
    "k8s.io/kubernetes/cmd/kubectl@$version" \
    "k8s.io/kubernetes/cmd/kube-controller-manager@$version" >&2
  etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  log "[$version] etcd server $etcd_version (the version k8s.io/apiserver requires)"
  go get -tool "go.etcd.io/etcd/server/v3@$etcd_version" >&2

  local pkg ldflags="-s -w" build_date
  build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
  done

  log "[$version] compiling kube-apiserver, kubectl, kube-controller-manager (a cold build takes 10-20+ min)"
  go build -trimpath -tags notest -ldflags "$ldflags" -o "$root/bin.tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kube-controller-manager >&2
  log "[$version] compiling etcd"
  go build -trimpath -ldflags "-s -w" -o "$root/bin.tmp/etcd" go.etcd.io/etcd/server/v3 >&2

  "$root/bin.tmp/kube-apiserver" --version >&2
  "$root/bin.tmp/etcd" --version >&2
  rm -rf "$root/bin"
  mv "$root/bin.tmp" "$root/bin"
  log "[$version] built in $(( $(date +%s) - start ))s into $root/bin"
}

mkdir -p "$CACHE_DIR/envtest"
exec 9>"$CACHE_DIR/envtest/.build.lock"
log "waiting for the build lock $CACHE_DIR/envtest/.build.lock"
flock 9

for v in $K8S_VERSIONS; do
  # Another caller may have finished the build while we waited for the lock.
  if has_all "$CACHE_DIR/envtest/$v/bin"; then
    echo "$CACHE_DIR/envtest/$v/bin"
    exit 0
  fi
  if (build "$v"); then
    echo "$CACHE_DIR/envtest/$v/bin"
    exit 0
  fi
  log "[$v] build failed; trying the next release"
done
log "error: could not build the control-plane binaries for any of: $K8S_VERSIONS"
exit 1

#!/usr/bin/env bash
# The one test command (README quick start, and what .ci/run calls): installs everything it needs
# into .venv and a cache directory, provides a real kube-apiserver + etcd, then runs lint, every
# test tier and the conformance checkers through pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

export FLEETSCHED_CACHE_DIR="${FLEETSCHED_CACHE_DIR:-$HOME/.cache/fleetsched}"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$FLEETSCHED_CACHE_DIR/pip}"
mkdir -p "$FLEETSCHED_CACHE_DIR"

# Debian tools the scripts and tests use (hack/envtest.sh reads go.mod JSON with jq; hack/gen-certs.sh
# uses openssl; tests/unit/test_monitoring.py runs promtool, from Debian's prometheus package: 19 MB
# to fetch plus a few small JavaScript packages, seconds to install, where building promtool from its
# Go module fetches the whole Prometheus dependency tree).
missing=()
for tool in jq openssl; do command -v "$tool" >/dev/null || missing+=("$tool"); done
command -v promtool >/dev/null || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# The example out-of-tree plugin package too: the tests use it through its entry points.
.venv/bin/pip install --quiet --disable-pip-version-check -e '.[test]' -e examples/plugins/fleetsched-example-plugins

# Real control-plane binaries (built once from Go modules, then cached); the last line is their dir.
KUBEBUILDER_ASSETS="$(hack/envtest.sh | tail -n 1)"
export KUBEBUILDER_ASSETS
# helm for the chart tests (built once from its Go module, then cached); the last line is its path.
HELM="$(hack/helm.sh | tail -n 1)" && export HELM

.venv/bin/ruff check fleetsched tests bench hack
exec .venv/bin/pytest "$@"

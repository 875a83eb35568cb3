#!/usr/bin/env bash
# Start a local control plane (etcd + kube-apiserver, crds/ applied) in the foreground for trying
# fleetsched on one machine. Prints the KUBECONFIG to use; Ctrl-C stops everything.
#
#   hack/local-up.sh [--members N] [--controller-manager] [--dir DIR]
#
# The start-up logic lives in tests/support/controlplane.py (shared with the e2e fixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
python=.venv/bin/python
[[ -x $python ]] || python=${PYTHON:-python3}
KUBEBUILDER_ASSETS="$(hack/envtest.sh | tail -n 1)"
export KUBEBUILDER_ASSETS
exec "$python" -m tests.support.controlplane up "$@"

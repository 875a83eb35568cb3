#!/usr/bin/env bash
# Regenerate the hashed lock files the Dockerfile installs from with --require-hashes:
#   requirements.lock        every runtime dependency of pyproject.toml, pinned, with hashes;
#   requirements-build.lock  the build backend (setuptools, wheel) that turns fleetsched into a wheel.
#
#   hack/lock.sh
#
# pip-tools runs from a throwaway virtualenv; nothing is added to .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools"
"$tools/bin/pip" install --quiet pip-tools
# No local wheel directory in the lock: it must resolve from the package index alone.
env -u PIP_FIND_LINKS CUSTOM_COMPILE_COMMAND="hack/lock.sh" "$tools/bin/pip-compile" --quiet \
  --generate-hashes --strip-extras --no-emit-find-links --allow-unsafe \
  --output-file requirements.lock pyproject.toml
printf 'setuptools>=68\nwheel\n' | env -u PIP_FIND_LINKS CUSTOM_COMPILE_COMMAND="hack/lock.sh" \
  "$tools/bin/pip-compile" --quiet --generate-hashes --strip-extras --no-emit-find-links --allow-unsafe \
  --output-file requirements-build.lock -
echo "wrote requirements.lock requirements-build.lock"

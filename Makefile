.PHONY: simulate test lint local-up crds proto

# Quick start 1: install and schedule the shipped example fleet offline.
simulate:
	@[ -x .venv/bin/python ] || python3 -m venv .venv
	@.venv/bin/pip install --quiet --disable-pip-version-check -e .
	.venv/bin/fleetsched simulate examples/fleet.yaml examples/policies.yaml

# Quick start 2: install everything and run every test tier (what CI runs).
test:
	hack/test.sh

lint:
	.venv/bin/ruff check fleetsched tests bench hack

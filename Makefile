.PHONY: simulate test lint local-up dev-up crds proto cli-docs bench

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

# A real etcd + kube-apiserver on loopback with crds/ applied, in the foreground; prints the KUBECONFIG.
local-up:
	hack/local-up.sh

# Quick start 3: the whole stack live on loopback (control plane, garbage collector, webhook, controller,
# scheduler); prints a kubectl walk-through. DEV_UP_ARGS="--estimator member1" adds a member's estimator,
# DEV_UP_ARGS="--estimator member1 --descheduler" the descheduler too.
dev-up:
	@[ -x .venv/bin/python ] || python3 -m venv .venv
	@.venv/bin/pip install --quiet --disable-pip-version-check -e .
	KUBEBUILDER_ASSETS="$$(hack/envtest.sh | tail -n 1)" .venv/bin/python hack/dev_up.py $(DEV_UP_ARGS)

# Regenerate what is generated from the code (tests fail when these drift).
crds:
	.venv/bin/python hack/gen_crds.py
proto:
	.venv/bin/python hack/gen_proto.py
cli-docs:
	.venv/bin/python hack/gen_cli_docs.py

# Benchmarks print figures; they assert nothing.
bench:
	.venv/bin/python bench/core.py
	.venv/bin/python bench/estimator.py
	.venv/bin/python bench/webhook.py
	.venv/bin/python bench/queue_sort.py

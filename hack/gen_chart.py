#!/usr/bin/env python3
"""Copy the kustomize install (manifests/) into the Helm chart. ``--check`` only reports drift.

manifests/ is the one source of truth. Helm reads no file outside its chart, so the chart carries
copies of the kustomize bases under files/ (and the CRDs under crds/), and its templates load them
with .Files.Get and change only what a value selects: namespace, image, replicas, mode, sharding,
certificates, extra flags. A test runs this with --check, so the copies never drift from manifests/.

Usage: .venv/bin/python hack/gen_chart.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "manifests"
CHART = ROOT / "charts" / "fleetsched"

# The kustomize files the chart's templates read, relative to manifests/ (and to the chart's files/).
SOURCES: tuple[str, ...] = (
    "scheduler/rbac/rbac.yaml",
    "scheduler/workload/serviceaccount.yaml",
    "scheduler/workload/deployment.yaml",
    "scheduler/workload/service.yaml",
    "descheduler/rbac/rbac.yaml",
    "descheduler/workload/serviceaccount.yaml",
    "descheduler/workload/deployment.yaml",
    "descheduler/workload/service.yaml",
    "controller/rbac.yaml",
    "controller/claims-only.yaml",
    "controller/deployment.yaml",
    "controller/service.yaml",
    "webhook/base/service.yaml",
    "webhook/base/deployment.yaml",
    "webhook/base/webhook-configuration.yaml",
    "webhook/base/network-policy.yaml",
    "webhook/cert-manager/certificate.yaml",
    "webhook/cert-manager/kustomization.yaml",
    "estimator/template.yaml",
    "overlays/beside-karmada/scheduler.yaml",
    "overlays/beside-karmada/descheduler.yaml",
    "overlays/descheduler/kustomization.yaml",
    "overlays/instead-of-karmada/kustomization.yaml",
    "overlays/monitoring/servicemonitor.yaml",
    "overlays/monitoring/prometheusrule.yaml",
    "overlays/monitoring/fleetsched-dashboard.json",
    "overlays/sharded/kustomization.yaml",
    "overlays/sharded/rbac.yaml",
    "overlays/propagate-secrets/kustomization.yaml",
    "overlays/propagate-secrets/rbac.yaml",
    "overlays/propagate-rbac/kustomization.yaml",
    "overlays/propagate-rbac/rbac.yaml",
)


def expected() -> dict[Path, str]:
    """Every generated file of the chart and its content."""
    files = {CHART / "files" / rel: (MANIFESTS / rel).read_text(encoding="utf-8") for rel in SOURCES}
    for crd in sorted((MANIFESTS / "crds").glob("*.yaml")):
        if crd.name != "kustomization.yaml":
            files[CHART / "crds" / crd.name] = crd.read_text(encoding="utf-8")
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the chart's copies differ from manifests/")
    args = parser.parse_args()
    want = expected()
    on_disk = {p for d in ("files", "crds") for p in (CHART / d).rglob("*") if p.is_file()}
    stale = sorted(on_disk - want.keys())
    drifted = sorted(p for p, text in want.items()
                     if not p.is_file() or p.read_text(encoding="utf-8") != text)
    if args.check:
        for path in stale + drifted:
            print(f"{path.relative_to(ROOT)}: differs from manifests/ (run hack/gen_chart.py)",
                  file=sys.stderr)
        return 1 if stale or drifted else 0
    for path in stale:
        path.unlink()
    for path in drifted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(want[path], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the scheduling rate with a configuration file's profile(s), e.g. the example out-of-tree
plugins, against the default profile, in the same run. Prints figures and exits 0; asserts nothing.

The fleet file's Clusters get the labels the example plugins read (a tenant per cluster, round-robin
over the bindings' namespaces, and a price per hour), so ExampleTenant keeps about a quarter of the
clusters per binding and ExampleCost scores them. Rounds alternate between the profiles (default,
file, default, file, ...), each from a cold start (fresh Scheduler and snapshot), so they compare
as ratios on a noisy machine. ``cold`` rounds give every binding its own cpu request, as
``bench/core.py`` does, the path real fleets take.

    .venv/bin/python bench/plugins.py                                  # the example plugins' profile
    .venv/bin/python bench/plugins.py --config FILE [--repeat 3] [--no-cold] [FLEET]

Needs the example package installed (hack/test.sh does: pip install -e examples/plugins/...).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleetsched.api.load import load_files
from fleetsched.scheduler.config import load_configuration
from fleetsched.scheduler.framework import default_profile, in_tree_registry
from fleetsched.scheduler.framework.profile import ExtensionPoint, Profile
from fleetsched.scheduler.pipeline import Scheduler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import DEFAULT_FILES, _convert, _load_avg, _peak_rss_mib, distinct_requests, schedule_round

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "examples" / "plugins" / "cost-tenant-config.yaml"
TENANT, PRICE = "tenant.example.com/name", "cost.example.com/price-per-hour"


def label_clusters(clusters: Sequence[dict[str, Any]], tenants: Sequence[str]) -> list[dict[str, Any]]:
    """Each cluster a tenant (round-robin over ``tenants``) and a price 0.10..1.09 (spread, repeatable)."""
    out = []
    for i, cluster in enumerate(clusters):
        cluster = {**cluster, "metadata": dict(cluster["metadata"])}
        labels = dict(cluster["metadata"].get("labels") or {})
        labels[TENANT] = tenants[i % len(tenants)]
        labels[PRICE] = f"{0.10 + (i * 37 % 100) / 100:.2f}"
        cluster["metadata"]["labels"] = labels
        out.append(cluster)
    return out


def build(profile: Profile | None, out_of_tree: Any) -> Scheduler:
    if profile is None:
        return Scheduler()
    registry = in_tree_registry()
    registry.merge(out_of_tree)
    return Scheduler(profile=profile, registry=registry)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet", nargs="?", type=Path, default=DEFAULT_FILES[0])
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="default: %(default)s")
    parser.add_argument("--repeat", type=int, default=2, help="rounds per profile (default: %(default)s)")
    parser.add_argument("--no-cold", action="store_true", help="skip the distinct-request rounds")
    args = parser.parse_args(argv)
    if not args.fleet.exists():
        print(f"missing input: {args.fleet}", file=sys.stderr)
        return 2
    loaded_config = load_configuration(args.config)
    loaded = load_files([args.fleet])
    raw = [b.model_dump(mode="python", by_alias=True, exclude_unset=True) for b in loaded.bindings]
    tenants = sorted({b.get("metadata", {}).get("namespace") or "" for b in raw}) or [""]
    clusters = label_clusters(
        [c.model_dump(mode="json", by_alias=True, exclude_unset=True) for c in loaded.clusters], tenants
    )
    print(
        f"{args.fleet.name}: {len(clusters)} clusters (tenants {', '.join(tenants)}), {len(raw)} bindings; "
        f"profiles: default, {args.config.name} ({_load_avg()})",
        flush=True,
    )
    profiles: list[tuple[str, Profile | None]] = [("default", None)]
    default_filters = default_profile().enabled(ExtensionPoint.FILTER)
    for p in loaded_config.configuration.profiles:
        profiles.append((f"{args.config.name}:{p.scheduler_name}", p))
        if p.enabled(ExtensionPoint.FILTER) != default_filters:
            # The same profile with the default filters: what its score plugins alone cost.
            plugins = {**p.plugins, ExtensionPoint.FILTER: default_filters}
            scores_only = dataclasses.replace(p, plugins=plugins)
            profiles.append((f"{args.config.name}:{p.scheduler_name} (scores only)", scores_only))
    rounds = [("shared requests", _convert(raw))]
    if not args.no_cold:
        rounds.append(("cold: every binding its own request", _convert(distinct_requests(raw))))
    for kind, bindings in rounds:
        rates: dict[str, list[float]] = {name: [] for name, _ in profiles}
        for n in range(1, args.repeat + 1):
            for name, profile in profiles:
                def make(profile: Profile | None = profile) -> Scheduler:
                    return build(profile, loaded_config.out_of_tree)

                label = f"round {n} {name} ({kind})"
                rates[name].append(schedule_round(label, clusters, bindings, make=make))
        base = statistics.median(rates["default"])
        for name, _ in profiles[1:]:
            ratio = statistics.median(rates[name]) / base
            print(f"  {kind}: {name} / default (per CPU-second, medians): {ratio:.2f}", flush=True)
    print(f"  peak RSS: {_peak_rss_mib():.0f} MiB ({_load_avg()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

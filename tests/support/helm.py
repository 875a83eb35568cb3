"""helm for the chart tests: the binary hack/helm.sh provides (``$HELM`` when hack/test.sh exported
it, else hack/helm.sh builds or finds it in the cache), and ``helm template`` of charts/fleetsched."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "fleetsched"
# chart-testing's values sets (ci/*-values.yaml): each is linted, rendered and dry-run
CI_VALUES = tuple(sorted((CHART / "ci").glob("*-values.yaml")))
# image.repository is required (fleetsched publishes no image); the tests render with this one
IMAGE = "registry.example/fleetsched"


@functools.cache
def helm_binary() -> Path:
    """The helm binary; raises (the tests fail, never skip) when none can be provided."""
    given = os.environ.get("HELM")
    if given and os.access(given, os.X_OK):
        return Path(given)
    done = subprocess.run([str(ROOT / "hack" / "helm.sh")], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"hack/helm.sh could not provide helm:\n{done.stderr[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run helm with ``args``; with ``check`` a failure raises with its stderr."""
    done = subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


def template_text(*sets: str, namespace: str = "fleetsched-system", check: bool = True,
                  release: str = "fleetsched",
                  files: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart with ``--set`` values (``key=value`` each), after
    ``image.repository=IMAGE`` (a value in ``sets`` overrides it) and the values ``files``."""
    args = ["template", release, str(CHART), "--namespace", namespace]
    for path in files:
        args += ["--values", str(path)]
    for value in (f"image.repository={IMAGE}", *sets):
        args += ["--set", value]
    return helm(*args, check=check)


def template(*sets: str, namespace: str = "fleetsched-system",
             release: str = "fleetsched") -> list[dict[str, Any]]:
    """The objects ``helm template`` renders (the CRDs of crds/ are not among them)."""
    return [d for d in yaml.safe_load_all(template_text(*sets, namespace=namespace, release=release).stdout)
            if d]

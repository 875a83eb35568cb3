"""The install tree as a user prepares it before ``kubectl apply -k``, for the manifest tests: the
unit ones render it with kustomize (``from install_tree import ...``), tests/e2e/test_install.py
applies it to a real kube-apiserver (``from tests.unit.install_tree import ...``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"


def prepared_tree(destination: Path, members: tuple[str, ...]) -> Path:
    """A copy of manifests/ in ``destination`` with a generated certificate (hack/gen-certs.sh) and
    an estimator per member (hack/gen-estimators.sh), as README's install section says."""
    tree = destination / "manifests"
    shutil.copytree(MANIFESTS, tree, ignore=shutil.ignore_patterns("*.crt", "*.key"))
    subprocess.run([str(ROOT / "hack" / "gen-certs.sh"), str(tree / "certs")], check=True,
                   capture_output=True)
    subprocess.run([str(ROOT / "hack" / "gen-estimators.sh"), *members], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "ESTIMATORS_DIR": str(tree / "estimators")})
    return tree

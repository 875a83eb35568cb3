"""The Dockerfile built into an image and run, as the README's install section says.

``hack/build-image.sh`` builds the Dockerfile with podman (``--isolation chroot``; from a Debian
bookworm root made by mmdebstrap when no registry is reachable, cached under
$FLEETSCHED_CACHE_DIR) and ``--run`` starts the image with the flags this sandbox needs. Each
command runs as the image's own user (numeric 65532, never root), on a read-only root file
system with no network: the shipped example fleet scheduled offline, the version, a command's help.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fleetsched

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "hack" / "build-image.sh"
TAG = "localhost/fleetsched:test"


@pytest.fixture(scope="module")
def image() -> str:
    built = subprocess.run([str(SCRIPT), TAG], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if built.returncode != 0:
        pytest.fail(f"hack/build-image.sh failed ({built.returncode}):\n{built.stderr[-4000:]}",
                    pytrace=False)
    lines = built.stdout.strip().splitlines()
    assert lines[-1] == TAG
    assert lines[-2].startswith("size: ") and lines[-2].endswith(" MB")
    return TAG


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "--run", "--read-only", "--network", "none", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_runs_as_the_unprivileged_user(image: str) -> None:
    done = run("--entrypoint", "id", image)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["uid=65532(fleetsched)", "gid=65532(fleetsched)"]


def test_version(image: str) -> None:
    done = run(image, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"fleetsched {fleetsched.__version__}"


def test_simulates_the_example_fleet(image: str) -> None:
    done = run("-v", f"{ROOT / 'examples'}:/examples:ro", image,
               "simulate", "/examples/fleet.yaml", "/examples/policies.yaml")
    assert done.returncode == 0, done.stderr
    # The same table the host's own installation prints for the same input.
    local = subprocess.run([sys.executable, "-m", "fleetsched", "simulate",
                            "examples/fleet.yaml", "examples/policies.yaml"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert local.returncode == 0, local.stderr
    assert done.stdout == local.stdout
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert rows and all(row[3] == "True" for row in rows), done.stdout


def test_scheduler_help(image: str) -> None:
    done = run(image, "scheduler", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: fleetsched scheduler")
    assert "--leader-elect" in done.stdout and "--kubeconfig" in done.stdout


def test_every_module_imports(image: str) -> None:
    # The Dockerfile deletes parts of installed packages (kubernetes.aio, pip, setuptools): every
    # fleetsched module, and what they load lazily (kopf, kubernetes and its config loaders), still
    # imports.
    code = (
        "import importlib, pkgutil, fleetsched\n"
        "names = [m.name for m in pkgutil.walk_packages(fleetsched.__path__, 'fleetsched.')"
        " if not m.name.endswith('__main__')]\n"
        "names += ['kopf', 'kubernetes', 'kubernetes.config.kube_config',"
        " 'kubernetes.config.exec_provider']\n"
        "for name in names: importlib.import_module(name)\n"
        "print(len(names))\n"
    )
    done = run("--entrypoint", "python", image, "-c", code)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 100

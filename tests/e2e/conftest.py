"""Fixtures for end-to-end tests against a real kube-apiserver + etcd.

Every test under tests/e2e is marked ``e2e``. When the binaries cannot be provided the fixtures
raise with a message saying why: e2e tests fail, they are never skipped.

- ``control_plane``: one etcd + kube-apiserver (CRDs from crds/ applied) for the whole session.
- ``add_apiserver``: start further kube-apiservers on the shared etcd (member clusters, or an
  isolated control plane with ``apply_crds=True``); stopped when the test ends.
- ``kubectl``: run kubectl against the session control plane; returns stdout.
- ``isolated_apiserver``: a kube-apiserver with CRDs for one test module (Clusters are global).
- ``start_scheduler``: start ``fleetsched scheduler`` processes; stopped when the test ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.controlplane import APIServer, ControlPlane, ControlPlaneUnavailable
from tests.support.processes import SchedulerProcess


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    e2e_dir = Path(__file__).parent
    for item in items:
        if e2e_dir in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    try:
        plane = ControlPlane.start(workdir=tmp_path_factory.mktemp("controlplane"))
    except ControlPlaneUnavailable as exc:
        pytest.fail(f"e2e needs a real kube-apiserver + etcd and none could be provided: {exc}",
                    pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def add_apiserver(control_plane: ControlPlane) -> Iterator[Callable[..., APIServer]]:
    started: list[str] = []

    def start(name: str, *, apply_crds: bool = False) -> APIServer:
        server = control_plane.add_apiserver(name, apply_crds=apply_crds)
        started.append(name)
        return server

    yield start
    for name in started:
        control_plane.remove_apiserver(name)


@pytest.fixture
def kubectl(control_plane: ControlPlane) -> Callable[..., str]:
    return control_plane.kubectl


@pytest.fixture(scope="module")
def isolated_apiserver(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[APIServer]:
    """A kube-apiserver of its own (CRDs applied, namespace karmada-system) for one test module.

    Clusters are cluster-scoped and the scheduler sees all of them, so modules that create
    Clusters must not share an apiserver.
    """
    name = f"iso-{request.module.__name__.rsplit('.', 1)[-1].replace('_', '-')}"[:40]
    server = control_plane.add_apiserver(name, apply_crds=True)
    server.kubectl("create", "namespace", "karmada-system")
    try:
        yield server
    finally:
        control_plane.remove_apiserver(name)


@pytest.fixture
def start_scheduler(tmp_path: Path) -> Iterator[Callable[..., SchedulerProcess]]:
    """Start ``fleetsched scheduler`` processes against an apiserver; all are stopped afterwards."""
    started: list[SchedulerProcess] = []

    def start(server: APIServer, *args: str, wait_ready: bool = True, name: str = "") -> SchedulerProcess:
        log_path = tmp_path / f"scheduler-{name or len(started)}.log"
        proc = SchedulerProcess(kubeconfig=server.kubeconfig, log_path=log_path, extra_args=args)
        started.append(proc)
        proc.start(wait_ready=wait_ready)
        return proc

    yield start
    for proc in started:
        proc.stop()

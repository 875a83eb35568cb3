"""Fixtures for end-to-end tests against a real kube-apiserver + etcd.

Every test under tests/e2e is marked ``e2e``. When the binaries cannot be provided the fixtures
raise with a message saying why: e2e tests fail, they are never skipped.

- ``control_plane``: one etcd + kube-apiserver (CRDs from crds/ applied) for the whole session.
- ``add_apiserver``: start further kube-apiservers on the shared etcd (member clusters, or an
  isolated control plane with ``apply_crds=True``); stopped when the test ends.
- ``kubectl``: run kubectl against the session control plane; returns stdout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.controlplane import APIServer, ControlPlane, ControlPlaneUnavailable


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

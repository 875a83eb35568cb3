"""``fleetsched simulate`` output pinned byte for byte across speed work on loading and derivation.

The golden files were written by the code before the fast paths (C-accelerated YAML construction,
bindings derived as plain JSON with per-policy parts built once): a generated mid-size input
(12 Clusters, 40 PropagationPolicies, 160 Deployments, ``bench/fleet_gen.py --seed 5``, checked
in so that a change of the generator does not move it) and the shipped examples, each through
``-o json`` and ``-o yaml`` at a fixed "now". A legitimate change of the output regenerates them:

    .venv/bin/python tests/unit/test_simulate_golden.py --write
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fleetsched import simulate
from fleetsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
NOW = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
INPUTS = {
    "policies-12x40x160": ["policies-12x40x160.input.yaml.gz"],
    "examples": [str(ROOT / "examples" / "fleet.yaml"), str(ROOT / "examples" / "policies.yaml")],
}
# What simulate says on stderr about each input: the generated one has a policy in analytics that
# selects app-7 Deployments, of which analytics has none (they are in batch, web, payments, ml-jobs).
NOTES = {
    "policies-12x40x160": (
        "fleetsched simulate: note: PropagationPolicy analytics/policy-28 selects nothing: no template of "
        "the input matches its resourceSelectors, so it derives no binding\n"
    ),
    "examples": "",
}


def _files(label: str, tmp: Path) -> list[str]:
    out = []
    for name in INPUTS[label]:
        if name.endswith(".gz"):
            path = tmp / name.removesuffix(".gz")
            path.write_bytes(gzip.decompress((GOLDEN / name).read_bytes()))
            name = str(path)
        out.append(name)
    return out


def _simulate(files: list[str], *flags: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["simulate", *files, *flags])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("output", ["json", "yaml"])
@pytest.mark.parametrize("label", sorted(INPUTS))
def test_output_is_byte_identical_to_the_golden_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, label: str, output: str, jobs: str
) -> None:
    monkeypatch.setattr(simulate.command, "_clock", lambda: NOW)
    code, out, err = _simulate(_files(label, tmp_path), "-o", output, "--jobs", jobs)
    assert code == 0, err
    assert err == NOTES[label]
    expected = gzip.decompress((GOLDEN / f"{label}.{output}.gz").read_bytes()).decode()
    assert out.count("kind: ResourceBinding" if output == "yaml" else '"kind": "ResourceBinding"') > 5
    assert out == expected


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_derivation_in_workers_gives_the_golden_bytes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: str
) -> None:
    # Small chunks: with --jobs, templates are derived and checked in forked workers, chunk by chunk.
    monkeypatch.setattr(simulate.command, "_clock", lambda: NOW)
    monkeypatch.setattr(simulate.plan, "DERIVE_CHUNK", 7)
    files = _files("policies-12x40x160", tmp_path)
    code, out, err = _simulate(files, "-o", "json", "--jobs", jobs, "--progress")
    assert code == 0, err
    assert out == gzip.decompress((GOLDEN / "policies-12x40x160.json.gz").read_bytes()).decode()
    assert "deriving bindings" in err


def _write() -> None:  # pragma: no cover - run by hand when the output changes on purpose
    import tempfile

    simulate.command._clock = lambda: NOW  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        for label in INPUTS:
            for output in ("json", "yaml"):
                code, out, err = _simulate(_files(label, Path(tmp)), "-o", output)
                assert code == 0, err
                (GOLDEN / f"{label}.{output}.gz").write_bytes(gzip.compress(out.encode(), 9, mtime=0))


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] == ["--write"]:
        _write()

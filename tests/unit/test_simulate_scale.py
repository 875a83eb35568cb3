"""``fleetsched simulate`` on large inputs: --jobs, streaming output, the progress line, worker errors."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleetsched import simulate
from fleetsched.cli import main
from fleetsched.scheduler.pipeline import Scheduler
from tests.support import recorded

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [str(ROOT / "examples" / "fleet.yaml"), str(ROOT / "examples" / "policies.yaml")]
CASES = recorded.suite("conformance") / "cases"
NOW = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)

sys.path.insert(0, str(ROOT / "bench"))
import fleet_gen  # noqa: E402


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two runs compare byte for byte only at the same "now" (timestamps of the Scheduled condition).
    monkeypatch.setattr(simulate.command, "_clock", lambda: NOW)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Generated fleets of both shapes: given bindings, and policies + workloads to derive."""
    out = tmp_path_factory.mktemp("fleet")
    paths = []
    for name, argv in (
        ("bindings.yaml", ["--clusters", "12", "--bindings", "150"]),
        ("policies.yaml", ["--clusters", "12", "--policies", "20", "--workloads", "90", "--seed", "2"]),
    ):
        path = out / name
        assert fleet_gen.main([*argv, "-o", str(path)]) in (0, None)
        paths.append(str(path))
    return paths


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


VARIANTS = [
    pytest.param(("-o", "json"), id="json"),
    pytest.param(("-o", "yaml"), id="yaml"),
    pytest.param((), id="table"),
    pytest.param(("--explain",), id="explain"),
    pytest.param(("-o", "json", "--explain"), id="json explain"),
]


@pytest.mark.parametrize("flags", VARIANTS)
def test_jobs_give_the_same_bytes_in_the_same_order(
    capsys: pytest.CaptureFixture[str], generated: list[str], flags: tuple[str, ...]
) -> None:
    for files in (EXAMPLES, generated[:1], generated[1:]):
        one = _run(capsys, *files, *flags, "--jobs", "1")
        three = _run(capsys, *files, *flags, "--jobs", "3")
        assert one[0] == 0, one[2]
        assert three == one
        assert one[1].strip()


def test_generated_fleet_has_enough_bindings_to_spread(
    capsys: pytest.CaptureFixture[str], generated: list[str]
) -> None:
    code, out, _ = _run(capsys, generated[1], "-o", "json", "--jobs", "3")
    assert code == 0
    names = [i["metadata"]["name"] for i in json.loads(out)["items"]]
    # More bindings than one chunk per worker: the order really is put back together.
    assert len(names) > 3 * 4 and len(set(names)) == len(names)


@pytest.mark.parametrize("files", ["examples", "generated", "empty"])
def test_streamed_output_has_the_bytes_of_one_dump(
    capsys: pytest.CaptureFixture[str], generated: list[str], tmp_path: Path, files: str
) -> None:
    # The previous implementation wrote json.dumps(List, indent=2) and yaml.safe_dump(List) at the end.
    if files == "empty":
        (tmp_path / "none.yaml").write_text("---\n")
        argv = [str(tmp_path / "none.yaml")]
    else:
        argv = EXAMPLES if files == "examples" else generated[:1]
    code, out, _ = _run(capsys, *argv, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["apiVersion", "kind", "items"]
    assert out == json.dumps(doc, indent=2) + "\n"
    code, out_yaml, _ = _run(capsys, *argv, "-o", "yaml")
    assert code == 0
    assert out_yaml == yaml.safe_dump(doc, sort_keys=False)
    assert (len(doc["items"]) == 0) == (files == "empty")


@pytest.mark.recorded("conformance")
def test_conformance_inputs_stream_the_bytes_of_one_dump(capsys: pytest.CaptureFixture[str]) -> None:
    inputs = sorted(CASES.glob("*.input.yaml"))
    assert len(inputs) >= 40
    for path in inputs:
        code, out, err = _run(capsys, str(path), "-o", "json", "--jobs", "2")
        assert code == 0, err
        doc = json.loads(out)
        assert out == json.dumps(doc, indent=2) + "\n", path


def test_a_failing_worker_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], generated: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Scheduler.schedule

    def schedule(self: Scheduler, binding, status, snapshot):  # type: ignore[no-untyped-def]
        if binding.name == "deployment-42-deployment":
            raise RuntimeError("boom in the core")
        return real(self, binding, status, snapshot)

    monkeypatch.setattr(Scheduler, "schedule", schedule)
    for jobs in ("1", "3"):
        code, _, err = _run(capsys, generated[0], "-o", "json", "--jobs", jobs)
        assert code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err
        assert lines[0].startswith("fleetsched simulate: ResourceBinding ")
        assert "/deployment-42-deployment: " in lines[0]
        assert lines[0].endswith(": scheduling failed: RuntimeError: boom in the core")


def test_a_worker_that_dies_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], generated: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def schedule(self: Scheduler, binding, status, snapshot):  # type: ignore[no-untyped-def]
        os._exit(9)  # as the OOM killer would end it

    monkeypatch.setattr(Scheduler, "schedule", schedule)
    code, _, err = _run(capsys, generated[0], "-o", "json", "--jobs", "2")
    assert code == 2
    assert err.strip().splitlines() == [
        "fleetsched simulate: a --jobs worker process died (out of memory or killed?); try fewer --jobs"
    ]


def test_bad_input_is_refused_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], generated: list[str], tmp_path: Path
) -> None:
    # The last binding is bad: nothing of the others reaches stdout.
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\n"
        "metadata: {name: zz-bad, namespace: default}\n"
        "spec: {resource: {apiVersion: apps/v1, kind: Deployment, name: x}, replicas: 99999999999}\n"
    )
    code, out, err = _run(capsys, generated[0], str(bad), "-o", "json", "--jobs", "2")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "spec.replicas" in err


def test_jobs_must_be_a_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", *EXAMPLES, "--jobs", "-1"])
    assert exc.value.code == 2
    assert "--jobs: must be 0 (one per CPU) or more, got -1" in capsys.readouterr().err


def test_progress_on_a_pipe_only_when_asked(capsys: pytest.CaptureFixture[str], generated: list[str]) -> None:
    code, out, err = _run(capsys, generated[1], "-o", "json")
    assert code == 0 and err == ""
    code, out_progress, err = _run(capsys, generated[1], "-o", "json", "--progress")
    assert code == 0 and out_progress == out  # stdout unchanged
    lines = err.splitlines()
    assert lines[0] == "fleetsched simulate: loading"
    for phase in ("loading", "checking bindings", "admitting policies", "deriving bindings", "scheduling"):
        assert any(line.startswith(f"fleetsched simulate: {phase}") for line in lines), phase
    items = len(json.loads(out)["items"])
    assert f"fleetsched simulate: scheduling {items}/{items} bindings" in lines
    assert lines[-1].startswith(f"fleetsched simulate: scheduled {items} bindings in ")
    assert "\r" not in err  # a file or pipe gets whole lines


def test_progress_on_a_terminal(
    capsys: pytest.CaptureFixture[str], generated: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real pseudo-terminal as stderr: redrawn in place, cleared before the table is written.
    primary, secondary = os.openpty()
    terminal = io.TextIOWrapper(os.fdopen(secondary, "wb", buffering=0), write_through=True)
    assert terminal.isatty()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(simulate.Progress, "DELAY", 0.0)  # the run is shorter than two seconds
    try:
        code = main(["simulate", generated[1], "--jobs", "2"])
        terminal.flush()
        seen = _drain(primary)
    finally:
        terminal.close()
        os.close(primary)
    assert code == 0
    table = capsys.readouterr().out
    assert table.startswith("KIND ")  # stdout is not the terminal: untouched
    assert "\rfleetsched simulate: loading" in seen
    assert "fleetsched simulate: scheduling " in seen and "\x1b[K" in seen
    # The last word, kept on its own line once the redrawn one is cleared.
    last = seen.rstrip("\r\n").rpartition("\r")[2]
    assert last.startswith("\x1b[Kfleetsched simulate: scheduled ") and "(2 processes) in " in last


def test_no_progress_on_a_terminal_for_short_work(
    capsys: pytest.CaptureFixture[str], generated: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    primary, secondary = os.openpty()
    terminal = io.TextIOWrapper(os.fdopen(secondary, "wb", buffering=0), write_through=True)
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(simulate.Progress, "DELAY", 3600.0)
    try:
        code = main(["simulate", generated[1], "-o", "json"])
        terminal.flush()
        seen = _drain(primary)
    finally:
        terminal.close()
        os.close(primary)
    assert code == 0 and seen == ""


def _drain(fd: int) -> str:
    import select

    chunks = []
    while select.select([fd], [], [], 0.2)[0]:
        data = os.read(fd, 65536)
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


def test_a_real_process_with_jobs_on_a_pipe(generated: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", generated[0], "-o", "json", "--jobs", "2"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(json.loads(proc.stdout)["items"]) > 100


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"a": [], "b": {}, "c": [{}, [], [1, 2.5, -0.0]], "d": None}, id="empties and numbers"),
        pytest.param({"é\"\n\\<>&\u2028": "日本\t", "x": [True, False, 10**30, 1e300]}, id="text escapes"),
        pytest.param({"nan": float("nan"), "inf": [float("inf")]}, id="NaN falls back"),
        pytest.param({1: "int key", "t": (1, 2)}, id="non-string key and tuple fall back"),
        pytest.param({"when": dt.datetime(2026, 1, 2, tzinfo=dt.UTC)}, id="time falls back"),
    ],
)
def test_a_list_item_is_written_as_json_dumps_would(value: object) -> None:
    expected = json.dumps(value, indent=2, default=simulate.plan.json_default).replace("\n", "\n    ")
    assert simulate.pool._json_item(value) == expected

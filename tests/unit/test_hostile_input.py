"""Hostile YAML for the offline CLIs (issue 14 item 5): one line on stderr and exit 2, never a
traceback, and bounded memory.

Every case runs ``fleetsched simulate`` / ``fleetsched estimate`` as a child process under an
address-space limit (RLIMIT_AS), so a blow-up fails the test with a MemoryError traceback (or the
timeout) instead of taking the machine down.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1 << 30  # address space of the child: well above a normal run, far below a blow-up

CLUSTER = """\
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1}
spec: {region: r1}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  conditions:
  - {type: Ready, status: "True", reason: R, message: m, lastTransitionTime: "2026-01-01T00:00:00Z"}
  resourceSummary: {allocatable: {pods: "20", cpu: "8"}, allocated: {pods: "0"}}
"""

BINDING = """\
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: default}
  replicas: 2
  placement: {clusterAffinity: {clusterNames: [m1]}}
status:
  aggregatedStatus:
  - clusterName: m1
    status:
      readyReplicas: 2
"""

ESTIMATE = """\
kind: EstimatorOptions
clusterName: m1
---
{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", pods: "10"}}}
---
{kind: MaxAvailableReplicasRequest, cluster: m1, replicaRequirements: {resourceRequest: {cpu: "1"}}}
"""


def alias_bomb(indent: str, levels: int = 9) -> str:
    lines = [f"{indent}l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"{indent}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cli(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "fleetsched", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        preexec_fn=_limit_memory,
        cwd=ROOT,
        env=env,
    )
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def assert_one_line_error(code: int, err: str, command: str) -> str:
    assert "Traceback" not in err and "MemoryError" not in err, err[-2000:]
    lines = err.strip().splitlines()
    assert code == 2, (code, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith(f"fleetsched {command}: "), err[-2000:]
    return lines[0]


def test_the_valid_inputs_pass_under_the_same_limit(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(CLUSTER + "---\n" + BINDING)
    code, out, err = run_cli("simulate", str(tmp_path / "ok.yaml"))
    assert code == 0 and "m1:2" in out, err
    code, out, err = run_cli("estimate", "-", stdin=ESTIMATE.encode())
    assert code == 0 and '"maxReplicas": 4' in out, err


def test_alias_bomb_in_a_free_form_field_is_refused_before_expansion(tmp_path: Path) -> None:
    # 914 bytes: 9**9 strings inside status.aggregatedStatus[0].status, which the models keep free-form
    text = CLUSTER + "---\n" + BINDING + alias_bomb(" " * 6)
    (tmp_path / "bomb.yaml").write_text(text)
    line = assert_one_line_error(*run_cli("simulate", str(tmp_path / "bomb.yaml"))[::2], "simulate")
    assert "bomb.yaml: document 2 (line 30, column 11): status.aggregatedStatus[0].status.l7: " in line
    assert "Forbidden: aliases expand the document by 490329036 nodes" in line


def test_alias_bomb_in_estimate_is_refused(tmp_path: Path) -> None:
    text = (
        ESTIMATE
        + "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n---\ndata:\n"
        + alias_bomb("  ")
    )
    code, _, err = run_cli("estimate", "-", stdin=text.encode())
    assert "Forbidden: aliases expand" in assert_one_line_error(code, err, "estimate")


@pytest.mark.parametrize("where", ["spec.replicas", "free-form status"])
def test_a_5000_digit_integer_is_one_line(tmp_path: Path, where: str) -> None:
    huge = "9" * 5000
    text = (
        CLUSTER
        + "---\n"
        + (
            BINDING.replace("replicas: 2", f"replicas: {huge}")
            if where == "spec.replicas"
            else BINDING.replace("readyReplicas: 2", f"readyReplicas: {huge}")
        )
    )
    code, _, err = run_cli("simulate", "-", stdin=text.encode())
    assert "an integer of 5000 digits: out of range" in assert_one_line_error(code, err, "simulate")
    code, _, err = run_cli("estimate", "-", stdin=(ESTIMATE + f"---\n{{kind: Pod, n: {huge}}}\n").encode())
    assert "an integer of 5000 digits" in assert_one_line_error(code, err, "estimate")


@pytest.mark.parametrize("command", ["simulate", "estimate"])
def test_binary_stdin_and_non_utf8_files_are_one_line(tmp_path: Path, command: str) -> None:
    binary = bytes(range(256)) * 4
    code, _, err = run_cli(command, "-", stdin=binary)
    line = assert_one_line_error(code, err, command)
    # bytes 0..127 are ASCII (one newline among them); 0x80 is the first that UTF-8 cannot start with
    assert line == (
        f"fleetsched {command}: - (line 2, column 118): not UTF-8 text: invalid start byte (byte 0x80); "
        "is it a binary file?"
    )
    latin1 = ((CLUSTER if command == "simulate" else ESTIMATE) + "# café\n").encode("latin-1")
    (tmp_path / "latin1.yaml").write_bytes(latin1)
    code, _, err = run_cli(command, str(tmp_path / "latin1.yaml"))
    assert "latin1.yaml (line " in assert_one_line_error(code, err, command)


def test_estimate_malformed_yaml_is_one_line_with_position() -> None:
    code, _, err = run_cli("estimate", "-", stdin=(ESTIMATE + "---\nkind: [\n").encode())
    line = assert_one_line_error(code, err, "estimate")
    assert line.startswith("fleetsched estimate: -: document 4 (line 9, column 1): malformed YAML:")


@pytest.mark.parametrize("command", ["simulate", "estimate"])
def test_duplicate_mapping_keys_are_refused_with_the_line(command: str) -> None:
    text = (CLUSTER + "---\n" + BINDING) if command == "simulate" else ESTIMATE
    text = text.replace("metadata: {name: m1}", "metadata: {name: m1, name: m2}", 1)
    text = text.replace("{name: n1}", "{name: n1, name: n2}")
    code, _, err = run_cli(command, "-", stdin=text.encode())
    line = assert_one_line_error(code, err, command)
    assert 'Duplicate value: "name": mapping key already defined at line' in line


def test_two_objects_with_the_same_name_are_refused_naming_both(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(CLUSTER + "---\n" + BINDING)
    (tmp_path / "b.yaml").write_text(BINDING.replace("replicas: 2", "replicas: 3"))
    code, _, err = run_cli("simulate", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"))
    line = assert_one_line_error(code, err, "simulate")
    assert line.endswith(
        "b.yaml: document 1: metadata.name: Duplicate value: ResourceBinding default/web is also "
        f"defined in {tmp_path / 'a.yaml'}: document 2"
    )


# ---------------------------------------------------------------------------------------------
# Fuzz: hostile fragments spliced into valid input, through the real CLIs

settings.register_profile(
    "hostile-input",
    max_examples=int(os.environ.get("HOSTILE_INPUT_EXAMPLES", "12")),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FRAGMENTS = [
    alias_bomb("      "),
    "      n: " + "7" * 5000 + "\n",
    "      n: 0x" + "f" * 3000 + "\n",
    "      readyReplicas: 3\n",  # a duplicate key
    "      when: 2026-02-30\n",
    "      deep: " + "[" * 5000 + "]" * 5000 + "\n",
    "      rec: &r [*r]\n",
    "\t\tbad: indentation\n",
    "      x: !!python/object:os.system {}\n",
    "      b: !!binary AAAA====\n",
    "      s: !!set {a, b}\n",
    "---\n" + BINDING,  # the same binding twice
    "...\n%YAML 9.9\n---\n",
    '      u: "\\udc80"\n',
]


@st.composite
def hostile_inputs(draw: st.DrawFn, command: str) -> bytes:
    text = (CLUSTER + "---\n" + BINDING if command == "simulate" else ESTIMATE).encode()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            piece = draw(st.sampled_from(FRAGMENTS)).encode()
        elif kind == 1:
            piece = draw(st.binary(min_size=1, max_size=64))
        else:
            piece = draw(st.text(min_size=1, max_size=40)).encode("utf-8", "surrogatepass")
        at = draw(st.integers(0, len(text)))
        text = text[:at] + piece + text[at:] if kind != 3 else text[:at]  # kind 3: truncation
    return text


@settings(settings.get_profile("hostile-input"))
@given(
    case=st.sampled_from(["simulate", "estimate"]).flatmap(lambda c: st.tuples(st.just(c), hostile_inputs(c)))
)
def test_fuzzed_input_is_a_result_or_one_line(case: tuple[str, bytes]) -> None:
    command, data = case
    code, _, err = run_cli(command, "-", stdin=data)
    assert "Traceback" not in err and "MemoryError" not in err, err[-3000:]
    assert code in (0, 2), (code, err[-3000:])
    if code == 2:
        lines = [line for line in err.strip().splitlines() if "note:" not in line and "warning:" not in line]
        assert len(lines) == 1 and lines[0].startswith(f"fleetsched {command}: "), err[-3000:]


# ---- files that are not regular, or too large (issue 30 item 6) ----------------------------------------

OFFLINE = {
    "simulate": ("simulate",),
    "estimate": ("estimate",),
    "what-if": ("what-if", "--kubeconfig", "/nonexistent", "-f"),  # the files are read before the server
}


def _special(tmp_path: Path, kind: str) -> str:
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)  # no writer: a blocking open would never return
        return str(path)
    return kind


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
@pytest.mark.parametrize("command", sorted(OFFLINE))
def test_a_device_or_fifo_input_is_refused_without_being_read(
    tmp_path: Path, command: str, kind: str
) -> None:
    path = _special(tmp_path, kind)
    code, out, err = run_cli(*OFFLINE[command], path)
    assert out == ""
    assert assert_one_line_error(code, err, command) == (
        f"fleetsched {command}: {path}: cannot read the input file: not a regular file"
    )


@pytest.mark.parametrize(("command", "limit"), [("simulate", 128 << 20), ("what-if", 16 << 20)])
def test_an_input_past_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, command: str, limit: int
) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(limit + 1)  # sparse: the size is what is checked, nothing is read
    code, out, err = run_cli(*OFFLINE[command], str(big))
    assert out == ""
    assert assert_one_line_error(code, err, command) == (
        f"fleetsched {command}: {big}: the input file holds {limit + 1} bytes, more than the {limit} allowed"
    )


def test_what_if_standard_input_past_the_limit_is_refused() -> None:
    limit = 16 << 20
    code, out, err = run_cli(*OFFLINE["what-if"], "-", stdin=b" " * (limit + 1))
    assert out == ""
    assert assert_one_line_error(code, err, "what-if") == (
        f"fleetsched what-if: -: standard input holds more than the {limit} bytes allowed"
    )

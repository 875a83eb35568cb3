"""``featureGates`` and ``assumptionTTL`` in the configuration file: loading, defaults, refusals,
and how they meet ``--feature-gates`` / ``--assumption-ttl`` (scheduler, simulate, config)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.cli import main
from fleetsched.controller.scheduler import command as scheduler_cmd
from fleetsched.flags import merge_feature_gates
from fleetsched.scheduler.config import ExtensionPoint, SchedulerConfiguration, default_profile

from .helpers import a_file, error_of, parse

GATE = "SchedulingOvercommitProtection"
TTL = "c.yaml: assumptionTTL"


def write(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(a_file(**fields)))
    return path


def scheduler_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    return parser.parse_args(list(argv))


# ---- loading and defaults ------------------------------------------------------------------------


def test_the_gates_and_the_ttl_load_as_written() -> None:
    configuration = parse(a_file(featureGates={GATE: True, "Failover": False}, assumptionTTL="1m30s"))
    assert dict(configuration.feature_gates) == {GATE: True, "Failover": False}
    assert configuration.assumption_ttl == 90.0


def test_not_written_means_no_gate_named_and_karmadas_five_minutes() -> None:
    configuration = parse(a_file())
    assert dict(configuration.feature_gates) == {}
    assert configuration.assumption_ttl == 300.0
    assert configuration == SchedulerConfiguration()
    assert parse(a_file(featureGates={})) == SchedulerConfiguration()


def test_the_files_workload_affinity_gate_brings_its_plugins() -> None:
    on = parse(a_file(featureGates={"WorkloadAffinity": True}))
    assert on.profiles == (default_profile(workload_affinity=True),)
    assert "WorkloadAffinity" in [e.name for e in on.profiles[0].enabled(ExtensionPoint.FILTER)]
    # The file's word decides over the caller's default (a flag that says otherwise is a conflict).
    off = parse(a_file(featureGates={"WorkloadAffinity": False}), workload_affinity=True)
    assert off.profiles == (default_profile(),)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            a_file(assumptionTTL="5 minutes"),
            "c.yaml: assumptionTTL: must be a duration such as 5s, 500ms or 1m30s",
            id="bad duration",
        ),
        pytest.param(
            a_file(assumptionTTL=300),
            "c.yaml: assumptionTTL: must be a duration string such as 5s or 500ms",
            id="a bare number",
        ),
        pytest.param(a_file(assumptionTTL="0s"), f"{TTL}: must be a positive duration", id="zero"),
        pytest.param(a_file(assumptionTTL="0"), f"{TTL}: must be a positive duration", id="0"),
        pytest.param(a_file(assumptionTTL="-1m"), f"{TTL}: must not be negative", id="negative"),
        pytest.param(a_file(assumptionTtl="1m"),
                     'c.yaml (line 3, column 1): strict decoding error: unknown field "assumptionTtl"',
                     id="misspelt field"),
        pytest.param(
            a_file(featureGates={"Nope": True}),
            "c.yaml: featureGates.Nope: unrecognized feature gate: Nope",
            id="unknown gate",
        ),
        pytest.param(
            a_file(featureGates={GATE: "true"}),
            f"c.yaml: featureGates.{GATE}: must be true or false (got str)",
            id="a string for a bool",
        ),
        pytest.param(
            a_file(featureGates={GATE: 1}),
            f"c.yaml: featureGates.{GATE}: must be true or false (got int)",
            id="a number for a bool",
        ),
        pytest.param(
            a_file(featureGates=[GATE]), "c.yaml: featureGates: must be a mapping (got list)", id="a list"
        ),
        pytest.param(
            a_file(featureGates={"Nope": True}, assumptionTTL="0s"),
            "c.yaml: featureGates.Nope: unrecognized feature gate: Nope (and 1 more problem)",
            id="both",
        ),
    ],
)
def test_a_bad_gate_or_ttl_is_one_line_naming_the_field(doc: dict[str, Any], message: str) -> None:
    assert error_of(doc) == message


# ---- beside the flags ------------------------------------------------------------------------------


def test_merge_is_the_union_and_a_gate_named_twice_must_agree() -> None:
    assert merge_feature_gates({"A": True}, {"B": False}, source="f") == {"A": True, "B": False}
    assert merge_feature_gates({"A": True}, {"A": True}, source="f") == {"A": True}
    with pytest.raises(ValueError, match=r"^--feature-gates=A=false contradicts f \(featureGates.A: true\)"):
        merge_feature_gates({"A": False}, {"A": True}, source="f")


def test_the_files_gate_turns_overcommit_protection_on_in_the_live_scheduler(tmp_path: Path) -> None:
    config = write(tmp_path, featureGates={GATE: True}, assumptionTTL="90s")
    args, _ = scheduler_cmd.load_configuration(
        scheduler_args("--config", str(config), "--feature-gates", "MultiplePodTemplatesScheduling=true")
    )
    assert args.feature_gates == {GATE: True, "MultiplePodTemplatesScheduling": True}
    operator = scheduler_cmd.operator_config(args)
    assert operator.overcommit_protection is True
    assert operator.assumption_ttl == 90.0
    assert scheduler_cmd.scheduler_settings(args).multiple_pod_templates is True


def test_without_the_gate_anywhere_the_live_scheduler_keeps_it_off(tmp_path: Path) -> None:
    args, _ = scheduler_cmd.load_configuration(scheduler_args("--config", str(write(tmp_path))))
    operator = scheduler_cmd.operator_config(args)
    assert (operator.overcommit_protection, operator.assumption_ttl) == (False, 300.0)


def test_a_flag_gate_agreeing_with_the_file_is_fine(tmp_path: Path) -> None:
    config = write(tmp_path, featureGates={GATE: True}, assumptionTTL="5m")
    args, _ = scheduler_cmd.load_configuration(
        scheduler_args("--config", str(config), "--feature-gates", f"{GATE}=true", "--assumption-ttl", "300s")
    )
    assert args.feature_gates == {GATE: True} and args.assumption_ttl == 300.0


@pytest.mark.parametrize(
    ("fields", "flags", "message"),
    [
        pytest.param(
            {"featureGates": {GATE: True}},
            ("--feature-gates", f"{GATE}=false"),
            f"--feature-gates={GATE}=false contradicts {{file}} (featureGates.{GATE}: true); "
            "set it in one place",
            id="a gate",
        ),
        pytest.param(
            {},
            ("--assumption-ttl", "1m"),
            "--assumption-ttl=60.0 contradicts {file} (assumptionTTL: 5m); set it in one place",
            id="the default ttl",
        ),
        pytest.param(
            {"assumptionTTL": "90s"},
            ("--assumption-ttl", "5m"),
            "--assumption-ttl=300.0 contradicts {file} (assumptionTTL: 1m30s); set it in one place",
            id="a written ttl",
        ),
    ],
)
def test_a_flag_contradicting_the_file_is_a_conflict(
    tmp_path: Path, fields: dict[str, Any], flags: tuple[str, ...], message: str
) -> None:
    config = write(tmp_path, **fields)
    with pytest.raises(scheduler_cmd.FlagConflict) as caught:
        scheduler_cmd.load_configuration(scheduler_args("--config", str(config), *flags))
    assert str(caught.value) == message.format(file=config)


def test_the_files_workload_affinity_gate_reaches_the_scheduler_and_its_profiles(tmp_path: Path) -> None:
    args, loaded = scheduler_cmd.load_configuration(
        scheduler_args("--config", str(write(tmp_path, featureGates={"WorkloadAffinity": True})))
    )
    assert args.feature_gates == {"WorkloadAffinity": True}
    assert loaded is not None and loaded.configuration.profiles == (default_profile(workload_affinity=True),)
    assert scheduler_cmd.scheduler_settings(args).workload_affinity  # honoured live, not refused


# ---- fleetsched config and simulate ---------------------------------------------------------------


def test_config_default_prints_the_gates_it_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "default", "--feature-gates", f"{GATE}=true"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out)["featureGates"] == {GATE: True}
    assert dict(parse(out).feature_gates) == {GATE: True}


def test_config_validate_refuses_a_conflicting_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, featureGates={"WorkloadAffinity": True})
    assert main(["config", "validate", str(config)]) == 0
    assert "WorkloadAffinity" in capsys.readouterr().out  # the gate's filters are in the profile
    assert main(["config", "validate", str(config), "--feature-gates", "WorkloadAffinity=false"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"fleetsched config validate: --feature-gates=WorkloadAffinity=false contradicts {config} "
        "(featureGates.WorkloadAffinity: true); set it in one place\n"
    )


def test_simulate_refuses_a_gate_contradicting_its_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, featureGates={GATE: True})
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("")
    code = main(["simulate", str(fleet), "--config", str(config), "--feature-gates", f"{GATE}=false"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (
        f"fleetsched simulate: --feature-gates={GATE}=false contradicts {config} "
        f"(featureGates.{GATE}: true); set it in one place\n"
    )

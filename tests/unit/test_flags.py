"""Bind-address and feature-gate flags read the same way by every command."""

from __future__ import annotations

import argparse

import pytest

from fleetsched.controller.policy import command as policy_cmd
from fleetsched.controller.runtime import http
from fleetsched.controller.scheduler import command as scheduler_cmd
from fleetsched.detector import FeatureGates
from fleetsched.estimator import server_cmd as estimator_cmd
from fleetsched.flags import (
    KARMADA_FEATURE_GATE_STAGES,
    KARMADA_FEATURE_GATES,
    parse_bind_address,
    parse_feature_gates,
)
from fleetsched.webhook import server_cmd as webhook_cmd


@pytest.mark.parametrize(
    ("text", "expected"),
    [(":8080", ("0.0.0.0", 8080)), ("127.0.0.1:9", ("127.0.0.1", 9)), ("[::1]:9", ("::1", 9)), ("0", None)],
)
def test_bind_address(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize("text", ["localhost", "host:", ":http"])
def test_a_bad_bind_address_names_the_value(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text)):
        parse_bind_address(text)


def test_every_command_uses_the_one_parser() -> None:
    assert http.split_address is webhook_cmd.parse_bind_address is estimator_cmd.parse_bind_address


def test_feature_gates_parse_as_kubernetes_does() -> None:
    assert parse_feature_gates(" WorkloadAffinity=true, Failover=F ,PropagateDeps=1,") == {
        "WorkloadAffinity": True, "Failover": False, "PropagateDeps": True,
    }
    assert parse_feature_gates("") == {}
    with pytest.raises(ValueError, match=r"^unrecognized feature gate: PolicyPreemption$"):
        parse_feature_gates("PolicyPreemption=true")  # the Go identifier; the flag name differs
    with pytest.raises(ValueError, match=r"^missing bool value for Failover$"):
        parse_feature_gates("Failover")
    with pytest.raises(ValueError, match=r"strconv\.ParseBool: parsing 'yes': invalid syntax"):
        parse_feature_gates("Failover=yes")


def test_all_alpha_and_all_beta_set_every_gate_of_their_stage_as_component_base_does() -> None:
    alpha = parse_feature_gates("AllAlpha=true")
    assert alpha["WorkloadAffinity"] and alpha["SchedulingOvercommitProtection"]
    assert alpha["MultiplePodTemplatesScheduling"] and alpha["PropagationPolicyPreemption"]
    assert "Failover" not in alpha and "PriorityBasedScheduling" not in alpha  # beta gates: untouched
    assert "AllAlpha" not in alpha
    # A gate the flag names itself wins over AllAlpha/AllBeta, in whatever order they come.
    for text in ("AllAlpha=true,WorkloadAffinity=false", "WorkloadAffinity=false,AllAlpha=true"):
        assert parse_feature_gates(text)["WorkloadAffinity"] is False
    beta = parse_feature_gates("AllBeta=false")
    assert beta["PriorityBasedScheduling"] is False and beta["GracefulEviction"] is False
    assert beta["Failover"] is False and "WorkloadAffinity" not in beta
    stages = {name: stage for name, (_, stage) in KARMADA_FEATURE_GATE_STAGES.items()}
    assert set(alpha) == {name for name, stage in stages.items() if stage == "Alpha"}


def test_a_gate_karmada_does_not_have_is_refused_with_karmadas_message() -> None:
    with pytest.raises(ValueError, match=r"^unrecognized feature gate: ResourceQuotaEstimateWithAssumed$"):
        parse_feature_gates("ResourceQuotaEstimateWithAssumed=true")


def test_every_command_accepts_all_alpha_and_all_beta() -> None:
    for add_arguments in (scheduler_cmd.add_arguments, policy_cmd.add_arguments,
                          estimator_cmd.add_arguments, webhook_cmd.add_arguments):
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        parsed = parser.parse_args(["--feature-gates", "AllAlpha=true,AllBeta=true",
                                    *_required(add_arguments)])
        assert parsed.feature_gates, add_arguments.__module__
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    args = parser.parse_args(["--feature-gates", "AllAlpha=true"])
    assert scheduler_cmd.scheduler_settings(args).workload_affinity
    assert scheduler_cmd.operator_config(args).overcommit_protection


def test_the_scheduler_queue_follows_priority_based_scheduling() -> None:
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    assert scheduler_cmd.scheduling_queue(parser.parse_args([])).priority_based
    for off in ("PriorityBasedScheduling=false", "AllBeta=false"):
        assert not scheduler_cmd.scheduling_queue(parser.parse_args(["--feature-gates", off])).priority_based


def test_every_command_accepts_every_karmada_gate() -> None:
    every = ",".join(f"{gate}={str(default).lower()}" for gate, default in KARMADA_FEATURE_GATES.items())
    for add_arguments in (scheduler_cmd.add_arguments, policy_cmd.add_arguments,
                          estimator_cmd.add_arguments, webhook_cmd.add_arguments):
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        parsed = parser.parse_args(["--feature-gates", every, *_required(add_arguments)])
        assert parsed.feature_gates, add_arguments.__module__
    assert webhook_cmd.parse_feature_gates(every) == dict(KARMADA_FEATURE_GATES)
    assert estimator_cmd.parse_feature_gates(every) == dict(KARMADA_FEATURE_GATES)


def _required(add_arguments: object) -> list[str]:
    return ["--cluster-name", "m1"] if add_arguments is estimator_cmd.add_arguments else []


def test_the_policy_controller_reads_karmadas_gate_names() -> None:
    parser = argparse.ArgumentParser()
    policy_cmd.add_arguments(parser)
    gates = parser.parse_args(["--feature-gates", "PropagationPolicyPreemption=true,Failover=true"])
    assert gates.feature_gates == FeatureGates(policy_preemption=True)
    with pytest.raises(SystemExit):
        parser.parse_args(["--feature-gates", "PolicyPreemption=true"])


def test_the_scheduler_maps_the_gates_that_change_results() -> None:
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    args = parser.parse_args(["--feature-gates", "CustomizedClusterResourceModeling=false,Failover=true"])
    assert args.feature_gates == {"CustomizedClusterResourceModeling": False, "Failover": True}
    settings = scheduler_cmd.scheduler_settings(args)
    assert not settings.customized_cluster_resource_modeling and not settings.multiple_pod_templates
    defaults = scheduler_cmd.scheduler_settings(parser.parse_args([]))
    assert defaults.customized_cluster_resource_modeling and not defaults.multiple_pod_templates
    on = parser.parse_args(["--feature-gates", "MultiplePodTemplatesScheduling=true"])
    assert scheduler_cmd.scheduler_settings(on).multiple_pod_templates
    assert not defaults.workload_affinity
    affinity = parser.parse_args(["--feature-gates", "WorkloadAffinity=true"])
    assert scheduler_cmd.scheduler_settings(affinity).workload_affinity
    config = scheduler_cmd.operator_config(parser.parse_args([]))
    assert not config.overcommit_protection and config.assumption_ttl == 300.0
    protected = parser.parse_args(
        ["--feature-gates", "SchedulingOvercommitProtection=true", "--assumption-ttl", "90s"]
    )
    config = scheduler_cmd.operator_config(protected)
    assert config.overcommit_protection and config.assumption_ttl == 90.0


def test_binding_update_debounce_is_off_by_default() -> None:
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    assert scheduler_cmd.operator_config(parser.parse_args([])).binding_update_debounce == 0.0
    debounced = parser.parse_args(["--binding-update-debounce", "500ms"])
    assert scheduler_cmd.operator_config(debounced).binding_update_debounce == 0.5
    with pytest.raises(SystemExit):
        parser.parse_args(["--binding-update-debounce", "-1s"])


def test_each_gate_is_declared_once_and_read_with_its_karmada_default() -> None:
    from fleetsched import flags

    declared = {value for name, value in vars(flags).items()
                if name.isupper() and isinstance(value, str) and value in flags.KARMADA_FEATURE_GATE_STAGES}
    assert declared == set(flags.KARMADA_FEATURE_GATE_STAGES)
    for gate, (default, _stage) in flags.KARMADA_FEATURE_GATE_STAGES.items():
        assert flags.gate_enabled({}, gate) is default
        assert flags.gate_enabled({gate: not default}, gate) is (not default)

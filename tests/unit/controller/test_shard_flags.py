"""``--shard-mode`` / ``--shard-identity`` and ``leaderElection.shardMode`` / ``shardIdentity``:
parsed in the shared place, refused when they contradict the file or make no member Lease, and the
writer identity (fieldManager) they give."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest
import yaml
from structlog.testing import capture_logs

from fleetsched.controller.policy import command as policy_cmd
from fleetsched.controller.runtime import command
from fleetsched.controller.scheduler import command as scheduler_cmd
from fleetsched.scheduler.config import ConfigError, load_configuration


def scheduler_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    return parser.parse_args(list(argv))


def config_file(tmp_path: Path, leader_election: dict[str, object]) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "config.fleetsched.io/v1alpha1",
        "kind": "SchedulerConfiguration",
        "leaderElection": leader_election,
    }))
    return path


def test_the_default_mode_is_the_single_leader_and_writes_as_the_agent() -> None:
    args = scheduler_args()
    assert (args.shard_mode, args.shard_identity) == ("none", None)
    assert command.sharding(args) is None
    assert command.leader_election(args) is not None
    assert command.field_manager(args, agent="fleetsched-scheduler") == "fleetsched-scheduler"
    assert scheduler_cmd.operator_config(args).sharding is None


def test_lease_mode_replaces_the_leader_lease_with_a_member_lease() -> None:
    args = scheduler_args(
        "--shard-mode=lease", "--shard-identity=R0", "--leader-elect-resource-namespace=fleetsched-system",
        "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=1s",
    )
    shard = command.sharding(args)
    assert shard is not None
    assert (shard.group, shard.namespace, shard.member) == (
        "fleetsched-scheduler", "fleetsched-system", "fleetsched-scheduler-r0"
    )
    assert (shard.lease_duration, shard.renew_deadline, shard.retry_period) == (4.0, 3.0, 1.0)
    assert command.leader_election(args) is None
    config = scheduler_cmd.operator_config(args)
    assert config.sharding == shard and config.leader_election is None
    manager = command.field_manager(args, agent="fleetsched-scheduler")
    assert manager == "fleetsched-scheduler/fleetsched-scheduler-r0"


def test_the_identity_defaults_to_the_host_name() -> None:
    shard = command.sharding(scheduler_args("--shard-mode=lease"))
    assert shard is not None
    assert shard.member.startswith("fleetsched-scheduler-")
    assert shard.member == command.sharding(
        scheduler_args("--shard-mode=lease", f"--shard-identity={socket.gethostname()}")
    ).member  # type: ignore[union-attr]


def test_a_shard_mode_that_is_not_one_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        scheduler_args("--shard-mode=raft")
    assert "invalid choice: 'raft'" in capsys.readouterr().err


async def test_timings_a_member_lease_cannot_have_are_refused_in_one_line() -> None:
    # (the command's _serve, without run_command: that would configure the process's logging)
    with capture_logs() as logs:
        code = await scheduler_cmd._serve(
            scheduler_args("--shard-mode=lease", "--leader-elect-renew-deadline=20s")
        )
    assert code == 2
    (line,) = [entry for entry in logs if entry["event"] == "invalid_flag"]
    assert line["flag"] == "--shard-mode"
    assert line["error"] == "leaseDuration must be greater than renewDeadline"


async def test_the_policy_controller_takes_the_shard_flags_and_refuses_bad_timings_in_one_line() -> None:
    parser = argparse.ArgumentParser()
    policy_cmd.add_arguments(parser)
    args = parser.parse_args(["--shard-mode=lease", "--shard-identity=r1"])
    shard = command.sharding(args)
    assert shard is not None and shard.member == "fleetsched-controller-r1"
    assert command.field_manager(args, agent="fleetsched-controller") == (
        "fleetsched-controller/fleetsched-controller-r1"
    )
    assert command.leader_election(args) is None, "member Leases replace the leader's"
    bad = parser.parse_args(["--shard-mode=lease", "--leader-elect-renew-deadline=20s"])
    with capture_logs() as logs:
        assert await policy_cmd._serve(bad) == 2
    (line,) = [entry for entry in logs if entry["event"] == "invalid_flag"]
    assert line["flag"] == "--shard-mode"
    assert line["error"] == "leaseDuration must be greater than renewDeadline"


def test_the_file_gives_the_shard_settings_and_a_contradicting_flag_is_refused(tmp_path: Path) -> None:
    path = config_file(tmp_path, {"shardMode": "lease", "shardIdentity": "r1"})
    args, _ = scheduler_cmd.load_configuration(scheduler_args("--config", str(path)))
    assert (args.shard_mode, args.shard_identity) == ("lease", "r1")
    shard = command.sharding(args)
    assert shard is not None and shard.member == "fleetsched-scheduler-r1"
    with pytest.raises(scheduler_cmd.FlagConflict) as caught:
        scheduler_cmd.load_configuration(scheduler_args("--config", str(path), "--shard-mode=none"))
    assert str(caught.value) == (
        f"--shard-mode=none contradicts {path} (leaderElection.shardMode: lease); set it in one place"
    )
    # an empty identity in the file leaves the flag (or the host name) to name the member
    path = config_file(tmp_path, {"shardMode": "lease"})
    args, _ = scheduler_cmd.load_configuration(scheduler_args("--config", str(path), "--shard-identity=r2"))
    assert command.sharding(args).member == "fleetsched-scheduler-r2"  # type: ignore[union-attr]


def test_a_bad_shard_mode_in_the_file_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"leaderElection\.shardMode: must be one of none, lease"):
        load_configuration(str(config_file(tmp_path, {"shardMode": "raft"})))
    # the timing rules apply to member Leases even with leader election off
    with pytest.raises(ConfigError, match="leaseDuration must be greater than renewDeadline"):
        settings = {"leaderElect": False, "shardMode": "lease", "leaseDuration": "5s", "renewDeadline": "5s"}
        load_configuration(str(config_file(tmp_path, settings)))

"""``moveBudget`` in the configuration file (issue 27): loading, the default (no budget), refusals
naming the field, and the rendered file reading back the same."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from fleetsched.controller.scheduler import command as scheduler_cmd
from fleetsched.scheduler.config import SchedulerConfiguration
from fleetsched.scheduler.config.render import configuration_to_dict
from fleetsched.scheduler.stepping import IntOrPercent, MoveBudget

from .helpers import a_file, error_of, parse


def test_no_budget_by_default() -> None:
    assert parse(a_file()).move_budget is None
    assert "moveBudget" not in configuration_to_dict(SchedulerConfiguration())


def test_the_budget_loads_as_written() -> None:
    loaded = parse(a_file(moveBudget={"maxUnavailable": "10%", "maxSurge": 5, "stepTimeout": "2m"}))
    assert loaded.move_budget == MoveBudget(IntOrPercent(10, True), IntOrPercent(5), 120.0)
    only = parse(a_file(moveBudget={"maxUnavailable": 10}))
    assert only.move_budget == MoveBudget(max_unavailable=IntOrPercent(10))
    assert only.move_budget is not None and only.move_budget.step_timeout == 300.0


def test_the_rendered_file_reads_back_the_same() -> None:
    loaded = parse(a_file(moveBudget={"maxUnavailable": "25%", "maxSurge": "1"}))
    written = configuration_to_dict(loaded)
    assert written["moveBudget"] == {"maxUnavailable": "25%", "maxSurge": 1, "stepTimeout": "5m"}
    assert parse(yaml.safe_dump(written, sort_keys=False)) == loaded


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"maxUnavailable": "ten"}, "c.yaml: moveBudget.maxUnavailable: must be a non-negative integer or "
                                    "a percentage from 0% to 100% such as 25%, got 'ten'"),
        ({"maxSurge": -1}, "c.yaml: moveBudget.maxSurge: must not be negative, got -1"),
        ({"maxSurge": "150%"}, "c.yaml: moveBudget.maxSurge: must be a non-negative integer or a percentage "
                               "from 0% to 100% such as 25%, got '150%'"),
        ({}, "c.yaml: moveBudget: maxUnavailable and maxSurge may not both be 0 (nothing could ever move)"),
        ({"maxUnavailable": 0, "maxSurge": "0%"},
         "c.yaml: moveBudget: maxUnavailable and maxSurge may not both be 0 (nothing could ever move)"),
        ({"maxUnavailable": 1, "stepTimeout": "0s"},
         "c.yaml: moveBudget.stepTimeout: must be a positive duration"),
        ({"maxUnavailable": 1, "maxUnavilable": 2},
         'c.yaml (line 5, column 3): strict decoding error: unknown field "moveBudget.maxUnavilable"'),
    ],
)
def test_refusals_name_the_field(budget: dict[str, object], message: str) -> None:
    assert error_of(a_file(moveBudget=budget)) == message


def test_the_scheduler_hands_the_files_budget_to_the_operator(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(a_file(moveBudget={"maxUnavailable": "10%"})))
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    args, loaded = scheduler_cmd.load_configuration(parser.parse_args([f"--config={path}"]))
    config = scheduler_cmd.operator_config(args, move_budget=loaded.configuration.move_budget)
    assert config.move_budget == MoveBudget(max_unavailable=IntOrPercent(10, True))
    assert scheduler_cmd.operator_config(parser.parse_args([])).move_budget is None

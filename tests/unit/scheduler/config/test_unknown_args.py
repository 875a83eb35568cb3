"""A field a plugin's args do not have, placed in the file as the file's own fields are."""

from __future__ import annotations

import pytest

from fleetsched.scheduler.config import parse_configuration
from fleetsched.scheduler.config.load import unknown_arg_message
from fleetsched.scheduler.pipeline import Settings
from fleetsched.scheduler.profiles import ProfileError, profile_schedulers

TEXT = """\
apiVersion: config.fleetsched.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: a
- schedulerName: b
  plugins:
    score:
      enabled: [{name: ClusterResourcesFit}]
  pluginConfig:
  - name: ClusterAffinity
  - name: ClusterResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, wieght: 1}
"""


def refusal(text: str) -> tuple[ProfileError, str | None]:
    loaded = parse_configuration(text, source="c.yaml", entry_points=False)
    with pytest.raises(ProfileError) as caught:
        profile_schedulers(loaded.configuration.profiles, Settings(), out_of_tree=loaded.out_of_tree)
    return caught.value, unknown_arg_message(caught.value, loaded)


def test_the_profile_and_the_plugin_config_are_found_by_name_and_the_key_by_path() -> None:
    error, message = refusal(TEXT)
    assert "profiles[b].pluginConfig[ClusterResourcesFit]" in str(error)  # the plugin's own words
    column = TEXT.splitlines()[15].index("wieght") + 1
    assert message == (f"c.yaml (line 16, column {column}): strict decoding error: unknown field "
                       '"profiles[1].pluginConfig[1].args.scoringStrategy.resources[0].wieght" '
                       "(known: name, weight)")


def test_an_args_error_that_is_no_unknown_field_keeps_its_words() -> None:
    error, message = refusal(TEXT.replace("wieght: 1", "weight: 0"))
    assert message is None and "weight" in str(error)


def test_a_field_the_file_does_not_hold_where_the_plugin_says_keeps_its_words() -> None:
    loaded = parse_configuration(TEXT, source="c.yaml", entry_points=False)
    error, _ = refusal(TEXT)
    other = parse_configuration(TEXT.replace("schedulerName: b", "schedulerName: c"), source="c.yaml",
                                entry_points=False)
    assert unknown_arg_message(error, other) is None  # no profile b there
    assert unknown_arg_message(ValueError("x"), loaded) is None
    assert unknown_arg_message(error, None) is None

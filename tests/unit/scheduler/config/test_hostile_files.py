"""A configuration file written by a careless or hostile hand: every refusal is one line naming the
field, and nothing ends in a traceback, an overflow later, or minutes of parsing (issue 23).

The fuzz tests run in the normal tier with a fixed seed (``derandomize``) and a bounded count."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsched.cli import main
from fleetsched.scheduler.config import ConfigError, PluginLoadError, load_configuration, parse_configuration
from fleetsched.scheduler.config.load import MAX_BYTES, MAX_DEPTH

from .helpers import error_of, parse

HEAD = "apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n"
EXTENDER = HEAD + "extenders:\n- urlPrefix: http://extender.example:8080/x\n  prioritizeVerb: p\n"


def test_an_integer_of_5000_digits_is_refused_with_its_field() -> None:
    message = error_of(HEAD + "parallelism: " + "9" * 5000 + "\n")
    assert message == (
        "c.yaml: parallelism: Invalid value: an integer of 5000 digits: out of range (line 3, column 14)"
    )


def test_a_5000_deep_nesting_is_refused() -> None:
    args = "[" * 5000 + "]" * 5000
    message = error_of(
        HEAD + f"profiles:\n- pluginConfig:\n  - name: TaintToleration\n    args: {{a: {args}}}\n"
    )
    assert message.startswith("c.yaml: malformed YAML (line 6): exceeded maximum nesting depth")


def test_nesting_past_the_configuration_depth_is_refused_with_the_path() -> None:
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    message = error_of(
        HEAD + f"profiles:\n- pluginConfig:\n  - name: TaintToleration\n    args: {{a: {deep}}}\n"
    )
    assert message.startswith(
        "c.yaml: profiles[0].pluginConfig[0].args.a"
        + "[0]" * (MAX_DEPTH - 6)
        + f": Forbidden: nested more than {MAX_DEPTH} levels deep (line 6"
    )
    shallow = "[" * (MAX_DEPTH - 6) + "]" * (MAX_DEPTH - 6)
    text = HEAD + (
        "profiles:\n- plugins: {filter: {enabled: [{name: TaintToleration}]}}\n"
        f"  pluginConfig:\n  - name: TaintToleration\n    args: {{a: {shallow}}}\n"
    )
    assert parse(text).profiles[0].plugin_args["TaintToleration"]["a"]


def test_a_duplicate_key_is_refused() -> None:
    assert error_of(HEAD + "parallelism: 3\nparallelism: 4\n") == (
        'c.yaml: parallelism: Duplicate value: "parallelism": mapping key already defined at line 3 '
        "(line 4, column 1)"
    )


def test_an_alias_bomb_is_refused_before_expansion() -> None:
    lines = [
        "profiles:",
        "- pluginConfig:",
        "  - name: TaintToleration",
        "    args:",
        "      l0: &l0 [" + ", ".join(["x"] * 9) + "]",
    ]
    lines += [f"      l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 6)]
    message = error_of(HEAD + "\n".join(lines) + "\n")
    assert "Forbidden: aliases expand the document by" in message
    assert "more than the 10000 allowed" in message


def test_a_huge_file_is_refused_at_once(tmp_path: Path) -> None:
    # 50 MB of pluginConfig took 31 s to parse; the size is refused before any parsing.
    big = (
        HEAD
        + "profiles:\n- pluginConfig:\n  - name: TaintToleration\n    args: {a: '"
        + "x" * (50 << 20)
        + "'}\n"
    )
    assert error_of(big) == f"c.yaml: larger than the {MAX_BYTES} bytes a configuration may hold"
    path = tmp_path / "big.yaml"
    path.write_text(big)
    with pytest.raises(ConfigError) as caught:
        load_configuration(path, entry_points=False)
    assert (
        str(caught.value)
        == f"{path}: the configuration file holds {len(big)} bytes, more than the {MAX_BYTES} allowed"
    )


def test_a_device_or_fifo_is_not_read_as_a_configuration(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_configuration("/dev/zero", entry_points=False)
    assert str(caught.value) == "/dev/zero: cannot read the configuration file: not a regular file"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening a FIFO for reading would block until a writer came
    with pytest.raises(ConfigError, match="not a regular file"):
        load_configuration(fifo, entry_points=False)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            "  httpTimeout: 99999999999h\n",
            "c.yaml: extenders[0].httpTimeout: out of range: longer than Go's time.Duration holds "
            "(about 292 years)",
            id="httpTimeout past Go's Duration",
        ),
        pytest.param(
            "  httpTimeout: 11m\n",
            "c.yaml: extenders[0].httpTimeout: must be at most 10m",
            id="httpTimeout 11m",
        ),
        pytest.param(
            "  httpTimeout: " + "9" * 400 + "s\n",
            "c.yaml: extenders[0].httpTimeout: must be a duration such as 5s or 500ms (got 401 characters)",
            id="httpTimeout of 400 digits",
        ),
        pytest.param(
            "  weight: 2147483648\n",
            "c.yaml: extenders[0].weight: must be at most 2147483647",
            id="extender weight",
        ),
    ],
)
def test_extender_numbers_out_of_range(fields: str, message: str) -> None:
    assert error_of(EXTENDER + fields) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "parallelism: 100000\n",
            "parallelism: must be at most 1024 (one worker thread each)",
            id="parallelism",
        ),
        pytest.param("assumptionTTL: 25h\n", "assumptionTTL: must be at most 24h", id="assumptionTTL"),
        pytest.param("estimator: {timeout: 1h}\n", "estimator.timeout: must be at most 10m", id="estimator"),
        pytest.param(
            "leaderElection: {leaseDuration: 9999h}\n",
            "leaderElection.leaseDuration: must be at most 24h",
            id="leaseDuration",
        ),
        pytest.param(
            "clientConnection: {qps: .inf}\n", "clientConnection.qps: must be a finite number", id="qps inf"
        ),
        pytest.param(
            "clientConnection: {qps: .nan}\n", "clientConnection.qps: must be a finite number", id="qps nan"
        ),
        pytest.param(
            "clientConnection: {burst: 4294967296}\n",
            "clientConnection.burst: must be at most 2147483647",
            id="burst",
        ),
        pytest.param(
            "profiles: [{pluginTimeout: 100000h}]\n",
            "profiles[0].pluginTimeout: must be at most 10m",
            id="pluginTimeout",
        ),
        pytest.param(
            "profiles: [{plugins: {score: {enabled: [{name: ClusterLocality, weight: 2147483648}]}}}]\n",
            "profiles[0].plugins.score.enabled[0].weight: must be at most 2147483647",
            id="plugin weight",
        ),
    ],
)
def test_settings_out_of_range(text: str, message: str) -> None:
    assert error_of(HEAD + text) == f"c.yaml: {message}"


def test_an_extender_url_with_user_info_is_refused_without_echoing_the_password() -> None:
    text = HEAD + (
        "extenders:\n- urlPrefix: http://admin:s3cr3t@extender.example/x\n  filterVerb: f\n"
        "- urlPrefix: http://admin:s3cr3t@extender.example/x\n  filterVerb: f\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse(text)
    message = str(caught.value)
    assert message.startswith("c.yaml: extenders[0].urlPrefix: must not carry user info (user:password@)")
    assert "s3cr3t" not in message and "admin" not in message
    assert message.endswith("(and 2 more problems)")


def test_the_limits_leave_ordinary_settings_alone() -> None:
    text = EXTENDER + "  httpTimeout: 10m\n  weight: 2147483647\nparallelism: 1024\nassumptionTTL: 24h\n"
    configuration = parse(text)
    assert configuration.workers == 1024
    assert configuration.profiles[0].extenders[0].http_timeout_seconds == 600.0


def test_config_validate_and_simulate_refuse_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text(EXTENDER + "  httpTimeout: 99999999999h\n")
    assert main(["config", "validate", str(bad)]) == 2
    _, err = capsys.readouterr()
    assert err == (
        f"fleetsched config validate: {bad}: extenders[0].httpTimeout: out of range: longer than Go's "
        "time.Duration holds (about 292 years)\n"
    )
    bad.write_text(HEAD + "parallelism: " + "9" * 5000 + "\n")
    assert main(["simulate", "--config", str(bad), "/dev/null"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "parallelism: Invalid value: an integer of 5000 digits" in err


# ---- fuzzing ---------------------------------------------------------------------------------------

FUZZ = settings(
    derandomize=True, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _outcome(text: str) -> str:
    try:
        parse_configuration(text, source="c.yaml", entry_points=False)
    except (ConfigError, PluginLoadError) as exc:
        message = str(exc)
        assert "\n" not in message and "\x1b" not in message and message.startswith("c.yaml")
        return "refused"
    return "loaded"


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["5s", "99999999999h", "-1s", "1m30s", "http://u:p@h/x", "*", "ClusterLocality", "0"]),
)
_keys = st.sampled_from(
    [
        "profiles",
        "extenders",
        "schedulerName",
        "plugins",
        "score",
        "filter",
        "enabled",
        "disabled",
        "name",
        "weight",
        "pluginConfig",
        "args",
        "urlPrefix",
        "filterVerb",
        "prioritizeVerb",
        "httpTimeout",
        "tlsConfig",
        "caFile",
        "parallelism",
        "leaderElection",
        "leaseDuration",
        "estimator",
        "timeout",
        "assumptionTTL",
        "featureGates",
        "clientConnection",
        "qps",
        "burst",
        "multiPoint",
        "pluginTimeout",
        "ignorablePlugins",
    ]
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=25,
)


@FUZZ
@given(body=st.dictionaries(_keys, _values, max_size=6))
def test_fuzz_structured_files_load_or_are_refused_in_one_line(body: dict[str, object]) -> None:
    import json

    text = HEAD + "".join(f"{json.dumps(k)}: {json.dumps(v)}\n" for k, v in body.items())
    assert _outcome(text) in ("loaded", "refused")


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list("[]{}:,-&*!|>'\"#\n 0123456789.eE_xa@%\t")), max_size=200))
def test_fuzz_raw_text_loads_or_is_refused_in_one_line(text: str) -> None:
    assert _outcome(HEAD + text) in ("loaded", "refused")


def test_the_largest_file_allowed_loads() -> None:
    # A figure, not a timing assertion: the size cap bounds the work; printed for the record.
    size = MAX_BYTES - 200
    text = (
        HEAD + "profiles:\n- pluginConfig:\n  - name: TaintToleration\n    args: {a: '" + "x" * size + "'}\n"
    )
    started = time.perf_counter()
    configuration = parse(text)
    elapsed = time.perf_counter() - started
    assert len(configuration.profiles[0].plugin_args["TaintToleration"]["a"]) == size
    print(f"largest allowed configuration: {len(text)} bytes loaded in {elapsed:.3f} s")


def test_control_characters_in_field_names_are_escaped_in_the_error() -> None:
    assert error_of(HEAD + '"\\e[2J\\u202e": 1\n') == (
        'c.yaml (line 3, column 1): strict decoding error: unknown field "\\x1b[2J\\u202e"')
    assert error_of(HEAD + 'featureGates: {"\\e[2J": true}\n') == (
        "c.yaml: featureGates.\\x1b[2J: unrecognized feature gate: \\x1b[2J"
    )

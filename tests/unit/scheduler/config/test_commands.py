"""``fleetsched config``, ``simulate --config`` and ``scheduler --config``: the default file
reproduces today's behaviour, profiles route bindings by schedulerName, flags that contradict the
file are refused with one line and exit status 2."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleetsched.cli import main
from fleetsched.controller.scheduler import command as scheduler_cmd
from fleetsched.scheduler.config import SchedulerConfiguration, default_profile, parse_configuration

from .distributions import BROKEN, COST_SCORE, install

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = [str(ROOT / "examples" / "fleet.yaml"), str(ROOT / "examples" / "policies.yaml")]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def default_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    code, out, _ = run(capsys, "config", "default")
    assert code == 0
    path = tmp_path / "default.yaml"
    path.write_text(out)
    return path


def write(tmp_path: Path, doc: dict[str, object], name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(
        yaml.safe_dump(
            {"apiVersion": "config.fleetsched.io/v1alpha1", "kind": "SchedulerConfiguration", **doc}
        )
    )
    return path


# ---- fleetsched config ---------------------------------------------------------------------------


def test_config_default_loads_back_as_the_default_configuration(default_file: Path) -> None:
    loaded = parse_configuration(default_file.read_text(), entry_points=False)
    assert loaded.configuration == SchedulerConfiguration()
    assert loaded.configuration.profiles == (default_profile(),)


def test_config_default_with_flags_prints_what_they_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "config",
        "default",
        "--plugins",
        "*,-TaintToleration",
        "--feature-gates",
        "WorkloadAffinity=true",
    )
    assert code == 0
    loaded = parse_configuration(out, entry_points=False, workload_affinity=True)
    assert loaded.configuration.profiles == (default_profile("*,-TaintToleration", workload_affinity=True),)


def test_config_default_refuses_an_unknown_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "config", "default", "--plugins", "Nope")
    assert (code, out) == (2, "")
    assert err.startswith("fleetsched config default: --plugins: unknown scheduler plugin 'Nope'")


def test_config_validate(capsys: pytest.CaptureFixture[str], default_file: Path, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "config", "validate", str(default_file))
    assert code == 0
    assert out == (
        "profile default-scheduler: queueSort=PrioritySort, filter=APIEnablement+TaintToleration+"
        "ClusterAffinity+SpreadConstraint+ClusterEviction, score=ClusterAffinity*1+ClusterLocality*1\n"
    )
    bad = write(tmp_path, {"parallelism": 0})
    code, out, err = run(capsys, "config", "validate", str(bad))
    assert (code, out, err) == (
        2,
        "",
        f"fleetsched config validate: {bad}: parallelism: must be a positive integer\n",
    )


@pytest.mark.parametrize(
    ("doc", "paths"),
    [
        pytest.param(
            {"parallelism": 0, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"},
                                            {"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]},
            ["parallelism", "profiles[1].schedulerName", "profiles[2].schedulerName",
             "profiles[2].plugins.filter.enabled[0].name"],
            id="resolution problems",
        ),
        pytest.param(
            {"bogus": 1, "parallelism": "x", "profiles": [{"pluginTimeout": 5}]},
            ["bogus", "parallelism", "profiles[0].pluginTimeout"],
            id="structure problems",
        ),
    ],
)
def test_config_validate_prints_every_problem_one_line_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, doc: dict[str, object], paths: list[str]
) -> None:
    """The scheduler's start-up error is one line with "(and N more problems)"; ``config validate``
    is where a user sees them all, each with its field path."""
    bad = write(tmp_path, doc)
    code, out, err = run(capsys, "config", "validate", str(bad))
    prefix = f"fleetsched config validate: {bad}: "
    lines = err.splitlines()
    assert (code, out) == (2, "")
    assert all(line.startswith(prefix) or re.match(rf"{re.escape(prefix[:-2])} \(line \d+, column \d+\): "
                                                    r'strict decoding error: unknown field "', line)
               for line in lines), err

    def path(line: str) -> str:  # kubectl's words name the whole path in quotes
        unknown = re.search(r'unknown field "(.*)"$', line)
        return unknown.group(1) if unknown else line.removeprefix(prefix).split(": ")[0]

    assert sorted(path(line) for line in lines) == sorted(paths)
    assert "more problem" not in err
    with pytest.raises(Exception, match=rf"\(and {len(paths) - 1} more problems\)$"):
        parse_configuration(bad.read_text(), source=str(bad))


def test_config_validate_builds_the_profiles_so_bad_plugin_args_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    profile = {
        "plugins": {"score": {"enabled": [{"name": "ClusterResourcesFit"}]}},
        "pluginConfig": [{"name": "ClusterResourcesFit", "args": {"nope": 1}}],
    }
    bad = write(tmp_path, {"profiles": [profile]})
    code, out, err = run(capsys, "config", "validate", str(bad))
    assert (code, out) == (2, "")
    # an unknown field in a plugin's args is worded and placed as one of the file's own fields
    assert err == (f'fleetsched config validate: {bad} (line 6, column 7): strict decoding error: unknown '
                   'field "profiles[0].pluginConfig[0].args.nope" (known: scoringStrategy)\n')
    bad = write(tmp_path, {"profiles": [{**profile, "pluginConfig": [
        {"name": "ClusterResourcesFit", "args": {"scoringStrategy": {"type": "Nope"}}}]}]})
    code, out, err = run(capsys, "config", "validate", str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(f"fleetsched config validate: {bad}: profiles[default-scheduler].pluginConfig["
                          "ClusterResourcesFit].args: scoringStrategy.type: unsupported value 'Nope'"), err
    assert err.count("\n") == 1


# ---- simulate --config ---------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [(), ("-o", "json"), ("-o", "yaml"), ("--explain",)], ids=str)
def test_simulate_with_the_default_file_prints_what_it_prints_without(
    capsys: pytest.CaptureFixture[str], default_file: Path, extra: tuple[str, ...]
) -> None:
    without = run(capsys, "simulate", *EXAMPLES, *extra)
    with_file = run(capsys, "simulate", "--config", str(default_file), *EXAMPLES, *extra)
    assert without[0] == 0 and without[1]
    if "-o" in extra:  # the times written into the conditions differ by the run's clock
        assert _timeless(with_file[1]) == _timeless(without[1])
    else:
        assert with_file == without


def _timeless(text: str) -> object:
    doc = yaml.safe_load(text)
    for item in doc["items"]:
        for condition in (item.get("status") or {}).get("conditions") or []:
            condition.pop("lastTransitionTime", None)
        (item.get("status") or {}).pop("lastScheduledTime", None)
    return doc


DEPLOYMENTS = (
    "status: {apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]}"
)
TAINTED = f"""\
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {{name: m1}}
spec:
  taints: [{{key: maintenance, effect: NoSchedule}}]
{DEPLOYMENTS}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {{name: m2}}
spec: {{}}
{DEPLOYMENTS}
"""


def binding(name: str, scheduler_name: str | None) -> str:
    spec_name = f"\n  schedulerName: {scheduler_name}" if scheduler_name else ""
    return f"""---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {{name: {name}, namespace: default}}
spec:{spec_name}
  resource: {{apiVersion: apps/v1, kind: Deployment, namespace: default, name: {name}}}
  replicas: 2
  placement:
    replicaScheduling: {{replicaSchedulingType: Duplicated}}
"""


def test_simulate_routes_each_binding_to_the_profile_of_its_scheduler_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    inputs = tmp_path / "in.yaml"
    inputs.write_text(
        TAINTED + binding("strict", None) + binding("lenient", "lenient") + binding("other", "other")
    )
    lenient = {"schedulerName": "lenient", "plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}}
    config = write(tmp_path, {"profiles": [{"schedulerName": "default-scheduler"}, lenient]})
    code, out, err = run(capsys, "simulate", "--config", str(config), str(inputs))
    assert code == 0, err
    rows = {line.split()[2]: line.split() for line in out.splitlines()[1:]}
    assert rows["strict"][-1] == "m2:2"  # the default profile keeps the taint
    assert rows["lenient"][-2:] == ["m1:2,", "m2:2"]  # its profile runs without TaintToleration
    assert rows["other"][3] == "-"  # nobody serves "other": left alone
    assert (
        err == "fleetsched simulate: note: ResourceBinding default/other: no profile serves schedulerName "
        "'other'; left alone\n"
    )
    code, explained, _ = run(capsys, "simulate", "--config", str(config), str(inputs), "--explain")
    assert "ResourceBinding default/other\n  left alone: no profile serves schedulerName 'other'" in explained
    # Without a file, every binding is scheduled by the flags' one profile, as before.
    code, out, _ = run(capsys, "simulate", str(inputs))
    assert {line.split()[2]: line.split()[-1] for line in out.splitlines()[1:]} == {
        "strict": "m2:2",
        "lenient": "m2:2",
        "other": "m2:2",
    }


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ("--plugins", "*,-TaintToleration"),
            "--plugins=*,-TaintToleration contradicts {file}: profiles[0] (default-scheduler) enables other "
            "plugins; set the plugins in one place",
            id="plugins",
        ),
        pytest.param(
            ("--enable-empty-workload-propagation",),
            "--enable-empty-workload-propagation contradicts {file} (enableEmptyWorkloadPropagation: false); "
            "set it in one place",
            id="empty workload propagation",
        ),
    ],
)
def test_simulate_refuses_a_flag_that_contradicts_the_file(
    capsys: pytest.CaptureFixture[str], default_file: Path, flags: tuple[str, ...], message: str
) -> None:
    code, out, err = run(capsys, "simulate", "--config", str(default_file), *flags, *EXAMPLES)
    assert (code, out) == (2, "")
    assert err == f"fleetsched simulate: {message.format(file=default_file)}\n"


def test_simulate_accepts_a_flag_that_agrees_with_the_file(
    capsys: pytest.CaptureFixture[str], default_file: Path
) -> None:
    code, _, err = run(capsys, "simulate", "--config", str(default_file), "--plugins", "*", *EXAMPLES)
    assert code == 0, err


def test_simulate_refuses_an_invalid_file_with_its_field_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(
        tmp_path,
        {"profiles": [{"plugins": {"score": {"enabled": [{"name": "ClusterLocality", "weight": 0}]}}}]},
    )
    code, out, err = run(capsys, "simulate", "--config", str(bad), *EXAMPLES)
    assert (code, out) == (2, "")
    assert (
        err == f"fleetsched simulate: {bad}: profiles[0].plugins.score.enabled[0].weight: must be a positive "
        "integer\n"
    )


def test_simulate_names_an_out_of_tree_plugin_that_fails_to_import(tmp_path: Path) -> None:
    site = install(
        tmp_path / "site",
        "fleetsched-example-broken",
        modules={"fleetsched_example_broken": BROKEN},
        entry_points={"Broken": "fleetsched_example_broken:Factory"},
    )
    config = write(tmp_path, {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Broken"}]}}}]})
    done = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "--config", str(config), *EXAMPLES],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "fleetsched simulate: plugin 'Broken' (entry point 'fleetsched_example_broken:Factory' of "
        "distribution 'fleetsched-example-broken'): failed to import: ModuleNotFoundError: No module named "
        "'fleetsched_this_module_does_not_exist'\n"
    )


def test_an_installed_plugin_nobody_enables_changes_nothing(tmp_path: Path) -> None:
    site = install(
        tmp_path / "site",
        "fleetsched-example-cost",
        modules={"fleetsched_example_cost": COST_SCORE},
        entry_points={"CostScore": "fleetsched_example_cost:CostScore"},
    )
    config = write(tmp_path, {})
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    with_plugin = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "--config", str(config), *EXAMPLES],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    plain = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", *EXAMPLES],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert with_plugin.stdout == plain.stdout and with_plugin.stderr == ""


# ---- scheduler --config --------------------------------------------------------------------------


def scheduler_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_scheduler_takes_every_setting_the_flags_do_not_give_from_the_file(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        {
            "parallelism": 4,
            "leaderElection": {"leaseDuration": "30s", "renewDeadline": "20s", "resourceName": "lease"},
            "clientConnection": {"kubeconfig": "/etc/karmada.config", "qps": 50, "burst": 100},
            "estimator": {"enabled": True, "timeout": "1500ms", "port": 9999},
            "enableEmptyWorkloadPropagation": True,
            "profiles": [{"schedulerName": "fleetsched"}],
        },
    )
    args, configuration = scheduler_cmd.load_configuration(
        scheduler_args("--config", str(config), "--workers", "4")
    )
    assert configuration is not None and configuration.configuration.scheduler_names() == {"fleetsched"}
    assert (args.workers, args.kubeconfig, args.kube_api_qps, args.kube_api_burst) == (
        4,
        "/etc/karmada.config",
        50.0,
        100,
    )
    assert (
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
        args.leader_elect_resource_name,
    ) == (30.0, 20.0, 2.0, "lease")
    assert (
        args.enable_scheduler_estimator,
        args.scheduler_estimator_timeout,
        args.scheduler_estimator_port,
    ) == (True, 1.5, 9999)
    assert scheduler_cmd.scheduler_settings(args).enable_empty_workload_propagation is True


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ("--workers", "8"),
            "--workers=8 contradicts {file} (parallelism: 32); set it in one place",
            id="workers",
        ),
        pytest.param(
            ("--workers", "32", "--kube-api-qps", "10"),
            "--kube-api-qps=10.0 contradicts {file} (clientConnection.qps: 500); set it in one place",
            id="qps",
        ),
        pytest.param(
            ("--leader-elect=false",),
            "--leader-elect=False contradicts {file} (leaderElection.leaderElect: true); set it in one place",
            id="leader election",
        ),
        pytest.param(
            ("--leader-elect-lease-duration", "20s"),
            "--leader-elect-lease-duration=20.0 contradicts {file} (leaderElection.leaseDuration: 15s); "
            "set it in one place",
            id="lease duration",
        ),
        pytest.param(
            ("--scheduler-name", "fleetsched"),
            "--scheduler-name=fleetsched contradicts {file} (profiles serve: default-scheduler); name the "
            "profiles in the file only",
            id="scheduler name",
        ),
        pytest.param(
            ("--plugins", "*,-ClusterLocality"),
            "--plugins=*,-ClusterLocality contradicts {file}: profiles[0] (default-scheduler) enables other "
            "plugins; set the plugins in one place",
            id="plugins",
        ),
    ],
)
def test_the_scheduler_refuses_a_flag_that_contradicts_the_file(
    default_file: Path, flags: tuple[str, ...], message: str
) -> None:
    with pytest.raises(scheduler_cmd.FlagConflict) as caught:
        scheduler_cmd.load_configuration(scheduler_args("--config", str(default_file), *flags))
    assert str(caught.value) == message.format(file=default_file)


def test_the_scheduler_accepts_flags_that_agree_with_the_file(default_file: Path) -> None:
    args, _ = scheduler_cmd.load_configuration(
        scheduler_args(
            "--config",
            str(default_file),
            "--workers",
            "32",
            "--scheduler-name",
            "default-scheduler",
            "--plugins",
            "*",
            "--leader-elect-retry-period",
            "2s",
        )
    )
    assert args.workers == 32


def test_the_scheduler_exits_2_on_a_bad_file_before_connecting(tmp_path: Path) -> None:
    bad = write(tmp_path, {"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fleetsched",
            "scheduler",
            "--config",
            str(bad),
            "--kubeconfig",
            str(tmp_path / "absent"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    [line] = (done.stdout + done.stderr).strip().splitlines()
    assert f"{bad}: profiles[1].schedulerName: duplicate schedulerName 'a' (also profiles[0])" in line


def test_the_scheduler_builds_one_scheduler_per_profile(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        {
            "profiles": [
                {"schedulerName": "default-scheduler"},
                {
                    "schedulerName": "lenient",
                    "plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}},
                },
            ]
        },
    )
    args, configuration = scheduler_cmd.load_configuration(scheduler_args("--config", str(config)))
    assert configuration is not None
    schedulers = scheduler_cmd.profile_schedulers(configuration, scheduler_cmd.scheduler_settings(args))
    assert sorted(schedulers) == ["default-scheduler", "lenient"]
    assert "TaintToleration" in [p.name for p in schedulers["default-scheduler"].framework.filters]
    assert "TaintToleration" not in [p.name for p in schedulers["lenient"].framework.filters]
    assert schedulers["lenient"].profile is configuration.configuration.profiles[1]


def test_an_empty_path_in_the_file_is_not_set_and_the_flag_gives_it(
    default_file: Path, tmp_path: Path
) -> None:
    args, _ = scheduler_cmd.load_configuration(
        scheduler_args("--config", str(default_file), "--kubeconfig", "/k")
    )
    assert args.kubeconfig == "/k"
    pinned = write(tmp_path, {"clientConnection": {"kubeconfig": "/a"}})
    assert scheduler_cmd.load_configuration(scheduler_args("--config", str(pinned)))[0].kubeconfig == "/a"
    with pytest.raises(scheduler_cmd.FlagConflict) as caught:
        scheduler_cmd.load_configuration(scheduler_args("--config", str(pinned), "--kubeconfig", "/b"))
    assert str(caught.value) == (
        f"--kubeconfig=/b contradicts {pinned} (clientConnection.kubeconfig: /a); set it in one place"
    )


# ---- config validate reads the files start-up reads (issue 30) --------------------------------------


def _validate_cli(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fleetsched", "config", "validate", str(config)],
        capture_output=True, text=True, check=False, timeout=60, cwd=ROOT,
    )


@pytest.mark.parametrize("kind", ["missing", "fifo", "/dev/zero"])
def test_config_validate_refuses_the_ca_files_start_up_refuses(tmp_path: Path, kind: str) -> None:
    if kind == "missing":
        ca, why = str(tmp_path / "absent.crt"), "No such file or directory"
    elif kind == "fifo":
        ca, why = str(tmp_path / "fifo.crt"), "not a regular file"
        os.mkfifo(ca)  # no writer: opening it to read would block for ever
    else:
        ca, why = kind, "not a regular file"
    config = write(tmp_path, {
        "extenders": [{"urlPrefix": "https://127.0.0.1:1/", "filterVerb": "filter",
                       "tlsConfig": {"caFile": ca}}],
        "estimator": {"enabled": True, "caFile": ca},
    })
    done = _validate_cli(config)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    prefix = f"fleetsched config validate: {config}"
    assert done.stderr.splitlines() == [
        f"{prefix}: extender https://127.0.0.1:1/: tls.caFile: cannot read {ca}: {why}",
        f"{prefix}: estimator.caFile: cannot read {ca}: {why}",
    ]


def test_config_validate_passes_readable_ca_files(tmp_path: Path) -> None:
    from fleetsched.testing.pki import CertificateAuthority

    ca = tmp_path / "ca.crt"
    ca.write_bytes(CertificateAuthority.create("validate-ca").cert_pem)
    config = write(tmp_path, {
        "extenders": [{"urlPrefix": "https://127.0.0.1:1/", "filterVerb": "filter",
                       "tlsConfig": {"caFile": str(ca)}}],
        "estimator": {"enabled": True, "caFile": str(ca)},
    })
    done = _validate_cli(config)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("profile ")


EXITING_SCORE = '''
class Exiting(int):
    def _exit(self, *args):
        raise SystemExit(9)

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __hash__ = __index__ = __int__ = _exit


class ExitingScore:
    """Answers a score whose every comparison raises SystemExit (issue 30)."""

    name = "ExitingScore"

    def __init__(self, args=None, handle=None):
        pass

    def score(self, ctx, cluster):
        return Exiting(7)
'''


def test_simulate_takes_an_int_subclass_score_as_its_int(tmp_path: Path) -> None:
    """Its comparisons raised SystemExit outside the plugin boundary: simulate exited 9, no message."""
    site = install(
        tmp_path / "site",
        "fleetsched-example-exiting",
        modules={"fleetsched_example_exiting": EXITING_SCORE},
        entry_points={"ExitingScore": "fleetsched_example_exiting:ExitingScore"},
    )
    config = write(tmp_path, {"profiles": [{"plugins": {"score": {"enabled": [{"name": "ExitingScore"}]}}}]})
    done = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "--config", str(config), *EXAMPLES],
        capture_output=True, text=True, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        check=False, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and "ExitingScore" not in done.stdout
    assert "web" in done.stdout  # the examples' bindings were scheduled and printed


def test_an_unknown_field_is_worded_as_kubectl_words_it_wherever_the_file_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``config validate``, ``simulate --config`` and ``scheduler --config``: one line, kube-scheduler's
    and kubectl's words, the whole path for a nested field, the file's line and column, exit 2."""
    bad = tmp_path / "c.yaml"
    bad.write_text("apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n"
                   "profils:\n- schedulerName: a\n")
    nested = tmp_path / "n.yaml"
    nested.write_text("apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n"
                      "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n"
                      "      - {name: ClusterLocality, weigth: 2}\n")
    top = f'{bad} (line 3, column 1): strict decoding error: unknown field "profils"'
    deep = f'{nested} (line 8, column 33): strict decoding error: unknown field ' \
        '"profiles[0].plugins.score.enabled[0].weigth"'
    assert run(capsys, "config", "validate", str(bad)) == (2, "", f"fleetsched config validate: {top}\n")
    assert run(capsys, "config", "validate", str(nested)) == (2, "", f"fleetsched config validate: {deep}\n")
    simulated = run(capsys, "simulate", "--config", str(bad), *EXAMPLES)
    assert simulated == (2, "", f"fleetsched simulate: {top}\n")
    # a plugin's args: the plugin refuses the field, the file says where it is
    args = tmp_path / "a.yaml"
    args.write_text("apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n"
                    "profiles:\n- plugins:\n    score:\n      enabled: [{name: ClusterResourcesFit}]\n"
                    "  pluginConfig:\n  - name: ClusterResourcesFit\n    args:\n      scoringStrategy:\n"
                    "        typ: MostAllocated\n")
    in_args = (f'{args} (line 11, column 9): strict decoding error: unknown field '
               '"profiles[0].pluginConfig[0].args.scoringStrategy.typ" (known: requestedToCapacityRatio, '
               'resources, type)')
    assert run(capsys, "config", "validate", str(args)) == (2, "", f"fleetsched config validate: {in_args}\n")
    for config, message in ((bad, top), (args, in_args)):
        done = subprocess.run(
            [sys.executable, "-m", "fleetsched", "scheduler", "--config", str(config), "--kubeconfig",
             str(tmp_path / "absent")],
            capture_output=True, text=True, check=False, timeout=60,
        )
        assert done.returncode == 2
        [line] = (done.stdout + done.stderr).strip().splitlines()
        assert json.loads(line)["error"] == message, line  # a structured log line: the same message

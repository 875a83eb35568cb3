"""What ``render`` writes loads back to the same configuration (``config default`` round trip)."""

from __future__ import annotations

import base64
from types import MappingProxyType

import pytest
import yaml

from fleetsched.scheduler.config import (
    ClientConnection,
    EstimatorSettings,
    ExtenderConfig,
    ExtenderTLS,
    ExtensionPoint,
    LeaderElection,
    PluginEntry,
    Profile,
    SchedulerConfiguration,
    configuration_to_yaml,
    default_profile,
)

from .helpers import parse

FILTER, SCORE, QUEUE_SORT = ExtensionPoint.FILTER, ExtensionPoint.SCORE, ExtensionPoint.QUEUE_SORT
CATALOG = {"Cost": frozenset({SCORE})}
PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def reordered() -> Profile:
    return Profile(
        scheduler_name="reordered",
        plugins=MappingProxyType(
            {
                QUEUE_SORT: (PluginEntry("PrioritySort"),),
                FILTER: (PluginEntry("ClusterEviction"), PluginEntry("TaintToleration")),
                SCORE: (PluginEntry("ClusterLocality", 3), PluginEntry("Cost", 2)),
            }
        ),
        plugin_args=MappingProxyType({"Cost": MappingProxyType({"label": "cost", "per": [1, 2]})}),
        ignorable_plugins=frozenset({"Cost"}),
        plugin_timeout_seconds=0.5,
        extenders=(
            ExtenderConfig(
                "https://ext.example:8443/scheduler",
                filter_verb="filter",
                prioritize_verb="prioritize",
                weight=2,
                http_timeout_seconds=1.5,
                ignorable=True,
                tls=ExtenderTLS(ca_data=PEM, cert_file="c.pem", key_file="k.pem", server_name="ext"),
            ),
        ),
    )


CONFIGURATIONS = [
    pytest.param(SchedulerConfiguration(), id="the default"),
    pytest.param(
        SchedulerConfiguration(profiles=(default_profile("*,-ClusterAffinity"),)), id="a --plugins removal"
    ),
    pytest.param(SchedulerConfiguration(profiles=(default_profile(""),)), id="no plugins"),
    pytest.param(
        SchedulerConfiguration(
            profiles=(
                Profile(
                    scheduler_name="default-scheduler",
                    plugins=default_profile().plugins,
                    extenders=reordered().extenders,
                ),
                reordered(),
            ),
            workers=4,
            enable_empty_workload_propagation=True,
            leader_election=LeaderElection(False, 30.0, 20.0, 5.0, "lease", "ns"),
            client_connection=ClientConnection("/etc/kubeconfig", 12.5, 25),
            estimator=EstimatorSettings(True, True, 1.5, 1234, "p", "n", "ca", "cert", "key", True),
            feature_gates=MappingProxyType({"SchedulingOvercommitProtection": True, "Failover": False}),
            assumption_ttl=90.0,
        ),
        id="everything set",
    ),
]


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_what_is_written_loads_back_equal(configuration: SchedulerConfiguration) -> None:
    text = configuration_to_yaml(configuration)
    assert parse(text, catalog=CATALOG) == configuration


def test_the_default_file_names_every_setting_at_todays_flag_defaults() -> None:
    written = yaml.safe_load(configuration_to_yaml(SchedulerConfiguration()))
    assert written["parallelism"] == 32
    # No gate named: each keeps Karmada's default or what --feature-gates says; Karmada's 5 minutes.
    assert written["featureGates"] == {}
    assert written["assumptionTTL"] == "5m"
    assert written["leaderElection"] == {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceName": "fleetsched-scheduler",
        "resourceNamespace": "karmada-system",
        "shardMode": "none",
        "shardIdentity": "",
    }
    assert written["clientConnection"] == {"kubeconfig": "", "qps": 500, "burst": 1000}
    assert written["estimator"]["timeout"] == "3s" and written["estimator"]["port"] == 10352
    assert written["profiles"] == [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                "filter": {
                    "enabled": [
                        {"name": n}
                        for n in (
                            "APIEnablement",
                            "TaintToleration",
                            "ClusterAffinity",
                            "SpreadConstraint",
                            "ClusterEviction",
                        )
                    ]
                },
                "score": {
                    "enabled": [
                        {"name": "ClusterAffinity", "weight": 1},
                        {"name": "ClusterLocality", "weight": 1},
                    ]
                },
            },
        }
    ]


def test_a_reordered_point_is_written_with_star() -> None:
    written = yaml.safe_load(configuration_to_yaml(SchedulerConfiguration(profiles=(reordered(),))))
    assert written["profiles"][0]["plugins"]["filter"]["disabled"] == [{"name": "*"}]
    assert written["extenders"][0]["tlsConfig"]["caData"] == base64.b64encode(PEM).decode()


def test_ca_data_may_be_pem_text_or_base64() -> None:
    for data in (PEM.decode(), base64.b64encode(PEM).decode()):
        doc = {
            "apiVersion": "config.fleetsched.io/v1alpha1",
            "kind": "SchedulerConfiguration",
            "extenders": [{"urlPrefix": "https://e/", "filterVerb": "f", "tlsConfig": {"caData": data}}],
        }
        tls = parse(doc).profiles[0].extenders[0].tls
        assert tls is not None and tls.ca_data == PEM

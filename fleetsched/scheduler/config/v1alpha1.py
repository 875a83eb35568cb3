"""The file format ``config.fleetsched.io/v1alpha1`` ``SchedulerConfiguration``: pydantic models of its
structure, shaped like kube-scheduler's ``KubeSchedulerConfiguration`` (profiles, plugins per extension
point with ``enabled``/``disabled``, ``multiPoint``, ``pluginConfig``, ``extenders``,
``leaderElection``, ``clientConnection``) plus fleetsched's own settings.

Owns the structure only: field names (camelCase), types, unknown fields refused, number ranges.
Rules that look across fields (duplicates, plugin names, merging with the defaults) are in
``resolve.py``. Absent fields stay ``None`` so the resolver can tell "not set" from a value.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator
from pydantic.alias_generators import to_camel

from fleetsched.scheduler.config.durations import parse_duration

__all__ = [
    "ClientConnectionModel",
    "EstimatorModel",
    "ExtenderModel",
    "ExtenderTLSModel",
    "LeaderElectionModel",
    "MoveBudgetModel",
    "PluginConfigModel",
    "PluginModel",
    "PluginSetModel",
    "PluginsModel",
    "ProfileModel",
    "SchedulerConfigurationModel",
]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=False,
        extra="forbid",
        strict=True,
        frozen=True,
    )


def _duration(value: Any) -> float:
    if not isinstance(value, str):
        raise ValueError("must be a duration string such as 5s or 500ms")
    return parse_duration(value)


Duration = Annotated[float, PlainValidator(_duration)]
# ``qps: 500`` is a number in YAML whether or not it has a fraction.
Number = Annotated[float, Field(strict=False)]


class PluginModel(_Model):
    name: str
    weight: int | None = None


class DisabledPluginModel(_Model):
    name: str


class PluginSetModel(_Model):
    enabled: list[PluginModel] | None = None
    disabled: list[DisabledPluginModel] | None = None


class PluginsModel(_Model):
    multi_point: PluginSetModel | None = None
    queue_sort: PluginSetModel | None = None
    pre_filter: PluginSetModel | None = None
    filter: PluginSetModel | None = None
    post_filter: PluginSetModel | None = None
    pre_score: PluginSetModel | None = None
    score: PluginSetModel | None = None
    reserve: PluginSetModel | None = None
    permit: PluginSetModel | None = None
    pre_bind: PluginSetModel | None = None
    post_bind: PluginSetModel | None = None


class PluginConfigModel(_Model):
    name: str
    args: dict[str, Any] | None = None


class ProfileModel(_Model):
    scheduler_name: str | None = None
    plugins: PluginsModel | None = None
    plugin_config: list[PluginConfigModel] | None = None
    ignorable_plugins: list[str] | None = None
    plugin_timeout: Duration | None = None


class ExtenderTLSModel(_Model):
    ca_file: str | None = None
    ca_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None
    insecure: bool | None = None


class ExtenderModel(_Model):
    url_prefix: str
    filter_verb: str | None = None
    prioritize_verb: str | None = None
    weight: int | None = None
    http_timeout: Duration | None = None
    ignorable: bool | None = None
    tls_config: ExtenderTLSModel | None = None


class LeaderElectionModel(_Model):
    leader_elect: bool | None = None
    lease_duration: Duration | None = None
    renew_deadline: Duration | None = None
    retry_period: Duration | None = None
    resource_name: str | None = None
    resource_namespace: str | None = None
    shard_mode: str | None = None
    shard_identity: str | None = None


class ClientConnectionModel(_Model):
    kubeconfig: str | None = None
    qps: Number | None = None
    burst: int | None = None


class EstimatorModel(_Model):
    enabled: bool | None = None
    disable_in_pull_mode: bool | None = None
    timeout: Duration | None = None
    port: int | None = None
    service_prefix: str | None = None
    service_namespace: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool | None = None


class MoveBudgetModel(_Model):
    """``moveBudget``: replicas in a move (issue 27); counts or percentages, checked by the resolver."""

    max_unavailable: int | str | None = None
    max_surge: int | str | None = None
    step_timeout: Duration | None = None


class SchedulerConfigurationModel(_Model):
    api_version: Literal["config.fleetsched.io/v1alpha1"]
    kind: Literal["SchedulerConfiguration"]
    parallelism: int | None = None
    enable_empty_workload_propagation: bool | None = None
    leader_election: LeaderElectionModel | None = None
    client_connection: ClientConnectionModel | None = None
    estimator: EstimatorModel | None = None
    feature_gates: dict[str, bool] | None = None
    assumption_ttl: Duration | None = Field(default=None, alias="assumptionTTL")
    move_budget: MoveBudgetModel | None = None
    profiles: list[ProfileModel] | None = None
    extenders: list[ExtenderModel] | None = None

"""Reading a ``SchedulerConfiguration`` file: YAML, version, structure, out-of-tree plugins, resolution.

The only I/O of the package is here: reading the file (``load_configuration``) and importing the
out-of-tree plugins a profile enables. Every refusal is a ``ConfigError`` whose ``str()`` is one line,
``<file>: <field path>: <reason>``, with ``(and N more problems)`` when there are several (the
error's ``problems`` holds them all, and ``fleetsched config validate`` prints one line each).

The text goes through the hardened reader every offline command uses (``fleetsched.api.yamlload``):
strict UTF-8, duplicate keys refused, integers past a float64 refused before conversion, alias
expansion bounded, nesting bounded (``MAX_DEPTH``), and the file itself bounded (``MAX_BYTES``, a
regular file only), so no input ends in a traceback or in minutes of parsing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from fleetsched.api import strict, yamlload
from fleetsched.api.text import escape_controls
from fleetsched.flags import WORKLOAD_AFFINITY
from fleetsched.scheduler.config import plugins as out_of_tree
from fleetsched.scheduler.config import v1alpha1 as v1
from fleetsched.scheduler.config.configuration import API_VERSION, KIND, SchedulerConfiguration
from fleetsched.scheduler.config.resolve import Catalog, Problem, referenced_plugins, resolve
from fleetsched.scheduler.framework.defaults import in_tree_points
from fleetsched.scheduler.framework.profile import DEFAULT_SCHEDULER_NAME, ExtensionPoint

__all__ = ["MAX_BYTES", "MAX_DEPTH", "ConfigError", "LoadedConfiguration", "load_configuration",
           "parse_configuration", "unknown_arg_message"]

# A configuration of many profiles with plugin args is tens of kilobytes; 1 MiB leaves room for large
# pluginConfig args and keeps parsing and validation well under a second.
MAX_BYTES = 1 << 20
# The deepest the format nests is pluginConfig args; plugins walk those recursively.
MAX_DEPTH = 64
# What the file may add through aliases: far more than any hand-written configuration shares.
_BUDGET = yamlload.Budget(max_alias_nodes=10_000, max_depth=MAX_DEPTH)


class ConfigError(ValueError):
    """A configuration file that cannot be used. ``str()``: ``<file>: <path>: <reason>``, one line;
    a field the format does not declare is ``<file> (line <l>, column <c>): strict decoding error:
    unknown field "<path>"``, as kubectl and kube-scheduler word it."""

    def __init__(
        self, reason: str, *, source: str = "", path: str = "", problems: tuple[Problem, ...] = (),
        position: tuple[int, int] | None = None,
    ) -> None:
        self.reason = " ".join(reason.split())
        self.source = source
        self.path = path
        # Every problem found, the first one included (``config validate`` prints them all).
        self.problems = problems or (Problem(path, reason, position),)
        # Field names and values come from the file: no control character reaches a terminal.
        parts = (_where(source, position), path, self.reason)
        super().__init__(escape_controls(": ".join(part for part in parts if part)))

    def lines(self) -> list[str]:
        """One line per problem: ``<file>: <path>: <reason>`` (``<file> (line, column)`` when known)."""
        out = []
        for problem in self.problems:
            parts = (_where(self.source, problem.position), problem.path, " ".join(problem.reason.split()))
            out.append(escape_controls(": ".join(part for part in parts if part)))
        return out


def _where(source: str, position: tuple[int, int] | None) -> str:
    if position is None or not source:
        return source
    return f"{source} (line {position[0]}, column {position[1]})"


@dataclass(frozen=True, slots=True)
class LoadedConfiguration:
    """The resolved configuration and the out-of-tree factories its profiles enable (name -> factory),
    for the runtime's registry to merge with the in-tree one."""

    configuration: SchedulerConfiguration
    out_of_tree: Mapping[str, Callable[..., object]] = field(default_factory=lambda: MappingProxyType({}))
    # The file it was read from and its text, to say where a field is (``unknown_arg_message``).
    source: str = field(default="", compare=False)
    text: str = field(default="", repr=False, compare=False)


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for step in loc:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


_TYPE_WORDS = {
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
}


def _reason(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in _TYPE_WORDS:
        value = error.get("input")
        return f"{_TYPE_WORDS[kind]} (got {type(value).__name__ if value is not None else 'null'})"
    if kind == "value_error":
        cause = (error.get("ctx") or {}).get("error")
        return str(cause) if cause is not None else str(error.get("msg"))
    message = str(error.get("msg", "invalid"))
    return re.sub(r"^Value error, ", "", message)


def _first(problems: tuple[Problem, ...], source: str) -> ConfigError:
    first = problems[0]
    more = len(problems) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return ConfigError(first.reason + suffix, source=source, path=first.path, problems=problems,
                       position=first.position)


def _load_error(exc: yamlload.LoadError, source: str) -> ConfigError:
    reason = exc.reason
    if exc.line is not None:
        if reason.startswith("malformed YAML: "):
            reason = f"malformed YAML (line {exc.line}): {reason.removeprefix('malformed YAML: ')}"
        else:
            reason += f" (line {exc.line}, column {exc.column})"
    return ConfigError(reason, source=source, path=exc.path)


def _document(text: str, source: str) -> tuple[int, Mapping[str, Any]]:
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise ConfigError(f"larger than the {MAX_BYTES} bytes a configuration may hold", source=source)
    try:
        documents = [(number, d) for number, d in yamlload.iter_documents(text, source, budget=_BUDGET)
                     if d is not None]
    except yamlload.LoadError as exc:
        raise _load_error(exc, source) from None
    if not documents:
        raise ConfigError(f"empty file: expected a {KIND} ({API_VERSION})", source=source)
    if len(documents) > 1:
        raise ConfigError(f"holds {len(documents)} YAML documents: expected one {KIND}", source=source)
    number, doc = documents[0]
    if not isinstance(doc, dict):
        raise ConfigError(f"must be a mapping: a {KIND} ({API_VERSION})", source=source)
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = doc.get(key)
        if value is None:
            raise ConfigError(f"required field (expected {expected!r})", source=source, path=key)
        if value != expected:
            reason = f"unsupported value {value!r} (supported: {expected!r})"
            raise ConfigError(reason, source=source, path=key)
    return number, doc


def parse_model(text: str, *, source: str = "<config>") -> v1.SchedulerConfigurationModel:
    """The file's structure, checked: YAML, one document, apiVersion and kind, fields and types."""
    number, doc = _document(text, source)
    try:
        return v1.SchedulerConfigurationModel.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = tuple(_problem(e, text, number) for e in errors)
        raise _first(problems, source) from None


def _problem(error: Mapping[str, Any], text: str, document: int) -> Problem:
    loc = tuple(error["loc"])
    if error["type"] != "extra_forbidden":
        return Problem(_path(loc), _reason(error))
    # kube-scheduler's (and kubectl's) strict decoding: the whole path in the message, where the key is
    return Problem("", strict.unknown_field_message([loc]), yamlload.position_of(text, document, loc))


def parse_configuration(
    text: str,
    *,
    source: str = "<config>",
    workload_affinity: bool = False,
    entry_points: bool = True,
    extra_catalog: Catalog | None = None,
    points_of: Callable[[Callable[..., object]], frozenset[ExtensionPoint] | None] = (
        out_of_tree.extension_points_of
    ),
) -> LoadedConfiguration:
    """The configuration a file's text means. ``entry_points``: look for out-of-tree plugins among the
    installed distributions; ``extra_catalog``: further known plugins and their points (tests, the
    runtime's registry); ``points_of``: which extension points an out-of-tree factory's plugins
    implement (the runtime knows its interfaces best). ``workload_affinity`` is the gate as the
    flags say it; the file's ``featureGates.WorkloadAffinity``, when written, decides instead (a
    flag saying otherwise is the caller's conflict to report). Raises ``ConfigError`` or
    ``plugins.PluginLoadError``, one line each."""
    model = parse_model(text, source=source)
    if model.feature_gates is not None:
        workload_affinity = model.feature_gates.get(WORKLOAD_AFFINITY, workload_affinity)
    in_tree = in_tree_points(workload_affinity=workload_affinity)
    catalog: dict[str, frozenset[ExtensionPoint] | None] = dict(in_tree)
    if extra_catalog:
        catalog.update(extra_catalog)
    factories: Mapping[str, Callable[..., object]] = MappingProxyType({})
    if entry_points:
        # An in-tree plugin that the gate leaves out is still in-tree, not a name for a package to take.
        reserved = set(in_tree_points(workload_affinity=True)) | set(catalog)
        found = out_of_tree.discover(in_tree=reserved)
        wanted = referenced_plugins(model) - set(catalog)
        factories = out_of_tree.load(wanted, found)
        # Installed but enabled nowhere: known (a profile may disable it), never imported.
        catalog.update({name: None for name in found if name not in catalog})
        for name, factory in factories.items():
            catalog[name] = points_of(factory)
    configuration, problems = resolve(model, catalog=catalog, workload_affinity=workload_affinity)
    if configuration is None:
        raise _first(problems, source)
    return LoadedConfiguration(configuration, factories, source, text)


_ARGS_PATH_STEP = re.compile(r"[^.\[\]]+|\[\d+\]")


def unknown_arg_message(error: Exception, loaded: LoadedConfiguration | None) -> str | None:
    """A plugin's args refusing a field they do not have (``ProfileError`` from building the profiles,
    as start-up builds them), worded as a field of the file itself is: ``<file> (line, column):
    strict decoding error: unknown field "profiles[0].pluginConfig[1].args.scoringStrategy.typ"``
    and the plugin's own hint (``(known: ...)``). None for any other error, or when the field
    cannot be found in the file (the error's own words then stand)."""
    args_error = getattr(error, "args_error", None)
    if args_error is None or loaded is None or not loaded.text:
        return None
    field_path, reason = str(args_error.field_path), " ".join(str(args_error.reason).split())
    nested = re.match(r"^([^\s:]+): unknown field\b(.*)$", reason)
    if field_path and (reason.startswith("unknown field") or reason == "Extra inputs are not permitted"):
        hint = reason.removeprefix("unknown field").strip() if reason.startswith("unknown field") else ""
    elif not field_path and nested is not None:
        field_path, hint = nested.group(1), nested.group(2).strip()
    else:
        return None
    try:
        number, doc = _document(loaded.text, loaded.source)
    except ConfigError:
        return None
    profiles = doc.get("profiles")
    if not isinstance(profiles, list):
        return None
    steps = tuple(int(s[1:-1]) if s.startswith("[") else s for s in _ARGS_PATH_STEP.findall(field_path))
    for i, profile in enumerate(profiles):
        name = profile.get("schedulerName") if isinstance(profile, Mapping) else None
        configs = profile.get("pluginConfig") if isinstance(profile, Mapping) else None
        if (name or DEFAULT_SCHEDULER_NAME) != args_error.profile or not isinstance(configs, list):
            continue
        for j, config in enumerate(configs):
            if isinstance(config, Mapping) and config.get("name") == args_error.plugin:
                loc = ("profiles", i, "pluginConfig", j, "args", *steps)
                position = yamlload.position_of(loaded.text, number, loc)
                if position is None:
                    return None
                message = strict.unknown_field_message([loc]) + (f" {hint}" if hint else "")
                return escape_controls(f"{_where(loaded.source, position)}: {message}")
    return None


def load_configuration(
    path: str | Path, *, workload_affinity: bool = False, entry_points: bool = True
) -> LoadedConfiguration:
    """Read and resolve the file at ``path``; ConfigError (one line) when it cannot be used."""
    name = str(path)
    try:
        text = yamlload.decode_text(
            yamlload.read_regular_file(name, limit=MAX_BYTES, what="configuration file"), name
        )
    except yamlload.LoadError as exc:
        raise _load_error(exc, name) from None
    return parse_configuration(
        text, source=name, workload_affinity=workload_affinity, entry_points=entry_points
    )

"""The plugin registry: plugin name -> factory, and Karmada's ``--plugins`` selection syntax.

Owns ``Registry`` (a plain ordered mapping from a plugin name to ``factory(args, handle)``; adding a
name twice is refused, by ``register`` and by ``merge`` alike, so an out-of-tree plugin cannot shadow
an in-tree one) and ``select_plugins`` (``*`` adds all, ``-Name`` removes, ``Name`` adds). It knows
no plugin: the in-tree registry is built in ``scheduler/plugins/registry.py``. No I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from fleetsched.scheduler.framework.interface import PluginArgsError, PluginFactory

__all__ = ["DuplicatePluginError", "PluginSelectionError", "Registry", "select_plugins"]


class DuplicatePluginError(ValueError):
    """A plugin name is registered twice."""


class PluginSelectionError(ValueError):
    """A ``--plugins`` entry names no known plugin."""


class Registry:
    """Plugin name -> factory, in registration order (the order is data: see ``defaults.py``)."""

    __slots__ = ("_args_models", "_factories")

    def __init__(self, factories: Mapping[str, PluginFactory] | None = None) -> None:
        self._factories: dict[str, PluginFactory] = {}
        self._args_models: dict[str, Any] = {}
        for name, factory in (factories or {}).items():
            self.register(name, factory)

    def register(self, name: str, factory: PluginFactory, *, args_model: Any = None) -> None:
        """Add ``name``; a name already present is an error (never silently replaced).

        ``args_model`` is the plugin's typed args (a dataclass or a pydantic model type); when not
        given, the factory's own ``args_model`` attribute counts (a plugin class used as factory).
        """
        if not name:
            raise ValueError("a plugin name must not be empty")
        if name in self._factories:
            raise DuplicatePluginError(f"a plugin named {name!r} is already registered")
        self._factories[name] = factory
        model = args_model if args_model is not None else getattr(factory, "args_model", None)
        if model is not None:
            self._args_models[name] = model

    def args_model(self, name: str) -> Any:
        """The typed args model of ``name``, or None when the plugin takes no args."""
        return self._args_models.get(name)

    def unregister(self, name: str) -> None:
        if name not in self._factories:
            raise KeyError(f"no plugin named {name!r} is registered")
        del self._factories[name]
        self._args_models.pop(name, None)

    def merge(self, other: Registry | Mapping[str, PluginFactory]) -> None:
        """Add every plugin of ``other``; refuses (and adds nothing) if any name is already here."""
        names = list(other)
        clash = sorted(n for n in names if n in self._factories)
        if clash:
            raise DuplicatePluginError(f"plugin(s) already registered: {', '.join(clash)}")
        for name in names:
            model = other.args_model(name) if isinstance(other, Registry) else None
            self.register(name, other[name], args_model=model)

    def __getitem__(self, name: str) -> PluginFactory:
        return self._factories[name]

    def get(self, name: str) -> PluginFactory | None:
        return self._factories.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)

    def names(self) -> tuple[str, ...]:
        return tuple(self._factories)

    def copy(self) -> Registry:
        out = Registry()
        out.merge(self)
        return out


def select_plugins(spec: str | Iterable[str], known: Iterable[str]) -> tuple[str, ...]:
    """Apply Karmada's ``--plugins`` list over ``known`` names: ``*`` adds all, ``-Name`` removes,
    ``Name`` adds. Returns the enabled names in ``known``'s order (our fixed order, see defaults)."""
    universe = tuple(known)
    items = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [s.strip() for s in spec]
    enabled: set[str] = set()
    for item in items:
        if not item:
            continue
        if item == "*":
            enabled.update(universe)
            continue
        name = item[1:] if item.startswith("-") else item
        if name not in universe:
            listed = ", ".join(sorted(universe))
            raise PluginSelectionError(f"unknown scheduler plugin {name!r} (known: {listed})")
        if item.startswith("-"):
            enabled.discard(name)
        else:
            enabled.add(name)
    return tuple(n for n in universe if n in enabled)


def validate_args(profile: str, plugin: str, model: Any, raw: Mapping[str, Any] | None) -> Any:
    """The plugin's args as its typed model, or None; a one-line PluginArgsError otherwise."""
    if model is None:
        if raw:
            raise PluginArgsError(profile, plugin, "", "this plugin takes no args")
        return None
    raw = dict(raw or {})
    if hasattr(model, "model_validate"):  # a pydantic model (not imported here: the core stays light)
        try:
            return model.model_validate(raw)
        except Exception as e:
            errors = getattr(e, "errors", None)
            if callable(errors):
                first = errors()[0]
                loc = ".".join(str(p) for p in first.get("loc", ()))
                raise PluginArgsError(profile, plugin, loc, str(first.get("msg", e))) from None
            raise PluginArgsError(profile, plugin, "", str(e)) from None
    if dataclasses.is_dataclass(model):
        fields = {f.name: f for f in dataclasses.fields(model)}
        for name in raw:
            if name not in fields:
                raise PluginArgsError(
                    profile, plugin, name, f"unknown field (known: {', '.join(sorted(fields))})"
                )
        for name, f in fields.items():
            missing = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if missing and name not in raw:
                raise PluginArgsError(profile, plugin, name, "required")
        try:
            return model(**raw)
        except (TypeError, ValueError) as e:
            raise PluginArgsError(profile, plugin, "", str(e)) from None
    raise PluginArgsError(
        profile, plugin, "", f"args_model {model!r} is neither a dataclass nor a pydantic model"
    )

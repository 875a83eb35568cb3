"""Small builders for configuration files in tests."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from fleetsched.scheduler.config import ConfigError, SchedulerConfiguration, parse_configuration
from fleetsched.scheduler.config.resolve import Catalog

API = {"apiVersion": "config.fleetsched.io/v1alpha1", "kind": "SchedulerConfiguration"}


def a_file(**fields: Any) -> dict[str, Any]:
    return {**API, **fields}


def with_plugins(**points: Any) -> dict[str, Any]:
    """A file with one profile whose ``plugins`` are ``points``."""
    return a_file(profiles=[{"schedulerName": "default-scheduler", "plugins": points}])


def parse(
    doc: dict[str, Any] | str, *, catalog: Catalog | None = None, **options: Any
) -> SchedulerConfiguration:
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False)
    loaded = parse_configuration(text, source="c.yaml", entry_points=False, extra_catalog=catalog, **options)
    return loaded.configuration


def error_of(doc: dict[str, Any] | str, *, catalog: Catalog | None = None, **options: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(doc, catalog=catalog, **options)
    message = str(caught.value)
    assert "\n" not in message
    return message

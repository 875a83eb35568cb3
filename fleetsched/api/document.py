"""A validated binding kept compactly as JSON, and the one JSON encoding of dumped models.

Pure and light: no pydantic import, so ``fleetsched simulate`` (and the scheduling core it loads)
can hold and write bindings without loading the API models until a file is read.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fleetsched.api.times import format_time

if TYPE_CHECKING:
    from fleetsched.api.work import ClusterResourceBinding, ResourceBinding

__all__ = ["BindingDocument", "plain_json_default"]

def plain_json_default(value: Any) -> Any:
    """What the JSON encoder cannot write itself: times (RFC 3339, seconds) and quantities (their
    canonical text). The one encoding of a dumped model, kept or printed (``fleetsched simulate``)."""
    if isinstance(value, dt.datetime):
        return format_time(value)
    if isinstance(value, tuple):
        return list(value)
    return str(value)


@dataclass(frozen=True, slots=True)
class BindingDocument:
    """A validated ResourceBinding or ClusterResourceBinding kept as the compact JSON of the fields
    the input sets (``model_dump(by_alias=True, exclude_unset=True)``, no defaults), encoded with
    ``plain_json_default``. What ``fleetsched simulate`` holds per binding until it schedules it."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    data: bytes

    @classmethod
    def of(cls, model: ResourceBinding | ClusterResourceBinding) -> BindingDocument:
        fields = model.model_dump(mode="python", by_alias=True, exclude_unset=True)
        return cls.of_fields(fields, namespace=model.metadata.namespace, name=model.metadata.name or "")

    @classmethod
    def of_fields(cls, fields: Mapping[str, Any], *, namespace: str | None, name: str) -> BindingDocument:
        data = json.dumps(fields, default=plain_json_default, separators=(",", ":"), ensure_ascii=False)
        return cls(
            api_version=str(fields.get("apiVersion", "")),
            kind=str(fields.get("kind", "")),
            namespace=namespace,
            name=name,
            data=data.encode("utf-8", "surrogatepass"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The binding's fields as plain JSON values (a new dict each time)."""
        return json.loads(self.data)  # type: ignore[no-any-return]

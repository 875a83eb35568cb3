"""Shared machinery of the API models: the base class, quantity/time/integer field types.

Owns how Karmada's JSON (camelCase, omitempty) maps onto Python names. Knows nothing about kinds.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel

from fleetsched.api.quantity import Quantity, pydantic_quantity
from fleetsched.api.times import format_time

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


class KarmadaModel(BaseModel):
    """Base of every API model: camelCase JSON names, Python snake_case attributes.

    Unknown fields are ignored (the API server prunes them too). Types are strict: YAML ``"3"`` is
    not an integer and ``true`` is not a string, as for the API server.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        strict=True,
        validate_default=False,
        revalidate_instances="never",
    )

    def to_dict(self) -> dict[str, Any]:
        """Karmada's JSON form: camelCase keys, absent (None) fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def _validate_quantity(value: Any) -> Quantity:
    return pydantic_quantity(value)


QuantityField = Annotated[
    Quantity,
    PlainValidator(_validate_quantity),
    PlainSerializer(str, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "x-kubernetes-int-or-string": True, "format": "quantity"}),
]
"""A Kubernetes quantity: accepts text or numbers, keeps an exact ``Quantity``, writes canonical text."""

ResourceList = dict[str, QuantityField]


def parse_time(value: Any) -> datetime:
    """RFC 3339 text (or a datetime YAML already parsed) as an aware UTC datetime."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"invalid RFC3339 time {value!r}") from exc
    else:
        raise ValueError(f"time must be an RFC3339 string, not {type(value).__name__}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)




Time = Annotated[
    datetime,
    PlainValidator(parse_time),
    PlainSerializer(format_time, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]

Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX, json_schema_extra={"format": "int32"})]
NonNegativeInt32 = Annotated[int, Field(ge=0, le=INT32_MAX, json_schema_extra={"format": "int32"})]
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX, json_schema_extra={"format": "int64"})]
PositiveInt64 = Annotated[int, Field(ge=1, le=INT64_MAX, json_schema_extra={"format": "int64"})]

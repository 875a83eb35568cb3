"""Kubernetes label syntax, label requirements and taint toleration, written once for every reader.

Three parts of fleetsched match labels by Kubernetes' rules and must agree on them to the letter:
the API's selectors (policies' resource selectors), the scheduling core's ClusterAffinity and the
estimator's node filter (karmada-scheduler-estimator's node affinity check). What truly differs
between them is which operators a requirement may use, so that is a parameter here, not a second
copy:

* a ``metav1.LabelSelector`` (a ``labelSelector``'s matchLabels / matchExpressions) converts only
  In, NotIn, Exists and DoesNotExist; Gt or Lt make it invalid (``allow_compare=False``);
* a Karmada cluster ``fieldSelector`` (provider/region) and a Kubernetes node-selector term also
  accept Gt and Lt with one int64 value (``allow_compare=True``).

Karmada's ``zone`` key of a cluster field selector is matched against a list, not a label
(:func:`zones_match`); both readers of ClusterMatches need it. What stays with the callers:
node-selector *field* requirements (a one-field set, key not validated) and each
caller's representation of a selector.

Toleration (the scheduler's TaintToleration, the estimator's node taints) is one rule in both places,
comparison operators disabled; the scheduler's and the estimator's Taint/Toleration values stay separate
types (the estimator's carries ``tolerationSeconds`` from the wire, the scheduler's renders itself into
reasons) and are read here through their common shape.

Standard library only: the scheduling core and the estimator algorithm import this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "Requirement",
    "compile_requirement",
    "is_label_value",
    "is_qualified_name",
    "parse_int64",
    "tolerates",
    "zones_match",
]

# Matched with fullmatch: Python's '$' also matches before a final newline, Go's does not, so "a\n" is
# neither a valid label value nor an int64 there.
_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT64_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def is_qualified_name(key: str) -> bool:
    """Kubernetes IsQualifiedName: ``[prefix/]name``, prefix a DNS subdomain (≤253), name ≤63 characters."""
    prefix, slash, name = key.rpartition("/")
    # A second '/' lands in the prefix, which the subdomain pattern then refuses.
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and _NAME_RE.fullmatch(name) is not None


def is_label_value(value: str) -> bool:
    """Kubernetes IsValidLabelValue: empty, or ≤63 characters of the name alphabet."""
    return value == "" or (len(value) <= 63 and _NAME_RE.fullmatch(value) is not None)


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``, or None where it fails (not decimal, or out of range)."""
    if not _INT64_RE.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One valid requirement (labels.Requirement). ``operator`` is In, NotIn, Exists, DoesNotExist,
    Gt or Lt; ``bound`` holds the parsed value of Gt/Lt."""

    key: str
    operator: str
    values: frozenset[str]
    bound: int = 0

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == "NotIn":
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        # Gt / Lt: the label must be present and parse as an int64.
        value = labels.get(self.key)
        number = None if value is None else parse_int64(value)
        if number is None:
            return False
        return number > self.bound if op == "Gt" else number < self.bound


def compile_requirement(
    key: str, operator: str, values: Sequence[str], *, allow_compare: bool
) -> Requirement | None:
    """labels.NewRequirement's checks, or None where Kubernetes reports an error: key syntax, the
    operator (Gt/Lt only with ``allow_compare``), the value count it needs, value syntax."""
    if not is_qualified_name(key):
        return None
    bound = 0
    if operator in ("In", "NotIn"):
        if not values:
            return None
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            return None
    elif operator in ("Gt", "Lt") and allow_compare:
        parsed = parse_int64(values[0]) if len(values) == 1 else None
        if parsed is None:
            return None
        bound = parsed
    else:
        return None
    if not all(is_label_value(v) for v in values):
        return None
    return Requirement(key, operator, frozenset(values), bound)


def zones_match(operator: str, values: Sequence[str], zones: Sequence[str]) -> bool:
    """Karmada's ``zone`` field requirement against a cluster's zone list;
    any operator but the four set-based ones is false."""
    if operator == "In":
        return bool(zones) and any(zone in values for zone in zones)
    if operator == "NotIn":
        return not any(zone in values for zone in zones)
    if operator == "Exists":
        return bool(zones)
    if operator == "DoesNotExist":
        return not zones
    return False


class _Taint(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> str: ...


class _Toleration(_Taint, Protocol):
    @property
    def operator(self) -> str: ...


def tolerates(toleration: _Toleration, taint: _Taint) -> bool:
    """Toleration.ToleratesTaint with the comparison operators disabled: Gt/Lt never tolerate."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"

"""The policies of a ``simulate`` input that select nothing: no template of the input matches any of
their resource selectors, so they derive no binding and would otherwise leave no trace in the
output. One note each on standard error (issue 29); the live policy controller says the same with a
``NoResourceSelected`` Event on the policy.

Templates are filed under the keys the detector's policy index files selectors under
(``detector/index.py``): a selector is tried only against the templates sharing its key, and
``implicit_priority`` decides, as derivation does."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

__all__ = ["selects_nothing_notes"]

_Key = tuple[str, ...]


def _keys(template: Any) -> list[_Key]:
    api, kind = template.api_version, template.kind
    keys: list[_Key] = [(api, kind), (api, kind, "name", template.name)]
    keys += [(api, kind, "label", k, str(v)) for k, v in (template.metadata.labels or {}).items()]
    return keys


def selects_nothing_notes(policies: Sequence[Any], templates: Sequence[Any]) -> list[str]:
    """``PropagationPolicy NS/NAME selects nothing: ...`` for each policy (as admitted: the webhook's
    defaults, such as a selector's namespace, count) that no template of ``templates`` matches."""
    from fleetsched.detector import implicit_priority
    from fleetsched.detector.index import selector_key

    by_key: dict[_Key, list[Any]] = defaultdict(list)
    for template in templates:
        for key in _keys(template):
            by_key[key].append(template)
    notes = []
    for policy in policies:
        matched = any(
            implicit_priority(policy, template) > 0
            for selector in policy.spec.resource_selectors
            for template in by_key.get(selector_key(selector), ())
        )
        if not matched:
            md = policy.metadata
            ref = f"{md.namespace}/{md.name}" if md.namespace else md.name
            notes.append(
                f"{policy.KIND} {ref} selects nothing: no template of the input matches its "
                "resourceSelectors, so it derives no binding"
            )
    return notes

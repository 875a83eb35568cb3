"""What a policy's selectors select, told on the policy: a kind the API server does not serve (a
typo such as ``Deploymnet``, asked of API discovery) as distinct from a served kind this controller
does not watch (``--resources``), and a policy whose selectors match no template at all.

Discovery is read only for selectors naming a kind the controller does not watch (rare), once per
group-version and policy reconcile."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.api.policy import ResourceSelector
from fleetsched.kube.client import ApiError, KubeClient

SELECTOR_NOT_SERVED = "ResourceKindNotServed"
NOTHING_SELECTED = "NoResourceSelected"

NOTHING_SELECTED_MESSAGE = (
    "no resource template matches spec.resourceSelectors: nothing is propagated (check each "
    "selector's apiVersion, kind, name, namespace and labelSelector against the templates)"
)


def discovery_path(api_version: str) -> str:
    """API discovery of one group-version: ``/api/v1`` for the core group, ``/apis/GROUP/VERSION``."""
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


def served_kinds(discovery: Mapping[str, Any]) -> list[str]:
    """The kinds a group-version's discovery document lists (subresources left out)."""
    return [
        str(r.get("kind"))
        for r in discovery.get("resources") or ()
        if isinstance(r, Mapping) and "/" not in str(r.get("name") or "") and r.get("kind")
    ]


def not_served_message(label: str, api_version: str, kinds: Sequence[str] | None, kind: str) -> str:
    """``label`` names the selector; ``kinds`` None: the group-version itself is not served."""
    if kinds is None:
        return f"{label}: the API server serves no {api_version}, so no such template can exist"
    close = difflib.get_close_matches(kind, list(kinds), n=1)
    near = f' (did you mean "{close[0]}"?)' if close else ""
    return f"{label}: the API server serves no kind {kind!r} in {api_version}{near}"


@dataclass(frozen=True, slots=True)
class SelectorKinds:
    """The selectors naming a kind the controller does not watch, split by what discovery says."""

    not_served: tuple[str, ...]  # messages
    not_watched: tuple[str, ...]  # ``resourceSelectors[i]: <apiVersion> <kind>``


async def check_kinds(
    client: KubeClient, selectors: Sequence[ResourceSelector], watched: Collection[tuple[str, str]]
) -> SelectorKinds:
    """Each selector whose kind the controller does not watch, asked of discovery. A discovery
    failure other than 404 counts the kind as served (the older, milder advice)."""
    documents: dict[str, list[str] | None] = {}
    not_served: list[str] = []
    not_watched: list[str] = []
    for index, selector in enumerate(selectors):
        if (selector.api_version, selector.kind) in watched:
            continue
        label = f"resourceSelectors[{index}]: {selector.api_version} {selector.kind}"
        if selector.api_version not in documents:
            try:
                documents[selector.api_version] = served_kinds(
                    await client.get(discovery_path(selector.api_version))
                )
            except ApiError as exc:
                documents[selector.api_version] = None if exc.is_not_found else [selector.kind]
        kinds = documents[selector.api_version]
        if kinds is None or selector.kind not in kinds:
            not_served.append(not_served_message(label, selector.api_version, kinds, selector.kind))
        else:
            not_watched.append(label)
    return SelectorKinds(tuple(not_served), tuple(not_watched))

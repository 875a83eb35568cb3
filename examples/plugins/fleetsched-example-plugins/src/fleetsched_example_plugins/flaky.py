"""``ExampleFlaky``: a plugin that raises on purpose, to show what fleetsched does with a broken plugin.

With ``failAt: Filter`` its Filter raises, with ``failAt: Score`` its Score does; with ``failAt: ""``
it passes every cluster and scores 0. A raising plugin fails the binding with a condition message
naming it and the extension point, unless the profile lists it in ``ignorablePlugins``: then it is
skipped for that binding and the explanation says so. It declares no inputs, so it is asked every
time.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetsched.plugin import ClusterInfo, FilterContext, Handle, Status

NAME = "ExampleFlaky"
POINTS = ("Filter", "Score", "")


class InjectedFailure(RuntimeError):
    """What ExampleFlaky raises."""


@dataclass(frozen=True, slots=True)
class ExampleFlakyArgs:
    """``pluginConfig`` args, field names as the configuration file writes them."""

    failAt: str = "Filter"
    message: str = "injected failure"

    def __post_init__(self) -> None:
        if self.failAt not in POINTS:
            raise ValueError(f"failAt: must be one of Filter, Score or empty, got {self.failAt!r}")
        if not isinstance(self.message, str):
            raise ValueError(f"message: must be a string, got {self.message!r}")


class ExampleFlaky:
    """Raises ``InjectedFailure(message)`` at the configured point."""

    name = NAME
    args_model = ExampleFlakyArgs

    def __init__(self, args: ExampleFlakyArgs | None = None, handle: Handle | None = None) -> None:
        args = args or ExampleFlakyArgs()
        self.fail_at = args.failAt
        self.message = args.message

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        if self.fail_at == "Filter":
            raise InjectedFailure(self.message)
        return Status.success()

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        if self.fail_at == "Score":
            raise InjectedFailure(self.message)
        return 0


def new(args: ExampleFlakyArgs | None, handle: Handle | None) -> ExampleFlaky:
    """The factory, for registering the plugin by hand (the entry point names the class)."""
    return ExampleFlaky(args, handle)

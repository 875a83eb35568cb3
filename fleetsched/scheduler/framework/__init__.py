"""The scheduling framework: the public plugin API (``interface``), the registry, the runtime that
runs a profile's plugins (``runtime``), and the default profile (``defaults``).

Must not import a plugin: the in-tree registry is built in ``scheduler/plugins/registry.py`` and
loaded only when ``defaults.in_tree_registry`` is called. Out-of-tree authors import
``fleetsched.plugin``.
"""

from fleetsched.scheduler.framework.defaults import (
    DEFAULT_FILTERS,
    DEFAULT_SCORES,
    default_profile,
    in_tree_registry,
)
from fleetsched.scheduler.framework.interface import (
    MAX_SCORE,
    MIN_SCORE,
    UNAUTHENTIC_REPLICA,
    BatchFilterPlugin,
    BatchScorePlugin,
    ClusterFacet,
    Code,
    ComponentSetEstimator,
    CycleState,
    DeclaresInputs,
    Extender,
    FilterContext,
    FilterPlugin,
    NormalizeScorePlugin,
    ReplicaEstimator,
    Result,
    ScorePlugin,
    Status,
)
from fleetsched.scheduler.framework.registry import (
    DuplicatePluginError,
    PluginSelectionError,
    Registry,
    select_plugins,
)
from fleetsched.scheduler.framework.runtime import (
    STEP_ASSIGN_REPLICAS,
    STEP_FILTER,
    STEP_SCORE,
    STEP_SELECT,
    STEPS,
)

__all__ = [
    "DEFAULT_FILTERS",
    "DEFAULT_SCORES",
    "MAX_SCORE",
    "MIN_SCORE",
    "STEPS",
    "STEP_ASSIGN_REPLICAS",
    "STEP_FILTER",
    "STEP_SCORE",
    "STEP_SELECT",
    "UNAUTHENTIC_REPLICA",
    "BatchFilterPlugin",
    "BatchScorePlugin",
    "ClusterFacet",
    "Code",
    "ComponentSetEstimator",
    "CycleState",
    "DeclaresInputs",
    "DuplicatePluginError",
    "Extender",
    "FilterContext",
    "FilterPlugin",
    "NormalizeScorePlugin",
    "PluginSelectionError",
    "Registry",
    "ReplicaEstimator",
    "Result",
    "ScorePlugin",
    "Status",
    "default_profile",
    "in_tree_registry",
    "select_plugins",
]

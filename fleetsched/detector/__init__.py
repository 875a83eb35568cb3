"""Karmada's detector as pure functions: resource templates + policies → desired bindings.

* ``derive`` / ``derive_bindings``: which policy claims each template and the binding it yields,
  with a reason for every template left without one;
* ``build_binding``, ``binding_name``: one binding from one template and its policy (§7.6);
* ``interpret_replicas``: replicas and replicaRequirements from a workload's pod template (§7.7);
* ``choose_policy``, ``implicit_priority``: policy matching and priority (§7.3-§7.4).

No Kubernetes client, no I/O: the policy controller (``fleetsched.controller.policy.decisions*``) and
``fleetsched simulate`` call these unchanged.
"""

from fleetsched.detector.build import BuildError, FeatureGates, binding_name, build_binding, claim_metadata
from fleetsched.detector.derive import (
    AdmissionError,
    Derivation,
    TemplateResult,
    admit_offline,
    derive,
    derive_bindings,
    offline_permanent_id,
)
from fleetsched.detector.interpret import InterpretError, effective_pod_request, interpret_replicas
from fleetsched.detector.match import PolicyMatch, choose_policy, claim_of, implicit_priority

__all__ = [
    "AdmissionError",
    "BuildError",
    "Derivation",
    "FeatureGates",
    "InterpretError",
    "PolicyMatch",
    "TemplateResult",
    "admit_offline",
    "binding_name",
    "build_binding",
    "choose_policy",
    "claim_metadata",
    "claim_of",
    "derive",
    "derive_bindings",
    "effective_pod_request",
    "implicit_priority",
    "interpret_replicas",
    "offline_permanent_id",
]

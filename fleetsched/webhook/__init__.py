"""Admission webhook for PropagationPolicy and ClusterPropagationPolicy (and binding labels).

``rules`` holds the pure validation and defaulting rules with Karmada's messages, ``schema``
the Go field tables that decide decoding and how values print, ``review`` the AdmissionReview
protocol, ``server`` the HTTPS edge. Nothing below ``review`` does I/O.
"""

from fleetsched.webhook.fielderrors import FieldError, aggregate
from fleetsched.webhook.review import ENDPOINTS, Outcome, Settings, handle
from fleetsched.webhook.rules import (
    CLUSTER_PROPAGATION_POLICY,
    PROPAGATION_POLICY,
    PolicyKind,
    mutate_policy,
    validate_policy,
    validate_propagation_spec,
)

__all__ = [
    "CLUSTER_PROPAGATION_POLICY",
    "ENDPOINTS",
    "PROPAGATION_POLICY",
    "FieldError",
    "Outcome",
    "PolicyKind",
    "Settings",
    "aggregate",
    "handle",
    "mutate_policy",
    "validate_policy",
    "validate_propagation_spec",
]

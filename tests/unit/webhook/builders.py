"""Request builders and the in-repository review checker (patch applier and comparisons)."""

from __future__ import annotations

from types import ModuleType

from fleetsched.webhook.testing import CPP_LABEL, PP_LABEL, a_policy, a_review, body

__all__ = ["CPP_LABEL", "PP_LABEL", "a_policy", "a_review", "body", "conformance_checker"]


def conformance_checker() -> ModuleType:
    """tests/support/admission.py: builds a case's AdmissionReview, applies patches, compares answers.

    It used to be the recorded suite's check.py loaded from ../shared, which a fresh clone does not have.
    """
    from tests.support import admission

    return admission

"""The shared conformance checker, loaded for its patch applier and comparisons."""

from __future__ import annotations

from typing import Any

from fleetsched.webhook.testing import CPP_LABEL, PP_LABEL, a_policy, a_review, body

__all__ = ["CPP_LABEL", "PP_LABEL", "a_policy", "a_review", "body", "conformance_checker"]


def conformance_checker() -> Any:
    """The shared ../shared/webhook-conformance/check.py module (its patch applier and comparisons)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3].parent / "shared" / "webhook-conformance" / "check.py"
    spec = importlib.util.spec_from_file_location("webhook_conformance_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

"""Hypothesis profiles for the webhook tests (moderate: the machine is shared)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

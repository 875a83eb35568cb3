"""Kept for importers of the old path: the resolved profile model lives in
``fleetsched.scheduler.framework.profile`` (below the loader, so the framework never imports it)."""

from fleetsched.scheduler.framework.profile import *  # noqa: F403
from fleetsched.scheduler.framework.profile import __all__ as __all__

"""docs/configuration.md's configuration example is a valid file meaning what the text around it says."""

from __future__ import annotations

import re
from pathlib import Path

from fleetsched.scheduler.config import ExtensionPoint, default_profile, parse_configuration

ROOT = Path(__file__).resolve().parents[4]


def readme_example() -> str:
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text[text.index("## Scheduler configuration") :]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match, "no YAML example in the Scheduler configuration section"
    return match[1]


def test_the_readme_example_loads_and_means_what_it_says() -> None:
    configuration = parse_configuration(readme_example(), entry_points=False).configuration
    default, batch = configuration.profiles
    assert default == default_profile()
    assert [e.name for e in batch.enabled(ExtensionPoint.FILTER)] == [
        "APIEnablement", "ClusterAffinity", "SpreadConstraint", "ClusterEviction"]
    assert batch.enabled(ExtensionPoint.SCORE) == default.enabled(ExtensionPoint.SCORE)
    assert configuration.workers == 32 and configuration.estimator.enabled
    assert configuration.estimator.timeout_seconds == 3.0
    assert dict(configuration.feature_gates) == {"SchedulingOvercommitProtection": True}
    assert configuration.assumption_ttl == 300.0

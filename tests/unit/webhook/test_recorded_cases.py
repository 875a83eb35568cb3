"""Every recorded case of ../shared/webhook-conformance, answered in process by review.handle.

The comparison the suite's check.py makes over HTTPS (the component and conformance tiers do that),
written again in tests/support/admission.py; here it runs without a server so a rule regression
shows up in the fast tier with the case name.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest
import yaml

from fleetsched.webhook import review
from tests.support import admission as check
from tests.support import recorded

pytestmark = pytest.mark.recorded("webhook-conformance")
CASES = sorted((recorded.suite("webhook-conformance") / "cases").glob("*.input.yaml"))


def test_the_public_cases_are_there() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize("input_path", CASES, ids=[p.name.removesuffix(".input.yaml") for p in CASES])
def test_recorded_case(input_path: Path) -> None:
    case_input = yaml.safe_load(input_path.read_text())
    expect = yaml.safe_load(input_path.with_name(input_path.name.replace(".input.", ".expect.")).read_text())
    kind = check.case_kind(case_input)
    problems: list[str] = []
    for hook in ("validating", "mutating"):
        want = expect.get(hook)
        if want is None:
            continue
        uid = str(uuid.uuid4())
        body = json.dumps(check.build_review(case_input, uid)).encode()
        outcome = review.handle(check.hook_path(kind, hook), body, "application/json")
        response = outcome.review["response"]
        problems += [f"{hook}: {p}" for p in check.check_common(response, uid, want, True)]
        if hook == "mutating" and response.get("allowed") and want.get("allowed", True):
            problems += [f"{hook}: {p}" for p in check.check_mutation(response, case_input, want)]
            if response.get("patch"):
                ops = json.loads(base64.b64decode(response["patch"]))
                assert all(op["op"] in ("add", "remove", "replace") for op in ops)
    assert not problems, "\n".join(problems)

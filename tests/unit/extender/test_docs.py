"""docs/extending.md shows the request and answers the code really sends and reads."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from fleetsched.extender.client import _body
from fleetsched.extender.protocol import decode_filter_result, decode_priorities
from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict

DOC = Path(__file__).resolve().parents[3] / "docs" / "extending.md"


def _json_blocks() -> list[Any]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)]


def test_the_request_example_is_what_the_client_sends() -> None:
    request = _json_blocks()[0]
    binding = binding_from_dict(request["binding"])
    clusters = [cluster_from_dict(c) for c in request["clusters"]]
    assert orjson.loads(_body(binding, clusters)[0]) == request


def test_the_answer_examples_decode() -> None:
    request, filter_answer, priorities = _json_blocks()[:3]
    names = request["clusterNames"]
    result = decode_filter_result(json.dumps(filter_answer).encode(), names, extender="e")
    assert result.kept == ("member1",)
    assert result.failed == {"member2": "cost 9 is over the tenant's budget of 5"}
    assert decode_priorities(json.dumps(priorities).encode(), names, extender="e") == {"member1": 7}

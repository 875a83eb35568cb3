"""The shared reader's limits added for the configuration file (issue 23): nesting depth counted in
the expanded tree, and files read only when regular and within a size limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fleetsched.api.yamlload import Budget, LoadError, iter_documents, read_regular_file


def refusal(text: str, budget: Budget) -> str:
    with pytest.raises(LoadError) as caught:
        list(iter_documents(text, "in.yaml", budget=budget))
    return str(caught.value)


def test_depth_is_refused_past_the_budget_and_allowed_at_it() -> None:
    budget = Budget(max_depth=4)
    assert list(iter_documents("a: {b: [[1]]}\n", "in.yaml", budget=budget)) == [(1, {"a": {"b": [[1]]}})]
    assert refusal("a: {b: [[[1]]]}\n", budget) == (
        "in.yaml: document 1 (line 1, column 10): a.b[0][0]: Forbidden: nested more than 4 levels deep"
    )


def test_depth_counts_what_aliases_expand_to() -> None:
    # Each level is shallow where it is written; the alias puts one inside the other.
    text = "x: &x [[1]]\ny: [[*x]]\n"
    assert refusal(text, Budget(max_depth=4)).endswith("Forbidden: nested more than 4 levels deep")
    assert list(iter_documents(text, "in.yaml", budget=Budget(max_depth=5)))


def test_without_a_depth_budget_nothing_changes() -> None:
    deep = "[" * 500 + "]" * 500
    assert list(iter_documents(f"a: {deep}\n", "in.yaml"))


def test_a_regular_file_within_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"12345")
    assert read_regular_file(str(path), limit=5) == b"12345"
    with pytest.raises(LoadError) as caught:
        read_regular_file(str(path), limit=4, what="bundle")
    assert str(caught.value) == f"{path}: the bundle holds 5 bytes, more than the 4 allowed"


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo", "directory"])
def test_what_is_not_a_regular_file_is_refused_before_reading(special: str, tmp_path: Path) -> None:
    path = special
    if special == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)  # no writer: a blocking open would never return
    elif special == "directory":
        path = str(tmp_path)
    with pytest.raises(LoadError) as caught:
        read_regular_file(path, limit=1 << 20)
    assert str(caught.value) == f"{path}: cannot read the file: not a regular file"


def test_a_missing_file_names_the_reason(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match=r"absent: cannot read the file: No such file or directory$"):
        read_regular_file(str(tmp_path / "absent"), limit=10)

"""The code's prose stands alone: a docstring or comment may cite a page of docs/ (which ships with
the repository), never a specification that lives outside it (``scheduler.md §5.3``,
``shared/spec/...``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITED_PAGE = re.compile(r"([\w./-]+\.md)\b")


def outside_citations(text: str) -> list[str]:
    """The cited ``.md`` pages that are not docs/ pages or READMEs of the repository."""
    found = []
    for match in CITED_PAGE.finditer(text):
        page = match.group(1)
        name = page.rsplit("/", 1)[-1]
        if "shared/" in page or not ((ROOT / "docs" / name).is_file() or name == "README.md"):
            found.append(page)
    return found


def test_the_check_tells_a_page_of_docs_from_an_outside_specification() -> None:
    assert outside_citations("see docs/design.md and plugin-api.md") == []
    assert outside_citations("(scheduler.md §5.3) and shared/spec/estimator.md") == [
        "scheduler.md", "shared/spec/estimator.md"
    ]


def test_no_module_cites_a_specification_outside_the_repository() -> None:
    cited = {
        f"{path.relative_to(ROOT)}:{number}: {page}"
        for path in sorted((ROOT / "fleetsched").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for page in outside_citations(line)
    }
    assert sorted(cited) == []

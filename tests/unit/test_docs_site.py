"""The manual builds as a site with strict checking (``mkdocs build --strict``: a link to a page or
heading that is not there, or a page left out of the navigation, fails the build), and the README
stays a front door: at most 250 lines, no benchmark figures, a link to the manual's contents."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(root / "mkdocs.yml"),
         "--site-dir", str(site)],
        capture_output=True, text=True, cwd=root,
    )


def test_the_docs_build_as_a_site_without_a_warning(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    built = {p.parent.name for p in (tmp_path / "site").glob("*/index.html")} | {"index"}
    assert pages <= built, f"pages not built: {sorted(pages - built)}"
    # anchors are GitHub's, so a link to a heading works on the site and on a forge alike
    simulate = (tmp_path / "site" / "simulate" / "index.html").read_text()
    assert 'id="why-did-it-go-there---explain"' in simulate


def copy_of_the_docs(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", root / "docs")
    (root / "hack").mkdir()
    shutil.copy(ROOT / "hack" / "mkdocs_hooks.py", root / "hack")
    shutil.copy(ROOT / "mkdocs.yml", root)
    return root


def test_a_broken_link_an_unknown_anchor_or_a_page_outside_the_navigation_fails_the_build(
    tmp_path: Path,
) -> None:
    root = copy_of_the_docs(tmp_path)
    gaps = root / "docs" / "known-gaps.md"
    gaps.write_text(gaps.read_text() + "\n[a](nowhere.md) [b](simulate.md#no-such-heading)\n")
    (root / "docs" / "orphan.md").write_text("# Orphan\n")
    done = build(root, tmp_path / "site")
    assert done.returncode != 0
    assert "'nowhere.md'" in done.stderr
    assert "'#no-such-heading'" in done.stderr
    assert "orphan.md" in done.stderr


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "](docs/index.md)" in text
    for command in ("make simulate", "make test", "make dev-up"):
        assert command in text
    # figures belong in docs/benchmarks.md: no load averages, rates or commit hashes here
    assert not re.search(r"load average|bindings/s|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", text)

"""mkdocs hook: heading anchors as GitHub makes them, so a link such as
``simulate.md#why-did-it-go-there---explain`` works both on the site and when the Markdown is read
on a forge (tests/unit/test_docs_standalone.py checks links with the same rule)."""

from __future__ import annotations

import re
from typing import Any


def github_slug(value: str, separator: str = "-") -> str:
    """Lower case, punctuation dropped, each space a hyphen (runs are kept, as GitHub keeps them)."""
    text = value.strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", separator)


def on_config(config: Any) -> Any:
    config.mdx_configs.setdefault("toc", {})["slugify"] = github_slug
    if "toc" not in config.markdown_extensions:
        config.markdown_extensions.append("toc")
    return config

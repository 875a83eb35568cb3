#!/usr/bin/env python3
"""Write crds/*.yaml and manifests/crds/*.yaml from the API models. ``--check`` only reports drift.

manifests/crds/ holds the same files because kustomize loads no plain file outside its root, while
``kubectl apply -f crds/`` needs a directory without a kustomization.yaml in it.

Usage: .venv/bin/python hack/gen_crds.py [--check] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fleetsched.api.crds import render_crds

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if crds/ differs from the models")
    parser.add_argument(
        "--out", type=Path, action="append",
        help="output directory (default: crds/ and manifests/crds/; may be repeated)",
    )
    args = parser.parse_args()
    rendered = render_crds()
    outs: list[Path] = args.out or [ROOT / "crds", ROOT / "manifests" / "crds"]
    return max(_sync(out, rendered, check=args.check) for out in outs)


def _sync(out: Path, rendered: dict[str, str], *, check: bool) -> int:
    on_disk = {p.name for p in out.glob("*.yaml")} - {"kustomization.yaml"} if out.is_dir() else set()
    stale = sorted(on_disk - rendered.keys())
    drifted = [
        name
        for name, text in rendered.items()
        if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text
    ]
    if check:
        for name in drifted:
            print(f"{out / name} differs from the models; run hack/gen_crds.py", file=sys.stderr)
        for name in stale:
            print(f"{out / name} is not generated from any model", file=sys.stderr)
        return 1 if drifted or stale else 0
    out.mkdir(parents=True, exist_ok=True)
    for name in drifted:
        (out / name).write_text(rendered[name], encoding="utf-8")
        print(f"wrote {out / name}")
    for name in stale:
        print(f"note: {out / name} is not generated from any model (left alone)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

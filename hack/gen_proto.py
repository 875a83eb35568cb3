#!/usr/bin/env python3
"""Regenerate the estimator's Python protobuf/gRPC code from the .proto files with grpcio-tools.

    .venv/bin/python hack/gen_proto.py           # rewrite fleetsched/estimator/pb/
    .venv/bin/python hack/gen_proto.py --check   # exit 1 when the committed code is stale

The .proto files live under fleetsched/estimator/proto/ at the import paths Karmada uses
(``pkg/estimator/pb/estimator.proto``), so the descriptors carry Karmada's file names. protoc writes
Python modules into matching sub-packages; we flatten them into one package and point their imports at
``fleetsched.estimator.pb``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "fleetsched" / "estimator" / "proto"
OUT = ROOT / "fleetsched" / "estimator" / "pb"
PACKAGE = "fleetsched.estimator.pb"

# proto path -> flat module name stem
PROTOS = {
    "pkg/estimator/pb/estimator.proto": "estimator",
    "pkg/estimator/pb/compat.proto": "compat",
    "pkg/estimator/service/service.proto": "service",
    "k8s/types.proto": "k8s_types",
}

INIT = '''"""Generated protobuf and gRPC code for the estimator wire protocol.

Do not edit: run hack/gen_proto.py.
"""
'''


def generate(out_dir: Path) -> None:
    from grpc_tools import protoc  # imported here so --help works without grpcio-tools

    include = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as raw:
        args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={raw}", f"--pyi_out={raw}",
                f"--grpc_python_out={raw}", *PROTOS]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        out_dir.mkdir(parents=True, exist_ok=True)
        for proto, stem in PROTOS.items():
            base = Path(raw) / proto[: -len(".proto")]
            for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"):
                src = base.with_name(base.name + suffix)
                if not src.exists():
                    continue
                text = src.read_text()
                if suffix == "_pb2_grpc.py" and "class " not in text:
                    continue  # a message-only file gets an empty grpc module; skip it
                for other_proto, other_stem in PROTOS.items():
                    module = other_proto[: -len(".proto")].replace("/", ".")
                    parent, _, leaf = module.rpartition(".")
                    text = re.sub(rf"^from {re.escape(parent)} import {leaf}_pb2 as",
                                  f"from {PACKAGE} import {other_stem}_pb2 as", text, flags=re.M)
                    text = re.sub(rf"^import {re.escape(module)}_pb2 as",
                                  f"from {PACKAGE} import {other_stem}_pb2 as", text, flags=re.M)
                (out_dir / f"{stem}{suffix}").write_text(text)
        (out_dir / "__init__.py").write_text(INIT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="only compare; exit 1 if the committed code is stale")
    args = parser.parse_args(argv)
    if not args.check:
        if OUT.exists():
            shutil.rmtree(OUT)
        generate(OUT)
        print(f"wrote {OUT.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "pb"
        generate(fresh)
        want = {p.name: p.read_text() for p in fresh.iterdir() if p.is_file()}
        have = {p.name: p.read_text() for p in OUT.iterdir() if p.is_file() and p.suffix in (".py", ".pyi")}
        stale = sorted(name for name in want.keys() | have.keys() if want.get(name) != have.get(name))
    if stale:
        print("stale generated code, run hack/gen_proto.py: " + ", ".join(stale), file=sys.stderr)
        return 1
    print("generated code is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())

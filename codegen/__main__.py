"""``python -m codegen --proto fixtures/a2a.proto --out generated``: proto -> descriptors -> IR -> files."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from codegen import GENERATOR_VERSION, PROTO_SHA256, build, descriptors, render


def main(argv: list[str] | None = None) -> int:
    """Generate ``generated/`` from the pinned proto; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument("--proto", type=Path, default=Path("fixtures") / "a2a.proto")
    parser.add_argument("--out", type=Path, default=Path("generated"))
    args = parser.parse_args(argv)
    digest = hashlib.sha256(args.proto.read_bytes()).hexdigest()
    if digest != PROTO_SHA256:
        print(
            f"codegen: {args.proto} has sha256 {digest}, expected {PROTO_SHA256}", file=sys.stderr
        )
        return 1
    module = build.build(descriptors.compile_proto(args.proto), digest, GENERATOR_VERSION)
    render.write(render.render(module), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Pins an image of a kustomize overlay to a pushed digest: rewrites the ``newName`` and
``digest`` of one entry of the overlay's ``images:`` list, leaving every other line (comments
included) as it is. build-images.sh calls it after each push:

    python deploy/docker/pin_images.py deploy/k8s/overlays/gpu/kustomization.yaml \\
        drkernel registry.example.com/drkernel@sha256:<64 hex digits>
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REFERENCE = re.compile(r"(?P<name>[^@\s]+)@(?P<digest>sha256:[0-9a-f]{64})")
PLACEHOLDER = "sha256:" + "0" * 64


class PinError(ValueError):
    """The overlay has no such image entry, or the reference is not name@sha256:digest."""


def pin(text: str, image: str, reference: str) -> str:
    """``text`` (a kustomization.yaml) with the ``images:`` entry ``name: image`` set to
    ``reference`` (registry/name@sha256:...)."""
    match = REFERENCE.fullmatch(reference)
    if match is None:
        raise PinError(f"{reference!r} is not an image reference pinned by digest (name@sha256:<64 hex digits>)")
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if re.fullmatch(r"images:\s*", line))
    except StopIteration:
        raise PinError("the kustomization has no images: list") from None
    entry = next(
        (i for i in range(start + 1, len(lines)) if re.fullmatch(rf"\s*- name: {re.escape(image)}\s*", lines[i])),
        None,
    )
    if entry is None:
        raise PinError(f"the images: list has no entry for {image}")
    indent = " " * (lines[entry].index("-") + 2)
    end = entry + 1
    while end < len(lines) and lines[end].startswith(indent) and not lines[end].lstrip().startswith("- "):
        end += 1
    fields = [line for line in lines[entry + 1 : end] if not re.match(r"\s*(newName|newTag|digest):", line)]
    pinned = [f"{indent}newName: {match['name']}\n", f"{indent}digest: {match['digest']}\n"]
    return "".join(lines[: entry + 1] + fields + pinned + lines[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kustomization", type=Path, help="The overlay's kustomization.yaml.")
    parser.add_argument("image", help="The image name the manifests use (drkernel, drkernel-policy).")
    parser.add_argument("reference", help="What to pull instead: registry/name@sha256:<digest>.")
    args = parser.parse_args(argv)
    try:
        args.kustomization.write_text(pin(args.kustomization.read_text(), args.image, args.reference))
    except (OSError, PinError) as error:
        print(f"pin_images: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`doctor` and `image build`: what the sandboxes need, and the images they run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillbench.agents import AGENTS, DEFAULT_AGENT
from skillbench.cli.common import EXIT_FAIL, EXIT_OK, command, err, out, settings_for

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def _variant_line(what: str, image: str, flag: str) -> str:
    """An optional image variant (a note: built on first use), and how to build it now."""
    from skillbench.sandbox.podman.image import image_exists

    if image_exists(image):
        return f"{'note':8}{what}: {image} built"
    return (
        f"{'note':8}{what}: {image} not built yet (built on first use); "
        f"`skillbench image build {flag}` builds it now"
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    from skillbench.agents import agents, make_agent
    from skillbench.sandbox.capacity import doctor_line, mem_available
    from skillbench.sandbox.podman.doctor import diagnose
    from skillbench.sandbox.podman.image import IMAGE
    from skillbench.sandbox.podman.variants import variant_name

    findings = diagnose()
    for f in findings:
        mark = "ok " if f.ok else "MISSING"
        out(f"{mark:8}{f.name}: {f.detail}" + ("" if f.ok else f"\n        fix: {f.fix}"))
    for name in agents():  # agent image variants are optional: built on first use
        variant = make_agent(name).image_name(IMAGE)
        if variant != IMAGE:
            out(_variant_line(f"agent {name}", variant, f"--agent {name}"))
    out(
        _variant_line(
            "node variant (cases with `requires: [node]`)", variant_name("node"), "--node"
        )
    )
    memory = doctor_line(mem_available())
    if memory:
        out(f"{'note':8}{memory}")
    bad = sum(not f.ok for f in findings)
    out("all set" if not bad else f"{bad} problem{'s' * (bad != 1)}; run the fixes above")
    return EXIT_OK if not bad else EXIT_FAIL


def cmd_image_build(args: argparse.Namespace) -> int:
    from skillbench.agents import AgentError, make_agent
    from skillbench.sandbox.base import ImageBuildError, SandboxError
    from skillbench.sandbox.podman.image import build_image
    from skillbench.sandbox.podman.imageload import into_service
    from skillbench.sandbox.podman.variants import build_variant, variant_name

    loaded = settings_for(Path.cwd(), args, ())
    try:
        base = build_image(
            force=args.force,
            log=out,
            from_registry=args.from_registry or loaded.settings.image_from_registry,
        )
        built = [base]
        if args.node:  # the variant, and each --agent's image of it too
            built.append(build_variant(variant_name("node"), out))
            out(f"image {built[-1]} ready")
        for name in args.agent or ():
            agent = make_agent(name, **loaded.settings.agents.get(name, {}))
            for each in built[: 1 + bool(args.node)]:
                built.append(agent.image(each, out))
                out(f"image {built[-1]} ready")
        into_service(built, out)  # a service with storage of its own gets them now
    except (ImageBuildError, AgentError, SandboxError) as exc:
        err(f"skillbench: image build failed: {exc}")
        return EXIT_FAIL
    return EXIT_OK


def register_doctor(sub: Subparsers) -> None:
    command(
        sub,
        "doctor",
        cmd_doctor,
        "check podman, the runtime and the sandbox image",
        "Check everything the sandboxes need (podman, runc, mmdebstrap, the containers.conf "
        "drop-in, the sandbox image) and print the exact command that fixes each gap. "
        "Exit 0 when all is set, 1 otherwise.",
    )


def register_image(sub: Subparsers) -> None:
    image = sub.add_parser(
        "image", help="manage the sandbox image", description="Manage the sandbox image."
    )
    image_sub = image.add_subparsers(dest="image_command", required=True, metavar="ACTION")
    p = image_sub.add_parser(
        "build",
        help="build the sandbox image",
        description="Build the sandbox image locally (mmdebstrap from the host's Debian "
        "sources, imported into podman; or the bundled Containerfile where mmdebstrap is "
        "missing). Skips the build when the image exists, unless --force.",
    )
    p.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    p.add_argument(
        "--from-registry",
        metavar="REF",
        help="build with `podman build` FROM this Debian image, named with its registry and "
        "pinned by digest (REF@sha256:…), instead of mmdebstrap; default: "
        "image_from_registry in skillbench.toml",
    )
    p.add_argument(
        "--agent",
        action="append",
        help=f"also build this agent's image ({', '.join(a for a in AGENTS if a != DEFAULT_AGENT)}"
        ", or a plugin agent's); repeatable",
    )
    p.add_argument(
        "--node",
        action="store_true",
        help="also build the node variant (the sandbox image plus Debian's nodejs, for cases "
        "with `requires: [node]`, e.g. imported skill-optimizer graders); the first eval that "
        "needs it builds it otherwise",
    )
    p.set_defaults(handler=cmd_image_build)

"""`cluster prepare` and `cluster join`: the machines sessions run on (docs/scale-out.md)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from typing import TYPE_CHECKING

from skillbench.cli.common import EXIT_OK, UsageError, out

if TYPE_CHECKING:
    from skillbench.cli.common import Subparsers


def cmd_cluster_prepare(args: argparse.Namespace) -> int:
    from skillbench.agents import make_agent
    from skillbench.cluster import ClusterError
    from skillbench.cluster.connect import connect
    from skillbench.cluster.images import default_images, prepare

    # the flag only: run in a downloaded pack (its skills anywhere: skills/, .claude/skills/,
    # plugins/*/skills/), a project file's address would be the pack's Ray head
    address = args.cluster
    if not address:
        raise UsageError("cluster prepare needs --cluster ADDRESS (the head eval uses)")
    images = default_images(make_agent(a) for a in args.agent or [])
    try:
        connect(address)
        shipped = prepare(images, out)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None
    out(f"cluster: every slot node holds {', '.join(images)} ({len(shipped)} node(s) loaded)")
    return EXIT_OK


def cmd_cluster_join(args: argparse.Namespace) -> int:
    ray = shutil.which("ray")
    if ray is None:
        raise UsageError("the `ray` command is missing: pip install 'skillbench[ray]'")
    if args.slots < 1:
        raise UsageError("--slots is how many sessions this node runs at once: 1 or more")
    argv = [ray, "start", f"--address={args.address}", "--disable-usage-stats"]
    argv.append(f"--resources={json.dumps({'skillbench': args.slots})}")
    return subprocess.run(argv).returncode


def register_cluster(sub: Subparsers) -> None:
    cluster = sub.add_parser(
        "cluster",
        help="run sessions on more than one machine (Ray)",
        description="Run eval sessions on a Ray cluster: docs/scale-out.md.",
    )
    actions = cluster.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    p = actions.add_parser(
        "prepare",
        help="put the sandbox images on every node",
        description="Make every node with skillbench slots hold the sandbox image, its "
        "variants built here (`image build --node`), and each --agent's, checked by image ID; "
        "missing ones are shipped from this machine.",
    )
    p.add_argument("--cluster", metavar="ADDRESS", help="the cluster's head (required)")
    p.add_argument("--agent", action="append", help="also this agent's image; repeatable")
    p.set_defaults(handler=cmd_cluster_prepare)
    p = actions.add_parser(
        "join",
        help="make this machine a worker node",
        description="`ray start --address ADDRESS` with N skillbench slots: this machine then "
        "runs up to N sessions at once in its own podman.",
    )
    p.add_argument("address", help="the head node's address (IP:port)")
    p.add_argument("--slots", type=int, default=2, help="sessions at once on this node")
    p.set_defaults(handler=cmd_cluster_join)

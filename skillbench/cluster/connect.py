"""Joining a Ray cluster as its driver. Ray is an optional extra: nothing imports it unless a
cluster is configured (`[cluster] address`, `--cluster`)."""

from __future__ import annotations

import importlib
import logging
import os
import socket
from types import ModuleType
from typing import Any

from skillbench.errors import SkillbenchError

SLOT = "skillbench"  # the custom resource a node offers, one per session it may run at once


class ClusterError(SkillbenchError):
    """The cluster cannot be used as asked; the message says what to do."""


def ray_module() -> ModuleType:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ClusterError(
            "a cluster is configured, but Ray is not installed: pip install 'skillbench[ray]'"
        ) from None


_joined: list[str] = []  # the address this process is the driver of


def connect(address: str) -> ModuleType:
    """ray.init(address=…) once per process and address; ClusterError when nothing answers."""
    ray = ray_module()
    if ray.is_initialized():
        if _joined == [address]:
            return ray
        ray.shutdown()
    _joined.clear()
    _reachable(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(
            f"--cluster {address}: no Ray cluster answers there ({str(exc).splitlines()[0]}); "
            "start one with `ray start --head`, or check the address"
        ) from None
    _joined.append(address)
    return ray


def _reachable(address: str) -> None:
    """Ray waits minutes for a GCS that is not there; a closed port is refused at once."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # `auto`, `local`: Ray finds the cluster itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ClusterError(
            f"--cluster {address}: no Ray cluster answers there ({exc.strerror or exc}); "
            "start one with `ray start --head`, or check the address"
        ) from None


def slot_nodes() -> list[dict[str, Any]]:
    """The live nodes that offer skillbench slots."""
    ray = ray_module()
    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(SLOT)]


def driver_address() -> str:
    """The address workers reach this process at, as Ray sees it."""
    return str(ray_module().util.get_node_ip_address())

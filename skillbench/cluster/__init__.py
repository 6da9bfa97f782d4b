"""More than one machine (docs/scale-out.md): arm sessions as Ray tasks on worker nodes with podman,
the plan, journal, judge and trigger calls on the driver, provider keys never leaving it.

Only this package imports Ray, and nothing imports this package unless a cluster is configured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from skillbench.cluster.connect import ClusterError, connect, driver_address

if TYPE_CHECKING:
    from skillbench.cluster.placement import Cluster

__all__ = ["ClusterError", "open_cluster"]


def open_cluster(
    address: str, images: Iterable[str], log: Callable[[str], None], relay: dict[str, Any]
) -> Cluster:
    """Join the cluster at `address`, make sure every slot node holds `images`, and start
    the driver's model relay where the workers can reach it (`relay`: its models, prices
    and budget)."""
    connect(address)
    from skillbench.cluster.images import prepare
    from skillbench.cluster.placement import Cluster
    from skillbench.cluster.relay import DriverRelay

    prepare(images, log)
    return Cluster(address, DriverRelay(host=driver_address(), **relay).start())

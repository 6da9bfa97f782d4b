"""Awaiting cleanup that a cancellation must not cut short."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def to_the_end(cleanup: Coroutine[Any, Any, T]) -> T:
    """Run `cleanup` to its end even when the awaiting task is cancelled meanwhile (a first
    Ctrl-C landing while a run closes): the cancellation is raised once it is done. A cut
    close skips what comes after the await it landed in — the sweep of the run's volumes,
    or, with our own podman service, stops the service under a removal still going — and
    leaves them behind (LEAK1, docs/trust.md "Interrupts"). `cleanup` must be bounded;
    a second Ctrl-C exits at once without it."""
    task = asyncio.ensure_future(cleanup)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True  # (and again, if cancelled again: the cleanup goes on)
    if cancelled:
        raise asyncio.CancelledError
    return task.result()

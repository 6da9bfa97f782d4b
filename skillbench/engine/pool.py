"""What the cells of a set run share (docs/results.md, "Set runs"): one pool of `--parallel`
sessions across every cell, one `--max-cost` ledger, and a lock per reuse key, so a baseline
session two cells would both run (the same case, agent and model) runs once and the other
cell reuses it through the session cache (engine/reuse.py)."""

from __future__ import annotations

import asyncio

from skillbench.models.ledger import RunLedger


class Pool:
    def __init__(self, parallel: int, ceiling: float | None):
        self.gate = asyncio.Semaphore(parallel)
        self.ledger = RunLedger(ceiling)
        self._keys: dict[str, asyncio.Lock] = {}

    def once(self, key: str) -> asyncio.Lock:
        """The lock a session with this reuse key runs under: the second cell to ask waits
        for the first, then finds its session in the cache."""
        return self._keys.setdefault(key, asyncio.Lock())

"""One spend ledger for a whole run: every model call reserves its worst-case price here
before it is sent and settles at its billed cost after, so `--max-cost` is a ceiling across
parallel sessions, not a per-session share of what was left when each one started.

The broker answers on threads and the engine's judge and trigger calls run on the event
loop, so the ledger is guarded by a plain lock. What a run may spend in the worst case is
the ceiling plus nothing: a call is refused when the spend so far plus every reservation
held by calls in flight plus its own worst case would pass the ceiling. A call whose price is
unknown cannot be held; the engine refuses --max-cost without a price for its models, so
that only happens with no ceiling.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping

import msgspec

from skillbench.models.base import Completion, Message, Model, ModelError, ToolSpec
from skillbench.models.pricing import TOOL_PROMPT_TOKENS, Price, cost_usd, worst_case_usd

KINDS = ("agent", "judge", "grader", "triggers", "generation", "tuning")


class Spend(msgspec.Struct, frozen=True):
    """What the ledger holds at one moment, for the report and the journal."""

    ceiling: float | None
    spent: float
    reserved: float
    refused: int  # calls refused because the ceiling could not cover them
    by_kind: dict[str, float]


class RunLedger:
    """The run's budget in USD, shared by every session and every call kind."""

    def __init__(
        self, ceiling: float | None, spent: float = 0.0, by_kind: dict[str, float] | None = None
    ):
        self.ceiling = ceiling
        self._spent = spent  # a resumed run starts from what its journal says was spent
        self._reserved = 0.0
        self._refused = 0
        # what `spent` was spent on (default: all of it earlier, by a run now resumed)
        kinds = {"earlier": spent} if by_kind is None else by_kind
        self._by_kind = {k: v for k, v in kinds.items() if v > 0}
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # a call settled: room may be free

    def reserve(self, amount: float | None, wait: float = 0.0) -> bool:
        """Hold `amount` for one call; False (and counted as refused) when the ceiling cannot
        cover it on top of what is spent and held. An unknown amount (no price for the
        model) passes only where there is no ceiling: no ceiling can count it. With
        `wait` (seconds, for a caller on a thread of its own), a call the spend alone leaves
        room for waits that long for the calls in flight to settle: a reservation is held
        only while its call runs, and the agent, which holds its session's key, could
        otherwise hold the run's budget with calls the provider refuses unbilled, timed for
        its CLI's next call."""
        if amount is not None and not (math.isfinite(amount) and amount >= 0):
            amount = None  # no worst case a ceiling can count (prices are checked where read)
        if amount is None:
            with self._lock:
                if self.ceiling is None:
                    return True
                self._refused += 1
                return False
        deadline = time.monotonic() + wait
        with self._lock:
            while self.ceiling is not None and self._spent + self._reserved + amount > self.ceiling:
                left = deadline - time.monotonic()
                if self._spent + amount > self.ceiling or left <= 0:
                    self._refused += 1
                    return False
                self._settled.wait(left)
            self._reserved += amount
            return True

    def settle(self, reserved: float | None, actual: float | None, kind: str = "agent") -> None:
        """The call is over: release its reservation, count what it was billed."""
        with self._lock:
            if reserved is not None and math.isfinite(reserved):
                self._reserved = max(0.0, self._reserved - reserved)
            if actual and math.isfinite(actual) and actual > 0:
                self._spent += actual
                self._by_kind[kind] = self._by_kind.get(kind, 0.0) + actual
            self._settled.notify_all()

    def charge(self, actual: float | None, kind: str) -> None:
        """Count a call made without a reservation (its worst case could not be bounded)."""
        self.settle(None, actual, kind)

    def exhausted(self) -> bool:
        """No further call can be started: the ceiling is spent or held."""
        with self._lock:
            return self.ceiling is not None and self._spent + self._reserved >= self.ceiling

    def left(self) -> float | None:
        """What is neither spent nor held, for a caller that sizes its own calls."""
        with self._lock:
            if self.ceiling is None:
                return None
            return max(0.0, self.ceiling - self._spent - self._reserved)

    def snapshot(self) -> Spend:
        with self._lock:
            return Spend(
                self.ceiling, self._spent, self._reserved, self._refused, dict(self._by_kind)
            )


class BudgetRefused(ModelError):
    """The run's ledger cannot cover a call's worst case: the call was not sent. A model
    error, so a judge or grader that records a failed call records this one the same way."""

    def __init__(self, message: str):
        super().__init__("infrastructure", message)


async def metered(
    ledger: RunLedger | None,
    ref: str,
    prices: Mapping[str, Price] | None,
    request_chars: int,
    max_tokens: int,
    kind: str,
    call: Callable[[], Awaitable[Completion]],
    has_tools: bool,
) -> Completion:
    """Send one model call made on the host (builtin turns, judge, grader, triggers) through
    the run's ledger: reserve its worst case (a token is at least one character of the
    request, and a request with tools carries the provider's tool prompt too), send it,
    settle at its billed usage. A failed call settles at nothing: its reply, and so its
    usage, never came."""
    if ledger is None:
        return await call()
    tools = TOOL_PROMPT_TOKENS if has_tools else 0
    worst = worst_case_usd(ref, request_chars + tools, max_tokens, prices)
    if not ledger.reserve(worst):
        raise BudgetRefused(
            f"the run's --max-cost ${ledger.ceiling:.2f} cannot cover another {kind} call"
        )
    completion: Completion | None = None
    try:
        completion = await call()
        return completion
    finally:
        billed = None if completion is None else cost_usd(ref, completion.usage, prices)
        ledger.settle(worst, billed, kind)


class MeteredModel:
    """A model whose every call goes through the run's ledger as `kind`: the way the judge,
    a grader or a trigger run spends against --max-cost without knowing about the ledger."""

    def __init__(
        self, model: Model, ledger: RunLedger | None, prices: Mapping[str, Price], kind: str
    ):
        self.ref = model.ref
        self._model, self._ledger, self._prices, self._kind = model, ledger, prices, kind

    async def complete(
        self, *, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int
    ) -> Completion:
        size = len(system) + len(msgspec.json.encode(messages)) + len(msgspec.json.encode(tools))
        return await metered(
            self._ledger,
            self.ref,
            self._prices,
            size,
            max_tokens,
            self._kind,
            lambda: self._model.complete(
                system=system, messages=messages, tools=tools, max_tokens=max_tokens
            ),
            bool(tools),
        )

    async def aclose(self) -> None:
        await self._model.aclose()

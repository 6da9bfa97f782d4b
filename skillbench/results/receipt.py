"""The receipt as a type (docs/results.md, docs/trust.md): a run's `Summary` results plus their
provenance, the bundle digest and the signature. skillbench/team/receipts.py writes and files
it; the gate reads it through `parse`.

Every field is typed, so a receipt whose values are not what skillbench writes is refused in
one line where it is read. The file on disk is `msgspec.to_builtins(Receipt)` in field order,
exactly as before these types (a receipt signed then still verifies: signatures are over the
canonical bytes of the JSON, never over these structs).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from skillbench.models import Endpoint
from skillbench.results.activation import Activation, Ambient
from skillbench.results.records import Library, Unit
from skillbench.results.sequential import Rule, Stop
from skillbench.results.stats import Interval, Stats
from skillbench.results.summary import (
    Comparison,
    Driver,
    Efficiency,
    NoiseFloor,
    Reuse,
    RowSummary,
    Skipped,
    Summary,
)
from skillbench.results.verdict import MIN_NET_LIFT, Repetitions, Verdict

# 2: expected/scored rows say what was measured; complete, agent, driver.
# 3: bundle, signature, and what re-deriving needs (opponents, units) and endpoints.
# 4: verdicts in independent units with INCONCLUSIVE (docs/statistics.md), and the floor they used.
SCHEMA_VERSION = 4


class Provenance(msgspec.Struct, kw_only=True):
    engine_version: str
    models: dict[str, str]  # agent, judge
    agent: str = ""  # what ran the arms; with models.agent, the cell the gate counts it in
    k: Repetitions
    seed: int
    arms: dict[str, list[str]]  # arm -> the skills it staged, as name@digest
    created_at: str
    opponents: list[str] = []  # in plan order: the verdict is against the first
    units: list[Unit] = []  # what the rows are of
    endpoints: dict[str, Endpoint] = {}  # agent, judge: where each model was reached
    min_net_lift: float = MIN_NET_LIFT  # the practical floor the verdict used (docs/statistics.md)
    sequential: Rule | None = None  # the stopping rule of a sequential run


class Claimed(msgspec.Struct, kw_only=True):
    """An opponent's `Stats` as a receipt claims them: the same fields in the same order, each
    one typed but left out when the file leaves it out (UNSET), so the gate compares what the
    file says with what its rows give, and an absent value never passes for a default."""

    decided: int | UnsetType = UNSET
    needed: int | UnsetType | None = UNSET
    underpowered: bool | UnsetType = UNSET
    sign_p: float | UnsetType = UNSET
    net_lift_ci: Interval | UnsetType | None = UNSET
    pass_rate: dict[str, Interval | None] | UnsetType = UNSET
    pass_at_k: dict[str, float] | UnsetType | None = UNSET
    pass_pow_k: dict[str, float] | UnsetType | None = UNSET

    @classmethod
    def of(cls, stats: Stats) -> Claimed:
        return cls(**msgspec.structs.asdict(stats))


class Receipt(msgspec.Struct, kw_only=True):
    """What a run established about one version of a skill (receipt schema 4)."""

    schema_version: int = SCHEMA_VERSION
    skill: str
    digest: str
    run_id: str
    verdict: Verdict
    why: str
    expected_rows: int
    scored_rows: int
    # Every row that could be measured was (cases skipped for a tool the image lacks aside),
    # and no --max-cost stop.
    complete: bool = False
    stopped: str | None = None
    stop: Stop | None = None  # a sequential run: where its stopping rule stopped
    # cases with no row by design (a tool the image lacks, a failed setup): to a sequential
    # rule's re-derivation, any other case without a row is one not run yet
    skipped: list[Skipped] = []
    agent: str = ""  # what ran the arms: builtin, claude-code, codex
    agent_version: str = ""
    models: dict[str, str] = {}  # agent, judge
    driver: Driver
    comparisons: dict[str, Comparison]
    stats: dict[str, Claimed] = {}  # per opponent: decided, needed, underpowered, intervals
    rows: list[RowSummary]
    triggers: dict[str, Any] | None  # TriggerReport.summary(), as summary.json has it
    efficiency: dict[str, Efficiency]
    spend_usd: float = 0.0  # every call of the run: sessions, judge, triggers, generation
    reused: Reuse | None = None  # baseline/incumbent sessions taken from earlier runs
    noise_floor: NoiseFloor | None = None  # eval --aa: flips between two baseline arms
    activation: Activation | None = None  # did the skill load in its candidate sessions
    ambient: Ambient | None = None  # the skills the agent CLI brought on its own, per arm
    library: Library | None = None  # eval --with-library: the siblings every arm staged
    provenance: Provenance
    bundle: str = ""  # sha256: of the run folder's evidence (receipts.bundle_digest)
    signature: str | None = None  # ssh-keygen -Y sign over receipts.canonical()

    @classmethod
    def of(cls, summary: Summary, *, provenance: Provenance, bundle: str) -> Receipt:
        """A finished run's receipt: every result field as its summary has it (the same
        structs, not copies through dicts), the skill's digest (the summary's version)."""
        shared = {f: getattr(summary, f) for f in _FROM_SUMMARY}
        shared["stats"] = {opp: Claimed.of(s) for opp, s in summary.stats.items()}
        return cls(digest=summary.version, provenance=provenance, bundle=bundle, **shared)


# the receipt's fields that are the summary's own (digest is the summary's `version`)
_FROM_SUMMARY = tuple(
    f
    for f in Receipt.__struct_fields__
    if f in Summary.__struct_fields__ and f not in ("schema_version",)
)


class _Provenance(msgspec.Struct, kw_only=True):
    engine_version: str
    models: dict[str, str]
    agent: str = ""
    k: int  # (bounded in the full parse: a head is only listed)
    seed: int
    arms: Any
    created_at: str
    opponents: list[str] = []


class Unchecked(msgspec.Struct, kw_only=True):
    """A receipt file that is not a current `Receipt`: one of an older schema, or one whose
    values skillbench never writes. What it says about itself (the fields receipts are filed,
    listed and chosen by) is kept so that it can still be the newest receipt of its cell, and
    the gate refuses it with `problem`, never skips it (a corrupted newer FAIL must not leave
    an older PASS the newest)."""

    schema_version: int = SCHEMA_VERSION
    skill: str
    digest: str
    run_id: str
    verdict: str
    why: str
    expected_rows: int
    scored_rows: int
    complete: bool = False
    stopped: str | None = None
    agent: str = ""
    agent_version: str = ""
    models: dict[str, str] = {}
    driver: str = ""
    comparisons: Any
    rows: Any
    triggers: Any
    efficiency: Any
    provenance: _Provenance
    problem: str = ""  # set by parse(), whatever the file says


Filed = Receipt | Unchecked


def parse(data: bytes) -> Filed:
    """A receipt file's bytes as a `Receipt`, or as `Unchecked` saying why it is not one;
    msgspec.DecodeError (one line) when the bytes are not a receipt at all."""
    head = msgspec.json.decode(data, type=Unchecked)
    if head.schema_version < SCHEMA_VERSION or not head.provenance.opponents:
        head.problem = (
            f"was written by an older skillbench (receipt schema {head.schema_version}), "
            "before receipts could be re-derived; run the eval again"
        )
        return head
    try:
        return msgspec.json.decode(data, type=Receipt)
    except msgspec.ValidationError as exc:
        what = "its rows are not rows" if "at `$.rows[" in str(exc) else "is not a receipt"
        head.problem = f"{what} skillbench writes ({exc})"
        return head

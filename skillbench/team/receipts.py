"""Receipts (docs/results.md, docs/trust.md): one per eval run, naming the exact skill bytes it
measured.

Written into the run folder and into a local store keyed by digest:
`$SKILLBENCH_HOME/receipts/<skill>/<digest hex>/<run_id>.json` (default `~/.skillbench`).
Every free-text field is scrubbed of credentials before it is written.

A receipt can be checked without trusting whoever wrote it:
- `bundle` is the digest of the run folder's evidence (bundle_digest() says which files and
  in what order), so a receipt and a kept run folder can be matched;
- its verdict, counts and power follow from its own rows (inconsistency() re-derives them
  with the engine's own derive());
- `signature`, when a key is configured, is `ssh-keygen -Y sign -n skillbench-receipt` over
  the receipt's canonical bytes (canonical()): the receipt without `signature`, as Python's
  `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` writes it, in
  UTF-8.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from skillbench.results.receipt import (  # noqa: F401 (Provenance, Receipt: this module's API)
    SCHEMA_VERSION,
    Filed,
    Provenance,
    Receipt,
    Unchecked,
    parse,
)
from skillbench.results.score import derive, incomplete
from skillbench.results.sequential import rule_problem, stimuli_of
from skillbench.results.verdict import UNSCORED
from skillbench.team.signing import sign
from skillbench.util.inputs import MAX_JSON, InputError, read_capped
from skillbench.util.scrub import IDENTIFIERS, scrub_obj

# The bundle: these files, and every regular file under these folders, of the run folder.
BUNDLE_FILES = ("journal.jsonl", "summary.json")
BUNDLE_FOLDERS = ("transcripts", "exchanges", "triggers/transcripts", "triggers/exchanges")
# How far ahead of this machine's clock a receipt's created_at may be (another machine's
# clock runs ahead a little); more is a date someone wrote to make a receipt the newest.
CLOCK_SKEW = timedelta(minutes=5)


def home() -> Path:
    return Path(os.environ.get("SKILLBENCH_HOME") or Path.home() / ".skillbench")


def store_dir(skill: str, digest: str) -> Path:
    return home() / "receipts" / skill / digest.removeprefix("sha256:")


def encode(receipt: Receipt) -> bytes:
    # names kept as they are (a case named `token=abcdefgh12.yaml`), as in the journal and the
    # summary: scrubbed, two cases became one and the gate refused an honest receipt
    plain = scrub_obj(msgspec.to_builtins(receipt), keep=IDENTIFIERS)
    if not plain.get("skipped"):  # written only when a case was (receipts before it had none)
        plain.pop("skipped", None)
    return msgspec.json.format(msgspec.json.encode(plain))


def bundle_digest(run_dir: Path) -> str:
    r"""`sha256:` over the run's evidence, as `sha256sum` lists it: one line
    `<sha256 hex of the file>  <path>` per file, paths relative to the run folder with `/`,
    sorted by their bytes; the files are BUNDLE_FILES and every regular file under
    BUNDLE_FOLDERS (symlinks are not followed). The same value, with coreutils:

        cd RUN && find journal.jsonl summary.json transcripts exchanges \
            triggers/transcripts triggers/exchanges -type f 2>/dev/null \
          | LC_ALL=C sort | xargs -r -d '\n' sha256sum | sha256sum
    """
    paths = [name for name in BUNDLE_FILES if _regular(run_dir / name)]
    for folder in BUNDLE_FOLDERS:
        if (run_dir / folder).is_symlink():  # as find does: a link is not descended
            continue
        for root, dirs, files in os.walk(run_dir / folder):
            dirs.sort()
            for name in files:
                path = Path(root, name)
                if _regular(path):
                    paths.append(path.relative_to(run_dir).as_posix())
    lines = []
    for rel in sorted(paths, key=lambda p: p.encode()):
        h = hashlib.sha256()
        with (run_dir / rel).open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        lines.append(f"{h.hexdigest()}  {rel}\n")
    return "sha256:" + hashlib.sha256("".join(lines).encode()).hexdigest()


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def canonical(obj: dict[str, Any]) -> bytes:
    """The bytes a receipt's signature is over: the receipt without `signature` (see the
    module doc), so a verifier needs nothing but a JSON parser to rebuild them."""
    body = {k: v for k, v in obj.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signed_message(data: bytes) -> tuple[bytes, str | None]:
    """A receipt file's canonical bytes and its signature (None when unsigned)."""
    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError("a receipt is a JSON object")
    signature = obj.get("signature")
    return canonical(obj), signature if isinstance(signature, str) else None


def signed(data: bytes, key: Path) -> bytes:
    """A receipt file's bytes with its signature by `key` (SigningError when it cannot)."""
    obj = json.loads(data)
    obj["signature"] = sign(canonical(obj), key)
    return msgspec.json.format(msgspec.json.encode(obj))


def write_receipt(receipt: Receipt, run_dir: Path, sign_key: Path | None = None) -> Path:
    """Write the receipt into the run folder and the local store, signed by `sign_key` if
    given; return the store path."""
    data = encode(receipt)
    if sign_key is not None:
        data = signed(data, sign_key)
    (run_dir / "receipt.json").write_bytes(data)
    folder = store_dir(receipt.skill, receipt.digest)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{receipt.run_id}.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


def read_filed(path: Path) -> Filed:
    """A receipt file as it is filed: a `Receipt`, or `Unchecked` saying why it is not one;
    InputError (a DecodeError) naming the file for anything that is not a receipt at all."""
    data = read_capped(path, MAX_JSON)
    try:
        return parse(data)
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to read") from None
    except msgspec.DecodeError as exc:
        raise InputError(f"{path}: not valid JSON of the expected shape: {exc}") from None


def read_receipt(path: Path) -> Receipt:
    """A current receipt file; InputError (a DecodeError) naming the file otherwise."""
    found = read_filed(path)
    if isinstance(found, Unchecked):
        raise InputError(f"{path}: {found.problem}")
    return found


def local_receipts(skill: str, digest: str | None = None) -> list[tuple[Path, Filed]]:
    """Receipts in the local store for a skill (one version, or all), oldest first."""
    base = home() / "receipts" / skill
    folders = (
        [base / digest.removeprefix("sha256:")]
        if digest
        else (sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else [])
    )
    found = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                found.append((path, read_filed(path)))
            except (OSError, msgspec.DecodeError):
                continue
    return sorted(found, key=lambda pr: (pr[1].provenance.created_at, pr[1].run_id))


def inconsistency(r: Receipt, now: datetime | None = None) -> str | None:
    """Why a receipt cannot be what a run wrote, or None: its created_at is in the future, or
    its verdict, counts or power do not follow from its rows (re-derived by the engine's own
    derive(), so this follows whatever the verdict rule is)."""
    p = r.provenance
    if r.schema_version < SCHEMA_VERSION or not p.opponents:
        return (
            f"was written by an older skillbench (receipt schema {r.schema_version}), before "
            "receipts could be re-derived; run the eval again"
        )
    try:
        made = datetime.fromisoformat(p.created_at)
    except ValueError:
        return f"its created_at {p.created_at!r} is not an ISO 8601 time"
    if made.tzinfo is None:
        return f"its created_at {p.created_at!r} has no time zone"
    if made > (now or datetime.now(UTC)) + CLOCK_SKEW:
        return f"its created_at {p.created_at} is in the future"
    # the cell (agent/model) it is gated in must be one: the top level and the provenance agree
    if p.agent and r.agent != p.agent:
        return f"names agent {r.agent or 'none'} but its provenance {p.agent}"
    model, planned = r.models.get("agent"), p.models.get("agent")
    if model and planned and model != planned:
        return f"names model {model} but its provenance {planned}"
    if p.sequential is not None:  # before any re-derivation: its rule is what it computes by
        unlike = rule_problem(p.sequential, len(stimuli_of(u.name for u in p.units)))
        if unlike is not None:
            return f"declares a stopping rule that is not skillbench's: {unlike}"
    rows = r.rows
    session_of = {u.name: u.session for u in p.units}
    seen: set[tuple[str, int, str]] = set()
    for row in rows:
        if row.case not in session_of or row.opponent not in p.opponents:
            return f"a row of {row.case} vs {row.opponent} is not one the run planned"
        if (row.case, row.rep, row.opponent) in seen:
            return f"has two rows of {row.case} rep {row.rep} vs {row.opponent}"
        seen.add((row.case, row.rep, row.opponent))
        if not 1 <= row.rep <= p.k:  # a repetition the design never runs could outvote one
            return f"a row of {row.case} vs {row.opponent} is repetition {row.rep} of {p.k}"
        if row.outcome == "unscored" and row.decided_by not in UNSCORED:
            return (
                f"a row of {row.case} vs {row.opponent} is decided by {row.decided_by!r} "
                "but has no outcome"
            )
    ran = {session_of[row.case] for row in rows}  # (every row's case is planned: above)
    skipped = [s.case for s in r.skipped]
    for name in skipped:  # on its word no row is missing: only a planned case without rows
        if name not in session_of.values() or skipped.count(name) > 1:
            return f"lists {name!r} as skipped, which is not a case it planned, or twice"
        if name in ran:
            return f"lists {name!r} as skipped, yet it has rows"
    why = incomplete(
        rows,
        units=p.units,
        k=p.k,
        opponents=p.opponents,
        skipped=r.skipped,
        stopped=r.stopped,
        sequential=p.sequential,
    )
    if r.complete and why is not None:
        return f"claims a complete run, but {why}"
    if not r.complete and why is None:
        return "says it is incomplete, but its rows, skipped cases and stop are a complete run"
    found = derive(
        rows,
        opponents=p.opponents,
        units=p.units,
        k=p.k,
        seed=p.seed,
        min_net_lift=p.min_net_lift,
        sequential=p.sequential,
        skipped=set(skipped),
    )
    if r.verdict != found.verdict:
        return f"its verdict {r.verdict} does not follow from its rows (they give {found.verdict})"
    if (r.scored_rows, r.expected_rows) != (found.scored_rows, found.expected_rows):
        return (
            f"its {r.scored_rows}/{r.expected_rows} rows scored do not follow from its rows "
            f"({found.scored_rows}/{found.expected_rows})"
        )
    # compared as the JSON has them, so a value the file spells differently (1 for 1.0) is
    # judged as before these types
    counts, claimed = msgspec.to_builtins(found.comparisons), msgspec.to_builtins(r.comparisons)
    for opp in sorted(set(counts) | set(claimed)):
        if claimed.get(opp) != counts.get(opp):
            return (
                f"its counts vs {opp} ({_counts(claimed.get(opp))}) do not follow "
                f"from its rows ({_counts(counts.get(opp))})"
            )
    stats = msgspec.to_builtins(r.stats)
    for opp, power in msgspec.to_builtins(found.power).items():
        recorded = stats.get(opp) or {}
        wrong = sorted(k for k, v in power.items() if recorded.get(k) != v)
        if wrong:
            return f"its stats vs {opp} ({', '.join(wrong)}) do not follow from its rows"
    return None


def _counts(c: Any) -> str:
    if not isinstance(c, dict):
        return "none"
    return (
        f"{c.get('win')}W/{c.get('loss')}L/{c.get('tie')}T, net lift {c.get('net_lift')}, "
        f"p={c.get('sign_p')}"
    )

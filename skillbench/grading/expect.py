"""The `expect:` check: a natural-language expectation graded by a model. All of a session's
expectations go to the grader in one call with the task, the transcript's tail and the files
the arm left in the workspace; that material is the agent's, so it is framed
(`skillbench.grading.framing`) and the verdict is read back through the frame. Each call adds
a canary expectation that is false by construction (a file with a fresh random name, drawn after the
arm ended and never shown to the sandbox): a grader that passes it is not grading, and its
answer is unscored, never a pass."""

from __future__ import annotations

import hashlib
import random
import re
import secrets
import shlex
from collections.abc import Sequence
from typing import Any

from skillbench.evals.model import Check
from skillbench.grading.framing import Frame
from skillbench.grading.judge import tail
from skillbench.models.base import Message, Model, ModelError, TextBlock, Usage
from skillbench.results.checks import CheckResult
from skillbench.sandbox.base import Sandbox, SandboxError

RETRIES = 1  # one more call after an error, an unparseable reply or a passed canary
FILE_CHARS = 4000  # per file shown to the grader
FILES_CHARS = 20000  # all files together
MOST_FILES = 200
EVIDENCE_CHARS = 300
LIST_TIMEOUT = 60.0

SYSTEM = (
    "You are a strict grader. An AI agent worked alone in a sandbox on a task. For each "
    "numbered expectation, decide from the transcript and the workspace files whether it is "
    "met; when the material does not show it, it is not met. Quote the material as evidence. "
    'Reply with one JSON object and nothing else, its keys in this order: {"nonce": "<the '
    'frame id>", "results": [{"id": <number>, "passed": true | false}], "evidence": '
    '{"<number>": "<quote>"}}'
)


def canary_text() -> str:
    """An expectation false by construction, fresh for each grader call: the file it names has
    a random name drawn after the arm ended (the workspace is listed first), which neither the
    skill nor the agent can know, so nothing they do makes it true. A name derived from the
    expectations (the skill author's own text) could be planted to turn a loss unscored."""
    return f"The workspace contains a file named {secrets.token_hex(12)}.canary"


def numbered(texts: Sequence[str], canary: str) -> list[tuple[int, str]]:
    """The expectations and the canary as the grader sees them, numbered from 1 and shuffled.
    The order, the canary's place included, is fixed by the expectations alone, so a scripted
    grader can be written for it whatever the canary names."""
    order = [*texts, canary]
    random.Random(hashlib.sha256("\n".join(texts).encode()).digest()).shuffle(order)
    return list(enumerate(order, start=1))


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


async def workspace_files(sandbox: Sandbox) -> str | None:
    """The arm's workspace as the grader sees it: text files' contents within caps, binary
    and over-cap files by name and size; None when it cannot be listed (a checker the
    candidate's code tainted runs nothing)."""
    work = sandbox.workdir.rstrip("/")
    try:
        done = await sandbox.exec(
            # NUL-separated: a folder named with a newline would otherwise forge an entry
            # (`1 ../dev/ptmx`, `1 ../case/...`) read as the checker, outside the workspace
            f"cd {shlex.quote(work)} && find . -type f -printf '%P\\t%s\\0' 2>/dev/null | "
            f"sort -z | awk -v RS='\\0' -v ORS='\\0' 'NR <= {MOST_FILES} {{ print }} "
            "END { print NR }'",
            timeout=LIST_TIMEOUT,
        )
    except OSError:  # (the checker's executor failed: what the candidate's code did to it)
        return None
    entries = done.stdout.split("\0")
    if not done.ok or len(entries) < 2 or entries[-1] or not entries[-2].isdigit():
        return None
    parts, budget = [], FILES_CHARS
    for entry in entries[:-2]:
        rel, _, size_s = entry.rpartition("\t")
        if not rel or not size_s.isdigit() or rel.startswith("/") or ".." in rel.split("/"):
            continue
        size = int(size_s)
        shown = _CONTROL.sub(lambda c: f"\\x{ord(c[0]):02x}", rel)  # (one line, whatever it holds)
        if budget <= 0:
            parts.append(f"== {shown} ({size} bytes, not shown: the total cap is reached)")
            continue
        try:
            data = await sandbox.read_file(f"{work}/{rel}")
        except (OSError, SandboxError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            parts.append(f"== {shown} ({size} bytes, unreadable: {why})")
            continue
        if b"\0" in data[:8192]:
            parts.append(f"== {shown} ({size} bytes, binary)")
            continue
        text = data[: min(FILE_CHARS, budget)].decode("utf-8", "replace")
        cut = " (cut)" if len(data) > len(text.encode()) else ""
        budget -= len(text)
        parts.append(f"== {shown} ({size} bytes){cut}\n{text}")
    # told, or an expectation that nothing is there would be graded on a listing that files
    # sorting first (the agent's decoys) pushed the one that is there out of
    left = int(entries[-2]) - MOST_FILES
    if left > 0:
        parts.append(f"== ... and {left} more files, not listed (at most {MOST_FILES} are)")
    return "\n".join(parts) if parts else "(the workspace is empty)"


def prompt(
    frame: Frame, task: str, items: Sequence[tuple[int, str]], trace: str, files: str
) -> tuple[TextBlock, TextBlock]:
    """The user message: the task, the same for every session of a case and marked for the
    prompt cache, then everything of this call (its frame id, the expectations with their
    random canary, the transcript, the files): nothing random is in the cached prefix."""
    listed = "\n".join(f"{i}. {text}" for i, text in items)
    asked = (
        f"{frame.stamp()}\n\n## Expectations\n{listed}\n\n"
        f"## Transcript (tail)\n{frame.block('TRANSCRIPT', tail(trace))}\n\n"
        f"## Files left in the workspace\n{frame.block('FILES', files)}\n\n"
        "Grade every expectation by its number. Answer "
        f'{{"nonce": "{frame.nonce}", "results": [{{"id": N, "passed": true | false}}], '
        '"evidence": {"N": "..."}}.'
    )
    return TextBlock(f"## Task given to the agent\n{task}\n\n", cache=True), TextBlock(asked)


def _valid(ids: set[int]):
    def check(reply: dict[str, Any]) -> bool:
        # each expectation graded once, as {"id", "passed"} and nothing more (a key the grader
        # adds may hold material it quotes, and what follows the quote may be the material's)
        results = reply.get("results")
        if not isinstance(results, list):
            return False
        graded = [
            r["id"]
            for r in results
            if isinstance(r, dict) and list(r) == ["id", "passed"]
            if type(r["id"]) is int and isinstance(r["passed"], bool)
        ]
        return len(graded) == len(results) and sorted(graded) == sorted(ids)

    return check


UNPARSEABLE = "the grader's reply has no verdict with its frame id"


async def _grade_once(
    model: Model, task: str, texts: Sequence[str], trace: str, files: str, remind: bool = False
) -> tuple[dict[int, tuple[bool, str]] | None, str, Usage]:
    """One call: each expectation's (passed, evidence) by position, or None and why."""
    canary = canary_text()
    items = numbered(texts, canary)
    order = [t for _, t in items]
    frame = Frame()
    remark = (TextBlock(frame.reminder()),) if remind else ()
    usage = Usage()
    try:
        done = await model.complete(
            system=f"{SYSTEM}\n\n{Frame.RULES}",
            # (asked again: the first reply may have left out the frame id)
            messages=[Message("user", (*prompt(frame, task, items, trace, files), *remark))],
            tools=[],
            max_tokens=2048,
        )
    except ModelError as exc:
        return None, f"the grader failed: {exc}", usage
    usage = done.usage
    # (the frame id and every decision first, the evidence after: a quote the grader copies
    # unescaped can add keys only after the decisions, which are all that is read)
    reply = frame.verdict(done.text, _valid({i for i, _ in items}), ("nonce", "results"))
    if reply is None:
        return None, f"{UNPARSEABLE}: {done.text[:200]!r}", usage
    quotes = reply.get("evidence")
    quotes = quotes if isinstance(quotes, dict) else {}
    by_id = {
        r["id"]: (r["passed"], str(quotes.get(str(r["id"]), ""))[:EVIDENCE_CHARS])
        for r in reply["results"]
    }
    if by_id[order.index(canary) + 1][0]:
        return None, "the grader passed the canary (an expectation false by construction)", usage
    graded = {pos: by_id[next(i for i, t in items if t == text)] for pos, text in enumerate(texts)}
    return graded, "", usage


async def grade(
    model: Model,
    checks: Sequence[Check],
    *,
    task: str,
    trace: str,
    files: str | None,
    runs: int = 1,
) -> tuple[list[CheckResult], Usage]:
    """The `expect` checks' results, in order, and the grader's usage, graded on the
    transcript and `files` (workspace_files, taken before any check ran; None: it could not
    be). A grader that errors, answers unparseably or passes the canary (after one retry)
    leaves them `infrastructure`: the arm's rows go unscored, never a pass. With `runs` > 1,
    an expectation the runs disagree on fails closed."""
    usage = Usage()
    texts = [c.arg or "" for c in checks]
    if files is None:  # (graded on the transcript alone, its claims would stand unchecked)
        why = "the workspace could not be listed for the grader"
        return [CheckResult(c.name, False, why) for c in checks], usage
    answers = []
    for _ in range(runs):
        why = ""
        for _attempt in range(1 + RETRIES):
            remind = why.startswith(UNPARSEABLE)
            graded, why, used = await _grade_once(model, task, texts, trace, files, remind)
            usage = usage + used
            if graded is not None:
                break
        if graded is None:
            return [CheckResult(c.name, False, why, infrastructure=True) for c in checks], usage
        answers.append(graded)
    results = []
    for pos, check in enumerate(checks):
        verdicts = {a[pos][0] for a in answers}
        passed, evidence = answers[0][pos]
        if len(verdicts) > 1:
            results.append(
                CheckResult(check.name, False, f"grader runs disagree (fails closed): {evidence}")
            )
        else:
            results.append(CheckResult(check.name, passed, evidence))
    return results, usage

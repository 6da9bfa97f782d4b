"""The check kinds that run the eval's own programs in the checker (docs/formats.md): a
`verifier` script's exit code, a `reward` file (Harbor's), a `grader`'s JSON verdict
(skill-optimizer's, Skillgrade's scored one, Vally's program grader)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from skillbench.evals.fields import type_name
from skillbench.evals.kinds.base import NO_SANDBOX, At, CheckContext, Lint, StringKind, string_check
from skillbench.evals.model import Check
from skillbench.evals.paths import case_script
from skillbench.results.checks import NO_METRIC, NO_VERDICT, CheckResult
from skillbench.util.jsonreply import TooCostly, has_key_twice, objects_carrying, unread

if TYPE_CHECKING:
    from skillbench.evals.kinds.base import Checker, ExecResult

SCRIPT_TIMEOUT = 600.0  # an imported verifier may run a whole test suite
MAX_RUN = 86_400  # a day: a reward script's `timeout` (Harbor tasks give up to hours)
RESULTS = "/tmp/results"  # a grader's $RESULTS: the session's trace.jsonl (optimizer_trace)
VALLY_INPUT = f"{RESULTS}/grader-input.json"  # a Vally program grader's EVALUATE_GRADER_INPUT


def _checker(context: CheckContext) -> Checker | None:
    return context.checker if context.sandbox is not None else None


class Verifier(StringKind):
    name = "verifier"
    doc = (
        "the script (relative to the case file) exits 0 pass, 1 fail, 2 infrastructure "
        "(the arm's rows unscored)"
    )
    root_script = True

    def parse(self, value: object, at: At) -> Check | None:
        timeout = None
        if isinstance(value, dict):  # {run, timeout}: a Margin case's test_timeout_seconds
            unknown = sorted(set(value) - {"run", "timeout"})
            if unknown:
                at.error(
                    f"`verifier` has unknown field(s) {', '.join(unknown)}; "
                    "it takes run and timeout"
                )
                return None
            limit = value.get("timeout")
            if limit is not None and (
                isinstance(limit, bool)
                or not isinstance(limit, int | float)
                or not 0 < limit <= MAX_RUN
            ):
                at.error(f"`verifier` `timeout` must be seconds, more than 0 and at most {MAX_RUN}")
                return None
            timeout = None if limit is None else float(limit)
            value = value.get("run")
        check = string_check(self.name, value, at)
        if check is None or not check.arg:
            return check
        try:
            script: str | None = case_script(check.arg, at.case_file, "verifier")
        except ValueError as exc:  # reported; the check stays (it fails at run time)
            at.error(str(exc))
            script = None
        return Check(check.kind, check.arg, check.line, script=script, timeout=timeout)

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        checker, name = _checker(context), check.name
        if checker is None:
            return CheckResult(name, False, NO_SANDBOX)
        limit = check.timeout or SCRIPT_TIMEOUT  # as the case (its source's verifier) gives it
        done = await checker.run_script(check.script or check.arg or "", limit)
        tail, output = (done.stderr or done.stdout).strip()[-300:], _output(done)
        if done.timed_out:
            return CheckResult(name, False, f"timed out after {limit:g} s", output=output)
        if done.exit_code == 2:  # the verifier could not judge: whose failing, rows decide
            return CheckResult(
                name, False, f"{NO_VERDICT}: {tail}", infrastructure=True, output=output
            )
        detail = f"exit {done.exit_code}" + (f": {tail}" if done.exit_code and tail else "")
        return CheckResult(name, done.exit_code == 0, detail, output=output)


class Reward(StringKind):
    name = "reward"
    doc = (
        "{file, min, metric, run}: after `run` (a script, its exit code ignored), the "
        "reward in `file` is at least `min` (default 1): reward.txt's number; reward.json's "
        "`metric` when one is named, else its `reward`, else its only key (several, none "
        "chosen: no verdict)"
    )
    root_script = True

    def parse(self, value: object, at: At) -> Check | None:
        return _reward(value, at)

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        checker, name, arg = _checker(context), check.name, check.arg or ""
        if checker is None or context.sandbox is None:
            return CheckResult(name, False, NO_SANDBOX)
        sandbox, output = context.sandbox, ""
        limit = check.timeout or SCRIPT_TIMEOUT
        path = arg if arg.startswith("/") else f"{sandbox.workdir}/{arg}"
        if check.script:  # Harbor's test.sh: its exit code says nothing, its reward file does
            if not await checker.clear(path):  # (what is there may be the candidate's)
                return CheckResult(name, False, f"could not remove {path} before {check.script}")
            done = await checker.run_script(check.script, limit)
            output = _output(done)
            if done.timed_out:
                return CheckResult(
                    name, False, f"{check.script} timed out after {limit:g} s", output=output
                )
        if not await sandbox.exists(path):
            return CheckResult(name, False, f"no reward file at {path}", output=output)
        metrics = reward_metrics(await sandbox.read_text(path))
        if not metrics:
            return CheckResult(
                name, False, f"{path} holds no number (nor JSON of named numbers)", output=output
            )
        passed, score, detail = reward_verdict(metrics, check)
        return CheckResult(
            name,
            bool(passed),
            detail,
            score=score,
            infrastructure=passed is None,
            metrics=metrics,
            output=output,
        )


class Grader(StringKind):
    name = "grader"
    doc = (
        "the command prints {pass, score, evidence} JSON (or exits 0); $CASE, $WORK and "
        "$RESULTS (trace.jsonl) are set; with a `min` (Skillgrade's), its JSON `score` must "
        "reach it; a Vally `program` grader gets EVALUATE_WORKSPACE and EVALUATE_GRADER_INPUT "
        "and decides by its GraderResult's `passed` (or, printing nothing, its exit code)"
    )

    def parse(self, value: object, at: At) -> Check | None:
        if isinstance(value, dict):
            return _scored_grader(value, at)
        return string_check(self.name, value, at)

    def lint(self, check: Check) -> Sequence[Lint]:
        return [] if (check.arg or "").strip() else [Lint(f"`{self.name}` needs a command", True)]

    async def run(self, check: Check, context: CheckContext) -> CheckResult:
        checker, name, arg = _checker(context), check.name, check.arg or ""
        if checker is None or context.sandbox is None:
            return CheckResult(name, False, NO_SANDBOX)
        sandbox, work = context.sandbox, context.sandbox.workdir
        env = {"CASE": checker.case_dir, "WORK": work}
        limit = check.timeout or SCRIPT_TIMEOUT
        # written by the host, root's and read-only to the grader (and to the candidate's
        # code it runs): whatever the agent wrote is not it
        files = {"trace.jsonl": checker.grader_trace()}
        if check.program is not None:  # Vally's: its GraderInput, from the host's transcript
            files[VALLY_INPUT.rpartition("/")[2]] = checker.vally_input(check.program)
            env = {**env, "EVALUATE_WORKSPACE": work, "EVALUATE_GRADER_INPUT": VALLY_INPUT}
        if not await checker.write_for_grader(RESULTS, files):
            return CheckResult(name, False, f"could not write {RESULTS} for the grader")
        # Its stdout is the executor's pipe (PID 1 reads it, root's): the candidate's code the
        # grader runs shares it and can add to it (through /proc/<grader>/fd/1 too), never
        # rewrite it, as it could a file; what it adds before, around or after the verdict
        # is another verdict, and two that disagree fail (_graded). A file the wrapper kept
        # it in let a process left behind pwrite `true` over the grader's `false`.
        done = await sandbox.exec(
            ["bash", "-c", arg],
            cwd=work,
            timeout=limit,
            env={**env, "RESULTS": RESULTS},
        )
        if done.timed_out:
            return CheckResult(name, False, f"timed out after {limit:g} s")
        # (off the event loop: reading a megabyte of hostile output takes seconds, and every
        # other session's deadlines run on that loop)
        found = await asyncio.to_thread(_graded, name, done, check)
        if found.passed and done.truncated:
            # the middle of its stdout was cut (the sandbox keeps its head and tail): the
            # grader's own verdict may be what was cut, under the candidate's output
            return CheckResult(
                name,
                False,
                "the grader's output was longer than the sandbox keeps, cut in the middle: a "
                f"verdict left there may not be the grader's (it said: {found.detail[:200]})",
                score=found.score,
            )
        if found.passed and done.exit_code != 0:
            # A verdict on stdout may be the candidate's (it shares the grader's stdout): when
            # the grader itself did not exit 0 (its contract is its exit code, or the
            # candidate's program killed it before its own verdict), that stdout's pass is
            # never the grader's.
            tail = (done.stderr or "").strip()[-300:]
            return CheckResult(
                name,
                False,
                f"exit {done.exit_code}: a grader that did not exit 0 passes nothing (its "
                f"stdout said: {found.detail[:200]})" + (f": {tail}" if tail else ""),
                score=found.score,
            )
        return found


def _scored_grader(value: dict[str, Any], at: At) -> Check | None:
    """`grader: {run: CMD, min: N}`: a command printing a JSON `score` that passes at `min`
    (Skillgrade's deterministic grader, as `skillbench import skillgrade` writes it);
    `grader: {run: CMD, vally: {stimulus, config}, timeout: S}`: Vally's program grader (as
    `skillbench import vally` writes it), given Vally's EVALUATE_GRADER_INPUT."""
    unknown = sorted(set(value) - {"run", "min", "vally", "timeout"})
    run, least = value.get("run"), value.get("min")
    if unknown:
        at.error(
            f"`grader` has unknown field(s) {', '.join(unknown)}; it takes run and min, or "
            "run, vally and timeout",
        )
        return None
    if not isinstance(run, str) or not run.strip():
        at.error('`grader` needs `run`: the command that prints {"score": N}')
        return None
    if "vally" in value:
        given, limit = value["vally"], value.get("timeout", 60)
        if not isinstance(given, dict) or least is not None:
            at.error("`grader` `vally` is a mapping {stimulus, config}, without `min`")
            return None
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int | float)
            or not 0 < limit <= MAX_RUN
        ):
            at.error(f"`grader` `timeout` must be seconds, more than 0 and at most {MAX_RUN}")
            return None
        context = json.dumps(given, default=str)
        return Check("grader", run, at.line, timeout=float(limit), program=context)
    if isinstance(least, bool) or not isinstance(least, int | float) or not 0 <= least <= 1:
        at.error("`grader` `min` must be a score from 0 to 1")
        return None
    return Check("grader", run, at.line, min=float(least))


def _reward(value: Any, at: At) -> Check | None:
    """`reward: FILE` or `reward: {file: FILE, min: N, metric: NAME, run: SCRIPT, timeout: S}`."""
    if isinstance(value, str):
        value = {"file": value}
    if not isinstance(value, dict):
        at.error(f"`reward` is a file or a mapping {{file, min, run}}, got {type_name(value)}")
        return None
    unknown = sorted(set(value) - {"file", "min", "metric", "run", "timeout"})
    if unknown:
        at.error(
            f"`reward` has unknown field(s) {', '.join(unknown)}; it takes file, min, metric, "
            "run and timeout",
        )
        return None
    limit = value.get("timeout")
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit <= MAX_RUN
    ):
        at.error(f"`reward` `timeout` must be seconds, more than 0 and at most {MAX_RUN}")
        return None
    metric = value.get("metric")
    if metric is not None and (not isinstance(metric, str) or not metric.strip()):
        at.error(f"`reward` `metric` must be a reward.json key, got {type_name(metric)}")
        return None
    file, least, run = value.get("file"), value.get("min", 1), value.get("run")
    if not isinstance(file, str) or not file.strip():
        at.error(
            "`reward` needs `file`: the reward file the verifier writes "
            "(e.g. /logs/verifier/reward.txt)",
        )
        return None
    if isinstance(least, bool) or not isinstance(least, int | float):
        at.error(f"`reward` `min` must be a number, got {type_name(least)}")
        return None
    script = None
    if run is not None:
        if not isinstance(run, str):
            at.error(f"`reward` `run` must be a script path, got {type_name(run)}")
            return None
        try:
            script = case_script(run, at.case_file, "reward run")
        except ValueError as exc:
            at.error(str(exc))
            return None
    timeout = None if limit is None else float(limit)
    return Check(
        "reward", file, at.line, script=script, min=float(least), metric=metric, timeout=timeout
    )


def _graded(name: str, done: ExecResult, check: Check) -> CheckResult:
    """A grader's result as its format reads its stdout (and, with no verdict, its exit)."""
    try:
        return _read_verdict(name, done, check)
    except TooCostly as exc:  # (the candidate's code shares the grader's stdout)
        return CheckResult(name, False, f"the grader's stdout is built to be slow to read: {exc}")


def _read_verdict(name: str, done: ExecResult, check: Check) -> CheckResult:
    if has_key_twice(done.stdout):
        # the candidate's code shares the grader's stdout: wrapped around the grader's own
        # verdict, a key given twice keeps only its own value (the grader's nested one gone)
        return CheckResult(name, False, "an object in the grader's stdout gives a key twice")
    # the key each format's verdict is read by: Skillgrade's score, Vally's passed, pass
    key = "score" if check.min is not None else "passed" if check.program is not None else "pass"
    verdicts = objects_carrying(done.stdout, key)
    if unread(done.stdout, key, verdicts):
        # the candidate's code shares the grader's stdout too, and a process of it can slip
        # bytes between the writes of a verdict printed in pieces: the grader's own then does
        # not parse, and a verdict the candidate printed would be the only one read
        return CheckResult(
            name, False, f'an object naming "{key}" in the grader\'s stdout does not parse: failed'
        )
    if check.min is not None:  # Skillgrade's contract: {"score", "details", "checks"}
        return _scored(name, done, check.min, verdicts)
    if check.program is not None:
        return _vally_result(name, done, verdicts)
    if len({bool(v["pass"]) for v in verdicts}) > 1:
        # a grader prints one verdict; a second, disagreeing one came from the candidate's
        # code the grader ran (it shares the grader's stdout): never the candidate's pass
        return CheckResult(
            name, False, f"{len(verdicts)} disagreeing verdicts in the grader's stdout: failed"
        )
    verdict = verdicts[-1] if verdicts else None
    if verdict is None:
        tail = (done.stderr or done.stdout).strip()[-300:]
        return CheckResult(
            name,
            done.exit_code == 0,
            f"exit {done.exit_code} (no JSON verdict)" + (f": {tail}" if done.exit_code else ""),
        )
    score = _finite(verdict.get("score"))
    evidence = verdict.get("evidence") or []
    evidence = [str(e) for e in evidence] if isinstance(evidence, list) else [str(evidence)]
    shown = "no score" if score is None else f"score {score:g}"
    return CheckResult(
        name, bool(verdict["pass"]), "; ".join([shown, *evidence])[:1000], score=score
    )


def _vally_result(name: str, done: ExecResult, carrying: list[dict[str, Any]]) -> CheckResult:
    """Vally's program-grader contract: nothing on stdout, and the exit code decides (0
    passes); else a GraderResult JSON whose `passed` decides, `score` and `evidence` kept.
    Other stdout is no result (a failure), and two disagreeing results fail, as for every
    grader: the candidate's code the program ran shares its stdout. `carrying`: the objects
    in its stdout that carry `passed`."""
    if not done.stdout.strip():
        tail = done.stderr.strip()[-300:]
        return CheckResult(
            name,
            done.exit_code == 0,
            f"exit {done.exit_code}, no output" + (f": {tail}" if done.exit_code and tail else ""),
            score=1.0 if done.exit_code == 0 else 0.0,
        )
    results = [v for v in carrying if isinstance(v["passed"], bool)]
    if not results:
        tail = done.stdout.strip()[-300:]
        return CheckResult(name, False, f"stdout is not a GraderResult (no `passed`): {tail}")
    if len({v["passed"] for v in results}) > 1:
        return CheckResult(
            name, False, f"{len(results)} disagreeing GraderResults in its stdout: failed"
        )
    last = results[-1]
    score = last.get("score")
    value = _finite(score)
    shown = "no score" if value is None else f"score {value:g}"
    evidence = str(last.get("evidence") or "")
    return CheckResult(
        name, last["passed"], "; ".join(x for x in (shown, evidence) if x)[:1000], score=value
    )


def _scored(
    name: str, done: ExecResult, least: float, carrying: list[dict[str, Any]]
) -> CheckResult:
    """A score-printing grader (Skillgrade's deterministic one): its JSON `score`, clamped to
    0..1 as Skillgrade does, passes at `least`; no JSON is a score of 0, as there. Two
    different scores in its stdout (the candidate's code printing one too) fail. `carrying`:
    the objects in its stdout that carry `score`."""
    found = (_finite(v["score"]) for v in carrying)
    scores = {max(0.0, min(1.0, x)) for x in found if x is not None}
    if len(scores) > 1:
        return CheckResult(name, False, f"{len(scores)} different scores in its stdout: failed")
    if not scores:
        tail = (done.stderr or done.stdout).strip()[-300:]
        return CheckResult(name, False, f"no JSON score (score 0): {tail}", score=0.0)
    (score,) = scores
    return CheckResult(name, score >= least, f"score {score:g} (min {least:g})", score=score)


OUTPUT_TAIL = 2000  # characters of a verifier's stdout and of its stderr kept on the row


def _output(done: ExecResult) -> str:
    """What a verifier printed, both streams' tails: shown for failing rows and oracle runs."""
    parts = [
        f"{label}:\n{text.strip()[-OUTPUT_TAIL:]}"
        for label, text in (("stdout", done.stdout), ("stderr", done.stderr))
        if text.strip()
    ]
    return "\n".join(parts)


def _finite(value: object) -> float | None:
    """A JSON number as a finite float, else None: a bool, NaN, an infinity, or an integer
    past a float's range (JSON has no limit, and the candidate's code shares a grader's
    stdout: 400 digits overflowed float() and aborted the run)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def reward_metrics(text: str) -> dict[str, float]:
    """A reward file's named numbers: reward.txt's number (as `reward`), or reward.json's
    numeric entries (a bare JSON number is `reward`); {} when it holds none."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # nested past the parser's limit: no numbers either
        return {}
    if (number := _finite(data)) is not None:
        return {"reward": number}
    if isinstance(data, dict):
        numbers = {str(k): _finite(v) for k, v in data.items()}
        return {k: v for k, v in numbers.items() if v is not None}
    return {}


def reward_verdict(
    metrics: dict[str, float], check: Check
) -> tuple[bool | None, float | None, str]:
    """(passed, score, detail) as Harbor scores a reward file: one number decides, reaching
    `min` (default 1): the case's `metric` when it names one, else the `reward` key, else the
    file's only key. Several keys and none chosen: Harbor's default metric takes exactly one
    key per reward and refuses the rest, so there is no verdict (passed None), never an AND."""
    least = 1.0 if check.min is None else check.min
    key = check.metric or (
        "reward" if "reward" in metrics else next(iter(metrics)) if len(metrics) == 1 else None
    )
    shown = ", ".join(f"{k} {v:g}" for k, v in sorted(metrics.items()))
    if key is None:
        return (
            None,
            None,
            f"{NO_METRIC}: the reward file has {shown} and no `reward` key; name the one that "
            "decides with the check's `metric:` (Harbor's default metric takes exactly one key)",
        )
    if key not in metrics:
        return False, None, f"no metric {key!r} in the reward file (it has {shown})"
    value = metrics[key]
    return value >= least, value, f"{key} {value:g} (min {least:g})"

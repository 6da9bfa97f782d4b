"""The check kinds of docs/formats.md, with run-time semantics: an unknown kind, a bad regex or a
path escaping the workspace makes that check fail with a reason; it never errors the run."""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Sequence

from skillbench.checks.optimizer_trace import optimizer_trace
from skillbench.checks.vally_trajectory import grader_input
from skillbench.evals.checks import path_escape
from skillbench.evals.kinds import CheckContext, CheckKind, plugin_kinds
from skillbench.evals.model import CHECK_KINDS, Check
from skillbench.results.checks import NO_METRIC, NO_VERDICT, CheckResult
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import CASE_DIR, ROOT, ExecResult, Sandbox, SandboxError
from skillbench.sandbox.checker_env import ROOT_SCRIPT
from skillbench.util.jsonreply import json_objects

COMMAND_TIMEOUT = 120.0


async def run_checks(
    checks: Sequence[Check],
    transcript: Transcript,
    sandbox: Sandbox | None,
    case_dir: str = CASE_DIR,
    earlier: Sequence[CheckResult] | None = None,
    results_trace: str | None = None,
    root: Sequence[str] = (),
    shown_at: dict[str, str] | None = None,
) -> list[CheckResult]:
    """Evaluate checks against a finished session: `transcript` as it happened (unscrubbed),
    `sandbox` the checker holding the arm's /work (stage.check_phase), `case_dir` the case's
    own folder there ($CASE for verifiers and graders). `earlier`: these checks' results on
    the same session before (a reused one): those that read only the transcript stand.
    `results_trace`: a grader's $RESULTS/trace.jsonl when not the transcript's (the oracle's
    reference solution writes its own, as skill-optimizer's do). `root`: the case's
    `as_root`; with `verifier`, its verifier and reward scripts run as root, with the
    image's PATH, as their source runs them (the checker's root is then writable). `shown_at`:
    skill name -> the workspace folder a skill-optimizer grader expects its reads at
    (optimizer_trace)."""
    if sandbox is not None:
        await _clear_rewards(checks, sandbox)
    as_root = "verifier" in root
    # a script run as root goes after every other check of this checker: whatever code of
    # the agent's it runs with root's rights (a planted conftest.py) can change nothing
    # another check reads (docs/trust.md); the results keep the checks' order
    order = sorted(
        range(len(checks)),
        key=lambda i: as_root and checks[i].kind in ("verifier", "reward"),
    )
    done: dict[int, CheckResult] = {}
    for i in order:
        done[i] = await _check_one(
            i, checks[i], transcript, sandbox, case_dir, earlier, results_trace, as_root, shown_at
        )
    return [done[i] for i in range(len(checks))]


async def _check_one(
    i: int,
    check: Check,
    transcript: Transcript,
    sandbox: Sandbox | None,
    case_dir: str,
    earlier: Sequence[CheckResult] | None,
    results_trace: str | None,
    as_root: bool,
    shown_at: dict[str, str] | None = None,
) -> CheckResult:
    """One check of run_checks, the `i`th."""
    try:
        if (plugin := plugin_kinds().get(check.kind)) is not None:
            return await _plugin(plugin, check, CheckContext(transcript, sandbox))
        if earlier is not None and i < len(earlier) and check.kind in TRANSCRIPT_ONLY:
            return earlier[i]
        if check.kind in SCRIPTED and sandbox is not None:
            trace = results_trace
            if trace is None:
                trace = optimizer_trace(transcript.events, shown_at)
            return await _scripted(check, trace, sandbox, case_dir, transcript, as_root)
        text, commands = transcript.all_text.lower(), transcript.bash_commands
        return await _one(check, text, commands, sandbox, transcript.all_text)
    except OSError as exc:  # e.g. the agent left /work unreadable: the check fails
        return CheckResult(check.name, False, f"could not run: {exc}")


async def _plugin(kind: CheckKind, check: Check, context: CheckContext) -> CheckResult:
    """A package's check kind (evals/kinds.py): its verdict, or a failure saying what it
    raised; a plugin's bug fails its check, never the run."""
    if check.arg is None:
        return CheckResult(check.name, False, f"{check.kind} needs an argument")
    try:
        verdict = await kind.run(check.arg, context)
    except Exception as exc:
        return CheckResult(check.name, False, f"the check kind raised {type(exc).__name__}: {exc}")
    return CheckResult(check.name, bool(verdict.passed), verdict.detail, score=verdict.score)


async def _clear_rewards(checks: Sequence[Check], sandbox: Sandbox) -> None:
    """Remove what the agent left where a reward file will be read from: a reward is the
    check phase's own, never a file (or a locked one) the agent made in advance. (Outside
    the workspace the checker's /logs and /tmp are fresh anyway.)"""
    work = sandbox.workdir.rstrip("/")
    paths = [
        path
        for c in checks
        if c.kind == "reward" and c.arg
        for path in [c.arg if c.arg.startswith("/") else f"{work}/{c.arg}"]
        if path.startswith(f"{work}/")
    ]
    if paths:
        done = await sandbox.exec(["rm", "-rf", "--", *paths], timeout=COMMAND_TIMEOUT)
        if not done.ok:  # the agent's reward would be read: score nothing
            raise SandboxError(f"could not clear the reward files: {done.stderr.strip()[-200:]}")


SCRIPTED = frozenset({"verifier", "reward", "grader"})
TRANSCRIPT_ONLY = frozenset(
    {
        "transcript_mentions",
        "transcript_omits",
        "command_matching",
        "no_command_matching",
        "transcript_matching",
        "no_transcript_matching",
    }
)
SCRIPT_TIMEOUT = 600.0  # an imported verifier may run a whole test suite


RESULTS = "/tmp/results"  # a grader's $RESULTS: the session's trace.jsonl (optimizer_trace)
VALLY_INPUT = f"{RESULTS}/grader-input.json"  # a Vally program grader's EVALUATE_GRADER_INPUT
# A grader's stdout as it stood when the grader exited: a process it left behind (the
# candidate's program, run by the grader) cannot add to it afterwards.
GRADER_WRAPPER = (
    'out=$(mktemp) && { bash -c "$1" >"$out"; rc=$?; '
    'head -c "$(stat -c %s "$out")" "$out"; rm -f "$out"; exit $rc; }'
)


async def _scripted(
    check: Check,
    trace: str,
    sandbox: Sandbox,
    case_dir: str,
    transcript: Transcript,
    as_root: bool = False,
) -> CheckResult:
    """The check kinds that run the eval's own programs in the checker (docs/formats.md); a
    grader finds `trace` (skill-optimizer's format) at $RESULTS/trace.jsonl."""
    name, arg = check.name, check.arg or ""
    work = sandbox.workdir
    env = {"CASE": case_dir, "WORK": work}

    limit = check.timeout or SCRIPT_TIMEOUT  # as the case (its source's verifier) gives it

    async def run_script(rel: str) -> ExecResult:  # a script of the evals, by its path there
        script = f"{CASE_DIR}/{rel}"
        # a source's verifier written for root (`as_root`): root in the checker, which the
        # agent never touched, with the image's PATH (docs/trust.md); a grader never is
        return await sandbox.exec(
            ["bash", "-c", ROOT_SCRIPT, script] if as_root else ["bash", script],
            cwd=work,
            timeout=limit,
            env={**env, "TESTS": posixpath.dirname(script)},
            user=ROOT if as_root else None,
        )

    if check.kind == "verifier":
        done = await run_script(check.script or arg)
        tail, output = (done.stderr or done.stdout).strip()[-300:], _output(done)
        if done.timed_out:
            return CheckResult(name, False, f"timed out after {limit:g} s", output=output)
        if done.exit_code == 2:  # the verifier could not judge: whose failing, rows decide
            return CheckResult(
                name, False, f"{NO_VERDICT}: {tail}", infrastructure=True, output=output
            )
        detail = f"exit {done.exit_code}" + (f": {tail}" if done.exit_code and tail else "")
        return CheckResult(name, done.exit_code == 0, detail, output=output)
    if check.kind == "reward":
        output = ""
        if check.script:  # Harbor's test.sh: its exit code says nothing, its reward file does
            done = await run_script(check.script)
            output = _output(done)
            if done.timed_out:
                return CheckResult(
                    name,
                    False,
                    f"{check.script} timed out after {limit:g} s",
                    output=output,
                )
        path = arg if arg.startswith("/") else f"{work}/{arg}"
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
    # grader: a command printing {"pass", "score", "evidence"}, or its exit code
    # written by the host into the fresh checker: whatever the agent wrote is not it
    await sandbox.write_file(f"{RESULTS}/trace.jsonl", trace)
    if check.program is not None:  # Vally's: its GraderInput, from the host's transcript
        await sandbox.write_file(VALLY_INPUT, grader_input(transcript.events, check.program, work))
        env = {**env, "EVALUATE_WORKSPACE": work, "EVALUATE_GRADER_INPUT": VALLY_INPUT}
    done = await sandbox.exec(
        ["bash", "-c", GRADER_WRAPPER, "grader", arg],
        cwd=work,
        timeout=limit,
        env={**env, "RESULTS": RESULTS},
    )
    if done.timed_out:
        return CheckResult(name, False, f"timed out after {limit:g} s")
    found = _graded(name, done, check)
    if found.passed and done.exit_code != 0:
        # A verdict on stdout may be the candidate's (it shares the grader's stdout): when the
        # grader itself did not exit 0 (its contract is its exit code, or the candidate's
        # program killed it before its own verdict), that stdout's pass is never the grader's.
        tail = (done.stderr or "").strip()[-300:]
        return CheckResult(
            name,
            False,
            f"exit {done.exit_code}: a grader that did not exit 0 passes nothing (its stdout "
            f"said: {found.detail[:200]})" + (f": {tail}" if tail else ""),
            score=found.score,
        )
    return found


def _graded(name: str, done: ExecResult, check: Check) -> CheckResult:
    """A grader's result as its format reads its stdout (and, with no verdict, its exit)."""
    if check.min is not None:  # Skillgrade's contract: {"score", "details", "checks"}
        return _scored(name, done, check.min)
    if check.program is not None:
        return _vally_result(name, done)
    verdicts = [v for v in json_objects(done.stdout) if "pass" in v]
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
    score = verdict.get("score")
    evidence = verdict.get("evidence") or []
    evidence = [str(e) for e in evidence] if isinstance(evidence, list) else [str(evidence)]
    shown = f"score {score:g}" if isinstance(score, int | float) else "no score"
    return CheckResult(
        name,
        bool(verdict["pass"]),
        "; ".join([shown, *evidence])[:1000],
        score=float(score) if isinstance(score, int | float) else None,
    )


def _vally_result(name: str, done: ExecResult) -> CheckResult:
    """Vally's program-grader contract: nothing on stdout, and the exit code decides (0
    passes); else a GraderResult JSON whose `passed` decides, `score` and `evidence` kept.
    Other stdout is no result (a failure), and two disagreeing results fail, as for every
    grader: the candidate's code the program ran shares its stdout."""
    if not done.stdout.strip():
        tail = done.stderr.strip()[-300:]
        return CheckResult(
            name,
            done.exit_code == 0,
            f"exit {done.exit_code}, no output" + (f": {tail}" if done.exit_code and tail else ""),
            score=1.0 if done.exit_code == 0 else 0.0,
        )
    results = [v for v in json_objects(done.stdout) if isinstance(v.get("passed"), bool)]
    if not results:
        tail = done.stdout.strip()[-300:]
        return CheckResult(name, False, f"stdout is not a GraderResult (no `passed`): {tail}")
    if len({v["passed"] for v in results}) > 1:
        return CheckResult(
            name, False, f"{len(results)} disagreeing GraderResults in its stdout: failed"
        )
    last = results[-1]
    score = last.get("score")
    value = float(score) if isinstance(score, int | float) and _number(score) else None
    shown = "no score" if value is None else f"score {value:g}"
    evidence = str(last.get("evidence") or "")
    return CheckResult(
        name, last["passed"], "; ".join(x for x in (shown, evidence) if x)[:1000], score=value
    )


def _scored(name: str, done: ExecResult, least: float) -> CheckResult:
    """A score-printing grader (Skillgrade's deterministic one): its JSON `score`, clamped to
    0..1 as Skillgrade does, passes at `least`; no JSON is a score of 0, as there. Two
    different scores in its stdout (the candidate's code printing one too) fail."""
    scores = {
        max(0.0, min(1.0, float(v["score"])))
        for v in json_objects(done.stdout)
        if _number(v.get("score"))
    }
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


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def reward_metrics(text: str) -> dict[str, float]:
    """A reward file's named numbers: reward.txt's number (as `reward`), or reward.json's
    numeric entries (a bare JSON number is `reward`); {} when it holds none."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # nested past the parser's limit: no numbers either
        return {}
    if _number(data):
        return {"reward": float(data)}
    if isinstance(data, dict):
        return {str(k): float(v) for k, v in data.items() if _number(v)}
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


async def _one(
    check: Check, text: str, commands: list[str], sandbox: Sandbox | None, written: str = ""
) -> CheckResult:
    name, arg = check.name, check.arg
    if check.kind not in CHECK_KINDS:
        return CheckResult(name, False, f"unknown check kind {check.kind!r}")
    if arg is None:
        return CheckResult(name, False, f"{check.kind} needs an argument")
    if check.kind == "expect":  # graded by the model grader (skillbench.grading.expect) after these
        return CheckResult(name, False, "not graded by a model", infrastructure=True)
    if check.kind == "transcript_mentions":
        found = arg.lower() in text
        return CheckResult(
            name, found, "found in the transcript" if found else "not in the transcript"
        )
    if check.kind == "transcript_omits":
        found = arg.lower() in text
        return CheckResult(name, not found, "found in the transcript" if found else "absent")
    if check.kind in ("transcript_matching", "no_transcript_matching"):
        try:
            match = re.search(arg, written)
        except re.error as exc:
            return CheckResult(name, False, f"invalid regex: {exc}")
        seen = f"matched: {match.group(0)[:200]!r}" if match else "no match in the transcript"
        return CheckResult(name, (match is not None) == (check.kind == "transcript_matching"), seen)
    if check.kind in ("command_matching", "no_command_matching"):
        try:
            pattern = re.compile(arg)
        except re.error as exc:
            return CheckResult(name, False, f"invalid regex: {exc}")
        hit = next((c for c in commands if pattern.search(c)), None)
        seen = f"matched: {hit[:200]}" if hit else f"no match in {len(commands)} commands"
        if check.kind == "command_matching":
            return CheckResult(name, hit is not None, seen)
        return CheckResult(name, hit is None, seen)
    if sandbox is None:
        return CheckResult(name, False, "no sandbox to check in (the session errored)")
    if check.kind in ("file_exists", "file_absent"):
        reason = path_escape(arg)
        if reason:
            return CheckResult(name, False, f"path {reason}")
        try:
            exists = await sandbox.exists(f"{sandbox.workdir}/{arg}")
        except OSError as exc:  # a locked folder, a loop: not "absent", and not "exists"
            return CheckResult(name, False, f"unreadable: {exc.strerror or exc}")
        if check.kind == "file_exists":
            return CheckResult(name, exists, "exists" if exists else "missing")
        return CheckResult(name, not exists, "exists" if exists else "absent")
    # command_succeeds
    done = await sandbox.exec(arg, timeout=COMMAND_TIMEOUT, cwd=sandbox.workdir)
    if done.timed_out:
        return CheckResult(name, False, f"timed out after {COMMAND_TIMEOUT:g} s")
    tail = (done.stderr or done.stdout).strip()[-300:]
    return CheckResult(
        name,
        done.exit_code == 0,
        f"exit {done.exit_code}" + (f": {tail}" if tail and done.exit_code else ""),
    )

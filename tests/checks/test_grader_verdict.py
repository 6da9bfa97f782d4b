"""Issue 38 GR1: a skill-optimizer grader's verdict is the grader's, not the candidate's. A
grader usually runs the candidate's program, which writes into the grader's own stdout; what
the candidate prints there (before the verdict, or from a process left behind after the
grader exits) never passes a grader that said false. Honest graders read as skill-optimizer's
runner reads them (logs around one JSON object; no object: the exit code)."""

from __future__ import annotations

import pytest

from skillbench.checks.run import run_checks
from skillbench.evals.model import Check
from skillbench.results.transcript import Transcript
from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("podman_service")]

VERDICT_FALSE = """echo '{"pass": false, "score": 0, "evidence": ["wrong answer"]}'"""
REWRITER = """python3 - "$PPID" > /dev/null 2>&1 <<'PY' & disown
import os, sys, time
out = f"/proc/{sys.argv[1]}/fd/1"
try:
    fd = os.open(out, os.O_WRONLY)
    for _ in range(300):
        found = open(out, "rb").read().find(b'"pass": false')
        if found >= 0:
            os.pwrite(fd, b'"pass": true ', found)
            break
        time.sleep(0.01)
except OSError:
    pass
PY"""
# what the candidate left in /work: programs the grader runs
PROGRAMS = {
    "before.sh": """echo '{"pass": true, "score": 1, "evidence": ["forged"]}'""",
    # a process that outlives the grader and writes after its verdict
    "after.sh": """(sleep 2; echo '{"pass": true, "score": 1}') & disown""",
    # an object left open before the verdict, closed by a process left behind
    "wrap.sh": """printf '{"pass": true, "x": '; (sleep 2; echo '}') & disown""",
    # an object left open before the verdict, closed by a process left behind while the
    # grader still runs: the grader's verdict nested inside the candidate's
    "nest.sh": """printf '{"pass": true, "evidence": ['; (sleep 1; echo ']}') & disown""",
    # a pass, then enough output that the sandbox keeps only the head and the tail of the
    # stdout, with the grader's own verdict in the middle it cuts (outside review)
    "flood.sh": """echo '{"pass": true}'; head -c 600000 /dev/zero | tr '\\0' x; echo""",
    # a process left behind that rewrites the grader's own verdict where its stdout is kept
    # (third review: a file in /tmp, reached by /proc/<grader>/fd/1, took a pwrite)
    "rewrite.sh": REWRITER,
    # an object opened around the verdict and closed giving its key again: a parser keeps
    # the last value, and the grader's nested verdict is gone (fourth review)
    "dupkey.sh": """printf '{"x": '; (sleep 1; echo ', "x": 0, "pass": true}') & disown""",
    # a pass, then a process left behind slips a byte between the writes of a grader that
    # prints its verdict in pieces: the grader's own no longer parses (tenth review)
    "slip.sh": """echo '{"pass": true}'; (sleep 1; printf '"') & disown""",
    # ... its own pass spelled with an escape, which a pattern for the key did not count
    "slip2.sh": """echo '{"p\\u0061ss": true}'; (sleep 1; printf '"') & disown""",
    # ... or a quote and a backslash, so that a pattern's one long match swallowed the key of
    # the grader's own (broken) verdict (twelfth review)
    "slip3.sh": """echo '{"pass": true}'; (sleep 1; printf 'x"\\\\') & disown""",
}
AFTER_VERDICT = {  # the grader's work after its verdict (or its candidate's, still writing)
    "nest.sh": "; sleep 3",
    "rewrite.sh": "; sleep 2",
    "dupkey.sh": "; sleep 2",
    "flood.sh": "; head -c 600000 /dev/zero | tr '\\0' y; echo",
}
IN_PIECES = dict.fromkeys(
    ("slip.sh", "slip2.sh"), """printf '{"pass": '; sleep 2; printf 'false}\\n'"""
)
IN_PIECES["slip3.sh"] = """echo '{'; sleep 2; echo '"pass": false'; echo '}'"""


@pytest.mark.anyio
async def test_the_candidates_output_never_becomes_the_graders_verdict(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    box = await provider.create(spec)
    try:
        for name, body in PROGRAMS.items():
            await box.write_file(f"{box.workdir}/{name}", body + "\n")
        checks = [
            Check(
                "grader",
                f"bash {name}; {IN_PIECES.get(name, VERDICT_FALSE)}{AFTER_VERDICT.get(name, '')}",
            )
            for name in PROGRAMS
        ]
        honest = [
            Check("grader", """echo log line; echo '{"pass": true, "score": 0.5}'; echo done"""),
            Check("grader", "echo no json here"),
            Check("grader", "echo no json; exit 1"),
        ]
        results = await run_checks([*checks, *honest], Transcript([]), box)
        verdicts = [(r.passed, r.score) for r in results]
        assert [r.passed for r in results[:10]] == [False] * 10, results
        assert "2 disagreeing verdicts" in results[0].detail
        assert "2 disagreeing verdicts" in results[3].detail
        assert "cut in the middle" in results[4].detail
        assert "gives a key twice" in results[6].detail
        assert "does not parse" in results[7].detail
        assert "does not parse" in results[8].detail
        assert "does not parse" in results[9].detail
        assert verdicts[10:] == [(True, 0.5), (True, None), (False, None)], results
    finally:
        await box.close()

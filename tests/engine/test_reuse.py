"""Baseline reuse (issue 15, part 5): a baseline session is kept by everything it depends on
and reused by a later run of any version of the skill; an entry never crosses an input
change. The key is unit-tested by editing each input (and with hypothesis); end to end, a
second eval of an edited skill starts no baseline session."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillbench.cli import main
from skillbench.engine.reuse import SessionCache, arm_identity, cache_key, session_inputs
from skillbench.evals.model import Case
from skillbench.results.records import SessionRecord
from skillbench.sandbox.base import SandboxSpec
from tests.helpers import BASE, CAND, conv, run_eval, skill, write_file

BASE_ARGS = {
    "arm": "baseline",
    "agent": "builtin",
    "agent_version": "0.1.0",
    "agent_options": {},
    "model": "anthropic/claude-sonnet-4-6",
    "endpoint": "https://api.anthropic.com",
    "sandbox": SandboxSpec(image="img:1"),
    "rep": 1,
}


def case(tmp_path: Path, **fields: object) -> Case:
    fixture = tmp_path / "skill/evals/fixtures/seed"
    if not fixture.is_dir():
        fixture.mkdir(parents=True)
        (fixture / "data.txt").write_text("1,2,3\n")
    data = {
        "name": "sum",
        "path": str(tmp_path / "skill/evals/cases/sum.yaml"),
        "task": "Sum the numbers",
        "fixture": str(fixture),
        "setup": "true",
        "files": {"a.txt": "x"},
        **fields,
    }
    return msgspec.convert(data, Case)


def key(tmp_path: Path, c: Case, **changes: object) -> str:
    return cache_key(session_inputs(c, tmp_path / "skill", **{**BASE_ARGS, **changes}))  # type: ignore[arg-type]


def test_every_input_is_in_the_key(tmp_path: Path) -> None:
    c = case(tmp_path)
    first = key(tmp_path, c)
    assert key(tmp_path, case(tmp_path)) == first  # stable
    changed = {
        "task": key(tmp_path, case(tmp_path, task="Sum the numbers twice")),
        "checks": key(tmp_path, case(tmp_path, checks=[{"kind": "file_exists", "arg": "out.txt"}])),
        "setup": key(tmp_path, case(tmp_path, setup="touch x")),
        "files": key(tmp_path, case(tmp_path, files={"a.txt": "y"})),
        "max_turns": key(tmp_path, case(tmp_path, max_turns=7)),
        "arm": key(tmp_path, c, arm="incumbent sha256:abc"),
        "agent": key(tmp_path, c, agent="claude-code"),
        "agent_version": key(tmp_path, c, agent_version="2.1.333"),
        "agent_options": key(tmp_path, c, agent_options={"ambient_skills": "keep"}),
        "library": key(tmp_path, c, arm=arm_identity("baseline", None, "sha256:lib")),
        "model": key(tmp_path, c, model="anthropic/claude-opus-4-1"),
        # the same model name behind a stub server (make bench) is another session
        "endpoint": key(tmp_path, c, endpoint="http://127.0.0.1:8080"),
        "image": key(tmp_path, c, sandbox=SandboxSpec(image="img:2")),
        "memory": key(tmp_path, c, sandbox=SandboxSpec(image="img:1", memory="4g")),
        "rep": key(tmp_path, c, rep=2),
    }
    (tmp_path / "skill/evals/fixtures/seed/data.txt").write_text("1,2,4\n")  # one fixture byte
    changed["fixture"] = key(tmp_path, c)
    assert first not in changed.values()
    assert len(set(changed.values())) == len(changed)


def test_a_scripted_models_script_is_in_the_key(tmp_path: Path, monkeypatch) -> None:
    """An edited script is another model: its sessions are never served to the old one."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    monkeypatch.setenv("SKILLBENCH_SCRIPTS", str(scripts))
    (scripts / "mine.yaml").write_text("conversations: []\n")
    c = case(tmp_path)
    first = key(tmp_path, c, model="scripted/mine")
    assert key(tmp_path, c, model="scripted/mine") == first
    (scripts / "mine.yaml").write_text("conversations: [{steps: [{text: done}]}]\n")
    assert key(tmp_path, c, model="scripted/mine") != first


def test_the_case_files_location_is_not_an_input(tmp_path: Path) -> None:
    a = case(tmp_path)
    b = msgspec.structs.replace(a, path="/elsewhere/sum.yaml")
    assert key(tmp_path, a) == key(tmp_path, b)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["task", "setup", "model", "rep"]), st.text(max_size=8)),
        max_size=4,
    )
)
def test_reuse_never_returns_a_session_whose_inputs_differ(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, str]]
) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    cache = SessionCache(tmp / "cache")
    original = case(tmp)
    workspace = tmp / "workspace.tar"
    workspace.write_bytes(b"")
    cache.put(
        key(tmp, original),
        SessionRecord(key="k", session="sum", arm="baseline", rep=1, outcome="pass"),
        "run-0",
        None,
        workspace,
    )
    fields: dict[str, object] = {}
    args: dict[str, object] = {}
    for name, value in edits:
        if name in ("task", "setup"):
            fields[name] = "Sum the numbers" + value if name == "task" else "true" + value
        elif name == "model":
            args["model"] = "anthropic/m" + value
        else:
            args["rep"] = 1 + len(value)
    edited = case(tmp, **fields)
    same = msgspec.structs.replace(edited, path=original.path) == original and all(
        BASE_ARGS[k] == v for k, v in args.items()
    )
    hit = cache.get(key(tmp, edited, **args))
    assert (hit is not None) == same


def test_only_scored_sessions_with_their_workspace_are_kept(tmp_path: Path) -> None:
    cache = SessionCache(tmp_path / "cache")
    workspace = tmp_path / "workspace.tar"
    workspace.write_bytes(b"")
    for outcome in ("error", "skipped", "pass"):
        record = SessionRecord(key="k", session="s", arm="baseline", rep=1, outcome=outcome)
        cache.put(outcome, record, "run-0", None, workspace)
        cache.put(f"{outcome}-bare", record, "run-0", None, None)  # its checks can't run again
        assert cache.get(f"{outcome}-bare") is None
    assert cache.get("error") is None and cache.get("skipped") is None
    assert cache.get("pass") is not None


CASES = {
    "evals/cases/hello.yaml": "task: Create hello.txt\nchecks:\n  - file_exists: hello.txt\n",
    "evals/cases/bye.yaml": "task: Create bye.txt\nchecks:\n  - file_exists: bye.txt\n",
}


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_second_eval_of_an_edited_skill_starts_no_baseline_session(
    fake, tmp_path: Path, capsys
) -> None:
    folder = skill(tmp_path, CASES)
    server = fake(
        {
            "conversations": [
                conv(CAND, "Create hello", write_file("hello.txt", "hi\n"), {"text": "done"}),
                conv(CAND, "Create bye", write_file("bye.txt", "bye\n"), {"text": "done"}),
                conv(BASE, "Create", {"text": "I cannot."}),
            ]
        }
    )

    def baseline_calls() -> int:
        return sum("No skills are available" in json.dumps(r.body) for r in server.log())

    code, _, first = run_eval(capsys, folder, tmp_path / "run1", "--execution-only")
    assert code == 3 and first["reused"] is None and baseline_calls() == 2  # 2 units
    # edit the skill: a new version, the same cases
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\nBe warm.\n")
    code, lines, second = run_eval(capsys, folder, tmp_path / "run2", "--execution-only")
    assert code == 3
    assert baseline_calls() == 2  # no baseline session ran again
    assert second["reused"] == {"sessions": 2, "of": 2, "runs": [first["run_id"]]}
    assert (
        f"baseline: 2 of 2 sessions reused from run {first['run_id']} (--fresh-baseline "
        "reruns them)"
    ) in lines
    assert [r["outcome"] for r in second["rows"]] == [r["outcome"] for r in first["rows"]]
    receipt = json.loads((tmp_path / "run2/receipt.json").read_text())
    assert receipt["reused"]["sessions"] == 2
    assert receipt["digest"] == second["version"] != first["version"]  # another version
    # the transcripts the judge and a reader need are in the new run folder
    assert (tmp_path / "run2/transcripts/hello.baseline.1.jsonl").is_file()
    # a reused session cost this run nothing; the candidate's calls still count
    journal = [json.loads(x) for x in (tmp_path / "run2/journal.jsonl").read_text().splitlines()]
    reused = [j for j in journal if j.get("reused_from")]
    assert {j["arm"] for j in reused} == {"baseline"} and len(reused) == 2
    # what changed between the two versions, and the PR comment of the second
    assert main(["compare", str(tmp_path / "run1"), str(tmp_path / "run2")]) == 0
    compared = capsys.readouterr().out.splitlines()
    assert compared[2:4] == [
        "verdict: INCONCLUSIVE -> INCONCLUSIVE",
        "rows: 0 changed, 2 the same",
    ]
    assert main(["report", str(tmp_path / "run2"), "--format", "markdown"]) == 0
    assert "#### Wins and losses (2 of 2)" in capsys.readouterr().out
    # editing a case's task is another input: that case's baseline runs again, the other not
    (folder / "evals/cases/bye.yaml").write_text(
        CASES["evals/cases/bye.yaml"].replace("Create bye.txt", "Create bye.txt now")
    )
    code, _, third = run_eval(capsys, folder, tmp_path / "run3", "--execution-only")
    assert baseline_calls() == 3 and third["reused"]["sessions"] == 1
    # --fresh-baseline runs every baseline session again
    code, _, fourth = run_eval(
        capsys, folder, tmp_path / "run4", "--execution-only", "--fresh-baseline"
    )
    assert baseline_calls() == 5 and fourth["reused"] is None


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_aa_runs_two_baselines_and_reports_their_flip_rate(fake, tmp_path: Path, capsys) -> None:
    folder = skill(
        tmp_path,
        {
            "evals/cases/hello.yaml": "task: Say hello\nchecks:\n  - transcript_mentions: hello\n",
            "evals/cases/bye.yaml": "task: Say bye\nchecks:\n  - transcript_mentions: bye\n",
        },
    )
    # with --parallel 1 the sessions run in plan order (baseline, candidate, baseline-b per
    # case), and a rule's replies are used in turn: the two baselines differ on hello only
    fake(
        {
            "rules": [
                {"when": "Say hello", "replies": ["hello there", "hello!", "I cannot."]},
                {"when": "Say bye", "replies": ["bye", "bye!", "bye now"]},
            ]
        }
    )
    code, lines, summary = run_eval(
        capsys, folder, tmp_path / "run", "--execution-only", "--aa", "--parallel", "1"
    )
    assert code == 3  # two units: INCONCLUSIVE
    assert summary["noise_floor"] == {"flips": 1, "compared": 2, "flip_rate": 0.5}
    assert (
        "noise floor (A/A): the two baseline arms differ on 1 of 2 comparisons (50%): a "
        "lift must clear it"
    ) in lines
    # the twin is not an opponent: the verdict still compares the candidate with the baseline
    assert {r["opponent"] for r in summary["rows"]} == {"baseline"}
    receipt = json.loads((tmp_path / "run/receipt.json").read_text())
    assert receipt["noise_floor"]["flip_rate"] == 0.5
    plan = json.loads((tmp_path / "run/plan.json").read_text())
    assert plan["arms"] == ["baseline", "candidate", "baseline-b"]

"""Attacks on the gate's trust anchors: settings a skill carries, hostile receipts, floors a
receipt names, and endpoints reached through a proxy or a custom CA."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillbench.cli import main
from skillbench.config import load_settings
from skillbench.results.records import Unit
from skillbench.results.score import derive
from skillbench.results.summary import RowSummary
from tests.helpers import make_skill
from tests.security.test_receipt_trust import (
    STRICTEST,
    commit,
    g1_receipt,
    gate,
    git_identity,  # noqa: F401  (autouse fixture)
    greeter,
    keypair,
    publish,
    team_repo,
    trust,
)


def forged(skill: Path, letters: str = "WWWWWW", floor: float | None = None) -> dict:
    """test_receipt_trust's G1 forgery made consistent (its stats derived from its rows, W
    win, T tie, one unit each): passes unless signatures count."""
    body = g1_receipt(skill)
    rows = [
        {
            "case": f"c{i}",
            "rep": 1,
            "opponent": "baseline",
            "outcome": "win" if letter == "W" else "tie",
            "decided_by": "checks",
            "arms": {
                "candidate": {"passed": letter == "W", "error": False, "checks": []},
                "baseline": {"passed": False, "error": False, "checks": []},
            },
        }
        for i, letter in enumerate(letters, 1)
    ]
    body["schema_version"] = 4
    body["rows"] = rows
    p = body["provenance"]
    p["opponents"] = ["baseline"]
    p["units"] = [{"name": f"c{i}", "session": f"c{i}"} for i in range(1, len(letters) + 1)]
    if floor is not None:
        p["min_net_lift"] = floor
    provider = {"url": "https://api.anthropic.com", "provider": True}
    p["endpoints"] = {"agent": provider, "judge": provider}
    found = derive(
        msgspec.convert(rows, list[RowSummary]),
        opponents=p["opponents"],
        units=msgspec.convert(p["units"], list[Unit]),
        k=1,
        seed=1,
        **({"min_net_lift": floor} if floor is not None else {}),
    )
    body["verdict"] = found.verdict
    body["scored_rows"] = body["expected_rows"] = len(letters)
    body["stats"] = msgspec.to_builtins(found.power)
    body["comparisons"] = msgspec.to_builtins(found.comparisons)
    return body


@pytest.mark.parametrize("where", ["skill", "library", "pyproject-in-skill"])
def test_g1_a_config_carried_by_the_skill_cannot_lift_require_signed(
    tmp_path: Path, capsys, where: str
) -> None:
    """On 5251af6 a skillbench.toml beside the skill (lib/) or inside it set
    `require-signed = false` and the unsigned forgery passed a team with allowed_signers."""
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    hostile = "[gate]\nrequire-signed = false\n"
    planted = {
        "skill": skill / "skillbench.toml",
        "library": skill.parent / "skillbench.toml",
        "pyproject-in-skill": skill / "pyproject.toml",
    }[where]
    if where == "pyproject-in-skill":
        hostile = "[tool.skillbench.gate]\nrequire-signed = false\n"
    planted.write_text(hostile)  # shipped with the skill: part of the bytes measured
    assert publish(capsys, skill, repo)[0] == 0
    commit(repo, "evals/greeter/v1/forged.json", forged(skill))
    trust(repo, "ci@team", keypair(tmp_path, "ci"))
    capsys.readouterr()
    code = main(["gate", str(skill), "--team", str(repo), *STRICTEST])
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "is not signed" in captured.out
    assert f"skillbench: ignoring {planted}: settings never come from a skill, the folder " in (
        captured.err
    )


def test_g1_a_packs_config_two_levels_above_the_skill_is_not_the_users(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 2bba125 a downloaded pack laid out as pack/skills/greeter with pack/skillbench.toml
    set `require-signed = false` (and zeroed the prices) for a user running
    `skillbench gate pack/skills/greeter` from their own folder: settings come from the folder
    the command runs in and above it, never from a tree that holds the skill but not the user."""
    repo = team_repo(tmp_path)
    skill = make_skill(
        tmp_path / "downloads/pack/skills",
        "greeter",
        {"evals/cases/a.yaml": "task: Task a\nchecks:\n  - file_exists: a\n"},
        description="Greets people politely.",
    )
    planted = tmp_path / "downloads/pack/skillbench.toml"
    planted.write_text(
        '[gate]\nrequire-signed = false\n[prices."anthropic/claude-sonnet-4-6"]\n'
        "input = 0.0\noutput = 0.0\n"
    )
    user = tmp_path / "work"
    user.mkdir()
    (user / "skillbench.toml").write_text("parallel = 2\n")  # the user's own: kept
    monkeypatch.chdir(user)
    assert publish(capsys, skill, repo)[0] == 0
    commit(repo, "evals/greeter/v1/forged.json", forged(skill))
    trust(repo, "ci@team", keypair(tmp_path, "ci"))
    capsys.readouterr()
    code = main(["gate", str(skill), "--team", str(repo), *STRICTEST])
    captured = capsys.readouterr()
    assert code == 1 and "is not signed" in captured.out, captured
    assert f"skillbench: ignoring {planted}: " in captured.err
    assert main(["config", str(skill)]) == 0
    out = capsys.readouterr().out
    assert "prices = {}    (default)" in out
    assert f"parallel = 2    ({user / 'skillbench.toml'})" in out
    # run from inside the pack, the pack is where the user is: its file counts (their choice),
    # but it prices no model reached at its provider's own API (--max-cost counts by it)
    monkeypatch.chdir(tmp_path / "downloads/pack")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert main(["config", "skills/greeter"]) == 0
    captured = capsys.readouterr()
    assert "prices = {}    (" in captured.out
    assert f"ignoring [prices] anthropic/claude-sonnet-4-6 in {planted}" in captured.err


def test_c1_c3_a_skill_carried_config_sets_no_price_cluster_or_cap(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 5251af6 `skillbench config lib/greeter` took prices, a cluster address and the
    sandbox caps from a skillbench.toml beside the skill."""
    skill = greeter(tmp_path)
    (skill.parent / "skillbench.toml").write_text(
        'memory = "1100g"\npids = 100000\n[sandbox]\ntmp = "500g"\n'
        '[cluster]\naddress = "ray://198.51.100.7:10001"\n'
        '[prices."anthropic/claude-sonnet-4-6"]\ninput = 0.0\noutput = 0.0\n'
    )
    (tmp_path / "skillbench.toml").write_text("parallel = 2\n")  # the project's, kept
    monkeypatch.chdir(tmp_path)
    assert main(["config", str(skill)]) == 0
    out = capsys.readouterr().out
    assert "memory = '2g'    (default)" in out
    assert "pids = 512    (default)" in out
    assert "198.51.100.7" not in out and "1100g" not in out and "500g" not in out
    assert "prices = {}    (default)" in out
    assert f"parallel = 2    ({tmp_path / 'skillbench.toml'})" in out


def test_c1_c3_a_packs_own_project_file_sets_no_cluster_no_cut_price_no_host_sized_cap(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside review: `git clone pack && cd pack && skillbench eval skills/greeter` read
    pack/skillbench.toml as the user's project file, and it set prices of 0, a Ray cluster
    address and 1.1 TB sandboxes. The folder the user runs in is theirs, but it never picks
    the cluster, a price under the list price, or limits larger than the machine."""
    make_skill(
        tmp_path / "pack/skills",
        "greeter",
        {"evals/cases/a.yaml": "task: Task a\nchecks:\n  - file_exists: a\n"},
        description="Greets people politely.",
    )
    planted = tmp_path / "pack/skillbench.toml"
    monkeypatch.chdir(tmp_path / "pack")
    monkeypatch.setenv("PWD", str(tmp_path / "pack"))
    planted.write_text('parallel = 2\n[cluster]\naddress = "ray://198.51.100.7:10001"\n')
    assert main(["config", "skills/greeter"]) == 0
    captured = capsys.readouterr()
    assert "198.51.100.7" not in captured.out
    assert f"parallel = 2    ({planted})" in captured.out  # the rest of the file counts
    assert f"ignoring [cluster] address in {planted}" in captured.err
    # fifth review: nor from a command that names no skill (`cd pack && skillbench cluster
    # prepare` connected to the pack's Ray head): the pack's root holds its skills/
    assert load_settings(tmp_path / "pack").settings.cluster.address is None
    capsys.readouterr()
    # fifth review: the pack lowered the floor a PASS needs (5 wins in 50 passed); it may
    # raise it, never lower it
    planted.write_text("min-net-lift = 0.0\n")
    assert main(["config", "skills/greeter"]) == 0
    captured = capsys.readouterr()
    assert "min_net_lift = 0.2    (default)" in captured.out
    assert f"ignoring min-net-lift in {planted}" in captured.err
    planted.write_text("min-net-lift = 0.5\n")
    assert main(["config", "skills/greeter"]) == 0
    assert f"min_net_lift = 0.5    ({planted})" in capsys.readouterr().out
    # sixth review: `cluster prepare` takes the head from its flag only (a pack's skills may
    # sit in .claude/skills/, where no layout rule looks)
    planted.write_text('[cluster]\naddress = "ray://127.0.0.1:9"\n')
    assert main(["cluster", "prepare"]) == 2
    assert "cluster prepare needs --cluster ADDRESS" in capsys.readouterr().err
    # OpenAI's models at a local server (their prices this file may set), Anthropic's at its API
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    for body, said in (
        ('memory = "1100g"\n', "a sandbox, more than this machine's memory"),
        ('[sandbox]\ntmp = "500g"\n', "a sandbox, more than this machine's memory"),
        # second review: podman reads a memory limit of 0 as none; NaN and negative prices
        # compare false with every ceiling or spend money back
        ('memory = "0"\n', "memory = '0' is under 1m"),
        ('[prices."openai/my-model"]\ninput = nan\noutput = nan\n', "0 or more"),
        ('[prices."openai/my-model"]\ninput = -1000000.0\noutput = 1.0\n', "0 or more"),
        ("pids = 100000\n", "pids must be between 1 and 32768"),
        # fifth review: podman reads 0 CPUs as no limit; retries and timeouts unbounded
        ("cpus = 0.0\n", "at least 0.01 and at most this machine's"),
        ("cpus = 512.0\n", "at least 0.01 and at most this machine's"),
        ("cpus = -1.0\n", "at least 0.01 and at most this machine's"),
        ("cpus = 1e-10\n", "at least 0.01 and at most this machine's"),  # (0 nano-CPUs)
        ("max_retries = 1000000\n", "max_retries must be between 0 and 20"),
        ("request_timeout = 1e9\n", "request_timeout must be more than 0"),
        ('[prices."openai/gpt-5"]\ninput = 1.25\noutput = 10.0\ncache_read = 0.0\n', "below"),
    ):
        planted.write_text(body)
        assert main(["config", "skills/greeter"]) == 2, body
        assert said in capsys.readouterr().err, body
    # third review: a model at its provider's own API that the table does not list (Claude 3
    # Opus) priced at nothing by a provider-wide key, so --max-cost counted none of it
    planted.write_text(
        'judge-model = "anthropic/claude-3-opus-20240229"\n[prices."anthropic/"]\n'
        'input = 0.0\noutput = 0.0\n[prices."openai/my-local-model"]\ninput = 0.0\noutput = 0.0\n'
    )
    assert main(["config", "skills/greeter"]) == 0
    captured = capsys.readouterr()
    assert f"ignoring [prices] anthropic/ in {planted}" in captured.err
    assert "openai/my-local-model" in captured.out and "anthropic/'" not in captured.out
    # fourth review: behind a gateway (or a proxy, or a custom CA) the provider still bills
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://llm-gateway.example/anthropic")
    planted.write_text('[prices."anthropic/claude-3-opus-20240229"]\ninput = 0.0\noutput = 0.0\n')
    assert main(["config", "skills/greeter"]) == 0
    said = capsys.readouterr().err
    assert f"ignoring [prices] anthropic/claude-3-opus-20240229 in {planted}" in said


def test_rb5_the_floor_is_the_policys_not_the_receipts(tmp_path: Path, capsys) -> None:
    """On 5251af6 a receipt naming its own min_net_lift = -5 re-derived as PASS (5 wins in
    30 units: net lift 0.17, under the 0.2 floor) and passed `--require PASS`."""
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    assert publish(capsys, skill, repo)[0] == 0
    commit(repo, "evals/greeter/v1/forged.json", forged(skill, "W" * 5 + "T" * 25, floor=-5))
    code = main(["gate", str(skill), "--team", str(repo), "--require", "PASS"])
    out = capsys.readouterr().out.strip()
    assert (code, out) == (
        1,
        "gate refused: greeter: verdict vs baseline is NEUTRAL under the policy's "
        "min-net-lift 0.2 (policy requires PASS)",
    )
    # the team may set its own floor; the receipt's is still not it
    commit(repo, "pyproject.toml", "[tool.skillbench.gate]\nmin-net-lift = 0.1\n")
    code = main(["gate", str(skill), "--team", str(repo), "--require", "PASS"])
    assert code == 0, capsys.readouterr().out


HOSTILE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
# where the gate reads into a receipt past its top-level type
SPOTS = [
    ("stats",),
    ("stats", "baseline"),
    ("stats", "baseline", "decided"),
    ("stats", "baseline", "underpowered"),
    ("triggers",),
    ("triggers", "recall"),
    ("triggers", "method"),
    ("triggers", "invalid"),
    ("comparisons", "baseline"),
    ("rows", 0),
    ("rows", 0, "arms"),
    ("provenance", "units"),
    ("provenance", "units", 0),
    ("provenance", "opponents"),
    ("provenance", "k"),
    ("provenance", "endpoints"),
    ("models",),
    ("driver",),
]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(spot=st.sampled_from(SPOTS), value=HOSTILE)
def test_hostile_receipts_are_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, spot: tuple, value: object
) -> None:
    """On a73b1f8 hostile values in a receipt gave the gate tracebacks (KeyError,
    AttributeError, TypeError)."""
    tmp_path = tmp_path_factory.mktemp("hostile")
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    body = forged(skill)
    body["triggers"] = {"method": "agent claude-code", "recall": 1.0, "precision": 1.0}
    where: Any = body
    for key in spot[:-1]:
        where = where[key]
    where[spot[-1]] = value
    target = repo / "evals/greeter/v1/forged.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(body))
    # In-process (a subprocess per example made this the slowest unit test): an exception
    # that is not a SkillbenchError leaves main() and fails the test as a traceback would.
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["gate", str(skill), "--team", str(repo), *STRICTEST])
    said = (stdout.getvalue() + stderr.getvalue()).strip().splitlines()
    lines = [line for line in said if not line.startswith("skillbench: note:")]  # on a pass
    assert "Traceback" not in stderr.getvalue(), stderr.getvalue()[-1500:]
    assert code in (0, 1, 2) and len(lines) == 1, lines


def test_a_malformed_team_receipt_is_refused_naming_the_file(tmp_path: Path, capsys) -> None:
    """On a73b1f8 a receipt file that did not parse was skipped, so corrupting the newer FAIL
    left the older PASS newest and the gate passed."""
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    assert publish(capsys, skill, repo)[0] == 0
    commit(repo, "evals/greeter/v1/forged.json", forged(skill))
    assert gate(capsys, skill, repo)[0] == 0
    commit(repo, "evals/greeter/v1/newer-fail.json", '{"schema_version": 4, "verdict": "FAIL"')
    code = main(["gate", str(skill), "--team", str(repo)])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1, (captured.out, err)
    assert err[0].startswith(f"skillbench: error: {repo / 'evals/greeter/v1/newer-fail.json'}: "), (
        err
    )


def test_the_default_limits_run_on_a_small_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the machine check holds a file's or a flag's choice, never the defaults (max_memory 8g
    # and the tmpfs caps add up past a 4 GB machine's memory)
    import skillbench.config as config

    monkeypatch.setattr(config, "machine_memory", lambda: 4 << 30)
    monkeypatch.chdir(tmp_path)
    assert config.load_settings(tmp_path).settings.max_memory == "8g"
    (tmp_path / "skillbench.toml").write_text('memory = "1g"\n')
    assert config.load_settings(tmp_path).settings.memory == "1g"
    (tmp_path / "skillbench.toml").write_text('memory = "3g"\n[sandbox]\ndisk = "2g"\n')
    with pytest.raises(config.ConfigError, match=r"memory with sandbox\.disk, home and tmp"):
        config.load_settings(tmp_path)


@pytest.mark.parametrize(
    "library",
    [
        "skills",
        ".claude/skills",
        "plugins/tools/skills",
        # eighth review: other agents' homes, plugin folders deeper down, grouped skills
        ".github/skills",
        ".claude/plugins/x/skills",
        "skills/group",
        # tenth review: a pack keeping its skills more than six levels down
        "a/b/c/d/e/f/g/skills",
    ],
)
def test_c1_c2_a_packs_file_sets_no_cluster_or_floor_for_a_skill_outside_the_pack(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, library: str
) -> None:
    """Seventh review: `cd pack && skillbench eval ../mine/bar` took the pack's Ray head
    and its floor of 0, as the skill under test was not the pack's; and a pack keeping its
    skills in .claude/skills/ was no pack at all for a command that names no skill."""
    make_skill(tmp_path / "pack" / library, "greeter", {}, description="Greets people politely.")
    mine = make_skill(tmp_path / "mine", "bar", {}, description="Bars things.")
    planted = tmp_path / "pack/skillbench.toml"
    planted.write_text('min-net-lift = 0.0\n[cluster]\naddress = "ray://198.51.100.7:10001"\n')
    monkeypatch.chdir(tmp_path / "pack")
    monkeypatch.setenv("PWD", str(tmp_path / "pack"))
    for start in (mine, tmp_path / "pack"):
        loaded = load_settings(start)
        assert loaded.settings.cluster.address is None, start
        assert loaded.settings.min_net_lift == 0.2, start
        said = capsys.readouterr().err
        assert f"ignoring [cluster] address in {planted}" in said, start
        assert f"ignoring min-net-lift in {planted}" in said, start
    # nor the image every sandbox and check runs in (`cd pack && skillbench image build`), or
    # which provider runs them
    planted.write_text(
        'image-from-registry = "registry.example/evil@sha256:' + "0" * 64 + '"\n'
        '[sandbox]\nprovider = "ssh"\n'
    )
    loaded = load_settings(tmp_path / "pack")
    assert loaded.settings.image_from_registry is None
    assert loaded.settings.sandbox.provider == "podman"
    said = capsys.readouterr().err
    assert f"ignoring image-from-registry in {planted}" in said
    assert f"ignoring [sandbox] provider in {planted}" in said
    # tenth review: nor which team repo's policy, keys and receipts gate
    planted.write_text('team = "fake-team"\n')
    for start in (mine, tmp_path / "pack"):
        assert load_settings(start).settings.team is None, start
        assert f"ignoring team in {planted}" in capsys.readouterr().err, start


def test_a_pack_whose_skills_folder_links_out_of_it_is_a_pack(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eleventh review: an archive unpacking to pack/ (its file) and pack-data/ (its skills,
    linked from pack/skills) was no pack: the walk followed no link, and the skill named
    through the link resolved outside the pack. Its [gate] then overrode the team's policy
    in full, and its cluster, floor and image counted."""
    make_skill(tmp_path / "pack-data/skills", "greeter", {}, description="Greets people.")
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack/skills").symlink_to("../pack-data/skills")
    mine = make_skill(tmp_path / "mine", "bar", {}, description="Bars things.")
    planted = tmp_path / "pack/skillbench.toml"
    planted.write_text('min-net-lift = 0.0\n[cluster]\naddress = "ray://198.51.100.7:10001"\n')
    monkeypatch.chdir(tmp_path / "pack")
    monkeypatch.setenv("PWD", str(tmp_path / "pack"))
    for start in (Path("skills/greeter"), mine):
        loaded = load_settings(start)
        assert loaded.measured, start
        assert loaded.settings.cluster.address is None and loaded.settings.min_net_lift == 0.2
        assert f"ignoring min-net-lift in {planted}" in capsys.readouterr().err, start


def test_g1_a_packs_gate_table_only_tightens_the_teams_policy(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tenth review: outside CI the local [gate] sits over the team's policy, and a pack's
    root file was local to a user running from inside it (`cd pack && skillbench gate
    skills/greeter --team TEAM`): `require-signed = false` and `require = "NEUTRAL"` passed an
    unsigned NEUTRAL receipt the team refuses. A pack's [gate] may only ask more."""
    from tests.helpers import engine_receipt

    repo = team_repo(tmp_path)
    (repo / "pyproject.toml").write_text('[tool.skillbench.gate]\nrequire = "PASS"\n')
    trust(repo, "ci@team", keypair(tmp_path, "ci"))
    pack = tmp_path / "pack"
    skill = make_skill(pack / "skills", "greeter", {}, description="Greets people politely.")
    engine_receipt(skill, "run-laptop", {"baseline": "WWWLLTT"})  # NEUTRAL, unsigned
    monkeypatch.chdir(pack)
    monkeypatch.setenv("PWD", str(pack))
    argv = ["gate", "skills/greeter", "--team", str(repo)]
    for relax in (
        '[gate]\nrequire-signed = false\nrequire = "NEUTRAL"\n',
        "[gate]\nrequire-signed = false\nmin-net-lift = 0.0\nallow-partial = true\n",
    ):
        (pack / "skillbench.toml").write_text(relax)
        assert main(argv) == 1, relax
        assert "gate refused" in capsys.readouterr().out, relax
    # asking more counts: a pack's file may require an agent the team does not
    (repo / "pyproject.toml").write_text('[tool.skillbench.gate]\nrequire = "NEUTRAL"\n')
    (repo / ".skillbench/allowed_signers").unlink()
    (pack / "skillbench.toml").write_text('[gate]\nrequire-agent = "claude-code"\n')
    assert main(argv) == 1
    assert "policy requires claude-code" in capsys.readouterr().out
    (pack / "skillbench.toml").unlink()
    assert main(argv) == 0, capsys.readouterr()

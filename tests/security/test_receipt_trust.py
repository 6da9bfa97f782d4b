"""Receipts that can be verified (issue 21, parts 1 and 2; docs/trust.md).

G1: a receipt written by hand and committed to the team repo passed the strictest gate. Now a
receipt is re-derived from its rows, may carry an SSH signature that `ssh-keygen -Y verify`
checks with no skillbench in the loop, and records the endpoint each model was reached at;
the gate refuses what is unsigned (under require-signed), edited, dated in the future, or
measured against a local or stub server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import msgspec
import pytest

from skillbench.cli import main
from skillbench.evals.skills import digest
from skillbench.models import Endpoint, endpoint
from skillbench.results.records import Unit
from skillbench.results.score import derive
from skillbench.results.summary import RowSummary
from skillbench.team.receipts import bundle_digest, store_dir
from tests.helpers import BASE, CAND, MODEL, conv, engine_receipt, make_skill, write_file

STRICTEST = (
    *("--require", "PASS", "--require-power", "--trigger-method", "agent"),
    *("--min-recall", "1", "--min-precision", "1"),
)


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(key, "skillbench tests")
    for key in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(key, "tests@skillbench.invalid")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def team_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "team"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README.md").write_text("team skills\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def greeter(tmp_path: Path) -> Path:
    return make_skill(
        tmp_path / "lib",
        "greeter",
        {"evals/cases/a.yaml": "task: Task a\nchecks:\n  - file_exists: a\n"},
        description="Greets people politely.",
    )


def keypair(tmp_path: Path, name: str) -> Path:
    """An ed25519 key made by ssh-keygen, no passphrase: the private key's path."""
    key = tmp_path / "keys" / name
    key.parent.mkdir(exist_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True
    )
    return key


def trust(repo: Path, principal: str, key: Path) -> None:
    """Commit .skillbench/allowed_signers (git's format) naming `key` as `principal`."""
    folder = repo / ".skillbench"
    folder.mkdir(exist_ok=True)
    pub = key.with_suffix(".pub").read_text().strip()
    (folder / "allowed_signers").write_text(f'{principal} namespaces="skillbench-receipt" {pub}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "trust the CI key")


def commit(repo: Path, rel: str, data: dict | str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"edit {rel}")


def publish(capsys, skill: Path, repo: Path, *flags: str) -> tuple[int, str]:
    code = main(["publish", str(skill), "--team", str(repo), *flags])
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).strip()


def gate(capsys, skill: Path, repo: Path | None, *flags: str) -> tuple[int, str]:
    code = main(["gate", str(skill), *(["--team", str(repo)] if repo else []), *flags])
    return code, capsys.readouterr().out.strip()


def verify_with_ssh_keygen(receipt_file: Path, signers: Path, principal: str) -> str:
    """`ssh-keygen -Y verify` on a receipt, with only the standard library and ssh-keygen:
    the signed bytes are the receipt without `signature`, as json.dumps writes it sorted and
    compact (the recipe in docs/ci.md)."""
    body = json.loads(receipt_file.read_text())
    signature = body.pop("signature")
    message = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    sig = receipt_file.with_suffix(".sig")
    sig.write_text(signature)
    done = subprocess.run(
        [
            *("ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", principal),
            *("-n", "skillbench-receipt", "-s", str(sig)),
        ],
        input=message.encode(),
        capture_output=True,
    )
    return done.stdout.decode() + done.stderr.decode()


# G1 as it was committed: every field the gate read says PASS, nothing backs it
def g1_receipt(skill: Path) -> dict:
    return {
        "schema_version": 2,
        "skill": "greeter",
        "digest": digest(skill),
        "run_id": "forged",
        "verdict": "PASS",
        "why": "wins on execution checks",
        "expected_rows": 6,
        "scored_rows": 6,
        "complete": True,
        "agent": "claude-code",
        "agent_version": "2.1.332",
        "models": {"agent": MODEL, "judge": MODEL},
        "driver": "model",
        "comparisons": {
            "baseline": {"win": 6, "loss": 0, "tie": 0, "net_lift": 1.0, "sign_p": 0.03125}
        },
        "stats": {"baseline": {"decided": 6, "needed": 6, "underpowered": False}},
        "rows": [],
        "triggers": {"method": "agent claude-code", "recall": 1.0, "precision": 1.0},
        "efficiency": {},
        "provenance": {
            "engine_version": "0.1.0",
            "models": {"agent": MODEL},
            "k": 1,
            "seed": 1,
            "arms": {},
            "created_at": "2026-11-30T09:00:00+00:00",
        },
    }


def test_g1_a_hand_written_receipt_no_longer_passes_the_strictest_gate(
    tmp_path: Path, capsys
) -> None:
    """On d0eeb6b this receipt passed the gate below ("gate passed: greeter: PASS (run
    forged, 6/6 rows scored)"): the gate believed whatever the JSON said."""
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    assert publish(capsys, skill, repo)[0] == 0
    commit(repo, "evals/greeter/v1/forged.json", g1_receipt(skill))
    code, out = gate(capsys, skill, repo, *STRICTEST)
    assert (code, out) == (
        1,
        "gate refused: greeter: the newest measured receipt (run forged) was written by an "
        "older skillbench (receipt schema 2), before receipts could be re-derived; run the "
        "eval again",
    )

    # the same forgery brought up to date: rows made up to match the counts it claims
    forged = g1_receipt(skill)
    rows = [
        {
            "case": f"c{i}",
            "rep": 1,
            "opponent": "baseline",
            "outcome": "win",
            "decided_by": "checks",
            "arms": {
                "candidate": {"passed": True, "error": False, "checks": []},
                "baseline": {"passed": False, "error": False, "checks": []},
            },
        }
        for i in range(1, 7)
    ]
    forged["schema_version"] = 4
    forged["rows"] = rows
    forged["provenance"]["opponents"] = ["baseline"]
    forged["provenance"]["units"] = [{"name": f"c{i}", "session": f"c{i}"} for i in range(1, 7)]
    provider = {"url": "https://api.anthropic.com", "provider": True}
    forged["provenance"]["endpoints"] = {"agent": provider, "judge": provider}
    commit(repo, "evals/greeter/v1/forged.json", forged)
    code, out = gate(capsys, skill, repo, *STRICTEST)
    assert (code, out) == (
        1,
        "gate refused: greeter: the newest measured receipt (run forged) its counts vs baseline "
        "(6W/0L/0T, net lift 1.0, p=0.03125) do not follow from its rows (6W/0L/0T, net lift "
        "1.0, p=0.015625)",  # the forger's p is the old two-sided one; units give 1/64
    )

    # a forger who runs skillbench's own rule over the made-up rows gets stats that follow
    # from them: re-deriving alone cannot tell, which is what signatures are for
    p = forged["provenance"]
    found = derive(
        msgspec.convert(rows, list[RowSummary]),
        opponents=p["opponents"],
        units=msgspec.convert(p["units"], list[Unit]),
        k=1,
        seed=1,
    )
    forged["stats"] = msgspec.to_builtins(found.power)
    forged["comparisons"] = msgspec.to_builtins(found.comparisons)  # (with its units)
    commit(repo, "evals/greeter/v1/forged.json", forged)
    assert gate(capsys, skill, repo, *STRICTEST)[0] == 0

    # with an allowed_signers file in the team repo only a signed receipt counts, however
    # well made the forgery is
    trust(repo, "ci@team", keypair(tmp_path, "ci"))
    code, out = gate(capsys, skill, repo, *STRICTEST)
    assert (code, out) == (
        1,
        f"gate refused: greeter: no receipt for {digest(skill)[:19]} is signed by a key in "
        ".skillbench/allowed_signers: the newest measured (run forged) is not signed; receipts "
        "made on a laptop are advisory, sign them in CI (docs/ci.md)",
    )


def test_a_signed_receipt_verifies_with_ssh_keygen_alone_and_passes_the_gate(
    tmp_path: Path, capsys
) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    ci = keypair(tmp_path, "ci")
    trust(repo, "ci@team", ci)
    run = engine_receipt(skill, "run-1", {"baseline": "WWWWW"})  # unsigned, as on a laptop
    code, out = gate(capsys, skill, repo)  # require-signed is the default with the file
    assert code == 1 and "the newest measured (run run-1) is not signed" in out

    code, said = publish(capsys, skill, repo, "--sign-key", str(ci))
    assert code == 0 and "1 receipt(s), 1 signed" in said
    published = repo / "evals/greeter/v1/run-1.json"
    signers = repo / ".skillbench/allowed_signers"
    said = verify_with_ssh_keygen(published, signers, "ci@team")
    assert 'Good "skillbench-receipt" signature for ci@team with ED25519 key' in said
    # the run's own copy stays as it was made
    assert json.loads((run / "receipt.json").read_text())["signature"] is None
    assert gate(capsys, skill, repo) == (
        0,
        "gate passed: greeter: PASS (run run-1, 5/5 rows scored, signed by ci@team)",
    )
    # a key the team does not list does not count, even on a well-formed receipt
    other = keypair(tmp_path, "laptop")
    engine_receipt(
        skill, "run-2", {"baseline": "WWWWW"}, created="2026-11-29T11:00:00+00:00", sign_key=other
    )
    assert gate(capsys, skill, repo)[1].endswith("(run run-1, 5/5 rows scored, signed by ci@team)")
    code, out = gate(capsys, skill, repo, "--require", "PASS", "--no-require-signed")
    assert (code, out) == (0, "gate passed: greeter: PASS (run run-2, 5/5 rows scored)")


def signed_team(capsys, tmp_path: Path, rows: str) -> tuple[Path, Path, Path]:
    """A team repo trusting ci@team, holding one receipt signed by it: (repo, skill, the
    receipt file)."""
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    ci = keypair(tmp_path, "ci")
    trust(repo, "ci@team", ci)
    engine_receipt(skill, "run-1", {"baseline": rows}, sign_key=ci)
    assert publish(capsys, skill, repo)[0] == 0
    shutil.rmtree(store_dir("greeter", digest(skill)))  # the gate in CI has only the repo
    return repo, skill, repo / "evals/greeter/v1/run-1.json"


@pytest.mark.parametrize(
    ("edit", "unsigned_reason"),
    [
        (
            lambda r: r.update(verdict="PASS"),
            "its verdict PASS does not follow from its rows (they give FAIL)",
        ),
        (
            lambda r: r["rows"][5].update(outcome="loss"),
            "its counts vs baseline (0W/5L/1T, net lift -0.8333333333333334, p=0.03125) do not "
            "follow from its rows (0W/6L/0T, net lift -1.0, p=0.015625)",
        ),
        (
            lambda r: r["provenance"].update(created_at="2027-06-01T00:00:00+00:00"),
            "its created_at 2027-06-01T00:00:00+00:00 is in the future",
        ),
    ],
    ids=["verdict-flipped", "row-changed", "dated-in-the-future"],
)
def test_a_hand_edited_signed_receipt_is_refused(
    tmp_path: Path, capsys, edit, unsigned_reason: str
) -> None:
    repo, skill, published = signed_team(capsys, tmp_path, "LLLLLT")
    code, out = gate(capsys, skill, repo)
    assert (code, out) == (
        1,
        "gate refused: greeter: verdict vs baseline is FAIL (policy requires NEUTRAL)",
    )
    receipt = json.loads(published.read_text())
    edit(receipt)
    commit(repo, "evals/greeter/v1/run-1.json", receipt)
    code, out = gate(capsys, skill, repo)
    assert code == 1
    assert out.endswith(
        "the newest measured (run run-1) its signature (by ci@team) does not verify: the "
        "receipt was changed after it was signed; receipts made on a laptop are advisory, "
        "sign them in CI (docs/ci.md)"
    )
    # without signatures the edit is still caught: it does not follow from the rows
    code, out = gate(capsys, skill, repo, "--no-require-signed")
    assert (code, out) == (
        1,
        f"gate refused: greeter: the newest measured receipt (run run-1) {unsigned_reason}",
    )


def test_publish_signs_with_the_configured_key_and_fails_cleanly(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    engine_receipt(skill, "run-1", {"baseline": "WWWWW"})
    head = git(repo, "rev-parse", "HEAD")
    # a key that cannot sign: one line, and the team repo is left as it was
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys/broken").write_text("not a key\n")
    code, said = publish(capsys, skill, repo, "--sign-key", str(tmp_path / "keys/broken"))
    assert code == 1 and len(said.splitlines()) == 1
    assert said.startswith(f"skillbench: publish refused: --sign-key: {tmp_path}/keys/broken: ")
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == ""

    ci = keypair(tmp_path, "ci")
    (tmp_path / "skillbench.toml").write_text('[sign]\nkey = "keys/ci"\n')  # relative to it
    code, said = publish(capsys, skill, repo)
    assert code == 0 and said.endswith("1 receipt(s), 1 signed")
    trust(repo, "ci@team", ci)
    assert gate(capsys, skill, repo)[0] == 0


def test_a_receipt_that_does_not_re_derive_is_never_published(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    run = engine_receipt(skill, "run-1", {"baseline": "LLLLL"})
    store = store_dir("greeter", digest(skill)) / "run-1.json"
    body = json.loads(store.read_text())
    body["verdict"] = "PASS"  # a local store edited by hand
    store.write_text(json.dumps(body))
    ci = keypair(tmp_path, "ci")
    code, said = publish(capsys, skill, repo, "--sign-key", str(ci))
    assert code == 0 and said.endswith(
        ": new version, 0 receipt(s) (1 that do not re-derive left out)"
    )
    assert not (repo / "evals").exists() and (run / "receipt.json").is_file()


def test_case_names_that_read_as_secrets_stay_apart_in_the_receipt(tmp_path: Path, capsys) -> None:
    # outside review (RB3): the receipt was scrubbed whole, so cases named token=abcdefgh01
    # and token=abcdefgh02 became one `token=[REDACTED]` unit and the gate refused an honest
    # receipt; a receipt that repeats a row is refused in one line
    skill = greeter(tmp_path)
    names = [f"token=abcdefgh{i:02d}" for i in range(6)]
    run = engine_receipt(skill, "run-1", {"baseline": "WWWWWW"}, names=names)
    body = json.loads((run / "receipt.json").read_text())
    assert [r["case"] for r in body["rows"]] == names
    assert main(["gate", str(skill)]) == 0, capsys.readouterr()
    capsys.readouterr()
    store = store_dir("greeter", digest(skill)) / "run-1.json"
    stored = json.loads(store.read_text())
    stored["rows"][1]["case"] = names[0]
    store.write_text(json.dumps(stored))
    assert main(["gate", str(skill)]) == 1
    said = capsys.readouterr().out  # (the gate's own lines are scrubbed as every output is)
    assert "(run run-1) has two rows of token=" in said and " rep 1 vs baseline" in said


def test_a_receipt_naming_more_repetitions_than_any_run_is_one_line(tmp_path: Path, capsys) -> None:
    # third review: a receipt's k of 10**11 made the gate build a list that long (MemoryError)
    skill = greeter(tmp_path)
    engine_receipt(skill, "run-1", {"baseline": "WWWWWW"})
    store = store_dir("greeter", digest(skill)) / "run-1.json"
    stored = json.loads(store.read_text())
    stored["provenance"]["k"] = 10**11
    store.write_text(json.dumps(stored))
    assert main(["gate", str(skill)]) == 1
    said = capsys.readouterr().out
    assert "is not a receipt skillbench writes" in said and "$.provenance.k" in said, said
    assert len(said.splitlines()) == 1


def test_endpoints_keep_scheme_and_host_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert endpoint("anthropic/claude-sonnet-4-6") == Endpoint("https://api.anthropic.com", True)
    assert endpoint("openai/gpt-5") == Endpoint("https://api.openai.com", True)
    assert endpoint("scripted/demo") == Endpoint("scripted", False)
    # a gateway's credentials and path never reach a receipt
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://svc:sk-ant-secret@GW.example.com:8443/k/abc")
    assert endpoint("anthropic/claude-sonnet-4-6") == Endpoint("https://gw.example.com:8443", False)
    # the provider's host over plain http is not the provider's own API
    monkeypatch.setenv("OPENAI_BASE_URL", "http://api.openai.com/v1")
    assert endpoint("openai/gpt-5") == Endpoint("http://api.openai.com", False)


def test_the_gate_refuses_a_stub_endpoint_unless_listed(tmp_path: Path, capsys) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    stub = {"agent": Endpoint("http://127.0.0.1:8080", False)}
    stub["judge"] = stub["agent"]
    engine_receipt(skill, "run-1", {"baseline": "WWWWW"}, endpoints=stub)
    code, out = gate(capsys, skill, repo)
    assert (code, out) == (
        1,
        "gate refused: greeter: the newest measured receipt (run run-1) reached its agent "
        "model at http://127.0.0.1:8080, its judge model at http://127.0.0.1:8080, not an "
        "allowed endpoint (https://api.anthropic.com, https://api.openai.com, "
        "https://generativelanguage.googleapis.com): a local or stub server says nothing "
        "about the provider's model; list it in allow-endpoints "
        "(--allow-endpoint) to accept it",
    )
    assert gate(capsys, skill, repo, "--allow-endpoint", "http://127.0.0.1:8080/v1")[0] == 0
    commit(
        repo,
        "pyproject.toml",
        '[tool.skillbench.gate]\nallow-endpoints = ["http://127.0.0.1:8080"]\n',
    )
    assert gate(capsys, skill, repo)[0] == 0
    commit(repo, "pyproject.toml", '[tool.skillbench.gate]\nallow-endpoints = ["127.0.0.1"]\n')
    code = main(["gate", str(skill), "--team", str(repo)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.endswith(
        "gate policy: allow-endpoints entry '127.0.0.1' is not a URL; write it like "
        "http://127.0.0.1:8080"
    )


def test_the_bundle_is_what_coreutils_computes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    files = {
        "journal.jsonl": '{"type":"row"}\n',
        "summary.json": "{}",
        "transcripts/a.candidate.1.jsonl": "one\n",
        "transcripts/a.baseline.1.jsonl": "two\n",
        "exchanges/a.candidate.1.jsonl": "three\n",
        "triggers/transcripts/t.router.1.jsonl": "four\n",
        "triggers/exchanges/t.router.1.jsonl": "five\n",
        "workspaces/a.candidate.1/out.txt": "not evidence\n",
        "report.html": "<html>",
    }
    for rel, text in files.items():
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text(text)
    (run / "transcripts/link.jsonl").symlink_to(run / "report.html")  # never followed
    pipeline = (
        "find journal.jsonl summary.json transcripts exchanges triggers/transcripts "
        "triggers/exchanges -type f 2>/dev/null | LC_ALL=C sort "
        "| xargs -r -d '\\n' sha256sum | sha256sum"
    )
    done = subprocess.run(
        ["bash", "-c", pipeline], cwd=run, capture_output=True, text=True, check=True
    )
    first = bundle_digest(run)
    assert first == "sha256:" + done.stdout.split()[0]
    (run / "workspaces/a.candidate.1/out.txt").write_text("changed")  # not in the bundle
    assert bundle_digest(run) == first
    (run / "exchanges/a.candidate.1.jsonl").write_text("edited\n")
    assert bundle_digest(run) != first


# --- end to end: a real eval against the fake server -------------------------------------


@pytest.mark.sandbox
@pytest.mark.e2e
@pytest.mark.usefixtures("podman_service")
def test_a_real_eval_signs_its_receipt_and_records_the_stub_endpoint(
    fake, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, skill = team_repo(tmp_path), greeter(tmp_path)
    ci = keypair(tmp_path, "ci")
    trust(repo, "ci@team", ci)
    (tmp_path / "skillbench.toml").write_text(
        f'max_retries = 1\nrequest_timeout = 30.0\n[sign]\nkey = "{ci}"\n'
    )
    server = fake(
        {
            "conversations": [
                conv(CAND, "Task a", write_file("a", "made"), {"text": "done"}),
                conv(BASE, "Task a", {"text": "I skip it."}),
            ]
        }
    )
    out = tmp_path / "run"
    code = main(
        [
            *("eval", str(skill), "--model", MODEL, "--out", str(out), "--quiet", "--no-gen"),
            *("--execution-only", "--seed", "7"),
        ]
    )
    assert code == 3, capsys.readouterr().err  # one case: INCONCLUSIVE
    capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    stub = {"url": server.url, "provider": False}
    assert summary["endpoints"] == {"agent": stub, "judge": stub}
    written = json.loads((out / "receipt.json").read_text())
    assert written["provenance"]["endpoints"] == {"agent": stub, "judge": stub}
    assert written["schema_version"] == 4 and written["bundle"] == bundle_digest(out)
    # checked by ssh-keygen alone, as a reviewer without skillbench would
    said = verify_with_ssh_keygen(
        out / "receipt.json", repo / ".skillbench/allowed_signers", "ci@team"
    )
    assert 'Good "skillbench-receipt" signature for ci@team' in said

    assert publish(capsys, skill, repo)[0] == 0
    capsys.readouterr()
    code, said = gate(capsys, skill, repo)  # the stub server is not the provider
    assert code == 1 and f"reached its agent model at {server.url}, its judge model at" in said
    code, said = gate(capsys, skill, repo, "--allow-endpoint", server.url, "--allow-inconclusive")
    assert (code, said) == (
        0,
        f"gate passed: greeter: INCONCLUSIVE (run {written['run_id']}, 1/1 rows scored, signed by "
        "ci@team)",
    )
    # the run cannot be resumed against another endpoint: one receipt, one endpoint
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert main(["eval", "--resume", str(out), "--quiet"]) == 2
    assert "refused, the model endpoints changed since the run started" in capsys.readouterr().err

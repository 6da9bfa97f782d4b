"""A Harbor task whose verifier installs its test tools from a package index (issue 23's test
for the egress proxy), on real podman with the fake model server. The task is written the way
public ones are: tests/test.sh installs uv, runs `uvx`-style `uv tool run --with pytest pytest
/tests/test_outputs.py -rA` and writes /logs/verifier/reward.txt from pytest's exit code.

What differs from a public task, and why: the index is a real PEP 503 index on the host's
loopback (tests/package_index.py) instead of PyPI, and the sandbox image has no curl, so
test.sh fetches uv's own wheel from that index with python3 where public ones curl uv's
installer. The imported case's network then allows only that index, and only to the verifier:
the agent phase has `network: none` and reaches nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillbench.cli import main
from tests.helpers import BASE, CAND, bash, conv, run_eval, skill, write, write_file
from tests.package_index import fetch_wheels, serve_index

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.usefixtures("podman_service")]

TEST_SH = """\
#!/bin/bash
# Install uv, then run the tests with pytest from the package index.
INDEX=http://127.0.0.1:{port}/simple
mkdir -p /tmp/uv
python3 - "$INDEX" <<'EOF'
import io, re, sys, urllib.parse, urllib.request, zipfile
page = sys.argv[1] + "/uv/"
href = re.findall(r'href="([^"#]+)', urllib.request.urlopen(page).read().decode())[-1]
wheel = zipfile.ZipFile(io.BytesIO(urllib.request.urlopen(urllib.parse.urljoin(page, href)).read()))
open("/tmp/uv/uv", "wb").write(wheel.read(next(n for n in wheel.namelist() if n.endswith("/scripts/uv"))))
EOF
chmod +x /tmp/uv/uv
export UV_CACHE_DIR=/tmp/uv/cache UV_PYTHON_DOWNLOADS=never UV_DEFAULT_INDEX=$INDEX

/tmp/uv/uv tool run --with pytest pytest /tests/test_outputs.py -rA

if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
TEST_OUTPUTS = """\
import sys

sys.path.insert(0, "/app")


def test_primes_below_20():
    from primes import primes

    assert primes(20) == [2, 3, 5, 7, 11, 13, 17, 19]


def test_no_primes_below_2():
    from primes import primes

    assert primes(2) == []
"""
PRIMES = (
    "def primes(n):\n"
    "    return [p for p in range(2, n) if all(p % d for d in range(2, int(p**0.5) + 1))]\n"
)
WRONG = "def primes(n):\n    return [p for p in range(1, n) if p % 2]\n"
# the agent tries the index from its own phase: no proxy there, so this prints FAILED
PROBE = (
    "python3 -c \"import urllib.request as u\ntry: u.urlopen('http://127.0.0.1:{port}/simple/"
    "pytest/', timeout=5); print('REACHED')\nexcept Exception as e: print('FAILED', e)\"; "
    "env | grep -ci _proxy"
)


DONE = {"text": "done"}


def _task(port: int) -> dict[str, str]:
    return {
        "primes/task.toml": (
            'version = "1.0"\n\n[metadata]\ndifficulty = "easy"\ncategory = "programming"\n\n'
            "[verifier]\ntimeout_sec = 300.0\n\n[agent]\ntimeout_sec = 300.0\n\n"
            "[environment]\nallow_internet = true\n"
        ),
        "primes/instruction.md": (
            "Write /app/primes.py with a function `primes(n)` returning the primes below n, "
            "in order.\n"
        ),
        "primes/environment/Dockerfile": "FROM skillbench-sandbox\nWORKDIR /app\n",
        "primes/tests/test.sh": TEST_SH.format(port=port),
        "primes/tests/test_outputs.py": TEST_OUTPUTS,
        "primes/solution/solve.sh": f"#!/bin/bash\ncat > /app/primes.py <<'EOF'\n{PRIMES}EOF\n",
    }


def _log(path: Path) -> list[tuple[str, str, int, bool]]:
    lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [(e["phase"], e["host"], e["port"], e["allowed"]) for e in lines]


def test_a_harbor_verifier_installs_pytest_through_the_proxy(
    fake, tmp_path: Path, capsys, request: pytest.FixtureRequest
) -> None:
    wheels = fetch_wheels(request.config.cache.mkdir("harbor-pip-wheels"))
    with serve_index(wheels) as (port, asked):
        src, into = write(tmp_path / "tasks", _task(port)), skill(tmp_path, {})
        assert main(["import", "harbor", str(src), "--into", str(into)]) == 0
        said = capsys.readouterr().out
        assert "environment.allow_internet — mapped to `network: [deb.debian.org" in said, said
        # this mirror stands in for PyPI: the verifier may reach it, the agent nothing
        case = into / "evals/cases/primes.yaml"
        text, count = re.subn(
            r"(?m)^network: .*$",
            f"network: {{agent: none, verifier: ['127.0.0.1:{port}']}}",
            case.read_text(),
        )
        assert count == 1
        case.write_text(text)
        assert main(["check", str(into)]) == 0, capsys.readouterr().out
        capsys.readouterr()

        oracle = tmp_path / "oracle"
        code = main(
            ["eval", str(into), "--oracle", "--model", "scripted/demo", "--out", str(oracle)]
        )
        report, said = capsys.readouterr()
        assert code == 0 and "oracle PASS: primes" in report, report
        # Harbor runs its verifier and solution as root (no [verifier] user): said, as run
        assert (
            "as run: primes: verifier as root in the checker, as its source wrote it (as_root)"
            " · reference solution as root, as its source wrote it (as_root)"
        ) in said, said
        assert "/simple/pytest/" in asked and "/simple/uv/" in asked
        seen = _log(oracle / "network/primes.oracle.jsonl")
        assert seen and set(seen) == {("verifier", "127.0.0.1", port, True)}, seen

        probe = bash(PROBE.format(port=port))
        fake(
            {
                "conversations": [
                    conv(CAND, "primes below n", probe, write_file("primes.py", PRIMES), DONE),
                    conv(BASE, "primes below n", probe, write_file("primes.py", WRONG), DONE),
                ]
            }
        )
        run = tmp_path / "run"
        _, _, summary = run_eval(capsys, into, run, "--execution-only")
    (row,) = summary["rows"]
    # which network each phase had, in summary.json (and the report's lines)
    assert summary["network"] == {
        "primes": {
            "agent": "none",
            "verifier": f"egress proxy to 127.0.0.1:{port} (each connection in network/)",
            "build": "podman's network",
        }
    }, summary["network"]
    assert summary["differences"] == {
        "primes": ["verifier as root in the checker, as its source wrote it (as_root)"]
    }, summary["differences"]
    assert row["outcome"] == "win", json.dumps(row)
    assert row["arms"]["candidate"]["passed"] and row["arms"]["candidate"]["metrics"] == {
        "reward": 1.0
    }
    base = row["arms"]["baseline"]
    assert not base["passed"] and base["metrics"] == {"reward": 0.0}
    assert "FAILED" in base["checks"][0]["output"]  # pytest's own report, kept on the row
    for arm in ("baseline", "candidate"):
        # every connection is the verifier's, to the index; the agent made none
        seen = _log(run / f"network/primes.{arm}.1.jsonl")
        assert seen and set(seen) == {("verifier", "127.0.0.1", port, True)}, seen
        events = [json.loads(x) for x in (run / f"transcripts/primes.{arm}.1.jsonl").open()]
        (probed,) = [e for e in events if e["type"] == "tool_result" and e["name"] == "bash"]
        assert probed["text"].split("\n")[:2] == [
            "FAILED <urlopen error [Errno 111] Connection refused>",
            "0",
        ], probed

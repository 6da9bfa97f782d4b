"""A Harbor Dockerfile's ENTRYPOINT is not run here, and the import must say so (issue 37).
harbor-cookbook's `dns-blacklisting` recipe routes its candidate domains to 127.0.0.1 in
/etc/hosts and starts the block server from `ENTRYPOINT ["/entrypoint.sh"]`; skillbench's
executor replaces an image's ENTRYPOINT, so neither happens, and re-run on that recipe the
import, `check` and the run said nothing: the task's environment changed silently."""

from __future__ import annotations

from pathlib import Path

from skillbench.cli import main
from tests.helpers import skill, write

# the recipe's shape
TASK = {
    "dns/task.toml": 'version = "1.0"\n[environment]\nallow_internet = false\n',
    "dns/instruction.md": "Write the reachable domains to /app/accessible.txt.\n",
    "dns/environment/Dockerfile": (
        "FROM skillbench-sandbox\nUSER root\nCOPY entrypoint.sh /entrypoint.sh\n"
        'ENTRYPOINT ["/entrypoint.sh"]\nWORKDIR /app\n'
    ),
    "dns/environment/entrypoint.sh": (
        "#!/bin/bash\necho '127.0.0.1 blocked.example' >> /etc/hosts\nexec \"$@\"\n"
    ),
    "dns/tests/test.sh": "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n",
}


def test_an_entrypoint_that_is_not_run_is_said_at_its_line(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    assert (
        main(["import", "harbor", str(write(tmp_path / "h", TASK) / "dns"), "--into", str(into)])
        == 0
    )
    said = capsys.readouterr().out
    assert (
        'dns: environment/Dockerfile:4 ENTRYPOINT ["/entrypoint.sh"] — not run: the sandbox\'s '
        "command executor replaces it" in said
    ), said


def test_a_cleared_entrypoint_says_nothing(tmp_path: Path, capsys) -> None:
    task = dict(TASK)
    task["dns/environment/Dockerfile"] = TASK["dns/environment/Dockerfile"] + "ENTRYPOINT []\n"
    into = skill(tmp_path, {})
    assert (
        main(["import", "harbor", str(write(tmp_path / "h", task) / "dns"), "--into", str(into)])
        == 0
    )
    assert "ENTRYPOINT" not in capsys.readouterr().out

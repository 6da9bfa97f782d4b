"""A Harbor verifier's first step is the distribution's package manager (issue 37). Every
test.sh of harbor-cookbook's recipes and QuesmaOrg/harbor-workshop's tasks starts with
`apt-get update && apt-get install -y curl`, as root, online (Harbor's `allow_internet`
defaults to true). Re-run on that material, the import's allowlist for "internet" held the
package indexes uv and pytest come from but no apt archive, so the verifier's apt-get was
answered 403 by the egress proxy: a task whose image lacks the tool its verifier installs
could never pass, online or not. The allowlist now has the Debian and Ubuntu archives.

(The run through the egress proxy is not repeated here: a machine whose package mirrors
answer at a reserved address, as the offline test machines' do, has every such name refused
by the proxy's private-address rule, which is right; tests/sandbox/test_egress.py covers the
proxy on a listed loopback address.)"""

from __future__ import annotations

from pathlib import Path

from skillbench.cli import main
from skillbench.importers.harbor import INTERNET
from tests.helpers import skill, write

# the cookbook's shape: no `allow_internet` (Harbor's default: true), a verifier that installs
# its tool with apt-get first and writes reward.txt either way
TASK = {
    "greet/task.toml": (
        'version = "1.0"\n[verifier]\ntimeout_sec = 300.0\n[agent]\ntimeout_sec = 300.0\n'
        "[environment]\nbuild_timeout_sec = 600.0\ncpus = 1\nmemory_mb = 2048\n"
    ),
    "greet/instruction.md": 'Write /app/out.json holding {"greeting": "hello"}.\n',
    "greet/environment/Dockerfile": "FROM skillbench-sandbox\nWORKDIR /app\n",
    "greet/tests/test.sh": (
        "#!/bin/bash\napt-get update\napt-get install -y jq\n"
        "if jq -e '.greeting == \"hello\"' /app/out.json; then\n"
        "  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"
    ),
    "greet/solution/solve.sh": '#!/bin/bash\necho \'{"greeting": "hello"}\' > out.json\n',
}


def test_harbor_internet_includes_the_apt_archives(tmp_path: Path, capsys) -> None:
    into = skill(tmp_path, {})
    assert (
        main(["import", "harbor", str(write(tmp_path / "h", TASK) / "greet"), "--into", str(into)])
        == 0
    )
    said = capsys.readouterr().out
    case = (into / "evals/cases/greet.yaml").read_text()
    for host in ("deb.debian.org", "archive.ubuntu.com", "security.ubuntu.com"):
        assert host in INTERNET and host in case, case
    assert "the apt archives and package indexes verifiers install from" in said, said

"""Sessions on a real multi-node Ray cluster (docs/scale-out.md): a head and two worker nodes, each
worker with its own podman service and storage, so `cluster prepare` has to ship the images.
Runs against the fake model server as a provider with a real-looking key that must never
reach a worker."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from podman import PodmanClient

from skillbench.cli import main
from skillbench.cluster.local import LocalCluster, Node, free_port
from skillbench.results.journal import read_journal
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.imageload import host_image, service_image_id
from skillbench.sandbox.podman.variants import build_variant, variant_name
from tests.helpers import BASE, CAND, conv, eval_cli, skill, write_file

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.cluster]

KEY = "sk-ant-api03-cluster-KEY-must-stay-on-the-driver-0123456789"
CASES = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Node]]]:
    local = LocalCluster(tmp_path_factory.mktemp("cluster"), workers=2, slots=2)
    try:
        local.start()
        yield local.address, local.nodes
    finally:
        local.stop()


def _scenario(tmp_path: Path, fake, monkeypatch) -> Path:
    """A skill whose candidate writes the file and whose baseline does not, over CASES cases,
    each model call slow enough that sessions overlap on both nodes."""
    folder = skill(
        tmp_path,
        {
            f"evals/cases/c{i}.yaml": f"task: Task c{i}\nchecks: [{{file_exists: out{i}.txt}}]\n"
            for i in range(CASES)
        },
    )
    convs = []
    for i in range(CASES):
        convs.append(conv(CAND, f"Task c{i}", write_file(f"out{i}.txt", "hi"), {"text": "done"}))
        convs.append(conv(BASE, f"Task c{i}", {"text": "I did nothing"}))
    fake({"latency": 0.4, "conversations": convs})
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # the driver's key: the fake takes any
    return folder


def _rows(summary: dict) -> list[tuple]:
    return sorted((r["case"], r["rep"], r["opponent"], r["outcome"]) for r in summary["rows"])


def _eval(folder: Path, out: Path, *extra: str) -> tuple[int, dict]:
    flags = ("--execution-only", "--fresh-baseline", *extra)
    code, _, _, summary = eval_cli(None, folder, out, *flags, model="anthropic/claude-sonnet-4-6")
    return code, summary


def test_cluster_run_matches_a_local_run_and_keys_stay_on_the_driver(
    cluster, tmp_path: Path, fake, monkeypatch
) -> None:
    address, nodes = cluster
    folder = _scenario(tmp_path, fake, monkeypatch)
    code_local, local = _eval(folder, tmp_path / "local")
    code, remote = _eval(folder, tmp_path / "remote", "--cluster", address)
    journal = (tmp_path / "remote/journal.jsonl").read_text()
    assert code == code_local and remote["verdict"] == local["verdict"], journal[-2000:]
    sessions, _ = read_journal(tmp_path / "remote/journal.jsonl")
    assert _rows(remote) == _rows(local) and len(_rows(remote)) == CASES
    ran_on = {r.node for r in sessions.values()}
    assert len(ran_on) == 2 and None not in ran_on, ran_on  # both workers, never the driver
    assert all(
        (tmp_path / "remote" / r.transcript).is_file() for r in sessions.values() if r.transcript
    )
    # the key: not in any worker process's environment, not in Ray's logs or spill files
    for node in nodes:
        for pid in node.processes():
            try:
                assert KEY.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
                assert KEY.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
            except FileNotFoundError:
                pass
    searched = 0
    for path in cluster_temp().rglob("*"):  # Ray's logs, sockets and spilled objects
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 64 << 20:
            assert KEY.encode() not in path.read_bytes(), path
            searched += 1
    assert searched > 10  # (the logs are there: the search looked at something)
    # ... and the workers did call the model: through the relay, with the token
    assert all(r.turns >= 1 for r in sessions.values())


def cluster_temp() -> Path:
    """Ray's temp folder of the test cluster (logs, sockets, spilled objects)."""
    import ray

    return Path(ray._private.worker._global_node.get_temp_dir_path())


def test_cluster_prepare_leaves_every_node_with_the_drivers_images_and_a_node_case_runs(
    cluster, tmp_path: Path, fake, monkeypatch, capsys
) -> None:
    address, nodes = cluster
    node = build_variant(variant_name("node"), print)  # (built once per machine, ~35 s)
    capsys.readouterr()
    assert main(["cluster", "prepare", "--cluster", address]) == 0
    out = capsys.readouterr().out
    assert f"every slot node holds {IMAGE}, {node} (" in out, out
    assert out.count(f"cluster: loading {node} on ") == len(nodes), out  # the progress line
    for image in (IMAGE, node):
        want = host_image(image)
        assert want is not None
        for n in nodes:
            with PodmanClient(base_url=n.url) as client:
                assert service_image_id(client, image) == want[0], (n.name, image)
    # a case that `requires: [node]` runs in that variant on a worker (its check needs node)
    folder = skill(
        tmp_path,
        {
            "evals/cases/js.yaml": (
                "task: Task js\nrequires: [node]\nchecks:\n  - file_exists: out.txt\n"
                "  - command_succeeds: node -e \"require('fs').statSync('out.txt')\"\n"
            )
        },
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Task js", write_file("out.txt", "hi"), {"text": "done"}),
                conv(BASE, "Task js", {"text": "I did nothing"}),
            ]
        }
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    _, summary = _eval(folder, tmp_path / "run", "--cluster", address)
    sessions, _ = read_journal(tmp_path / "run/journal.jsonl")
    assert len(sessions) == 2 and all(r.node for r in sessions.values()), sessions
    assert [(r["case"], r["outcome"]) for r in summary["rows"]] == [("js", "win")], summary


def alive_nodes() -> list[str]:
    import ray

    return [n["NodeID"] for n in ray.nodes() if n["Alive"]]


def test_no_cluster_no_ray_import_and_a_clear_error_without_one(
    tmp_path: Path, fake, monkeypatch, capsys
) -> None:
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, skillbench.cli, skillbench.engine.run; sys.exit('ray' in sys.modules)",
        ],
        capture_output=True,
    ).returncode
    assert code == 0
    folder = _scenario(tmp_path, fake, monkeypatch)
    code = main(
        [
            "eval",
            str(folder),
            "--model",
            "anthropic/claude-sonnet-4-6",
            "--no-gen",
            "--quiet",
            "--execution-only",
            "--cluster",
            f"127.0.0.1:{free_port()}",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no Ray cluster answers there" in err[0], err


def test_a_case_with_network_hosts_runs_on_a_worker_and_its_connections_come_back(
    cluster, tmp_path: Path, fake, monkeypatch
) -> None:
    from tests.sandbox.test_egress import FETCH, _Internet

    # the egress proxy runs on the worker, beside the sandbox (a worker's own network
    # decides what an allowed host is); what it recorded comes back with the transcripts
    internet = ThreadingHTTPServer(("127.0.0.1", 0), _Internet)
    threading.Thread(target=internet.serve_forever, daemon=True).start()
    port = internet.server_address[1]
    url = f"http://127.0.0.1:{port}/answer"
    folder = skill(
        tmp_path,
        {
            "evals/fetch.py": FETCH,
            "evals/cases/net.yaml": (
                f"task: Task net\nnetwork: {{agent: none, verifier: ['127.0.0.1:{port}']}}\n"
                "checks:\n  - file_exists: out.txt\n"
                f"  - command_succeeds: python3 $CASE/fetch.py {url} | grep -q 'hello from'\n"
            ),
        },
    )
    fake(
        {
            "conversations": [
                conv(CAND, "Task net", write_file("out.txt", "hi"), {"text": "done"}),
                conv(BASE, "Task net", {"text": "I did nothing"}),
            ]
        }
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    try:
        _, summary = _eval(folder, tmp_path / "run", "--cluster", address_of(cluster))
    finally:
        internet.shutdown()
        internet.server_close()
    sessions, _ = read_journal(tmp_path / "run/journal.jsonl")
    assert all(r.node for r in sessions.values())  # both ran on workers
    assert [(r["case"], r["outcome"]) for r in summary["rows"]] == [("net", "win")], summary
    for arm in ("baseline", "candidate"):
        log = tmp_path / f"run/network/net.{arm}.1.jsonl"
        seen = [json.loads(x) for x in log.read_text().splitlines()]
        assert [(e["phase"], e["port"], e["allowed"]) for e in seen] == [("verifier", port, True)]


def address_of(cluster: tuple[str, list[Node]]) -> str:
    return cluster[0]


def test_stopping_one_local_cluster_leaves_another_on_the_machine_running(tmp_path: Path) -> None:
    # `ray stop --force` in stop() ended every Ray process of the machine: a second run's
    # cluster lost its GCS and that run's driver exited mid-suite
    ray_processes = "gcs_server"
    first = LocalCluster(tmp_path / "a", workers=0).start()
    second = LocalCluster(tmp_path / "b", workers=0).start()
    try:
        first.stop()
        alive = subprocess.run(["pgrep", "-af", ray_processes], capture_output=True, text=True)
        assert second.temp in alive.stdout and first.temp not in alive.stdout, alive.stdout
    finally:
        second.stop()
    alive = subprocess.run(["pgrep", "-af", ray_processes], capture_output=True, text=True)
    assert second.temp not in alive.stdout


# Last of the tests on the shared cluster: it kills a worker for good, and Ray goes on listing
# a killed node as alive for a while (until its heartbeats are missed), so a test after it
# would schedule on a node that is about to be declared dead.
def test_a_node_lost_mid_run_loses_and_duplicates_nothing(
    cluster, tmp_path: Path, fake, monkeypatch, capsys
) -> None:
    address, nodes = cluster
    folder = _scenario(tmp_path, fake, monkeypatch)
    out = tmp_path / "run"
    journal = out / "journal.jsonl"

    def kill_when_busy() -> None:  # once the first session is back, the others are in flight
        while not (journal.is_file() and '"type":"session"' in journal.read_text()):
            time.sleep(0.05)
        nodes[1].kill()

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    code, summary = _eval(folder, out, "--cluster", address, "--parallel", "4")
    killer.join(timeout=5)
    err = capsys.readouterr().err
    sessions, rows = read_journal(journal)
    keys = [json.loads(x)["key"] for x in journal.read_text().splitlines() if '"session"' in x]
    assert len(keys) == len(set(keys)) == 2 * CASES  # none lost, none twice
    assert len(rows) == CASES and summary["scored_rows"] == CASES
    retried = [r for r in sessions.values() if r.attempts == 2]
    assert retried and all(
        r.node and r.node.endswith(tuple(n[:8] for n in alive_nodes())) for r in retried
    )
    assert "dropped out mid-run" in err, err
    assert code == 0 and summary["verdict"] in ("PASS", "INCONCLUSIVE")

"""The executor channel against the agent (docs/trust.md): on the api path the channel is the
container's own stdin and stdout (sandbox/podman/channel.py), so a process inside that could write
to PID 1's stdout would forge replies. Each attack runs as the agent, on both channels, and
the host must still get only the executor's own answers."""

from __future__ import annotations

import base64
import json

import msgspec
import pytest

from skillbench.sandbox.base import CHECKER, ROOT, Relay, SandboxSpec
from skillbench.sandbox.podman.provider import PodmanProvider
from tests.conftest import CHANNELS

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.anyio,
    pytest.mark.parametrize("channel", CHANNELS, indirect=True),
]


def _forgeries() -> bytes:
    """Replies for every request id the host will use next, and relay events: read as ours,
    each would answer a command the host has not run yet, or open a relay to the host."""
    fake = base64.b64encode(b"FORGED\n").decode()
    lines = [
        {
            "id": n,
            "exit_code": 0,
            "stdout": fake,
            "stderr": "",
            "timed_out": False,
            "truncated": False,
            "duration": 0.0,
        }
        for n in range(0, 400)
    ]
    lines += [{"event": "open", "sid": 7, "port": 9}, {"event": "data", "sid": 7, "data": fake}]
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


# Every descriptor the agent can name: PID 1's, its own beyond 0-2 (anything inherited), and
# every other process's it can open; each opened one gets the forgeries; prints what took them.
_ATTACK = r"""
import glob, os, sys
data = open(sys.argv[1], "rb").read()
took = []
for path in sorted(set(glob.glob("/proc/1/fd/*") + glob.glob("/proc/[0-9]*/fd/*")
                       + ["/proc/1/fd/0", "/proc/1/fd/1", "/proc/1/fd/2", "/dev/console"])):
    pid = path.split("/")[2]
    if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == os.getuid() and pid != "1":
        continue  # its own processes: their pipes are its own output
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        continue
    try:
        os.write(fd, data)
        took.append(path + " -> " + os.readlink(path) if path.startswith("/proc") else path)
    except OSError:
        pass
    finally:
        os.close(fd)
for fd in range(3, 256):  # what this process inherited past stdin, stdout and stderr
    try:
        os.write(fd, data)
        took.append(f"inherited fd {fd}")
    except OSError:
        pass
print("\n".join(took))
"""


async def _genuine(box, rounds: int = 30) -> None:
    for n in range(rounds):
        done = await box.exec(["echo", f"real {n}"])
        assert done.stdout == f"real {n}\n", done
    assert box.broken is None


@pytest.mark.parametrize("user", ["agent", CHECKER])
async def test_no_process_in_the_sandbox_can_forge_a_reply(
    provider: PodmanProvider, spec: SandboxSpec, user: str
) -> None:
    box = await provider.create(spec)
    try:
        await box.write_file("forged.jsonl", _forgeries())
        await box.write_file("attack.py", _ATTACK)
        await box.exec(["chmod", "a+r", "forged.jsonl", "attack.py"])
        # in the background too: it keeps writing while the host's next requests go out
        done = await box.exec(
            "python3 attack.py forged.jsonl; (while :; do python3 attack.py forged.jsonl; done"
            " >/dev/null 2>&1 &)",
            user=user,
        )
        assert done.ok, done.stderr
        # /dev/console may take the bytes: it is not the channel (the host would see them)
        took = [t for t in done.stdout.splitlines() if t and t != "/dev/console"]
        assert took == [], took
        await _genuine(box)
        assert await box.read_file("forged.jsonl") == _forgeries()  # a file op, not a forgery
    finally:
        await box.close()


async def test_not_even_root_in_the_sandbox_reaches_pid_1s_descriptors(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    """A command the host runs as root (a handover's rm, a load_archive's tar) has no
    CAP_SYS_PTRACE and PID 1 is non-dumpable: /proc/1/fd stays closed to it too, and what it
    inherited is its own capture pipes (the channel is close-on-exec)."""
    box = await provider.create(spec)
    try:
        await box.write_file("forged.jsonl", _forgeries())
        for fd in ("0", "1", "2", "3", "4", "5"):
            done = await box.exec(f"cat forged.jsonl > /proc/1/fd/{fd}", user=ROOT)
            assert not done.ok and "Permission denied" in done.stderr, (fd, done)
        inherited = await box.exec("ls /proc/self/fd", user=ROOT)
        assert inherited.stdout.split() == ["0", "1", "2", "3"], inherited  # 3: ls's own
        await _genuine(box)
    finally:
        await box.close()


async def test_the_relay_carries_bytes_both_ways_beside_commands(
    provider: PodmanProvider, spec: SandboxSpec
) -> None:
    """The broker's relay rides the same channel: a large echo through it while commands run."""
    import asyncio

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(1 << 16):
            writer.write(chunk)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    box = await provider.create(
        msgspec.structs.replace(spec, relay=Relay(port=8765, host="127.0.0.1", target=port))
    )
    try:
        script = (
            "import socket, hashlib\n"
            "s = socket.create_connection(('127.0.0.1', 8765))\n"
            "data = bytes(range(256)) * 16384\n"  # 4 MiB
            "s.sendall(data); s.shutdown(socket.SHUT_WR)\n"
            "got = b''\n"
            "while chunk := s.recv(1 << 16): got += chunk\n"
            "print(got == data, len(got))\n"
        )
        relayed, _ = await asyncio.gather(
            box.exec(["python3", "-c", script], timeout=60), _genuine(box, 10)
        )
        assert relayed.stdout.split() == ["True", str(4 << 20)], relayed
    finally:
        await box.close()
        server.close()

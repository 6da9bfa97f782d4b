"""The Sandbox protocol's conformance suite. Every provider runs it by subclassing
`SandboxConformance` in a test module and giving a `sandbox` fixture (see base.py for the
exact semantics asserted here)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from skillbench.sandbox.base import Sandbox


@pytest.mark.anyio
class SandboxConformance:
    async def test_exit_codes(self, sandbox: Sandbox) -> None:
        assert (await sandbox.exec("true")).exit_code == 0
        assert (await sandbox.exec("exit 3")).exit_code == 3
        assert (await sandbox.exec(["sh", "-c", "exit 7"])).exit_code == 7
        missing = await sandbox.exec("no-such-program-xyz")
        assert missing.exit_code == 127 and "not found" in missing.stderr

    async def test_stdout_and_stderr_are_separate(self, sandbox: Sandbox) -> None:
        r = await sandbox.exec("echo out; echo err >&2")
        assert (r.stdout, r.stderr, r.ok) == ("out\n", "err\n", True)

    async def test_argv_is_not_reparsed_by_a_shell(self, sandbox: Sandbox) -> None:
        r = await sandbox.exec(["printf", "%s|", "a b", "$HOME", "'q'"])
        assert r.stdout == "a b|$HOME|'q'|"

    async def test_cwd_env_and_stdin(self, sandbox: Sandbox) -> None:
        r = await sandbox.exec("pwd; echo $FOO; cat", cwd="/tmp", env={"FOO": "bar"}, stdin="in\n")
        assert r.stdout == "/tmp\nbar\nin\n"
        assert (await sandbox.exec("pwd")).stdout == "/work\n"

    async def test_missing_cwd_raises(self, sandbox: Sandbox) -> None:
        with pytest.raises(FileNotFoundError):
            await sandbox.exec("true", cwd="/nope")

    async def test_utf8_round_trip(self, sandbox: Sandbox) -> None:
        text = "héllo ✓ 世界 🙂\n"
        await sandbox.write_file("u/t.txt", text)
        assert await sandbox.read_text("u/t.txt") == text
        assert (await sandbox.exec("cat u/t.txt")).stdout == text
        assert (await sandbox.exec(["echo", "-n", text])).stdout == text

    async def test_binary_round_trip(self, sandbox: Sandbox) -> None:
        data = bytes(range(256)) * 64
        await sandbox.write_file("/tmp/b.bin", data)
        assert await sandbox.read_file("/tmp/b.bin") == data
        assert (await sandbox.exec("wc -c < /tmp/b.bin")).stdout.strip() == str(len(data))

    async def test_large_output_is_capped_with_a_marker(self, sandbox: Sandbox) -> None:
        r = await sandbox.exec(
            "head -c 5000000 /dev/zero | tr '\\0' a; echo; echo END", output_cap=10_000
        )
        assert r.truncated and r.exit_code == 0
        assert len(r.stdout) < 10_100
        assert r.stdout.startswith("a" * 4000) and r.stdout.endswith("END\n")
        assert "bytes cut ...]" in r.stdout

    async def test_timeout_kills_the_command_and_its_children(self, sandbox: Sandbox) -> None:
        r = await sandbox.exec("sleep 300 & sleep 301; echo never", timeout=1)
        assert r.timed_out and not r.ok and "never" not in r.stdout
        left = await sandbox.exec("ps -eo args | grep -c '^sleep 30[01]' || true")
        assert left.stdout.strip() == "0"
        assert (await sandbox.exec("echo still usable")).stdout == "still usable\n"

    async def test_background_child_does_not_hang_exec(self, sandbox: Sandbox) -> None:
        r = await sandbox.exec("sleep 120 & echo started", timeout=30)
        assert r.ok and r.stdout == "started\n" and not r.timed_out

    async def test_missing_files_raise_documented_errors(self, sandbox: Sandbox) -> None:
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file("nope.txt")
        with pytest.raises(IsADirectoryError):
            await sandbox.read_file("/tmp")
        with pytest.raises(FileNotFoundError):
            await sandbox.get_tree("/no/such/dir", Path("/tmp/unused"))
        assert not await sandbox.exists("nope.txt")

    async def test_only_regular_files_are_read_or_written(self, sandbox: Sandbox) -> None:
        # a read of a fifo (or a pty, a device) the agent leads a path to would block
        assert (await sandbox.exec("mkfifo /tmp/f.fifo")).ok
        for path in ("/tmp/f.fifo", "/dev/ptmx"):
            with pytest.raises(OSError) as raised:
                await asyncio.wait_for(sandbox.read_file(path), 30)
            assert not isinstance(raised.value, TimeoutError), path
            # (and to write: opening a fifo for writing waits for a reader)
            with pytest.raises(OSError) as raised:
                await asyncio.wait_for(sandbox.write_file(path, "x"), 30)
            assert not isinstance(raised.value, TimeoutError), path

    async def test_write_creates_parents_and_exists(self, sandbox: Sandbox) -> None:
        await sandbox.write_file("a/b/c.txt", "x")
        assert await sandbox.exists("a/b/c.txt") and await sandbox.exists("/work/a/b")
        assert (await sandbox.exec("cat a/b/c.txt")).stdout == "x"

    async def test_concurrent_execs(self, sandbox: Sandbox) -> None:
        results = await asyncio.gather(
            *(sandbox.exec(f"sleep 0.{9 - i % 5}; echo {i}") for i in range(12))
        )
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(12)]

    async def test_tree_round_trip(self, sandbox: Sandbox, tmp_path: Path) -> None:
        src = tmp_path / "src"
        (src / "sub").mkdir(parents=True)
        (src / "sub/a.txt").write_text("A")
        (src / "run.sh").write_text("#!/bin/sh\necho ran\n")
        (src / "run.sh").chmod(0o755)
        (src / "link").symlink_to("sub/a.txt")
        await sandbox.put_tree(src, "/work/proj")
        assert (await sandbox.exec("./run.sh; cat link", cwd="/work/proj")).stdout == "ran\nA"
        await sandbox.exec("echo new > /work/proj/sub/b.txt")
        out = tmp_path / "out"
        assert await sandbox.get_tree("/work/proj", out) == []
        assert (out / "sub/b.txt").read_text() == "new\n"
        assert (out / "sub/a.txt").read_text() == "A" and not os.path.lexists(out / "link")
        assert json.loads((tmp_path / "out.symlinks.json").read_text()) == {"link": "sub/a.txt"}
        owner = await sandbox.exec("stat -c %U /work/proj/run.sh /work/proj/sub")
        assert owner.stdout.split() == ["agent", "agent"]  # unpacked by the user, not root

    async def test_get_tree_records_links_skips_specials_and_caps(
        self, sandbox: Sandbox, tmp_path: Path
    ) -> None:
        await sandbox.exec(
            "mkdir -p w/dir && ln -s /etc w/dir/etc && ln -s /etc/passwd w/abs && mkfifo w/fifo"
            " && head -c 3000 /dev/zero > w/big && echo hi > w/small && ln w/small w/hard"
        )
        out = tmp_path / "out"
        notes = await sandbox.get_tree("/work/w", out, cap=1000)
        # links are data on the host: recorded with their targets, never made
        links = json.loads((tmp_path / "out.symlinks.json").read_text())
        assert links == {"abs": "/etc/passwd", "dir/etc": "/etc"}
        assert not any(p.is_symlink() for p in out.rglob("*"))
        assert not (out / "fifo").exists() and not (out / "big").exists()
        assert any("fifo: a FIFO" in n for n in notes) and any(
            "big: 3000 bytes" in n for n in notes
        )
        # a hard-linked file: each name is a copy, or is noted (in one archive the second name
        # is a link entry)
        for name in ("small", "hard"):
            copied = (out / name).is_file() and (out / name).read_text() == "hi\n"
            assert copied or any(n.startswith(f"{name}: a hard link") for n in notes), name
        assert (out / "small").is_file() or (out / "hard").is_file()

    async def test_commands_and_file_tools_run_unprivileged(self, sandbox: Sandbox) -> None:
        who = await sandbox.exec(
            "id -u; id -g; id -G; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; echo $HOME"
        )
        assert who.stdout.split() == [
            "1000",
            "1000",
            "1000",
            "CapEff:",
            "0000000000000000",
            "NoNewPrivs:",
            "1",
            "/home/agent",
        ]
        with pytest.raises(PermissionError):
            await sandbox.read_file("/etc/shadow")
        await sandbox.exec("ln -s /etc/hostname /work/host-link")
        with pytest.raises(PermissionError):  # written as the user: a link leads nowhere new
            await sandbox.write_file("host-link", "owned")
        await sandbox.write_file("mine.txt", "x")
        assert (await sandbox.exec("stat -c %U mine.txt")).stdout == "agent\n"
        assert (await sandbox.exec("id -u", user="root")).stdout == "0\n"

    async def test_only_work_home_and_tmp_are_writable_and_capped(self, sandbox: Sandbox) -> None:
        for place in ("/usr/bin/x", "/etc/x", "/var/tmp/x", "/x"):
            done = await sandbox.exec(f"touch {place}")
            assert done.exit_code != 0, place
        for place in ("/work/x", "/tmp/x", "$HOME/x"):
            assert (await sandbox.exec(f"touch {place}")).ok, place
        full = await sandbox.exec("head -c 600000000 /dev/zero > /tmp/fill")
        assert full.exit_code != 0 and "No space left on device" in full.stderr

    async def test_killing_everything_is_survivable(self, sandbox: Sandbox) -> None:
        await sandbox.exec("kill -9 -1", timeout=10)
        assert (await sandbox.exec("echo back")).stdout == "back\n"

    async def test_close_is_idempotent(self, sandbox: Sandbox) -> None:
        await sandbox.close()
        await sandbox.close()

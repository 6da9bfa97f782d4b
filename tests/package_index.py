"""A real package index on the host's loopback, for verifiers that install their test tools
(PEP 503 simple layout, the way PyPI and its mirrors serve pip and uv): /simple/<project>/
links each wheel as /files/<wheel>#sha256=<digest>. The wheels come from PyPI once, into
pytest's cache folder; the sandboxes never reach PyPI, only this index, through the egress
proxy."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# pytest and what it needs on the sandbox's Python (3.11), and uv, whose wheel holds its binary
WANTED = ("pytest", "uv")
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "any")


def fetch_wheels(cache: Path) -> Path:
    """The wheels of WANTED and their dependencies in `cache` (downloaded the first time);
    PyPI is one of the registries this machine reaches (make test's set-up needs it too), so
    failing to fetch is a failure of the test, never a skip."""
    if sorted(cache.glob("uv-*.whl")) and sorted(cache.glob("pytest-*.whl")):
        return cache
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
    target = ["--python-version", "3.11", "--implementation", "py", *platforms]
    done = subprocess.run(
        [*pip, *target, "--dest", str(cache), *WANTED],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        pytest.fail(f"could not fetch {', '.join(WANTED)} from PyPI: {done.stderr[-300:]}")
    return cache


def _project(wheel: str) -> str:
    return re.sub(r"[-_.]+", "-", wheel.split("-")[0]).lower()  # PEP 503 normalisation


@contextmanager
def serve_index(wheels: Path) -> Iterator[tuple[int, list[str]]]:
    """(the index's port on 127.0.0.1, the paths it was asked for) while it serves."""
    files = {p.name: p for p in wheels.glob("*.whl")}
    projects: dict[str, list[str]] = {}
    for name in sorted(files):
        projects.setdefault(_project(name), []).append(name)
    asked: list[str] = []

    class Index(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:  # uv asks for a wheel's size first
            self._answer(head=True)

        def do_GET(self) -> None:
            self._answer(head=False)

        def _answer(self, head: bool) -> None:
            asked.append(self.path)
            parts = [p for p in self.path.split("/") if p]
            if parts[:1] == ["simple"] and len(parts) == 2 and parts[1] in projects:
                links = "".join(
                    f'<a href="/files/{n}#sha256={hashlib.sha256(files[n].read_bytes()).hexdigest()}">'
                    f"{n}</a>\n"
                    for n in projects[parts[1]]
                )
                body, kind = f"<!DOCTYPE html><html><body>\n{links}</body></html>\n", "text/html"
                data = body.encode()
            elif parts[:1] == ["files"] and len(parts) == 2 and parts[1] in files:
                data, kind = files[parts[1]].read_bytes(), "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not head:
                self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1]), asked
    finally:
        server.shutdown()
        server.server_close()

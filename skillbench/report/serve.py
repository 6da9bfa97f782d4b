"""`skillbench view`: a run folder's report.html served on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def server_for(run_dir: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server for the run folder on 127.0.0.1 (a free port when 0); OSError if it cannot
    listen there. Only loopback: a run folder holds transcripts."""
    handler = functools.partial(_Quiet, directory=str(run_dir))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def report_url(server: http.server.ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/report.html"

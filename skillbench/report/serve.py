"""`skillbench view`: a run folder's report.html served on 127.0.0.1 until Ctrl-C.

A run folder holds what agents made (a failed arm's workspace), so the server hands out only
regular files inside it: each step of the path is opened without following a link (O_NOFOLLOW,
relative to the folder before it), `..` and empty steps are refused, and folders are never
listed. Anything else is 404.

Only report.html is served as a page (of a set run: its grid, and each cell's report.html that
set.json names, never any other file of that name). Every other file is something a run recorded (a
workspace an agent wrote, a transcript): text, or a raster image, never HTML or SVG, with
`nosniff` and a sandboxing CSP, so an agent's page cannot run script in the report's origin.
A request must name the server as it listens (127.0.0.1 or localhost, its port): a page of
another site whose name is made to resolve to 127.0.0.1 (DNS rebinding) gets 421.
"""

from __future__ import annotations

import contextlib
import http.server
import mimetypes
import os
import shutil
import stat
import urllib.parse
from pathlib import Path

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # (a FIFO never blocks)


def open_inside(root: Path, url_path: str) -> int | None:
    """A descriptor of the regular file `url_path` names inside `root`, or None."""
    parts = urllib.parse.unquote(urllib.parse.urlsplit(url_path).path).split("/")[1:]
    if not parts or any(p in ("", ".", "..") or "\0" in p for p in parts):
        return None
    fds: list[int] = []
    try:
        fds.append(os.open(root, _FOLDER))
        for part in parts[:-1]:
            fds.append(os.open(part, _FOLDER, dir_fd=fds[-1]))
        fd = os.open(parts[-1], _FILE, dir_fd=fds[-1])
    except OSError:  # missing, a link (ELOOP), not a folder: not served
        return None
    finally:
        for folder in fds:
            os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


_IMAGES = {"image/png", "image/jpeg", "image/gif", "image/webp"}  # (not SVG: it runs script)


class _Handler(http.server.BaseHTTPRequestHandler):
    root: Path
    pages: frozenset[str]  # the URL paths served as HTML: skillbench's own report pages
    port: int  # the port the server listens on (the only one a Host header may name)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        port = self.port
        if self.headers.get_all("Host", []) not in ([f"127.0.0.1:{port}"], [f"localhost:{port}"]):
            self.send_error(421, "this server answers only for 127.0.0.1 and localhost")
            return
        path = "/report.html" if self.path in ("", "/") else self.path
        fd = open_inside(self.root, path)
        if fd is None:
            self.send_error(404)
            return
        with os.fdopen(fd, "rb") as fh:
            page = urllib.parse.urlsplit(path).path in self.pages
            kind = mimetypes.guess_type(urllib.parse.urlsplit(path).path)[0]
            if not page and kind not in _IMAGES:
                kind = "text/plain; charset=utf-8"  # (what an agent wrote is shown, never run)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8" if page else str(kind))
            self.send_header("Content-Length", str(os.fstat(fh.fileno()).st_size))
            self.send_header("X-Content-Type-Options", "nosniff")
            if not page:
                self.send_header("Content-Security-Policy", "sandbox; default-src 'none'")
            self.end_headers()
            if body:
                with contextlib.suppress(ConnectionError):
                    shutil.copyfileobj(fh, self.wfile)


def server_for(
    run_dir: Path, port: int = 0, cells: tuple[str, ...] = ()
) -> http.server.ThreadingHTTPServer:
    """A server for the run folder on 127.0.0.1 (a free port when 0); OSError if it cannot
    listen there. Only loopback: a run folder holds transcripts. `cells`: of a set run, the
    cells' run folders (relative, as set.json names them), whose report.html is a page too."""
    pages = frozenset({"/report.html", *(f"/{cell}/report.html" for cell in cells)})
    handler: type[_Handler] = type(
        "RunFolderHandler", (_Handler,), {"root": run_dir.resolve(), "pages": pages}
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    handler.port = int(server.server_address[1])
    return server


def report_url(server: http.server.ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/report.html"

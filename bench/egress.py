"""The egress proxy's added latency per request (docs/formats.md), as a ratio to a direct request
from the host: N small GETs to a local HTTP server, (a) direct from the host, (b) from the
host through the proxy, (c) from inside a real podman sandbox through the relay and the proxy
(the path a case's allowed traffic takes). Medians; one line.

    .venv/bin/python bench/egress.py [--requests N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from skillbench.sandbox.base import SandboxSpec
from skillbench.sandbox.egress import EgressProxy, phase_proxy
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.provider import PodmanProvider

# inside the sandbox: N GETs through HTTP_PROXY, the median in milliseconds
_INSIDE = """
import statistics, sys, time, urllib.request
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); urllib.request.urlopen(sys.argv[1]).read()
    times.append(time.perf_counter() - t)
print(statistics.median(times) * 1000)
"""


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


def _median_ms(opener: urllib.request.OpenerDirector, url: str, n: int) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        opener.open(url).read()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    n = parser.parse_args().requests
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "network.jsonl"
        direct = _median_ms(urllib.request.build_opener(urllib.request.ProxyHandler({})), url, n)
        proxy = EgressProxy([f"127.0.0.1:{port}"], log, "agent").start()
        via = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"})
        host_proxied = _median_ms(urllib.request.build_opener(via), url, n)
        proxy.stop()
        provider = PodmanProvider()
        try:
            async with phase_proxy(
                SandboxSpec(image=IMAGE), [f"127.0.0.1:{port}"], log, "agent"
            ) as spec:
                box = await provider.create(spec)
                done = await box.exec(["python3", "-c", _INSIDE, url, str(n)], timeout=600)
                inside = float(done.stdout)
                await box.close()
        finally:
            await provider.aclose()
    print(
        f"egress proxy, median of {n} GETs: direct from the host {direct:.2f} ms; through the "
        f"proxy from the host {host_proxied:.2f} ms ({host_proxied / direct:.1f}x); from a "
        f"sandbox through relay + proxy {inside:.2f} ms ({inside / direct:.1f}x)"
    )


if __name__ == "__main__":
    asyncio.run(main())

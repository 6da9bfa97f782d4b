"""Model broker latency: what the broker (and the sandbox relay in front of it) adds to a
streamed Messages request, against the fake server in its own process with zero latency.

    .venv/bin/python bench/broker.py [--requests N]

Figures, not assertions. The ideal is the direct request; the target is at most 5 ms added
per request, with every rule of the broker's in force (the endpoint list, the body cap, the
model check, a budget to reserve against). "relay + broker" is a request made inside a real
podman sandbox (no network) to its loopback port, carried by the executor to the broker on
the host.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import socket
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from skillbench.broker.server import Broker
from skillbench.models.fake_server import SpawnedServer
from skillbench.sandbox.base import Relay, SandboxSpec
from skillbench.sandbox.podman.image import IMAGE
from skillbench.sandbox.podman.provider import PodmanProvider

BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 64,
    "stream": True,
    "messages": [{"role": "user", "content": "hello"}],
}
HEADERS = {"anthropic-version": "2023-06-01"}  # and the session's own key (Broker.client_key)
IN_SANDBOX = """
import json, sys, time, urllib.request
body = json.dumps({body}).encode()
times = []
for _ in range({n}):
    t = time.perf_counter()
    req = urllib.request.Request("http://127.0.0.1:8377/v1/messages", data=body, method="POST",
                                 headers={headers})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200, resp.status
        resp.read()
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def timed(url: str, n: int) -> list[float]:
    out = []
    with httpx.Client() as client:
        for _ in range(n):
            t = time.perf_counter()
            resp = client.post(f"{url}/v1/messages", json=BODY, headers=HEADERS)
            resp.raise_for_status()
            out.append(time.perf_counter() - t)
    return out


def timed_as_relay(broker: Broker, n: int) -> list[float]:
    """Requests straight to the broker as the host side of its relay sends them: each
    connection opens with the session's preamble, each call carries its client key."""
    body = json.dumps(BODY).encode()
    headers = {**HEADERS, "x-api-key": broker.client_key, "content-type": "application/json"}
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = (
        f"POST /v1/messages HTTP/1.1\r\nhost: x\r\n{head}content-length: {len(body)}\r\n\r\n"
    ).encode()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
            s.sendall(broker.preamble + request + body)
            resp = http.client.HTTPResponse(s)
            resp.begin()
            assert resp.status == 200, resp.status
            resp.read()
        out.append(time.perf_counter() - t)
    return out


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def main(n: int) -> None:
    server = SpawnedServer(
        {"conversations": [{"when": "(?s)hello", "loop": True, "steps": [{"text": "hi there"}]}]}
    )
    log = Path(tempfile.mkdtemp()) / "bench.jsonl"
    broker = Broker(
        upstream=server.url,
        api_key="sk-ant-bench",
        model="anthropic/claude-sonnet-4-6",
        exchanges=log,
        budget=1000.0,  # so each request reserves and settles, as under --max-cost
    ).start()
    provider = PodmanProvider()
    try:
        direct = timed(server.url, n)
        brokered = timed_as_relay(broker, n)
        relay = Relay(8377, "127.0.0.1", broker.port, preamble=broker.preamble)
        box = await provider.create(SandboxSpec(image=IMAGE, relay=relay))
        keyed = {**HEADERS, "x-api-key": broker.client_key}
        script = IN_SANDBOX.format(body=BODY, n=n, headers=keyed)
        done = await box.exec(["python3", "-c", script], timeout=300)
        if done.exit_code != 0:
            raise SystemExit(f"the in-sandbox requests failed: {done.stderr[-500:]}")
        relayed = [float(x) for x in done.stdout.strip().strip("[]").split(",")]
        await box.close()
        print(f"broker benchmark  {n} streamed requests each, medians")
        print(f"  direct to the fake server     {ms(direct):6.2f} ms   (ideal)")
        print(
            f"  through the broker            {ms(brokered):6.2f} ms   "
            f"added {ms(brokered) - ms(direct):5.2f} ms (target <= 5)"
        )
        print(
            f"  sandbox relay + broker        {ms(relayed):6.2f} ms   "
            f"added {ms(relayed) - ms(direct):5.2f} ms"
        )
    finally:
        await provider.aclose()
        broker.stop()
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=50)
    asyncio.run(main(parser.parse_args().requests))

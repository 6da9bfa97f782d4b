"""RT5-EG5 (redteam5, low): a plain request with no Host header (HTTP/1.0 allows it) is
forwarded in origin form with no Host at all (egress._target/_forwarded never add the URL's),
so the upstream serves its default site, which on a shared address need not be the allowed
one, while the log says the allowed site was asked for.

Run: PYTHONPATH=. .venv/bin/pytest attacks/redteam5/test_egress_no_host.py
Expected: the upstream is asked for the URL's host. Observed: it sees no Host (b"?").
"""

from __future__ import annotations

from pathlib import Path

from skillbench.egress import EgressProxy
from tests.test_egress_one_request import _talk, _vhost_server


def test_a_request_without_host_reaches_the_default_site(tmp_path: Path) -> None:
    up, port, seen = _vhost_server(honour_close=True)
    a = f"127.0.0.1:{port}"
    proxy = EgressProxy([a], tmp_path / "net.jsonl", "agent").start()
    try:
        _talk(proxy.port, f"GET http://{a}/ HTTP/1.0\r\n\r\n".encode())
    finally:
        proxy.stop()
        up.close()
    assert [h for h, _ in seen] == [a.encode()], seen

"""The egress proxy (docs/formats.md): the only way from a sandbox to the hosts its case allows.

The sandbox keeps `--network none`. A phase whose case lists hosts gets one of these on the
host, reached through the executor's relay (a loopback port inside, like the model broker),
with `HTTP_PROXY`/`HTTPS_PROXY` pointing at it. It speaks HTTP CONNECT (for TLS, which it
never opens) and plain absolute-form HTTP, one request per connection: a plain request, in a
tunnel or not, is forwarded framed by its own Content-Length or chunked body with
`Connection: close`, and anything the client sends after it (a second, kept-alive request
that could name any other site the address serves) is refused and the connection cut. A
target is let
through only when it matches an entry of the allowlist (host and port), and only for that
site: a plain request's Host header (and, in a tunnel, its target), and the SNI of the TLS
ClientHello a tunnel opens with, must name the target (an allowed address may serve other
sites too). A tunnel carries TLS or one whole HTTP/1.x request, nothing else; a head with a
bare CR or LF, or an HTTP/1.1 request without Host, is a 400. The name is resolved
here, on the host, and a name that resolves to a private, loopback or link-local address is
refused unless that address is itself listed (an allowed name cannot be pointed at the host's
own services). The case's own services are never proxied: their names are in `NO_PROXY`
(they answer directly in the arm's pod), and the proxy refuses them, so a name that is a
service inside cannot reach whatever the host resolves it to. Anything else is answered 403.
Every connection, allowed or refused, is one line in the session's
`network/<session key>.jsonl`: phase, host, port, the site asked for, bytes each way (and a
refused later request's site, `refused_after`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from skillbench.evals.network import Allowed, parse_entry
from skillbench.sandbox.base import Relay, SandboxSpec
from skillbench.util.conncap import ConnectionCap

PROXY_PORT = 3128  # the proxy's address inside the sandbox: http://127.0.0.1:3128
# The verifier's: another port, because in an arm's pod the checker shares the agent's network
# namespace, and starts while the agent's sandbox (listening on PROXY_PORT) still runs; the
# same port there would make the checker's executor fail to bind and never start.
CHECK_PROXY_PORT = 3129
_HEAD_CAP = 64 << 10  # bytes of a request head; more is refused
_CONNECT_TIMEOUT = 10.0
# Every connection the agent opens to the proxy is a host thread: one waits this long for its
# request head, and at most MAX_CONNECTIONS get a thread (the longest waiting is closed to make
# room for a new one; a tunnel in use is never closed for another).
READ_DEADLINE = 30.0
MAX_CONNECTIONS = 256  # (npm, pip and cargo open tens at once; idle ones make room)
# Hop-by-hop headers of the client's request (RFC 9110 §7.6.1) and the proxy's own.
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade"}


def proxy_env(direct: Sequence[str] = (), port: int = PROXY_PORT) -> dict[str, str]:
    """What a phase's commands see: the proxy for HTTP and HTTPS, with `localhost` and
    `direct` (the model broker's relay; the case's own services) left unproxied. 127.0.0.1
    goes through the proxy, so a listed `127.0.0.1:PORT` is the host's own loopback."""
    url = f"http://127.0.0.1:{port}"
    bypass = ",".join(["localhost", *direct])
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "NO_PROXY": bypass,
        "no_proxy": bypass,
    }


class _Refused(Exception):
    def __init__(self, status: int, reason: str, asked: str | None = None):
        super().__init__(reason)
        self.status, self.reason, self.asked = status, reason, asked


class EgressProxy:
    """One phase's proxy: start() it, point the sandbox's egress relay at `port`, stop() it."""

    def __init__(self, allowed: Sequence[str], log: Path, phase: str, services: Sequence[str] = ()):
        self.allowed = tuple(parse_entry(a) for a in allowed)
        self.services = {s.lower() for s in services}
        self.log, self.phase = log, phase
        self._server = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = int(self._server.getsockname()[1])
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False
        self._connections = ConnectionCap(MAX_CONNECTIONS)

    def start(self) -> EgressProxy:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        threading.Thread(target=self._accept, daemon=True, name="egress").start()
        return self

    def stop(self) -> None:
        """Close the listener and cut every connection still open."""
        self._stopped = True
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with self._lock:
            live = list(self._open)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while not self._stopped:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            if not self._connections.accept(conn):  # before a thread is spent on it
                with contextlib.suppress(OSError):
                    conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    # one connection ------------------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        started = time.monotonic()
        entry: dict[str, object] = {"phase": self.phase, "method": None, "host": None, "port": None}
        upstream: socket.socket | None = None
        self._track(client)
        try:
            client.settimeout(READ_DEADLINE)
            try:
                head, rest = _read_head(client)
            except TimeoutError:
                raise _Refused(408, "no request head within the read deadline") from None
            client.settimeout(None)
            self._connections.busy(client)
            method, host, port, forward = _target(head)
            entry.update(method=method, host=host, port=port)
            framing: _Framing | None = None
            if method != "CONNECT":
                entry["asked"] = _asked(head, host, port, 80)
                framing = _framing(head)
            address = self._permit(host, port)
            entry["address"] = address
            try:
                upstream = socket.create_connection((address, port), timeout=_CONNECT_TIMEOUT)
            except OSError as exc:
                raise _Refused(502, f"could not connect to {host}:{port}: {exc}") from None
            upstream.settimeout(None)
            self._track(upstream)
            one = None if framing is None else _Request(forward, framing)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                rest, entry["asked"], one = _inner(client, rest, host, port)
            sent, received, after = _pipe(client, upstream, rest, one)
            entry.update(allowed=True, sent=sent, received=received)
            if after is not None:
                entry["refused_after"] = after
        except _Refused as exc:
            entry.update(allowed=False, status=exc.status, reason=exc.reason)
            if exc.asked is not None:  # the site it asked for, not only the address
                entry["asked"] = exc.asked
            body = f"skillbench egress ({self.phase} phase): {exc.reason}\n".encode()
            with contextlib.suppress(OSError):
                client.sendall(
                    f"HTTP/1.1 {exc.status} {'Forbidden' if exc.status == 403 else 'Error'}\r\n"
                    f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n".encode()
                    + body
                )
        except OSError as exc:  # the client went away mid-way
            entry.update(allowed=entry.get("address") is not None, error=str(exc))
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    self._untrack(sock)
                    sock.close()
            self._connections.gone(client)
            entry["seconds"] = round(time.monotonic() - started, 4)
            self._record(entry)

    def _permit(self, host: str, port: int) -> str:
        """The address to connect to for `host:port`, or _Refused (403) saying why not."""
        if host in self.services:
            raise _Refused(
                403,
                f"{host} is one of the case's services: it is reached directly in the arm's "
                "pod, never through the proxy",
            )
        listed = [a for a in self.allowed if a.host == host and port in a.ports]
        if not listed:
            raise _Refused(403, f"{host}:{port} is not in the case's network allowlist")
        if listed[0].address:
            return host
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise _Refused(502, f"could not resolve {host}: {exc}") from None
        explicit = {a.host for a in self.allowed if a.address and port in a.ports}
        for info in infos:
            address = str(info[4][0])
            ip = ipaddress.ip_address(address)
            if ip.is_global or address in explicit:
                return address
        raise _Refused(
            403,
            f"{host} resolves to a private or local address ({infos[0][4][0]}); "
            "list that address itself to allow it",
        )

    def _record(self, entry: dict[str, object]) -> None:
        line = json.dumps({"at": time.time(), **entry}) + "\n"
        with self._lock, self.log.open("a") as fh:  # (both phases' proxies share the file)
            fh.write(line)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """The request head (through the blank line) and whatever followed it."""
    data = b""
    while b"\r\n\r\n" not in data:
        _no_bare_breaks(data)  # (now: the head would never end for this proxy)
        if len(data) > _HEAD_CAP:
            raise _Refused(431, "the request head is too large")
        chunk = sock.recv(65536)
        if not chunk:
            raise _Refused(400, "the connection closed before a request")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _target(head: bytes) -> tuple[str, str, int, bytes]:
    """(method, host, port, the head to send upstream) of a proxy request."""
    method, target, version = _request_line(head)
    if method == "CONNECT":
        try:
            allowed = _host_port(target)
        except ValueError:
            raise _Refused(400, f"CONNECT needs host:port, got {target!r}") from None
        return method, allowed.host, allowed.ports[0], b""
    try:
        url = urlsplit(target)
        port = url.port or 80  # (a port that is not a number up to 65535: ValueError)
    except ValueError:
        url, port = urlsplit(""), 0
    if url.scheme != "http" or not url.hostname:
        raise _Refused(
            400,
            f"a proxied request needs an absolute http:// URL, got {target[:200]!r}",
            target.lower()[:300],
        )
    host = url.hostname.lower().rstrip(".")
    path = url.path or "/"
    if url.query:
        path += f"?{url.query}"
    return method, host, port, _forwarded(head, f"{method} {path} {version}", host, port, 80)


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a method (RFC 9110 §5.6.2)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # in a field value: never (but a tab)


def _request_line(head: bytes) -> tuple[str, str, str]:
    """(method, target, version) of an HTTP/1.x request head; _Refused (400) for anything else,
    and for a head with a bare CR or LF: a server that ends lines at a bare LF would read
    headers (a second request's framing) this proxy does not see."""
    _no_bare_breaks(head)
    line = head.decode("latin-1").split("\r\n", 1)[0]
    parts = line.split(" ")
    if (
        len(parts) != 3
        or not _TOKEN.fullmatch(parts[0])
        or not parts[1]
        or not re.fullmatch(r"HTTP/1\.[01]", parts[2])
    ):
        raise _Refused(400, f"not an HTTP/1.x request line: {line[:200]!r}")
    return parts[0], parts[1], parts[2]


def _no_bare_breaks(head: bytes) -> None:
    """_Refused (400) for a bare CR or LF in (the start of) a request head."""
    if b"\r" in head.removesuffix(b"\r").replace(b"\r\n", b"") or b"\n" in head.replace(
        b"\r\n", b""
    ):
        raise _Refused(400, "a bare CR or LF in the request head (lines end in CRLF)")


def _forwarded(head: bytes, request_line: str, host: str, port: int, default: int) -> bytes:
    """The head sent upstream: hop-by-hop headers dropped, `Connection: close` added (one
    request per connection), the request line replaced, and the site asked for named in a Host
    header when an HTTP/1.0 request has none (so the upstream never serves its default site)."""
    lines = head.decode("latin-1").split("\r\n")
    headers = [h for h in lines[1:] if h.split(":", 1)[0].strip().lower() not in _HOP]
    if not any(h.split(":", 1)[0].strip().lower() == "host" for h in headers):
        name = f"[{host}]" if ":" in host else host
        headers.append(f"Host: {name}" if port == default else f"Host: {name}:{port}")
    return "\r\n".join([request_line, *headers, "Connection: close", "", ""]).encode("latin-1")


class _Framing(msgspec.Struct, frozen=True):
    chunked: bool
    length: int = 0  # of a body that is not chunked


def _framing(head: bytes) -> _Framing:
    """How a request's body ends (RFC 9112 §6.3), so exactly one request is forwarded; _Refused
    (400) for a head the upstream could frame differently from this proxy (the way a second
    request is smuggled past it): a folded header line, Transfer-Encoding beside
    Content-Length or not ending in chunked, Content-Lengths that disagree."""
    lines = head.decode("latin-1").split("\r\n")[1:]
    if any(line[:1] in (" ", "\t") for line in lines):
        raise _Refused(400, "a folded header line (obsolete line folding)")
    named = [line.partition(":") for line in lines]
    if any(
        not sep or not _TOKEN.fullmatch(name) or _CONTROL.search(value)
        for name, sep, value in named
    ):
        # a name or a value an upstream reads otherwise (`Host\x00`, `Host ` before the
        # colon, `chunked\x0b`, which Python's strip() would have read as `chunked`)
        raise _Refused(400, "a header line that is not a name (a token), a colon and a value")

    def values(name: str) -> list[str]:
        return [v.strip(" \t") for k, _, v in named if k.lower() == name]

    codings = [c.strip().lower() for v in values("transfer-encoding") for c in v.split(",")]
    lengths = {n.strip() for v in values("content-length") for n in v.split(",")}
    if codings:
        if lengths or codings[-1] != "chunked" or codings.count("chunked") != 1:
            raise _Refused(400, "a Transfer-Encoding that is not one final chunked, alone")
        return _Framing(chunked=True)
    if len(lengths) > 1 or not all(re.fullmatch(r"[0-9]{1,18}", n) for n in lengths):
        raise _Refused(400, "a Content-Length that is not one number")
    return _Framing(chunked=False, length=int(lengths.pop()) if lengths else 0)


_HOST_VALUE = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=:\[\]-]{1,300}")  # RFC 3986 host[:port]


def _same(asked: str, host: str, port: int, default: int) -> bool:
    """Whether a Host value names `host:port` (`default` when it names no port)."""
    name, sep, number = asked.rpartition(":")
    if not sep or "]" in number or (not name.startswith("[") and ":" in name):
        name, number = asked, str(default)  # no port (a bare IPv6 address has colons)
    try:
        named = _host_port(f"{name}:{number}")
    except ValueError:
        return False
    return named.host == host and named.ports[0] == port


def _asked(head: bytes, host: str, port: int, default: int) -> str:
    """The site a plain request names in its Host header (the URL's own when an HTTP/1.0
    request has none); _Refused unless that is the URL's host and port: an allowed address is
    asked only for the allowed site, never for another one it also serves."""
    lines = head.decode("latin-1").split("\r\n")[1:]
    fields = [h.split(":", 1) for h in lines if h.split(":", 1)[0].strip().lower() == "host"]
    # the value as forwarded, spaces and tabs aside (RFC 9110 §5.5): a name or a value that
    # other whitespace pads (NBSP, NEL, a form feed) is read one way here and another there
    hosts = [field[1].strip(" \t") if len(field) == 2 else "" for field in fields]
    if any(
        f[0].lower() != "host" or not _HOST_VALUE.fullmatch(v)
        for f, v in zip(fields, hosts, strict=True)
    ):
        raise _Refused(400, "a Host header that is not one host[:port]", "")
    if len(hosts) > 1:
        raise _Refused(403, f"{len(hosts)} Host headers: one request asks for one site", "")
    if not hosts and _request_line(head)[2] != "HTTP/1.0":
        raise _Refused(400, "an HTTP/1.1 request without a Host header (RFC 9112 §3.2)")
    if hosts and not _same(hosts[0], host, port, default):
        why = f"Host {hosts[0][:200]!r} is not the URL's {host}:{port}"
        raise _Refused(403, why, hosts[0].lower()[:300])
    return hosts[0].lower()[:300] if hosts else host


def _inner(
    client: socket.socket, rest: bytes, host: str, port: int
) -> tuple[bytes, str | None, _Request | None]:
    """What a CONNECT tunnel opens with: (the bytes to forward, the site asked for, the one
    request to forward in their place). A TLS ClientHello goes as it is, its SNI the site (None
    when it names none); a plain HTTP/1.x request, whole head read first, goes as one request,
    its Host and target the site. _Refused when that is not the CONNECT's host, and for
    anything else: nothing but TLS is forwarded unread."""
    client.settimeout(_CONNECT_TIMEOUT)
    try:
        while True:
            rest = rest.lstrip(b"\r\n")  # empty lines before a request line (RFC 9112 §2.2)
            if rest[:1] == b"\x16":
                whole, name = _sni(rest)
                if whole:
                    break
            elif b"\r\n\r\n" in rest:
                head, _, body = rest.partition(b"\r\n\r\n")
                return (body, *_tunnelled(head, host, port))
            elif b"\n" in rest:  # refused as soon as it is not HTTP (ssh, say)
                _no_bare_breaks(rest)
                _request_line(rest.partition(b"\r\n")[0])
            if len(rest) > _HEAD_CAP:
                raise _Refused(431, "the tunnel's first message is too large")
            chunk = client.recv(65536)
            if not chunk:
                raise _Refused(400, "the tunnel closed before a TLS ClientHello or a request")
            rest += chunk
    except TimeoutError:  # a protocol where the server speaks first: not TLS or HTTP
        raise _Refused(400, "the tunnel sent no TLS ClientHello or HTTP request") from None
    finally:
        client.settimeout(None)
    if name is None:  # TLS without SNI (to an address, say): only the address is asked
        return rest, None, None
    if name.lower().rstrip(".") != host:
        why = f"TLS for {name[:200]!r} through a tunnel to {host}:{port}"
        raise _Refused(403, why, name.lower()[:300])
    return rest, name.lower(), None


def _tunnelled(head: bytes, host: str, port: int) -> tuple[str, _Request]:
    """(the site asked for, the request to forward) of a plain request in a tunnel to
    `host:port`; _Refused unless its target (origin form, or an absolute URL: a server takes
    that over Host, RFC 9112 §3.2.2) and its Host both name `host:port`."""
    method, target, version = _request_line(head)
    path = target
    if not target.startswith("/") and not (method == "OPTIONS" and target == "*"):
        try:
            url = urlsplit(target)
        except ValueError:  # an IPv6 bracket left open
            why = f"the request target {target[:200]!r} is not a URL"
            raise _Refused(400, why, target.lower()[:300]) from None
        authority = url.netloc.rpartition("@")[2]
        if url.scheme not in ("http", "https") or not _same(authority, host, port, port):
            why = f"the request target {target[:200]!r} is not on {host}:{port}"
            raise _Refused(403, why, authority.lower()[:300])
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    asked = _asked(head, host, port, port)
    forward = _forwarded(head, f"{method} {path} {version}", host, port, port)
    return asked, _Request(forward, _framing(head))


def _sni(data: bytes) -> tuple[bool, str | None]:
    """(whether `data` holds a whole first TLS handshake message, the server name of the
    ClientHello it is: None when it names none or is not one)."""
    body = b""
    at = 0
    while True:  # the handshake message, from as many records as it spans
        if len(data) < at + 5:
            return False, None
        size = int.from_bytes(data[at + 3 : at + 5], "big")
        if data[at] != 0x16 or len(data) < at + 5 + size:
            return data[at] != 0x16, None
        body += data[at + 5 : at + 5 + size]
        at += 5 + size
        if len(body) >= 4 and len(body) >= 4 + int.from_bytes(body[1:4], "big"):
            break
    if body[0] != 1:
        return True, None
    try:
        i = 4 + 2 + 32
        i += 1 + body[i]  # session id
        i += 2 + int.from_bytes(body[i : i + 2], "big")  # cipher suites
        i += 1 + body[i]  # compression methods
        end = i + 2 + int.from_bytes(body[i : i + 2], "big")
        i += 2
        while i + 4 <= end:
            kind, size = (
                int.from_bytes(body[i : i + 2], "big"),
                int.from_bytes(body[i + 2 : i + 4], "big"),
            )
            if kind == 0:  # server_name: a list of (type, name); type 0 is a host name
                j = i + 4 + 2
                while j + 3 <= i + 4 + size:
                    length = int.from_bytes(body[j + 1 : j + 3], "big")
                    if body[j] == 0:
                        return True, body[j + 3 : j + 3 + length].decode("ascii", "replace")
                    j += 3 + length
            i += 4 + size
    except IndexError:
        return True, None
    return True, None


def _host_port(text: str) -> Allowed:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(text)
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return Allowed(host.lower().rstrip("."), (int(port),))


class _Request(msgspec.Struct, frozen=True):
    head: bytes  # as forwarded
    body: _Framing


class _Cut(Exception):
    """The client broke its request's framing, or sent a second request: cut both sides."""

    def __init__(self, refused: dict[str, str | None]):
        super().__init__(refused["reason"])
        self.refused = refused


class _Reader:
    """The client's bytes after the head: `buffered` first, then the socket."""

    def __init__(self, sock: socket.socket, buffered: bytes):
        self.sock, self.buf = sock, buffered

    def some(self, most: int = 65536) -> bytes:
        if not self.buf:
            self.buf = self.sock.recv(65536)
        out, self.buf = self.buf[:most], self.buf[most:]
        return out

    def line(self) -> bytes:
        """One line through its CRLF (a chunk size, a trailer); _Cut past 8 KiB or at EOF."""
        while b"\r\n" not in self.buf:
            if len(self.buf) > 8192:
                raise _Cut({"reason": "a chunk line longer than 8 KiB", "asked": None})
            more = self.sock.recv(65536)
            if not more:
                raise _Cut({"reason": "the request ended mid-body", "asked": None})
            self.buf += more
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line + b"\r\n"


def _copy_body(src: _Reader, send: Callable[[bytes], None], body: _Framing) -> None:
    """Send exactly the request's body, chunk by chunk as it comes."""

    def exactly(size: int) -> None:
        while size:
            data = src.some(min(size, 65536))
            if not data:
                raise _Cut({"reason": "the request ended mid-body", "asked": None})
            send(data)
            size -= len(data)

    if not body.chunked:
        exactly(body.length)
        return
    while True:
        line = src.line()
        digits = line.split(b";", 1)[0].strip()
        if not re.fullmatch(rb"[0-9A-Fa-f]{1,15}", digits):
            raise _Cut({"reason": f"a chunk size that is not hex: {line[:40]!r}", "asked": None})
        send(line)
        if int(digits, 16) == 0:
            while (trailer := src.line()) != b"\r\n":
                send(trailer)
            send(trailer)
            return
        exactly(int(digits, 16))
        if src.line() != b"\r\n":
            raise _Cut({"reason": "a chunk longer than its size", "asked": None})
        send(b"\r\n")


def _second(src: _Reader) -> dict[str, str | None]:
    """What the client sent after its one request: refused, naming the site it asked for."""
    data = src.buf
    src.sock.settimeout(1.0)  # (a head split over packets: the rest of it, briefly)
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data and len(data) < _HEAD_CAP:
            if not (more := src.sock.recv(65536)):
                break
            data += more
    lines = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    hosts = [h.split(":", 1)[1].strip() for h in lines if h.lower().startswith("host:")]
    return {
        "reason": "a second request on one connection: the proxy forwards one per connection",
        "asked": hosts[0].lower()[:300] if hosts else None,
    }


def _pipe(
    client: socket.socket, upstream: socket.socket, first: bytes, one: _Request | None = None
) -> tuple[int, int, dict[str, str | None] | None]:
    """Copy both ways until both sides are done; (bytes sent upstream, bytes received, what
    was refused after the first request). With `one`, only that request goes upstream (its
    head, then `first` and the client's bytes up to the end of its body): anything after it
    cuts the connection."""
    counts = [0, 0]
    refused: list[dict[str, str | None]] = []

    def send(data: bytes) -> None:
        upstream.sendall(data)
        counts[0] += len(data)

    def copy(src: socket.socket, dst: socket.socket, slot: int, lead: bytes = b"") -> None:
        try:
            if lead:
                dst.sendall(lead)
                counts[slot] += len(lead)
            while chunk := src.recv(65536):
                dst.sendall(chunk)
                counts[slot] += len(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def request(req: _Request) -> None:
        reader = _Reader(client, first)
        try:
            send(req.head)
            _copy_body(reader, send, req.body)
            if not reader.buf:
                reader.buf = client.recv(65536)  # (until the back half shuts it: b"")
            if reader.buf:
                raise _Cut(_second(reader))
            with contextlib.suppress(OSError):
                upstream.shutdown(socket.SHUT_WR)
        except _Cut as cut:
            refused.append(cut.refused)
            for sock in (upstream, client):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            with contextlib.suppress(OSError):
                upstream.shutdown(socket.SHUT_WR)

    def back() -> None:
        copy(upstream, client, 1)
        # the upstream is done answering: the exchange is over, whatever the client keeps open
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RD)

    down = threading.Thread(target=back, daemon=True)
    down.start()
    if one is None:
        copy(client, upstream, 0, first)
    else:
        request(one)
    down.join()
    return counts[0], counts[1], refused[0] if refused else None


@contextlib.asynccontextmanager
async def phase_proxy(
    spec: SandboxSpec, hosts: Sequence[str], log: Path, phase: str
) -> AsyncIterator[SandboxSpec]:
    """`spec` for one phase: unchanged when the phase may reach nothing (no relay, no proxy
    variables); else with a started proxy for `hosts` behind the egress relay, stopped after."""
    if not hosts:
        yield spec
        return
    services = [s.name for s in spec.services]
    port = PROXY_PORT if phase == "agent" else CHECK_PROXY_PORT
    proxy = EgressProxy(hosts, log, phase, services).start()
    # reached directly: a CLI agent's broker, at its own loopback port, and the services
    direct = [f"127.0.0.1:{spec.relay.port}"] if spec.relay else []
    try:
        yield msgspec.structs.replace(
            spec,
            egress=Relay(port, "127.0.0.1", proxy.port),
            env={**spec.env, **proxy_env([*direct, *services], port)},
        )
    finally:
        await asyncio.to_thread(proxy.stop)

"""What stands between this process and a model's base URL (docs/trust.md): a proxy, or a trust
store other than the system's. Either can put a stub in the provider's place while the URL
still names the provider, so a receipt records them and the gate does not count such a run
as the provider's own. This process makes every model call: the builtin agent's, the judge's,
and the broker's and the Ray relay's upstream ones (httpx, which reads these variables)."""

from __future__ import annotations

import os
import ssl
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

# The variables that replace (or add to) the trust store of an HTTPS client: httpx and
# OpenSSL read the first two, requests and curl the next two, Node the last.
CA_VARS = (
    *("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"),
    "NODE_EXTRA_CA_CERTS",
)
# The system trust stores of the common distributions (Debian, Fedora/RHEL, Alpine, SUSE):
# root-owned, so pointing a variable at one changes nothing.
SYSTEM_STORES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/certs",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
)


def proxy_for(url: str) -> str | None:
    """The proxy URL an HTTP client would send `url` through, as the environment sets it
    (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, any case; the lowercase one wins, as in urllib and
    httpx). NO_PROXY counts only when it names the host exactly or is `*`, the forms every
    client agrees on: a looser entry one client honours and another does not must not hide a
    proxy that was used."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    found = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not found:
        return None
    host = (parts.hostname or "").lower()
    bypass = {h.strip().lower() for h in proxies.get("no", "").split(",")}
    return None if "*" in bypass or host in bypass else found


def custom_ca() -> list[str]:
    """The CA variables set to a trust store other than the system's or certifi's default."""
    defaults = _default_stores()
    return [
        name
        for name in CA_VARS
        if os.environ.get(name) and not _is_default(Path(os.environ[name]), defaults)
    ]


def _default_stores() -> set[Path]:
    paths = ssl.get_default_verify_paths()
    # openssl_cafile/capath are the compiled-in defaults; cafile/capath already follow the
    # variables, so they would make any file "default"
    stores = {paths.openssl_cafile, paths.openssl_capath, *SYSTEM_STORES}
    try:
        import certifi

        stores.add(certifi.where())
    except ImportError:  # pragma: no cover - httpx depends on certifi
        pass
    return {Path(s).resolve() for s in stores if s}


def _is_default(path: Path, defaults: set[Path]) -> bool:
    resolved = path.resolve()
    if resolved in defaults:
        return True
    # a copy of a default bundle (some images copy it rather than link it) adds no CA
    try:
        data = resolved.read_bytes() if resolved.is_file() else None
    except OSError:
        return False
    return data is not None and any(
        d.is_file() and d.stat().st_size == len(data) and d.read_bytes() == data for d in defaults
    )

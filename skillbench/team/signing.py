"""SSH signatures over receipts (docs/trust.md), by `ssh-keygen -Y`: the format git uses for
commit signing, so anyone can check a receipt with `ssh-keygen -Y verify` and no skillbench.

Signatures are made in the namespace `skillbench-receipt`, so a signature made for something
else (a git commit, a file) never passes for a receipt.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from skillbench.errors import SkillbenchError

NAMESPACE = "skillbench-receipt"
_TIMEOUT = 60  # seconds; a key that asks for a passphrase with no terminal fails, not hangs


class SigningError(SkillbenchError):
    """The key cannot sign, or a signature does not verify; the message says why."""


def _keygen(*args: str, message: bytes) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("ssh-keygen") is None:
        raise SigningError("ssh-keygen is not installed (apt-get install openssh-client)")
    try:
        return subprocess.run(
            ["ssh-keygen", "-Y", *args],
            input=message,
            capture_output=True,
            timeout=_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise SigningError(f"ssh-keygen -Y {args[0]} took over {_TIMEOUT}s") from None


def _last_line(data: bytes) -> str:
    lines = [line for line in data.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no message"


def sign(message: bytes, key: Path) -> str:
    """The armored signature (`-----BEGIN SSH SIGNATURE-----`) of `message` by the private
    key at `key` (or the public key of a key held by ssh-agent)."""
    if not key.is_file():
        raise SigningError(f"{key}: no such key file")
    done = _keygen("sign", "-f", str(key), "-n", NAMESPACE, message=message)
    text = done.stdout.decode(errors="replace")
    if done.returncode != 0 or "BEGIN SSH SIGNATURE" not in text:
        raise SigningError(f"{key}: ssh-keygen could not sign: {_last_line(done.stderr)}")
    return text


def verify(message: bytes, signature: str, allowed_signers: Path) -> str:
    """The principal of `allowed_signers` whose key made `signature` over `message`;
    SigningError with the reason otherwise."""
    with tempfile.TemporaryDirectory(prefix="skillbench-sig-") as tmp:
        sig = Path(tmp) / "receipt.sig"
        sig.write_text(signature)
        found = _keygen("find-principals", "-s", str(sig), "-f", str(allowed_signers), message=b"")
        principals = found.stdout.decode(errors="replace").split()
        if found.returncode != 0 or not principals:
            raise SigningError(f"it is not signed by a key listed in {allowed_signers}")
        for principal in principals:
            done = _keygen(
                "verify",
                *("-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE, "-s", str(sig)),
                message=message,
            )
            if done.returncode == 0:
                return principal
    raise SigningError(
        f"its signature (by {principals[0]}) does not verify: the receipt was changed after "
        "it was signed"
    )

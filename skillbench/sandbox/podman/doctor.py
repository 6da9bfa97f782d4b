"""`skillbench doctor`: what the sandbox layer needs, and the exact command that fixes each gap."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec

from skillbench.sandbox.base import SandboxError
from skillbench.sandbox.podman.connection import NO_LOCAL_SERVICE, OWN, shown
from skillbench.sandbox.podman.hostcli import host_env
from skillbench.sandbox.podman.image import IMAGE, image_exists
from skillbench.sandbox.podman.imageload import in_service
from skillbench.sandbox.podman.reach import chosen, unanswered
from skillbench.sandbox.runtime import runtime_dir

PODMAN = "install podman: https://podman.io/docs/installation"
CONF_DROPIN = Path("/etc/containers/containers.conf.d/50-skillbench.conf")


class Finding(msgspec.Struct, frozen=True):
    """One thing checked: whether it is fine, what was seen, and how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def _binary(name: str, package: str) -> Finding:
    found = shutil.which(name) or next(
        (p for p in (f"/usr/bin/{name}", f"/usr/sbin/{name}") if Path(p).exists()), None
    )
    if found:
        return Finding(name, True, found)
    return Finding(name, False, "not installed", f"apt-get install -y {package}")


def _service() -> Finding:
    """Which podman service the sandboxes would use, over what, and whether it shares this
    host's filesystem (which executor channel its sandboxes use: sandbox/podman/channel.py)."""
    name = "podman service"
    try:
        connection = chosen()
    except SandboxError as exc:
        return Finding(name, False, str(exc), "fix the named setting or file")
    if connection is None and sys.platform != "linux":
        return Finding(name, False, "none configured", NO_LOCAL_SERVICE)
    if connection is None:
        return Finding(
            name,
            True,
            f"{OWN}, started per run under {runtime_dir()}: unix, shares this host's filesystem",
        )
    where = f"{shown(connection.url)} (from {connection.source})"
    problem = unanswered(connection, 10)
    if problem and connection.transport == "ssh":  # ssh says which part failed
        return Finding(name, False, f"{where} does not answer over ssh", problem)
    if problem:
        return Finding(
            name,
            False,
            f"{where} does not answer",
            "start it (`podman machine start` for a podman machine) or unset CONTAINER_HOST",
        )
    if connection.shares_filesystem:
        return Finding(name, True, f"{where}: unix, shares this host's filesystem")
    return Finding(
        name,
        True,
        f"{where}: {connection.transport}, does not share this host's filesystem "
        "(sandboxes get their files and executor channel through the API)",
    )


def _in_service() -> list[Finding]:
    """For a service with storage of its own: whether it holds the sandbox image yet."""
    connection = chosen()
    if connection is None or connection.shares_filesystem:
        return []
    try:
        held = in_service(connection, IMAGE)
    except Exception as exc:  # (it answered a moment ago: say what it said now)
        return [Finding("image in service", False, str(exc)[-300:], "rerun `skillbench doctor`")]
    return [
        Finding(
            "image in service",
            True,
            f"{IMAGE} is there"
            if held
            else f"{IMAGE} not loaded yet: the first sandbox loads it, `skillbench image "
            "build` loads it now",
        )
    ]


def _linux_host() -> list[Finding]:
    """podman, runc, mmdebstrap and the drop-in selecting runc on this Linux host."""
    findings = [
        _binary("podman", "podman"),
        _binary("runc", "runc"),
        _binary("mmdebstrap", "mmdebstrap"),
    ]
    if CONF_DROPIN.is_file() and "runc" in CONF_DROPIN.read_text():
        findings.append(Finding("podman config", True, str(CONF_DROPIN)))
    else:
        findings.append(
            Finding("podman config", False, f"{CONF_DROPIN} missing", "bash scripts/setup-host.sh")
        )
    if findings[0].ok:
        info = subprocess.run(
            ["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"],
            capture_output=True,
            text=True,
            env=host_env(),  # this host's runtime, whichever service the sandboxes use
        )
        if info.returncode == 0:
            runtime = info.stdout.strip()
            findings.append(
                Finding(
                    "podman runtime",
                    runtime == "runc",
                    runtime,
                    "" if runtime == "runc" else "bash scripts/setup-host.sh (selects runc)",
                )
            )
        else:
            findings.append(
                Finding(
                    "podman info", False, info.stderr.strip()[-300:], "bash scripts/setup-host.sh"
                )
            )
    return findings


def diagnose() -> list[Finding]:
    """Check podman, its runtime, the configuration drop-in, the service and the image."""
    if sys.platform != "linux":  # the runtime and its config are the podman machine VM's
        podman = _binary("podman", "podman")
        findings = [podman if podman.ok else Finding("podman", False, "not installed", PODMAN)]
    else:
        findings = _linux_host()
    findings.append(service := _service())
    if image_exists(IMAGE):
        findings.append(Finding("sandbox image", True, IMAGE))
        if service.ok:
            findings.extend(_in_service())
    else:
        findings.append(
            Finding("sandbox image", False, f"{IMAGE} missing", "skillbench image build")
        )
    return findings

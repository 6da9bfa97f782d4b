"""What a checker runs with (stage.py starts it): a fixed environment, CHECK_ENV (a known
PATH, no user site-packages, git that runs nothing from the repository the agent left), and
`skillbench` on that PATH: the host's own install mounted read-only (the local channel), or
a one-line refusal (the api channel).
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from skillbench.sandbox.base import CASE_DIR, Mount

TOOLS_DIR = "/opt/skillbench"  # skillbench itself, read-only, for checks that call it
PY_DIR = f"{TOOLS_DIR}/py"  # the checker's sitecustomize (_SITE), read-only
# git in a check reads the repository the agent left: none of the config that makes git run
# a program (hooks, fsmonitor; also when an include brings it in) may come from it. Settings
# given in the environment win over every config file, and no system or global file is read.
_GIT = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "safe.directory": "*",  # /work is the checker's after the handover; any other repo too
}
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_PAGER": "cat",
    # a repository the candidate's code made in /tmp (or /logs, /dev/shm) is not one git in
    # a later check climbs into from a folder below it (its filters would run as the checker)
    "GIT_CEILING_DIRECTORIES": "/tmp:/var/tmp:/dev/shm:/logs",
    "GIT_CONFIG_COUNT": str(len(_GIT)),
    **{f"GIT_CONFIG_KEY_{i}": key for i, key in enumerate(_GIT)},
    **{f"GIT_CONFIG_VALUE_{i}": value for i, value in enumerate(_GIT.values())},
}
# The checker's environment is fixed, not inherited: no user site-packages, a known PATH
# (with `skillbench` on it), git as above.
CHECK_ENV = {
    "PATH": f"/usr/local/bin:/usr/bin:/bin:{TOOLS_DIR}/bin",
    "PYTHONNOUSERSITE": "1",
    "PYTHONPATH": PY_DIR,
    "LANG": "C.UTF-8",
    "CASE": CASE_DIR,
    **GIT_ENV,
}
# The checker's container keeps the image's own PATH (its `ENV`) aside: the executor puts the
# fixed one above in place at start and the image's, without any folder the agent could
# write (the workspace, /tmp, a HOME), at IMAGE_PATH, for the scripts that run as root
# (ROOT_SCRIPT), as their source runs them in its image (docs/trust.md).
FIXED_PATH, IMAGE_PATH = "SKILLBENCH_CHECK_PATH", "SKILLBENCH_IMAGE_PATH"


def container_env() -> dict[str, str]:
    """CHECK_ENV as the checker container is created with it (the executor sets PATH)."""
    env = dict(CHECK_ENV)
    env[FIXED_PATH] = env.pop("PATH")
    return env


# bash SCRIPT as a source's root verifier or solution: the image's PATH, skillbench's tools last
ROOT_SCRIPT = (
    f'PATH="${{{IMAGE_PATH}:-$PATH}}:{TOOLS_DIR}/bin"; export PATH; unset {IMAGE_PATH}; '
    'exec bash "$0"'
)
# `skillbench` in the checker: the host's own package and its dependencies, mounted
# read-only; it runs on the image's python3 when that is the host's Python version.
_WRAPPER = f"""#!/bin/sh
# -I: isolated, so nothing in the agent's /work (the current folder) or PYTHON* variables can
# stand in for skillbench or its dependencies; the mounted paths go first on sys.path
run() {{ python3 -I -c "import sys; sys.path[:0] = ['{TOOLS_DIR}/src', '{TOOLS_DIR}/site']; $1" \\
  "$@"; }}
if ! run 'import msgspec' 2>/dev/null; then
  echo "skillbench: not usable in this checker (its python3 is not the host's Python %s)" >&2
  exit 2
fi
run 'from skillbench.cli import main; sys.exit(main(sys.argv[2:]))' "$@"
"""


# python3 -c, -m and stdin put the current folder (a check's is /work) first on sys.path, so a
# json.py or pytest.py of the agent's would run when a check's own snippet imports json or
# runs `python3 -m pytest` (redteam8 GR2-py). This sitecustomize (on PYTHONPATH, read-only)
# serves a top-level module from the interpreter's own folders (the standard library,
# site-packages, what the check put on PYTHONPATH) whenever it is there, and the workspace
# only the names nothing else has: a check that imports the candidate's own modules still
# can (it asked for that code), one that imports the standard library or an installed tool
# runs none of the agent's. PYTHONSAFEPATH would also drop a verifier script's own folder,
# which imports of its siblings need, and the workspace that `python3 -m pytest` puts there.
_SITE = """import os as _os, sys as _sys
from importlib.machinery import PathFinder as _PathFinder


def _agents(entry):
    # (the places the candidate's code can write: the workspace, and /tmp, /dev/shm, /logs)
    where = _os.path.realpath(entry or _os.getcwd())
    return any(where == p or where.startswith(p + "/") for p in _AGENTS)


_AGENTS = ("/work", "/tmp", "/var/tmp", "/dev/shm", "/logs")


class _InstalledFirst:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is not None:
            return None  # (a package's submodule comes from where the package came from)
        found = _PathFinder.find_spec(name, [p for p in _sys.path if not _agents(p)], target)
        if found is not None and found.loader is not None:
            return found
        if name in getattr(_sys, "stdlib_module_names", ()):  # (3.10 on; an image's may be older)
            raise ModuleNotFoundError(f"No module named {name!r} (not from the workspace)")
        return None  # the workspace's own module, or a namespace package: as python finds it


_at = next(
    (i for i, f in enumerate(_sys.meta_path) if f is _PathFinder), len(_sys.meta_path)
)
_sys.meta_path.insert(_at, _InstalledFirst)  # (after the builtin and frozen ones)
"""


# On the api channel nothing is mounted: the host's install (its dependencies are hundreds of
# MB) is not copied into every checker, and `skillbench` there says so.
_NOT_COPIED = """#!/bin/sh
echo "skillbench: not in this checker: the podman service shares no filesystem with the host, \
so the host's install is not mounted; run the check on the host, or use a local podman \
(SKILLBENCH_SANDBOX_CHANNEL=local)" >&2
exit 2
"""


def tool_mounts(host_dir: Path, channel: str) -> tuple[Mount, ...]:
    """The mounts that put `skillbench` on the checker's PATH (on the api channel, a
    `skillbench` that refuses in one line)."""
    bin_dir, py_dir = host_dir / "tools-bin", host_dir / "tools-py"
    bin_dir.mkdir(exist_ok=True)
    py_dir.mkdir(exist_ok=True)
    (py_dir / "sitecustomize.py").write_text(_SITE)
    site_mount = Mount(str(py_dir), PY_DIR, read_only=True)
    wrapper = bin_dir / "skillbench"
    if channel == "api":
        wrapper.write_text(_NOT_COPIED)
        wrapper.chmod(0o755)
        return (Mount(str(bin_dir), f"{TOOLS_DIR}/bin", read_only=True), site_mount)
    wrapper.write_text(_WRAPPER % ".".join(map(str, sys.version_info[:2])))
    wrapper.chmod(0o755)
    package = Path(__file__).resolve().parents[1]  # the skillbench package this runs from
    site = Path(msgspec.__file__).resolve().parent.parent  # the installed dependencies
    return (
        Mount(str(bin_dir), f"{TOOLS_DIR}/bin", read_only=True),
        site_mount,
        Mount(str(package), f"{TOOLS_DIR}/src/skillbench", read_only=True),
        Mount(str(site), f"{TOOLS_DIR}/site", read_only=True),
    )

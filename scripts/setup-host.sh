#!/usr/bin/env bash
# Host set-up for skillbench's podman sandboxes. Idempotent: installs only what is missing.
# Needs root (or sudo) for apt and /etc/containers; see ../shared podman notes for why each
# setting is here (runc over crun, cgroupfs, short exit_command_delay). No init binary is
# needed in a sandbox: skillbench's executor is each sandbox's PID 1 and reaps orphans itself
# (catatonit is installed for the infra container of service pods).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need=()
# npm fetches agent CLIs (Claude Code, Codex) from the npm registry; no node is needed at run
# time. Chromium and its driver are for the tests of report.html in a real headless browser.
# ripgrep: OpenCode's skill tool runs `rg`, copied from the host into its image.
for pair in podman:podman runc:runc mmdebstrap:mmdebstrap git:git npm:npm chromium:chromium rg:ripgrep \
            chromedriver:chromium-driver ssh-keygen:openssh-client sshd:openssh-server docker-registry:docker-registry; do
  bin=${pair%%:*}; pkg=${pair##*:}
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/bin/$bin" ] || [ -x "/usr/sbin/$bin" ] || need+=("$pkg")
done
# catatonit: podman builds the infra ("pause") image of a case's service pod from it, locally
# (no registry to pull one from); it is only a Recommends of podman.
command -v catatonit >/dev/null 2>&1 || [ -x /usr/libexec/podman/catatonit ] || need+=(catatonit)
# Debian's own python3 needs python3-venv for `python3 -m venv`.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-host: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need[@]}" ca-certificates >/dev/null
fi

conf=/etc/containers/containers.conf.d/50-skillbench.conf
want='[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
pids_limit = 1024
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
exit_command_delay = 10'
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
  echo "setup-host: writing $conf"
  $SUDO mkdir -p "$(dirname "$conf")"
  printf '%s\n' "$want" | $SUDO tee "$conf" >/dev/null
fi

"""What the Harbor importer says of each task.toml field of Harbor's own reference that no
native field takes (docs/formats.md, "Imported suites"). The reference is Harbor's
`TaskConfig` (src/harbor/models/task/config.py: PackageInfo, VerifierConfig, SolutionConfig,
AgentConfig, EnvironmentConfig) and its separate-verifier fields (harborframework.com, "Verify
Harbor tasks in a separate sandbox": top-level `artifacts`, `[verifier] environment_mode`,
`[verifier.environment]`). The fields the importer maps are harbor.py's `_KNOWN`; every other
reference field is said here, in Harbor's words, so none is dropped without one and none is
called "not a Harbor field" (tests/importers/test_format_fields.py lists them all)."""

from __future__ import annotations

_PACKAGE = "Harbor's registry package metadata; the case is named after the task's folder"
_PHASE_NET = (
    "a phase's own network override; both phases here get the network "
    "`[environment]` gives (the case's `network:` can differ per phase)"
)
_SHARED = (
    "the verifier here always runs in a fresh checker that receives only the workspace, as "
    "Harbor's separate mode does; a shared-mode verifier's view of the agent's container "
    "(its processes, files outside the workspace) is not there"
)

SAID: dict[tuple[str, ...], str] = {
    ("schema_version",): "ignored: the task format's version",
    ("source",): "ignored: where the task came from (provenance only)",
    ("task", "name"): f"ignored: {_PACKAGE}",
    ("task", "description"): f"ignored: {_PACKAGE}",
    ("task", "authors"): f"ignored: {_PACKAGE}",
    ("task", "keywords"): f"ignored: {_PACKAGE}",
    ("agent", "network_mode"): f"differs: {_PHASE_NET}",
    ("agent", "allowed_hosts"): f"differs: {_PHASE_NET}",
    ("verifier", "network_mode"): f"differs: {_PHASE_NET}",
    ("verifier", "allowed_hosts"): f"differs: {_PHASE_NET}",
    ("verifier", "environment_mode"): f"differs: {_SHARED}",
    ("verifier", "environment"): (
        "differs: the checker runs in the task's own image, with the case's resources; "
        "a separate verifier image or its own limits are not used"
    ),
    ("artifacts",): (
        "differs: only the workspace reaches the checker; an artifact outside it is not copied"
    ),
    ("environment", "gpu_types"): "ignored: no GPU is given to a sandbox here",
    ("environment", "healthcheck"): (
        "differs: not run; the agent starts once the sandbox's executor answers (a case's "
        "compose services have their own healthchecks)"
    ),
    ("environment", "memory"): (
        "differs: Harbor's deprecated spelling of memory_mb; noted, not applied"
    ),
    ("environment", "storage"): (
        "differs: Harbor's deprecated spelling of storage_mb; podman's storage here is not limited"
    ),
}

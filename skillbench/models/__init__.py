"""Model providers behind one protocol: `anthropic/<model>`, `openai/<model>`,
`scripted/<name>`."""

from __future__ import annotations

from skillbench.models.base import Model

PROVIDERS = ("anthropic", "openai", "scripted")
DEFAULT_MODEL = "anthropic/claude-sonnet-4-6"


class ModelRefError(ValueError):
    """A model reference that names no provider we know."""


def check_ref(ref: str) -> None:
    """Raise ModelRefError unless `ref` names a known provider (and, for scripted, a script)."""
    provider, _, name = ref.partition("/")
    if provider not in PROVIDERS or not name:
        raise ModelRefError(
            f"model {ref!r} must be anthropic/<model>, openai/<model> or scripted/<name>"
        )
    if provider == "scripted":
        from skillbench.models.script import ScriptError
        from skillbench.models.scripted import find_script

        try:
            find_script(name)
        except ScriptError as exc:
            raise ModelRefError(str(exc)) from None


def resolve_model(ref: str, *, max_retries: int = 4, timeout: float = 600.0) -> Model:
    """Build the Model for a reference such as `anthropic/claude-sonnet-4-6`."""
    check_ref(ref)
    provider = ref.partition("/")[0]
    if provider == "anthropic":
        from skillbench.models.anthropic_api import AnthropicModel

        return AnthropicModel(ref, max_retries=max_retries, timeout=timeout)
    if provider == "openai":
        from skillbench.models.openai_api import OpenAIModel

        return OpenAIModel(ref, max_retries=max_retries, timeout=timeout)
    from skillbench.models.scripted import ScriptedModel

    return ScriptedModel(ref)

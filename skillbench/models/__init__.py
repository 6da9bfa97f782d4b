"""Model providers behind one protocol, by name: `anthropic/<model>`, `openai/<model>`,
`scripted/<name>`. A reference is parsed once into a `ModelRef`; a new provider is one module
and one entry in PROVIDERS."""

from __future__ import annotations

import difflib
from collections.abc import Callable

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.models.base import Model

DEFAULT_MODEL = "anthropic/claude-sonnet-4-6"


class ModelRefError(SkillbenchError, ValueError):
    """A model reference that names no provider we know."""


class Provider(msgspec.Struct, frozen=True):
    """How to build a provider's models, and the variable that holds its key (if any)."""

    make: Callable[..., Model]
    key_var: str | None


def _anthropic(ref: str, **options: float) -> Model:
    from skillbench.models.anthropic_api import AnthropicModel

    return AnthropicModel(ref, **options)  # type: ignore[arg-type]


def _openai(ref: str, **options: float) -> Model:
    from skillbench.models.openai_api import OpenAIModel

    return OpenAIModel(ref, **options)  # type: ignore[arg-type]


def _scripted(ref: str, **_: float) -> Model:
    from skillbench.models.scripted import ScriptedModel

    return ScriptedModel(ref)


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(_anthropic, "ANTHROPIC_API_KEY"),
    "openai": Provider(_openai, "OPENAI_API_KEY"),
    "scripted": Provider(_scripted, None),  # a fixed script, offline: not a model
}


class ModelRef(msgspec.Struct, frozen=True):
    """A parsed model reference: provider and the provider's own model name."""

    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"

    @property
    def scripted(self) -> bool:
        """A fixed script standing in for a model (shows the pipeline, measures nothing)."""
        return self.provider == "scripted"

    @property
    def key_var(self) -> str | None:
        return PROVIDERS[self.provider].key_var


def parse_model(text: str) -> ModelRef:
    """`provider/name` as a ModelRef; ModelRefError (with a did-you-mean) otherwise."""
    provider, _, name = text.partition("/")
    if provider not in PROVIDERS or not name:
        near = difflib.get_close_matches(provider, PROVIDERS, n=1)
        hint = f" (did you mean {near[0]}/{name}?)" if near and name else ""
        raise ModelRefError(
            f"model {text!r} must be anthropic/<model>, openai/<model> or scripted/<name>{hint}"
        )
    if provider == "scripted":
        from skillbench.models.script import ScriptError
        from skillbench.models.scripted import find_script

        try:
            find_script(name)
        except ScriptError as exc:
            raise ModelRefError(str(exc)) from None
    return ModelRef(provider, name)


def resolve_model(ref: str | ModelRef, *, max_retries: int = 4, timeout: float = 600.0) -> Model:
    """Build the Model for a reference such as `anthropic/claude-sonnet-4-6`."""
    parsed = ref if isinstance(ref, ModelRef) else parse_model(ref)
    return PROVIDERS[parsed.provider].make(str(parsed), max_retries=max_retries, timeout=timeout)

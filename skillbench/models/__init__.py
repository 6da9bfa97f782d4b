"""Model providers behind one protocol, by name: `anthropic/<model>`, `openai/<model>`,
`google/<model>`, `scripted/<name>`. A reference is parsed once into a `ModelRef`; a new
provider is one module and one `Provider` line in PROVIDERS, or, from another package, a
`Provider` in the entry-point group `skillbench.model_providers`; its models are tested
against models/fake_server.py."""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable
from urllib.parse import urlsplit

import msgspec

from skillbench.errors import SkillbenchError
from skillbench.models.base import Model
from skillbench.models.transport import custom_ca, proxy_for
from skillbench.plugins import MODEL_PROVIDER_GROUP, load_group

DEFAULT_MODEL = "anthropic/claude-sonnet-4-6"


class ModelRefError(SkillbenchError, ValueError):
    """A model reference that names no provider we know."""

    def lines(self) -> list[str]:
        return [f"skillbench: error: --model: {self}"]


class Provider(msgspec.Struct, frozen=True):
    """How to build a provider's models, the variable that holds its key (if any), and where
    its SDK sends requests: the base URL variable the SDK honours, else the provider's own."""

    make: Callable[..., Model]
    key_var: str | None
    base_var: str | None = None
    own_base: str | None = None


def _anthropic(ref: str, **options: float) -> Model:
    from skillbench.models.anthropic_api import AnthropicModel

    return AnthropicModel(ref, **options)  # type: ignore[arg-type]


def _openai(ref: str, **options: float) -> Model:
    from skillbench.models.openai_api import OpenAIModel

    return OpenAIModel(ref, **options)  # type: ignore[arg-type]


def _google(ref: str, **options: float) -> Model:
    from skillbench.models.google_api import GoogleModel

    return GoogleModel(ref, **options)  # type: ignore[arg-type]


def _scripted(ref: str, **_: float) -> Model:
    from skillbench.models.scripted import ScriptedModel

    return ScriptedModel(ref)


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(
        _anthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"
    ),
    "openai": Provider(_openai, "OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "google": Provider(
        _google,
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "https://generativelanguage.googleapis.com",
    ),
    "scripted": Provider(_scripted, None),  # a fixed script, offline: not a model
}


def _provider(name: str, obj: object) -> str | None:
    if not isinstance(obj, Provider):
        return f"is a {type(obj).__name__}, not a skillbench.models.Provider"
    return None


@functools.cache
def plugin_providers() -> dict[str, Provider]:
    """The model providers installed packages register (read once, on first use)."""
    found = load_group(MODEL_PROVIDER_GROUP, PROVIDERS, _provider)
    return {name: obj for name, obj in found.items() if isinstance(obj, Provider)}


def providers() -> dict[str, Provider]:
    """Every model provider by name: the built-ins, then the packages'."""
    return {**PROVIDERS, **plugin_providers()}


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
        return providers()[self.provider].key_var


def parse_model(text: str) -> ModelRef:
    """`provider/name` as a ModelRef; ModelRefError (with a did-you-mean) otherwise."""
    provider, _, name = text.partition("/")
    known = providers()
    if provider not in known or not name:
        near = (
            ["google"] if provider == "gemini" else difflib.get_close_matches(provider, known, n=1)
        )
        hint = f" (did you mean {near[0]}/{name}?)" if near and name else ""
        raise ModelRefError(
            f"model {text!r} must be anthropic/<model>, openai/<model>, google/<model> or "
            f"scripted/<name>{_installed()}{hint}"
        )
    if provider == "scripted":
        from skillbench.models.script import ScriptError
        from skillbench.models.scripted import find_script

        try:
            find_script(name)
        except ScriptError as exc:
            raise ModelRefError(str(exc)) from None
    return ModelRef(provider, name)


def _installed() -> str:
    added = plugin_providers()
    return f" (installed: {', '.join(f'{n}/<model>' for n in added)})" if added else ""


def resolve_model(ref: str | ModelRef, *, max_retries: int = 4, timeout: float = 600.0) -> Model:
    """Build the Model for a reference such as `anthropic/claude-sonnet-4-6`."""
    parsed = ref if isinstance(ref, ModelRef) else parse_model(ref)
    make = providers()[parsed.provider].make
    return make(str(parsed), max_retries=max_retries, timeout=timeout)


SCRIPTED_ENDPOINT = "scripted"  # a fixed script played in-process or by a local fake server
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Endpoint(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where a model was reached (docs/trust.md): scheme and host of the base URL, never its
    credentials or path; the proxy it went through and the CA variables that replaced the
    system's trust store; and whether that is the provider's own API (its URL, no proxy, no
    custom CA). The last two are left out when unset, so older receipts keep their bytes."""

    url: str  # https://api.anthropic.com, http://127.0.0.1:8080, or "scripted"
    provider: bool
    proxy: str | None = None  # scheme://host[:port] of the proxy, as origin() writes it
    ca: list[str] = []  # e.g. ["SSL_CERT_FILE"]: the variables, never their paths


def origin(url: str) -> str:
    """`scheme://host[:port]` of a URL: no userinfo, path, query or fragment (a gateway's
    path or a `user:key@` can hold a secret), the scheme and host lowercased, a default port
    dropped. "unknown" when the URL names no host."""
    parts = urlsplit(url.strip())
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        return "unknown"
    if not parts.scheme or not host:
        return "unknown"
    scheme = parts.scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    kept = f":{port}" if port is not None and port != _DEFAULT_PORTS.get(scheme) else ""
    return f"{scheme}://{shown}{kept}"


# the providers' own APIs, as origin() writes them
PROVIDER_ENDPOINTS = tuple(origin(p.own_base) for p in PROVIDERS.values() if p.own_base)


def base_url(ref: ModelRef) -> str | None:
    """The base URL a provider's SDK (and a CLI agent's broker) sends requests to: the
    provider's base URL variable when set, else its own API; None for a scripted model."""
    provider = providers()[ref.provider]
    if provider.own_base is None:
        return None
    return (os.environ.get(provider.base_var) if provider.base_var else None) or provider.own_base


def endpoint(ref: str | ModelRef) -> Endpoint:
    """The endpoint a model reference reaches from this environment."""
    parsed = ref if isinstance(ref, ModelRef) else parse_model(ref)
    base = base_url(parsed)
    if base is None:
        return Endpoint(SCRIPTED_ENDPOINT, provider=False)
    url = origin(base)
    through = proxy_for(base)
    proxy = origin(through) if through else None
    ca = custom_ca()
    own = url == origin(providers()[parsed.provider].own_base or "") and not proxy and not ca
    return Endpoint(url, provider=own, proxy=proxy, ca=ca)

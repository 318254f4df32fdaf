"""The Python agent API (docs/agents.md): a policy receives an observation of the screen and
returns its provider's raw response; transports speak the providers' HTTP APIs (standard library
only, used when an API key is set); a cassette records and replays provider exchanges.

The engine's task lane (``task.begin/turn``), which parses these responses with its adapters and
runs the mapped actions, is not built yet; ``run_task`` will join the two."""
from .cassette import CassetteHttp
from .policy import Observation, Policy, ScriptedPolicy
from .transport import (AgentError, AnthropicTransport, GeminiTransport, HttpResponse,
                        OpenAITransport, UrllibHttp, transport_from_env)

__all__ = [
    "AgentError",
    "AnthropicTransport",
    "CassetteHttp",
    "GeminiTransport",
    "HttpResponse",
    "Observation",
    "OpenAITransport",
    "Policy",
    "ScriptedPolicy",
    "UrllibHttp",
    "transport_from_env",
]

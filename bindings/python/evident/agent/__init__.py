"""The Python agent API (docs/agents.md): a policy receives an observation of the screen and
returns its provider's raw response; transports speak the providers' HTTP APIs (standard library
only, used when an API key is set); a cassette records and replays provider exchanges.

``run_task`` joins a policy to the engine's task lane (``task`` op: begin, turn, abort, status),
which parses each response with its adapter and runs the mapped actions; ``OcrFormPolicy`` is a
real, model-free policy that reads the screen with tesseract."""
from .cassette import CassetteHttp
from .ocr import OcrFormPolicy, ocr_words
from .policy import Observation, Policy, ScriptedPolicy
from .task import Task, TaskRun, run_task, task_sha256
from .transport import (AgentError, AnthropicTransport, GeminiTransport, HttpResponse,
                        OpenAITransport, UrllibHttp, transport_from_env)

__all__ = [
    "AgentError",
    "AnthropicTransport",
    "CassetteHttp",
    "GeminiTransport",
    "HttpResponse",
    "OcrFormPolicy",
    "Observation",
    "OpenAITransport",
    "Policy",
    "ScriptedPolicy",
    "Task",
    "TaskRun",
    "UrllibHttp",
    "ocr_words",
    "run_task",
    "task_sha256",
    "transport_from_env",
]

"""Policies: what the engine shows a model each turn, and the protocol a policy implements."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Protocol, runtime_checkable

from ..errors import AgentError


@dataclass(frozen=True)
class Observation:
    """One turn's view for the policy.

    ``png`` is the image the model is shown (the engine's frame, scaled when the provider needs a
    smaller one), ``sha256`` its digest; ``tool_results`` is the provider-native content answering
    the previous turn's calls (None on the first turn); ``retry_prompt`` the provider-native
    message asking again for a valid final answer (None unless the last answer was invalid);
    ``mode`` the task's mode (``stage`` | ``attest``); ``frame_sha256`` the digest of the
    full-display frame the image was made from (equal to ``sha256`` unless the engine scaled it)."""

    png: bytes
    sha256: str
    width: int
    height: int
    turn: int
    turns_left: int
    actions_left: int
    deadline_ms_left: int
    tool_results: Any = None
    retry_prompt: Any = None
    results: List[Dict[str, Any]] = field(default_factory=list)
    mode: str = "stage"
    frame_sha256: str = ""

    @staticmethod
    def first(png: bytes, width: int, height: int, *, turns_left: int = 12, actions_left: int = 64,
              deadline_ms_left: int = 180_000) -> "Observation":
        """The first turn's observation of a frame."""
        return Observation(png=png, sha256=hashlib.sha256(png).hexdigest(), width=width,
                           height=height, turn=0, turns_left=turns_left,
                           actions_left=actions_left, deadline_ms_left=deadline_ms_left)


@runtime_checkable
class Policy(Protocol):
    """Anything callable with an :class:`Observation` that returns the provider's response
    object exactly as the provider sent it (a dict). A plain function works too."""

    def __call__(self, observation: Observation) -> Dict[str, Any]: ...


class ScriptedPolicy:
    """Returns prepared provider responses in order (tests, demos, replaying a known run).
    Past the last one: ``AgentError("agent-script-exhausted")``."""

    def __init__(self, responses: Iterable[Dict[str, Any]]) -> None:
        self._responses = list(responses)
        self.observations: List[Observation] = []

    def __call__(self, observation: Observation) -> Dict[str, Any]:
        self.observations.append(observation)
        if len(self.observations) > len(self._responses):
            raise AgentError("agent-script-exhausted",
                             f"the script has {len(self._responses)} responses")
        return self._responses[len(self.observations) - 1]

    @property
    def remaining(self) -> int:
        return len(self._responses) - len(self.observations)


def check_response(response: Any) -> Dict[str, Any]:
    """A policy's return value must be a JSON object (``agent-policy-response`` otherwise)."""
    if not isinstance(response, dict):
        raise AgentError("agent-policy-response", "the policy must return the provider's response object (a dict)")
    return response


__all__ = ["Observation", "Policy", "ScriptedPolicy", "check_response"]

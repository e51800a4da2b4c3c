"""Versioned prompt files (`prompts/<name>.v<N>.txt`): `### system` and `### user` parts,
with {placeholders}, and optional worked examples (`### example_user` then `### example_assistant`,
as many pairs as given) sent as earlier turns of the chat: a small model follows a shown answer
far better than a described one. The version is recorded in every item the prompt produced."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"


@dataclass(frozen=True)
class Prompt:
    version: str
    system: str
    user: str
    examples: tuple[tuple[str, str], ...] = ()
    """(user, assistant) turns shown before the request, in order."""

    def render(self, **values: str) -> tuple[str, str]:
        return self.system.format(**values), self.user.format(**values)

    def messages(self, **values: str) -> tuple[tuple[str, str], ...]:
        """The chat: the system part, each worked example as a user and an assistant turn, the request."""
        shots = tuple(turn for u, a in self.examples for turn in (("user", u), ("assistant", a)))
        system, user = self.render(**values)
        return ((("system", system),) if system else ()) + shots + (("user", user),)


@cache
def load_prompt(name: str) -> Prompt:
    """The newest version of prompt `name`."""
    files = sorted(PROMPT_DIR.glob(f"{name}.v*.txt"), key=lambda p: int(re.search(r"\.v(\d+)\.txt$", p.name).group(1)))
    if not files:
        raise FileNotFoundError(f"no prompt file {name}.v*.txt in {PROMPT_DIR}")
    path = files[-1]
    parts = re.split(r"^### (system|user|example_user|example_assistant)\s*$", path.read_text(encoding="utf-8"),
                     flags=re.M)
    named = [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]
    sections = dict(named)
    shots_u = [t for k, t in named if k == "example_user"]
    shots_a = [t for k, t in named if k == "example_assistant"]
    if len(shots_u) != len(shots_a):
        raise ValueError(f"{path}: {len(shots_u)} example_user parts but {len(shots_a)} example_assistant parts")
    return Prompt(version=path.name[: -len(".txt")], system=sections.get("system", ""), user=sections["user"],
                  examples=tuple(zip(shots_u, shots_a)))

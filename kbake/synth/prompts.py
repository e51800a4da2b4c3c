"""Versioned prompt files (`prompts/<name>.v<N>.txt`): `### system` and `### user` parts,
with {placeholders}. The version is recorded in every item the prompt produced."""

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

    def render(self, **values: str) -> tuple[str, str]:
        return self.system.format(**values), self.user.format(**values)


@cache
def load_prompt(name: str) -> Prompt:
    """The newest version of prompt `name`."""
    files = sorted(PROMPT_DIR.glob(f"{name}.v*.txt"), key=lambda p: int(re.search(r"\.v(\d+)\.txt$", p.name).group(1)))
    if not files:
        raise FileNotFoundError(f"no prompt file {name}.v*.txt in {PROMPT_DIR}")
    path = files[-1]
    parts = re.split(r"^### (system|user)\s*$", path.read_text(encoding="utf-8"), flags=re.M)
    sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    return Prompt(version=path.name[: -len(".txt")], system=sections.get("system", ""), user=sections["user"])

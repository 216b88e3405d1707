"""What a chat is made of: the line a person sends (`UserInput`), the settings a line may change from then on
(`Overrides`), and what `::commands` changed so far (`ChatState`). Front ends build the first two from their terminal
or wire; a `Session` (agent/session.py) keeps the third.

Kept apart from the session and the command registry, which import much more: the engine's per-session state
(agent/live.py) holds a `ChatState`, and the engine is built before the sidecar answers its first request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sunwell.agent.attached_images import ImageInput
from sunwell.agent.mentions import Mention
from sunwell.vocabulary import TrustName


@dataclass(frozen=True)
class Overrides:
    """Settings a line changes for the rest of its chat, as `::model`, `::trust` and `::lens` would (the sidecar
    sends them with a line, the CLI takes them as options). None leaves a setting as it is."""

    model: str | None = None
    trust: TrustName | None = None
    lens: str | None = None
    """A lens name or path."""
    tool_names: Sequence[str] | None = None
    """`--tools` / `--no-tools`: only these tools are offered (none for an empty list)."""


@dataclass(frozen=True)
class UserInput:
    """One line as a person sent it."""

    text: str
    mentions: Sequence[Mention] = ()
    """What the editor attached to the line (`@src/app.py`, `@selection`): read by the turn, within its window."""
    overrides: Overrides = Overrides()
    mentions_in_text: bool = False
    """The `@path` words of `text` that name a workspace file are attached too: a terminal's way to mention one
    (the editor sends its mentions apart, and a label in the text must not attach the file twice)."""
    images: Sequence[ImageInput] = ()
    """Images sent with the line (`--image`, the editor's pasted ones): attached to it by the turn, re-encoded
    (agent/attached_images.py)."""
    replace_turn: str | None = None
    """The turn of the session this line is sent in place of: the conversation goes back to before it first
    (agent/branch.py)."""


@dataclass
class ChatState:
    """What a chat's commands changed; the engine keeps it per session (LiveSession.chat)."""

    session: str | None = None
    """None until the first turn creates one (and again after `::clear`)."""
    model: str | None = None
    """None: the configured model."""
    trust: str | None = None
    """None: the configured trust level."""
    lens: str | None = None
    """Path of the active lens file (the engine resolves names and paths alike)."""
    focus: str | None = None
    tool_names: list[str] | None = None
    """--tools / --no-tools: None offers every tool the trust level and lens allow."""
    terminal: bool = False
    """`sunwell chat` (which also offers `::exit`) rather than the sidecar."""

    def apply(self, overrides: Overrides) -> None:
        for name in ("model", "trust", "lens"):
            if (value := getattr(overrides, name)) is not None:
                setattr(self, name, value)
        if overrides.tool_names is not None:
            self.tool_names = list(overrides.tool_names)

    def instructions(self) -> list[str]:
        """Extra system instructions for the next turn."""
        if not self.focus:
            return []
        return [(f"The user asked you to focus on: {self.focus}. Keep your reading, searching and changes within "
                 "that scope unless the user asks for something outside it.")]

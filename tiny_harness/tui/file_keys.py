"""The file keys: ``f7`` attaches a file to the next message, ``f9`` drops the last one
attached, ``f8`` saves the chosen artifact of the open task.

Files go with the next message: ``f7`` asks for a path and attaches the file when the gateway
would take it (:mod:`.attach`; else a notice says why, and nothing is attached; a notice says
so too of a file no model can be given, kept with the task and named to the model), the files
attached are named above the composer, and they are handed to what is typed next
(:meth:`FileKeys.handed`), attached again when the gateway refuses it. The open task's
artifacts are listed under the conversation, each whole (:mod:`.artifact_list`); ``f8`` saves
the chosen one after a prompt for the path that proposes the artifact's own file name, and
never over an existing file unless the prompt was told so twice.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import ListItem, ListView

from tiny_harness.core.sizes import kib
from tiny_harness.tui.artifact_list import content_of, row_text, save_name, written
from tiny_harness.tui.attach import KEPT, Attached, AttachError, attach, shown
from tiny_harness.tui.following import FollowingApp
from tiny_harness.tui.path_prompt import Chosen, PathPrompt
from tiny_harness.tui.plain import Plain, PlainLabel
from tiny_harness.tui.session import Session
from tiny_harness.tui.view import TaskView


class FileKeys(FollowingApp):
    """The files attached to the next message, the artifacts listed, and their keys."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        #: The artifacts listed, as drawn (by id and line).
        self.artifacts_shown: list[tuple[str, str]] = []
        #: The files attached to the next message, in the order attached.
        self.attached: list[Attached] = []

    # -- files in ----------------------------------------------------------------------------

    def handed(self) -> tuple[Attached, ...]:
        """The files attached, handed to the message about to be sent (attached no more: a
        second message sent meanwhile does not carry them again)."""
        files = tuple(self.attached)
        if files:
            self.attached = []
            self.draw_attached()
        return files

    def draw_attached(self) -> None:
        bar = self.query_one("#attached", Plain)
        bar.update(shown(self.attached))
        bar.display = bool(self.attached)
        self.refresh_bindings()

    def action_attach(self) -> None:
        """Ask for a path, and attach the file there when the gateway would take it."""
        if self._prompting():
            return

        def chosen(picked: Chosen | None) -> None:
            if picked is None:
                return
            try:
                file = attach(picked.path, self.attached)
            except AttachError as exc:
                self.notify(f"Not attached: {exc}", severity="warning")
                return
            self.attached.append(file)
            self.draw_attached()
            if file.unread:
                self.notify(f"Attached {file.name}, but {file.unread}: {KEPT}", severity="warning")

        self.push_screen(PathPrompt("Attach a file to your next message"), chosen)

    def action_drop_attachment(self) -> None:
        if self.attached and not self._prompting():
            dropped = self.attached.pop()
            self.draw_attached()
            self.notify(f"Dropped {dropped.name}", severity="information")

    # -- artifacts out -----------------------------------------------------------------------

    def draw_artifacts(self, view: TaskView) -> None:
        """The task's artifacts, each whole, the chosen one kept chosen."""
        title = self.query_one("#artifacts-title", Plain)
        items = self.query_one("#artifacts", ListView)
        wanted = [(a.artifact_id, row_text(a)) for a in view.artifacts]
        title.display = items.display = bool(wanted)
        if self.artifacts_shown == wanted:
            return
        had = bool(self.artifacts_shown)
        self.artifacts_shown = wanted
        count = len(wanted)
        title.update(
            f"{count} artifact{'' if count == 1 else 's'}: f8 saves the chosen one "
            "(tab, then ↑ ↓ to choose)"
        )
        chosen = self._chosen("#artifacts")
        items.clear()
        for artifact_id, text in wanted:
            items.append(ListItem(PlainLabel(text), name=artifact_id))
        ids = [artifact_id for artifact_id, _ in wanted]
        items.index = ids.index(chosen) if chosen in ids else (0 if ids else None)
        if had != bool(wanted):
            self.refresh_bindings()

    def action_save_artifact(self) -> None:
        """Ask where, and save the chosen artifact there (never over a file unasked)."""
        view = self.view
        if view is None or not view.artifacts:
            self.notify("this task has no artifacts yet", severity="warning")
            return
        if self._prompting():
            return
        chosen = self._chosen("#artifacts")
        artifact = next((a for a in view.artifacts if a.artifact_id == chosen), view.artifacts[0])

        def save(picked: Chosen | None) -> None:
            if picked is None:
                return
            data = content_of(artifact)
            try:
                path = written(picked.path, data, overwrite=picked.overwrite)
            except FileExistsError:
                self.notify(f"Not saved: {picked.path} exists", severity="warning")
            except OSError as exc:
                self.notify(f"Not saved: {exc.strerror or exc}", severity="error")
            else:
                self.notify(f"Saved {artifact.name} ({kib(len(data))}) to {path}")

        title = f"Save artifact {artifact.name} to (a relative path is in {Path.cwd()})"
        self.push_screen(PathPrompt(title, save_name(artifact), saving=True), save)

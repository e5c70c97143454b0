"""Bare ``tiny-harness`` in a real terminal (tmux): with a fresh home it makes the home (0700)
and its file (0600), starts the local cluster, operator and gateway, and shows the UI and
nothing else; ctrl+q gives the terminal back and exits 0; SIGINT exits 130."""

from __future__ import annotations

import os
import shlex
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.eventually import eventually

pytestmark = pytest.mark.controlplane

#: Where the test leaves what the screen showed, for the README.
SCREEN = Path(__file__).resolve().parents[2] / "docs" / "screens" / "tui.txt"


class Terminal:
    """One tmux session running one command, then printing its exit status.

    Each terminal has a tmux server of its own (``-L``): with one shared server, the last
    session's ``kill-session`` sets the server exiting, and the next test's ``new-session``
    could reach it while it exits ("server exited unexpectedly")."""

    def __init__(self, command: str, directory: Path) -> None:
        self.name = f"th-{uuid.uuid4().hex[:8]}"
        self.tmux = ["tmux", "-L", self.name]
        self.exit_file = directory / "exit"
        wrapped = f"{command}; echo EXIT:$? > {shlex.quote(str(self.exit_file))}; sleep 600"
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", "140", "-y", "45", wrapped],
            check=True,
        )

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", self.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def exit_status(self, within: float = 60) -> int:
        text = eventually(
            lambda: (self.exit_file.exists() and self.exit_file.read_text().strip()) or None,
            within=within,
            what="the command to exit",
        )
        return int(str(text).removeprefix("EXIT:"))

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[Terminal, Path]]:
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", 8080)) != 0, "the default gateway port 8080 is taken"
    home = tmp_path / "home"
    env = " ".join(
        f"{k}={shlex.quote(v)}"
        for k, v in {
            "TINY_HARNESS_HOME": str(home),
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "TERM": "xterm-256color",
        }.items()
    )
    command = f"env -i {env} {shlex.quote(sys.executable)} -m tiny_harness.cli.main"
    term = Terminal(command, tmp_path)
    yield term, home
    term.close()


def test_bare_tiny_harness_starts_everything_shows_the_ui_and_quits_cleanly(
    terminal: tuple[Terminal, Path],
) -> None:
    term, home = terminal
    eventually(lambda: "Complete" in term.screen() or None, within=120, what="the TUI's footer")
    screen = term.screen()
    assert "no task open" in screen
    assert "Traceback" not in screen
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(home / "config.toml").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home / "tiny-harness.log").st_mode) == 0o600

    # A first conversation, with the demo model (no model is configured in a fresh home).
    term.keys("Plan the release", "Enter")
    eventually(lambda: "demo model" in term.screen() or None, within=60, what="the demo's reply")
    eventually(
        lambda: "INPUT_REQUIRED" in term.screen() or None, within=30, what="the parked state"
    )
    SCREEN.parent.mkdir(parents=True, exist_ok=True)
    SCREEN.write_text(
        "tiny-harness (the TUI), as the terminal test sees it: `tiny-harness` in a fresh home,\n"
        "one goal typed, the demo model's answer. Written by tests/integration/"
        "test_tui_terminal.py.\n\n" + term.screen()
    )

    term.keys("C-q")
    assert term.exit_status() == 0
    after = term.screen()
    assert "Complete" not in after  # the UI is gone: the terminal is the shell's again
    assert "Traceback" not in after


def test_sigint_stops_the_tui_with_exit_status_130(terminal: tuple[Terminal, Path]) -> None:
    term, home = terminal
    eventually(lambda: "Complete" in term.screen() or None, within=120, what="the TUI's footer")
    pid = subprocess.run(
        ["pgrep", "-f", f"TINY_HARNESS_HOME={home}|tiny_harness.cli.main"],
        capture_output=True,
        text=True,
    ).stdout.split()
    mine = [
        p
        for p in pid
        if f"TINY_HARNESS_HOME={home}"
        in Path(f"/proc/{p}/environ").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    ]
    assert len(mine) == 1, mine
    os.kill(int(mine[0]), 2)
    started = time.monotonic()
    assert term.exit_status() == 130
    assert time.monotonic() - started < 60
    assert "Traceback" not in term.screen()

"""Child processes of the local cluster: each logs to a file in the data directory, is recorded
in its pid file, and dies with the launcher.

``PR_SET_PDEATHSIG`` has the kernel kill a child when the launcher dies, and the pid file lets
the next start on the same data directory kill what a launcher killed too fast for that left
(:func:`reap_leftovers`). Each listens on a port the kernel picked free (:func:`free_port`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it when the launcher dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(
    data_dir: Path, name: str, argv: list[str], logs: list[IO[bytes]]
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output in ``<data_dir>/<name>.log`` (the log is appended to
    ``logs`` for the caller to close) and its pid in ``<data_dir>/pids``."""
    log = (data_dir / f"{name}.log").open("ab")
    logs.append(log)
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=die_with_parent,
        cwd=data_dir,
    )
    with (data_dir / "pids").open("a") as f:
        f.write(f"{proc.pid}\n")
    return proc


def stop_processes(procs: list[subprocess.Popen[bytes]], timeout: float = 10.0) -> None:
    """SIGTERM each (last started first), then SIGKILL whatever is still there at the bound."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
    for proc in reversed(procs):
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, for a child to listen on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def reap_leftovers(data_dir: Path) -> None:
    """Kill processes a previous launcher on this data directory left (it was SIGKILLed
    before the kernel could deliver the death signal, or ran under another parent)."""
    pidfile = data_dir / "pids"
    if not pidfile.exists():
        return
    for pid in _recorded(pidfile):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(data_dir).encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    pidfile.unlink()


def _recorded(pidfile: Path) -> Iterator[int]:
    for line in pidfile.read_text().split():
        if line.isdigit():
            yield int(line)

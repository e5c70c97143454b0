"""Child processes of the local cluster: each logs to a file in the data directory, is recorded
in its pid file, and dies with the launcher.

``PR_SET_PDEATHSIG`` has the kernel kill a child when the launcher dies, and the pid file lets
the next start on the same data directory kill what a launcher killed too fast for that left.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
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

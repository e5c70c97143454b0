"""The configuration home: which settings file the CLI reads, and the default one, made safely.

Resolution: ``--config`` wins, then ``$TINY_HARNESS_CONFIG``, then ``<home>/config.toml``,
where the home is ``$TINY_HARNESS_HOME`` or ``~/.tiny-harness``. A file named by the flag or
the variable is only read (a missing one is an error). The default one is created when
missing, and everything the local cluster keeps (data, kubeconfig, logs) lives under the home.

The home may sit in a directory others can write to, so it is created as an attacker would
not have it:

- ``lstat``, never ``stat``: a symlink at the home or at the file is refused, not followed
  (another user could point it at a file of ours to overwrite, or at one of theirs to feed us);
- a home or file owned by another user is refused;
- the directory is made 0700 and the file 0600 (it names where the user's tasks live);
- the file is opened with ``O_CREAT | O_EXCL | O_NOFOLLOW``: if anything appears at the path
  between the check and the open, the open fails and the new thing is checked like any other;
  an existing file is never opened for writing.

Every refusal is a :class:`~tiny_harness.core.errors.ConfigError` naming the path, so the CLI
exits 2 with nothing written.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from tiny_harness.core.errors import ConfigError
from tiny_harness.core.settings import CONFIG_ENV

HOME_ENV: Final = "TINY_HARNESS_HOME"
DEFAULT_HOME: Final = Path("~/.tiny-harness")
CONFIG_NAME: Final = "config.toml"

Origin = Literal["--config", "$TINY_HARNESS_CONFIG", "default"]


@dataclass(frozen=True)
class ConfigSource:
    """The settings file in effect, and why."""

    path: Path
    origin: Origin

    def describe(self) -> str:
        """For ``--help``: ``~/.tiny-harness/config.toml (default; --config overrides)``."""
        shown = _tilde(self.path)
        if self.origin == "default":
            return f"{shown} (default; --config overrides)"
        return f"{shown} ({self.origin})"


def home(environ: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """The configuration home (``$TINY_HARNESS_HOME``, else ``~/.tiny-harness``), absolute."""
    env = os.environ if environ is None else environ
    chosen = env.get(HOME_ENV)
    return (Path(chosen) if chosen else DEFAULT_HOME).expanduser().absolute()


def resolve(
    explicit: Path | None, environ: os._Environ[str] | dict[str, str] | None = None
) -> ConfigSource:
    """Which file the settings come from. Touches nothing on disk."""
    env = os.environ if environ is None else environ
    if explicit is not None:
        return ConfigSource(explicit, "--config")
    if env.get(CONFIG_ENV):
        return ConfigSource(Path(env[CONFIG_ENV]), "$TINY_HARNESS_CONFIG")
    return ConfigSource(home(env) / CONFIG_NAME, "default")


def ensure_default(home_dir: Path) -> tuple[Path, bool]:
    """``<home>/config.toml``, created with the default text if missing: (path, created)."""
    _ensure_home(home_dir)
    path = home_dir / CONFIG_NAME
    try:
        _check_file(path)
        return path, False
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        # Something appeared at the path since the check: judge it as found, never write it.
        _check_file(path)
        return path, False
    except OSError as exc:
        raise ConfigError(
            str(path), f"cannot create the configuration file: {exc.strerror}"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(default_text(home_dir))
    return path, True


def _ensure_home(home_dir: Path) -> None:
    try:
        info = os.lstat(home_dir)
    except FileNotFoundError:
        home_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(home_dir, 0o700)
        except FileExistsError:
            pass  # made meanwhile: checked below like one found
        except OSError as exc:
            raise ConfigError(str(home_dir), f"cannot create the home: {exc.strerror}") from None
        info = os.lstat(home_dir)
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(
            str(home_dir),
            "the configuration home is a symbolic link; refusing to follow it "
            f"(remove it, or set ${HOME_ENV} to a directory of your own)",
        )
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(str(home_dir), "the configuration home is not a directory")
    if info.st_uid != os.geteuid():
        raise ConfigError(
            str(home_dir),
            f"the configuration home belongs to uid {info.st_uid}, not to you "
            f"(uid {os.geteuid()}); set ${HOME_ENV} to a directory of your own",
        )


def _check_file(path: Path) -> None:
    """Accept a regular file of ours; FileNotFoundError if there is nothing there."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(
            str(path), "the configuration file is a symbolic link; refusing to follow it"
        )
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(str(path), "the configuration file is not a regular file")
    if info.st_uid != os.geteuid():
        raise ConfigError(
            str(path), f"the configuration file belongs to uid {info.st_uid}, not to you"
        )


def default_text(home_dir: Path) -> str:
    """The commented default settings: no secret, and it loads as the settings it says."""
    return f"""\
# tiny-harness settings. This file was created because no --config or
# $TINY_HARNESS_CONFIG named another; edit it freely, it is never rewritten.
# Secrets never go here: model API keys come from the environment
# (OPENAI_API_KEY, ANTHROPIC_API_KEY).

# The model. With none configured and no OPENAI_API_KEY, `tiny-harness up` and
# the TUI answer with a demo model, so a first run works.
# provider = "openai"                 # or "anthropic"
# [openai]
# model = "gpt-5-mini"

# The A2A gateway the local cluster runs.
[gateway]
bind = "127.0.0.1:8080"
base_url = "http://127.0.0.1:8080"
namespace = "default"

# Where the operator may connect for MCP tool servers and remote agents. The
# local cluster allows this machine (loopback) unless this section is set;
# loopback, link-local and cloud metadata addresses are refused unless listed.
# [operator.destinations]
# allowed_cidrs = ["127.0.0.0/8", "::1/128"]
# allowed_hosts = []

# Where the TUI connects: a gateway, and who you are to it.
[client]
# gateway_url = "http://127.0.0.1:8080"   # default: the local gateway above
# participant = "alice"                   # header mode; default: your login name
# token_file = "~/.kube/harness-token"    # token-review mode: a file holding the token

# The local cluster keeps its data, kubeconfig and logs here:
#   {home_dir}/cluster
"""


def _tilde(path: Path) -> str:
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)

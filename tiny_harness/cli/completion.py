"""Shell completion for the harness's command lines, answered by the program from its parser.

One engine answers every way a shell asks. kubectl (1.26 and later) completes a plugin by
running ``kubectl_complete-<plugin> ARG... WORD`` (the words typed after ``kubectl harness``,
then the word under the cursor, empty for a new one) and reading one candidate a line,
optionally ``candidate<TAB>description``, then ``:<directive>``: Cobra's protocol, which
kubectl speaks for every plugin. The bash and zsh scripts that ``kubectl harness completion``
and ``tiny-harness completion`` print ask the same question of the same engine, so the three
cannot disagree. The answers are read off the argparse parser (sub-commands, flags, a flag's
``choices``, a path flag), so a new command or flag completes without being written twice.

Only the standard library is imported: a completion runs on every TAB.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Cobra's ShellCompDirective bits this engine answers with. DEFAULT lets the shell complete
#: file names when there is no candidate; NO_FILE says there is nothing to complete there.
DEFAULT: Final = 0
NO_SPACE: Final = 2
NO_FILE: Final = 4

#: The longest description shown beside a candidate.
DESCRIPTION_CHARS: Final = 72


@dataclass(frozen=True)
class Candidate:
    value: str
    description: str = ""


@dataclass(frozen=True)
class Completions:
    """What may come at the cursor, and what the shell does when nothing does."""

    candidates: tuple[Candidate, ...] = ()
    directive: int = NO_FILE

    def text(self) -> str:
        """The answer in Cobra's protocol, as kubectl reads it from a completion program."""
        lines = [
            f"{c.value}\t{c.description}" if c.description else c.value for c in self.candidates
        ]
        return "".join(f"{line}\n" for line in [*lines, f":{self.directive}"])


def complete(parser: argparse.ArgumentParser, words: Sequence[str]) -> Completions:
    """What completes the last of ``words`` (the word under the cursor, possibly empty), the
    words before it being the arguments typed so far after the program's name."""
    *typed, current = list(words) or [""]
    command = parser
    positionals = 0
    expecting: argparse.Action | None = None
    for word in typed:
        if expecting is not None:
            expecting = None
            continue
        if word.startswith("-") and word != "-":
            name, has_value, _ = word.partition("=")
            action = _option(command, name)
            if action is not None and _takes_value(action) and not has_value:
                expecting = action
            continue
        chosen = _sub_commands(command)
        if chosen is not None and word in chosen.choices:
            command = chosen.choices[word]
            positionals = 0
            continue
        positionals += 1
    if expecting is not None:
        return _values(expecting, current)
    if current.startswith("--") and "=" in current:
        name, _, value = current.partition("=")
        action = _option(command, name)
        if action is None or not _takes_value(action):
            return Completions()
        return _values(action, value, prefix=f"{name}=")
    if current.startswith("-"):
        return _flags(command, current)
    chosen = _sub_commands(command)
    if chosen is not None:
        return Completions(
            tuple(
                Candidate(a.dest, _description(a, command))
                for a in chosen._choices_actions
                if a.dest.startswith(current)
            )
        )
    positional = _positional(command, positionals)
    return _values(positional, current) if positional is not None else Completions()


def answer(parser: argparse.ArgumentParser, words: Sequence[str]) -> str:
    """:func:`complete`'s answer as the text a completion program prints."""
    return complete(parser, words).text()


def _option(parser: argparse.ArgumentParser, name: str) -> argparse.Action | None:
    return parser._option_string_actions.get(name)


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _sub_commands(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _positional(parser: argparse.ArgumentParser, index: int) -> argparse.Action | None:
    """The positional argument the ``index``-th positional word (from 0) fills."""
    taken = 0
    for action in parser._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        if action.nargs in ("*", "+", argparse.REMAINDER):
            return action
        taken += action.nargs if isinstance(action.nargs, int) else 1
        if index < taken:
            return action
    return None


def _values(action: argparse.Action, current: str, prefix: str = "") -> Completions:
    """A value of ``action``: its choices, a file name for a path, else nothing to offer."""
    if action.choices is not None:
        return Completions(
            tuple(
                Candidate(f"{prefix}{choice}")
                for choice in map(str, action.choices)
                if choice.startswith(current)
            )
        )
    return Completions(directive=DEFAULT if action.type is Path else NO_FILE)


def _flags(parser: argparse.ArgumentParser, current: str) -> Completions:
    return Completions(
        tuple(
            Candidate(flag, _description(action, parser))
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            for flag in action.option_strings
            if flag.startswith(current)
        )
    )


def _description(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    """The action's help on one line, with its ``%(default)s`` filled in, cut short."""
    text = action.help or ""
    with contextlib.suppress(KeyError, TypeError, ValueError):
        text = text % {**vars(action), "prog": parser.prog}
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 3] + "..."


# -- the scripts ---------------------------------------------------------------------------------

#: Which shells :func:`script` writes for.
SHELLS: Final = ("bash", "zsh")

_BASH: Final = r"""# bash completion for {prog}: source <({source} completion bash)
{function}() {{
    local line="${{COMP_LINE:0:COMP_POINT}}" cur="" out directive=0 candidate
    local -a words lines
    read -ra words <<< "$line"
    if [[ $line != *[[:space:]] && ${{#words[@]}} -gt 1 ]]; then
        cur="${{words[-1]}}"
        unset 'words[-1]'
    fi
    out="$({helper} "${{words[@]:1}}" "$cur" 2>/dev/null)" || return 0
    mapfile -t lines <<< "$out"
    if [[ ${{lines[-1]}} == :* ]]; then
        directive="${{lines[-1]:1}}"
        unset 'lines[-1]'
    fi
    # bash replaces only what follows the last = or : of the word (COMP_WORDBREAKS).
    local before="${{cur%"${{cur##*[=:]}}"}}"
    COMPREPLY=()
    for candidate in "${{lines[@]}}"; do
        [[ -n $candidate ]] || continue
        candidate="${{candidate%%$'\t'*}}"
        COMPREPLY+=("${{candidate#"$before"}}")
    done
    if (( ${{#COMPREPLY[@]}} == 0 && (directive & {no_file}) == 0 )); then
        mapfile -t COMPREPLY < <(compgen -f -- "${{cur#"$before"}}")
        compopt -o filenames 2>/dev/null
    fi
    if (( directive & {no_space} )); then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}}
complete -F {function} {prog}
"""

_ZSH: Final = r"""#compdef {prog}
# zsh completion for {prog}: source <({source} completion zsh), after compinit
{function}() {{
    local out directive=0 line value
    local -a lines values shown
    out="$({helper} "${{(@)words[2,CURRENT-1]}}" "${{words[CURRENT]}}" 2>/dev/null)" || return 1
    lines=("${{(@f)out}}")
    if [[ ${{lines[-1]}} == :* ]]; then
        directive="${{lines[-1]#:}}"
        lines[-1]=()
    fi
    for line in "${{lines[@]}}"; do
        [[ -n $line ]] || continue
        value="${{line%%$'\t'*}}"
        values+=("$value")
        if [[ $line == *$'\t'* ]]; then
            shown+=("$value  -- ${{line#*$'\t'}}")
        else
            shown+=("$value")
        fi
    done
    if (( ${{#values}} )); then
        if (( directive & {no_space} )); then
            compadd -S '' -l -d shown -- "${{values[@]}}"
        else
            compadd -l -d shown -- "${{values[@]}}"
        fi
    elif (( (directive & {no_file}) == 0 )); then
        _files
    fi
}}
compdef {function} {prog}
"""


def script(shell: str, prog: str, helper: str) -> str:
    """The ``shell`` script that completes ``prog`` by asking ``helper`` (a command that
    prints :func:`answer` for the words given it) on each TAB."""
    templates = {"bash": _BASH, "zsh": _ZSH}
    if shell not in templates:
        raise ValueError(f"no completion script for {shell!r}; there are: {', '.join(SHELLS)}")
    return templates[shell].format(
        prog=prog,
        source=prog.replace("kubectl-", "kubectl ", 1),
        function="_" + re.sub(r"\W", "_", prog),
        helper=helper,
        no_file=NO_FILE,
        no_space=NO_SPACE,
    )

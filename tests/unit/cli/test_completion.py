"""Shell completion of ``kubectl harness`` and ``tiny-harness``: the answers read off their
parsers, the ``kubectl_complete-harness`` program kubectl runs, and the bash and zsh scripts
run by the shells themselves, as a TAB runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tiny_harness.cli import completion
from tiny_harness.cli.completion import DEFAULT, NO_FILE, complete
from tiny_harness.cli.kubectl_parser import build_parser
from tiny_harness.cli.main import build_parser as build_main_parser
from tiny_harness.kube.crd import REPO_ROOT

#: The console scripts (kubectl_complete-harness, tiny-harness) of the interpreter running this.
SCRIPTS = Path(sys.executable).parent


def values(words: list[str]) -> list[str]:
    return [c.value for c in complete(build_parser(), words).candidates]


def test_a_new_word_after_the_program_is_one_of_its_sub_commands_with_their_help() -> None:
    answer = complete(build_parser(), [""])

    names = [c.value for c in answer.candidates]
    assert names[:3] == ["list", "get", "send"]
    assert {"approve", "reject", "watch", "artifact", "completion"} <= set(names)
    assert answer.candidates[0].description.startswith("list your tasks as a tree")
    assert answer.directive == NO_FILE
    assert values(["ap"]) == ["approve"]


def test_flags_are_the_sub_commands_own_and_kubectls() -> None:
    flags = values(["get", "--"])

    assert {"--output", "--no-headers", "--history", "--kubeconfig", "--namespace"} <= set(flags)
    assert "--all-namespaces" not in flags
    assert values(["list", "--no"]) == ["--no-headers"]
    assert values(["complete", "t", "--"])[-2:] == ["--no-wait", "--timeout"]
    assert "--arguments" not in values(["reject", "t", "c", "--"])  # hidden on reject


def test_output_completes_to_the_formats_however_the_flag_is_written() -> None:
    assert values(["list", "-o", ""]) == ["json", "yaml", "wide", "name"]
    assert values(["get", "t", "--output", "y"]) == ["yaml"]
    assert values(["list", "--output=w"]) == ["--output=wide"]
    assert values(["completion", ""]) == ["bash", "zsh"]


def test_a_path_flag_leaves_the_shell_to_complete_file_names() -> None:
    assert complete(build_parser(), ["send", "t", "hi", "--file", ""]).directive == DEFAULT
    assert complete(build_parser(), ["--kubeconfig", "/tm"]).directive == DEFAULT
    # A value with nothing to offer, and a task's name, complete to nothing, not to files.
    assert complete(build_parser(), ["list", "-n", ""]) == completion.Completions()
    assert complete(build_parser(), ["get", "-n", "team-a", ""]) == completion.Completions()


def test_the_answer_is_cobras_protocol_as_kubectl_reads_it() -> None:
    text = completion.answer(build_parser(), ["list", "-o", "j"])

    assert text == "json\n:4\n"


def test_tiny_harness_completes_its_own_sub_commands_and_flags() -> None:
    parser = build_main_parser([])

    assert [c.value for c in complete(parser, [""]).candidates] == [
        "up",
        "operator",
        "gateway",
        "tui",
        "crd",
        "completion",
    ]
    assert "--liveness" in [c.value for c in complete(parser, ["operator", "--"]).candidates]
    assert complete(parser, ["up", "--config", ""]).directive == DEFAULT


def run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{SCRIPTS}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env=env, cwd=REPO_ROOT, check=True
    )


def test_kubectl_complete_harness_answers_as_kubectl_calls_it() -> None:
    answered = run([str(SCRIPTS / "kubectl_complete-harness"), "list", "-o", ""])

    assert answered.stdout == "json\nyaml\nwide\nname\n:4\n"


KUBECTL_HARNESS = "kubectl-harness"
TINY_HARNESS = "tiny-harness"


#: The program each script asks on a TAB, as the commands write them.
HELPERS = {KUBECTL_HARNESS: "kubectl_complete-harness", TINY_HARNESS: "tiny-harness __complete"}


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """The completion script of each program for each shell, in files."""
    where = tmp_path_factory.mktemp("completion")
    out: dict[tuple[str, str], Path] = {}
    for program, helper in HELPERS.items():
        for shell in completion.SHELLS:
            path = where / f"{program}.{shell}"
            path.write_text(completion.script(shell, program, helper))
            out[program, shell] = path
    return out


def test_the_completion_commands_print_the_scripts(
    scripts: dict[tuple[str, str], Path],
) -> None:
    for program, shell in ((KUBECTL_HARNESS, "zsh"), (TINY_HARNESS, "bash")):
        printed = run([str(SCRIPTS / program), "completion", shell]).stdout
        assert printed == scripts[program, shell].read_text(), (program, shell)
    assert "complete -F _tiny_harness tiny-harness" in scripts[TINY_HARNESS, "bash"].read_text()


def bash_completes(scripts: dict[tuple[str, str], Path], line: str) -> list[str]:
    """What bash offers when TAB is pressed at the end of ``line``, with the script of the
    program ``line`` starts with loaded."""
    program = line.split()[0]
    out = run(
        [
            "bash",
            "-c",
            'source "$1"; COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}; '
            f'_{program.replace("-", "_")}; printf "%s\\n" "${{COMPREPLY[@]}}"',
            "bash",
            str(scripts[program, "bash"]),
            line,
        ]
    ).stdout
    return [w for w in out.splitlines() if w]


def test_bash_completes_kubectl_harness_sub_commands_flags_and_their_values(
    scripts: dict[tuple[str, str], Path],
) -> None:
    assert bash_completes(scripts, "kubectl-harness co") == [
        "commands",
        "complete",
        "completion",
    ]
    assert bash_completes(scripts, "kubectl-harness list --no") == ["--no-headers"]
    assert bash_completes(scripts, "kubectl-harness get t -o ") == [
        "json",
        "yaml",
        "wide",
        "name",
    ]
    # bash splits --output=ya at the '=': what it replaces is the part after it.
    assert bash_completes(scripts, "kubectl-harness list --output=ya") == ["yaml"]


def test_bash_completes_file_names_where_a_path_goes(
    scripts: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    (tmp_path / "chart.png").write_bytes(b"")
    line = f"kubectl-harness send t hi --file {tmp_path}/cha"

    assert bash_completes(scripts, line) == [f"{tmp_path}/chart.png"]


def test_bash_completes_tiny_harness(scripts: dict[tuple[str, str], Path]) -> None:
    assert bash_completes(scripts, "tiny-harness g") == ["gateway"]
    assert bash_completes(scripts, "tiny-harness gateway --b") == ["--bind"]


@pytest.mark.parametrize(
    ("program", "words", "offered"),
    [
        (KUBECTL_HARNESS, ["kubectl-harness", "wa"], ["watch"]),
        (KUBECTL_HARNESS, ["kubectl-harness", "list", "--output=n"], ["--output=name"]),
        (KUBECTL_HARNESS, ["kubectl-harness", "completion", ""], ["bash", "zsh"]),
        (TINY_HARNESS, ["tiny-harness", "operator", "--all"], ["--all-namespaces"]),
    ],
)
def test_zsh_completes_the_words_it_is_given(
    scripts: dict[tuple[str, str], Path], program: str, words: list[str], offered: list[str]
) -> None:
    """The script under zsh, with zsh's completion builtins recording what they are given
    (they work only inside a completion widget)."""
    loaded = scripts[program, "zsh"]
    function = "_" + words[0].replace("-", "_")
    out = run(
        [
            "zsh",
            "-f",
            "-c",
            'compdef() { :; }; compadd() { print -rl -- "${@[${@[(i)--]}+1,-1]}"; }; '
            '_files() { print FILES; }; source "$1"; shift; words=("$@"); '
            f"CURRENT=${{#words}}; {function}",
            "zsh",
            str(loaded),
            *words,
        ]
    ).stdout

    assert out.splitlines() == offered

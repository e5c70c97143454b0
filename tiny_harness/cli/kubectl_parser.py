"""The ``kubectl harness`` command line: every sub-command, its flags, its help and examples.

It is its own module, apart from what the commands do, because shell completion builds this
parser on every TAB (``kubectl_complete-harness``, :mod:`tiny_harness.cli.completion`): it
imports nothing but the standard library when loaded, so a completion answers in a blink.
The checks that need the task model (a decision's reason, a call's JSON arguments, a command's
name) import it when a value is checked, not before.
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from pathlib import Path
from typing import Any, Final

from tiny_harness.cli.completion import SHELLS

PROG: Final = "kubectl harness"
DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_HISTORY: Final = 20

#: ``-o`` as kubectl spells its formats; an unknown one is refused naming these.
OUTPUTS: Final = ("json", "yaml", "wide", "name")

WATCH: Final = "watch"
ARTIFACT: Final = "artifact"
COMPLETION: Final = "completion"


def _wrap(text: str) -> str:
    return "\n\n".join(textwrap.fill(paragraph, 79) for paragraph in text.split("\n\n"))


def _examples(text: str) -> str:
    return "examples:\n" + textwrap.indent(textwrap.dedent(text).strip(), "  ")


def _connection_flags(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """kubectl's connection flags. On subcommands they default to nothing, so that a flag
    given before the subcommand is not overwritten by the subcommand's default."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    group = parser.add_argument_group("kubectl flags")
    group.add_argument(
        "--kubeconfig",
        type=Path,
        default=default(None),
        help="path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)",
    )
    group.add_argument("--context", default=default(None), help="the kubeconfig context to use")
    group.add_argument(
        "-n",
        "--namespace",
        default=default(None),
        help="the namespace (default: the context's namespace, else 'default')",
    )
    group.add_argument(
        "--as-participant",
        metavar="ID",
        default=default(None),
        help="act as this participant instead of your Kubernetes user (SelfSubjectReview)",
    )


def output_format(value: str) -> str:
    """``-o``: one of :data:`OUTPUTS`, or the error kubectl gives, naming the ones there are."""
    if value not in OUTPUTS:
        raise argparse.ArgumentTypeError(
            f'unable to match a printer suitable for the output format "{value}", '
            f"allowed formats are: {','.join(sorted(OUTPUTS))}"
        )
    return value


def _output_flags(parser: argparse.ArgumentParser, table: str) -> None:
    """``-o`` and ``--no-headers``, as ``kubectl get`` has them."""
    parser.add_argument(
        "-o",
        "--output",
        type=output_format,
        choices=OUTPUTS,
        metavar="FORMAT",
        help=f"print {table} as json, yaml (the objects as kubectl prints them), wide (more "
        "columns) or name (harnesstask.<group>/<name>)",
    )
    parser.add_argument(
        "--no-headers",
        action="store_true",
        help="with the table outputs (the default of list, and wide), print no header line",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_wrap(
            "Drive tiny-harness tasks (HarnessTask resources) as a participant: list them, read "
            "one, send it messages and commands, approve or reject the tool calls that wait for "
            "you, complete or cancel it, watch it.\n\n"
            "You act as your Kubernetes user, as the API server names it (kubectl auth whoami), "
            "unless --as-participant says otherwise; a task you are not on is reported as not "
            "found."
        ),
        epilog=_examples(
            """
            kubectl harness list
            kubectl harness list -o yaml
            kubectl harness get hello-harness
            kubectl harness send hello-harness "Please keep it short." --wait
            kubectl harness cmd hello-harness /status
            kubectl harness approve hello-harness call_w1
            kubectl harness watch hello-harness
            kubectl harness complete hello-harness --as-participant alice
            source <(kubectl harness completion bash)
            """
        ),
    )
    _connection_flags(parser, defaults=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, description: str, examples: str) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help,
            description=_wrap(description),
            epilog=_examples(examples),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _connection_flags(p, defaults=False)
        p.set_defaults(subparser=p)
        return p

    listing = command(
        "list",
        "list your tasks as a tree, with state and sub-state",
        "List the tasks you are on, each sub-task under its parent, with the A2A state, the "
        "sub-state that refines INPUT_REQUIRED, the lifecycle, your role, the tool calls that "
        "wait for approval (APPROVALS: how many, and how many of them you may decide) and the "
        "age. Tasks with calls you may decide come first.\n\n"
        "-o wide adds the model, the turn, the replica running it and the goal; -o json and "
        "-o yaml print the tasks as kubectl does (a List), -o name one name a line.",
        """
        kubectl harness list
        kubectl harness list -n team-a
        kubectl harness list -A
        kubectl harness list -o wide --no-headers
        kubectl harness list -o name
        kubectl harness list -o json | jq '.items[].status.state'
        """,
    )
    listing.add_argument(
        "-A", "--all-namespaces", action="store_true", help="list tasks in every namespace"
    )
    _output_flags(listing, "the tasks")

    get = command(
        "get",
        "show one task: goal, people, state, plan, sub-tasks and transcript",
        "Describe a task: its goal, participants, state and sub-state, model and effort, the "
        "tool calls that wait for approval (their arguments, who decides and until when), plan "
        "progress, sub-tasks, and the last messages of its conversation.\n\n"
        "-o json and -o yaml print the task object as kubectl does, -o name its name, -o wide "
        "its row of `list -o wide`.",
        """
        kubectl harness get hello-harness
        kubectl harness get hello-harness --history 100
        kubectl harness get hello-harness --history 0      # no transcript
        kubectl harness get hello-harness -o yaml
        """,
    )
    get.add_argument("task", metavar="TASK", help="the task's name")
    get.add_argument(
        "--history",
        type=_count,
        default=DEFAULT_HISTORY,
        metavar="N",
        help="show the last N messages (default: %(default)s; 0 for none)",
    )
    _output_flags(get, "the task")

    send = command(
        "send",
        "send a text message to a task, with files if you attach them",
        "Send a text message to a task as a participant. Prints the message id; with --wait, "
        "also waits for the turn that reads it to end and prints the agent's reply. TEXT - "
        "reads the message from standard input. --file attaches a file to the message.",
        """
        kubectl harness send hello-harness "Make it rhyme."
        kubectl harness send hello-harness "What does this chart show?" --file chart.png
        kubectl harness send hello-harness Make it rhyme. --wait
        echo "A longer message" | kubectl harness send hello-harness -
        """,
    )
    send.add_argument("task", metavar="TASK", help="the task's name")
    send.add_argument("text", metavar="TEXT", nargs="+", help="the message (words are joined)")
    send.add_argument(
        "--file",
        metavar="PATH",
        action="append",
        default=[],
        type=Path,
        help="attach a file (repeatable): images, PDFs and text reach the model, any other file "
        "is kept with the task; at most 192 KiB in a message",
    )
    send.add_argument("--wait", action="store_true", help="wait for the reply and print it")
    _timeout_flag(send)

    cmd = command(
        "cmd",
        "run a /command on a task and print its reply",
        "Send a command (a message whose only text is /NAME ARGS) and print the reply the "
        "operator gives it. `kubectl harness commands` lists the commands.",
        """
        kubectl harness cmd hello-harness /status
        kubectl harness cmd hello-harness /model gpt-5
        kubectl harness cmd hello-harness /effort high
        kubectl harness cmd hello-harness --timeout 60 /sub-task Write the tests
        """,
    )
    cmd.add_argument("task", metavar="TASK", help="the task's name")
    cmd.add_argument(
        "name", metavar="/COMMAND", type=_command_name, help="the command, with its slash"
    )
    cmd.add_argument("arguments", metavar="ARG", nargs="*", help="the command's arguments")
    _timeout_flag(cmd)

    decisions = {
        "approve": (
            "runs in the task's next turn (with --arguments, with those instead of the model's, "
            "when its policy allows edits)",
            """
            kubectl harness approve trip-planner call_w1
            kubectl harness approve trip-planner weather__weather --reason "Oslo is fine."
            kubectl harness approve trip-planner call_w1 --arguments '{"city": "Bergen"}'
            """,
        ),
        "reject": (
            "does not run: the model is told it was rejected, by whom and why (--reason)",
            """
            kubectl harness reject trip-planner call_w1
            kubectl harness reject trip-planner weather --reason "Not that city."
            """,
        ),
    }
    for verb, (does, examples) in decisions.items():
        p = command(
            verb,
            f"{verb} a tool call that waits for approval",
            f"{verb.capitalize()} a tool call that waits for approval (the task's sub-state is "
            f"awaiting-approval; `kubectl harness get TASK` lists its calls): the call {does}. "
            "The policy that gates the call says who may decide it (by default the task's "
            "assignees and admins; never a watcher). Prints the operator's record of the "
            "decision, or exits 1 with its reason when it refuses the decision (a call that "
            "does not wait, or one already decided otherwise).\n\n"
            "CALL is the call's id, or its tool's name (weather__weather, or weather) when one "
            "waiting call has it.",
            examples,
        )
        p.add_argument("task", metavar="TASK", help="the task's name")
        p.add_argument(
            "call",
            metavar="CALL",
            help="the call's id (status.approvals[].callId), or its tool's name",
        )
        p.add_argument(
            "--reason",
            type=_reason,
            default="",
            metavar="TEXT",
            help="why, for the history"
            + (" (and for the model, which is told it)" if verb == "reject" else ""),
        )
        p.add_argument(
            "--arguments",
            type=_json_object if verb == "approve" else _no_arguments,
            metavar="JSON",
            help="run the call with these arguments, a JSON object, instead of the model's "
            "(only when the call's policy allows edits)"
            if verb == "approve"
            else argparse.SUPPRESS,
        )
        _timeout_flag(p)

    command(
        "commands",
        "list the /commands a task accepts",
        "List the commands `kubectl harness cmd` can run, with their arguments.",
        """
        kubectl harness commands
        """,
    )

    for action, verb, past in (
        ("complete", "complete", "completed"),
        ("cancel", "cancel", "cancelled"),
    ):
        p = command(
            action,
            f"{verb} a task (not as a watcher)",
            f"Ask the operator to {verb} a task. Its assignee, a reporter or an admin may; a "
            f"watcher may not. By default waits until the task is {past}, or prints the "
            "operator's reason when it refuses (for example an open sub-task).",
            f"""
            kubectl harness {action} hello-harness
            kubectl harness {action} hello-harness --no-wait
            kubectl harness {action} hello-harness --as-participant alice
            """,
        )
        p.add_argument("task", metavar="TASK", help="the task's name")
        p.add_argument(
            "--wait",
            action=argparse.BooleanOptionalAction,
            default=True,
            help=f"wait until the task is {past} (default: wait)",
        )
        _timeout_flag(p)

    watch = command(
        WATCH,
        "follow a task's state changes and replies until it ends",
        "Print the task's state changes, sub-task changes and new messages as they happen, "
        "until the task ends or you stop it (Ctrl-C).",
        """
        kubectl harness watch hello-harness
        kubectl harness watch hello-harness --history 5
        """,
    )
    watch.add_argument("task", metavar="TASK", help="the task's name")
    watch.add_argument(
        "--history",
        type=_count,
        default=0,
        metavar="N",
        help="first print the last N messages (default: %(default)s)",
    )

    artifact = command(
        ARTIFACT,
        "write one of a task's artifacts to standard output",
        "Write a task's artifact (published by its agent with publish_artifact) to standard "
        "output: text parts as text, a file part as its raw bytes, a data part as JSON. "
        "'kubectl harness get TASK' lists the task's artifacts with their sizes.",
        """
        kubectl harness artifact hello-harness report
        kubectl harness artifact hello-harness chart.png > chart.png
        kubectl harness artifact hello-harness results | jq .
        """,
    )
    artifact.add_argument("task", metavar="TASK", help="the task's name")
    artifact.add_argument("name", metavar="NAME", help="the artifact's name")

    completion = command(
        COMPLETION,
        "print a shell completion script (bash or zsh)",
        "Print a script that completes kubectl-harness's sub-commands and flags in bash or "
        "zsh. kubectl 1.26 and later completes `kubectl harness ...` itself, through the "
        "kubectl_complete-harness program installed beside kubectl-harness, once kubectl's own "
        "completion is loaded (source <(kubectl completion bash)).",
        """
        source <(kubectl harness completion bash)            # in ~/.bashrc
        source <(kubectl harness completion zsh)             # in ~/.zshrc, after compinit
        """,
    )
    completion.add_argument("shell", metavar="SHELL", choices=SHELLS, help="bash or zsh")
    return parser


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is negative")
    return number


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number


def _timeout_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="how long to wait for the operator (default: %(default)gs)",
    )


def reason_max() -> int:
    """The longest reason a decision may carry (``DecisionRequest.reason``)."""
    from tiny_harness.core.approval import DecisionRequest

    return next(
        int(m.max_length)
        for m in DecisionRequest.model_fields["reason"].metadata
        if getattr(m, "max_length", None) is not None
    )


def _reason(value: str) -> str:
    longest = reason_max()
    if len(value) > longest:
        raise argparse.ArgumentTypeError(
            f"the reason is {len(value)} characters long; it may be {longest} at most"
        )
    return value


def _json_object(value: str) -> dict[str, Any]:
    """``--arguments``: a JSON object, or a usage error saying what is wrong with it."""
    from tiny_harness.core.json_bounds import JsonBoundError, loads

    shown = value if len(value) <= 60 else value[:57] + "..."
    example = 'write the arguments as a JSON object, such as \'{"city": "Bergen"}\''
    try:
        parsed = loads(value)
    except JsonBoundError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"{shown!r} is not JSON ({exc.msg} at column {exc.colno}); {example}"
        ) from None
    if not isinstance(parsed, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(parsed), "a number"
        )
        raise argparse.ArgumentTypeError(f"{shown!r} is {kind}, not an object; {example}")
    return parsed


def _no_arguments(value: str) -> dict[str, Any]:
    raise argparse.ArgumentTypeError(
        "only an approval carries arguments: a rejected call never runs"
    )


def _command_name(value: str) -> str:
    from tiny_harness.core.command_spec import COMMAND_NAME_PATTERN

    if not value.startswith("/") or not re.fullmatch(COMMAND_NAME_PATTERN, value[1:]):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a command: write a slash and a lower-case name, such as /status "
            "(kubectl harness commands lists them)"
        )
    return value

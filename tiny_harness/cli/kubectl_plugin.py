"""``kubectl harness``: drive tiny-harness tasks from kubectl.

kubectl runs any executable named ``kubectl-harness`` on PATH as ``kubectl harness``; this is
it (the console script ``kubectl-harness``, or ``python -m tiny_harness.cli.kubectl_plugin``).
It takes kubectl's ``--kubeconfig``, ``--context`` and ``-n``, acts as the Kubernetes user the
API server names (or ``--as-participant``), refuses what the gateway would refuse before
writing anything, and reports errors as kubectl does.

Exit codes: 0 success, 1 an error (from the server, a refusal, a timeout), 2 bad usage,
130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import textwrap
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Final

import aiohttp

from tiny_harness.cli import kubectl_artifact, kubectl_watch
from tiny_harness.cli import kubectl_render as render
from tiny_harness.cli.kubectl_session import (
    KubeconfigError,
    Session,
    current_namespace,
    file_part,
    open_api,
    who_am_i,
)
from tiny_harness.core.approval import DecisionRequest, Verdict
from tiny_harness.core.clock import now
from tiny_harness.core.command_spec import COMMAND_NAME_PATTERN
from tiny_harness.core.commands.builtins import BUILTIN_SPECS
from tiny_harness.core.errors import HarnessError, TaskNotFoundError
from tiny_harness.core.inbox import Control
from tiny_harness.core.json_bounds import JsonBoundError, loads
from tiny_harness.core.states import TaskState
from tiny_harness.kube.client import KubeError
from tiny_harness.kube.names import PLURAL

PROG: Final = "kubectl harness"
DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_HISTORY: Final = 20

_REASONS: Final = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


# -- the command line ------------------------------------------------------------------------


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
            kubectl harness get hello-harness
            kubectl harness send hello-harness "Please keep it short." --wait
            kubectl harness cmd hello-harness /status
            kubectl harness approve hello-harness call_w1
            kubectl harness watch hello-harness
            kubectl harness complete hello-harness --as-participant alice
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
        "age. Tasks with calls you may decide come first.",
        """
        kubectl harness list
        kubectl harness list -n team-a
        kubectl harness list -A
        """,
    )
    listing.add_argument(
        "-A", "--all-namespaces", action="store_true", help="list tasks in every namespace"
    )

    get = command(
        "get",
        "show one task: goal, people, state, plan, sub-tasks and transcript",
        "Describe a task: its goal, participants, state and sub-state, model and effort, the "
        "tool calls that wait for approval (their arguments, who decides and until when), plan "
        "progress, sub-tasks, and the last messages of its conversation.",
        """
        kubectl harness get hello-harness
        kubectl harness get hello-harness --history 100
        kubectl harness get hello-harness --history 0      # no transcript
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
        kubectl_watch.NAME, kubectl_watch.HELP, kubectl_watch.DESCRIPTION, kubectl_watch.EXAMPLES
    )
    kubectl_watch.add_arguments(watch, count=_count)

    artifact = command(
        kubectl_artifact.NAME,
        kubectl_artifact.HELP,
        kubectl_artifact.DESCRIPTION,
        kubectl_artifact.EXAMPLES,
    )
    kubectl_artifact.add_arguments(artifact)
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


#: The longest reason a decision may carry (``DecisionRequest.reason``).
REASON_MAX: Final = next(
    int(m.max_length)
    for m in DecisionRequest.model_fields["reason"].metadata
    if getattr(m, "max_length", None) is not None
)


def _reason(value: str) -> str:
    if len(value) > REASON_MAX:
        raise argparse.ArgumentTypeError(
            f"the reason is {len(value)} characters long; it may be {REASON_MAX} at most"
        )
    return value


def _json_object(value: str) -> dict[str, Any]:
    """``--arguments``: a JSON object, or a usage error saying what is wrong with it."""
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
    if not value.startswith("/") or not re.fullmatch(COMMAND_NAME_PATTERN, value[1:]):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a command: write a slash and a lower-case name, such as /status "
            "(kubectl harness commands lists them)"
        )
    return value


# -- running ---------------------------------------------------------------------------------


def _out(text: str = "") -> None:
    render.out(text)


async def _run(args: argparse.Namespace, text: str | None) -> int:
    if args.command == "commands":
        _out(render.command_table(BUILTIN_SPECS))
        return 0
    namespace = args.namespace or current_namespace(args.kubeconfig, args.context)
    api = await open_api(args.kubeconfig, args.context)
    try:
        participant = args.as_participant or await who_am_i(api)
        session = Session(api, namespace, participant)
        return await _COMMANDS[args.command](session, args, text)
    finally:
        await api.close()


Handler = Callable[[Session, argparse.Namespace, str | None], Awaitable[int]]


async def _list(session: Session, args: argparse.Namespace, _: str | None) -> int:
    objs = await session.listed(all_namespaces=args.all_namespaces)
    if not objs:
        where = "any namespace" if args.all_namespaces else f"the {session.namespace} namespace"
        render.out(
            f"No tasks found for participant {session.participant} in {where}.", file=sys.stderr
        )
        return 0
    _out(render.task_list(objs, session.participant, now(), namespaces=args.all_namespaces))
    return 0


async def _get(session: Session, args: argparse.Namespace, _: str | None) -> int:
    obj = await session.visible(args.task)
    conversation = await session.conversation(args.task) if args.history else []
    whole = await session.whole_arguments(obj)
    _out(
        render.describe(
            obj, conversation, args.history, now(), participant=session.participant, whole=whole
        )
    )
    return 0


async def _send(session: Session, args: argparse.Namespace, text: str | None) -> int:
    assert text is not None
    files = [file_part(path) for path in args.file]
    obj = await session.writable(args.task)
    sent = await session.send_text(obj, text, files)
    _out(sent.spec.message_id)
    if args.wait:
        for reply in await session.replies(args.task, sent.spec.message_id, args.timeout):
            _out(reply.text)
    return 0


async def _cmd(session: Session, args: argparse.Namespace, text: str | None) -> int:
    assert text is not None
    obj = await session.writable(args.task)
    sent = await session.send_text(obj, text)
    reply = await session.command_reply(
        args.task, sent.spec.message_id, args.name[1:], args.timeout
    )
    if _failed(reply.text, args.name[1:]):
        raise HarnessError(reply.text)
    _out(reply.text)
    return 0


def _failed(reply: str, name: str) -> bool:
    """Whether the operator's reply says the command did not run (the replies
    docs/design/commands-and-hooks.md lists for a refusal, a failure and a missing body)."""
    return reply.startswith(("refused: ", f"/{name} failed: ", f"command /{name} has no handler"))


async def _decide(session: Session, args: argparse.Namespace, verdict: Verdict) -> int:
    obj, pending, call_id = await session.decidable(args.task, args.call, verdict, args.arguments)
    if pending is not None:
        # The call whole, before it is decided: on stderr, so the reply stays the output.
        whole = (await session.whole_arguments(obj)).get(pending.call_id)
        print(render.deciding(pending, verdict, whole), file=sys.stderr)
    request = DecisionRequest(
        call_id=call_id,
        park=pending.park if pending is not None else None,
        verdict=verdict,
        reason=args.reason,
        arguments=args.arguments,
    )
    sent = await session.send_decision(obj, request)
    _out(await session.decision_reply(args.task, sent.spec.message_id, args.timeout))
    return 0


async def _approve(session: Session, args: argparse.Namespace, _: str | None) -> int:
    return await _decide(session, args, "approve")


async def _reject(session: Session, args: argparse.Namespace, _: str | None) -> int:
    return await _decide(session, args, "reject")


async def _end(session: Session, args: argparse.Namespace, action: Control) -> int:
    obj = await session.endable(args.task, action)
    sent = await session.send_control(obj, action)
    if not args.wait:
        _out(f"harnesstask/{args.task} {action} requested (message {sent.spec.message_id})")
        return 0
    state = await session.outcome(args.task, sent.spec.message_id, args.timeout)
    wanted, done = (
        (TaskState.COMPLETED, "completed")
        if action == "complete"
        else (TaskState.CANCELED, "cancelled")
    )
    if state is not wanted:
        raise HarnessError(f"the task ended otherwise, in {state.value}, before it was {done}")
    _out(f"harnesstask/{args.task} {done}")
    return 0


async def _complete(session: Session, args: argparse.Namespace, _: str | None) -> int:
    return await _end(session, args, "complete")


async def _cancel(session: Session, args: argparse.Namespace, _: str | None) -> int:
    return await _end(session, args, "cancel")


_COMMANDS: Final[dict[str, Handler]] = {
    "list": _list,
    "get": _get,
    kubectl_artifact.NAME: kubectl_artifact.run,
    "send": _send,
    "cmd": _cmd,
    "approve": _approve,
    "reject": _reject,
    "complete": _complete,
    "cancel": _cancel,
    kubectl_watch.NAME: kubectl_watch.run,
}


# -- errors as kubectl prints them -----------------------------------------------------------


def error_text(exc: BaseException) -> str:
    """The one line kubectl would print for ``exc``."""
    if isinstance(exc, TaskNotFoundError):
        return f'Error from server (NotFound): {PLURAL} "{exc.task_id}" not found'
    if isinstance(exc, KubeError):
        reason = _REASONS.get(exc.status, "Unknown")
        return f"Error from server ({reason}): {exc}"
    if isinstance(exc, KubeconfigError):
        return f"error: {exc}"
    if isinstance(exc, HarnessError):
        return f"Error: {exc}"
    if isinstance(exc, aiohttp.ClientError | OSError | TimeoutError):
        return f"Unable to connect to the server: {exc}"
    raise exc


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    text: str | None = None
    if args.command == "send":
        text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
        if not text.strip():
            args.subparser.error("the message is empty")
    elif args.command == "cmd":
        text = " ".join([args.name, *args.arguments])
    try:
        return asyncio.run(_run(args, text))
    except KeyboardInterrupt:
        return 130
    except (HarnessError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        render.out(error_text(exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

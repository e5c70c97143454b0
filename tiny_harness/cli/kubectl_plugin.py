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
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import aiohttp

from tiny_harness.cli import completion, kubectl_artifact, kubectl_output, kubectl_watch
from tiny_harness.cli import kubectl_render as render
from tiny_harness.cli.kubectl_parser import ARTIFACT, COMPLETION, WATCH, build_parser
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
from tiny_harness.core.commands.builtins import BUILTIN_SPECS
from tiny_harness.core.errors import HarnessError, TaskNotFoundError
from tiny_harness.core.inbox import Control
from tiny_harness.core.states import TaskState
from tiny_harness.kube.client import KubeError, Obj
from tiny_harness.kube.names import PLURAL

#: The program kubectl runs as ``kubectl harness``, and the one that answers its completion.
PLUGIN_PROGRAM: Final = "kubectl-harness"
COMPLETION_PROGRAM: Final = "kubectl_complete-harness"

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


# -- running ---------------------------------------------------------------------------------


def _out(text: str = "") -> None:
    render.out(text)


async def _run(args: argparse.Namespace, text: str | None) -> int:
    if args.command == "commands":
        _out(render.command_table(BUILTIN_SPECS))
        return 0
    if args.command == COMPLETION:
        # A script, not text someone else wrote: written as it is.
        sys.stdout.write(completion.script(args.shell, PLUGIN_PROGRAM, COMPLETION_PROGRAM))
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
    if args.output in kubectl_output.OBJECT_OUTPUTS:
        # As kubectl: an empty List for json and yaml, nothing for name, and no notice.
        if objs or args.output != "name":
            _out(kubectl_output.printed(objs, args.output, one=False))
        return 0
    if not objs:
        where = "any namespace" if args.all_namespaces else f"the {session.namespace} namespace"
        render.out(
            f"No tasks found for participant {session.participant} in {where}.", file=sys.stderr
        )
        return 0
    _out(_table(objs, session, args, namespaces=args.all_namespaces))
    return 0


def _table(
    objs: Sequence[Obj], session: Session, args: argparse.Namespace, *, namespaces: bool
) -> str:
    return render.task_list(
        objs,
        session.participant,
        now(),
        namespaces=namespaces,
        wide=args.output == "wide",
        headers=not args.no_headers,
    )


async def _get(session: Session, args: argparse.Namespace, _: str | None) -> int:
    obj = await session.visible(args.task)
    if args.output in kubectl_output.OBJECT_OUTPUTS:
        _out(kubectl_output.printed([obj], args.output, one=True))
        return 0
    if args.output == "wide":
        _out(_table([obj], session, args, namespaces=False))
        return 0
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
    ARTIFACT: kubectl_artifact.run,
    "send": _send,
    "cmd": _cmd,
    "approve": _approve,
    "reject": _reject,
    "complete": _complete,
    "cancel": _cancel,
    WATCH: kubectl_watch.run,
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


__all__ = ["build_parser", "error_text", "main"]


if __name__ == "__main__":
    sys.exit(main())

"""``tiny-harness``: start a local cluster, run the operator and the A2A gateway.

Exit codes: 0 success, 1 a start-up failure, 2 bad usage or configuration, 130 stopped by
SIGINT, 143 by SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import yaml

from tiny_harness.cli import completion
from tiny_harness.cli.home import ensure_default, home, resolve
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.literal import log_handler
from tiny_harness.core.settings import Settings
from tiny_harness.devcluster import ClusterError, LocalCluster
from tiny_harness.devcluster.binaries import BinariesError
from tiny_harness.kube.admission import local_policy
from tiny_harness.kube.crd import REPO_ROOT, crd_manifests
from tiny_harness.telemetry import tracing

# The servers are imported by the subcommand that runs them: the operator process then carries
# no web server or A2A SDK in memory, and the gateway no kopf or provider SDKs.

log = logging.getLogger(__name__)

DEFAULT_OPENAI_MODEL = "gpt-5-mini"
CONFIG_HELP = (
    "settings file (TOML; default: $TINY_HARNESS_CONFIG, else <home>/config.toml, "
    "created when missing; the home is $TINY_HARNESS_HOME or ~/.tiny-harness)"
)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, whose help names the settings file in effect for ``argv`` (found without
    touching the disk: ``--help`` never creates it)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", type=Path)
    known, _ = pre.parse_known_args(argv)
    epilog = f"configuration: {resolve(known.config).describe()}"
    parser = argparse.ArgumentParser(
        prog="tiny-harness",
        description="An agent harness in which every task is a Kubernetes HarnessTask.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    # No command: the TUI.
    sub = parser.add_subparsers(dest="command", required=False, metavar="COMMAND")

    def add_parser(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(
            name, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs
        )

    up = add_parser(
        "up",
        help="start a local control plane and the operator (what `make run` does)",
        description="Start etcd and kube-apiserver on 127.0.0.1 with the CRDs applied, then "
        "run the operator against them until interrupted. Tasks persist in --data-dir.",
    )
    up.add_argument(
        "--data-dir",
        type=Path,
        help="where the cluster keeps its data (default: <home>/cluster)",
    )
    up.add_argument("--config", type=Path, help=CONFIG_HELP)

    op = add_parser(
        "operator",
        help="run the operator against the current kubeconfig or in-cluster config",
    )
    op.add_argument("--kubeconfig", type=Path, help="kubeconfig to use (default: $KUBECONFIG)")
    op.add_argument("--config", type=Path, help=CONFIG_HELP)
    op.add_argument("--identity", help="this replica's name for the runner lease (default: host)")
    scope = op.add_mutually_exclusive_group()
    scope.add_argument(
        "-n", "--namespace", action="append", default=[], help="watch only this namespace"
    )
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="watch the whole cluster (default)"
    )
    op.add_argument(
        "--liveness",
        metavar="URL",
        help="serve a liveness probe, e.g. http://0.0.0.0:8080/healthz",
    )

    gw = add_parser(
        "gateway",
        help="serve the A2A gateway for the tasks of one namespace",
        description="Serve A2A (JSON-RPC, HTTP+JSON, SSE) over the HarnessTask resources. "
        "Bind address, base URL, namespace, identity mode and limits come from [gateway].",
    )
    gw.add_argument("--kubeconfig", type=Path, help="kubeconfig to use (default: $KUBECONFIG)")
    gw.add_argument("--config", type=Path, help=CONFIG_HELP)
    gw.add_argument("--bind", help="HOST:PORT to listen on (overrides gateway.bind)")

    tui = add_parser(
        "tui",
        help="the terminal UI (what bare `tiny-harness` opens)",
        description="Attach to a gateway (--url, or [client] gateway_url) as a participant and "
        "work with your tasks; with no gateway configured, start the local cluster, operator "
        "and gateway first, as `up` does, and attach to them. Logs go to <home>/tiny-harness.log.",
    )
    tui.add_argument("--url", help="the gateway to attach to (default: [client] gateway_url)")
    tui.add_argument(
        "--as",
        dest="participant",
        help="who you are to a gateway in header mode (default: [client] participant, else "
        "your login name)",
    )
    tui.add_argument("--config", type=Path, help=CONFIG_HELP)

    add_parser("crd", help="print the CustomResourceDefinitions (pipe to kubectl apply -f -)")

    shell = add_parser(
        "completion",
        help="print a shell completion script (bash or zsh)",
        description="Print a script that completes tiny-harness's sub-commands and flags: "
        "source <(tiny-harness completion bash) in ~/.bashrc, or "
        "source <(tiny-harness completion zsh) in ~/.zshrc after compinit.",
    )
    shell.add_argument("shell", metavar="SHELL", choices=completion.SHELLS, help="bash or zsh")
    return parser


#: The hidden first argument with which the completion scripts ask what completes the words
#: after it (:func:`tiny_harness.cli.completion.answer`).
COMPLETE = "__complete"


#: Loggers that write a line at INFO for every event or request: kopf's per-object log and the
#: HTTP clients under the model SDKs. At a few lines per turn they drown what matters and cost
#: CPU; ``--verbose`` brings them back.
PER_REQUEST_LOGGERS = ("kopf.objects", "httpx", "httpx2")


def load_settings(explicit: Path | None) -> Settings:
    """The settings from the file in effect (see :mod:`tiny_harness.cli.home`); the default
    file is created first when missing, and said so on stderr."""
    source = resolve(explicit)
    if source.origin == "default":
        path, created = ensure_default(home())
        if created:
            print(f"tiny-harness: created default configuration {path}", file=sys.stderr)
    return Settings.load(source.path)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words[:1] == [COMPLETE]:
        sys.stdout.write(completion.answer(build_parser([]), words[1:]))
        return 0
    args = build_parser(argv).parse_args(argv)
    if args.command is None:  # bare `tiny-harness`: the TUI, with everything defaulted
        args = build_parser(argv).parse_args([*(argv or []), "tui"])
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        handlers=[log_handler(logging.StreamHandler())],
    )
    if not args.verbose:
        for name in PER_REQUEST_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        if args.command == "completion":
            script = completion.script(args.shell, "tiny-harness", f"tiny-harness {COMPLETE}")
            sys.stdout.write(script)
            return 0
        if args.command == "crd":
            sys.stdout.write(yaml.safe_dump_all(crd_manifests().values(), sort_keys=False))
            return 0
        if args.command == "operator":
            if args.kubeconfig:
                os.environ["KUBECONFIG"] = str(args.kubeconfig)
            settings = load_settings(args.config)
            if args.identity:
                settings = settings.model_copy(
                    update={
                        "operator": settings.operator.model_copy(update={"identity": args.identity})
                    }
                )
            from tiny_harness.operator.process import run_operator

            with tracing(settings.tracing, "tiny-harness-operator"):
                return _run(
                    lambda on_signal: run_operator(
                        settings,
                        kubeconfig=args.kubeconfig,
                        namespaces=args.namespace,
                        liveness_endpoint=args.liveness,
                        on_signal=on_signal,
                    )
                )
        if args.command == "gateway":
            settings = load_settings(args.config)
            if args.bind:
                settings = settings.model_copy(
                    update={"gateway": settings.gateway.model_copy(update={"bind": args.bind})}
                )
            from tiny_harness.a2a_gateway.app import serve_gateway

            with tracing(settings.tracing, "tiny-harness-gateway"):
                return _run(lambda on_signal: serve_gateway(settings, args.kubeconfig))
        if args.command == "up":
            return _up((args.data_dir or home() / "cluster").expanduser(), args.config)
        if args.command == "tui":
            return _tui(load_settings(args.config), url=args.url, participant=args.participant)
    except ConfigError as exc:
        print(f"tiny-harness: configuration error: {exc}", file=sys.stderr)
        return 2
    except (ClusterError, BinariesError) as exc:
        print(f"tiny-harness: {exc}", file=sys.stderr)
        return 1
    return 2


#: What a run stopped by a signal exits with: 128 plus the signal's number, as a shell reports.
SIGNAL_EXIT = 128


def _run(make: Callable[[Callable[[signal.Signals], None]], Coroutine[Any, Any, None]]) -> int:
    """Run ``make(on_signal)`` until it ends or SIGINT/SIGTERM stops it (130 or 143).

    ``on_signal`` is for what takes the signals over (kopf does, in the operator): it hands
    them back here, so one signal stops everything the command runs.
    """
    received: list[signal.Signals] = []

    async def runner() -> None:
        task: asyncio.Future[None] | None = None

        def on_signal(sig: signal.Signals) -> None:
            received.append(sig)
            if task is not None:
                task.cancel()

        task = asyncio.ensure_future(make(on_signal))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(runner())
    return SIGNAL_EXIT + int(received[0]) if received else 0


def _up(data_dir: Path, config: Path | None) -> int:
    settings = load_settings(config)
    print(f"starting the local control plane in {data_dir} ...", file=sys.stderr)
    with LocalCluster(data_dir, crds=REPO_ROOT / "crds", admission=local_policy()) as cluster:
        os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
        print(
            f"\nThe cluster is up at {cluster.server}.\n"
            f"  export KUBECONFIG={cluster.kubeconfig}\n"
            "  kubectl apply -f examples/task.yaml\n"
            "  kubectl get ht -w\n"
            "Press Ctrl-C to stop; tasks persist in the data directory.\n",
            file=sys.stderr,
        )
        with tracing(settings.tracing, "tiny-harness"):
            return _run(lambda on_signal: _serve_all(settings, cluster.kubeconfig, on_signal))


def _tui(settings: Settings, *, url: str | None, participant: str | None) -> int:
    """The TUI, attached to ``url`` (or the configured gateway), or to an embedded cluster."""
    from tiny_harness.tui.launch import attach, log_to, read_token

    where = home()
    log_to(where / "tiny-harness.log")
    me = participant or settings.client.identity()
    token = read_token(settings.client.token_file)
    from tiny_harness.tui.session import SessionError

    target = url or settings.client.gateway_url
    try:
        if target is not None:
            return _run(lambda on_signal: attach(target, me, token))
        print(f"starting the local cluster in {where / 'cluster'} ...", file=sys.stderr)
        with LocalCluster(
            where / "cluster", crds=REPO_ROOT / "crds", admission=local_policy()
        ) as cluster:
            os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
            return _run(
                lambda on_signal: _embedded(settings, cluster.kubeconfig, on_signal, me, token)
            )
    except SessionError as exc:
        print(f"tiny-harness: {exc}", file=sys.stderr)
        return 1


async def _embedded(
    settings: Settings,
    kubeconfig: Path,
    on_signal: Callable[[signal.Signals], None],
    me: str,
    token: str | None,
) -> None:
    """The operator and gateway in this process, and the TUI attached to that gateway."""
    from tiny_harness.tui.launch import attach, until_serving

    servers = asyncio.ensure_future(_serve_all(settings, kubeconfig, on_signal, say=log.info))
    try:
        await until_serving(settings.gateway.url, servers)
        await attach(settings.gateway.url, me, token)
    finally:
        if not servers.done():
            servers.cancel()
        await asyncio.gather(servers, return_exceptions=True)


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _local_destinations(settings: Settings, say: Callable[[str], None]) -> Settings:
    """On a laptop, tool servers and agents run on the same machine: unless the settings say
    otherwise, the local operator may reach loopback (the policy refuses it by default)."""
    from tiny_harness.core.destinations import LOCAL_DEVELOPMENT

    if "destinations" in settings.operator.model_fields_set:
        return settings
    say(
        "Tool servers and agents on this machine may be reached: [operator.destinations] "
        f"allowed_cidrs = {list(LOCAL_DEVELOPMENT.allowed_cidrs)} (set [operator.destinations] "
        "to change it)."
    )
    operator = settings.operator.model_copy(update={"destinations": LOCAL_DEVELOPMENT})
    return settings.model_copy(update={"operator": operator})


async def _serve_all(
    settings: Settings,
    kubeconfig: Path,
    on_signal: Callable[[signal.Signals], None],
    *,
    say: Callable[[str], None] = _say,
) -> None:
    """The operator (and the gateway) against the local cluster. With no model configured
    and no key in the environment, the demo model answers, so a first run works."""
    from tiny_harness.a2a_gateway.app import serve_gateway
    from tiny_harness.models.demo import KEY_ENV, DemoModel
    from tiny_harness.operator.process import run_operator

    settings = _local_destinations(settings, say)
    demo: DemoModel | None = None
    if settings.provider == "openai" and settings.openai is None:
        if os.environ.get("OPENAI_API_KEY"):
            settings = settings.model_copy(update={"openai": {"model": DEFAULT_OPENAI_MODEL}})
        else:
            demo = DemoModel()
            await demo.start()
            os.environ[KEY_ENV] = "demo"
            settings = settings.model_copy(update={"openai": demo.settings()})
            say(
                "No model is configured (no [openai] settings, no OPENAI_API_KEY): the demo "
                "model answers every turn, saying it is a demo."
            )
    say(
        f"The A2A gateway serves namespace {settings.gateway.namespace} at "
        f"{settings.gateway.url} (agent card: {settings.gateway.url}/.well-known/agent-card.json)"
    )
    say(f"The web UI: {settings.gateway.url}/ui/")
    servers = [
        asyncio.ensure_future(run_operator(settings, kubeconfig=kubeconfig, on_signal=on_signal)),
        asyncio.ensure_future(serve_gateway(settings, kubeconfig)),
    ]
    try:
        await asyncio.gather(*servers)
    finally:
        # gather() ends as soon as one server ends or is cancelled; the other may still be
        # stopping gracefully (the gateway closes its streams). Stop each once, and wait for
        # both: what is left running when the loop closes is cancelled mid-shutdown.
        for server in servers:
            if not server.done() and not server.cancelling():
                server.cancel()
        await asyncio.gather(*servers, return_exceptions=True)
        if demo is not None:
            await demo.stop()


if __name__ == "__main__":
    sys.exit(main())

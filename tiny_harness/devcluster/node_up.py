"""``make cluster``: the chart installed on the local node, for people without Docker.

One command does what ``tests/cluster`` does before its tests: build the image from the
Dockerfile with buildah (``hack/image/build.sh``), start the local control plane with its node,
load the image into the node, and ``helm install`` the chart with it, the gateway on a NodePort
of the bridge address. Pods reach nothing beyond the node's bridge, so the model is one served
there: the scripted model server by default (it answers every turn with a fixed text), or any
OpenAI-compatible server you run on the bridge address (``--model-url``). It prints the
kubeconfig and the gateway's address and runs until Ctrl-C, which uninstalls nothing: the data
directory keeps the cluster's etcd for the next start.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tiny_harness.devcluster.cluster import LocalCluster
from tiny_harness.devcluster.network import NodeNetwork

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "tiny-harness"
NODE_PORT = 30080
CHART = REPO / "charts" / "tiny-harness"
#: A model on the bridge takes any key; the chart wants a Secret to mount all the same.
LOCAL_KEY = "--from-literal=api-key=local"


def _built(script: str) -> Path:
    proc = subprocess.run(["bash", str(REPO / script)], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{script} failed (exit {proc.returncode}); its output is above")
    return Path(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tiny_harness.devcluster.node_up")
    parser.add_argument(
        "--data-dir", type=Path, default=Path.home() / ".tiny-harness" / "node-cluster"
    )
    parser.add_argument(
        "--model-url", default="", help="an OpenAI-compatible /v1 URL on the bridge address"
    )
    parser.add_argument("--set", action="append", default=[], help="more helm --set values")
    args = parser.parse_args(argv)

    archive = _built("hack/image/build.sh")
    helm = _built("hack/helm/build.sh") / "helm"
    tag = archive.name.removeprefix("tiny-harness-").removesuffix(".oci.tar")
    network = NodeNetwork()
    with LocalCluster(args.data_dir, node=network) as cluster:
        assert cluster.node is not None
        cluster.node.load_image(archive)
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
        model = None
        model_url = args.model_url
        if not model_url:
            host = network.host_ip
            model = subprocess.Popen(
                [sys.executable, "-m", "tiny_harness.testing.model_server", "--host", host],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert model.stdout is not None
            model_url = model.stdout.readline().strip() + "/v1"
        gateway = f"http://{network.host_ip}:{NODE_PORT}"
        kubectl = ["kubectl", "-n", NAMESPACE]
        subprocess.run([*kubectl, "create", "namespace", NAMESPACE], env=env, capture_output=True)
        subprocess.run(
            [*kubectl, "create", "secret", "generic", "tiny-harness-model", LOCAL_KEY],
            env=env,
            capture_output=True,
        )
        values = {
            "image.repository": "localhost/tiny-harness",
            "image.tag": tag,
            "image.pullPolicy": "Never",
            "model.baseUrl": model_url,
            "model.existingSecret": "tiny-harness-model",
            "gateway.service.type": "NodePort",
            "gateway.service.nodePort": NODE_PORT,
            "gateway.baseUrl": gateway,
            # A development node on this machine: the web UI and the examples name their
            # participant by header (the install's notes say this is forgeable; a team's
            # install keeps the chart's tokenreview default).
            "gateway.participantIdentity": "header",
        }
        sets = [a for k, v in values.items() for a in ("--set-json", f"{k}={json.dumps(v)}")]
        for extra in args.set:
            sets += ["--set", extra]
        install = ["-n", NAMESPACE, "--wait", "--timeout", "5m"]
        subprocess.run(
            [str(helm), "upgrade", "--install", "tiny-harness", str(CHART), *install, *sets],
            env=env,
            check=True,
        )
        print(
            f"\nthe chart runs on the local node.\n"
            f"  export KUBECONFIG={cluster.kubeconfig}\n"
            f"  kubectl apply -n {NAMESPACE} -f examples/task.yaml\n"
            f"  kubectl harness send -n {NAMESPACE} hello-harness hello --as-participant alice"
            " --wait\n"
            f"  the gateway and web UI: {gateway}/ui/\n"
            "Ctrl-C stops the cluster (its data stays in the data directory).",
            flush=True,
        )
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        try:
            stop.wait()
        finally:
            if model is not None:
                model.terminate()
                model.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

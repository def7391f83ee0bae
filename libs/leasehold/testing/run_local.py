"""``make run``: a whole local cluster on loopback until Ctrl-C.

etcd, two controllers, three broker agents and the admin service, each its own process, on fixed
ports so the CLI works without flags (admin at 127.0.0.1:9093). Data and logs go to ``./run``
(wiped at start unless ``--keep``). Ctrl-C (or SIGTERM) stops them all in a few seconds; if this
supervisor is killed outright, its processes get SIGTERM from the kernel (parent-death signal,
:mod:`leasehold.testing.lifetime`) and stop too instead of running on as orphans.

Mutual TLS on every hop by default: a local CA and one certificate per process (and one for
clients) in ``run/certs``. ``run/client.json`` names the admin address and the client
certificate (``leasehold.client_config``); it is also written to the user's client config file
(``~/.config/leasehold/client.json``) unless that file is someone else's, so the CLI and SDK find
the cluster with no flags. ``--insecure`` starts every process in plaintext instead.

With ``--jaeger`` (``make run JAEGER=1``) a Jaeger all-in-one (built by ``make jaeger``) runs
beside the cluster on loopback, OTLP/gRPC on 4317 and the UI on 16686, and every service exports
its traces to it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import sys
import time
from pathlib import Path

from leasehold.client_config import config_path
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.jaeger import JaegerServer

# Marks a client config file that ``make run`` wrote (and may therefore overwrite).
WRITTEN_BY = "make run"


def client_config(cluster: LocalCluster) -> dict:
    """The client config file's content for ``cluster`` (``leasehold.client_config``)."""
    config: dict = {"admin": cluster.admin_address, "written_by": WRITTEN_BY}
    if cluster.ca is None:
        config["insecure"] = True
    else:
        certs = cluster.client_certs
        config["tls"] = {"ca": certs.ca, "cert": certs.cert, "key": certs.key}
    return config


def publish_client_config(cluster: LocalCluster) -> list[Path]:
    """Write the client config into the run directory, and as the user's client config file
    unless one not written by ``make run`` is there; the paths written."""
    text = json.dumps(client_config(cluster), indent=2) + "\n"
    written = [cluster.workdir / "client.json"]
    written[0].write_text(text)
    user = config_path()
    try:
        existing = json.loads(user.read_text()) if user.exists() else {"written_by": WRITTEN_BY}
    except (OSError, ValueError):
        existing = {}
    if isinstance(existing, dict) and existing.get("written_by") == WRITTEN_BY:
        user.parent.mkdir(parents=True, exist_ok=True)
        user.write_text(text)
        written.append(user)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make run", description=__doc__)
    p.add_argument("--workdir", default="run")
    p.add_argument("--keep", action="store_true", help="keep data from the previous run")
    p.add_argument("--etcd-port", type=int, default=2379, help="0: a free port")
    p.add_argument("--admin-port", type=int, default=9093, help="0: a free port")
    p.add_argument(
        "--controller-port", type=int, default=9191, help="first controller's (0: free ports)"
    )
    p.add_argument("--broker-port", type=int, default=9101, help="first broker's (0: free ports)")
    p.add_argument("--controllers", type=int, default=2)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--racks", default="", help="comma-separated racks assigned round-robin")
    p.add_argument(
        "--insecure", action="store_true", help="plaintext everywhere instead of mutual TLS"
    )
    p.add_argument("--jaeger", action="store_true", help="start Jaeger; services trace to it")
    p.add_argument("--jaeger-ui-port", type=int, default=16686)
    p.add_argument("--jaeger-otlp-port", type=int, default=4317)
    args = p.parse_args(argv)

    workdir = Path(args.workdir).resolve()
    if workdir.exists() and not args.keep:
        shutil.rmtree(workdir)
    jaeger = None
    tracing: dict[str, str] = {}
    if args.jaeger:
        jaeger = JaegerServer(
            workdir / "jaeger", query_port=args.jaeger_ui_port, otlp_port=args.jaeger_otlp_port
        )
        try:
            jaeger.start()
        except Exception as e:
            print(f"Jaeger failed to start: {e}", file=sys.stderr)
            return 1
        tracing = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint,
            "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        }
    spec = ClusterSpec(
        controllers=args.controllers,
        brokers=args.brokers,
        racks=tuple(r for r in args.racks.split(",") if r),
        etcd_port=args.etcd_port,
        admin_port=args.admin_port,
        controller_base_port=args.controller_port,
        broker_base_port=args.broker_port,
        tls=not args.insecure,
        extra_env=tracing,
        die_with_parent=True,
    )
    cluster = LocalCluster(spec, workdir=str(workdir))
    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    # Ctrl-C, kill, or the terminal closing (SIGHUP): every way of being told to stop stops all.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        cluster.start()
    except Exception as e:
        print(f"failed to start: {e}", file=sys.stderr)
        for proc in cluster.processes():
            print(f"--- {proc.name} ---\n{cluster.logs(proc.name, 20)}", file=sys.stderr)
        cluster.stop()
        if jaeger is not None:
            jaeger.stop()
        return 1
    configs = publish_client_config(cluster)
    print("Leasehold is running" + (" (PLAINTEXT: --insecure)" if args.insecure else "") + ":")
    print(f"  etcd          {cluster.etcd.endpoint}")
    for cid, proc in cluster.controllers.items():
        print(f"  controller {cid}  {proc.address}")
    for bid, proc in cluster.brokers.items():
        print(f"  broker {bid}      {proc.address}")
    print(f"  admin         {cluster.admin_address}   (the CLI's default)")
    if jaeger is not None:
        print(f"  Jaeger UI     {jaeger.ui_url}   (OTLP/gRPC at {jaeger.otlp_endpoint})")
    print(f"  logs and data {workdir}")
    if cluster.ca is not None:
        print(f"  certificates  {cluster.ca.dir}   (mutual TLS on every hop)")
    print(f"  client config {', '.join(str(c) for c in configs)}")
    if len(configs) == 1:
        print(f"  (yours was left alone: export LEASEHOLD_CLIENT_CONFIG={configs[0]})")
    print("Try: leasehold cluster describe   (Ctrl-C stops everything)")
    sys.stdout.flush()
    reported: set[str] = set()
    try:
        while not stop:
            time.sleep(0.5)
            for proc in cluster.processes():
                if not proc.alive() and proc.name not in reported:
                    reported.add(proc.name)
                    print(f"{proc.name} exited; see {proc.log_path}", file=sys.stderr)
    finally:
        say("stopping...")
        cluster.stop()
        if jaeger is not None:
            jaeger.stop()
        say("stopped.")
    return 0


def say(text: str) -> None:
    """Print, unless the terminal or pipe is gone: stopping the cluster must not depend on it."""
    with contextlib.suppress(OSError):
        print(text, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())

"""``make run``: a whole local cluster on loopback until Ctrl-C.

etcd, two controllers, three broker agents and the admin service, each its own process, on fixed
ports so the CLI works without flags (admin at 127.0.0.1:9093). Data and logs go to ``./run``
(wiped at start unless ``--keep``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time
from pathlib import Path

from leasehold.testing.cluster import ClusterSpec, LocalCluster


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make run", description=__doc__)
    p.add_argument("--workdir", default="run")
    p.add_argument("--keep", action="store_true", help="keep data from the previous run")
    p.add_argument("--etcd-port", type=int, default=2379)
    p.add_argument("--admin-port", type=int, default=9093)
    p.add_argument("--controllers", type=int, default=2)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--racks", default="", help="comma-separated racks assigned round-robin")
    args = p.parse_args(argv)

    workdir = Path(args.workdir).resolve()
    if workdir.exists() and not args.keep:
        shutil.rmtree(workdir)
    spec = ClusterSpec(
        controllers=args.controllers,
        brokers=args.brokers,
        racks=tuple(r for r in args.racks.split(",") if r),
        etcd_port=args.etcd_port,
        admin_port=args.admin_port,
        controller_base_port=9191,
        broker_base_port=9101,
    )
    cluster = LocalCluster(spec, workdir=str(workdir))
    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        cluster.start()
    except Exception as e:
        print(f"failed to start: {e}", file=sys.stderr)
        for proc in cluster.processes():
            print(f"--- {proc.name} ---\n{cluster.logs(proc.name, 20)}", file=sys.stderr)
        cluster.stop()
        return 1
    print("Leasehold is running:")
    print(f"  etcd          {cluster.etcd.endpoint}")
    for cid, proc in cluster.controllers.items():
        print(f"  controller {cid}  {proc.address}")
    for bid, proc in cluster.brokers.items():
        print(f"  broker {bid}      {proc.address}")
    print(f"  admin         {cluster.admin_address}   (the CLI's default)")
    print(f"  logs and data {workdir}")
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
        print("stopping...")
        cluster.stop()
        print("stopped.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

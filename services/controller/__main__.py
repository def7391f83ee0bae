"""``python -m services.controller`` / ``leasehold-controller``: run one controller process."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from leasehold import logs, telemetry
from leasehold.server import run_until_signalled
from services.controller.app import ControllerApp
from services.controller.config import parse_args


def main(argv: Sequence[str] | None = None) -> None:
    config = parse_args(argv)
    logs.configure("controller", config.common.log_level)
    telemetry.setup_tracing("leasehold-controller")
    app = ControllerApp(config)
    app.controller.heap.enabled = True  # process-wide collector setting (``leasehold.heap``)
    app.renew_in_child = True  # the session's renewals in a process of its own
    runner = app.runner()
    try:
        asyncio.run(run_until_signalled(runner))
    finally:
        telemetry.shutdown()


if __name__ == "__main__":
    main()

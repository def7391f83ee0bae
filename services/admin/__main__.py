"""``python -m services.admin`` / ``leasehold-admin``: the admin service."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from leasehold import logs
from services.admin.app import serve
from services.admin.config import parse_args


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    logs.configure("admin", config.common.log_level)
    asyncio.run(serve(config))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

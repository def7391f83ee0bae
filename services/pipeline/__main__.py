"""``python -m services.pipeline`` and ``spark-submit services/pipeline/__main__.py``.

Under spark-submit the master, memory and executors come from spark-submit's flags; the
``pipeline`` group's ``--master`` overrides them only when given.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

if __package__ in (None, ""):  # run as a file by spark-submit: make the checkout importable
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from services.pipeline.cli import pipeline


def main(argv: Sequence[str] | None = None) -> int:
    try:
        pipeline.main(args=list(argv) if argv is not None else None, prog_name="pipeline")
    except SystemExit as e:
        return int(e.code or 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

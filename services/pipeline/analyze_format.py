"""How the analyze report writes numbers, times and tables for a person to read.

Times are UTC with milliseconds (``22:25:52.300``; the date is in the headings), durations pick
their unit (``33.2 ms``, ``3.412 s``, ``2 min 05.0 s``), counts have thousands separators, and a
missing value is an empty cell, never ``NaN`` or ``-1``. Each table shows a chosen set of
columns under readable headings (:data:`COLUMNS`), so every table fits a 1,400-pixel page.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from datetime import UTC, datetime

import pandas as pd

MAX_ROWS = 200


def _missing(value: object) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def clock(ms: object) -> str:
    """``HH:MM:SS.mmm`` UTC."""
    if _missing(ms):
        return ""
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]  # type: ignore[arg-type]


def stamp(ms: object) -> str:
    """``YYYY-MM-DD HH:MM:SS.mmm`` UTC."""
    if _missing(ms):
        return ""
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]  # type: ignore[arg-type]


def duration(ms: object) -> str:
    """A duration in the unit that reads best: ``0 ms``, ``33.2 ms``, ``3.412 s``, ``2 min
    05.0 s``, ``3 h 02 min``."""
    if _missing(ms):
        return ""
    v = float(ms)  # type: ignore[arg-type]
    if not math.isfinite(v):
        return ""
    sign, v = ("-" if v < 0 else ""), abs(v)
    if v < 1:
        text = "0 ms" if v == 0 else f"{v:.2f} ms"
    elif v < 100:
        text = f"{v:.1f} ms".replace(".0 ms", " ms")
    elif v < 1000:
        text = f"{v:.0f} ms"
    elif v < 60_000:
        text = f"{v / 1000:.3f} s"
    elif v < 3_600_000:
        minutes, rest = divmod(v / 1000, 60)
        text = f"{int(minutes)} min {rest:04.1f} s"
    else:
        hours, rest = divmod(v / 1000, 3600)
        text = f"{int(hours)} h {int(rest // 60):02d} min"
    return sign + text


def count(value: object) -> str:
    if _missing(value):
        return ""
    return f"{int(value):,}"  # type: ignore[call-overload]


def plain(value: object) -> str:
    if _missing(value):
        return ""
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int):
        return f"{value:,}" if value >= 0 else ""
    return str(value)


def flag(value: object) -> str:
    return "yes" if not _missing(value) and bool(value) else ""


Formatter = Callable[[object], str]
# Table -> [(column, heading, formatter)], in display order.
_TIMING: list[tuple[str, str, Formatter]] = [
    ("start_ms", "start (UTC)", clock),
    ("start_evidence", "start from", plain),
    ("detection_delay_ms", "detection delay", duration),
    ("end_ms", "end (UTC)", clock),
    ("duration_ms", "duration", duration),
]
COLUMNS: dict[str, list[tuple[str, str, Formatter]]] = {
    "incidents": [
        ("incident", "#", plain),
        ("start_ms", "start (UTC)", stamp),
        ("end_ms", "end (UTC)", clock),
        ("duration_ms", "duration", duration),
        ("detection_delay_ms", "detection delay", duration),
        ("offline_partitions", "offline partitions", count),
        ("offline_partition_ms", "offline partition-time", duration),
        ("max_offline_ms", "longest offline", duration),
        ("under_replicated_partition_ms", "under-replicated partition-time", duration),
        ("failovers", "failovers", count),
        ("max_failover_ms", "longest failover", duration),
        ("broker_downs", "brokers down", count),
        ("unclean_elections", "unclean elections", count),
        ("elections", "leader elections", count),
    ],
    "offline_windows": [
        ("topic", "topic", plain),
        ("partition", "partition", plain),
        *_TIMING[:2],
        ("cause", "cause", plain),
        ("detected_ms", "detected (UTC)", clock),
        *_TIMING[2:],
        ("open", "still open", flag),
        ("start_reason", "selector", plain),
        ("end_reason", "ended by", plain),
    ],
    "under_replicated": [
        ("topic", "topic", plain),
        ("partition", "partition", plain),
        *_TIMING[:2],
        ("cause", "cause", plain),
        ("detected_ms", "detected (UTC)", clock),
        *_TIMING[2:],
        ("open", "still open", flag),
        ("isr_at_start", "ISR at start", count),
        ("rf", "replicas", count),
    ],
    "failovers": [
        ("controller_epoch", "epoch", plain),
        ("controller_id", "controller", plain),
        ("start_ms", "previous controller gone (UTC)", clock),
        ("start_evidence", "start from", plain),
        ("detected_ms", "campaign won (UTC)", clock),
        ("detection_delay_ms", "detection delay", duration),
        ("failover_ms", "failover", duration),
        ("done_ms", "done (UTC)", clock),
        ("duration_ms", "without a controller", duration),
        ("completed", "completed", flag),
    ],
    "broker_downtime": [
        ("broker_id", "broker", plain),
        *_TIMING[:2],
        ("lease_ttl_ms", "lease TTL", duration),
        ("detected_ms", "detected (UTC)", clock),
        *_TIMING[2:],
        ("open", "still down", flag),
    ],
    "impairments": [
        ("kind", "what", plain),
        ("topic", "topic", plain),
        ("partition", "partition", plain),
        ("broker_id", "broker / controller", plain),
        *_TIMING[:2],
        ("detected_ms", "detected (UTC)", clock),
        *_TIMING[2:],
        ("detail", "detail", plain),
    ],
    "elections": [("reason", "selector", plain), ("elections", "leader elections", count)],
}


def table(df: pd.DataFrame, name: str, max_rows: int = MAX_ROWS) -> str:
    """``df`` as an HTML table with the columns and formats of ``COLUMNS[name]``."""
    if df.empty:
        return "<p class='none'>Nothing in this log.</p>"
    spec = [(c, h, f) for c, h, f in COLUMNS[name] if c in df.columns]
    shown = df.head(max_rows)
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in spec)
    rows = []
    for record in shown.itertuples(index=False):
        values = record._asdict()
        cells = "".join(
            f"<td class='{_align(f)}'>{html.escape(f(values[c]))}</td>" for c, _, f in spec
        )
        rows.append(f"<tr>{cells}</tr>")
    note = (
        f"<p class='note'>First {max_rows:,} of {len(df):,} rows.</p>" if len(df) > max_rows else ""
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"


def _align(formatter: Formatter) -> str:
    return "num" if formatter in (duration, count, clock, stamp) else "text"

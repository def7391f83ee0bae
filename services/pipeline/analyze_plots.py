"""The analyze report's plots, as self-contained base64 PNGs.

A timeline shows how many partitions were offline and under-replicated over time, with broker
outages (grey), controller outages (blue) and the moments the controller detected each fault
(dotted). The whole log gets one; each incident gets its own, zoomed to the incident.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

WIDTH_IN = 12.5  # at dpi 100 a plot is 1,250 px: inside the 1,400-px page with its margins


def png(fig: plt.Figure, alt: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return f'<img alt="{alt}" src="data:image/png;base64,{data}">'


def _step_counts(intervals: pd.DataFrame) -> tuple[list[float], list[int]]:
    """How many intervals are open over time, as a step function (x in ms)."""
    events = sorted(
        [(s, 1) for s in intervals["start_ms"]] + [(e, -1) for e in intervals["end_ms"]],
        key=lambda e: (e[0], e[1]),
    )
    xs, ys, level = [], [], 0
    for t, d in events:
        level += d
        xs.append(float(t))
        ys.append(level)
    return xs, ys


def _t(ms: float) -> pd.Timestamp:
    return pd.to_datetime(ms, unit="ms")


def _clip(frame: pd.DataFrame, lo: float | None, hi: float | None) -> pd.DataFrame:
    if lo is None or hi is None or frame.empty:
        return frame
    return frame[(frame["end_ms"] >= lo) & (frame["start_ms"] <= hi)]


def timeline(
    a,  # services.pipeline.analyze_job.Analysis
    title: str,
    window: tuple[float, float] | None = None,
) -> str:
    """The timeline of ``a``; ``window`` (ms) zooms to an incident, with a margin."""
    lo = hi = None
    if window is not None:
        span = max(window[1] - window[0], 1_000.0)
        lo, hi = window[0] - 0.15 * span, window[1] + 0.15 * span
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.4))
    handles = []
    for frame, label, color in (
        (a.offline_windows, "offline partitions", "tab:red"),
        (a.under_replicated, "under-replicated partitions", "tab:orange"),
    ):
        frame = _clip(frame, lo, hi)
        if len(frame):
            xs, ys = _step_counts(frame)
            if lo is not None:
                xs, ys = [lo, *xs, hi], [0, *ys, ys[-1]]
            (line,) = ax.step([_t(x) for x in xs], ys, where="post", color=color, label=label)
            handles.append(line)
    for frame, color, label in (
        (a.broker_downtime, "grey", "broker down"),
        (a.failovers, "tab:blue", "no active controller"),
    ):
        frame = _clip(frame, lo, hi)
        for _, row in frame.iterrows():
            ax.axvspan(_t(row["start_ms"]), _t(row["end_ms"]), color=color, alpha=0.15)
            ax.axvline(_t(row["detected_ms"]), color=color, ls=":", lw=1)
        if len(frame):
            handles.append(Patch(color=color, alpha=0.3, label=f"{label} (dotted: detected)"))
    if lo is not None:
        ax.set_xlim(_t(lo), _t(hi))
    ax.set_ylim(bottom=0)
    ax.set_ylabel("partitions")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fmt = "%H:%M:%S.%f" if window is not None and hi - lo < 20_000 else "%H:%M:%S"
    ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))
    if fmt.endswith("%f"):
        ax.xaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(
                lambda x, _: mdates.num2date(x).strftime("%H:%M:%S.%f")[:-3]
            )
        )
    ax.set_xlabel("UTC")
    ax.set_title(title)
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize="small")
    fig.autofmt_xdate()
    fig.tight_layout()
    return png(fig, title)


def bars(labels: list[str], values: list[float], title: str, ylabel: str) -> str:
    fig, ax = plt.subplots(figsize=(min(WIDTH_IN, max(4.0, 0.7 * len(labels) + 2)), 3))
    ax.bar(labels, values, color="tab:blue")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    return png(fig, title)

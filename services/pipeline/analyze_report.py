"""The analyze job's HTML report: one self-contained page (plots are base64 PNGs).

Written for the person on call after an incident: the headline figures first, then a timeline
of offline and under-replicated partitions with controller failovers and broker outages marked,
then one section per incident, then the detail tables. Times are UTC.
"""

from __future__ import annotations

import base64
import html
import io
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from services.pipeline.analyze_transforms import __doc__ as DEFINITIONS

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
.figures td { text-align: left; } img { max-width: 100%; } pre { white-space: pre-wrap; }
"""
MAX_ROWS = 200


def utc(ms: object) -> str:
    if ms is None or pd.isna(ms):  # type: ignore[arg-type]
        return ""
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def seconds(ms: object) -> str:
    return "" if ms is None or pd.isna(ms) else f"{float(ms) / 1000:.3f} s"  # type: ignore[arg-type]


def png(fig: plt.Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return (
        f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'
    )


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


def timeline_plot(
    offline: pd.DataFrame, urp: pd.DataFrame, failovers: pd.DataFrame, downs: pd.DataFrame
) -> str:
    fig, ax = plt.subplots(figsize=(11, 3.6))
    for frame, label, color in (
        (offline, "offline partitions", "tab:red"),
        (urp, "under-replicated partitions", "tab:orange"),
    ):
        if len(frame):
            xs, ys = _step_counts(frame)
            ax.step(
                [pd.to_datetime(x, unit="ms") for x in xs],
                ys,
                where="post",
                label=label,
                color=color,
            )
    for _, row in downs.iterrows():
        ax.axvspan(
            pd.to_datetime(row["start_ms"], unit="ms"),
            pd.to_datetime(row["end_ms"], unit="ms"),
            color="grey",
            alpha=0.15,
        )
    for _, row in failovers.iterrows():
        if not pd.isna(row["elected_ms"]):
            ax.axvline(pd.to_datetime(row["elected_ms"], unit="ms"), color="tab:blue", ls="--")
    ax.set_ylabel("partitions")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    ax.set_xlabel("UTC")
    ax.set_title("Offline / under-replicated partitions (grey: broker down, blue: failover)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right")
    fig.autofmt_xdate()
    return png(fig)


def bar_plot(labels: list[str], values: list[float], title: str, ylabel: str) -> str:
    fig, ax = plt.subplots(figsize=(max(4, 0.7 * len(labels) + 2), 3))
    ax.bar(labels, values, color="tab:blue")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    return png(fig)


def table(df: pd.DataFrame, formats: dict[str, object] | None = None) -> str:
    if df.empty:
        return "<p>None.</p>"
    shown = df.head(MAX_ROWS).copy()
    for col, fmt in (formats or {}).items():
        if col in shown:
            shown[col] = shown[col].map(fmt)  # type: ignore[arg-type]
    note = f"<p>First {MAX_ROWS} of {len(df)} rows.</p>" if len(df) > MAX_ROWS else ""
    return shown.to_html(index=False, escape=True, border=0) + note


def figures(overall: dict[str, object]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(k.replace('_', ' '))}</td><td>{html.escape(str(v))}</td></tr>"
        for k, v in overall.items()
    )
    return f'<table class="figures">{rows}</table>'


def render_report(a) -> str:  # a: services.pipeline.analyze_job.Analysis
    o = a.overall
    time_cols = {c: utc for c in ("start_ms", "end_ms", "elected_ms", "done_ms", "ts_ms")}
    dur_cols = {
        c: seconds
        for c in (
            "duration_ms",
            "offline_partition_ms",
            "max_offline_ms",
            "under_replicated_partition_ms",
            "max_failover_ms",
        )
    }
    fmt = {**time_cols, **dur_cols}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Leasehold state-change analysis</title><style>{STYLE}</style></head><body>",
        "<h1>Leasehold state-change analysis</h1>",
        f"<p>Log from {utc(o['log_start_ms'])} to {utc(o['log_end_ms'])} UTC, "
        f"{o['records']} records, {o['incidents']} incidents "
        f"(quiet gap {a.gap_ms / 1000:g} s).</p>",
        "<h2>Overall</h2>",
        figures(o),
        timeline_plot(a.offline_windows, a.under_replicated, a.failovers, a.broker_downtime),
    ]
    by_reason = a.elections_by_reason
    if len(by_reason):
        parts.append(
            bar_plot(
                by_reason["reason"].astype(str).tolist(),
                by_reason["elections"].tolist(),
                "Leader elections by reason",
                "elections",
            )
        )
    parts += ["<h2>Incidents</h2>", table(a.incidents, fmt)]
    if len(a.incidents):
        parts.append(
            bar_plot(
                [f"#{i}" for i in a.incidents["incident"]],
                (a.incidents["offline_partition_ms"] / 1000).tolist(),
                "Offline partition-seconds per incident",
                "partition-seconds",
            )
        )
    for _, inc in a.incidents.iterrows():
        n = int(inc["incident"])
        mine = a.impairments[a.impairments["incident"] == n]
        reasons = a.elections_by_incident[a.elections_by_incident["incident"] == n]
        parts += [
            f"<h3>Incident {n}: {utc(inc['start_ms'])} to {utc(inc['end_ms'])} "
            f"({seconds(inc['duration_ms'])})</h3>",
            "<h4>Leader elections by reason</h4>",
            table(reasons[["reason", "elections"]]),
            "<h4>Impairments</h4>",
            table(mine.drop(columns=["incident"]), fmt),
        ]
    parts += [
        "<h2>Offline windows</h2>",
        table(a.offline_windows, fmt),
        "<h2>Under-replicated intervals</h2>",
        table(a.under_replicated, fmt),
        "<h2>Controller failovers</h2>",
        table(a.failovers, fmt),
        "<h2>Broker downtime</h2>",
        table(a.broker_downtime, fmt),
        "<h2>Definitions</h2>",
        f"<pre>{html.escape(DEFINITIONS or '')}</pre>",
        "</body></html>",
    ]
    return "\n".join(parts)

"""The analyze job's HTML report: one self-contained page (plots are base64 PNGs).

Written for the person on call after an incident: the headline figures first, then a timeline
of the whole log, then one section per incident with a timeline zoomed to it, then the detail
tables and the definitions. Times are UTC; numbers are formatted by
:mod:`services.pipeline.analyze_format`; the page fits 1,400 pixels.
"""

from __future__ import annotations

import html

from services.pipeline import analyze_format as fmt
from services.pipeline.analyze_plots import bars, timeline

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1340px; color: #222;
       padding: 0 12px; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0 1.2em; font-size: 13px; max-width: 100%; }
th, td { border: 1px solid #d4d4d4; padding: 3px 7px; }
th { background: #f3f3f3; font-weight: 600; text-align: center; vertical-align: bottom; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.text { text-align: left; }
.figures td:first-child { color: #555; } .figures td { text-align: left; }
img { max-width: 100%; display: block; margin: 0.6em 0; }
dl { max-width: 60em; } dt { font-weight: 600; margin-top: 0.7em; } dd { margin-left: 1.5em; }
.note, .none { color: #666; font-size: 13px; }
"""
MAX_INCIDENT_SECTIONS = 50

# (term, definition): what the report's words mean, for the reader (HTML).
DEFINITIONS: tuple[tuple[str, str], ...] = (
    (
        "Start, and what it is taken from",
        "Every window starts at the best evidence of the fault behind it, not when the "
        "controller recorded it. <em>last keep-alive</em>: the lost lease's last confirmed "
        "keep-alive (detection minus the lease TTL; the fault followed it by at most one "
        "keep-alive interval, a third of the TTL). <em>registration</em>: the lost broker "
        "registered later than that, so it was alive then. <em>clean shutdown</em>: the broker "
        "shut down in a controlled way and left when the controller saw it go. "
        "<em>controller heartbeat</em>: the previous controller's last record (it writes a "
        "heartbeat every few seconds). <em>resignation</em>: the previous controller resigned "
        "and said so. <em>first election</em>: nobody held the office before: no fault. "
        "<em>detection</em>: nothing better is known; the controller's record.",
    ),
    (
        "Detection delay",
        "From the start to the moment the controller learned of the fault (etcd reported the "
        "broker's registration gone, or the campaign was won). Mostly the lease TTL.",
    ),
    (
        "Offline partition",
        "A partition without a leader: from the fault that took its leader away (or the "
        "controller's move to Offline) until a leader is elected again or the topic is deleted. "
        "A window still open when the log ends is marked <em>still open</em> and ends, for now, "
        "at the end of the log.",
    ),
    (
        "Under-replicated partition",
        "A partition whose in-sync replica set is smaller than its replica count; the count "
        "comes from the snapshot when one is given, else from the largest ISR the log shows.",
    ),
    (
        "Leader election",
        "A move to Online with a leader, by selector: <em>offline</em> (the leader was lost), "
        "<em>unclean</em> (from outside the ISR: data may be lost), <em>preferred</em>, "
        "<em>reassigned</em>, <em>controlled_shutdown</em>, <em>new</em>. ISR changes are not "
        "elections.",
    ),
    (
        "Failover",
        "A controller taking office: <em>failover</em> runs from taking office to the end of "
        "its failover work (every broker told); <em>without a controller</em> runs from the "
        "previous controller's end to that moment.",
    ),
    (
        "Broker down",
        "From the broker's fault to its registering again.",
    ),
    (
        "Incident",
        "Impairments (offline, under-replicated, broker down, failover, unclean election) that "
        "follow each other with quiet gaps shorter than the report's gap. Partition-time adds "
        "up the windows of every partition (two partitions offline for 1 s make 2 s).",
    ),
)
_FIGURES: tuple[tuple[str, str, fmt.Formatter], ...] = (
    ("incidents", "Incidents", fmt.count),
    ("offline_partitions", "Partitions that went offline", fmt.count),
    ("offline_windows", "Offline windows", fmt.count),
    ("open_offline_windows", "Offline windows still open at the end of the log", fmt.count),
    ("max_offline_ms", "Longest offline window", fmt.duration),
    ("offline_partition_ms", "Offline partition-time", fmt.duration),
    ("under_replicated_intervals", "Under-replicated intervals", fmt.count),
    ("under_replicated_partition_ms", "Under-replicated partition-time", fmt.duration),
    ("max_detection_delay_ms", "Longest detection delay", fmt.duration),
    ("broker_downs", "Broker outages", fmt.count),
    ("broker_down_ms", "Broker downtime, all brokers", fmt.duration),
    ("controller_failovers", "Controller failovers", fmt.count),
    ("max_failover_ms", "Longest failover", fmt.duration),
    ("mean_failover_ms", "Mean failover", fmt.duration),
    ("max_controller_outage_ms", "Longest time without a controller", fmt.duration),
    ("elections", "Leader elections", fmt.count),
    ("unclean_elections", "Unclean leader elections", fmt.count),
    ("records", "Records read", fmt.count),
)


def figures(overall: dict[str, object]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(label)}</td><td>{html.escape(f(overall.get(key)))}</td></tr>"
        for key, label, f in _FIGURES
        if key in overall
    )
    return f'<table class="figures">{rows}</table>'


def definitions() -> str:
    items = "".join(f"<dt>{html.escape(t)}</dt><dd>{d}</dd>" for t, d in DEFINITIONS)
    return f"<dl>{items}</dl>"


def _incident_section(a, inc) -> list[str]:
    n = int(inc["incident"])
    mine = a.impairments[a.impairments["incident"] == n]
    reasons = a.elections_by_incident[a.elections_by_incident["incident"] == n]
    head = (
        f"Incident {n}: {fmt.stamp(inc['start_ms'])} to {fmt.clock(inc['end_ms'])} UTC "
        f"({fmt.duration(inc['duration_ms'])})"
    )
    return [
        f"<h3>{html.escape(head)}</h3>",
        timeline(a, f"Incident {n}", (float(inc["start_ms"]), float(inc["end_ms"]))),
        "<h4>Leader elections by selector</h4>",
        fmt.table(reasons, "elections"),
        "<h4>Impairments</h4>",
        fmt.table(mine, "impairments"),
    ]


def render_report(a) -> str:  # a: services.pipeline.analyze_job.Analysis
    o = a.overall
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width'>",
        f"<title>Leasehold state-change analysis</title><style>{STYLE}</style></head><body>",
        "<h1>Leasehold state-change analysis</h1>",
        f"<p>Log from {fmt.stamp(o['log_start_ms'])} to {fmt.stamp(o['log_end_ms'])} UTC: "
        f"{fmt.count(o['records'])} records, {fmt.count(o['incidents'])} incidents "
        f"(separated by quiet gaps of {fmt.duration(a.gap_ms)}). Windows start at the best "
        "evidence of their fault; see the definitions at the end.</p>",
        "<h2>Overall</h2>",
        figures(o),
        timeline(a, "Offline and under-replicated partitions, whole log"),
    ]
    by_reason = a.elections_by_reason
    if len(by_reason):
        parts.append(
            bars(
                by_reason["reason"].astype(str).tolist(),
                by_reason["elections"].tolist(),
                "Leader elections by selector",
                "elections",
            )
        )
    parts += ["<h2>Incidents</h2>", fmt.table(a.incidents, "incidents")]
    for _, inc in a.incidents.head(MAX_INCIDENT_SECTIONS).iterrows():
        parts += _incident_section(a, inc)
    if len(a.incidents) > MAX_INCIDENT_SECTIONS:
        parts.append(
            f"<p class='note'>Sections for the first {MAX_INCIDENT_SECTIONS} of "
            f"{len(a.incidents):,} incidents; the table above lists them all.</p>"
        )
    parts += [
        "<h2>Offline windows</h2>",
        fmt.table(a.offline_windows, "offline_windows"),
        "<h2>Under-replicated intervals</h2>",
        fmt.table(a.under_replicated, "under_replicated"),
        "<h2>Controller failovers</h2>",
        fmt.table(a.failovers, "failovers"),
        "<h2>Broker downtime</h2>",
        fmt.table(a.broker_downtime, "broker_downtime"),
        "<h2>Definitions</h2>",
        definitions(),
        "</body></html>",
    ]
    return "\n".join(parts)

"""The HTML pages: one layout, the stylesheet and scripts inlined under a per-response nonce.

Nothing on a page refers outside this server: no CDN, no font, no image from elsewhere, and
the content policy (`csp`) forbids it anyway, so the pages work offline. Every value that
comes from a job is escaped here or set with textContent by the scripts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from html import escape
from importlib.resources import files
from typing import Any
from urllib.parse import quote

from specialists.fronts.fleet.model import Totals
from specialists.fronts.fleet.rows import Row
from specialists.store.rollup import tokens_in as prompt_tokens

COSTS_SHOWN = 200


@cache
def _asset(name: str) -> str:
    return (files("specialists.fronts.web") / "static" / name).read_text(encoding="utf-8")


def new_nonce() -> str:
    return os.urandom(16).hex()


def csp(nonce: str) -> str:
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


def _layout(
    title: str, body: str, *, nonce: str, token: str, script: str = "", job: str = ""
) -> str:
    q = "?token=" + quote(token, safe="")
    js = f'<script nonce="{nonce}">{_asset(script)}</script>' if script else ""
    data = f' data-job="{escape(job)}"' if job else ""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta name='referrer' content='no-referrer'>"
        f'<title>{escape(title)}</title><style nonce="{nonce}">{_asset("web.css")}</style>'
        f"</head><body{data}><header><h1>specialists</h1>"
        f"<a href='/{q}'>fleet</a><a href='/costs{q}'>cost</a>"
        f"<span class='totals' id='totals'></span><span id='conn'></span></header>"
        f"<main>{body}</main>{js}</body></html>"
    )


def fleet_page(*, nonce: str, token: str) -> str:
    head = "".join(
        f"<th{' class=num' if num else ''}>{name}</th>"
        for name, num in (
            ("job", False),
            ("what", False),
            ("status", False),
            ("flags", False),
            ("elapsed", True),
            ("tokens in / out", True),
            ("cost", True),
            ("activity", False),
        )
    )
    body = (
        f"<table id='fleet'><thead><tr>{head}</tr></thead><tbody></tbody></table>"
        "<p id='empty' class='muted' hidden>no jobs yet: start one with "
        "<code>specialists run NAME --background</code></p>"
    )
    return _layout("specialists · fleet", body, nonce=nonce, token=token, script="fleet.js")


def job_page(row: Row, timeline: str, graph: str | None, *, nonce: str, token: str) -> str:
    job_id = escape(row.job_id or "")
    what = escape(row.name) + (f" <span class=muted>{escape(row.task)}</span>" if row.task else "")
    stages = (
        "<section><h3>stages: what the workflow ran, and what waits</h3>"
        f"<div id='graph' class='graph'>{graph}</div></section>"
        if graph is not None
        else ""
    )
    body = (
        f"<section><h2>job {job_id} <span class='what'>{what}</span> "
        f"<span class='st' id='status'>{escape(row.status)}</span></h2>"
        f"<div id='summary'>{escape(row.title)}</div></section>{stages}"
        f"<section><h3>timeline: this job and the jobs it started</h3>"
        f"<div id='timeline'>{timeline}</div></section>"
        "<section><h3>feed</h3><div id='feed' class='feed'></div></section>"
        "<section id='result-box' hidden><h3>result</h3><pre id='result' class='result'></pre>"
        "</section>"
    )
    return _layout(
        f"specialists · {row.job_id}",
        body,
        nonce=nonce,
        token=token,
        script="job.js",
        job=row.job_id or "",
    )


@dataclass(frozen=True)
class MissionCost:
    id: str
    title: str
    status: str
    spent: dict[str, Any]  # store/rollup.py's shape


def costs_page(
    rows: Sequence[Row],
    totals: Totals,
    missions: Sequence[MissionCost] = (),
    *,
    nonce: str,
    token: str,
    problem: str = "",
) -> str:
    """Cost and tokens per job (most expensive first), per specialist and per mission (its
    jobs' with their children's, each counted once), with bars."""
    q = "?token=" + quote(token, safe="")
    jobs = sorted((r for r in rows if r.kind == "job"), key=lambda r: (-r.cost_usd, r.key))
    top = max((r.cost_usd for r in jobs), default=0.0) or 1.0
    by_specialist: dict[str, list[float]] = {}
    for r in jobs:
        entry = by_specialist.setdefault(r.title, [0.0, 0.0, 0.0, 0.0])
        entry[0] += r.cost_usd
        entry[1] += r.tokens_in
        entry[2] += r.tokens_out
        entry[3] += 1
    spec_top = max((v[0] for v in by_specialist.values()), default=0.0) or 1.0
    spec_rows = "".join(
        f"<tr><td>{escape(name)}</td><td class=num>{int(v[3])}</td>"
        f"<td class=num>{int(v[1]):,}</td><td class=num>{int(v[2]):,}</td>"
        f"<td class=num>${v[0]:.4f}</td><td>{_bar(v[0] / spec_top)}</td></tr>"
        for name, v in sorted(by_specialist.items(), key=lambda kv: -kv[1][0])
    )
    job_rows = "".join(
        f"<tr><td class=job><a href='/job/{escape(r.job_id or '')}{q}'>{escape(r.job_id or '')}"
        f"</a></td><td class=what>{escape(r.name)}{_task(r)}</td>"
        f"<td class='st st-{escape(r.status)}'>"
        f"{escape(r.status)}</td><td class=num>{r.tokens_in:,}</td>"
        f"<td class=num>{r.tokens_out:,}</td><td class=num>${r.cost_usd:.4f}{_with_children(r)}"
        f"</td><td>{_bar(r.cost_usd / top)}</td></tr>"
        for r in jobs[:COSTS_SHOWN]
    )
    more = (
        f"<p class=muted>{len(jobs) - COSTS_SHOWN} cheaper jobs not listed</p>"
        if len(jobs) > COSTS_SHOWN
        else ""
    )
    body = (
        f"<section><h2>cost ${totals.cost_usd:.4f} · tokens {totals.tokens_in:,} in / "
        f"{totals.tokens_out:,} out</h2></section>{_ceilings(rows)}{_missions(missions, problem)}"
        "<section><h3>per specialist</h3><table><thead><tr><th>specialist</th>"
        "<th class=num>jobs</th><th class=num>tokens in</th><th class=num>tokens out</th>"
        f"<th class=num>cost</th><th></th></tr></thead><tbody>{spec_rows}</tbody></table>"
        "</section><section><h3>per job</h3><table><thead><tr><th>job</th><th>what</th>"
        "<th>status</th><th class=num>tokens in</th><th class=num>tokens out</th>"
        f"<th class=num>cost</th><th></th></tr></thead><tbody>{job_rows}</tbody></table>"
        f"{more}</section>"
    )
    return _layout("specialists · cost", body, nonce=nonce, token=token)


def _ceilings(rows: Sequence[Row]) -> str:
    """Each spend ceiling the jobs count against (as their supervisors last counted it):
    spent of allowed, what is left, and a bar of how much is used."""
    seen: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: -r.started_at_ms):  # the newest count of each
        if r.ceiling is not None:
            seen.setdefault(str(r.ceiling.get("of")), r.ceiling)
    if not seen:
        return ""
    body = "".join(
        f"<tr><td>{escape(str(c.get('whose')))}</td><td class=num>"
        f"{escape(_limits(c))}</td><td class=num>{escape(str(c.get('left')))}</td>"
        f"<td>{_bar(float(c.get('used') or 0))}</td></tr>"
        for c in sorted(seen.values(), key=lambda c: -float(c.get("used") or 0))
    )
    return (
        "<section><h3>spend ceilings</h3><table><thead><tr><th>ceiling of</th>"
        "<th class=num>spent of allowed</th><th class=num>left</th><th></th></tr></thead>"
        f"<tbody>{body}</tbody></table></section>"
    )


def _limits(c: dict[str, Any]) -> str:
    parts = []
    if c.get("cost_usd") is not None:
        parts.append(f"${float(c.get('spent_usd') or 0):.2f} of ${float(c['cost_usd']):.2f}")
    if c.get("tokens") is not None:
        parts.append(f"{int(c.get('spent_tokens') or 0):,} of {int(c['tokens']):,} tokens")
    return ", ".join(parts)


def _missions(missions: Sequence[MissionCost], problem: str = "") -> str:
    if problem:
        return f"<section><h3>per mission</h3><p class=muted>{escape(problem)}</p></section>"
    if not missions:
        return ""
    ordered = sorted(missions, key=lambda m: (-m.spent["cost_usd"], m.id))
    top = max((m.spent["cost_usd"] for m in ordered), default=0.0) or 1.0
    rows = "".join(
        f"<tr><td class=job>{escape(m.id)}</td><td class=what>{escape(m.title[:80])}</td>"
        f"<td>{escape(m.status)}</td><td class=num>{m.spent['jobs']}</td>"
        f"<td class=num>{prompt_tokens(m.spent):,}</td>"
        f"<td class=num>{m.spent['tokens']['output']:,}</td>"
        f"<td class=num>${m.spent['cost_usd']:.4f}</td><td>{_bar(m.spent['cost_usd'] / top)}"
        "</td></tr>"
        for m in ordered[:COSTS_SHOWN]
    )
    return (
        "<section><h3>per mission (its jobs, workflows' children included)</h3><table><thead>"
        "<tr><th>mission</th><th>title</th><th>status</th><th class=num>jobs</th>"
        "<th class=num>tokens in</th><th class=num>tokens out</th><th class=num>cost</th>"
        f"<th></th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _task(row: Row) -> str:
    if row.workflow_key or not row.task or row.task == row.name:
        return ""
    return f" <span class=task>{escape(row.task[:80])}</span>"


def _with_children(row: Row) -> str:
    """A workflow's cost with its children's: its own is the engine's, usually nothing."""
    if row.rollup is None:
        return ""
    return f" <span class=muted>(Σ ${row.spent()[2]:.4f} with its children)</span>"


def _bar(fraction: float) -> str:
    width = max(0.0, min(1.0, fraction)) * 200
    return (
        "<svg class=bar width='200' height='10' viewBox='0 0 200 10' aria-hidden='true'>"
        f"<rect width='{width:.1f}' height='10' rx='2'/></svg>"
    )


def message_page(title: str, message: str, *, nonce: str, token: str) -> str:
    body = f"<section><h2>{escape(title)}</h2><p>{escape(message)}</p></section>"
    return _layout(f"specialists · {title}", body, nonce=nonce, token=token)

"""The scale benchmark's report: its figures as the markdown tables of
bench/results/latest.md."""

from __future__ import annotations

from bench import poolers as pooler_bench
from bench.figures import Report, ratio


def markdown(report: Report) -> str:
    m = report.machine
    lines = [
        f"# Scale benchmark, {report.started}",
        "",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs, {m['memory'].get('MemTotal')} RAM"
        f" ({m['memory'].get('MemAvailable')} available at start), load average {m['loadavg_start']} at start,"
        f" {m.get('loadavg_end', '?')} at end; kernel {m['kernel']}.",
        f"PostgreSQL {m['postgresql']} with stock settings ({m['postgresql_settings']});"
        f" Python {m['python']}, asyncpg {m['asyncpg']}, uvicorn {m['uvicorn']},"
        f" prometheus_client {m['prometheus_client']}, {m['wrk']}.",
        f"Options: {report.options}. Total {report.seconds / 60:.1f} min.",
        "",
        "Times in ms, median (min-max) over the runs. *first*: the first refresh of a fresh exporter"
        " (new connections, cold backends); *steady*: the refreshes after it. A refresh = every PostgreSQL"
        " signal (dlq, preservation, audit_chain) measured at once.",
        "",
        "## Refresh time vs tenants",
        "",
        "| tenants | exporter first | exporter steady | floor first | floor steady | steady vs floor"
        " | naive (1 query/tenant) | counts exact |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in report.rows:
        naive = "skipped"
        if row.naive is not None:
            naive = row.naive.refresh.ms() + (" (cut at cap)" if row.naive.capped else "")
        failures = f" ({len(row.exporter.failures)} failures)" if row.exporter.failures else ""
        lines.append(
            f"| {row.tenants:,} | {row.exporter.first.ms()} | {row.exporter.steady.ms()}{failures}"
            f" | {row.floor.first.ms()} | {row.floor.steady.ms()}"
            f" | {ratio(row.exporter.steady.median, row.floor.steady.median)}"
            f" | {naive} | {'yes' if row.exporter.correct else 'NO (or never measured)'} |"
        )
    lines += [
        "",
        "## Per signal (exporter), ms",
        "",
        "| tenants | dlq first | dlq steady | preservation first | preservation steady"
        " | audit_chain first | audit_chain steady |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report.rows:
        cells = []
        for name in ("dlq", "preservation", "audit_chain"):
            cells.append(row.exporter.first_by_signal[name].ms() if name in row.exporter.first_by_signal else "-")
            cells.append(row.exporter.steady_by_signal[name].ms() if name in row.exporter.steady_by_signal else "-")
        lines.append(f"| {row.tenants:,} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Database load and memory",
        "",
        "Statements per refresh (prepares: statements planned anew). Backend memory: the sessions' server"
        " processes after the steady refreshes, from /proc/<pid>/status: RSS (includes the shared buffers"
        " they touched) and RssAnon (private: catalog caches, plans); for the floor also"
        " pg_backend_memory_contexts. Exporter RSS: `python -m exporter serve` after its first refresh.",
        "",
        "| tenants | exporter statements first / steady | prepares first / steady | floor statements"
        " | exporter backends RSS / anon MiB | floor backends RSS / anon / contexts MiB | exporter RSS MiB"
        " | tenant creation s |",
        "|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for row in report.rows:
        exporter_backends = ", ".join(f"{b.rss_mib:.0f} / {b.anon_mib:.0f}" for b in row.exporter.backends) or "-"
        floor_backends = ", ".join(
            f"{b.rss_mib:.0f} / {b.anon_mib:.0f} / {'-' if b.contexts_mib is None else f'{b.contexts_mib:.0f}'}"
            for b in row.floor.backends
        )
        lines.append(
            f"| {row.tenants:,} | {row.exporter.statements_first} / {row.exporter.statements_steady}"
            f" | {row.exporter.prepares_first} / {row.exporter.prepares_steady} | {row.floor.statements}"
            f" | {exporter_backends} | {floor_backends} | {row.exporter_rss_mib or '-'} | {row.create_seconds:.0f} |"
        )
    failed = [(row.tenants, failure) for row in report.rows for failure in row.exporter.failures]
    if failed:
        lines += ["", "Exporter failures: " + "; ".join(f"{n:,}: {f}" for n, f in failed[:20])]
    if report.http:
        lines += [
            "",
            f"## Cached scrapes ({report.http_tenants:,} tenants, {report.http_series} series)",
            "",
            f"`wrk -t2 -c16 -d{report.options['http_seconds']}s --latency` against /metrics, each app under the"
            " exporter's uvicorn settings; the exporter serves its cached page (rendered and gzipped once per"
            " refresh). Exporter RSS after the HTTP runs:"
            f" {report.exporter_rss_after_http_mib} MiB.",
            "",
            "| app | encoding | body bytes | requests/s | vs constant | p50 ms | p99 ms |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        floors = {h.encoding: h.requests_per_second for h in report.http if h.app == "constant"}
        for h in report.http:
            lines.append(
                f"| {h.app} | {h.encoding} | {h.body_bytes:,} | {h.requests_per_second:,.0f}"
                f" | {ratio(h.requests_per_second, floors.get(h.encoding, 0))} | {h.p50_ms:.2f} | {h.p99_ms:.2f} |"
            )
    if report.poolers is not None:
        lines += pooler_bench.markdown(report.poolers)
    if report.idle is not None:
        i = report.idle
        lines += [
            "",
            "## Idle close",
            "",
            f"TTL {i.ttl:g} s, idle close {i.idle_close:g} s (3 x TTL): {i.sessions_after_scrape} exporter sessions"
            f" after a scrape, {i.sessions_after_idle} after {i.waited:g} s without scrapes.",
        ]
    return "\n".join(lines) + "\n"

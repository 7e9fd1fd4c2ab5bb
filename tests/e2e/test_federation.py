"""End to end, federation: two regional Prometheus servers (east: database A;
west: databases B and C) scraping one exporter per database, federated into a
global Prometheus (`honor_labels: true`) that evaluates the shipped rules
(shortened, rendered with the interval samples reach it at). Federated samples
keep their timestamps and are never marked stale: the rules count each input
only while its own sample is fresh.

In order: steady state; C removed from west's discovery (its dead letters then
resolved), then retired; west stopped (B's dead letters then resolved), then a
new west started; A's exporter SIGKILLed (A's dead letters then resolved).
Every global evaluation is compared with the SQL truth of its moment (both the
old and the new count while a change is being made); an evaluation without a
total is absent, never wrong. Each change is made only once the total is
absent, so a total kept from a gone target would show the old, now wrong count.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from devkit.mixin import evaluate, rules_yaml
from devkit.process import RunningProcess, exporter_process
from devkit.servers import PostgresServer
from tests.alerts.shorten import write_shortened_rules
from tests.e2e.notifications import Key, Webhook, notified, notifying, per_phase, phase_row, unresolved, wait_told
from tests.e2e.stack import (
    alerting,
    evaluated_beside,
    fired,
    prometheus_server,
    query,
    reload_prometheus,
    rule_group_durations,
    wait_for,
)
from tests.e2e.test_ha_remote_write import (
    EVALUATIONS,
    RESEND,
    TOTAL,
    folder,
    raw_samples,
    seeded,
    sql_pending,
    total_now,
)
from tests.platform import Platform

pytestmark = pytest.mark.timeout(900)

JOB = "orpycamcp-exporter"
# Regional scrape 1 s + federation 1 s: samples count while at most 3 x 2 s old.
SAMPLES_EVERY = "2s"
SAMPLE_MAX_AGE = 3 * 2  # the mixin's samplesFreshScrapes x SAMPLES_EVERY (lib.fresh)
SEEDED = {"a": 5, "b": 3, "c": 7}
REGIONS = {"east": ("a",), "west": ("b", "c")}


def regional_config(targets: dict[str, int]) -> dict[str, Any]:
    """A regional server scraping its databases' exporters every second, no rules."""
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [
            {
                "job_name": JOB,
                "static_configs": [
                    {"targets": [f"127.0.0.1:{port}"], "labels": {"orpycamcp_cluster": name}}
                    for name, port in targets.items()
                ],
            }
        ],
    }


def global_config(regionals: list[RunningProcess], rules: Path, alertmanager_port: int) -> dict[str, Any]:
    """The global server: federates the exporter's raw series (with `up`) from every regional
    one, and sends its alerts to the Alertmanager."""
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "alerting": alerting(alertmanager_port),
        "scrape_configs": [
            {
                "job_name": "federate",
                "honor_labels": True,
                "metrics_path": "/federate",
                "params": {"match[]": [f'{{job="{JOB}"}}']},
                "static_configs": [{"targets": [f"127.0.0.1:{regional.port}" for regional in regionals]}],
            }
        ],
    }


def rules_config(retired: list[str]) -> dict[str, Any]:
    """The mixin's configuration for federation (and these retired databases): evaluated
    beside the servers starting or the test waiting (tests/e2e/stack.py: evaluated_beside)."""
    return {"scrapeInterval": SAMPLES_EVERY, "retiredDatabases": retired}


def rendered_rules(retired: list[str]) -> str:
    """The shipped rules rendered for federation (and these retired databases)."""
    return rules_yaml(evaluate(rules_config(retired)))


def write_rules(destination: Path, rendered: str) -> Path:
    """The rendered rules, shortened, at `destination`. A value alert keeps firing 40 s once its
    series are gone (10 minutes shipped): longer than a gone database's own alert takes to fire
    and inhibit it, as shipped, so a database gone never sends "resolved" for its values."""
    full = destination.with_suffix(".full.yml")
    full.write_text(rendered)
    return write_shortened_rules(
        destination, for_duration="2s", interval="1s", offset="10s", keep_firing_for="40s", source=full
    )


async def resolve(platform: Platform, count: int) -> None:
    """Resolve `count` of the pending dead letters."""
    await platform.execute(
        "UPDATE tenant_acme.evento_dead_letter SET status = 'resolved' WHERE event_id IN"
        " (SELECT event_id FROM tenant_acme.evento_dead_letter WHERE status = 'pending' ORDER BY event_id"
        f" LIMIT {count})"
    )


@dataclass
class Truth:
    """The platform's count over time, read from SQL: (began, settled, value) per change."""

    changes: list[tuple[float, float, int]] = field(default_factory=list)

    def right(self, at: float) -> set[float]:
        ends = [settled for _, settled, _ in self.changes]
        index = bisect.bisect_right(ends, at) - 1
        values = {float(self.changes[index][2])} if index >= 0 else set()
        following = index + 1
        if following < len(self.changes) and self.changes[following][0] <= at:
            values.add(float(self.changes[following][2]))
        return values


@dataclass
class Phase:
    name: str
    began: float
    exact: int = 0
    absent: int = 0
    absent_at: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)


@dataclass
class Federation:
    platforms: dict[str, Platform]
    exporters: dict[str, RunningProcess]
    regionals: dict[str, RunningProcess]
    glob: RunningProcess
    am: RunningProcess
    webhook: Webhook
    folder: Path
    rules: Path
    stack: ExitStack
    retired: list[str] = field(default_factory=list)
    # The alerts the seeded data raises (notified once steady), of the databases still counted.
    standing: set[Key] | None = None
    members: set[str] = field(default_factory=lambda: set(SEEDED))
    truth: Truth = field(default_factory=Truth)
    phases: list[Phase] = field(default_factory=list)
    started: float = field(default_factory=time.time)

    def read_truth(self, began: float) -> None:
        counts = [asyncio.run(sql_pending(self.platforms[name])) for name in sorted(self.members)]
        self.truth.changes.append((began, time.time(), sum(counts)))

    def phase(self, name: str) -> None:
        self.phases.append(Phase(name, time.time()))

    def reload_global(self) -> None:
        document = global_config(list(self.regionals.values()), self.rules, self.am.port)
        reload_prometheus(self.glob, document, self.folder / "global")

    def total(self) -> float | None:
        return total_now(self.glob)

    def firing(self, alertname: str, **labels: str) -> list[dict[str, Any]]:
        matchers = "".join(f', {name}="{value}"' for name, value in labels.items())
        return query(self.glob, f'ALERTS{{alertname="{alertname}", alertstate="firing"{matchers}}}')

    def told(self, recovered: bool) -> None:
        """Every notification of the phase received; once `recovered`, back to the standing alerts."""
        wait_told(self.glob, self.am, self.webhook, JOB, recovered, self.standing if recovered else None)

    def identity(self, name: str) -> str:
        series = query(self.glob, f'orpycamcp_database_identity_info{{orpycamcp_cluster="{name}"}}')
        return str(series[0]["metric"]["database_identity"])


@contextmanager
def federation(pg_server: PostgresServer, tmp_path: Path) -> Iterator[Federation]:
    with ExitStack() as stack:
        evaluated = evaluated_beside(stack, rules_config([]))
        platforms = {name: asyncio.run(seeded(pg_server, count)) for name, count in SEEDED.items()}
        exporters = {
            name: stack.enter_context(
                exporter_process(
                    ["--database.url", platform.exporter_url, "--ttl", "1", "--deadline", "0.8"],
                    folder(tmp_path, f"exporter-{name}"),
                )
            )
            for name, platform in platforms.items()
        }
        regionals = {
            region: stack.enter_context(
                prometheus_server(
                    regional_config({name: exporters[name].port for name in names}),
                    folder(tmp_path, region),
                    "--web.enable-lifecycle",
                )
            )
            for region, names in REGIONS.items()
        }
        evaluated()
        rules = write_rules(tmp_path / "rules.yml", rendered_rules([]))
        am, webhook = notifying(stack, folder(tmp_path, "alertmanager"), rules_config([]))
        glob = stack.enter_context(
            prometheus_server(
                global_config(list(regionals.values()), rules, am.port),
                folder(tmp_path, "global"),
                "--web.enable-lifecycle",
                RESEND,
            )
        )
        yield Federation(platforms, exporters, regionals, glob, am, webhook, tmp_path, rules, stack)


def judge(prom: RunningProcess, started: float, phases: list[Phase], truth: Truth) -> list[Phase]:
    """Every evaluation of `prom` since `started`, against the SQL truth of its moment, per phase."""
    evaluations = sorted(raw_samples(prom, EVALUATIONS, started))
    totals = raw_samples(prom, TOTAL, started)
    starts = [phase.began for phase in phases]
    first_total = min(totals) if totals else float("inf")
    for at in evaluations:
        if at < first_total:
            continue  # the rules' warm-up: no total yet
        phase = phases[max(bisect.bisect_right(starts, at) - 1, 0)]
        value = totals.get(at)
        if value is None:
            phase.absent += 1
            phase.absent_at.append(at)
        elif value in truth.right(at):
            phase.exact += 1
        else:
            phase.wrong.append(f"{at - started:.1f} s: {value:g} (right: {sorted(truth.right(at))})")
    return phases


def spans(run: Federation) -> list[str]:
    """Each alert's firing span (seconds since the start), read back from the global server's ALERTS."""
    texts = []
    for alert in fired(run.glob, run.started):
        labels = alert.labels
        subject = labels.get("orpycamcp_cluster") or labels.get("signal") or labels.get("database_identity", "")
        texts.append(f"{alert.alertname}({subject}) {alert.first - run.started:.0f}-{alert.last - run.started:.0f} s")
    return texts


def failures_read(run: Federation) -> dict[tuple[str, str], list[float]]:
    """Every failure the global server read from an exporter since the start, by target and
    what failed (an identity reason, a signal unmeasured, the target down): the samples'
    own timestamps. The exporters run with a 0.8 s deadline: at load a reading past it is
    a true failure (B's exporter, scraped again by the new west after 20 s without a
    scrape, was seen to fail its identity reading), and the rules count it as they must."""
    window = int(time.time() - run.started) + 2
    inputs = {
        f'orpycamcp_database_identity_failure_info{{job="{JOB}"}}': ("reason", 1.0),
        f'orpycamcp_signal_measured{{job="{JOB}"}}': ("signal", 0.0),
        f'up{{job="{JOB}"}}': ("__name__", 0.0),
    }
    failures: dict[tuple[str, str], list[float]] = {}
    for expr, (label, failed) in inputs.items():
        for series in query(run.glob, f"{expr}[{window}s]"):
            times = [float(at) for at, value in series["values"] if float(value) == failed]
            if times:
                what = series["metric"].get(label, "up")
                failures.setdefault((series["metric"]["instance"], what), []).extend(times)
    return failures


def within_bound(times: list[float], at: float) -> bool:
    """A sample among `times` that an evaluation at `at` still counts (lib.fresh)."""
    return any(at - SAMPLE_MAX_AGE <= seen <= at for seen in times)


def identity_alerts_without_a_failure(run: Federation, failures: dict[tuple[str, str], list[float]]) -> list[str]:
    """The firing evaluations of OrpycamcpDatabaseIdentityUnreadable with no failure sample of
    their target and reason at most SAMPLE_MAX_AGE old by its own timestamp: a leftover sample
    (of a gone region, or a blip past the bound) made into an alert. Each evaluation against
    the samples it read, back from the global server: it holds whatever the machine's load.
    A true identity timeout does fire with the tests' 2 s `for`, for as long as the rule says."""
    window = int(time.time() - run.started) + 2
    alerts = 'ALERTS{alertname="OrpycamcpDatabaseIdentityUnreadable", alertstate="firing"}'
    held: list[str] = []
    for series in query(run.glob, f"{alerts}[{window}s]"):
        key = (series["metric"]["instance"], series["metric"]["reason"])
        held += [
            f"{key[0]} {key[1]} at {float(at) - run.started:.1f} s"
            for at, _ in series["values"]
            if not within_bound(failures.get(key, []), float(at))
        ]
    return held


def absent_without_a_failure(phase: Phase, failures: dict[tuple[str, str], list[float]]) -> list[float]:
    """The evaluations of `phase` without a total and without any exporter's failure the
    rules still count: absent for no reason (a leftover, a gap in the gate)."""
    every = [at for times in failures.values() for at in times]
    return [at for at in phase.absent_at if not within_bound(every, at)]


def failed_during(failures: dict[tuple[str, str], list[float]], began: float, end: float) -> bool:
    """Whether an exporter's failure read from `began` (less the samples' bound) to `end`."""
    return any(began - SAMPLE_MAX_AGE <= at <= end for times in failures.values() for at in times)


def evaluations_after(run: Federation, since: float) -> Callable[[], int]:
    return lambda: len(raw_samples(run.glob, EVALUATIONS, since))


def totals_after(run: Federation, since: float) -> Callable[[], int]:
    """The evaluations with a total since `since`: what the phases' counts assert (a true
    failure at load makes some absent, and is waited past)."""
    return lambda: len(raw_samples(run.glob, TOTAL, since))


def test_federated_totals_follow_every_target_and_region_that_is_gone(
    pg_server: PostgresServer, tmp_path: Path
) -> None:
    with federation(pg_server, tmp_path) as run:
        # 1. Steady: the total is the sum over the three databases.
        run.read_truth(run.started)
        run.phase("start")
        wait_for(lambda: run.total() == sum(SEEDED.values()), 120, lambda: (run.total(), run.glob.log()[-2000:]))
        run.told(recovered=True)
        run.standing = unresolved(run.webhook.alerts(job=JOB))
        run.phase("steady")
        steady = time.time()
        wait_for(lambda: totals_after(run, steady)() >= 15, 60, totals_after(run, steady))
        c_identity = run.identity("c")
        retiring = evaluated_beside(run.stack, rules_config([c_identity]))

        # 2. C removed from west's discovery: the total goes, OrpycamcpDatabaseVanished names C.
        run.phase("C removed from discovery")
        reload_prometheus(run.regionals["west"], regional_config({"b": run.exporters["b"].port}), tmp_path / "west")
        wait_for(lambda: run.total() is None, 60, run.total)
        wait_for(lambda: run.firing("OrpycamcpDatabaseVanished", database_identity=c_identity), 60, run.total)
        began = time.time()
        asyncio.run(resolve(run.platforms["c"], 2))
        run.read_truth(began)
        run.told(recovered=False)

        # 3. C retired: the total over A and B, Vanished resolved.
        run.retired.append(c_identity)
        run.members.discard("c")
        retiring()  # evaluated while C was being removed
        write_rules(run.rules, rendered_rules(run.retired))
        began = time.time()
        run.phase("C retired")
        run.reload_global()
        run.read_truth(began)
        right = SEEDED["a"] + SEEDED["b"]
        wait_for(lambda: run.total() == right, 60, run.total)
        wait_for(lambda: not run.firing("OrpycamcpDatabaseVanished"), 60, run.total)
        retired = time.time()
        wait_for(lambda: totals_after(run, retired)() >= 5, 60, totals_after(run, retired))
        # C's value alerts, held (keep_firing_for) and inhibited while it was gone, end now: its
        # retirement's own "resolved", received in this phase.
        wait_for(lambda: not query(run.glob, f'ALERTS{{database_identity="{c_identity}"}}'), 90, run.total)
        run.standing = {key for key in run.standing or set() if ("database_identity", c_identity) not in key}
        run.told(recovered=True)

        # 4. West stopped: the total goes, B vanishes with its region.
        b_identity = run.identity("b")
        run.phase("west stopped")
        run.regionals["west"].process.terminate()
        run.regionals["west"].process.wait()
        wait_for(lambda: run.total() is None, 60, run.total)
        wait_for(lambda: run.firing("OrpycamcpDatabaseVanished", database_identity=b_identity), 60, run.total)
        began = time.time()
        asyncio.run(resolve(run.platforms["b"], 1))
        run.read_truth(began)
        stopped = time.time()
        wait_for(lambda: evaluations_after(run, stopped)() >= 10, 60, evaluations_after(run, stopped))
        run.told(recovered=False)

        # 5. A new west: the total over A and B's new count.
        run.phase("west restarted")
        run.regionals["west"] = run.stack.enter_context(
            prometheus_server(
                regional_config({"b": run.exporters["b"].port}), folder(tmp_path, "west-2"), "--web.enable-lifecycle"
            )
        )
        run.reload_global()
        right = SEEDED["a"] + SEEDED["b"] - 1
        wait_for(lambda: run.total() == right, 60, run.total)
        run.told(recovered=True)
        run.phase("west back")
        back = time.time()
        wait_for(lambda: totals_after(run, back)() >= 10, 60, totals_after(run, back))

        # 6. A's exporter SIGKILLed: the total goes, OrpycamcpExporterDown for east.
        a_identity = run.identity("a")
        run.phase("exporter A killed")
        run.exporters["a"].process.kill()
        run.exporters["a"].process.wait()
        wait_for(lambda: run.total() is None, 60, run.total)
        wait_for(lambda: run.firing("OrpycamcpExporterDown", database_identity=a_identity), 60, run.total)
        began = time.time()
        asyncio.run(resolve(run.platforms["a"], 2))
        run.read_truth(began)
        killed = time.time()
        wait_for(lambda: evaluations_after(run, killed)() >= 10, 60, evaluations_after(run, killed))
        run.told(recovered=False)

        phases = judge(run.glob, run.started, run.phases, run.truth)
        alerts = spans(run)
        bounds = [(phase.name, phase.began) for phase in phases]
        raised = per_phase([(a.first, a.alertname) for a in fired(run.glob, run.started)], bounds)
        sent = per_phase(notified(run.webhook, JOB), bounds)
        changes = len(run.truth.changes)
        print(f"\nglobal evaluations since the start, per phase (truth read from SQL at {changes} changes):")
        for phase in phases:
            verdicts = f"exact {phase.exact}, absent {phase.absent}, wrong {len(phase.wrong)}"
            print(phase_row(phase.name, phase.began - run.started, verdicts, raised[phase.name], sent[phase.name]))
        print("alerts fired (s since the start): " + "; ".join(alerts))
        print(
            "rule groups' last evaluation: "
            + ", ".join(f"{group} {seconds * 1000:.1f} ms" for group, seconds in rule_group_durations(run.glob).items())
        )
        failures = failures_read(run)
        print(
            "failures read from the exporters (s since the start): "
            + "; ".join(
                f"{instance} {what} {', '.join(f'{at - run.started:.1f}' for at in sorted(times))}"
                for (instance, what), times in sorted(failures.items())
            )
        )
        assert [phase.wrong for phase in phases] == [[] for _ in phases]
        _, steady_phase, _, retired_phase, _, _, back_phase, _ = phases
        # Steady, and once the total is back, it is present at every evaluation but those
        # an exporter's failure (at load, a reading past the 0.8 s deadline) made absent.
        assert absent_without_a_failure(steady_phase, failures) == []
        assert steady_phase.exact >= 15
        assert retired_phase.exact >= 5
        assert absent_without_a_failure(back_phase, failures) == []
        assert back_phase.exact >= 10
        # An identity failure counts only while its sample is fresh: no alert from a leftover.
        assert identity_alerts_without_a_failure(run, failures) == []
        # What the receiver got: nothing once the faults were over (unless an exporter failed
        # then); for each fault, its own alert; and no "resolved" while a fault still holds (a
        # gone database's value alerts held by its own alert, inhibited).
        sent_in = [sent[name] for name, _ in bounds]
        _, _, removed_sent, _, stopped_sent, _, _, killed_sent = sent_in
        ends = [began for _, began in bounds[1:]] + [time.time()]
        for index in (1, 6):  # steady, west back
            failed = failed_during(failures, bounds[index][1], ends[index])
            assert sent_in[index] == {} or failed, (bounds[index][0], sent_in[index])
        assert removed_sent["OrpycamcpDatabaseVanished firing"] == 1, removed_sent
        assert stopped_sent["OrpycamcpDatabaseVanished firing"] == 1, stopped_sent
        assert killed_sent["OrpycamcpExporterDown firing"] == 1, killed_sent
        for fault in (removed_sent, stopped_sent, killed_sent):
            assert not [what for what in fault if what.endswith(" resolved")], fault

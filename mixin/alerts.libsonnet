// Alerting rules. Conventions:
// * Absence never reads as zero: every value alert compares a series that is
//   present. Unknown never reads as resolved either: when a signal cannot be
//   measured the exporter drops its value series, each value alert keeps
//   firing for `valueKeepFiringFor`, and OrpycamcpSignalUnmeasured inhibits
//   them in Alertmanager (alerts/alertmanager.example.yml).
// * Alerts read the per-database `:max` records: each fires once per database
//   (database_identity in its labels), however many replicas or target labels
//   it has; the streams alerts read the per-bus records and fire once per
//   Redis bus. An alert about one database is keyed on its identity
//   (lib.byDatabase): the cluster label is display only, named in its texts,
//   so a relabel rename of it neither re-pages nor resolves the alert. Every
//   read of a recorded series selects the labels the selector fixes (lib.recorded).
// * Every alert carries `severity` and `orpycamcp_role` (exporter_down,
//   exporter_replica_down, no_signals, unmeasured, stale, total_unknown,
//   value). Value alerts also carry `signal`; a declared backlog's alerts take
//   it from the `backlog` label.
local families = import 'families.libsonnet';
local lib = import 'lib.libsonnet';

{
  local c = $._config,
  local keys = lib.keyLabels(c),
  local k = lib.list(keys),
  local cl = c.clusterLabel,
  local id = lib.identityLabel,
  local rec = lib.recorded(c),
  // Every `orpycamcp:<family>:max` read by an alert selects this deployment's series.
  local recordedMatchers = std.join(', ', [m.text for m in lib.matchers(c.orpycamcpSelector) if m.op == '=']),
  local recorded(expr) = std.foldl(
    function(text, family)
      local name = 'orpycamcp:%s:max' % family;
      local marked = std.strReplace(text, name + '{', '@@%s@@{' % family);
      std.strReplace(std.strReplace(marked, name, name + rec), '@@%s@@{' % family, name + '{' + recordedMatchers + ', '),
    std.objectFields(families),
    expr
  ),
  // `up` only while its sample is fresh (lib.fresh): a federated target that is
  // gone is not down, it is not scraped (OrpycamcpDatabaseVanished).
  local rawUp = 'up' + lib.selector(c),
  local up = lib.fresh(c, rawUp),
  local reclaim = lib.reclaim(c),
  // The databases known and not measured now, for a signal given by %q.
  local notMeasuredQuery = 'group by (%(id)s, %(cl)s) (%(latest)s) and on (%(id)s) (group by (%(id)s) %(known)s unless on (%(id)s) %(measured)s)' % {
    id: id,
    cl: cl,
    latest: lib.latestIdentity + lib.selector(c),
    known: $.databasesKnown,
    measured: $.measuredDatabases('signal=%q'),
  },
  assert lib.seconds(c.streamPendingAge) > reclaim.deadLetterMax
         : 'streamPendingAge must exceed the dead-letter window (maxDeliveries x (reclaimMinIdle + reclaimInterval))',
  assert lib.seconds(c.migrationLockHeldFor) + lib.seconds(c.dataMaxAge) < lib.seconds(c.migrationLockTimeout)
         : 'migrationLockHeldFor plus dataMaxAge must stay below migrationLockTimeout: the page must come before migrators fail closed',
  local lockLeft = lib.seconds(c.migrationLockTimeout) - lib.seconds(c.migrationLockHeldFor),
  local trimAge = lib.seconds(c.deadletterTrimHorizon) + 2 * lib.seconds(c.deadletterTrimInterval),
  local purgeAge(horizon) = lib.seconds(horizon) + 2 * lib.seconds(c.purgeInterval),
  local inDatabase = lib.withDatabase(),
  // A query of the alert's own deployment inside a template: printf `<query>` <args>.
  local q(text) = lib.templateQuery(text),
  local inCluster = lib.withCluster(c, ' in cluster ') + lib.withDatabase(),
  local commaCluster = lib.withCluster(c, ', cluster ') + lib.withDatabase(', database ', ''),
  // The cluster of an alert keyed on its target (perTarget).
  local targetCluster = lib.withCluster(c, ', cluster ', byTarget=true),
  // The reasons the exporter gives on its page (orpycamcp_signal_failure_info),
  // read when the alert is sent: one word per reason, whatever the replicas.
  // Keyed on a database: its targets' reasons (by their last reported identity).
  local failureReasons =
    local words = '| query | sortByLabel "reason" }}{{ range . }}{{ .Labels.reason }} {{ end }}{{ else }}none reported{{ end }}';
    std.join('', [
      '{{ if $labels.%s }}{{ with printf `max by (reason) (%s and ignoring (reason, signal, %s) %s)` $labels.signal $labels.%s %s' % [
        id,
        q('orpycamcp_signal_failure_info' + lib.selector(c, ['signal=%q'])),
        id,
        q(lib.latestIdentity + lib.selector(c, [id + '=%q'])),
        id,
        words,
      ],
      '{{ else }}{{ with printf `max by (reason) (orpycamcp_signal_failure_info%s)` (or $labels.%s ".*") $labels.signal %s{{ end }}' % [
        q(lib.selector(c, [cl + '=~%q', 'signal=%q'])),
        cl,
        words,
      ],
    ]),

  // A signal whose own TTL (orpycamcp:signal_ttl_seconds:max) is at least the
  // unmeasured alert's window, last measured completely within its TTL plus
  // that window: a failure held for its TTL (at most one measurement) is not
  // paged. `wrap` aggregates each series (the bus: one per deployment).
  local heldFailure(matcher, wrap) =
    '(%(ttl)s >= %(window)d and time() - %(last)s <= %(ttl)s + %(window)d)' % {
      ttl: wrap('orpycamcp:signal_ttl_seconds:max{%s}' % matcher),
      last: wrap('orpycamcp:signal_last_success_timestamp_seconds:max{%s}' % matcher),
      window: lib.seconds(c.signalUnmeasuredFor),
    },
  local identity(series) = series,
  local last(matcher) = 'orpycamcp:signal_last_success_timestamp_seconds:max{%s}' % matcher,

  // An alert about each target, keyed on the target (job, instance and what
  // the alert needs): the labels of an HA Prometheus pair (haLabels) dropped,
  // so both servers' series of one target make one alert, and the cluster
  // label dropped, display only (named in its texts by lib.withCluster), so a
  // relabel rename of it neither re-pages nor resolves the alert. An
  // aggregation, never a label removal: two targets of one instance under two
  // cluster label values make one alert, never two series of one label set.
  local perTarget(expr) =
    'max without (%s) (\n  %s\n)\n' % [lib.list(c.haLabels + [cl]), std.join('\n  ', std.split(std.rstripChars(expr, '\n'), '\n'))],

  local alert(name, severity, role, expr, summary, description, labels={}, forDuration=null, keepFiring=false) = {
    alert: name,
    expr: recorded(expr),
    labels: { severity: severity, orpycamcp_role: role } + labels,
    annotations: {
      summary: summary,
      description: description,
      runbook_url: lib.runbookUrl(c, name),
    },
  } + (if forDuration == null then {} else { 'for': forDuration })
  + (if keepFiring then { keep_firing_for: c.valueKeepFiringFor } else {}),

  // Keyed on the database identity, the cluster label display only (lib.byDatabase).
  local byDatabase(expr) = lib.byDatabase(c, expr),
  local valueAlert(name, severity, signal, expr, forDuration, summary, description) =
    alert(name, severity, 'value', byDatabase(expr), summary, description, { signal: signal }, forDuration, keepFiring=true),

  // An alert about the one Redis bus: it reads the per-bus records
  // (`orpycamcp:<stream family>:max`, rules.libsonnet's busRule: merged over
  // every target of the deployment, never by cluster or database), so it fires
  // once per bus however many clusters read it. A new stream family: add it to
  // families.libsonnet, record it with busRule, alert with busAlert.
  local busAlert(name, severity, expr, forDuration, summary, description) =
    alert(name, severity, 'value', expr, summary, description, { signal: 'streams' }, forDuration, keepFiring=true),

  // A declared backlog is a signal of its own, named like the backlog.
  local backlogSignal(expr) = 'label_replace(%s, "signal", "$1", "backlog", "(.+)")' % expr,
  local backlogAlert(name, expr, forDuration, summary, description) =
    alert(name, 'warning', 'value', byDatabase(expr), summary, description, forDuration=forDuration, keepFiring=true),
  local backlogGroup = '{{ if $labels.group }}, group {{ $labels.group }},{{ end }}',
  // The pending items `steps` growth steps ago (0: now), e.g. "... offset 30m".
  local stepCount = std.parseInt(std.substr(c.backlogGrowthStep, 0, std.length(c.backlogGrowthStep) - 1)),
  local stepUnit = c.backlogGrowthStep[std.length(c.backlogGrowthStep) - 1],
  local growthPoint(steps) =
    'orpycamcp:backlog_pending_items:max' + (if steps == 0 then '' else ' offset %d%s' % [stepCount * steps, stepUnit]),
  local growthSpan = lib.words('%d%s' % [stepCount * c.backlogGrowthSteps, stepUnit]),

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'orpycamcp.exporter.alerts',
        rules: [
          alert(
            'OrpycamcpExporterAbsent', 'critical', 'exporter_down',
            // No `up` at all, or only samples past their bound (a federated
            // regional server stopped): with the selector's fixed labels.
            'absent(%(raw)s) or (group by (%(k)s) (%(raw)s) unless on (%(k)s) %(up)s)' % { raw: rawUp, k: k, up: up },
            'No orpycamcp-exporter target is being scraped.',
            'Prometheus has no `up` series for job {{ $labels.job }}: the exporter is not discovered or not configured, so no orpycamcp signal is monitored.',
            forDuration=c.exporterAbsentFor,
          ),
          alert(
            'OrpycamcpExporterDown', 'critical', 'exporter_down',
            // Per database (each target's last reported identity), the cluster
            // label display only; targets never identified, per cluster label
            // value no identified target has (else they are its replicas that
            // never started: OrpycamcpExporterReplicaDown).
            '(\n%s) == 0' % byDatabase(|||
              max by (%(k)s, %(cl)s, %(id)s) (
                %(up)s * ignoring (%(id)s) group_left (%(id)s) %(latest)s
                or %(up)s unless ignoring (%(id)s) %(latest)s unless on (%(k)s, %(cl)s) %(latest)s
              )
            ||| % { k: k, cl: cl, id: id, up: up, latest: lib.latestIdentity + lib.selector(c) }),
            'Every orpycamcp-exporter target is down.',
            'No target of job {{ $labels.job }}%s could be scraped for %s, so no orpycamcp signal is monitored.' % [inCluster, lib.words(c.exporterDownFor)],
            forDuration=c.exporterDownFor,
          ),
          alert(
            'OrpycamcpExporterReplicaDown', 'warning', 'exporter_replica_down',
            perTarget(|||
              %(up)s == 0
              unless on (%(merge)s)
                (max by (%(merge)s) (%(up)s) == 0)
            ||| % { up: up, merge: lib.list(keys + [cl]) }),
            'An orpycamcp-exporter replica is down while others are up.',
            'Target {{ $labels.instance }} of job {{ $labels.job }}%s could not be scraped for %s; the remaining replicas still report every signal.' % [targetCluster, lib.words(c.exporterReplicaDownFor)],
            forDuration=c.exporterReplicaDownFor,
          ),
          alert(
            'OrpycamcpExporterNoSignals', 'critical', 'no_signals',
            perTarget(|||
              %s == 1
              unless ignoring (signal) %s
            ||| % [up, lib.fresh(c, 'orpycamcp_signal_measured' + lib.selector(c))]),
            'An orpycamcp-exporter target is up but exposes no signal.',
            'Target {{ $labels.instance }} of job {{ $labels.job }}%s is scraped but has exposed no orpycamcp_signal_measured series for %s.' % [targetCluster, lib.words(c.exporterNoSignalsFor)],
            forDuration=c.exporterNoSignalsFor,
          ),
        ],
      },
      {
        name: 'orpycamcp.signal.alerts',
        rules: [
          alert(
            'OrpycamcpSignalUnmeasured', 'warning', 'unmeasured',
            // A signal whose own TTL is at least the `for` window shows one failed
            // measurement that long: its unmeasured state counts only once its last
            // success is older than its TTL plus the window (for a 5-minute backlog:
            // the measurement after the failed one failed too), or if it never succeeded.
            byDatabase(|||
              orpycamcp:signal_measured:max{signal!~"%(bus)s"} == 0
                unless %(heldNotBus)s
              or max by (%(k)s, signal) (orpycamcp:signal_measured:max{signal=~"%(bus)s"}) == 0
                unless on (%(k)s, signal) %(heldBus)s
            ||| % {
              k: k,
              bus: lib.busSignals,
              heldNotBus: heldFailure('signal!~"%s"' % lib.busSignals, identity),
              heldBus: heldFailure('signal=~"%s"' % lib.busSignals, (function(series) 'max by (%s, signal) (%s)' % [k, series])),
            }),
            'An orpycamcp signal cannot be measured; its value is unknown.',
            'Signal {{ $labels.signal }} (job {{ $labels.job }}%s) has not been measured completely by any replica for %s. Its value series are absent: the state is unknown, not zero; its value alerts are held and inhibited until it is measured again. Reason now: %s.' % [commaCluster, lib.words(c.signalUnmeasuredFor), failureReasons],
            forDuration=c.signalUnmeasuredFor,
          ),
          // The bus is one, but each cluster's exporters reach it their own way
          // (network policy, URL, credentials, ACL): a cluster that cannot
          // read it while another does leaves the bus values to the others alone.
          // Only while some cluster reads it: OrpycamcpSignalUnmeasured covers none,
          // and takes over when the last reader stops (this alert keeps firing
          // its `for` meanwhile, so the hand-over sends no false "resolved").
          alert(
            'OrpycamcpStreamsUnreadableFromCluster', 'warning', 'unmeasured',
            byDatabase(|||
              max by (%(k)s, %(cl)s, %(id)s, signal) (orpycamcp:signal_measured:max{signal=~"%(bus)s"}) == 0
              and on (%(k)s, signal) (
                max by (%(k)s, signal) (orpycamcp:signal_measured:max{signal=~"%(bus)s"}) == 1
              )
            ||| % { k: k, cl: cl, id: id, bus: lib.busSignals }),
            'The exporters of one cluster cannot read the Redis streams that another cluster reads.',
            'No exporter of job {{ $labels.job }}%s has measured the streams for %s, while exporters of another cluster do: the bus values now come from those alone, and if they stop, the streams become unknown. Reason now: %s.' % [commaCluster, lib.words(c.streamsUnreadableFromClusterFor), failureReasons],
            forDuration=c.streamsUnreadableFromClusterFor,
          ) + { keep_firing_for: c.signalUnmeasuredFor },
          alert(
            'OrpycamcpSignalStale', 'critical', 'stale',
            // Counted past the signal's own TTL: a 5-minute backlog is 5 minutes old between refreshes.
            byDatabase(|||
              time() - %(notBus)s > %(notBusLimit)s + %(age)d
              or time() - max by (%(k)s, signal) (%(bus)s) > max by (%(k)s, signal) (%(busLimit)s) + %(age)d
            ||| % {
              k: k,
              age: lib.seconds(c.signalStaleAge),
              notBus: last('signal!~"%s"' % lib.busSignals),
              bus: last('signal=~"%s"' % lib.busSignals),
              notBusLimit: lib.plusTtl(c, last('signal!~"%s"' % lib.busSignals) + ' * 0', 'orpycamcp:signal_ttl_seconds:max'),
              busLimit: lib.plusTtl(c, last('signal=~"%s"' % lib.busSignals) + ' * 0', 'orpycamcp:signal_ttl_seconds:max'),
            }),
            'An orpycamcp signal has not been measured successfully for a long time.',
            'The last complete measurement of signal {{ $labels.signal }} (job {{ $labels.job }}%s) is {{ $value | humanizeDuration }} old (threshold %s past its TTL).' % [commaCluster, c.signalStaleAge],
            forDuration=c.signalStaleFor,
          ),
          alert(
            'OrpycamcpDatabaseReplayLagHigh', 'warning', 'stale',
            byDatabase('orpycamcp:database_replay_lag_seconds:max > %d' % lib.seconds(c.databaseReplayLagAge)),
            'The standby the exporter reads from lags behind its primary.',
            'The hot standby read by job {{ $labels.job }}%s is {{ $value | humanizeDuration }} behind its primary (threshold %s): every database signal shows the platform as it was that long ago.' % [commaCluster, c.databaseReplayLagAge],
            forDuration=c.databaseReplayLagFor,
          ),
          alert(
            'OrpycamcpRedisReplicaLagHigh', 'warning', 'stale',
            'orpycamcp:redis_replica_lag_seconds:max > %d' % lib.seconds(c.redisReplicaLagAge),
            'The Redis replica the exporter reads the streams from is cut from its master.',
            'The Redis replica read by job {{ $labels.job }} last heard from its master {{ $value | humanizeDuration }} ago (threshold %s): its streams may miss that much; past --redis.replica-max-staleness the streams signal is unmeasured (replica_stale).' % c.redisReplicaLagAge,
            forDuration=c.redisReplicaLagFor,
          ),
          alert(
            'OrpycamcpPlatformTotalUnknown', 'warning', 'total_unknown',
            |||
              group by (%(k)s, signal) (orpycamcp:signal_measured:max{signal!~"%(bus)s|audit_chain"})
                unless on (%(k)s, signal) orpycamcp:signal_complete:count%(rec)s
              # One database, all identified: OrpycamcpSignalUnmeasured says it all.
              and on (%(k)s) (
                orpycamcp:clusters:count%(rec)s > 1
                or count by (%(k)s) %(unidentified)s
              )
            ||| % { k: k, rec: rec, bus: lib.busSignals, unidentified: std.strReplace($.unidentifiedTargets, '\n', '\n    ') },
            'A platform total is unknown because some database did not measure its signal.',
            std.join(' ', [
              'Signal {{ $labels.signal }} (job {{ $labels.job }}): its platform totals (orpycamcp:*:total) are absent, never partial.',
              'Databases known: %s; measured now: %s.' % [
                '{{ with printf `%s` | query }}{{ (index . 0).Value }}{{ else }}0{{ end }}' % q('orpycamcp:clusters:count' + rec),
                '{{ with printf `%s` $labels.signal | query }}{{ (index . 0).Value }}{{ else }}0{{ end }}' % q('orpycamcp:signal_measured_clusters:count' + lib.recorded(c, ['signal=%q'])),
              ],
              'Not measured now: {{ range $i, $d := printf `%s`%s | query | sortByLabel "%s" }}{{ if $i }}, {{ end }}{{ $d.Labels.%s }}{{ with $d.Labels.%s }} (%s {{ . }}){{ end }}{{ else }}none{{ end }}.' % [
                q(notMeasuredQuery),
                // The signal for each %q of the query (its selector is read twice: lib.fresh).
                std.repeat(' $labels.signal', std.length(std.findSubstr('%q', notMeasuredQuery))),
                id,
                id,
                cl,
                cl,
              ],
              'Targets without a database identity: {{ range $i, $t := printf `%s` | query | sortByLabel "instance" }}{{ if $i }}, {{ end }}{{ $t.Labels.instance }}{{ else }}none{{ end }}.' % q(std.strReplace($.unidentifiedTargets, '\n', ' ')),
              'Cluster label values over several databases: {{ range $i, $s := printf `%s` | query | sortByLabel "%s" }}{{ if $i }}, {{ end }}{{ $s.Labels.%s }}{{ else }}none{{ end }}.' % [q($.sharedClusterLabel), cl, cl],
            ]),
            forDuration=c.platformTotalUnknownFor,
          ),
        ],
      },
      // What the rules know of the platform's databases (orpycamcp_database_identity_info).
      {
        name: 'orpycamcp.databases.alerts',
        rules: [
          alert(
            'OrpycamcpDatabaseVanished', 'warning', 'database',
            byDatabase('group by (%(k)s, %(cl)s, %(id)s) (%(memory)s) unless on (%(k)s, %(id)s) %(scraped)s' % {
              k: k,
              cl: cl,
              id: id,
              memory: lib.latestIdentity + lib.selector(c, if std.length(c.retiredDatabases) == 0 then [] else ['%s!~"%s"' % [id, std.join('|', c.retiredDatabases)]]),
              scraped: $.databasesScraped,
            }),
            'A database the platform had is no longer scraped; every platform total is absent.',
            'Database {{ $labels.%s }}%s reported to job {{ $labels.job }} within the last %s and no target of the job scrapes it now (its targets left service discovery): every platform total is absent, never partial. Restore its exporter targets, or, if it was retired on purpose, add it to retiredDatabases.' % [id, lib.withCluster(c, ' (cluster ', ')'), lib.words(c.databaseMemory)],
            forDuration=c.databaseVanishedFor,
          ),
          alert(
            'OrpycamcpDatabaseUnidentified', 'warning', 'database',
            perTarget($.unidentifiedTargets),
            'An exporter target has not reported which database it measures; every platform total is absent.',
            'Target {{ $labels.instance }} of job {{ $labels.job }}%s has reported no orpycamcp_database_identity_info within %s, so its values cannot be counted in the platform totals, which are absent. Reason now: {{ with printf `%s` $labels.instance | query | sortByLabel "reason" }}{{ range . }}{{ .Labels.reason }} {{ end }}{{ else }}target down or none reported{{ end }}.' % [
              targetCluster,
              lib.words(c.databaseMemory),
              q('max by (reason) (orpycamcp_database_identity_failure_info%s)' % lib.selector(c, ['instance=%q'])),
            ],
            forDuration=c.databaseUnidentifiedFor,
          ),
          alert(
            'OrpycamcpDatabaseIdentityUnreadable', 'warning', 'database',
            perTarget(|||
              %(failure)s == 1
                unless ignoring (reason) %(unidentified)s
            ||| % { failure: lib.fresh(c, 'orpycamcp_database_identity_failure_info' + lib.selector(c)), unidentified: std.strReplace($.unidentifiedTargets, '\n', '\n    ') }),
            'An exporter replica cannot read which database it measures; its values count in no platform total.',
            'Target {{ $labels.instance }} of job {{ $labels.job }}%s cannot read its database identity ({{ $labels.reason }}) for %s: its values count in no platform total, which stays complete only while another replica of its database reports it (else the totals are absent and OrpycamcpPlatformTotalUnknown names the database).' % [targetCluster, lib.words(c.databaseUnidentifiedFor)],
            forDuration=c.databaseUnidentifiedFor,
          ),
          alert(
            'OrpycamcpClusterLabelSharedByDatabases', 'warning', 'database',
            $.sharedClusterLabel,
            'One cluster label value names several databases; every platform total is absent.',
            'The targets of job {{ $labels.job }} with %s="{{ $labels.%s }}" measure {{ $value }} databases: {{ range $i, $d := printf `%s` $labels.%s | query | sortByLabel "%s" }}{{ if $i }}, {{ end }}{{ $d.Labels.%s }}{{ end }}. Alerts, routing and inhibitions by that label would mix them, so every platform total is absent: give each database its own %s value.' % [
              cl,
              cl,
              q('group by (%s) (%s and ignoring (%s) %s)' % [id, lib.latestIdentity + lib.selector(c, [cl + '=%q']), id, up]),
              cl,
              id,
              id,
              cl,
            ],
            forDuration=c.clusterLabelConflictFor,
          ),
          alert(
            'OrpycamcpDatabaseInSeveralClusters', 'warning', 'database',
            'count by (%s, %s) (%s) > 1' % [k, id, $.databasesScraped],
            'One database is scraped under several cluster label values.',
            'Database {{ $labels.%s }} is measured by targets of job {{ $labels.job }} labelled %s {{ range $i, $s := printf `%s` $labels.%s | query | sortByLabel "%s" }}{{ if $i }}, {{ end }}"{{ $s.Labels.%s }}"{{ end }}: its replicas still merge by identity and the totals count it once, but its alerts fire once per label value. Give all its targets one value.' % [
              id,
              cl,
              q('group by (%s) (%s and ignoring (%s) %s)' % [cl, lib.latestIdentity + lib.selector(c, [id + '=%q']), id, up]),
              id,
              cl,
              cl,
            ],
            forDuration=c.clusterLabelConflictFor,
          ),
        ],
      },
      {
        name: 'orpycamcp.dlq.alerts',
        rules: [
          valueAlert(
            'OrpycamcpDlqPendingTooLong', 'warning', 'dlq',
            'orpycamcp:dlq_pending_events:max > 0',
            c.dlqPendingFor,
            'Dead-lettered events have been pending for over %s.' % lib.words(c.dlqPendingFor),
            '{{ $value }} dead-lettered events of origin group {{ $labels.origin_group }}%s have been waiting for an administrator for more than %s.' % [inCluster, lib.words(c.dlqPendingFor)],
          ),
          valueAlert(
            'OrpycamcpDlqOldestPendingTooOld', 'critical', 'dlq',
            'time() - orpycamcp:dlq_oldest_pending_timestamp_seconds:max > %d' % lib.seconds(c.dlqOldestPendingAge),
            c.dlqOldestPendingFor,
            'A dead-lettered event has been pending for over %s.' % lib.words(c.dlqOldestPendingAge),
            'The oldest pending dead-lettered event of origin group {{ $labels.origin_group }}%s is {{ $value | humanizeDuration }} old (threshold %s).' % [inCluster, c.dlqOldestPendingAge],
          ),
          valueAlert(
            'OrpycamcpDlqPendingAgeUnknown', 'warning', 'dlq',
            |||
              orpycamcp:dlq_pending_events:max > 0
              unless orpycamcp:dlq_oldest_pending_timestamp_seconds:max
            |||,
            c.dlqPendingAgeUnknownFor,
            'Dead-lettered events are pending but the age of the oldest is unknown.',
            'Origin group {{ $labels.origin_group }}%s reports {{ $value }} pending dead-lettered events but no oldest-pending timestamp, so their age cannot be checked.' % inCluster,
          ),
        ],
      },
      {
        name: 'orpycamcp.preservation.alerts',
        rules: [
          valueAlert(
            'OrpycamcpPreservationArtifactsExhausted', 'critical', 'preservation',
            'orpycamcp:preservation_exhausted_artifacts:max > 0',
            c.preservationExhaustedFor,
            'Preservation artifacts have exhausted their retries.',
            '{{ $value }} {{ $labels.artifact }} artifacts are stuck in phase {{ $labels.phase }}%s with no retry left.' % inCluster,
          ),
        ],
      },
      {
        name: 'orpycamcp.audit_chain.alerts',
        rules: [
          valueAlert(
            'OrpycamcpAuditChainUndeclaredBreaks', 'critical', 'audit_chain',
            'orpycamcp:audit_chain_breaks:max > orpycamcp:audit_chain_declared_breaks:max',
            c.auditChainUndeclaredBreaksFor,
            'The audit chain has breaks that were not declared.',
            'The last complete audit-chain verification%s found {{ $value }} breaks, more than the breaks already declared.' % inCluster,
          ),
          valueAlert(
            'OrpycamcpAuditChainVerificationFailed', 'critical', 'audit_chain',
            'orpycamcp:audit_chain_verification_ok:max == 0',
            c.auditChainVerificationFailedFor,
            'The last audit-chain verification run failed.',
            'The last complete audit-chain verification run (job {{ $labels.job }}%s) reported a failure.' % commaCluster,
          ),
          valueAlert(
            'OrpycamcpAuditChainVerificationStale', 'warning', 'audit_chain',
            'time() - orpycamcp:audit_chain_last_verification_timestamp_seconds:max > %d' % lib.seconds(c.auditChainVerificationAge),
            c.auditChainVerificationStaleFor,
            'The audit chain has not been verified for over %s.' % lib.words(c.auditChainVerificationAge),
            'The last complete audit-chain verification run%s finished {{ $value | humanizeDuration }} ago (threshold %s).' % [inCluster, c.auditChainVerificationAge],
          ),
          valueAlert(
            'OrpycamcpAuditChainNeverVerified', 'warning', 'audit_chain',
            |||
              orpycamcp:signal_measured:max{signal="audit_chain"} == 1
              unless ignoring (signal)
                orpycamcp:audit_chain_last_verification_timestamp_seconds:max
            |||,
            c.auditChainNeverVerifiedFor,
            'The audit chain has never been verified.',
            'The audit_chain signal is measured (job {{ $labels.job }}%s) but no complete audit-chain verification run has ever been recorded.' % commaCluster,
          ),
        ],
      },
      {
        name: 'orpycamcp.migration_lock.alerts',
        rules: [
          // Held without a break (by one migrator or several in turn): a
          // migrator that began retrying when it was taken fails closed at the
          // timeout. pg_locks is readable by every role, so this needs no grant.
          valueAlert(
            'OrpycamcpMigrationLockHeldTooLong', 'critical', 'migration_lock',
            'orpycamcp:migration_lock_held:max == 1',
            c.migrationLockHeldFor,
            'The platform migration lock has been held for over %s.' % lib.words(c.migrationLockHeldFor),
            'The migration advisory lock (ADR-041 C19, key "ORPYCAM1")%s has been held without a break for %s: a migrator that began waiting for it then fails closed %s later (MIGRATIONS_LOCK_TIMEOUT_S %s: it exits 1 and its service does not start). Find the holder: pg_locks where locktype = advisory and objid = 1128353073.' % [inCluster, lib.words(c.migrationLockHeldFor), lib.secondsWords(lockLeft), lib.secondsWords(lib.seconds(c.migrationLockTimeout))],
          ),
        ],
      },
      {
        name: 'orpycamcp.housekeeping.alerts',
        rules: [
          // A daily purge leaves rows at most its horizon plus one interval
          // old; past two intervals, a run has been missed twice. A terminal
          // dead letter without resolved_at is never purged (ADR-021: NULL is
          // never older than the cutoff) and not counted here: a panel shows it.
          valueAlert(
            'OrpycamcpDeadLetterPurgeStopped', 'warning', 'housekeeping',
            'time() - orpycamcp:housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds:max > %d' % purgeAge(c.deadLetterPurgeHorizon),
            c.purgeStoppedFor,
            'Terminal dead letters are older than their daily purge leaves them.',
            'The oldest terminal (resolved or discarded) dead letter of origin group {{ $labels.origin_group }}%s was resolved {{ $value | humanizeDuration }} ago (threshold %s: a horizon of %s plus two purge intervals of %s): the daily purge of terminal dead letters (ADR-021 MVP-3) is not running for this origin group.' % [inCluster, lib.secondsWords(purgeAge(c.deadLetterPurgeHorizon)), lib.words(c.deadLetterPurgeHorizon), lib.words(c.purgeInterval)],
          ),
          valueAlert(
            'OrpycamcpDedupPurgeStopped', 'warning', 'housekeeping',
            'time() - orpycamcp:housekeeping_notification_dedup_oldest_processed_timestamp_seconds:max > %d' % purgeAge(c.dedupPurgeHorizon),
            c.purgeStoppedFor,
            'Notification dedup rows are older than their daily purge leaves them.',
            'The oldest row of notification_processed_events%s was processed {{ $value | humanizeDuration }} ago (threshold %s: a horizon of %s plus two purge intervals of %s): the daily dedup purge (ADR-021 MVP-1) is not running.' % [inCluster, lib.secondsWords(purgeAge(c.dedupPurgeHorizon)), lib.words(c.dedupPurgeHorizon), lib.words(c.purgeInterval)],
          ),
        ],
      },
      {
        name: 'orpycamcp.streams.alerts',
        rules: [
          // The pending age is the entry's write time (its ID), not its delivery:
          // a catch-up after an outage holds old entries pending while healthy,
          // but moves the oldest on. A stuck entry stays the oldest: longer than
          // the dead-letter window, the sweep would have cleared it.
          busAlert(
            'OrpycamcpStreamPendingTooOld', 'warning',
            |||
              time() - orpycamcp:stream_oldest_pending_timestamp_seconds:max > %(age)d
              and orpycamcp:stream_oldest_pending_timestamp_seconds:max
                == orpycamcp:stream_oldest_pending_timestamp_seconds:max offset %(window)s
              # Past max_deliveries: OrpycamcpStreamDeadLetteringFailing says more.
              unless orpycamcp:stream_oldest_pending_deliveries:max > %(max)d
            ||| % { age: lib.seconds(c.streamPendingAge), window: c.streamPendingAge, max: c.maxDeliveries },
            c.streamPendingTooOldFor,
            'A consumer group has held the same pending message longer than its reclaim sweep allows.',
            "The oldest pending message of group {{ $labels.group }} on stream {{ $labels.stream }} is {{ $value | humanizeDuration }} old and has been the group's oldest pending message for %s: the reclaim sweep (%s) dead-letters a message that keeps failing %s after its first delivery, so the sweep or the group's consumers are stuck. A catch-up after an outage moves the oldest on and does not fire this." % [lib.words(c.streamPendingAge), reclaim.cadenceWords, reclaim.deadLetterWords],
          ),
          // ADR-021 R-4: on_dead_letter failed, so the entry is not acknowledged;
          // each sweep claims it again (one delivery more) and fails again.
          busAlert(
            'OrpycamcpStreamDeadLetteringFailing', 'warning',
            'orpycamcp:stream_oldest_pending_deliveries:max > %d' % c.maxDeliveries,
            '%ds' % (2 * reclaim.retryMax),
            'Dead-lettering fails: a message past max_deliveries stays pending.',
            "The oldest pending message of group {{ $labels.group }} on stream {{ $labels.stream }} has been delivered {{ $value }} times, more than max_deliveries (%d), and is still pending after two sweeps (%s): dead-lettering it fails (ADR-021 R-4: on_dead_letter raised, so it is not acknowledged) and the sweep retries it every %s: it has no durable record (evento_dead_letter, audit_log) yet, and each attempt may add one more copy to the dead-letter stream." % [c.maxDeliveries, lib.secondsWords(2 * reclaim.retryMax), reclaim.retryWords],
          ),
          busAlert(
            'OrpycamcpStreamPendingAgeUnknown', 'warning',
            |||
              orpycamcp:stream_pending_messages:max > 0
              unless orpycamcp:stream_oldest_pending_timestamp_seconds:max
            |||,
            c.streamPendingAgeUnknownFor,
            'A consumer group has pending messages but the age of the oldest is unknown.',
            'Group {{ $labels.group }} on stream {{ $labels.stream }} reports {{ $value }} pending messages but no oldest-pending timestamp, so their age cannot be checked.',
          ),
          // Undelivered entries are not pending anywhere: a group whose
          // consumers all died shows pending 0 while entries pile up.
          busAlert(
            'OrpycamcpStreamNotConsumed', 'warning',
            |||
              orpycamcp:stream_undelivered_entries:max > 0
              and (
                orpycamcp:stream_consumer_idle_seconds:max > %d
                or orpycamcp:stream_consumers:max == 0
              )
            ||| % lib.seconds(c.streamNotConsumedIdle),
            c.streamNotConsumedFor,
            'Entries wait for a consumer group and nobody reads them.',
            'Group {{ $labels.group }} on stream {{ $labels.stream }} has {{ $value }} entries not yet delivered, and no consumer has been seen for %s (or it has none): its consumers are down, or the group was created at the wrong ID.' % c.streamNotConsumedIdle,
          ),
          // Its undelivered count withheld (Redis cannot count it, or counts it
          // wrong: docs/streams.md), OrpycamcpStreamNotConsumed cannot fire.
          busAlert(
            'OrpycamcpStreamUndeliveredUnknown', 'warning',
            |||
              orpycamcp:stream_consumers:max
              unless orpycamcp:stream_undelivered_entries:max
              and (
                orpycamcp:stream_consumer_idle_seconds:max > %d
                or orpycamcp:stream_consumers:max == 0
              )
            ||| % lib.seconds(c.streamNotConsumedIdle),
            c.streamUndeliveredUnknownFor,
            'A consumer group has no count of undelivered entries and nobody reads it.',
            'Group {{ $labels.group }} on stream {{ $labels.stream }} has no count of the entries not yet delivered to it (Redis cannot count them, or counts them wrong), and no consumer has been seen for %s (or it has none): entries may wait with nobody reading them.' % c.streamNotConsumedIdle,
          ),
          busAlert(
            'OrpycamcpDeadletterStreamGrowing', 'warning',
            |||
              orpycamcp:deadletter_stream_entries:max
                > orpycamcp:deadletter_stream_entries:max offset %s
            ||| % c.deadletterStreamGrowthWindow,
            null,
            'A dead-letter stream is growing.',
            'Dead-letter stream {{ $labels.stream }} holds {{ $value }} entries, more than %s ago: messages are failing after every delivery attempt.' % lib.words(c.deadletterStreamGrowthWindow),
          ),
          // The trim (XTRIM MINID ~, daily) removes whole stream nodes only: a
          // quiet stream keeps entries far past the horizon in its first node,
          // while trimmed. The 101st entry cannot share that node: past the
          // horizon plus two trim intervals, a running trim would have removed it.
          busAlert(
            'OrpycamcpDeadletterStreamEntriesTooOld', 'warning',
            'time() - orpycamcp:deadletter_stream_entry_101_timestamp_seconds:max > %d' % trimAge,
            c.deadletterStreamEntriesTooOldFor,
            'A dead-letter stream holds entries its daily trim would have removed.',
            'The 101st entry of dead-letter stream {{ $labels.stream }} is {{ $value | humanizeDuration }} old (threshold %s: a horizon of %s plus two trim intervals of %s): `XTRIM MINID ~` keeps past the horizon only what shares the first stream node (100 entries at most), so the trim is not running, or not keeping up (a run removes 10,000 entries at most).' % [lib.secondsWords(trimAge), lib.words(c.deadletterTrimHorizon), lib.words(c.deadletterTrimInterval)],
          ),
        ],
      },
      // Declared backlogs: generic over every backlog of --backlogs.config-file.
      // `signal` is copied from `backlog`, so OrpycamcpSignalUnmeasured{signal="<backlog>"}
      // holds and inhibits these too. One backlog's own threshold: see
      // "Per-backlog thresholds" in docs/alerts-and-dashboard.md.
      {
        name: 'orpycamcp.backlog.alerts',
        rules: [
          backlogAlert(
            'OrpycamcpBacklogPendingTooLong',
            backlogSignal('orpycamcp:backlog_pending_items:max > 0'),
            c.backlogPendingFor,
            'Items of a declared backlog have been pending for over %s.' % lib.words(c.backlogPendingFor),
            '{{ $value }} items of backlog {{ $labels.backlog }}%s have been pending for more than %s.' % [backlogGroup, lib.words(c.backlogPendingFor)],
          ),
          backlogAlert(
            'OrpycamcpBacklogOldestPendingTooOld',
            |||
              label_replace(
                time() - orpycamcp:backlog_oldest_pending_timestamp_seconds:max > %d,
                "signal", "$1", "backlog", "(.+)"
              )
            ||| % lib.seconds(c.backlogOldestPendingAge),
            c.backlogOldestPendingFor,
            'An item of a declared backlog has been pending for over %s.' % lib.words(c.backlogOldestPendingAge),
            'The oldest pending item of backlog {{ $labels.backlog }}%s is {{ $value | humanizeDuration }} old (threshold %s).' % [backlogGroup, c.backlogOldestPendingAge],
          ),
          // Only in a backlog that reported an oldest timestamp within the
          // lookback: a backlog declared without `oldest` never does.
          backlogAlert(
            'OrpycamcpBacklogPendingAgeUnknown',
            |||
              label_replace(
                orpycamcp:backlog_pending_items:max > 0
                unless orpycamcp:backlog_oldest_pending_timestamp_seconds:max
                and on (%s, backlog)
                  group by (%s, backlog) (last_over_time(orpycamcp:backlog_oldest_pending_timestamp_seconds:max[%s])),
                "signal", "$1", "backlog", "(.+)"
              )
            ||| % [k, k, lib.closedRange(c.backlogOldestLookback)],
            c.backlogPendingAgeUnknownFor,
            'Items of a declared backlog are pending but the age of the oldest is unknown.',
            'Backlog {{ $labels.backlog }}%s reports {{ $value }} pending items but no oldest-pending timestamp, so their age cannot be checked.' % backlogGroup,
          ),
          // The thresholds are data, not PromQL: declared per backlog and window
          // (arrivals.alert_above) and exported as orpycamcp_backlog_arrivals_threshold;
          // a window without one never fires.
          backlogAlert(
            'OrpycamcpBacklogArrivalsHigh',
            |||
              label_replace(
                orpycamcp:backlog_arrivals:max
                  > ignoring (group) group_left orpycamcp:backlog_arrivals_threshold:max,
                "signal", "$1", "backlog", "(.+)"
              )
            |||,
            c.backlogArrivalsHighFor,
            'More rows than the declared threshold arrived in a declared backlog within its window.',
            '{{ $value }} rows of backlog {{ $labels.backlog }}%s arrived within the last {{ $labels.window }}, over the threshold declared for that window (arrivals.alert_above).' % backlogGroup,
          ),
          // Growing at each of the last N steps, not one spike; every point must be
          // present, so a backlog unmeasured now (its series absent) never fires.
          backlogAlert(
            'OrpycamcpBacklogPendingGrowing',
            |||
              label_replace(
                %s,
                "signal", "$1", "backlog", "(.+)"
              )
            ||| % std.join('\n    and ', [
              '%s > %s' % [growthPoint(i), growthPoint(i + 1)]
              for i in std.range(0, c.backlogGrowthSteps - 1)
            ]),
            null,
            'The pending items of a declared backlog have grown at every step for %s.' % growthSpan,
            'Backlog {{ $labels.backlog }}%s has {{ $value }} pending items, more than %s before in each of the last %d intervals: a sustained increase, a sign of a systemic problem in its pipeline.' % [backlogGroup, lib.words(c.backlogGrowthStep), c.backlogGrowthSteps],
          ),
        ],
      },
    ],
  },
}

// Recording rules: each target's database (`orpycamcp:database_identity:*`),
// one value per database out of its replicas (`:max`), one value per Redis bus
// for the streams, the databases known and measured (`:count`) and the
// platform totals (`:total`).
//
// A database is what the exporter reads from it (orpycamcp_database_identity_info),
// never a target label: replicas of one database merge, two databases never do,
// whatever `clusterLabel` says. Every recorded series keeps the labels the
// selector fixes with `=` (lib.keyLabels), and every read of a recorded series
// selects them: two renders with different selectors never touch each other.
local families = import 'families.libsonnet';
local lib = import 'lib.libsonnet';

{
  local c = $._config,
  local keys = lib.keyLabels(c),
  local k = lib.list(keys),
  local id = lib.identityLabel,
  local cl = c.clusterLabel,
  local sel = lib.selector(c),
  local rec = lib.recorded(c),
  // The inputs the rules count a target by, each only while its own sample is
  // fresh (lib.fresh): federated samples of a target or a regional server that
  // is gone, and a dead HA server's last remote-written samples, count as
  // absent, as a failed scrape does.
  local up = lib.fresh(c, 'up' + sel),
  local rawInfo = 'orpycamcp_database_identity_info' + sel,
  local info = lib.fresh(c, rawInfo),
  local latest = lib.latestIdentity + sel,
  local retiredPattern = std.join('|', c.retiredDatabases),
  local isIdentity(text) = std.length(text) > 2 && std.length(std.findSubstr('/', text)) == 1
                           && std.length([ch for ch in std.stringChars(text) if !std.member('0123456789/', ch)]) == 0,
  assert std.length([d for d in c.retiredDatabases if !isIdentity(d)]) == 0
         : 'retiredDatabases: every entry is a database_identity as published, "<system identifier>/<database OID>"',
  local notRetired = if std.length(c.retiredDatabases) == 0 then [] else ['%s!~"%s"' % [id, retiredPattern]],
  local indent(text, spaces) = std.join('\n' + std.repeat(' ', spaces), std.split(std.rstripChars(text, '\n'), '\n')),

  // The databases the platform has: every identity a target of the deployment
  // reported within databaseMemory (unless retired), and every identity
  // reported now. `offset`: the same set as it was then.
  local knownFromMemory(offset='') =
    'group by (%s, %s) (%s%s)' % [k, id, lib.latestIdentity, lib.selector(c, notRetired) + (if offset == '' then '' else ' offset ' + offset)],
  local known = '(%s or group by (%s, %s) (%s))' % [knownFromMemory(), k, id, info],
  // The databases with a replica that reports its identity now and measured `signal` completely.
  // A copy whose data is older than its signal's own TTL plus dataMaxAge, or whose data time sample is
  // older than lib.sampleMaxAge (left by a server gone), did not measure it now.
  local measuredNow(signalMatcher, extra=[]) =
    'group by (%(by)s) ((%(measured)s == 1 unless %(old)s unless timestamp(%(dated)s) < time() - %(sample)d) * ignoring (signal, %(id)s) group_left (%(id)s) %(info)s)' % {
      by: lib.list(keys + [id] + extra),
      measured: lib.fresh(c, 'orpycamcp_signal_measured' + lib.selector(c, [signalMatcher])),
      old: '%s < time() - %d' % [lib.plusTtl(c, lib.dataTime + sel, lib.ttl + sel), lib.seconds(c.dataMaxAge)],
      dated: lib.dataTime + sel,
      sample: lib.sampleMaxAge(c),
      id: id,
      info: info,
    },
  // Targets whose database is unknown: up and reading the database (a signal
  // other than streams) without any identity within databaseMemory; or down,
  // without one, and with a cluster label value no identified target has (a
  // replica that never started beside identified ones is no unknown database).
  // A target is known by its job and instance: the identity it reported under
  // another value of the cluster label (before a relabel rename) is still its own.
  local unidentified = |||
    (
      group without (signal) %(measured)s
        unless ignoring (%(id)s, %(cl)s) %(latest)s
      or (%(up)s == 0) unless ignoring (%(id)s, %(cl)s) %(latest)s unless on (%(k)s, %(cl)s) %(latest)s
    )
  ||| % { measured: lib.fresh(c, 'orpycamcp_signal_measured' + lib.selector(c, ['signal!~"%s"' % lib.busSignals])), id: id, latest: latest, up: up, k: k, cl: cl },
  // Database identities of the targets still scraped (up or down), with their cluster label.
  local scrapedDatabases = 'group by (%s, %s, %s) (%s and ignoring (%s) %s)' % [k, cl, id, latest, id, up],
  // One cluster label value over several databases: which is which is ambiguous.
  local sharedClusterLabel = 'count by (%s, %s) (%s) > 1' % [k, cl, scrapedDatabases],

  // True while every known database has a replica that measured `signal` now,
  // every target is identified, no cluster label value covers two databases,
  // and the databases known now were known `totalsWarmUp` ago.
  local gate(signalMatcher) = |||
    count by (%(k)s) (%(measured)s)
      == on (%(k)s) count by (%(k)s) %(known)s
    # The databases known now were known a moment ago too: right after the
    # rules start, a database whose first scrape has not come yet is not missed.
    and on (%(k)s) count by (%(k)s) (%(memory)s)
      == on (%(k)s) count by (%(k)s) (%(memoryBefore)s)
    unless on (%(k)s) %(unidentified)s
    unless on (%(k)s) (%(shared)s)
  ||| % {
    k: k,
    measured: measuredNow(signalMatcher),
    known: known,
    memory: knownFromMemory(),
    memoryBefore: knownFromMemory(c.totalsWarmUp),
    unidentified: indent(unidentified, 4),
    shared: sharedClusterLabel,
  },

  // Values per database: only from targets that report their identity now,
  // of the copy with the newest data (lib.freshestCopy).
  local nowIdentified(series, labels) =
    '(%s * ignoring (%s) group_left (%s) %s)' % [series, lib.list(labels + [id]), id, info],
  local perDatabase(family) =
    'max by (%s) %s' % [
      lib.list(keys + [id] + families[family]),
      std.rstripChars(lib.freshestCopy(c, 'orpycamcp_' + family, families[family], nowIdentified, keys + [id], '  '), '\n'),
    ],

  // A total over the databases of a family read from each database, gated on
  // every database having measured its signal. The values and their gate are
  // read in ONE expression: one query sees one consistent state of the
  // storage, while two rules can straddle a scrape appended between them.
  local gatedTotal(operator, family, signal) = |||
    %(operator)s by (%(by)s) (
      %(values)s
    )
      and on (%(k)s) (
        %(gate)s
      )
  ||| % {
    operator: operator,
    by: lib.list(keys + families[family]),
    values: perDatabase(family),
    k: k,
    gate: indent(gate('signal="%s"' % signal), 4),
  },

  // Declared backlogs: one signal per backlog, named like its `backlog` label.
  local backlogTotal(operator, family) = |||
    %(operator)s by (%(by)s) (
      %(values)s
    )
      and on (%(k)s, backlog)
        label_replace(
          count by (%(k)s, signal) (%(measured)s)
            == on (%(k)s) group_left count by (%(k)s) %(known)s,
          "backlog", "$1", "signal", "(.+)"
        )
        and on (%(k)s) count by (%(k)s) (%(memory)s)
          == on (%(k)s) count by (%(k)s) (%(memoryBefore)s)
        unless on (%(k)s) %(unidentified)s
        unless on (%(k)s) (%(shared)s)
  ||| % {
    operator: operator,
    by: lib.list(keys + families[family]),
    values: perDatabase(family),
    k: k,
    measured: measuredNow('signal=~".+"', ['signal']),
    known: known,
    memory: knownFromMemory(),
    memoryBefore: knownFromMemory(c.totalsWarmUp),
    unidentified: indent(unidentified, 8),
    shared: sharedClusterLabel,
  },

  local maxRule(family) = {
    record: 'orpycamcp:%s:max' % family,
    expr: lib.merge(c, 'orpycamcp_' + family, families[family]),
  },
  // A family a signal measures: the copy with the newest data.
  local freshestRule(family) = {
    record: 'orpycamcp:%s:max' % family,
    expr: lib.freshestMerge(c, 'orpycamcp_' + family, families[family]),
  },
  // The Redis bus: one value per deployment, whatever the clusters and databases.
  local busRule(family) = {
    record: 'orpycamcp:%s:max' % family,
    expr: lib.busMerge(c, 'orpycamcp_' + family, families[family]),
  },

  // For the alerts and the dashboard.
  databasesKnown:: known,
  databasesScraped:: scrapedDatabases,
  sharedClusterLabel:: sharedClusterLabel,
  unidentifiedTargets:: unidentified,
  measuredDatabases(signalMatcher):: measuredNow(signalMatcher),
  knownFromMemory:: knownFromMemory(),

  prometheusRules+:: {
    groups+: [
      {
        name: 'orpycamcp.rules',
        rules: [
          // Which database each target measures. The time each target last
          // reported each identity, then per target the latest of them within
          // databaseMemory (value 1): a target that is down, or cannot read its
          // identity now, still belongs to the database it last reported.
          {
            record: 'orpycamcp:database_identity:last_seen_timestamp_seconds',
            expr: 'timestamp(%s) >= time() - %d' % [rawInfo, lib.sampleMaxAge(c)],
          },
          {
            record: lib.latestIdentity,
            expr: 'topk without (%s) (1, last_over_time(orpycamcp:database_identity:last_seen_timestamp_seconds%s[%s])) * 0 + 1' % [id, sel, lib.closedRange(c.databaseMemory)],
          },
          // Per-database health: measured if at least one replica of the database measured it completely.
          maxRule('signal_measured'),
          maxRule('signal_last_success_timestamp_seconds'),
          // Each signal's own cadence: the staleness of its data and last success is counted past it.
          maxRule('signal_ttl_seconds'),
          // The hot standby the exporter reads from (absent on a primary).
          maxRule('database_replay_lag_seconds'),
          // The Redis replica the streams are read from (absent on a master).
          busRule('redis_replica_lag_seconds'),
          freshestRule('dlq_pending_events'),
          freshestRule('dlq_oldest_pending_timestamp_seconds'),
          freshestRule('preservation_exhausted_artifacts'),
          freshestRule('audit_chain_breaks'),
          freshestRule('audit_chain_declared_breaks'),
          freshestRule('audit_chain_verification_ok'),
          freshestRule('audit_chain_last_verification_timestamp_seconds'),
          freshestRule('migration_lock_held'),
          freshestRule('housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds'),
          freshestRule('housekeeping_notification_dedup_oldest_processed_timestamp_seconds'),
          busRule('stream_pending_messages'),
          busRule('stream_oldest_pending_timestamp_seconds'),
          busRule('stream_oldest_pending_deliveries'),
          busRule('stream_undelivered_entries'),
          busRule('stream_consumers'),
          busRule('stream_consumer_idle_seconds'),
          busRule('deadletter_stream_entries'),
          busRule('deadletter_stream_oldest_entry_timestamp_seconds'),
          busRule('deadletter_stream_entry_101_timestamp_seconds'),
          freshestRule('backlog_pending_items'),
          freshestRule('backlog_oldest_pending_timestamp_seconds'),
          freshestRule('backlog_arrivals'),
          freshestRule('backlog_arrivals_threshold'),

          // Platform totals over databases. A total is never partial: it exists
          // only while every database known to the deployment (reported by any
          // of its targets within databaseMemory, unless retired) has a replica
          // that reports its identity and measured the signal now, every target
          // is identified, and no cluster label value covers two databases.
          // These rules follow the `:max` rules in this group so that each
          // evaluation sees one consistent instant.
          { record: 'orpycamcp:clusters:count', expr: 'count by (%s) %s' % [k, known] },
          {
            record: 'orpycamcp:signal_measured_clusters:count',
            expr: 'count by (%s, signal) (%s)' % [k, measuredNow('signal=~".+"', ['signal'])],
          },
          // Present only when the totals of the signal are (the warm-up aside).
          {
            record: 'orpycamcp:signal_complete:count',
            expr: |||
              orpycamcp:signal_measured_clusters:count%(rec)s
                == on (%(k)s) group_left orpycamcp:clusters:count%(rec)s
              unless on (%(k)s) %(unidentified)s
              unless on (%(k)s) (%(shared)s)
            ||| % { rec: rec, k: k, unidentified: indent(unidentified, 2), shared: sharedClusterLabel },
          },
          // dlq and preservation read the tenants of each database: sums of
          // counts, the minimum of "oldest" timestamps, over databases.
          { record: 'orpycamcp:dlq_pending_events:total', expr: gatedTotal('sum', 'dlq_pending_events', 'dlq') },
          {
            record: 'orpycamcp:dlq_oldest_pending_timestamp_seconds:total',
            expr: gatedTotal('min', 'dlq_oldest_pending_timestamp_seconds', 'dlq'),
          },
          {
            record: 'orpycamcp:preservation_exhausted_artifacts:total',
            expr: gatedTotal('sum', 'preservation_exhausted_artifacts', 'preservation'),
          },
          { record: 'orpycamcp:backlog_pending_items:total', expr: backlogTotal('sum', 'backlog_pending_items') },
          {
            record: 'orpycamcp:backlog_oldest_pending_timestamp_seconds:total',
            expr: backlogTotal('min', 'backlog_oldest_pending_timestamp_seconds'),
          },
          // Redis Streams are the platform's one event bus, not shard data:
          // every exporter reads the same streams, so the platform value is
          // the bus value (the max over every target), never a sum.
          { record: 'orpycamcp:stream_pending_messages:total', expr: 'orpycamcp:stream_pending_messages:max' + rec },
          {
            record: 'orpycamcp:stream_oldest_pending_timestamp_seconds:total',
            expr: 'orpycamcp:stream_oldest_pending_timestamp_seconds:max' + rec,
          },
          { record: 'orpycamcp:deadletter_stream_entries:total', expr: 'orpycamcp:deadletter_stream_entries:max' + rec },
          {
            record: 'orpycamcp:deadletter_stream_oldest_entry_timestamp_seconds:total',
            expr: 'orpycamcp:deadletter_stream_oldest_entry_timestamp_seconds:max' + rec,
          },
          // audit_chain has no platform total: each database verifies its own
          // chain on its own schedule, and its alerts fire per database.
        ],
      },
    ],
  },
}

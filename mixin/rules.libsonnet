// Recording rules: one value per cluster out of its replicas (`:max`), the
// clusters known and measured (`:count`) and the platform totals (`:total`).
local families = import 'families.libsonnet';
local lib = import 'lib.libsonnet';

{
  local c = $._config,
  local up = 'up' + lib.selector(c),
  // Clusters known for the job, up or down (`offset` for the warm-up check).
  local knownClusters(offset='') =
    'count by (job) (count by (job, %s) (%s%s))' % [c.clusterLabel, up, if offset == '' then '' else ' offset ' + offset],
  // True while every known cluster has a replica up that measured the signal,
  // and the clusters known now were already known `totalsWarmUp` ago.
  local everyClusterMeasured(signal) = |||
    count by (job) (max by (job, %(cluster)s) (orpycamcp_signal_measured%(measured)s) == 1)
      == on (job) %(known)s
    # The clusters known now were known a moment ago too: right after Prometheus
    # starts, a cluster whose first scrape has not come yet is not missing silently.
    and on (job) %(knownBefore)s
      == on (job) %(known)s
  ||| % {
    cluster: c.clusterLabel,
    measured: lib.selector(c, ['signal="%s"' % signal]),
    known: knownClusters(),
    knownBefore: knownClusters(c.totalsWarmUp),
  },
  local indent(text, spaces) = std.join('\n' + std.repeat(' ', spaces), std.split(std.rstripChars(text, '\n'), '\n')),

  // A total over the clusters of a family read from each cluster's own
  // database, gated on every cluster having measured its signal. The values and
  // their gate are read in ONE expression: one query sees one consistent state
  // of the storage, while two rules can straddle a scrape appended between them.
  local gatedTotal(operator, family, signal) = |||
    %(operator)s by (job, %(labels)s) (%(merged)s)
      and on (job) (
        %(gate)s
      )
  ||| % {
    operator: operator,
    labels: std.join(', ', families[family]),
    merged: lib.merge(c, 'orpycamcp_' + family, families[family]),
    gate: indent(everyClusterMeasured(signal), 4),
  },

  // Declared backlogs: one signal per backlog, named like its `backlog` label.
  local backlogTotal(operator, family) = |||
    %(operator)s by (job, %(labels)s) (%(merged)s)
      and on (job, backlog)
        label_replace(
          count by (job, signal) (max by (job, %(cluster)s, signal) (orpycamcp_signal_measured%(selector)s) == 1)
            == on (job) group_left %(known)s,
          "backlog", "$1", "signal", "(.+)"
        )
        and on (job) %(knownBefore)s
          == on (job) %(known)s
  ||| % {
    operator: operator,
    labels: std.join(', ', families[family]),
    merged: lib.merge(c, 'orpycamcp_' + family, families[family]),
    cluster: c.clusterLabel,
    selector: lib.selector(c),
    known: knownClusters(),
    knownBefore: knownClusters(c.totalsWarmUp),
  },

  local maxRule(family) = {
    record: 'orpycamcp:%s:max' % family,
    expr: lib.merge(c, 'orpycamcp_' + family, families[family]),
  },

  prometheusRules+:: {
    groups+: [
      {
        name: 'orpycamcp.rules',
        rules: [
          // Per-signal health: measured if at least one replica of the cluster measured it completely.
          maxRule('signal_measured'),
          maxRule('signal_last_success_timestamp_seconds'),
          // The hot standby the exporter reads from (absent on a primary).
          maxRule('database_replay_lag_seconds'),
          // The Redis replica the streams are read from (absent on a master).
          maxRule('redis_replica_lag_seconds'),
          maxRule('dlq_pending_events'),
          maxRule('dlq_oldest_pending_timestamp_seconds'),
          maxRule('preservation_exhausted_artifacts'),
          maxRule('audit_chain_breaks'),
          maxRule('audit_chain_declared_breaks'),
          maxRule('audit_chain_verification_ok'),
          maxRule('audit_chain_last_verification_timestamp_seconds'),
          maxRule('stream_pending_messages'),
          maxRule('stream_oldest_pending_timestamp_seconds'),
          maxRule('stream_undelivered_entries'),
          maxRule('stream_consumers'),
          maxRule('stream_consumer_idle_seconds'),
          maxRule('deadletter_stream_entries'),
          maxRule('deadletter_stream_oldest_entry_timestamp_seconds'),
          maxRule('backlog_pending_items'),
          maxRule('backlog_oldest_pending_timestamp_seconds'),
          maxRule('backlog_arrivals'),
          maxRule('backlog_arrivals_threshold'),

          // Platform totals over clusters. A total is never partial: it exists
          // only while every cluster known for the job (every distinct cluster
          // label among its `up` targets, up or down) has a replica up that
          // measured the signal. Targets without the cluster label form one
          // cluster. These rules follow the `:max` rules in this group so that
          // each evaluation sees one consistent instant.
          { record: 'orpycamcp:clusters:count', expr: knownClusters() },
          {
            record: 'orpycamcp:signal_measured_clusters:count',
            expr: |||
              count by (job, signal) (
                max by (job, %s, signal) (orpycamcp_signal_measured%s) == 1
              )
            ||| % [c.clusterLabel, lib.selector(c)],
          },
          // Present only when every known cluster measured the signal.
          {
            record: 'orpycamcp:signal_complete:count',
            expr: |||
              orpycamcp:signal_measured_clusters:count
                == on (job) group_left orpycamcp:clusters:count
            |||,
          },
          // dlq and preservation read the tenants of each cluster: sums of
          // counts, the minimum of "oldest" timestamps, over clusters.
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
          // every cluster's exporter reads the same streams, so the platform
          // value is the max over the clusters that measured it, never a sum.
          {
            record: 'orpycamcp:stream_pending_messages:total',
            expr: 'max by (job, stream, group) (orpycamcp:stream_pending_messages:max)',
          },
          {
            record: 'orpycamcp:stream_oldest_pending_timestamp_seconds:total',
            expr: 'max by (job, stream, group) (orpycamcp:stream_oldest_pending_timestamp_seconds:max)',
          },
          {
            record: 'orpycamcp:deadletter_stream_entries:total',
            expr: 'max by (job, stream) (orpycamcp:deadletter_stream_entries:max)',
          },
          {
            record: 'orpycamcp:deadletter_stream_oldest_entry_timestamp_seconds:total',
            expr: 'max by (job, stream) (orpycamcp:deadletter_stream_oldest_entry_timestamp_seconds:max)',
          },
          // audit_chain has no platform total: each cluster verifies its own
          // chain on its own schedule, and its alerts fire per cluster.
        ],
      },
    ],
  },
}

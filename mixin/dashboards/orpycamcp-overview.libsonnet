// The overview dashboard: signal health, platform totals and every family,
// per cluster (replicas merged by the cluster label) and per replica where a
// replica's own state matters. Built with grafana.libsonnet: panels are listed
// in reading order and placed by `g.layout` (see docs/alerts-and-dashboard.md,
// "Adding a panel").
//
// Every query and every variable carries `_config.orpycamcpSelector`: the
// variables' "All" means all of this deployment's series and nothing else.
local lib = import '../lib.libsonnet';
local g = import 'grafana.libsonnet';

function(c)
  local cluster = c.clusterLabel;
  // The matchers of a raw series: this deployment, then the variables.
  local matchers(extra=[]) =
    std.join(', ', [c.orpycamcpSelector, 'job=~"$job"', '%s=~"$cluster"' % cluster, 'instance=~"$instance"'] + extra);
  local raw(family, extra=[]) = '%s{%s}' % [family, matchers(extra)];
  // One value per group of `labels` out of the replicas: the max, never a sum.
  local maxBy(labels, family, extra=[]) = 'max by (%s) (%s)' % [std.join(', ', labels), raw(family, extra)];
  local perCluster(family, labels=[], extra=[]) = maxBy([cluster] + labels, family, extra);
  local perReplica(family) = maxBy([cluster, 'instance'], family);
  // A series recorded over every cluster of the job (a platform total): it has
  // no cluster or instance, so only the deployment and the Job variable apply.
  local recorded(record, extra=[]) = '%s{%s}' % [record, std.join(', ', [c.orpycamcpSelector, 'job=~"$job"'] + extra)];
  local legend(text) = text % { cluster: '{{%s}}' % cluster };
  local q(expr, text='__auto') = g.query(expr, legend(text));
  local age(expr) = 'time() - ' + expr;
  local seconds = lib.seconds;
  local reclaim = lib.reclaim(c);
  local trimAge = seconds(c.deadletterTrimHorizon) + 2 * seconds(c.deadletterTrimInterval);
  // ADR-041: the audit-chain runs are monitoring, not proof.
  local notProof = ' Monitoring, not proof (ADR-041): the application role keeps INSERT on audit_chain_runs, so a run can be recorded that never happened; integrity is proven by running verify_chain again (the backup CLI, which anchors the chain end in the same run) and comparing with the anchor.';

  local measured = [g.value('1', 'measured', 'green'), g.value('0', 'UNMEASURED', 'red'), g.unknown];
  local redBelowOne = [['red', null], ['green', 1]];
  // audit_chain measured but no run ever recorded: NaN, shown as "never".
  local neverVerified = 'max by (job, %s) (%s == 1) * NaN' % [cluster, raw('orpycamcp_signal_measured', ['signal="audit_chain"'])];

  {
    uid: c.dashboardUid,
    title: c.dashboardTitle,
    description: 'Health of the orpycamcp signals (dlq, preservation, audit chain, streams) reported by orpycamcp-exporter. Unknown (unmeasured or absent) is always shown distinctly from 0.',
    tags: c.dashboardTags,
    editable: false,
    graphTooltip: 1,
    id: null,
    version: 1,
    schemaVersion: 39,
    time: { from: 'now-6h', to: 'now' },
    timepicker: {},
    timezone: '',
    refresh: c.dashboardRefresh,
    fiscalYearStartMonth: 0,
    liveNow: false,
    weekStart: '',
    links: [{
      title: 'Runbook',
      type: 'link',
      icon: 'doc',
      targetBlank: true,
      tooltip: 'orpycamcp-exporter alert runbook',
      url: std.split(c.runbookUrlPattern, '#')[0],
      asDropdown: false,
      includeVars: false,
      keepTime: false,
      tags: [],
    }],
    annotations: { list: [{
      builtIn: 1,
      datasource: { type: 'grafana', uid: '-- Grafana --' },
      enable: true,
      hide: true,
      iconColor: 'rgba(0, 211, 255, 1)',
      name: 'Annotations & Alerts',
      type: 'dashboard',
    }] },

    // Each variable lists only what the selector and the variables before it
    // select. Job and Instance "All" is `.+`, Cluster "All" is `.*` (series
    // without the cluster label: one cluster); beside the selector in every
    // query they never reach another deployment. Backlog "All" lists the
    // declared backlogs (a regex would also match the built-in signals).
    templating: { list: [
      g.datasourceVariable(c.datasourceType, c.datasourceRegex),
      g.labelVariable('job', 'job', 'orpycamcp_exporter_build_info{%s}' % c.orpycamcpSelector, allValue='.+'),
      g.labelVariable('cluster', cluster, 'orpycamcp_exporter_build_info{%s, job=~"$job"}' % c.orpycamcpSelector, allValue='.*'),
      g.labelVariable('instance', 'instance', 'orpycamcp_exporter_build_info{%s, job=~"$job", %s=~"$cluster"}' % [c.orpycamcpSelector, cluster], allValue='.+'),
      g.labelVariable('backlog', 'backlog', raw('orpycamcp_backlog_pending_items')),
    ] },

    panels: g.layout([
      // --- health of the signals and of the targets --------------------------
      g.stat(
        1,
        'Signal measured',
        "Whether each signal's last measurement was complete (orpycamcp_signal_measured, max over the replicas of each cluster). UNMEASURED (0) means the signal could not be verified and its value series are absent: its state is unknown, not zero. A signal without any series (e.g. streams when Redis is not configured) is not shown; 'unknown' means no series at all.",
        'none',
        [q(perCluster('orpycamcp_signal_measured', ['signal']), '%(cluster)s {{signal}}')],
        noValue='unknown',
        mappings=measured,
        thresholds=redBelowOne,
      ),
      g.table(
        37,
        'Why unmeasured',
        "For each signal unmeasured now, the reason the exporter gives (orpycamcp_signal_failure_info, per cluster): the same words as its logs, diagnose and the runbook's reasons table. Empty while every signal is measured.",
        'none',
        [q(perCluster('orpycamcp_signal_failure_info', ['signal', 'reason']))],
        g.hideTimeAndValue,
        noValue='every signal measured',
        width=6,
        height=5,
      ),
      g.stat(
        2,
        'Age of last complete measurement',
        "Time since the last complete measurement of each signal (orpycamcp_signal_last_success_timestamp_seconds, freshest replica). 'never' means the signal is reported but has never been measured completely. Alert OrpycamcpSignalStale fires above the signal's own TTL plus %s." % c.signalStaleAge,
        's',
        [q(age(perCluster('orpycamcp_signal_last_success_timestamp_seconds', ['signal'])) + ' or ' + perCluster('orpycamcp_signal_measured', ['signal']) + ' * NaN', '%(cluster)s {{signal}}')],
        noValue='unknown',
        mappings=[g.special('nan', 'never', 'red'), g.unknown],
        thresholds=[['green', null], ['yellow', 300], ['red', seconds(c.signalStaleAge)]],
      ),
      g.stat(
        3,
        'Exporter targets up',
        'Scrape health of each exporter target (up). DOWN targets report nothing; with every target down no signal is monitored.',
        'none',
        [q(raw('up'), '%(cluster)s {{instance}}')],
        noValue='no target',
        mappings=[g.value('1', 'up', 'green'), g.value('0', 'DOWN', 'red'), g.unknown],
        thresholds=redBelowOne,
        width=3,
      ),
      g.table(
        4,
        'Exporter version',
        'Version reported by each exporter target (orpycamcp_exporter_build_info).',
        'none',
        [q(perCluster('orpycamcp_exporter_build_info', ['instance', 'version']))],
        g.hideTimeAndValue,
        noValue='no target',
        width=3,
        height=5,
      ),

      // --- platform totals: over every cluster, whatever Cluster selects ------
      g.row('Platform totals (every cluster)', 42),
      g.stat(
        19,
        'Platform totals: clusters measured per signal',
        "Per signal, how many clusters have a replica up that measured it (orpycamcp:signal_measured_clusters:count), beside every cluster known for the job, up or down (orpycamcp:clusters:count). A per-cluster signal's platform totals exist only when the two are equal; otherwise they are unknown and OrpycamcpPlatformTotalUnknown fires. Not filtered by the Cluster variable: a total is over every cluster.",
        'none',
        [
          q(recorded('orpycamcp:clusters:count'), 'known clusters'),
          q(recorded('orpycamcp:signal_measured_clusters:count'), '{{signal}}'),
        ],
        noValue='unknown',
        mappings=[g.unknown],
        thresholds=[['blue', null]],
        width=8,
      ),
      g.stat(
        20,
        'Platform total: DLQ pending events',
        "Dead-lettered events pending over the whole platform, per origin group: the sum over clusters of each cluster's value (orpycamcp:dlq_pending_events:total). 'unknown' means at least one cluster did not measure dlq (exporter down or signal unmeasured): the total is never a partial sum. Not filtered by the Cluster variable.",
        'short',
        [q(recorded('orpycamcp:dlq_pending_events:total'), '{{origin_group}}')],
        noValue='unknown (a cluster is not measured)',
        mappings=[g.unknown],
        thresholds=[['green', null], ['orange', 1]],
        width=8,
      ),
      g.stat(
        21,
        'Platform total: oldest pending DLQ event age',
        "Age of the oldest pending dead-lettered event over the whole platform, per origin group (orpycamcp:dlq_oldest_pending_timestamp_seconds:total, the minimum over clusters). 'none pending' means every cluster measured dlq and none has a pending event; 'unknown' means a cluster did not measure dlq. Alert OrpycamcpDlqOldestPendingTooOld fires per cluster above %s." % c.dlqOldestPendingAge,
        's',
        [q(age(recorded('orpycamcp:dlq_oldest_pending_timestamp_seconds:total')) + ' or on (job) ' + recorded('orpycamcp:signal_complete:count', ['signal="dlq"']) + ' * NaN', '{{origin_group}}')],
        noValue='unknown (a cluster is not measured)',
        mappings=[g.special('nan', 'none pending', 'green'), g.unknown],
        thresholds=[['green', null], ['yellow', 3600], ['red', seconds(c.dlqOldestPendingAge)]],
        width=8,
      ),
      g.timeseries(
        22,
        'Platform total: DLQ pending events over time',
        "orpycamcp:dlq_pending_events:total per origin group: the sum over every cluster, recorded only while every cluster measured dlq. Gaps mean the total was unknown (a cluster down or unmeasured), never zero. The per-cluster series are in 'DLQ pending events by origin group' below.",
        'short',
        [q(recorded('orpycamcp:dlq_pending_events:total'), '{{origin_group}}')],
        height=9,
      ),
      g.table(
        23,
        'Platform total: exhausted preservation artifacts (artifact × phase)',
        'Preservation artifacts whose retries are exhausted over the whole platform (orpycamcp:preservation_exhausted_artifacts:total, the sum over clusters), by artifact (rows) and phase (columns). Empty means unknown: at least one cluster did not measure preservation. Not filtered by the Cluster variable.',
        'short',
        [q(recorded('orpycamcp:preservation_exhausted_artifacts:total'))],
        g.matrix('artifact', 'phase'),
        noValue='unknown (a cluster is not measured)',
        thresholds=[['green', null], ['red', 1]],
      ),
      g.timeseries(
        24,
        'Platform total: stream pending messages (PEL)',
        "Messages in each consumer group's pending entries list over the platform (orpycamcp:stream_pending_messages:total). Redis Streams are the platform's one event bus: every cluster's exporter reads the same streams, so this is the max over the clusters that measured it, never a sum. Gaps mean unknown (no cluster measured streams), never zero.",
        'short',
        [q(recorded('orpycamcp:stream_pending_messages:total'), '{{stream}} / {{group}}')],
        width=24,
        height=5,
      ),

      // --- per cluster ---------------------------------------------------------
      g.row('Signals over time', 43),
      g.stateTimeline(
        5,
        'Signal measured over time',
        'History of orpycamcp_signal_measured per signal (max over the replicas of each cluster). Gaps mean no series at all (exporter down or signal not reported), shown distinctly from UNMEASURED.',
        [q(perCluster('orpycamcp_signal_measured', ['signal']), '%(cluster)s {{signal}}')],
        measured,
        redBelowOne,
      ),
      g.timeseries(
        6,
        'Measurement duration',
        'How long the last measurement of each signal took, successful or not (orpycamcp_signal_measurement_duration_seconds, max over the replicas of each cluster).',
        's',
        [q(perCluster('orpycamcp_signal_measurement_duration_seconds', ['signal']), '%(cluster)s {{signal}}')],
        height=6,
      ),
      g.timeseries(
        57,
        'Data age',
        "How old the data of each signal's values is: now minus orpycamcp_signal_data_timestamp_seconds (when the measurement began, less a standby's replay lag or a Redis replica's lag), the freshest replica of each cluster. Beside it, each signal's own TTL (orpycamcp_signal_ttl_seconds): its data is up to that old between refreshes. A copy older than its signal's TTL plus %s counts in no platform total. Gaps: the signal unmeasured." % c.dataMaxAge,
        's',
        [
          q('time() - ' + perCluster('orpycamcp_signal_data_timestamp_seconds', ['signal']), '%(cluster)s {{signal}}'),
          q(perCluster('orpycamcp_signal_ttl_seconds', ['signal']), '%(cluster)s {{signal}} TTL'),
        ],
        height=6,
      ),

      g.row('Dead-letter queue', 44),
      g.timeseries(
        7,
        'DLQ pending events by origin group',
        'Dead-lettered events pending an administrator, per origin group (orpycamcp_dlq_pending_events, max over the replicas of each cluster). Gaps mean the dlq signal was unmeasured: unknown, not zero. Alert OrpycamcpDlqPendingTooLong fires after %s above 0.' % c.dlqPendingFor,
        'short',
        [q(perCluster('orpycamcp_dlq_pending_events', ['origin_group']), '%(cluster)s {{origin_group}}')],
      ),
      g.timeseries(
        8,
        'DLQ oldest pending event age by origin group',
        'Age of the oldest pending dead-lettered event per origin group (from orpycamcp_dlq_oldest_pending_timestamp_seconds). No line means nothing is pending (or dlq unmeasured). Alert OrpycamcpDlqOldestPendingTooOld fires above %s.' % c.dlqOldestPendingAge,
        's',
        [q(age(perCluster('orpycamcp_dlq_oldest_pending_timestamp_seconds', ['origin_group'])), '%(cluster)s {{origin_group}}')],
        thresholds=[['green', null], ['red', seconds(c.dlqOldestPendingAge)]],
      ),

      g.row('Preservation', 45),
      g.table(
        9,
        'Exhausted preservation artifacts (artifact × phase)',
        'Preservation artifacts whose retries are exhausted, by cluster and artifact (rows) and phase (columns) (orpycamcp_preservation_exhausted_artifacts, max over the replicas of each cluster). Empty cells mean unmeasured, not zero. Alert OrpycamcpPreservationArtifactsExhausted fires on any value above 0.',
        'short',
        [q('label_join(%s, "cluster_artifact", " / ", "%s", "artifact")' % [perCluster('orpycamcp_preservation_exhausted_artifacts', ['artifact', 'phase']), cluster])],
        g.matrix('cluster_artifact', 'phase'),
        noValue='unknown (preservation unmeasured)',
        thresholds=[['green', null], ['red', 1]],
        width=14,
      ),
      g.timeseries(
        10,
        'Exhausted preservation artifacts over time',
        'Artifact/phase pairs with at least one exhausted artifact (orpycamcp_preservation_exhausted_artifacts > 0, max over the replicas of each cluster). Pairs at 0 are hidden.',
        'short',
        [q(perCluster('orpycamcp_preservation_exhausted_artifacts', ['artifact', 'phase']) + ' > 0', '%(cluster)s {{artifact}} / {{phase}}')],
        width=10,
        height=9,
      ),

      g.row('Audit chain', 46),
      g.stat(
        11,
        'Audit-chain verification',
        "What the last complete audit-chain verification run recorded (orpycamcp_audit_chain_verification_ok). 'never verified' means the signal is measured but no run was ever recorded; 'unknown' means audit_chain is unmeasured." + notProof,
        'none',
        [q(maxBy(['job', cluster], 'orpycamcp_audit_chain_verification_ok') + ' or ' + neverVerified, '{{job}} %(cluster)s')],
        noValue='unknown',
        thresholds=redBelowOne,
        mappings=[
          g.value('1', 'OK', 'green'),
          g.value('0', 'FAILED', 'red'),
          g.special('nan', 'never verified', 'orange'),
          g.unknown,
        ],
      ),
      g.stat(
        12,
        'Audit-chain breaks',
        'Breaks found by the last complete verification run, breaks already declared, and the difference (orpycamcp_audit_chain_breaks, orpycamcp_audit_chain_declared_breaks). Undeclared breaks above 0 fire OrpycamcpAuditChainUndeclaredBreaks.',
        'short',
        [
          q(maxBy(['job', cluster], 'orpycamcp_audit_chain_breaks'), '%(cluster)s found'),
          q(maxBy(['job', cluster], 'orpycamcp_audit_chain_declared_breaks'), '%(cluster)s declared'),
          q(maxBy(['job', cluster], 'orpycamcp_audit_chain_breaks') + ' - ' + maxBy(['job', cluster], 'orpycamcp_audit_chain_declared_breaks'), '%(cluster)s undeclared'),
        ],
        noValue='unknown',
        colorMode='value',
        overrides=[{
          matcher: { id: 'byName', options: 'undeclared' },
          properties: [
            { id: 'thresholds', value: g.thresholds([['green', null], ['red', 1]]) },
            { id: 'color', value: { mode: 'thresholds' } },
          ],
        }],
      ),
      g.stat(
        13,
        'Age of last audit-chain verification',
        "Time since the last complete audit-chain verification run recorded its end (orpycamcp_audit_chain_last_verification_timestamp_seconds). 'never' means the signal is measured but no run was ever recorded. Alert OrpycamcpAuditChainVerificationStale fires above %s." % c.auditChainVerificationAge + notProof,
        's',
        [q(age(maxBy(['job', cluster], 'orpycamcp_audit_chain_last_verification_timestamp_seconds')) + ' or ' + neverVerified, '{{job}} %(cluster)s')],
        noValue='unknown',
        mappings=[g.special('nan', 'never', 'orange'), g.unknown],
        thresholds=[['green', null], ['yellow', 86400], ['red', seconds(c.auditChainVerificationAge)]],
      ),
      g.stateTimeline(
        14,
        'Audit-chain verification over time',
        'History of orpycamcp_audit_chain_verification_ok. Gaps mean never verified or audit_chain unmeasured.',
        [q(maxBy(['job', cluster], 'orpycamcp_audit_chain_verification_ok'), '{{job}} %(cluster)s')],
        [g.value('1', 'OK', 'green'), g.value('0', 'FAILED', 'red')],
        redBelowOne,
        legend=false,
        width=6,
        height=5,
      ),

      g.row('Migration lock', 60),
      g.stat(
        61,
        'Migration lock',
        "Whether a session holds the platform's migration advisory lock (ADR-041 C19, key \"ORPYCAM1\") in the cluster's database (orpycamcp_migration_lock_held, read from pg_locks, which every role may read), and the sessions blocked in pg_advisory_lock behind it (orpycamcp_migration_lock_waiters; the platform's migrators retry pg_try_advisory_lock and are not counted). Alert OrpycamcpMigrationLockHeldTooLong fires once it has been held without a break for %s; migrators fail closed at %s." % [lib.words(c.migrationLockHeldFor), lib.secondsWords(seconds(c.migrationLockTimeout))],
        'short',
        [
          q(maxBy(['job', cluster], 'orpycamcp_migration_lock_held'), '%(cluster)s held'),
          q(maxBy(['job', cluster], 'orpycamcp_migration_lock_waiters'), '%(cluster)s waiting'),
        ],
        noValue='unknown',
        colorMode='value',
        mappings=[g.unknown],
        thresholds=[['green', null], ['orange', 1]],
        width=12,
      ),
      g.stat(
        62,
        "Migration lock holder's session age",
        "Time since the session holding the migration lock started (orpycamcp_migration_lock_holder_session_start_timestamp_seconds, pg_stat_activity.backend_start: the lock was taken at or after it, so this bounds how long it is held). 'hidden' means another role's session holds it and the exporter's role lacks pg_read_all_stats (orpycamcp_migration_lock_holder_session_start_unknown); empty means the lock is free or unmeasured.",
        's',
        [q(age(maxBy(['job', cluster], 'orpycamcp_migration_lock_holder_session_start_timestamp_seconds')) + ' or ' + maxBy(['job', cluster], 'orpycamcp_migration_lock_holder_session_start_unknown') + ' * NaN', '{{job}} %(cluster)s')],
        noValue='free or unknown',
        mappings=[g.special('nan', 'hidden', 'orange'), g.unknown],
        thresholds=[['green', null], ['red', seconds(c.migrationLockHeldFor)]],
        width=12,
      ),

      g.row('Housekeeping (the platform purges)', 63),
      g.timeseries(
        64,
        'Oldest row left by the daily purges',
        'Age of the oldest terminal (resolved or discarded) dead letter per origin group, since its resolved_at (orpycamcp_housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds), and of the oldest notification dedup row, since its processed_at (orpycamcp_housekeeping_notification_dedup_oldest_processed_timestamp_seconds), over the tenants the purges walk (status active). A daily purge keeps them at most one interval (%s) past its horizon (%s, %s): a sawtooth; OrpycamcpDeadLetterPurgeStopped and OrpycamcpDedupPurgeStopped fire past two intervals. Suspended tenants, which the purges skip, are not read. No line: none left (nothing terminal with a resolved_at, no dedup row), or unmeasured: never a 0.' % [lib.words(c.purgeInterval), lib.words(c.deadLetterPurgeHorizon), lib.words(c.dedupPurgeHorizon)],
        's',
        [
          q(age(perCluster('orpycamcp_housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds', ['origin_group'])), '%(cluster)s {{origin_group}}'),
          q(age(perCluster('orpycamcp_housekeeping_notification_dedup_oldest_processed_timestamp_seconds')), '%(cluster)s dedup'),
        ],
        width=16,
      ),
      g.stat(
        65,
        'Terminal dead letters without resolved_at',
        "Terminal (resolved or discarded) dead letters whose resolved_at is NULL, per origin group, over every tenant (orpycamcp_housekeeping_dead_letter_terminal_without_resolved_at). The platform sets status and resolved_at in one UPDATE (ADR-021): such a row breaks that invariant, and the purge never deletes it (NULL is never older than its cutoff). Not a failure of the purge: rows to look at, kept forever. 'unknown' means unmeasured.",
        'short',
        [q(perCluster('orpycamcp_housekeeping_dead_letter_terminal_without_resolved_at', ['origin_group']), '%(cluster)s {{origin_group}}')],
        noValue='unknown',
        colorMode='value',
        mappings=[g.unknown],
        thresholds=[['green', null], ['orange', 1]],
        width=8,
      ),

      g.row('Redis Streams', 47),
      g.timeseries(
        15,
        'Consumer group pending messages (PEL)',
        'Messages delivered to a consumer group but not acknowledged, per stream and group (orpycamcp_stream_pending_messages, max over the replicas of each cluster). Only present when Redis is configured.',
        'short',
        [q(perCluster('orpycamcp_stream_pending_messages', ['stream', 'group']), '%(cluster)s {{stream}} / {{group}}')],
      ),
      g.timeseries(
        16,
        'Oldest pending message age',
        'Age of the oldest pending message per stream and group (from orpycamcp_stream_oldest_pending_timestamp_seconds): since it was written, not delivered, so a catch-up after an outage shows old messages that move on. No line means the PEL is empty. The reclaim sweep (%s) dead-letters a message that keeps failing %s after its first delivery; OrpycamcpStreamPendingTooOld fires when the same message has been the oldest for %s and is older than that.' % [reclaim.cadenceWords, reclaim.deadLetterWords, lib.words(c.streamPendingAge)],
        's',
        [q(age(perCluster('orpycamcp_stream_oldest_pending_timestamp_seconds', ['stream', 'group'])), '%(cluster)s {{stream}} / {{group}}')],
        thresholds=[['green', null], ['red', seconds(c.streamPendingAge)]],
      ),
      g.timeseries(
        17,
        'Dead-letter stream entries',
        'Entries in each dead-letter stream (orpycamcp_deadletter_stream_entries, max over the replicas of each cluster). Growth fires OrpycamcpDeadletterStreamGrowing.',
        'short',
        [q(perCluster('orpycamcp_deadletter_stream_entries', ['stream']), '%(cluster)s {{stream}}')],
      ),
      g.stat(
        18,
        'Oldest dead-letter entry age',
        'Age of the first entry of each dead-letter stream (from orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds). The daily trim (XTRIM MINID ~, %s horizon) removes whole stream nodes only, so a quiet stream keeps entries older than the horizon while trimmed: an age past it is not an alert. No value means the stream is empty.' % lib.words(c.deadletterTrimHorizon),
        's',
        [q(age(perCluster('orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds', ['stream'])), '%(cluster)s {{stream}}')],
        noValue='empty',
        colorMode='value',
        thresholds=[['green', null], ['yellow', seconds(c.deadletterTrimHorizon)]],
        width=12,
        height=8,
      ),
      g.timeseries(
        58,
        'Oldest pending message deliveries',
        'Times the oldest pending message of each group was delivered, claims by the reclaim sweep included (orpycamcp_stream_oldest_pending_deliveries, max over the replicas of each cluster). No line: nothing pending. The sweep dead-letters a message at its delivery %d; above %d dead-lettering failed (ADR-021 R-4), and OrpycamcpStreamDeadLetteringFailing fires when it stays.' % [c.maxDeliveries, c.maxDeliveries],
        'short',
        [q(perCluster('orpycamcp_stream_oldest_pending_deliveries', ['stream', 'group']), '%(cluster)s {{stream}} / {{group}}')],
        thresholds=[['green', null], ['red', c.maxDeliveries + 1]],
      ),
      g.stat(
        59,
        'Dead-letter 101st entry age',
        'Age of the 101st entry of each dead-letter stream (from orpycamcp_deadletter_stream_entry_101_timestamp_seconds), the first that cannot share the first stream node: a running trim keeps it within the horizon plus one interval. OrpycamcpDeadletterStreamEntriesTooOld fires above %s. No value: 100 entries or fewer.' % lib.secondsWords(trimAge),
        's',
        [q(age(perCluster('orpycamcp_deadletter_stream_entry_101_timestamp_seconds', ['stream'])), '%(cluster)s {{stream}}')],
        noValue='100 entries or fewer',
        colorMode='value',
        thresholds=[['green', null], ['red', trimAge]],
        width=12,
        height=8,
      ),

      g.row('Stream consumers', 51),
      g.timeseries(
        52,
        'Undelivered entries',
        'Entries of the stream not yet delivered to each consumer group (orpycamcp_stream_undelivered_entries, XINFO GROUPS lag, max over the replicas of each cluster). Not pending anywhere: a group whose consumers died shows pending 0 while this grows. No line: Redis cannot count them (entries deleted past the group\'s last delivered ID) or streams unmeasured; unknown, not zero.',
        'short',
        [q(perCluster('orpycamcp_stream_undelivered_entries', ['stream', 'group']), '%(cluster)s {{stream}} / {{group}}')],
      ),
      g.timeseries(
        53,
        'Consumers per group',
        'Consumers each consumer group knows, alive or dead (orpycamcp_stream_consumers, max over the replicas of each cluster). Gaps: streams unmeasured, unknown, not zero.',
        'short',
        [q(perCluster('orpycamcp_stream_consumers', ['stream', 'group']), '%(cluster)s {{stream}} / {{group}}')],
        width=6,
      ),
      g.stat(
        55,
        'Consumer last seen',
        'Seconds since the most recently seen consumer of each group was last seen by Redis (orpycamcp_stream_consumer_idle_seconds). With undelivered entries, above %s fires OrpycamcpStreamNotConsumed. Unknown: no consumer, or streams unmeasured.' % c.streamNotConsumedIdle,
        's',
        [q(perCluster('orpycamcp_stream_consumer_idle_seconds', ['stream', 'group']), '%(cluster)s {{stream}} / {{group}}')],
        noValue='unknown',
        mappings=[g.unknown],
        thresholds=[['green', null], ['red', seconds(c.streamNotConsumedIdle)]],
        width=6,
        height=8,
      ),
      g.timeseries(
        56,
        'Undelivered count withheld',
        "Consumer groups whose undelivered count is withheld, by the first rule Redis's lag failed (orpycamcp_stream_undelivered_unknown_groups), and which groups (orpycamcp_stream_undelivered_unknown): Redis 7.0 and 7.2 miscount lag after a trim (redis/redis#13957), so a count that contradicts the stream's length, last ID or counters is not published. Above 0 for %s with the group's consumers idle fires OrpycamcpStreamUndeliveredUnknown." % c.streamUndeliveredUnknownFor,
        'short',
        [
          q(perCluster('orpycamcp_stream_undelivered_unknown_groups', ['reason']), '%(cluster)s {{reason}}'),
          q(perCluster('orpycamcp_stream_undelivered_unknown', ['stream', 'group']), '%(cluster)s withheld: {{stream}} / {{group}}'),
        ],
        width=24,
        height=6,
      ),

      g.row('Declared backlogs', 48),
      g.stat(
        25,
        'Backlog measured',
        "Whether each declared backlog's last measurement was complete (orpycamcp_signal_measured for the backlog's signal, max over replicas). UNMEASURED (0): its value series are absent, its pending items unknown, not zero; 'unknown' means no series at all. Alert OrpycamcpSignalUnmeasured covers backlogs too.",
        'none',
        [q(perCluster('orpycamcp_signal_measured', ['signal'], ['signal=~"$backlog"']), '%(cluster)s {{signal}}')],
        noValue='unknown',
        mappings=measured,
        thresholds=redBelowOne,
        height=6,
      ),
      g.stat(
        26,
        'Backlog pending items now',
        "Pending items of each declared backlog and group, summed over all tenants for a tenant-scope backlog (orpycamcp_backlog_pending_items, max over replicas). 0 is a measured zero; 'unknown' means the backlog is unmeasured (no series), never 0.",
        'short',
        [q(perCluster('orpycamcp_backlog_pending_items', ['backlog', 'group'], ['backlog=~"$backlog"']), '%(cluster)s {{backlog}} {{group}}')],
        noValue='unknown',
        mappings=[g.unknown],
        thresholds=[['green', null], ['yellow', 1]],
        width=18,
        height=6,
      ),
      g.timeseries(
        27,
        'Backlog pending items by group',
        'Pending items per declared backlog and group (orpycamcp_backlog_pending_items, max over replicas). Gaps mean the backlog was unmeasured: unknown, not zero. Alert OrpycamcpBacklogPendingTooLong fires after %s above 0.' % c.backlogPendingFor,
        'short',
        [q(perCluster('orpycamcp_backlog_pending_items', ['backlog', 'group'], ['backlog=~"$backlog"']), '%(cluster)s {{backlog}} {{group}}')],
      ),
      g.timeseries(
        28,
        'Backlog oldest pending item age by group',
        'Age of the oldest pending item per declared backlog and group (from orpycamcp_backlog_oldest_pending_timestamp_seconds). No line means nothing is pending, the backlog declares no oldest column, or it is unmeasured (see Backlog measured). Alert OrpycamcpBacklogOldestPendingTooOld fires above %s.' % c.backlogOldestPendingAge,
        's',
        [q(age(perCluster('orpycamcp_backlog_oldest_pending_timestamp_seconds', ['backlog', 'group'], ['backlog=~"$backlog"'])), '%(cluster)s {{backlog}} {{group}}')],
        thresholds=[['green', null], ['red', seconds(c.backlogOldestPendingAge)]],
      ),

      // --- per replica -----------------------------------------------------------
      g.row('Replicas read from', 49),
      g.timeseries(
        29,
        'Replica lag (a PostgreSQL standby, a Redis replica)',
        'How far behind its primary the server the exporter reads may be: a PostgreSQL hot standby (orpycamcp_database_replay_lag_seconds) or a Redis replica (orpycamcp_redis_replica_lag_seconds). Past --database.replica-max-staleness or --redis.replica-max-staleness its signals are unmeasured (replica_stale). No series: the exporter reads a primary.',
        's',
        [
          q(perReplica('orpycamcp_database_replay_lag_seconds'), 'PostgreSQL %(cluster)s {{instance}}'),
          q(perReplica('orpycamcp_redis_replica_lag_seconds'), 'Redis %(cluster)s {{instance}}'),
        ],
        width=16,
        height=6,
      ),
      g.table(
        54,
        'Database per replica',
        'The database each exporter target measures, read from the database itself (orpycamcp_database_identity_info: <system identifier>/<database OID>, the same on a primary and its standbys), or why it cannot be read now (orpycamcp_database_identity_failure_info). The rules merge replicas and count the platform\'s databases by it.',
        'none',
        [
          q(maxBy([cluster, 'instance', 'database_identity'], 'orpycamcp_database_identity_info')),
          q(maxBy([cluster, 'instance', 'reason'], 'orpycamcp_database_identity_failure_info')),
        ],
        g.hideTimeAndValue,
        noValue='no target reads a database',
        width=8,
        height=6,
      ),

      g.row('Exporter process', 50),
      g.timeseries(
        30,
        'Exporter HTTP connections open',
        "HTTP connections the exporter holds open now, idle ones included (Prometheus' own keep-alive connection among them). Near the connection cap, idle connections are shed.",
        'short',
        [q(perReplica('orpycamcp_exporter_http_connections'), '%(cluster)s {{instance}}')],
        height=6,
      ),
      g.timeseries(
        31,
        'Exporter HTTP connections shed',
        'HTTP connections per second the exporter closed to stay under its connection cap (--web.max-connections), the longest idle first. Above 0: something holds many idle connections to the exporter.',
        'cps',
        [q('max by (%s, instance) (rate(%s[$__rate_interval]))' % [cluster, raw('orpycamcp_exporter_http_connections_shed_total')], '%(cluster)s {{instance}}')],
        height=6,
      ),
      g.timeseries(
        38,
        'Exporter process CPU',
        'CPU time the exporter process spends per second (process_cpu_seconds_total), per replica: 100% is one core. A scrape of a cached page costs almost nothing; a steady climb points at refreshes or a flood of requests.',
        'percentunit',
        [q('max by (%s, instance) (rate(%s[$__rate_interval]))' % [cluster, raw('process_cpu_seconds_total')], '%(cluster)s {{instance}}')],
        width=6,
        height=6,
      ),
      g.timeseries(
        39,
        'Exporter process memory',
        "Resident (process_resident_memory_bytes) and virtual (process_virtual_memory_bytes) memory of the exporter process, per replica. Resident memory is what the container's memory limit counts.",
        'bytes',
        [
          q(perReplica('process_resident_memory_bytes'), 'resident %(cluster)s {{instance}}'),
          q(perReplica('process_virtual_memory_bytes'), 'virtual %(cluster)s {{instance}}'),
        ],
        width=6,
        height=6,
      ),
      g.timeseries(
        40,
        'Exporter file descriptors',
        'File descriptors the exporter process holds open (process_open_fds) beside its limit (process_max_fds), per replica. Idle HTTP connections and database connections each hold one.',
        'short',
        [
          q(perReplica('process_open_fds'), 'open %(cluster)s {{instance}}'),
          q(perReplica('process_max_fds'), 'limit %(cluster)s {{instance}}'),
        ],
        width=6,
        height=6,
      ),
      g.timeseries(
        41,
        'Exporter uptime',
        "Time since each exporter process started (process_start_time_seconds), per replica. A saw-tooth means restarts: look at the container's exit reason.",
        's',
        [q(age(perReplica('process_start_time_seconds')), '%(cluster)s {{instance}}')],
        width=6,
        height=6,
      ),

      // --- one row per declared backlog (repeated over the Backlog variable) ---
      g.row('Backlog $backlog: items per state and arrivals', 32, repeat='backlog'),
      g.timeseries(
        33,
        'Items per state: $backlog',
        'Rows of the declared backlog per group and state, in any state (orpycamcp_backlog_items, max over replicas; a backlog declaring `states`). Gaps mean the backlog was unmeasured: unknown, not zero.',
        'short',
        [q(perCluster('orpycamcp_backlog_items', ['backlog', 'group', 'state'], ['backlog=~"$backlog"']), '%(cluster)s {{group}} {{state}}')],
      ),
      g.timeseries(
        34,
        'Arrivals per window: $backlog',
        "Rows of the declared backlog per group, in any state, arrived within each window ending at the measurement (orpycamcp_backlog_arrivals, by the database's clock; a backlog declaring `arrivals`), and the thresholds declared for them (arrivals.alert_above). Rows deleted by retention are not counted. Gaps mean the backlog was unmeasured: unknown, not zero. Alert OrpycamcpBacklogArrivalsHigh fires above a threshold for %s." % c.backlogArrivalsHighFor,
        'short',
        [
          q(perCluster('orpycamcp_backlog_arrivals', ['backlog', 'group', 'window'], ['backlog=~"$backlog"']), '%(cluster)s {{group}} within {{window}}'),
          q(perCluster('orpycamcp_backlog_arrivals_threshold', ['backlog', 'window'], ['backlog=~"$backlog"']), '%(cluster)s threshold {{window}}'),
        ],
        overrides=[{
          matcher: { id: 'byRegexp', options: '.* threshold .*' },
          properties: [{ id: 'custom.lineStyle', value: { dash: [10, 10], fill: 'dash' } }],
        }],
      ),
    ]),
  }

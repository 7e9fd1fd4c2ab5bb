// Everything a deployment may need to change, with the defaults the plain
// files (alerts/orpycamcp.rules.yml, grafana/dashboards/*.json) are rendered with.
// Override it with `(import "mixin.libsonnet") + { _config+:: { ... } }`.
{
  _config+:: {
    // Selects the exporter's targets; inserted in every selector of the rules.
    // The labels it fixes with `=` (at least one) stay on every recorded series
    // and select them: a second render loaded into the same Prometheus must
    // differ from this one in one of them (e.g. another job).
    orpycamcpSelector: 'job="orpycamcp-exporter"',
    // The target label that names an exporter deployment's PostgreSQL cluster
    // for people: in alerts, routing and inhibitions. Replicas merge and
    // databases are counted by the identity each exporter reads from its
    // database (orpycamcp_database_identity_info), never by this label; one
    // value over two databases is an alert and makes the totals absent. Not
    // `cluster`: kubernetes-mixin and node-mixin name the Kubernetes cluster so.
    clusterLabel: 'orpycamcp_cluster',
    // How long a database that reported its identity is remembered: one that
    // reported within this window and reports nothing now (its targets gone
    // from service discovery) makes every platform total absent and fires
    // OrpycamcpDatabaseVanished. Longer than any outage you want noticed.
    databaseMemory: '6h',
    // Databases retired on purpose, by database_identity ("<system
    // identifier>/<database OID>", as OrpycamcpDatabaseVanished names them):
    // no longer expected. Remove an entry once databaseMemory has passed.
    retiredDatabases: [],
    // Copies of one database (a primary, its standbys, each read by its own
    // exporters) merge by the copy whose data is the newest
    // (orpycamcp_signal_data_timestamp_seconds: the measurement's start, less
    // a standby's replay lag), never by the largest value. A copy whose data
    // is older than its signal's own TTL (orpycamcp_signal_ttl_seconds) plus
    // this never counts: a database with no younger copy is unmeasured for
    // the totals (absent, never stale). Above the scrape interval + the
    // exporter's --deadline (15 s + 10 s by default) and any signal's own
    // deadline: a 5-minute backlog's data may be 5 minutes + this old.
    dataMaxAge: '90s',
    // The exporter's --ttl: the TTL of the signals of an exporter that
    // publishes no orpycamcp_signal_ttl_seconds (one older than this mixin).
    exporterTtl: '30s',
    // The scrape interval of the exporter's job. A copy counts only while its
    // data time was scraped within samplesFreshScrapes intervals (its sample's
    // own timestamp): a dead HA Prometheus's last remote-written samples and
    // federated samples of a target that is gone carry no staleness marker and
    // would stay usable for the 5-minute lookback; they count as absent, as a
    // failed scrape does. Add the federation interval (or remote-write delay)
    // to the interval where samples travel.
    scrapeInterval: '15s',
    samplesFreshScrapes: 3,
    // Labels a highly available Prometheus pair adds to tell its servers apart
    // (external labels, kept by remote write and federation): the alerts about
    // one target drop them, so an HA pair pages once per target, not once per
    // server. The recording rules merge them away already.
    haLabels: ['replica', 'prometheus_replica'],

    // %s is the lower-cased alert name: the anchor of its runbook section.
    runbookUrlPattern: 'https://github.com/orpycamcp/orpycamcp-exporter/blob/main/docs/runbook.md#%s',

    // How long a value alert keeps firing once its value series are gone:
    // an unmeasured signal never reads as resolved.
    valueKeepFiringFor: '10m',
    // A platform total also needs the clusters known now to have been known
    // this long ago, so a cluster not scraped yet after a restart is not missed.
    totalsWarmUp: '1m',

    // Thresholds: ages are durations (5m, 24h, 31d), counts are numbers.
    exporterAbsentFor: '5m',
    exporterDownFor: '5m',
    exporterReplicaDownFor: '10m',
    exporterNoSignalsFor: '5m',
    signalUnmeasuredFor: '5m',
    // Every exporter of one cluster unable to read the streams while another
    // cluster's read them, this long: OrpycamcpStreamsUnreadableFromCluster.
    streamsUnreadableFromClusterFor: '15m',
    // A signal's last complete measurement older than its own TTL plus this: OrpycamcpSignalStale.
    signalStaleAge: '30m',
    signalStaleFor: '5m',
    databaseReplayLagAge: '5m',
    databaseReplayLagFor: '10m',
    redisReplicaLagAge: '30s',
    redisReplicaLagFor: '5m',
    platformTotalUnknownFor: '5m',
    databaseVanishedFor: '5m',
    databaseUnidentifiedFor: '10m',
    clusterLabelConflictFor: '5m',
    dlqPendingFor: '1h',
    dlqOldestPendingAge: '24h',
    dlqOldestPendingFor: '5m',
    dlqPendingAgeUnknownFor: '10m',
    preservationExhaustedFor: '5m',
    auditChainUndeclaredBreaksFor: '1m',
    auditChainVerificationFailedFor: '1m',
    auditChainVerificationAge: '26h',
    auditChainVerificationStaleFor: '5m',
    auditChainNeverVerifiedFor: '1h',
    // The platform's migration lock (ADR-041 C19): a migrator retries
    // pg_try_advisory_lock up to MIGRATIONS_LOCK_TIMEOUT_S, then exits 1 and
    // its service does not start (fail-closed). OrpycamcpMigrationLockHeldTooLong
    // fires once the lock has been held without a break for
    // migrationLockHeldFor: a migrator that began waiting when it was taken
    // then has the rest of the timeout left.
    migrationLockTimeout: '600s',
    migrationLockHeldFor: '5m',
    // The platform's daily purges (ADR-021 MVP-3 and MVP-1): terminal dead
    // letters (resolved, discarded) deleted deadLetterPurgeHorizon after their
    // resolved_at, per origin_group (pending never); the notification dedup
    // table's rows dedupPurgeHorizon after their processed_at; each every
    // purgeInterval. OrpycamcpDeadLetterPurgeStopped and
    // OrpycamcpDedupPurgeStopped fire when the oldest row left is older than
    // its horizon plus two intervals (one run, and one more postponed by a
    // worker's restart: the platform's first run comes one interval after start).
    deadLetterPurgeHorizon: '90d',
    dedupPurgeHorizon: '7d',
    purgeInterval: '1d',
    purgeStoppedFor: '1h',
    // The platform's reclaim sweep (ADR-021, the seeds' defaults): every
    // reclaimInterval each consumer group claims its pending entries idle for
    // reclaimMinIdle and retries them; the one delivered maxDeliveries times is
    // dead-lettered (XADD to its dead-letter stream, on_dead_letter, XACK). The
    // windows the alerts, the runbook and the dashboard state derive from these
    // (lib.reclaim): an entry is dead-lettered 4 to 7.5 minutes after its first
    // delivery with these values.
    reclaimInterval: '30s',
    reclaimMinIdle: '60s',
    maxDeliveries: 5,
    // OrpycamcpStreamPendingTooOld: the oldest pending entry is older than this
    // and has been the group's oldest for as long (more than the dead-letter
    // window: the sweep would have cleared it); healthy catch-up moves it on.
    streamPendingAge: '10m',
    streamPendingTooOldFor: '5m',
    streamPendingAgeUnknownFor: '10m',
    // Entries waiting and nobody reading: no consumer, or none seen for this long.
    streamNotConsumedIdle: '5m',
    streamNotConsumedFor: '10m',
    // A group's undelivered count unknown (absent while its other series are
    // present) with its consumers idle as above, this long.
    streamUndeliveredUnknownFor: '30m',
    deadletterStreamGrowthWindow: '15m',
    // The dead-letter streams' trim (ADR-021 MVP-2): `XTRIM <stream> MINID ~
    // <now - horizon>` every interval. OrpycamcpDeadletterStreamEntriesTooOld
    // fires when the 101st entry is older than the horizon plus two intervals
    // (one run, and one more postponed by a worker's restart).
    deadletterTrimHorizon: '30d',
    deadletterTrimInterval: '1d',
    deadletterStreamEntriesTooOldFor: '1h',
    backlogPendingFor: '1h',
    backlogOldestPendingAge: '24h',
    backlogOldestPendingFor: '5m',
    backlogPendingAgeUnknownFor: '10m',
    // A backlog whose `oldest` reported nothing for this long has none to report.
    backlogOldestLookback: '1d',
    // Arrivals above the threshold declared per backlog and window (the
    // declarations file's arrivals.alert_above, exported by the exporter) this long.
    backlogArrivalsHighFor: '5m',
    // Pending items higher than one step earlier at each of the last N steps.
    backlogGrowthStep: '15m',
    backlogGrowthSteps: 4,

    // The Grafana dashboard.
    dashboardUid: 'orpycamcp-overview',
    dashboardTitle: 'orpycamcp exporter overview',
    dashboardTags: ['orpycamcp'],
    dashboardRefresh: '1m',
    // The data source variable offers the data sources of this type whose
    // name matches the regex ('' = all of them).
    datasourceType: 'prometheus',
    datasourceRegex: '',
  },
}

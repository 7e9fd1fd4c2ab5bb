// The families the rules aggregate, with their own labels as declared in the
// exporter's registry (registry/families.py, registry/backlogs.py); the test
// suite checks both agree. A replica merge keeps exactly these labels.
{
  signal_measured: ['signal'],
  signal_last_success_timestamp_seconds: ['signal'],
  signal_ttl_seconds: ['signal'],
  database_replay_lag_seconds: [],
  redis_replica_lag_seconds: [],
  dlq_pending_events: ['origin_group'],
  dlq_oldest_pending_timestamp_seconds: ['origin_group'],
  preservation_exhausted_artifacts: ['artifact', 'phase'],
  audit_chain_breaks: [],
  audit_chain_declared_breaks: [],
  audit_chain_verification_ok: [],
  audit_chain_last_verification_timestamp_seconds: [],
  migration_lock_held: [],
  housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds: ['origin_group'],
  housekeeping_notification_dedup_oldest_processed_timestamp_seconds: [],
  stream_pending_messages: ['stream', 'group'],
  stream_oldest_pending_timestamp_seconds: ['stream', 'group'],
  stream_oldest_pending_deliveries: ['stream', 'group'],
  stream_undelivered_entries: ['stream', 'group'],
  stream_consumers: ['stream', 'group'],
  stream_consumer_idle_seconds: ['stream', 'group'],
  deadletter_stream_entries: ['stream'],
  deadletter_stream_oldest_entry_timestamp_seconds: ['stream'],
  deadletter_stream_entry_101_timestamp_seconds: ['stream'],
  // Declared backlogs: `group` only for a backlog declared with groups.
  backlog_pending_items: ['backlog', 'group'],
  backlog_oldest_pending_timestamp_seconds: ['backlog', 'group'],
  backlog_arrivals: ['backlog', 'group', 'window'],
  backlog_arrivals_threshold: ['backlog', 'window'],
}

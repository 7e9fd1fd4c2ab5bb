// An example Alertmanager configuration for this deployment's alerts, from the
// same `_config` (rendered to alerts/alertmanager.example.yml): routes,
// grouping and inhibitions scoped by the labels the selector fixes and the
// database identity, so that one database's outage inhibits that database's
// alerts only. An alert about one database carries its database_identity and
// no cluster label (display only, in its texts: a relabel rename of it neither
// re-pages nor resolves); the cluster label keys only what is not about one
// identified database (a target, a cluster label value, a target that never
// reported its identity). OrpycamcpPlatformTotalUnknown and the database
// alerts are never inhibited: they say what the platform totals miss.
local lib = import 'lib.libsonnet';

{
  local c = $._config,
  local keys = lib.keyLabels(c),
  local cl = c.clusterLabel,
  local id = lib.identityLabel,
  // This deployment's alerts: the `=` matchers of the selector, as Alertmanager matchers.
  local own = [m.text for m in lib.matchers(c.orpycamcpSelector) if m.op == '='],
  local neverInhibited = 'orpycamcp_role!~"exporter_down|total_unknown|database"',

  alertmanagerConfig+:: {
    global: { resolve_timeout: '5m' },
    route: {
      receiver: 'default',
      group_by: ['alertname'] + keys + [id, cl, 'signal'],
      group_wait: '30s',
      group_interval: '5m',
      repeat_interval: '4h',
      routes: [
        {
          matchers: ['alertname=~"Orpycamcp.+"'] + own,
          receiver: 'orpycamcp-warning',
          routes: [
            { matchers: ['severity="critical"'], receiver: 'orpycamcp-critical', repeat_interval: '1h' },
            { matchers: ['severity="warning"'], receiver: 'orpycamcp-warning' },
            { matchers: ['severity="info"'], receiver: 'orpycamcp-info', repeat_interval: '24h' },
          ],
        },
      ],
    },
    inhibit_rules: [
      // While a signal cannot be measured its value series are absent: its value
      // alerts are resolved or meaningless, and the unmeasured alert says why.
      // The same database only (a bus alert: the same deployment, no database).
      {
        source_matchers: ['alertname="OrpycamcpSignalUnmeasured"', 'orpycamcp_role="unmeasured"'] + own,
        target_matchers: ['orpycamcp_role="value"'] + own,
        equal: keys + [id, cl, 'signal'],
      },
      // While a database's exporters are all down nothing they report can be
      // trusted: that database's other alerts are suppressed, never another's
      // (targets that never reported an identity: by their cluster label).
      {
        source_matchers: ['alertname="OrpycamcpExporterDown"', 'orpycamcp_role="exporter_down"'] + own,
        target_matchers: ['alertname=~"Orpycamcp.+"', neverInhibited] + own,
        equal: keys + [id, cl],
      },
      // While a database is not scraped at all (its targets left service
      // discovery, its regional server stopped) its values are unknown: its
      // value alerts, held for valueKeepFiringFor, are suppressed, and their
      // end is never sent as "resolved" while it is gone.
      {
        source_matchers: ['alertname="OrpycamcpDatabaseVanished"', 'orpycamcp_role="database"'] + own,
        target_matchers: ['orpycamcp_role="value"'] + own,
        equal: keys + [id],
      },
      // No target of the deployment at all (absent() carries the selector's
      // labels only): every alert of the deployment, whatever its cluster.
      {
        source_matchers: ['alertname="OrpycamcpExporterAbsent"', 'orpycamcp_role="exporter_down"'] + own,
        target_matchers: ['alertname=~"Orpycamcp.+"', neverInhibited] + own,
        equal: keys,
      },
    ],
    receivers: [
      { name: 'default', webhook_configs: [{ url: 'http://127.0.0.1:5001/default' }] },
      { name: 'orpycamcp-critical', webhook_configs: [{ url: 'http://127.0.0.1:5001/orpycamcp/critical', send_resolved: true }] },
      { name: 'orpycamcp-warning', webhook_configs: [{ url: 'http://127.0.0.1:5001/orpycamcp/warning', send_resolved: true }] },
      { name: 'orpycamcp-info', webhook_configs: [{ url: 'http://127.0.0.1:5001/orpycamcp/info', send_resolved: false }] },
    ],
  },
}

// Grafana dashboards, by file name.
{
  grafanaDashboards+:: {
    'orpycamcp-overview.json': (import 'orpycamcp-overview.libsonnet')($._config),
  },
}

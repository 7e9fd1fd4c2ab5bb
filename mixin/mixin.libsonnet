// The orpycamcp-exporter monitoring mixin: recording rules, alerts, the
// Grafana dashboard and an example Alertmanager configuration
// (alertmanagerConfig), parameterised by `_config` (config.libsonnet).
// Installed with jsonnet-bundler: jb install github.com/orpycamcp/orpycamcp-exporter/mixin@main
//
//   local orpycamcp = (import 'github.com/orpycamcp/orpycamcp-exporter/mixin/mixin.libsonnet') + {
//     _config+:: { orpycamcpSelector: 'job="orpycamcp"', clusterLabel: 'k8s_cluster' },
//   };
//   { rules: orpycamcp.prometheusRules, alerts: orpycamcp.prometheusAlerts, dashboards: orpycamcp.grafanaDashboards }
(import 'config.libsonnet')
+ (import 'rules.libsonnet')
+ (import 'alerts.libsonnet')
+ (import 'alertmanager.libsonnet')
+ (import 'dashboards/dashboards.libsonnet')

// The overview dashboard: signal health, platform totals and every family,
// per cluster (replicas merged by the cluster label) and per replica where a
// replica's own state matters. Queries are PromQL strings formatted with `q`.
function(c)
  local q = { cluster: c.clusterLabel, selector: c.orpycamcpSelector };
  local runbook = std.split(c.runbookUrlPattern, '#')[0];
  local datasource = { type: "prometheus", uid: "${datasource}" };
  local target(expr, legend, refId='A') = {
    datasource: datasource,
    expr: expr,
    legendFormat: legend,
    refId: refId,
    range: true,
    instant: false,
    editorMode: "code",
  };
  // A time series of the exporter process itself, per replica.
  local processPanel(id, title, description, unit, x, targets) = {
    id: id,
    type: "timeseries",
    title: title,
    description: description,
    datasource: datasource,
    gridPos: { x: x, y: 94, w: 6, h: 6 },
    fieldConfig: {
      defaults: {
        unit: unit,
        mappings: [],
        custom: {
          drawStyle: "line",
          lineWidth: 1,
          fillOpacity: 0,
          showPoints: "never",
          spanNulls: false,
          insertNulls: false,
          axisSoftMin: 0,
        },
      },
      overrides: [],
    },
    options: {
      legend: { displayMode: "list", placement: "bottom", showLegend: true },
      tooltip: { mode: "multi", sort: "desc" },
    },
    targets: targets,
  };
  local perReplica(family) =
    "max by (%(cluster)s, instance) (%(family)s{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % (q { family: family });
{
  uid: c.dashboardUid,
  title: c.dashboardTitle,
  description: "Health of the orpycamcp signals (dlq, preservation, audit chain, streams) reported by orpycamcp-exporter. Unknown (unmeasured or absent) is always shown distinctly from 0.",
  tags: c.dashboardTags,
  editable: false,
  graphTooltip: 1,
  id: null,
  version: 1,
  schemaVersion: 39,
  time: {
    from: "now-6h",
    to: "now",
  },
  timepicker: {},
  timezone: "",
  refresh: c.dashboardRefresh,
  fiscalYearStartMonth: 0,
  liveNow: false,
  weekStart: "",
  links: [
    {
      title: "Runbook",
      type: "link",
      icon: "doc",
      targetBlank: true,
      tooltip: "orpycamcp-exporter alert runbook",
      url: runbook,
      asDropdown: false,
      includeVars: false,
      keepTime: false,
      tags: [],
    },
  ],
  annotations: {
    list: [
      {
        builtIn: 1,
        datasource: {
          type: "grafana",
          uid: "-- Grafana --",
        },
        enable: true,
        hide: true,
        iconColor: "rgba(0, 211, 255, 1)",
        name: "Annotations & Alerts",
        type: "dashboard",
      },
    ],
  },
  templating: {
    list: [
      {
        type: "datasource",
        name: "datasource",
        label: "Data source",
        query: c.datasourceType,
        current: {},
        hide: 0,
        includeAll: false,
        multi: false,
        options: [],
        refresh: 1,
        regex: c.datasourceRegex,
        skipUrlSync: false,
      },
      {
        type: "query",
        name: "job",
        label: "Job",
        datasource: {
          type: "prometheus",
          uid: "${datasource}",
        },
        definition: "label_values(orpycamcp_exporter_build_info{%(selector)s}, job)" % q,
        query: {
          query: "label_values(orpycamcp_exporter_build_info{%(selector)s}, job)" % q,
          refId: "PrometheusVariableQueryEditor-VariableQuery",
          qryType: 1,
        },
        multi: true,
        includeAll: true,
        allValue: ".+",
        current: {
          selected: true,
          text: ["All"],
          value: ["$__all"],
        },
        options: [],
        refresh: 2,
        regex: "",
        sort: 1,
        hide: 0,
        skipUrlSync: false,
      },
      {
        type: "query",
        name: "cluster",
        label: "Cluster",
        datasource: {
          type: "prometheus",
          uid: "${datasource}",
        },
        definition: "label_values(orpycamcp_exporter_build_info{job=~\"$job\"}, %(cluster)s)" % q,
        query: {
          query: "label_values(orpycamcp_exporter_build_info{job=~\"$job\"}, %(cluster)s)" % q,
          refId: "PrometheusVariableQueryEditor-VariableQuery",
          qryType: 1,
        },
        multi: true,
        includeAll: true,
        allValue: ".*",
        current: {
          selected: true,
          text: ["All"],
          value: ["$__all"],
        },
        options: [],
        refresh: 2,
        regex: "",
        sort: 1,
        hide: 0,
        skipUrlSync: false,
      },
      {
        type: "query",
        name: "instance",
        label: "Instance",
        datasource: {
          type: "prometheus",
          uid: "${datasource}",
        },
        definition: "label_values(orpycamcp_exporter_build_info{job=~\"$job\", %(cluster)s=~\"$cluster\"}, instance)" % q,
        query: {
          query: "label_values(orpycamcp_exporter_build_info{job=~\"$job\", %(cluster)s=~\"$cluster\"}, instance)" % q,
          refId: "PrometheusVariableQueryEditor-VariableQuery",
          qryType: 1,
        },
        multi: true,
        includeAll: true,
        allValue: ".+",
        current: {
          selected: true,
          text: ["All"],
          value: ["$__all"],
        },
        options: [],
        refresh: 2,
        regex: "",
        sort: 1,
        hide: 0,
        skipUrlSync: false,
      },
      {
        type: "query",
        name: "backlog",
        label: "Backlog",
        datasource: {
          type: "prometheus",
          uid: "${datasource}",
        },
        definition: "label_values(orpycamcp_backlog_pending_items{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}, backlog)" % q,
        query: {
          query: "label_values(orpycamcp_backlog_pending_items{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}, backlog)" % q,
          refId: "PrometheusVariableQueryEditor-VariableQuery",
          qryType: 1,
        },
        multi: true,
        includeAll: true,
        current: {
          selected: true,
          text: ["All"],
          value: ["$__all"],
        },
        options: [],
        refresh: 2,
        regex: "",
        sort: 1,
        hide: 0,
        skipUrlSync: false,
      },
    ],
  },
  panels: [
    {
      id: 1,
      type: "stat",
      title: "Signal measured",
      description: "Whether each signal's last measurement was complete (orpycamcp_signal_measured, max over the replicas of each cluster). UNMEASURED (0) means the signal could not be verified and its value series are absent: its state is unknown, not zero. A signal without any series (e.g. streams when Redis is not configured) is not shown; 'unknown' means no series at all.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 0,
        w: 6,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [
            {
              type: "value",
              options: {
                "1": {
                  text: "measured",
                  color: "green",
                  index: 0,
                },
                "0": {
                  text: "UNMEASURED",
                  color: "red",
                  index: 1,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 2,
                },
              },
            },
          ],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "red",
                value: null,
              },
              {
                color: "green",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, signal) (orpycamcp_signal_measured{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{signal}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 37,
      type: "table",
      title: "Why unmeasured",
      description: "For each signal unmeasured now, the reason the exporter gives (orpycamcp_signal_failure_info, per cluster): the same words as its logs, diagnose and the runbook's reasons table. Empty while every signal is measured.",
      datasource: datasource,
      gridPos: { x: 6, y: 0, w: 6, h: 5 },
      fieldConfig: {
        defaults: {
          unit: "none",
          noValue: "every signal measured",
          mappings: [],
        },
        overrides: [],
      },
      options: { showHeader: true, cellHeight: "sm" },
      transformations: [
        { id: "organize", options: { excludeByName: { Time: true, Value: true } } },
      ],
      targets: [
        target("max by (%(cluster)s, signal, reason) (orpycamcp_signal_failure_info{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q, "__auto") {
          range: false,
          instant: true,
          format: "table",
        },
      ],
    },
    {
      id: 2,
      type: "stat",
      title: "Age of last complete measurement",
      description: "Time since the last complete measurement of each signal (orpycamcp_signal_last_success_timestamp_seconds, freshest replica). 'never' means the signal is reported but has never been measured completely. Alert OrpycamcpSignalStale fires above 30m.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 0,
        w: 6,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [
            {
              type: "special",
              options: {
                match: "nan",
                result: {
                  text: "never",
                  color: "red",
                  index: 0,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 1,
                },
              },
            },
          ],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "yellow",
                value: 300,
              },
              {
                color: "red",
                value: 1800,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "time() - max by (%(cluster)s, signal) (orpycamcp_signal_last_success_timestamp_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}) or max by (%(cluster)s, signal) (orpycamcp_signal_measured{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}) * NaN" % q,
          legendFormat: "{{%(cluster)s}} {{signal}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 3,
      type: "stat",
      title: "Exporter targets up",
      description: "Scrape health of each exporter target (up). DOWN targets report nothing; with every target down no signal is monitored.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 18,
        y: 0,
        w: 3,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [
            {
              type: "value",
              options: {
                "1": {
                  text: "up",
                  color: "green",
                  index: 0,
                },
                "0": {
                  text: "DOWN",
                  color: "red",
                  index: 1,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 2,
                },
              },
            },
          ],
          noValue: "no target",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "red",
                value: null,
              },
              {
                color: "green",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "up{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}" % q,
          legendFormat: "{{%(cluster)s}} {{instance}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 4,
      type: "table",
      title: "Exporter version",
      description: "Version reported by each exporter target (orpycamcp_exporter_build_info).",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 21,
        y: 0,
        w: 3,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [],
          noValue: "no target",
        },
        overrides: [],
      },
      options: {
        showHeader: true,
        cellHeight: "sm",
        footer: {
          show: false,
          reducer: ["sum"],
          fields: "",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, instance, version) (orpycamcp_exporter_build_info{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "__auto",
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
          format: "table",
        },
      ],
      transformations: [
        {
          id: "organize",
          options: {
            excludeByName: {
              Time: true,
              Value: true,
            },
            indexByName: {},
            renameByName: {},
          },
        },
      ],
    },
    {
      id: 19,
      type: "stat",
      title: "Platform totals: clusters measured per signal",
      description: "Per signal, how many clusters have a replica up that measured it (orpycamcp:signal_measured_clusters:count), beside every cluster known for the job, up or down (orpycamcp:clusters:count). A per-cluster signal's platform totals exist only when the two are equal; otherwise they are unknown and OrpycamcpPlatformTotalUnknown fires. Not filtered by the Cluster variable: a total is over every cluster.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 5,
        w: 8,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 0,
                },
              },
            },
          ],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "blue",
                value: null,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          refId: "A",
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "orpycamcp:clusters:count{job=~\"$job\"}",
          legendFormat: "known clusters",
          range: false,
          instant: true,
        },
        {
          refId: "B",
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "orpycamcp:signal_measured_clusters:count{job=~\"$job\"}",
          legendFormat: "{{signal}}",
          range: false,
          instant: true,
        },
      ],
    },
    {
      id: 20,
      type: "stat",
      title: "Platform total: DLQ pending events",
      description: "Dead-lettered events pending over the whole platform, per origin group: the sum over clusters of each cluster's value (orpycamcp:dlq_pending_events:total). 'unknown' means at least one cluster did not measure dlq (exporter down or signal unmeasured): the total is never a partial sum. Not filtered by the Cluster variable.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 8,
        y: 5,
        w: 8,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 0,
                },
              },
            },
          ],
          noValue: "unknown (a cluster is not measured)",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "orange",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          refId: "A",
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "orpycamcp:dlq_pending_events:total{job=~\"$job\"}",
          legendFormat: "{{origin_group}}",
          range: false,
          instant: true,
        },
      ],
    },
    {
      id: 21,
      type: "stat",
      title: "Platform total: oldest pending DLQ event age",
      description: "Age of the oldest pending dead-lettered event over the whole platform, per origin group (orpycamcp:dlq_oldest_pending_timestamp_seconds:total, the minimum over clusters). 'none pending' means every cluster measured dlq and none has a pending event; 'unknown' means a cluster did not measure dlq. Alert OrpycamcpDlqOldestPendingTooOld fires per cluster above 24h.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 16,
        y: 5,
        w: 8,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [
            {
              type: "special",
              options: {
                match: "nan",
                result: {
                  text: "none pending",
                  color: "green",
                  index: 0,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 1,
                },
              },
            },
          ],
          noValue: "unknown (a cluster is not measured)",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "yellow",
                value: 3600,
              },
              {
                color: "red",
                value: 86400,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          refId: "A",
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "time() - orpycamcp:dlq_oldest_pending_timestamp_seconds:total{job=~\"$job\"} or on (job) orpycamcp:signal_complete:count{job=~\"$job\", signal=\"dlq\"} * NaN",
          legendFormat: "{{origin_group}}",
          range: false,
          instant: true,
        },
      ],
    },
    {
      id: 22,
      type: "timeseries",
      title: "Platform total: DLQ pending events over time",
      description: "orpycamcp:dlq_pending_events:total per origin group: the sum over every cluster, recorded only while every cluster measured dlq. Gaps mean the total was unknown (a cluster down or unmeasured), never zero. The per-cluster series are in 'DLQ pending events by origin group' below.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 10,
        w: 12,
        h: 9,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          refId: "A",
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "orpycamcp:dlq_pending_events:total{job=~\"$job\"}",
          legendFormat: "{{origin_group}}",
          range: true,
          instant: false,
        },
      ],
    },
    {
      id: 23,
      type: "table",
      title: "Platform total: exhausted preservation artifacts (artifact × phase)",
      description: "Preservation artifacts whose retries are exhausted over the whole platform (orpycamcp:preservation_exhausted_artifacts:total, the sum over clusters), by artifact (rows) and phase (columns). Empty means unknown: at least one cluster did not measure preservation. Not filtered by the Cluster variable.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 10,
        w: 12,
        h: 9,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          noValue: "unknown (a cluster is not measured)",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "red",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
          custom: {
            align: "auto",
            cellOptions: {
              type: "color-text",
            },
            inspect: false,
          },
        },
        overrides: [],
      },
      options: {
        showHeader: true,
        cellHeight: "sm",
        footer: {
          show: false,
          reducer: ["sum"],
          fields: "",
        },
      },
      targets: [
        {
          refId: "A",
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "orpycamcp:preservation_exhausted_artifacts:total{job=~\"$job\"}",
          legendFormat: "__auto",
          range: false,
          instant: true,
          format: "table",
        },
      ],
      transformations: [
        {
          id: "groupingToMatrix",
          options: {
            columnField: "phase",
            rowField: "artifact",
            valueField: "Value",
            emptyValue: "null",
          },
        },
      ],
    },
    {
      id: 24,
      type: "timeseries",
      title: "Platform total: stream pending messages (PEL)",
      description: "Messages in each consumer group's pending entries list over the platform (orpycamcp:stream_pending_messages:total). Redis Streams are the platform's one event bus: every cluster's exporter reads the same streams, so this is the max over the clusters that measured it, never a sum. Gaps mean unknown (no cluster measured streams), never zero.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 19,
        w: 24,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          refId: "A",
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "orpycamcp:stream_pending_messages:total{job=~\"$job\"}",
          legendFormat: "{{stream}} / {{group}}",
          range: true,
          instant: false,
        },
      ],
    },
    {
      id: 5,
      type: "state-timeline",
      title: "Signal measured over time",
      description: "History of orpycamcp_signal_measured per signal (max over the replicas of each cluster). Gaps mean no series at all (exporter down or signal not reported), shown distinctly from UNMEASURED.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 24,
        w: 12,
        h: 6,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [
            {
              type: "value",
              options: {
                "1": {
                  text: "measured",
                  color: "green",
                  index: 0,
                },
                "0": {
                  text: "UNMEASURED",
                  color: "red",
                  index: 1,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 2,
                },
              },
            },
          ],
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "red",
                value: null,
              },
              {
                color: "green",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
          custom: {
            fillOpacity: 80,
            lineWidth: 0,
            spanNulls: false,
            insertNulls: false,
          },
        },
        overrides: [],
      },
      options: {
        mergeValues: true,
        showValue: "auto",
        alignValue: "left",
        rowHeight: 0.9,
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "single",
          sort: "none",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, signal) (orpycamcp_signal_measured{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{signal}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 6,
      type: "timeseries",
      title: "Measurement duration",
      description: "How long the last measurement of each signal took, successful or not (orpycamcp_signal_measurement_duration_seconds, max over the replicas of each cluster).",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 24,
        w: 12,
        h: 6,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, signal) (orpycamcp_signal_measurement_duration_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{signal}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 7,
      type: "timeseries",
      title: "DLQ pending events by origin group",
      description: "Dead-lettered events pending an administrator, per origin group (orpycamcp_dlq_pending_events, max over the replicas of each cluster). Gaps mean the dlq signal was unmeasured: unknown, not zero. Alert OrpycamcpDlqPendingTooLong fires after 1h above 0.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 30,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, origin_group) (orpycamcp_dlq_pending_events{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{origin_group}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 8,
      type: "timeseries",
      title: "DLQ oldest pending event age by origin group",
      description: "Age of the oldest pending dead-lettered event per origin group (from orpycamcp_dlq_oldest_pending_timestamp_seconds). No line means nothing is pending (or dlq unmeasured). Alert OrpycamcpDlqOldestPendingTooOld fires above 24h.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 30,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [],
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "red",
                value: 86400,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
            thresholdsStyle: {
              mode: "line",
            },
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "time() - max by (%(cluster)s, origin_group) (orpycamcp_dlq_oldest_pending_timestamp_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{origin_group}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 9,
      type: "table",
      title: "Exhausted preservation artifacts (artifact × phase)",
      description: "Preservation artifacts whose retries are exhausted, by cluster and artifact (rows) and phase (columns) (orpycamcp_preservation_exhausted_artifacts, max over the replicas of each cluster). Empty cells mean unmeasured, not zero. Alert OrpycamcpPreservationArtifactsExhausted fires on any value above 0.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 38,
        w: 14,
        h: 9,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          noValue: "unknown (preservation unmeasured)",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "red",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
          custom: {
            align: "auto",
            cellOptions: {
              type: "color-text",
            },
            inspect: false,
          },
        },
        overrides: [],
      },
      options: {
        showHeader: true,
        cellHeight: "sm",
        footer: {
          show: false,
          reducer: ["sum"],
          fields: "",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "label_join(max by (%(cluster)s, artifact, phase) (orpycamcp_preservation_exhausted_artifacts{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}), \"cluster_artifact\", \" / \", \"%(cluster)s\", \"artifact\")" % q,
          legendFormat: "__auto",
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
          format: "table",
        },
      ],
      transformations: [
        {
          id: "groupingToMatrix",
          options: {
            columnField: "phase",
            rowField: "cluster_artifact",
            valueField: "Value",
            emptyValue: "null",
          },
        },
      ],
    },
    {
      id: 10,
      type: "timeseries",
      title: "Exhausted preservation artifacts over time",
      description: "Artifact/phase pairs with at least one exhausted artifact (orpycamcp_preservation_exhausted_artifacts > 0, max over the replicas of each cluster). Pairs at 0 are hidden.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 14,
        y: 38,
        w: 10,
        h: 9,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, artifact, phase) (orpycamcp_preservation_exhausted_artifacts{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}) > 0" % q,
          legendFormat: "{{%(cluster)s}} {{artifact}} / {{phase}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 11,
      type: "stat",
      title: "Audit-chain verification",
      description: "Result of the last complete audit-chain verification run (orpycamcp_audit_chain_verification_ok). 'never verified' means the signal is measured but no run was ever recorded; 'unknown' means audit_chain is unmeasured.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 47,
        w: 6,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [
            {
              type: "value",
              options: {
                "1": {
                  text: "OK",
                  color: "green",
                  index: 0,
                },
                "0": {
                  text: "FAILED",
                  color: "red",
                  index: 1,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "nan",
                result: {
                  text: "never verified",
                  color: "orange",
                  index: 2,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 3,
                },
              },
            },
          ],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "red",
                value: null,
              },
              {
                color: "green",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (job, %(cluster)s) (orpycamcp_audit_chain_verification_ok{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}) or max by (job, %(cluster)s) (orpycamcp_signal_measured{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", signal=\"audit_chain\"} == 1) * NaN" % q,
          legendFormat: "{{job}} {{%(cluster)s}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 12,
      type: "stat",
      title: "Audit-chain breaks",
      description: "Breaks found by the last complete verification run, breaks already declared, and the difference (orpycamcp_audit_chain_breaks, orpycamcp_audit_chain_declared_breaks). Undeclared breaks above 0 fire OrpycamcpAuditChainUndeclaredBreaks.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 6,
        y: 47,
        w: 6,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "text",
                value: null,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [
          {
            matcher: {
              id: "byName",
              options: "undeclared",
            },
            properties: [
              {
                id: "thresholds",
                value: {
                  mode: "absolute",
                  steps: [
                    {
                      color: "green",
                      value: null,
                    },
                    {
                      color: "red",
                      value: 1,
                    },
                  ],
                },
              },
              {
                id: "color",
                value: {
                  mode: "thresholds",
                },
              },
            ],
          },
        ],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "value",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (job, %(cluster)s) (orpycamcp_audit_chain_breaks{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} found" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (job, %(cluster)s) (orpycamcp_audit_chain_declared_breaks{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} declared" % q,
          refId: "B",
          range: false,
          instant: true,
          editorMode: "code",
        },
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (job, %(cluster)s) (orpycamcp_audit_chain_breaks{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}) - max by (job, %(cluster)s) (orpycamcp_audit_chain_declared_breaks{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} undeclared" % q,
          refId: "C",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 13,
      type: "stat",
      title: "Age of last audit-chain verification",
      description: "Time since the last complete audit-chain verification run finished (orpycamcp_audit_chain_last_verification_timestamp_seconds). 'never' means the signal is measured but no run was ever recorded. Alert OrpycamcpAuditChainVerificationStale fires above 26h.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 47,
        w: 6,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [
            {
              type: "special",
              options: {
                match: "nan",
                result: {
                  text: "never",
                  color: "orange",
                  index: 0,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 1,
                },
              },
            },
          ],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "yellow",
                value: 86400,
              },
              {
                color: "red",
                value: 93600,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "time() - max by (job, %(cluster)s) (orpycamcp_audit_chain_last_verification_timestamp_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}) or max by (job, %(cluster)s) (orpycamcp_signal_measured{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", signal=\"audit_chain\"} == 1) * NaN" % q,
          legendFormat: "{{job}} {{%(cluster)s}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 14,
      type: "state-timeline",
      title: "Audit-chain verification over time",
      description: "History of orpycamcp_audit_chain_verification_ok. Gaps mean never verified or audit_chain unmeasured.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 18,
        y: 47,
        w: 6,
        h: 5,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [
            {
              type: "value",
              options: {
                "1": {
                  text: "OK",
                  color: "green",
                  index: 0,
                },
                "0": {
                  text: "FAILED",
                  color: "red",
                  index: 1,
                },
              },
            },
          ],
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "red",
                value: null,
              },
              {
                color: "green",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
          custom: {
            fillOpacity: 80,
            lineWidth: 0,
            spanNulls: false,
            insertNulls: false,
          },
        },
        overrides: [],
      },
      options: {
        mergeValues: true,
        showValue: "auto",
        alignValue: "left",
        rowHeight: 0.9,
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: false,
        },
        tooltip: {
          mode: "single",
          sort: "none",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (job, %(cluster)s) (orpycamcp_audit_chain_verification_ok{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{job}} {{%(cluster)s}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 15,
      type: "timeseries",
      title: "Consumer group pending messages (PEL)",
      description: "Messages delivered to a consumer group but not acknowledged, per stream and group (orpycamcp_stream_pending_messages, max over the replicas of each cluster). Only present when Redis is configured.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 52,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, stream, group) (orpycamcp_stream_pending_messages{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{stream}} / {{group}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 16,
      type: "timeseries",
      title: "Oldest pending message age",
      description: "Age of the oldest pending message per stream and group (from orpycamcp_stream_oldest_pending_timestamp_seconds). No line means the PEL is empty. The reclaim sweep clears a stuck message within about 2.5 minutes; OrpycamcpStreamPendingTooOld fires above 10m.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 52,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [],
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "red",
                value: 600,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
            thresholdsStyle: {
              mode: "line",
            },
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "time() - max by (%(cluster)s, stream, group) (orpycamcp_stream_oldest_pending_timestamp_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{stream}} / {{group}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 17,
      type: "timeseries",
      title: "Dead-letter stream entries",
      description: "Entries in each dead-letter stream (orpycamcp_deadletter_stream_entries, max over the replicas of each cluster). Growth fires OrpycamcpDeadletterStreamGrowing.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 60,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, stream) (orpycamcp_deadletter_stream_entries{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{stream}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 18,
      type: "stat",
      title: "Oldest dead-letter entry age",
      description: "Age of the first entry of each dead-letter stream (from orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds). Streams are trimmed at 30 days; OrpycamcpDeadletterStreamEntriesTooOld fires above 31 days. No value means the stream is empty.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 60,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [],
          noValue: "empty",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "yellow",
                value: 2592000,
              },
              {
                color: "red",
                value: 2678400,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "value",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "time() - max by (%(cluster)s, stream) (orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{stream}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 25,
      type: "stat",
      title: "Backlog measured",
      description: "Whether each declared backlog's last measurement was complete (orpycamcp_signal_measured for the backlog's signal, max over replicas). UNMEASURED (0): its value series are absent, its pending items unknown, not zero; 'unknown' means no series at all. Alert OrpycamcpSignalUnmeasured covers backlogs too.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 68,
        w: 6,
        h: 6,
      },
      fieldConfig: {
        defaults: {
          unit: "none",
          mappings: [
            {
              type: "value",
              options: {
                "1": {
                  text: "measured",
                  color: "green",
                  index: 0,
                },
                "0": {
                  text: "UNMEASURED",
                  color: "red",
                  index: 1,
                },
              },
            },
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 2,
                },
              },
            },
          ],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "red",
                value: null,
              },
              {
                color: "green",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, signal) (orpycamcp_signal_measured{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", signal=~\"$backlog\"})" % q,
          legendFormat: "{{%(cluster)s}} {{signal}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 26,
      type: "stat",
      title: "Backlog pending items now",
      description: "Pending items of each declared backlog and group, summed over all tenants for a tenant-scope backlog (orpycamcp_backlog_pending_items, max over replicas). 0 is a measured zero; 'unknown' means the backlog is unmeasured (no series), never 0.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 6,
        y: 68,
        w: 18,
        h: 6,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [
            {
              type: "special",
              options: {
                match: "null",
                result: {
                  text: "unknown",
                  color: "text",
                  index: 0,
                },
              },
            },
          ],
          noValue: "unknown",
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "yellow",
                value: 1,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
        },
        overrides: [],
      },
      options: {
        reduceOptions: {
          calcs: ["lastNotNull"],
          fields: "",
          values: false,
        },
        colorMode: "background",
        graphMode: "none",
        justifyMode: "auto",
        orientation: "auto",
        textMode: "value_and_name",
        wideLayout: true,
        showPercentChange: false,
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, backlog, group) (orpycamcp_backlog_pending_items{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", backlog=~\"$backlog\"})" % q,
          legendFormat: "{{%(cluster)s}} {{backlog}} {{group}}" % q,
          refId: "A",
          range: false,
          instant: true,
          editorMode: "code",
        },
      ],
    },
    {
      id: 27,
      type: "timeseries",
      title: "Backlog pending items by group",
      description: "Pending items per declared backlog and group (orpycamcp_backlog_pending_items, max over replicas). Gaps mean the backlog was unmeasured: unknown, not zero. Alert OrpycamcpBacklogPendingTooLong fires after 1h above 0.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 74,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, backlog, group) (orpycamcp_backlog_pending_items{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", backlog=~\"$backlog\"})" % q,
          legendFormat: "{{%(cluster)s}} {{backlog}} {{group}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 28,
      type: "timeseries",
      title: "Backlog oldest pending item age by group",
      description: "Age of the oldest pending item per declared backlog and group (from orpycamcp_backlog_oldest_pending_timestamp_seconds). No line means nothing is pending, the backlog declares no oldest column, or it is unmeasured (see Backlog measured). Alert OrpycamcpBacklogOldestPendingTooOld fires above 24h.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 74,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [],
          thresholds: {
            mode: "absolute",
            steps: [
              {
                color: "green",
                value: null,
              },
              {
                color: "red",
                value: 86400,
              },
            ],
          },
          color: {
            mode: "thresholds",
          },
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
            thresholdsStyle: {
              mode: "line",
            },
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "time() - max by (%(cluster)s, backlog, group) (orpycamcp_backlog_oldest_pending_timestamp_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", backlog=~\"$backlog\"})" % q,
          legendFormat: "{{%(cluster)s}} {{backlog}} {{group}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 29,
      type: "timeseries",
      title: "Replica lag (a PostgreSQL standby, a Redis replica)",
      description: "How far behind its primary the server the exporter reads may be: a PostgreSQL hot standby (orpycamcp_database_replay_lag_seconds) or a Redis replica (orpycamcp_redis_replica_lag_seconds). Past --database.replica-max-staleness or --redis.replica-max-staleness its signals are unmeasured (replica_stale). No series: the exporter reads a primary.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 82,
        w: 24,
        h: 6,
      },
      fieldConfig: {
        defaults: {
          unit: "s",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, instance) (orpycamcp_database_replay_lag_seconds{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "PostgreSQL {{%(cluster)s}} {{instance}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
        target(perReplica("orpycamcp_redis_replica_lag_seconds"), "Redis {{%(cluster)s}} {{instance}}" % q, "B"),
      ],
    },
    {
      id: 30,
      type: "timeseries",
      title: "Exporter HTTP connections open",
      description: "HTTP connections the exporter holds open now, idle ones included (Prometheus' own keep-alive connection among them). Near the connection cap, idle connections are shed.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 88,
        w: 12,
        h: 6,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, instance) (orpycamcp_exporter_http_connections{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"})" % q,
          legendFormat: "{{%(cluster)s}} {{instance}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 31,
      type: "timeseries",
      title: "Exporter HTTP connections shed",
      description: "HTTP connections per second the exporter closed to stay under its connection cap (--web.max-connections), the longest idle first. Above 0: something holds many idle connections to the exporter.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 88,
        w: 12,
        h: 6,
      },
      fieldConfig: {
        defaults: {
          unit: "cps",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, instance) (rate(orpycamcp_exporter_http_connections_shed_total{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}[$__rate_interval]))" % q,
          legendFormat: "{{%(cluster)s}} {{instance}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    processPanel(
      38, "Exporter process CPU",
      "CPU time the exporter process spends per second (process_cpu_seconds_total), per replica: 100% is one core. A scrape of a cached page costs almost nothing; a steady climb points at refreshes or a flood of requests.",
      "percentunit", 0,
      [target("max by (%(cluster)s, instance) (rate(process_cpu_seconds_total{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\"}[$__rate_interval]))" % q, "{{%(cluster)s}} {{instance}}" % q)],
    ),
    processPanel(
      39, "Exporter process memory",
      "Resident (process_resident_memory_bytes) and virtual (process_virtual_memory_bytes) memory of the exporter process, per replica. Resident memory is what the container's memory limit counts.",
      "bytes", 6,
      [
        target(perReplica("process_resident_memory_bytes"), "resident {{%(cluster)s}} {{instance}}" % q),
        target(perReplica("process_virtual_memory_bytes"), "virtual {{%(cluster)s}} {{instance}}" % q, "B"),
      ],
    ),
    processPanel(
      40, "Exporter file descriptors",
      "File descriptors the exporter process holds open (process_open_fds) beside its limit (process_max_fds), per replica. Idle HTTP connections and database connections each hold one.",
      "short", 12,
      [
        target(perReplica("process_open_fds"), "open {{%(cluster)s}} {{instance}}" % q),
        target(perReplica("process_max_fds"), "limit {{%(cluster)s}} {{instance}}" % q, "B"),
      ],
    ),
    processPanel(
      41, "Exporter uptime",
      "Time since each exporter process started (process_start_time_seconds), per replica. A saw-tooth means restarts: look at the container's exit reason.",
      "s", 18,
      [target("time() - " + perReplica("process_start_time_seconds"), "{{%(cluster)s}} {{instance}}" % q)],
    ),
    // A row per declared backlog (repeated over the Backlog variable): below every other panel,
    // since an expanded row holds the panels under it up to the next row.
    {
      id: 32,
      type: "row",
      title: "Backlog $backlog: items per state and arrivals",
      collapsed: false,
      repeat: "backlog",
      gridPos: {
        x: 0,
        y: 100,
        w: 24,
        h: 1,
      },
      panels: [],
    },
    {
      id: 33,
      type: "timeseries",
      title: "Items per state: $backlog",
      description: "Rows of the declared backlog per group and state, in any state (orpycamcp_backlog_items, max over replicas; a backlog declaring `states`). Gaps mean the backlog was unmeasured: unknown, not zero.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 0,
        y: 101,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, backlog, group, state) (orpycamcp_backlog_items{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", backlog=~\"$backlog\"})" % q,
          legendFormat: "{{%(cluster)s}} {{group}} {{state}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
    {
      id: 34,
      type: "timeseries",
      title: "Arrivals per window: $backlog",
      description: "Rows of the declared backlog per group, in any state, arrived within each window ending at the measurement (orpycamcp_backlog_arrivals, by the database's clock; a backlog declaring `arrivals`), and the thresholds declared for them (arrivals.alert_above). Rows deleted by retention are not counted. Gaps mean the backlog was unmeasured: unknown, not zero. Alert OrpycamcpBacklogArrivalsHigh fires above a threshold for 5m.",
      datasource: {
        type: "prometheus",
        uid: "${datasource}",
      },
      gridPos: {
        x: 12,
        y: 101,
        w: 12,
        h: 8,
      },
      fieldConfig: {
        defaults: {
          unit: "short",
          mappings: [],
          custom: {
            drawStyle: "line",
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: "never",
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          },
        },
        overrides: [
          {
            matcher: {
              id: "byRegexp",
              options: ".* threshold .*",
            },
            properties: [
              {
                id: "custom.lineStyle",
                value: {
                  fill: "dash",
                  dash: [
                    10,
                    10,
                  ],
                },
              },
            ],
          },
        ],
      },
      options: {
        legend: {
          displayMode: "list",
          placement: "bottom",
          showLegend: true,
        },
        tooltip: {
          mode: "multi",
          sort: "desc",
        },
      },
      targets: [
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, backlog, group, window) (orpycamcp_backlog_arrivals{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", backlog=~\"$backlog\"})" % q,
          legendFormat: "{{%(cluster)s}} {{group}} within {{window}}" % q,
          refId: "A",
          range: true,
          instant: false,
          editorMode: "code",
        },
        {
          datasource: {
            type: "prometheus",
            uid: "${datasource}",
          },
          expr: "max by (%(cluster)s, backlog, window) (orpycamcp_backlog_arrivals_threshold{job=~\"$job\", %(cluster)s=~\"$cluster\", instance=~\"$instance\", backlog=~\"$backlog\"})" % q,
          legendFormat: "{{%(cluster)s}} threshold {{window}}" % q,
          refId: "B",
          range: true,
          instant: false,
          editorMode: "code",
        },
      ],
    },
  ],
}

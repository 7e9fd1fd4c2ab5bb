// Small helpers shared by the rules, the alerts and the dashboard.
{
  local units = {
    s: { seconds: 1, name: 'second' },
    m: { seconds: 60, name: 'minute' },
    h: { seconds: 3600, name: 'hour' },
    d: { seconds: 86400, name: 'day' },
    w: { seconds: 604800, name: 'week' },
  },
  // A one-unit Prometheus duration ("90s", "10m", "26h", "31d") as { count, unit }.
  local parse(duration) =
    local n = std.length(duration);
    local digits = std.substr(duration, 0, n - 1);
    local isDigit(ch) = std.length(std.findSubstr(ch, '0123456789')) > 0;
    assert n > 1 && std.objectHas(units, duration[n - 1])
           && std.length(std.filter(function(ch) !isDigit(ch), std.stringChars(digits))) == 0
           : 'not a one-unit duration (s, m, h, d or w): ' + duration;
    { count: std.parseInt(digits), unit: units[duration[n - 1]] },

  seconds(duration):: local d = parse(duration); d.count * d.unit.seconds,

  // In words: "5m" -> "5 minutes", "1h" -> "1 hour".
  words(duration)::
    local d = parse(duration);
    '%d %s%s' % [d.count, d.unit.name, if d.count == 1 then '' else 's'],

  // `{<orpycamcpSelector>, <more matchers>}`.
  selector(config, matchers=[]):: '{%s}' % std.join(', ', [config.orpycamcpSelector] + matchers),

  // The labels one replica merge keeps: what identifies a cluster, then the family's own.
  mergeLabels(config, labels=[]):: std.join(', ', ['job', config.clusterLabel] + labels),

  // One value per cluster out of its replicas: they report the same database state,
  // so the max (never a sum), grouped by what identifies the cluster.
  merge(config, family, labels=[]):: 'max by (%s) (%s%s)' % [
    $.mergeLabels(config, labels),
    family,
    $.selector(config),
  ],

  runbookUrl(config, alert):: config.runbookUrlPattern % std.asciiLower(alert),

  // "{{ with $labels.cluster }}<before>{{ . }}<after>{{ end }}" for the cluster label.
  withCluster(config, before, after=''):: '{{ with $labels.%s }}%s{{ . }}%s{{ end }}' % [config.clusterLabel, before, after],
}

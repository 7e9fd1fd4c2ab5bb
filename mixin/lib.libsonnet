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

  // The signals that read the one Redis bus: streams, and the stream signals
  // declared apart, which the exporter names streams_<name> (docs/streams.md).
  busSignals:: 'streams|streams_.+',

  seconds(duration):: local d = parse(duration); d.count * d.unit.seconds,

  // In words: "5m" -> "5 minutes", "1h" -> "1 hour".
  words(duration)::
    local d = parse(duration);
    '%d %s%s' % [d.count, d.unit.name, if d.count == 1 then '' else 's'],

  // A number of seconds in words: "90 seconds", "4 minutes", "7.5 minutes", "32 days".
  secondsWords(seconds)::
    if seconds >= 86400 && seconds % 86400 == 0 then $.words('%dd' % (seconds / 86400))
    else if seconds >= 3600 && seconds % 3600 == 0 then $.words('%dh' % (seconds / 3600))
    else if seconds < 120 || seconds % 30 != 0 then '%d seconds' % seconds
    else if seconds % 60 == 0 then '%d minute%s' % [seconds / 60, if seconds == 60 then '' else 's']
    else '%d.5 minutes' % std.floor(seconds / 60),

  // "4 to 7.5 minutes": two numbers of seconds in words, the unit said once when shared.
  rangeWords(low, high)::
    local lowWords = std.split($.secondsWords(low), ' ');
    local highWords = std.split($.secondsWords(high), ' ');
    if lowWords[1] == highWords[1] then '%s to %s' % [lowWords[0], $.secondsWords(high)]
    else '%s to %s' % [$.secondsWords(low), $.secondsWords(high)],

  // The platform's reclaim sweep (ADR-021) in seconds, from _config: an entry
  // that keeps failing is delivered again once idle for the minimum idle time,
  // at the next sweep (60 to 90 s after its last delivery with the seeds'
  // defaults); at its maxDeliveries-th delivery it is dead-lettered in the same
  // sweep, or at the next one if that delivery never returned.
  reclaim(config)::
    local idle = $.seconds(config.reclaimMinIdle);
    local interval = $.seconds(config.reclaimInterval);
    assert idle > interval : 'reclaimMinIdle must exceed reclaimInterval (the cadence contract of ADR-021)';
    assert std.isNumber(config.maxDeliveries) && config.maxDeliveries >= 1 : 'maxDeliveries is a count of deliveries';
    {
      // Between two deliveries of one entry, and between two attempts to dead-letter it.
      retryMin: idle,
      retryMax: idle + interval,
      // From the first delivery of an entry that keeps failing to its dead-lettering.
      deadLetterMin: (config.maxDeliveries - 1) * idle,
      deadLetterMax: config.maxDeliveries * (idle + interval),
      // In words, for the texts: "60 to 90 seconds", "4 to 7.5 minutes".
      retryWords: $.rangeWords(self.retryMin, self.retryMax),
      deadLetterWords: $.rangeWords(self.deadLetterMin, self.deadLetterMax),
      // "every 30 seconds, minimum idle 60 seconds, 5 deliveries"
      cadenceWords: 'every %s, minimum idle %s, %d deliveries' % [
        $.secondsWords(interval),
        $.secondsWords(idle),
        config.maxDeliveries,
      ],
    },

  // The matchers of a selector ('job="a", namespace=~"b|c"'), split at the
  // commas outside quoted values, each as { name, op, text }.
  matchers(selector)::
    local step(acc, ch) =
      if acc.escaped then acc { current+: ch, escaped: false }
      else if ch == '\\' then acc { current+: ch, escaped: true }
      else if ch == '"' then acc { current+: ch, quoted: !acc.quoted }
      else if ch == ',' && !acc.quoted then acc { parts+: [acc.current], current: '' }
      else acc { current+: ch };
    local split = std.foldl(step, std.stringChars(selector), { parts: [], current: '', quoted: false, escaped: false });
    local texts = [std.stripChars(part, ' \t\n') for part in split.parts + [split.current]];
    local parse(text) =
      local at = [i for i in std.range(0, std.length(text) - 1) if std.member('=!~', text[i])];
      assert std.length(at) > 0 : 'not a label matcher in orpycamcpSelector: ' + text;
      local i = at[0];
      {
        name: std.stripChars(std.substr(text, 0, i), ' '),
        op: if text[i] == '=' && (i + 1 == std.length(text) || text[i + 1] != '~') then '=' else 'other',
        text: text,
      };
    [parse(text) for text in texts if text != ''],

  // The labels the selector fixes with `=`: constant over the deployment, so
  // every recorded series keeps them (two deployments never write the same
  // series) and grouping by them never splits the deployment.
  keyLabels(config)::
    local fixed = [m.name for m in $.matchers(config.orpycamcpSelector) if m.op == '='];
    assert std.length(fixed) > 0 : 'orpycamcpSelector needs at least one label matched with = (e.g. job="orpycamcp-exporter")';
    fixed,

  // `{<orpycamcpSelector>, <more matchers>}`: for raw series.
  selector(config, matchers=[]):: '{%s}' % std.join(', ', [config.orpycamcpSelector] + matchers),

  // For recorded series: the `=` matchers of the selector (the labels they keep).
  recorded(config, matchers=[])::
    '{%s}' % std.join(', ', [m.text for m in $.matchers(config.orpycamcpSelector) if m.op == '='] + matchers),

  // "label, label": a grouping list.
  list(labels):: std.join(', ', labels),

  // The label the exporter names the database it measures with (orpycamcp_database_identity_info).
  identityLabel:: 'database_identity',

  // The labels one replica merge keeps: the deployment, the display label, the
  // database identity, then the family's own.
  mergeLabels(config, labels=[]):: $.list($.keyLabels(config) + [config.clusterLabel, $.identityLabel] + labels),

  // Each scraped target's database: the identity it reported last within
  // databaseMemory (recorded by the rules), one series per target.
  latestIdentity:: 'orpycamcp:database_identity:latest',

  // `family` per target, labelled with its target's last reported database
  // identity; a target that never reported one keeps its series without it.
  withIdentity(config, family, labels=[]):: $.seriesWithIdentity(config, $.fresh(config, family + $.selector(config)), labels),
  seriesWithIdentity(config, series, labels=[])::
    local ignoring = $.list(labels + [$.identityLabel]);
    '(%(f)s * ignoring (%(i)s) group_left (%(id)s) %(latest)s or %(f)s unless ignoring (%(i)s) %(latest)s)' % {
      f: series,
      i: ignoring,
      id: $.identityLabel,
      latest: $.latestIdentity + $.selector(config),
    },

  // One value per database out of its replicas: they report the same database
  // state, so the max (never a sum), grouped by what identifies the database.
  merge(config, family, labels=[]):: 'max by (%s) (%s)' % [
    $.mergeLabels(config, labels),
    $.withIdentity(config, family, labels),
  ],

  // The same for a family measured by a signal: the copy with the newest data
  // (freshestCopy) per cluster label value and database.
  freshestMerge(config, family, labels=[])::
    local join(series, own) = $.seriesWithIdentity(config, series, own);
    local by = $.keyLabels(config) + [config.clusterLabel, $.identityLabel];
    'max by (%s) %s' % [$.mergeLabels(config, labels), $.freshestCopy(config, family, labels, join, by)],

  // The time of the data each target's values of a signal were read from
  // (a standby's replay lag subtracted), present beside those values only.
  dataTime:: 'orpycamcp_signal_data_timestamp_seconds',

  // How old a sample may be and still count (its own timestamp): a few scrape intervals.
  sampleMaxAge(config):: config.samplesFreshScrapes * $.seconds(config.scrapeInterval),

  // `series` (a selector) without its samples older than sampleMaxAge by their
  // own timestamp: the last samples of a dead HA server, and federated samples
  // of a target (or a whole regional server) that is gone, carry no staleness
  // marker; they count as absent, as a failed scrape does.
  fresh(config, series)::
    '(%(s)s unless timestamp(%(s)s) < time() - %(sample)d)' % { s: series, sample: $.sampleMaxAge(config) },

  // `series` (a data time selector) without the copies whose data is older than
  // dataMaxAge or whose sample is older than sampleMaxAge.
  currentData(config, series)::
    '(%(s)s and %(aged)s >= time() - %(data)d unless timestamp(%(s)s) < time() - %(sample)d)' % {
      s: series,
      aged: $.plusTtl(config, series, $.ttl + $.selector(config)),
      data: $.seconds(config.dataMaxAge),
      sample: $.sampleMaxAge(config),
    },

  // A range selector's duration that holds the same samples under Prometheus 2
  // ([t - d, t]) and 3 (left-open: (t - d, t]): 1 ms wider, so the sample at
  // exactly t - d stays in under 3; under 2 it adds only a sample at exactly
  // t - d - 1 ms, which no series on a scrape or evaluation grid has
  // (docs/alerts-and-dashboard.md#prometheus-3).
  closedRange(duration):: duration + '1ms',

  // Each target's TTL of each signal: how long it serves a measurement from
  // cache before it measures again (its own cadence, --signals.ttl or a
  // declaration's `ttl:`, else --ttl).
  ttl:: 'orpycamcp_signal_ttl_seconds',

  // `series` (per target or per database, and signal) plus the signal's own
  // TTL (`ttlSeries`, orpycamcp_signal_ttl_seconds or its `:max`), or plus
  // exporterTtl where an exporter publishes no TTL: how old its data or last
  // success may be between two refreshes, and no older.
  plusTtl(config, series, ttlSeries)::
    '(%(s)s + %(t)s or %(s)s + %(d)d)' % { s: series, t: ttlSeries, d: $.seconds(config.exporterTtl) },

  // The signal a family's values come from: its name's first word (dlq,
  // preservation, audit_chain), or, for a declared backlog's families, the
  // `backlog` label, which names its signal.
  signalOf(family)::
    local name = std.strReplace(family, 'orpycamcp_', '');
    if std.startsWith(name, 'backlog_') then null
    else if std.startsWith(name, 'audit_chain_') then 'audit_chain'
    else if std.startsWith(name, 'migration_lock_') then 'migration_lock'
    else std.split(name, '_')[0],

  // Of `family`'s series (`identified`: labelled with their database by
  // `join`), only those of the copy whose data is the newest, per `by` and
  // signal, among the copies whose data is at most dataMaxAge old: a lagging
  // standby's larger value never wins over its primary's, and a copy past the
  // bound never counts. A database whose copies date none of their data
  // (exporters before orpycamcp_signal_data_timestamp_seconds) keeps every copy.
  // Its lines are joined with `pad` after each newline (no re-indenting: long
  // strings are slow to split in jsonnet).
  freshestCopy(config, family, labels, join, by, pad='')::
    local signal = $.signalOf(family);
    local matcher = if signal == null then 'signal=~".+"' else 'signal="%s"' % signal;
    local asFamily(text) =
      if signal == null then 'label_replace(%s, "backlog", "$1", "signal", "(.+)")' % text else text;
    local dated = join($.dataTime + $.selector(config, [matcher]), ['signal']);
    local fresh = join($.currentData(config, $.dataTime + $.selector(config, [matcher])), ['signal']);
    local own = [l for l in labels if !(signal == null && l == 'backlog')];
    local identified = join(family + $.selector(config), labels);
    std.join('\n' + pad, [
      '(',
      '  ' + identified,
      '    and ignoring (%s) %s' % [$.list(own + ['signal']), asFamily('topk by (%s) (1, %s)' % [$.list(by + ['signal']), fresh])],
      '  or ' + identified,
      '    unless on (%s) %s' % [$.list(by + (if signal == null then ['backlog'] else [])), asFamily(dated)],
      ')',
    ]) + '\n',

  // One value per Redis bus out of every target of the deployment: every
  // exporter reads the same streams, so the max, grouped by the deployment and
  // the family's labels (never by cluster or database).
  busMerge(config, family, labels=[]):: 'max by (%s) %s' % [
    $.list($.keyLabels(config) + labels),
    $.fresh(config, family + $.selector(config)),
  ],

  runbookUrl(config, alert):: config.runbookUrlPattern % std.asciiLower(alert),

  // "<before><cluster label value>{{ . }}<after>" for the cluster label: the
  // alert's own, or, for an alert keyed on its database (byDatabase: no cluster
  // label), the values its database's targets carry now (else within
  // databaseMemory), or, `byTarget`, for an alert keyed on its target (no
  // cluster label), the values its instance's fresh `up` carries; read when
  // the alert is sent: display only.
  withCluster(config, before, after='', byTarget=false)::
    local cl = config.clusterLabel;
    local of(record) = 'group by (%s) (%s)' % [cl, record + $.recorded(config, [cl + '!=""', $.identityLabel + '=%q'])];
    local now = of('orpycamcp:database_identity:last_seen_timestamp_seconds');
    local byDatabase = '%s or %s unless on () %s' % [now, of($.latestIdentity), now];
    local ofTarget = 'group by (%s) %s' % [cl, $.fresh(config, 'up' + $.selector(config, [cl + '!=""', 'instance=%q']))];
    local key = if byTarget then 'instance' else $.identityLabel;
    local query = if byTarget then ofTarget else byDatabase;
    std.join('', [
      '{{ with $labels.%s }}%s{{ . }}%s' % [cl, before, after],
      '{{ else }}{{ with $labels.%s }}{{ with printf `%s`%s | query }}' % [
        key,
        $.templateQuery(query),
        std.repeat(' .', std.length(std.findSubstr('%q', query))),
      ],
      '%s{{ range $i, $c := . | sortByLabel "%s" }}{{ if $i }}, {{ end }}{{ $c.Labels.%s }}{{ end }}%s' % [before, cl, cl, after],
      '{{ end }}{{ end }}{{ end }}',
    ]),

  // An alert about one database keyed on its identity: the cluster label, a
  // display label a relabelling may rename, is dropped from the series that
  // carry a database_identity, so a rename (of its value or of the label)
  // neither re-pages nor resolves the alert; withCluster names the cluster in
  // its texts. Series of a target that never reported its identity keep the
  // cluster label (they have nothing else to tell them apart).
  byDatabase(config, expr)::
    local e = std.join('\n    ', std.split(std.rstripChars(expr, '\n'), '\n'));
    std.join('\n', [
      'max without (%s) (' % config.clusterLabel,
      '  (',
      '    ' + e,
      '  )',
      '  unless on (%s) vector(0)' % $.identityLabel,
      ')',
      'or (',
      '  (',
      '    ' + e,
      '  )',
      '  and on (%s) vector(0)' % $.identityLabel,
      ')',
    ]) + '\n',

  // " (database <identity>)" when the alert names a database.
  withDatabase(before=' (database ', after=')'):: '{{ with $labels.%s }}%s{{ . }}%s{{ end }}' % [$.identityLabel, before, after],

  // A PromQL text inside a Go template's backquoted printf format: `%` doubled,
  // but `%q`, the verb the alert's own labels are given by.
  templateQuery(text):: std.strReplace(std.strReplace(text, '%', '%%'), '%%q', '%q'),
}

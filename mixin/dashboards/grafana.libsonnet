// Small builders of Grafana dashboard JSON (schema 39), in plain jsonnet.
//
// A panel builder returns a panel without position; `layout` places a list of
// panels and rows on Grafana's 24-column grid, left to right and wrapping, so
// that no `gridPos` is ever written by hand:
//
//   local g = import 'grafana.libsonnet';
//   g.layout([
//     g.row('Redis Streams'),
//     g.timeseries(15, 'Pending messages', 'What it shows ...', 'short',
//                  [g.query('max by (cluster, stream) (...)', '{{cluster}} {{stream}}')]),
//     g.stat(18, 'Oldest entry age', '...', 's', [g.query('time() - ...', '{{stream}}')],
//            noValue='empty', width=12, height=8),
//   ])
//
// Ids are given, not computed: a link to one panel (`viewPanel=<id>`) survives
// reordering. The dashboard's `${datasource}` variable is every panel's source.
{
  local grid = 24,
  local datasource = { type: 'prometheus', uid: '${datasource}' },

  // --- queries --------------------------------------------------------------

  // One PromQL query of a panel. The panel gives it its refId (A, B, ...) and
  // reads it as an instant (stat, table) or a range (time series, timeline).
  query(expr, legend='__auto'):: { expr: expr, legendFormat: legend },

  local targets(queries, instant, format=null) = [
    {
      datasource: datasource,
      editorMode: 'code',
      expr: queries[i].expr,
      legendFormat: queries[i].legendFormat,
      refId: std.char(std.codepoint('A') + i),
      range: !instant,
      instant: instant,
    } + (if format == null then {} else { format: format })
    for i in std.range(0, std.length(queries) - 1)
  ],

  // --- values shown as words ------------------------------------------------

  // `mappings([g.value('1', 'measured', 'green'), g.special('null', 'unknown')])`:
  // value and special (null, nan) mappings, their priority the order given.
  value(value, text, color):: { kind: 'value', value: value, text: text, color: color },
  special(match, text, color='text'):: { kind: 'special', match: match, text: text, color: color },
  // Absence (no sample) reads "unknown", never 0.
  unknown:: $.special('null', 'unknown'),

  mappings(entries)::
    local indexed = [entries[i] { index: i } for i in std.range(0, std.length(entries) - 1)];
    local values = [e for e in indexed if e.kind == 'value'];
    (if values == [] then [] else [{
       type: 'value',
       options: { [e.value]: { text: e.text, color: e.color, index: e.index } for e in values },
     }])
    + [
      { type: 'special', options: { match: e.match, result: { text: e.text, color: e.color, index: e.index } } }
      for e in indexed
      if e.kind == 'special'
    ],

  // `thresholds([['green', null], ['red', 1800]])`: colour steps from the base.
  thresholds(steps):: { mode: 'absolute', steps: [{ color: s[0], value: s[1] } for s in steps] },

  // --- panels ---------------------------------------------------------------

  // What every panel has. `width` (of 24 columns) and `height` (grid rows) are
  // read by `layout` and not rendered.
  local panel(type, id, title, description, unit, width, height) = {
    id: id,
    type: type,
    title: title,
    description: description,
    datasource: datasource,
    size:: { w: width, h: height },
    fieldConfig: { defaults: { unit: unit, mappings: [] }, overrides: [] },
  },
  local withThresholds(steps) =
    if steps == null then {} else { thresholds: $.thresholds(steps), color: { mode: 'thresholds' } },
  local withNoValue(noValue) = if noValue == null then {} else { noValue: noValue },

  // The last value of each series, coloured by `thresholds` (the background,
  // or the text with colorMode='value'). `noValue` says what no series means.
  stat(id,
       title,
       description,
       unit,
       queries,
       noValue,
       mappings=[],
       thresholds=[['text', null]],
       colorMode='background',
       overrides=[],
       width=6,
       height=5)::
    panel('stat', id, title, description, unit, width, height) {
      fieldConfig: {
        defaults: { unit: unit, mappings: $.mappings(mappings) } + withNoValue(noValue) + withThresholds(thresholds),
        overrides: overrides,
      },
      options: {
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
        colorMode: colorMode,
        graphMode: 'none',
        justifyMode: 'auto',
        orientation: 'auto',
        textMode: 'value_and_name',
        wideLayout: true,
        showPercentChange: false,
      },
      targets: targets(queries, true),
    },

  // Lines over time; gaps stay gaps (no value is never drawn as 0). With
  // `thresholds`, their steps are drawn as lines (an alert's threshold).
  timeseries(id, title, description, unit, queries, thresholds=null, overrides=[], width=12, height=8)::
    panel('timeseries', id, title, description, unit, width, height) {
      fieldConfig: {
        defaults: {
          unit: unit,
          mappings: [],
          custom: {
            drawStyle: 'line',
            lineWidth: 1,
            fillOpacity: 0,
            showPoints: 'never',
            spanNulls: false,
            insertNulls: false,
            axisSoftMin: 0,
          } + (if thresholds == null then {} else { thresholdsStyle: { mode: 'line' } }),
        } + withThresholds(thresholds),
        overrides: overrides,
      },
      options: {
        legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
        tooltip: { mode: 'multi', sort: 'desc' },
      },
      targets: targets(queries, false),
    },

  // One row per series, its labels as columns. `transformations` reshape it
  // (`g.hideTimeAndValue`, `g.matrix(...)`); with `thresholds` the cells are coloured.
  table(id, title, description, unit, queries, transformations, noValue, thresholds=null, width=12, height=9)::
    panel('table', id, title, description, unit, width, height) {
      fieldConfig: {
        defaults: { unit: unit, mappings: [] } + withNoValue(noValue) + withThresholds(thresholds)
                  + (if thresholds == null then {} else {
                       custom: { align: 'auto', cellOptions: { type: 'color-text' }, inspect: false },
                     }),
        overrides: [],
      },
      options: { showHeader: true, cellHeight: 'sm', footer: { show: false, reducer: ['sum'], fields: '' } },
      targets: targets(queries, true, 'table'),
      transformations: transformations,
    },
  // Only the labels: for series whose value says nothing (an info family).
  hideTimeAndValue:: [{ id: 'organize', options: { excludeByName: { Time: true, Value: true } } }],
  // A grid of values: one row per `row` label, one column per `column` label.
  matrix(row, column):: [{
    id: 'groupingToMatrix',
    options: { columnField: column, rowField: row, valueField: 'Value', emptyValue: 'null' },
  }],

  // States as coloured bands over time; gaps (no series) stay blank.
  stateTimeline(id, title, description, queries, mappings, thresholds, legend=true, width=12, height=6)::
    panel('state-timeline', id, title, description, 'none', width, height) {
      fieldConfig: {
        defaults: {
          unit: 'none',
          mappings: $.mappings(mappings),
          custom: { fillOpacity: 80, lineWidth: 0, spanNulls: false, insertNulls: false },
        } + withThresholds(thresholds),
        overrides: [],
      },
      options: {
        mergeValues: true,
        showValue: 'auto',
        alignValue: 'left',
        rowHeight: 0.9,
        legend: { displayMode: 'list', placement: 'bottom', showLegend: legend },
        tooltip: { mode: 'single', sort: 'none' },
      },
      targets: targets(queries, false),
    },

  // A full-width heading; the panels after it, up to the next row, are its own.
  // `repeat`: one copy of the row and its panels per value of that variable.
  row(title, id, repeat=null)::
    { id: id, type: 'row', title: title, collapsed: false, panels: [], size:: { w: grid, h: 1 } }
    + (if repeat == null then {} else { repeat: repeat }),

  // --- layout ---------------------------------------------------------------

  // Places panels left to right in the order given, wrapping to a new line when
  // the next one does not fit; a line is as high as its highest panel. A row
  // always starts a line of its own.
  layout(items)::
    local place(state, item) =
      local isRow = item.type == 'row';
      local wraps = state.x > 0 && (isRow || state.x + item.size.w > grid);
      local y = if wraps then state.y + state.height else state.y;
      local x = if wraps then 0 else state.x;
      assert item.size.w > 0 && item.size.w <= grid : 'panel %s is wider than the grid' % item.title;
      {
        x: if isRow then 0 else x + item.size.w,
        y: if isRow then y + 1 else y,
        height: if isRow then 0 else if wraps then item.size.h else std.max(state.height, item.size.h),
        panels: state.panels + [item { gridPos: { x: x, y: y, w: item.size.w, h: item.size.h } }],
      };
    std.foldl(place, items, { x: 0, y: 0, height: 0, panels: [] }).panels,

  // --- variables --------------------------------------------------------------

  datasourceVariable(type, regex):: {
    type: 'datasource',
    name: 'datasource',
    label: 'Data source',
    query: type,
    current: {},
    hide: 0,
    includeAll: false,
    multi: false,
    options: [],
    refresh: 1,
    regex: regex,
    skipUrlSync: false,
  },

  // A multi-value variable of the values of `label` among the series `selector`
  // selects (`metric{...}`), refreshed when the time range changes. "All" is
  // `allValue` when given, else every value listed.
  labelVariable(name, label, selector, allValue=null)::
    local query = 'label_values(%s, %s)' % [selector, label];
    {
      type: 'query',
      name: name,
      label: std.asciiUpper(name[0]) + name[1:],
      datasource: datasource,
      definition: query,
      query: { query: query, refId: 'PrometheusVariableQueryEditor-VariableQuery', qryType: 1 },
      multi: true,
      includeAll: true,
      current: { selected: true, text: ['All'], value: ['$__all'] },
      options: [],
      refresh: 2,
      regex: '',
      sort: 1,
      hide: 0,
      skipUrlSync: false,
    } + (if allValue == null then {} else { allValue: allValue }),
}

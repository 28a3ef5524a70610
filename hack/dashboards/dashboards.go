package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The Prometheus data source every query reads: the dashboard's
// `datasource` variable, so an import asks for none by uid.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// The controllers of this operator, as controller-runtime labels its
// reconcile and work queue series.
const controllers = `mydeployment|application`

// query is one Prometheus query of a panel, legend its series' name.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource).Expr(expr).LegendFormat(legend)
}

// refID names the i-th query of a panel as Grafana does: A, B, ...
func refID(i int) string { return string(rune('A' + i)) }

// graph is a time series panel of queries, a quarter of the width per span unit of 6.
func graph(title, description, unit string, span uint32, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(description).Unit(unit).
		Datasource(datasource).Height(8).Span(span).Min(0).FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).ShowLegend(true))
	for i, q := range queries {
		p.WithTarget(q.RefId(refID(i)))
	}
	return p
}

// single is a stat panel: the last value of each query.
func single(title, description, unit string, queries ...*prometheus.DataqueryBuilder) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().Title(title).Description(description).Unit(unit).
		Datasource(datasource).Height(4).Span(4).GraphMode(common.BigValueGraphModeArea).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
	for i, q := range queries {
		p.WithTarget(q.RefId(refID(i)))
	}
	return p
}

// warnAbove colours a stat red from 1: a count a user must look at.
func warnAbove(p *stat.PanelBuilder) *stat.PanelBuilder {
	return p.ColorMode(common.BigValueColorModeBackground).Thresholds(dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{{Color: "green"}, {Value: cog.ToPtr(1.0), Color: "red"}}))
}

// datasourceVariable picks the Prometheus data source.
func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")
}

// labelVariable offers the values of label on the series selector selects.
func labelVariable(name, label, selector string) *dashboard.QueryVariableBuilder {
	q := "label_values(" + selector + ", " + label + ")"
	return dashboard.NewQueryVariableBuilder(name).Label(label).Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc)
}

// annotation marks on the time axis the moments expr returns a value.
func annotation(name, color, expr, title string) *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().Name(name).Datasource(datasource).Enable(true).
		IconColor(color).Expr(expr).TitleFormat(title).TagKeys("namespace,name").Step("$__interval")
}

// builtInAnnotations is Grafana's own annotation list entry, which every
// dashboard saved by Grafana has.
func builtInAnnotations() *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().Name("Annotations & Alerts").BuiltIn(1).Enable(true).Hide(true).
		IconColor("rgba(0, 211, 255, 1)").Type("dashboard").
		Datasource(common.DataSourceRef{Type: cog.ToPtr("grafana"), Uid: cog.ToPtr("-- Grafana --")})
}

// base is what both dashboards share.
func base(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).Uid(uid).Description(description).
		Tags([]string{"mydeployment", "kubernetes", "operator"}).Editable().
		Refresh("30s").Time("now-1h", "now").Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).Annotation(builtInAnnotations()).
		WithVariable(datasourceVariable())
}

package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
)

// svgLine is one series of a panel: a party's measure at each size.
type svgLine struct {
	label  string
	color  string
	dashed bool
	pods   []int
	values []float64
}

// svgPanel is one chart of the three: a measure against pods.
type svgPanel struct {
	title, unit string
	lines       []svgLine
}

// Colours as chart.png's: raw grey, Deployment blue, MyDeployment green.
var svgColors = map[string]string{partyRaw: "#9e9e9e", partyDeployment: "#4285f4", partyMyDeployment: "#0f9d58"}

var partyNames = map[string]string{partyRaw: "raw client", partyDeployment: "Deployment", partyMyDeployment: "MyDeployment"}

// panels are the scale chart's: wall time of scale-out and rolling update,
// the controller's CPU over its windows, and its peak RSS.
func (sr *scaleResults) panels() []svgPanel {
	line := func(party, measure, label string, dashed bool) (svgLine, bool) {
		f := sr.fitOf(party, measure)
		if f == nil {
			return svgLine{}, false
		}
		return svgLine{label: label, color: svgColors[party], dashed: dashed, pods: f.Pods, values: f.Values}, true
	}
	var time, cpu, rss svgPanel
	time = svgPanel{title: "wall time", unit: "s"}
	cpu = svgPanel{title: "controller CPU, its windows", unit: "CPU-s"}
	rss = svgPanel{title: "controller peak RSS", unit: "MiB"}
	for _, party := range scaleParties {
		if l, ok := line(party, timeMeasure(scaleOut), partyNames[party]+" scale-out", false); ok {
			time.lines = append(time.lines, l)
		}
		if l, ok := line(party, timeMeasure(rollingUpdate), partyNames[party]+" rolling update", true); ok {
			time.lines = append(time.lines, l)
		}
		proc := map[string]string{partyDeployment: " (kube-controller-manager)", partyMyDeployment: " (manager)"}[party]
		if l, ok := line(party, measureControllerCPU, partyNames[party]+proc, false); ok {
			cpu.lines = append(cpu.lines, l)
		}
		if l, ok := line(party, measurePeakRSS, partyNames[party]+proc, false); ok {
			rss.lines = append(rss.lines, l)
		}
	}
	return []svgPanel{time, cpu, rss}
}

// svg draws the panels side by side: pods on x, the measure on y, both
// from 0, each point labelled with its value.
func (sr *scaleResults) svg() []byte {
	const (
		panelW, panelH = 400, 380
		left, right    = 60, 20
		top, bottom    = 50, 150
	)
	panels := sr.panels()
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n",
		panelW*len(panels), panelH+bottom-60)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	maxPods := 0
	for _, p := range sr.Points {
		maxPods = max(maxPods, p.Pods)
	}
	for i, pn := range panels {
		x0 := i * panelW
		plotW, plotH := panelW-left-right, panelH-top-60
		maxV := 0.0
		for _, l := range pn.lines {
			for _, v := range l.values {
				maxV = math.Max(maxV, v)
			}
		}
		maxV = niceCeil(maxV * 1.1)
		px := func(pods int) float64 {
			return float64(x0+left) + float64(plotW)*float64(pods)/float64(max(1, maxPods))
		}
		py := func(v float64) float64 { return float64(top+plotH) - float64(plotH)*v/maxV }
		fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s (%s)</text>`+"\n", x0+left, html.EscapeString(pn.title), pn.unit)
		for t := 0; t <= 4; t++ {
			v := maxV * float64(t) / 4
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e0e0e0"/>`+"\n", x0+left, py(v), x0+left+plotW, py(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0+left-6, py(v)+4, fmtValue(v))
		}
		for _, p := range sr.Points {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px(p.Pods), top+plotH+16, p.Pods)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">pods</text>`+"\n", x0+left+plotW/2, top+plotH+32)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", x0+left, top+plotH, x0+left+plotW, top+plotH)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", x0+left, top, x0+left, top+plotH)
		for li, l := range pn.lines {
			dash := ""
			if l.dashed {
				dash = ` stroke-dasharray="6,4"`
			}
			var pts bytes.Buffer
			for j := range l.pods {
				fmt.Fprintf(&pts, "%.1f,%.1f ", px(l.pods[j]), py(l.values[j]))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", l.color, dash, pts.String())
			for j := range l.pods {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(l.pods[j]), py(l.values[j]), l.color)
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", px(l.pods[j])+4, py(l.values[j])-4, l.color, fmtValue(l.values[j]))
			}
			ly := top + plotH + 50 + li*16
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", x0+left, ly-4, x0+left+24, ly-4, l.color, dash)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x0+left+30, ly, html.EscapeString(l.label))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtValue(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

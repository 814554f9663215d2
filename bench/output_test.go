package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSharesChart: datasets in order of target share, each with its
// target and measured share, and every dataset's name in the legend of the
// mixture chart, also with 29 datasets.
func TestSharesChart(t *testing.T) {
	s := Summary{
		Targets: map[string]float64{"small": 0.1, "big": 0.6, "mid": 0.3},
		Shares:  map[string]float64{"small": 0.12, "big": 0.58, "mid": 0.3},
	}
	if got := byShare(s); !slices.Equal(got, []string{"big", "mid", "small"}) {
		t.Fatalf("byShare = %v", got)
	}
	var b bytes.Buffer
	if err := sharesSVG(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if i, j, k := strings.Index(out, ">big<"), strings.Index(out, ">mid<"), strings.Index(out, ">small<"); i < 0 || i > j || j > k {
		t.Errorf("rows not in order of target share: big %d, mid %d, small %d", i, j, k)
	}
	for _, tick := range []string{">0%<", ">20%<", ">60%<"} {
		if !strings.Contains(out, tick) {
			t.Errorf("no axis tick %s", tick)
		}
	}

	if !strings.Contains(out, ">+2.00 pt<") || !strings.Contains(out, ">-2.00 pt<") {
		t.Errorf("the shares chart does not show small's +2.00 and big's -2.00 points of deviation")
	}
}

// TestMixtureChartSmallMultiples: at 29 datasets the mixture chart has a
// row per dataset, in order of target share, each labelled with its name
// and, at the right, its target and its deviation in points (not "3.4% →
// 3.5%"), with the running share and the target drawn in every row.
func TestMixtureChartSmallMultiples(t *testing.T) {
	many := Summary{Targets: map[string]float64{}, Shares: map[string]float64{}}
	var names []string
	for i := range 29 {
		name := fmt.Sprintf("synth_dataset_with_a_long_name_%02d", i)
		names = append(names, name)
		w := float64(29-i) / 435 // 29+28+…+1 = 435: distinct targets
		many.Targets[name], many.Shares[name] = w, w+0.0004
	}
	recs := []Record{
		{Index: 5, DatasetCounts: map[string]int{names[0]: 3, names[1]: 1}},
		{Index: 6, DatasetCounts: map[string]int{names[0]: 2, names[28]: 2}},
	}
	var b bytes.Buffer
	if err := mixtureSVG(&b, recs, many); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if err := xml.Unmarshal(b.Bytes(), new(any)); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	last := -1
	for _, name := range names { // largest target first
		i := strings.Index(out, ">"+name+"<")
		if i < last {
			t.Errorf("%s is not below the rows of larger targets", name)
		}
		last = i
		if want := fmt.Sprintf(">target %s, +0.04 pt<", pctFine(many.Targets[name])); !strings.Contains(out[i:], want) {
			t.Errorf("row %s lacks %q", name, want)
		}
	}
	if strings.Contains(out, "→") {
		t.Errorf("the legend still reads target → measured")
	}
	if n := strings.Count(out, "<polyline"); n != 29 {
		t.Errorf("%d running-share lines, want one per dataset (29)", n)
	}
	if n := strings.Count(out, `stroke-dasharray="4 3"`); n != 29 {
		t.Errorf("%d target lines, want 29", n)
	}
}

func TestTicks(t *testing.T) {
	if got := batchTicks(20); !slices.Equal(got, []float64{0, 5, 10, 15, 20}) {
		t.Errorf("batchTicks(20) = %v", got)
	}
	if got := batchTicks(3); !slices.Equal(got, []float64{0, 1, 2, 3}) {
		t.Errorf("batchTicks(3) = %v", got)
	}
	if got := ticks(0, 1, 4); !slices.Equal(got, []float64{0, 0.25, 0.5, 0.75, 1}) {
		t.Errorf("ticks(0, 1, 4) = %v", got)
	}
}

// TestPrintSaysWhatItMeasured: the table names the process whose RSS it
// shows (the daemon of a mount, this process in-process), calls the
// sources' bytes read rather than fetched (a local mix downloads
// nothing), and reports the mixture as the deviation from the targets in
// points, without the dominant dataset's switch rate that alarms on
// equal weights.
func TestPrintSaysWhatItMeasured(t *testing.T) {
	s := Summary{
		Source: "in-process mix.yaml", MemBudget: 1 << 30, PeakRSS: 300 << 20, FetchedBytes: 300_000,
		Targets: map[string]float64{"a": 0.5, "b": 0.5}, Shares: map[string]float64{"a": 0.52, "b": 0.48},
		MaxDeviation: 0.02, Mixture: MixtureSummary{DominantSwitchRate: 1},
	}
	var b bytes.Buffer
	s.Print(&b)
	out := b.String()
	for _, want := range []string{"pipeline peak RSS", "read from sources 0.3 MB", "within 2.00 points", "largest: a, +2.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("in-process table lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"daemon", "fetched", "switches"} {
		if strings.Contains(out, bad) {
			t.Errorf("in-process table says %q:\n%s", bad, out)
		}
	}
	s.Source = "mount /mnt/oxe/batches"
	b.Reset()
	s.Print(&b)
	if !strings.Contains(b.String(), "daemon peak RSS") {
		t.Errorf("mount table lacks the daemon's peak RSS:\n%s", b.String())
	}
}

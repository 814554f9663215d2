package bench

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// viewInfo makes a val view's info.json look like a train view's: its
// num_batches and plan become the top level's.
func viewInfo(info []byte, val bool) []byte {
	if !val {
		return info
	}
	var all map[string]any
	if json.Unmarshal(info, &all) != nil {
		return info
	}
	v, _ := all["val"].(map[string]any)
	if v == nil {
		all["num_batches"] = 0
	} else {
		all["num_batches"] = v["num_batches"]
		all["train"] = v
	}
	b, _ := json.Marshal(all)
	return b
}

// outFile is one file WriteFiles writes: its name and what fills it.
type outFile struct {
	name string
	fill func(w io.Writer) error
}

// outFiles are the files a run writes, in order.
func (r *Result) outFiles(s Summary) []outFile {
	return []outFile{
		{"batch_times.jsonl", func(w io.Writer) error {
			recs := append([]Record(nil), r.Records...)
			slices.SortFunc(recs, func(a, b Record) int { return int(a.Index - b.Index) })
			enc := json.NewEncoder(w)
			for _, rec := range recs {
				if err := enc.Encode(rec); err != nil {
					return err
				}
			}
			return nil
		}},
		{"mixture_summary.txt", func(w io.Writer) error { return writeMixture(w, s) }},
		{"mixture_over_time.svg", func(w io.Writer) error { return mixtureSVG(w, r.Measured(), s) }},
		{"mixture_shares.svg", func(w io.Writer) error { return sharesSVG(w, s) }},
		{"latency.svg", func(w io.Writer) error { return latencySVG(w, r.Measured(), s) }},
		{"summary.json", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}},
	}
}

// Files names the files WriteFiles writes, in order (the CLI's help
// lists them).
func Files() []string {
	var names []string
	for _, f := range (&Result{}).outFiles(Summary{}) {
		names = append(names, f.name)
	}
	return names
}

// WriteFiles writes the files Files names into dir: batch_times.jsonl,
// mixture_summary.txt, mixture_over_time.svg, mixture_shares.svg,
// latency.svg and summary.json.
func (r *Result) WriteFiles(dir string, s Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fill func(w io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		if err := fill(bw); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := bw.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	var errs []error
	for _, f := range r.outFiles(s) {
		errs = append(errs, write(f.name, f.fill))
	}
	return firstErr(errs...)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func writeMixture(w io.Writer, s Summary) error {
	fmt.Fprintf(w, "measured_batches: %d\n", s.Mixture.MeasuredBatches)
	fmt.Fprintf(w, "unique_dominant_datasets: %d\n", s.Mixture.UniqueDominantDatasets)
	// The dominant dataset (the most samples of a batch) changes between
	// consecutive batches at this rate; with weights alike it changes on
	// most batches, as it should: only a rate near 0 on a mix of many
	// datasets (long runs of one) says batches are not mixed.
	fmt.Fprintf(w, "dominant_switch_rate: %.4f  # batches whose dominant dataset differs from the previous batch's; high is expected with similar weights\n", s.Mixture.DominantSwitchRate)
	fmt.Fprintf(w, "max_share_deviation: %.4f\n", s.MaxDeviation)
	fmt.Fprintln(w, "shares:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  dataset\tshare\ttarget\tdeviation")
	for _, d := range datasetNames(s) {
		fmt.Fprintf(tw, "  %s\t%.4f\t%.4f\t%+.4f\n", d, s.Shares[d], s.Targets[d], s.Shares[d]-s.Targets[d])
	}
	return tw.Flush()
}

// datasetNames lists every dataset seen or targeted, sorted.
func datasetNames(s Summary) []string {
	names := map[string]bool{}
	for d := range s.Shares {
		names[d] = true
	}
	for d := range s.Targets {
		names[d] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// Print writes the summary table for people.
func (s Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	row("source", "%s", s.Source)
	row("decoder", "%s", s.Decoder)
	row("readers", "%d", s.Readers)
	row("batches measured", "%d × %d samples", s.Batches, s.BatchSize)
	row("throughput", "%.2f batches/s   %.1f samples/s   %.1f MB/s", s.BatchesPerS, s.SamplesPerS, s.MBPerS)
	row("latency", "p50 %s   p90 %s   p99 %s   max %s", ms(s.Latency.P50), ms(s.Latency.P90), ms(s.Latency.P99), ms(s.Latency.Max))
	row("time to first batch", "%s", ms(s.FirstBatchS))
	if s.ReaderCPUms > 0 {
		row("CPU per sample", "%.2f ms daemon + %.2f ms reader = %.2f ms", s.PipelineCPUms, s.ReaderCPUms, s.PipelineCPUms+s.ReaderCPUms)
	} else if s.PipelineCPUms > 0 {
		row("CPU per sample", "%.2f ms (this process: pipeline and readers)", s.PipelineCPUms)
	}
	if s.MemBudget > 0 {
		who := "daemon"
		if s.InProcess() {
			who = "pipeline" // this process: no daemon
		}
		row(who+" peak RSS", "%.0f MiB (--mem %.0f MiB)", float64(s.PeakRSS)/(1<<20), float64(s.MemBudget)/(1<<20))
	}
	// Bytes read through the sources' retrying readers: remote downloads,
	// and a local source's metadata and shards alike.
	row("cache hit rates", "RAM %.1f%%   disk %.1f%%   read from sources %.1f MB", 100*s.RAMHitRate, 100*s.DiskHitRate, float64(s.FetchedBytes)/1e6)
	// The dominant dataset's switch rate is in mixture_summary.txt: it
	// says nothing alone (equal weights switch on most batches, as they
	// should), so the table shows how far the mix served is from the one
	// asked for.
	d, dev := s.largestDeviation()
	if d == "" {
		row("mixture", "no dataset names in the batches' metadata")
	} else {
		row("mixture", "shares within %.2f points of their targets (largest: %s, %+.2f)", 100*s.MaxDeviation, d, 100*dev)
	}
	tw.Flush()
}

// InProcess reports whether the batches were built by this process (bench
// without a MOUNTPOINT) rather than read from a mount's daemon.
func (s Summary) InProcess() bool { return strings.HasPrefix(s.Source, "in-process") }

// largestDeviation returns the dataset whose measured share is furthest
// from its target, and the signed difference ("" when no share is known).
func (s Summary) largestDeviation() (string, float64) {
	name, dev := "", 0.0
	for _, d := range datasetNames(s) {
		if v := s.Shares[d] - s.Targets[d]; name == "" || math.Abs(v) > math.Abs(dev) {
			name, dev = d, v
		}
	}
	if len(s.Shares) == 0 {
		return "", 0
	}
	return name, dev
}

func ms(sec float64) string { return fmt.Sprintf("%.1f ms", sec*1e3) }

// colour is the i-th of n distinguishable colours: a fixed palette for
// up to 10, else hues spread by the golden angle at three lightnesses.
func colour(i, n int) string {
	base := []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}
	if n <= len(base) {
		return base[i%len(base)]
	}
	return fmt.Sprintf("hsl(%.0f,%d%%,%d%%)", math.Mod(float64(i)*137.508, 360), 60+10*(i%2), []int{40, 55, 70}[i%3])
}

// byShare lists the datasets by target share, largest first (then by
// measured share, then name).
func byShare(s Summary) []string {
	names := datasetNames(s)
	slices.SortStableFunc(names, func(a, b string) int {
		if c := cmp.Compare(s.Targets[b], s.Targets[a]); c != 0 {
			return c
		}
		return cmp.Compare(s.Shares[b], s.Shares[a])
	})
	return names
}

// chart is an SVG plot area with axes, ticks and labels.
type chart struct {
	w                      io.Writer
	width, height          int     // the whole picture
	left, right, top       int     // margins around the plot area
	bottom                 int     //
	xmin, xmax, ymin, ymax float64 // data range of the plot area
}

func (c *chart) pw() float64         { return float64(c.width - c.left - c.right) }
func (c *chart) ph() float64         { return float64(c.height - c.top - c.bottom) }
func (c *chart) x(v float64) float64 { return float64(c.left) + c.pw()*(v-c.xmin)/(c.xmax-c.xmin) }
func (c *chart) y(v float64) float64 { return float64(c.top) + c.ph()*(1-(v-c.ymin)/(c.ymax-c.ymin)) }

func (c *chart) begin(title string) {
	fmt.Fprintf(c.w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", c.width, c.height)
	fmt.Fprintf(c.w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(c.w, `<text x="%d" y="18" font-size="14">%s</text>`+"\n", c.left, xmlEscape(title))
}

func (c *chart) end() error {
	_, err := fmt.Fprintln(c.w, "</svg>")
	return err
}

// axes draws both axes with ticks at xticks and yticks, labelled by
// format, and the axis titles.
func (c *chart) axes(xticks, yticks []float64, xfmt, yfmt func(float64) string, xlabel, ylabel string) {
	x0, y0 := float64(c.left), float64(c.height-c.bottom)
	fmt.Fprintf(c.w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0+c.pw(), y0)
	fmt.Fprintf(c.w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, c.top, x0, y0)
	for _, v := range xticks {
		x := c.x(v)
		fmt.Fprintf(c.w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, y0, x, y0+5)
		fmt.Fprintf(c.w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, y0+18, xfmt(v))
	}
	for _, v := range yticks {
		y := c.y(v)
		fmt.Fprintf(c.w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+c.pw(), y)
		fmt.Fprintf(c.w, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, yfmt(v))
	}
	fmt.Fprintf(c.w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x0+c.pw()/2, y0+38, xmlEscape(xlabel))
	cy := float64(c.top) + c.ph()/2
	fmt.Fprintf(c.w, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`+"\n", cy, cy, xmlEscape(ylabel))
}

// ticks returns about n round values covering [lo, hi].
func ticks(lo, hi float64, n int) []float64 { return niceTicks(lo, hi, n, false) }

// batchTicks are ticks at whole batch counts in [0, n].
func batchTicks(n int) []float64 { return niceTicks(0, float64(n), 8, true) }

func niceTicks(lo, hi float64, n int, whole bool) []float64 {
	if hi <= lo {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw && (!whole || m*mag == math.Round(m*mag)) {
			step = m * mag
			break
		}
	}
	if whole {
		step = max(step, 1)
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

func pct(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// legendRows is how many legend lines fit beside a plot, 16 px each.
const legendRow = 16

// mixtureSVG draws the mixture over the run as small multiples, one row
// per dataset in order of target share (the largest first), each on its
// own scale so that 29 datasets stay readable in one colour: the
// dataset's share of each batch (bars), its running share since the first
// measured batch (line), its target (dashed), and at the right its target
// and the measured share's deviation from it, in points.
func mixtureSVG(w io.Writer, recs []Record, s Summary) error {
	names := byShare(s)
	longest := 0
	for _, d := range names {
		longest = max(longest, len(d))
	}
	const rowH = 30
	c := &chart{w: w, left: 20 + 7*longest, right: 210, top: 52, bottom: 48, xmin: 0, xmax: float64(max(len(recs), 1)), ymin: 0, ymax: 1}
	c.width = c.left + 640 + c.right
	c.height = c.top + rowH*max(len(names), 1) + c.bottom
	c.begin(fmt.Sprintf("Mixture over %d batches: each dataset's share per batch (bars), running share (line), target (dashed)", len(recs)))
	fmt.Fprintf(w, `<text x="%d" y="40" fill="#555">each row on its own scale, top = the row's largest share; right: target, and measured − target in points</text>`+"\n", c.left)
	totals := make([]int, len(recs))
	for i, rec := range recs {
		for _, n := range rec.DatasetCounts {
			totals[i] += n
		}
	}
	bw := c.pw() / c.xmax
	lx := c.width - c.right + 10
	for k, d := range names {
		y0 := float64(c.top + rowH*(k+1) - 4) // the row's baseline
		h := float64(rowH - 8)
		share := func(i int) float64 {
			if totals[i] == 0 {
				return 0
			}
			return float64(recs[i].DatasetCounts[d]) / float64(totals[i])
		}
		top := 2 * s.Targets[d]
		for i := range recs {
			top = max(top, share(i))
		}
		top = max(top, 1e-9)
		yv := func(v float64) float64 { return y0 - h*v/top }
		if k%2 == 0 {
			fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="#f4f4f4"/>`+"\n", c.left, y0-h-3, c.pw(), rowH)
		}
		for i := range recs {
			if f := share(i); f > 0 {
				fmt.Fprintf(w, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#9ecae1"/>`+"\n", c.x(float64(i)), yv(f), max(bw-0.3, 0.3), y0-yv(f))
			}
		}
		fmt.Fprintf(w, `<line x1="%d" x2="%.1f" y1="%.2f" y2="%.2f" stroke="#555" stroke-dasharray="4 3"/>`+"\n", c.left, float64(c.left)+c.pw(), yv(s.Targets[d]), yv(s.Targets[d]))
		var pts strings.Builder
		seen, all := 0, 0
		for i := range recs {
			seen += recs[i].DatasetCounts[d]
			all += totals[i]
			if all > 0 {
				fmt.Fprintf(&pts, "%.2f,%.2f ", c.x(float64(i)+1), yv(float64(seen)/float64(all)))
			}
		}
		if pts.Len() > 0 {
			fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="#08519c" stroke-width="1.5"/>`+"\n", strings.TrimSpace(pts.String()))
		}
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", c.left-6, y0-h/2+4, xmlEscape(d))
		fmt.Fprintf(w, `<text x="%d" y="%.1f">%s</text>`+"\n", lx, y0-h/2+4, xmlEscape(legendText(s, d)))
	}
	xt := batchTicks(len(recs))
	first := int64(0)
	if len(recs) > 0 {
		first = recs[0].Index
	}
	c.axes(xt, nil, func(v float64) string { return num(float64(first) + v) }, nil, "batch index", "")
	return c.end()
}

// legendText is a dataset's target and its measured share's deviation
// from it, in points: "target 3.4%, +0.04 pt".
func legendText(s Summary, d string) string {
	return fmt.Sprintf("target %s, %+.2f pt", pctFine(s.Targets[d]), 100*(s.Shares[d]-s.Targets[d]))
}

func pctFine(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// sharesSVG sets each dataset's measured share beside its target, one
// pair of bars per dataset, in order of target share.
func sharesSVG(w io.Writer, s Summary) error {
	names := byShare(s)
	top := 0.0
	for _, d := range names {
		top = max(top, s.Targets[d], s.Shares[d])
	}
	top = max(top*1.1, 0.01)
	const row = 22
	longest := 0
	for _, d := range names {
		longest = max(longest, len(d))
	}
	left := 20 + 7*longest
	c := &chart{w: w, width: left + 700, left: left, right: 100, top: 56, bottom: 56, xmin: 0, xmax: top, ymin: 0, ymax: 1}
	c.height = c.top + row*max(len(names), 1) + c.bottom
	c.begin(fmt.Sprintf("Share of samples per dataset: target and measured (largest deviation %.2f points)", 100*s.MaxDeviation))
	fmt.Fprintf(w, `<rect x="%d" y="30" width="10" height="8" fill="#bab0ac"/><text x="%d" y="38">target</text>`+"\n", c.left, c.left+14)
	fmt.Fprintf(w, `<rect x="%d" y="30" width="10" height="8" fill="#4e79a7"/><text x="%d" y="38">measured</text>`+"\n", c.left+70, c.left+84)
	for k, d := range names {
		y := float64(c.top + row*k)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", c.left-6, y+14, xmlEscape(d))
		fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%.2f" height="8" fill="#bab0ac"/>`+"\n", c.left, y+3, c.x(s.Targets[d])-float64(c.left))
		fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%.2f" height="8" fill="#4e79a7"/>`+"\n", c.left, y+11, c.x(s.Shares[d])-float64(c.left))
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">%+.2f pt</text>`+"\n", c.x(max(s.Targets[d], s.Shares[d]))+4, y+14, 100*(s.Shares[d]-s.Targets[d]))
	}
	c.axes(ticks(0, top, 6), nil, pct, nil, "share of samples", "")
	return c.end()
}

// markers tell readers apart beside their colour.
var markers = []string{"circle", "square", "triangle", "diamond"}

func marker(w io.Writer, kind string, x, y float64, fill string) {
	switch kind {
	case "square":
		fmt.Fprintf(w, `<rect x="%.2f" y="%.2f" width="5" height="5" fill="%s"/>`+"\n", x-2.5, y-2.5, fill)
	case "triangle":
		fmt.Fprintf(w, `<path d="M%.2f %.2fl3 5h-6z" fill="%s"/>`+"\n", x, y-3, fill)
	case "diamond":
		fmt.Fprintf(w, `<path d="M%.2f %.2fl3 3l-3 3l-3 -3z" fill="%s"/>`+"\n", x, y-3, fill)
	default:
		fmt.Fprintf(w, `<circle cx="%.2f" cy="%.2f" r="2.5" fill="%s"/>`+"\n", x, y, fill)
	}
}

// latencySVG plots each batch's read latency, one colour and marker per
// reader, and the percentiles.
func latencySVG(w io.Writer, recs []Record, s Summary) error {
	top := s.Latency.Max * 1.05
	if top <= 0 {
		top = 1
	}
	readers := 0
	for _, rec := range recs {
		readers = max(readers, rec.Reader+1)
	}
	c := &chart{w: w, width: 1000, left: 70, right: 170, top: 36, bottom: 56, xmin: 0, xmax: float64(max(len(recs), 1)), ymin: 0, ymax: top * 1e3}
	c.height = max(440, c.top+legendRow*(readers+5)+c.bottom)
	c.begin(fmt.Sprintf("Read latency per batch (%d batches, %d readers)", len(recs), readers))
	for i, rec := range recs {
		marker(w, markers[rec.Reader%len(markers)], c.x(float64(i)+0.5), c.y(rec.Seconds*1e3), colour(rec.Reader, readers))
	}
	first := int64(0)
	if len(recs) > 0 {
		first = recs[0].Index
	}
	c.axes(batchTicks(len(recs)), ticks(0, top*1e3, 6), func(v float64) string { return num(float64(first) + v) },
		func(v float64) string { return num(v) }, "batch index", "read latency (ms)")
	lx := c.width - c.right + 16
	for k, p := range []struct {
		name string
		v    float64
	}{{"p50", s.Latency.P50}, {"p90", s.Latency.P90}, {"p99", s.Latency.P99}} {
		y := c.y(p.v * 1e3)
		dash := []string{"2 2", "6 3", "10 3"}[k]
		fmt.Fprintf(w, `<line x1="%d" x2="%.1f" y1="%.2f" y2="%.2f" stroke="#333" stroke-dasharray="%s"/>`+"\n", c.left, float64(c.left)+c.pw(), y, y, dash)
		ly := c.top + legendRow*k
		fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333" stroke-dasharray="%s"/><text x="%d" y="%d">%s %s</text>`+"\n",
			lx, lx+20, ly+6, ly+6, dash, lx+26, ly+10, p.name, ms(p.v))
	}
	for r := range readers {
		ly := c.top + legendRow*(r+4)
		marker(w, markers[r%len(markers)], float64(lx+5), float64(ly+6), colour(r, readers))
		fmt.Fprintf(w, `<text x="%d" y="%d">reader %d</text>`+"\n", lx+14, ly+10, r)
	}
	return c.end()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// WriteFiles writes batch_times.jsonl, mixture_summary.txt,
// mixture_over_time.svg, latency.svg and summary.json into dir.
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
	recs := append([]Record(nil), r.Records...)
	slices.SortFunc(recs, func(a, b Record) int { return int(a.Index - b.Index) })
	return firstErr(
		write("batch_times.jsonl", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			for _, rec := range recs {
				if err := enc.Encode(rec); err != nil {
					return err
				}
			}
			return nil
		}),
		write("mixture_summary.txt", func(w io.Writer) error { return writeMixture(w, s) }),
		write("mixture_over_time.svg", func(w io.Writer) error { return mixtureSVG(w, r.Measured(), s) }),
		write("latency.svg", func(w io.Writer) error { return latencySVG(w, r.Measured(), s) }),
		write("summary.json", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}),
	)
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
	fmt.Fprintf(w, "dominant_switch_rate: %.4f\n", s.Mixture.DominantSwitchRate)
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
		row("daemon peak RSS", "%.0f MiB (--mem %.0f MiB)", float64(s.PeakRSS)/(1<<20), float64(s.MemBudget)/(1<<20))
	}
	row("cache hit rates", "RAM %.1f%%   disk %.1f%%   fetched %.1f MB", 100*s.RAMHitRate, 100*s.DiskHitRate, float64(s.FetchedBytes)/1e6)
	row("mixture", "largest share deviation %.4f; dominant dataset switches %.0f%% of batches", s.MaxDeviation, 100*s.Mixture.DominantSwitchRate)
	tw.Flush()
}

func ms(sec float64) string { return fmt.Sprintf("%.1f ms", sec*1e3) }

// palette colours datasets in the charts.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

const (
	svgW, svgH       = 900, 420
	padL, padR, padT = 60, 180, 30
	padB             = 50
)

// mixtureSVG stacks each batch's dataset shares (x: batch, y: share).
func mixtureSVG(w io.Writer, recs []Record, s Summary) error {
	names := datasetNames(s)
	pw, ph := float64(svgW-padL-padR), float64(svgH-padT-padB)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH)
	fmt.Fprintf(w, `<text x="%d" y="18">Mixture per batch: share of each dataset (%d batches)</text>`+"\n", padL, len(recs))
	if len(recs) > 0 {
		bw := pw / float64(len(recs))
		for i, rec := range recs {
			total := 0
			for _, c := range rec.DatasetCounts {
				total += c
			}
			if total == 0 {
				continue
			}
			y := float64(padT)
			for k, d := range names {
				h := ph * float64(rec.DatasetCounts[d]) / float64(total)
				if h > 0 {
					fmt.Fprintf(w, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`+"\n",
						float64(padL)+float64(i)*bw, y, bw, h, palette[k%len(palette)])
				}
				y += h
			}
		}
	}
	axes(w, "batch (in index order)", "share of samples")
	for k, d := range names {
		if k >= 20 {
			fmt.Fprintf(w, `<text x="%d" y="%d">… %d more</text>`+"\n", svgW-padR+10, padT+k*16+10, len(names)-k)
			break
		}
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s (target %.3f)</text>`+"\n",
			svgW-padR+10, padT+k*16, palette[k%len(palette)], svgW-padR+24, padT+k*16+10, xmlEscape(d), s.Targets[d])
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}

// latencySVG plots each batch's read latency and the percentiles.
func latencySVG(w io.Writer, recs []Record, s Summary) error {
	pw, ph := float64(svgW-padL-padR), float64(svgH-padT-padB)
	top := s.Latency.Max
	if top <= 0 {
		top = 1
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH)
	fmt.Fprintf(w, `<text x="%d" y="18">Read latency per batch (max %s)</text>`+"\n", padL, ms(top))
	for i, rec := range recs {
		x := float64(padL) + pw*(float64(i)+0.5)/float64(max(len(recs), 1))
		y := float64(padT) + ph*(1-rec.Seconds/top)
		fmt.Fprintf(w, `<circle cx="%.2f" cy="%.2f" r="2" fill="%s"/>`+"\n", x, y, palette[rec.Reader%len(palette)])
	}
	for k, p := range []struct {
		name string
		v    float64
	}{{"p50", s.Latency.P50}, {"p90", s.Latency.P90}, {"p99", s.Latency.P99}} {
		y := float64(padT) + ph*(1-p.v/top)
		fmt.Fprintf(w, `<line x1="%d" x2="%.0f" y1="%.2f" y2="%.2f" stroke="%s" stroke-dasharray="4 3"/>`+"\n",
			padL, float64(padL)+pw, y, y, palette[(k+2)%len(palette)])
		fmt.Fprintf(w, `<text x="%.0f" y="%.2f">%s %s</text>`+"\n", float64(padL)+pw+6, y+4, p.name, ms(p.v))
	}
	axes(w, "batch (in index order); colour: reader", "latency (0 to max)")
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}

func axes(w io.Writer, xlabel, ylabel string) {
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, svgH-padB, svgW-padR, svgH-padB)
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT, padL, svgH-padB)
	fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", padL, svgH-padB+30, xmlEscape(xlabel))
	fmt.Fprintf(w, `<text x="14" y="%d" transform="rotate(-90 14 %d)">%s</text>`+"\n", svgH/2+40, svgH/2+40, xmlEscape(ylabel))
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/oxefs/oxefs/check"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/loader"
)

type checkCmd struct {
	pipelineFlags
	JSON bool `help:"Print the report as JSON (what oxefs view --check shows)."`
	Val  bool `help:"Check each dataset's val split too." default:"true" negatable:""`
}

// checkReport is oxefs check --json.
type checkReport struct {
	Datasets []check.Report `json:"datasets"`
	Defects  int            `json:"defects"`
}

// Run reads every episode of each dataset's selected splits once, with
// progress, and reports the defects per dataset. It exits 1 when there is
// any.
func (c *checkCmd) Run(ctx context.Context, log *slog.Logger) error {
	p, err := c.open(ctx, log, false, nil, false)
	if err != nil {
		return err
	}
	defer p.Close()
	rep := checkReport{Datasets: []check.Report{}}
	progress := checkProgress()
	for _, d := range p.Mix.Datasets {
		sels := []struct {
			name   string
			ranges []episode.Range
		}{{d.Config.Split, d.Train}}
		if c.Val && d.Val != nil {
			sels = append(sels, struct {
				name   string
				ranges []episode.Range
			}{d.Config.ValSplit, d.Val})
		}
		reported := map[format.Finding]bool{} // a file both selections read is reported once
		for _, sel := range sels {
			r, err := checkSelection(ctx, p, d, sel.name, sel.ranges, c.Workers, progress, reported)
			if err != nil {
				return fmt.Errorf("dataset %s split %s: %w", d.Config.Name, sel.name, err)
			}
			rep.Datasets = append(rep.Datasets, r)
			rep.Defects += len(r.Defects)
		}
	}
	if c.JSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Printf("%s\n", b)
	} else if err := printCheck(rep); err != nil {
		return err
	}
	if rep.Defects > 0 {
		return fmt.Errorf("%d defects: %w", rep.Defects, check.ErrDefects)
	}
	return nil
}

// checkSpec is what to check in dataset d's episodes, from the mix.
func checkSpec(p *loader.Pipeline, d *loader.Dataset) check.Spec {
	s := check.Spec{ActionKeys: d.Config.ActionKeys, StateKey: d.Config.StateKey}
	info := d.Data.Info()
	// Every camera stored as images, not only those the mix reads (a
	// frozen camera is a defect of the data either way), and the video
	// cameras the mix reads (the others' files are not opened).
	reads := map[string]bool{d.Image.Key: true}
	for _, k := range d.Cameras {
		reads[k] = true
	}
	s.Cameras = info.Features.Matching(func(f episode.Feature) bool {
		return f.Kind == episode.KindImage && f.PerStep && !f.Ragged && (!strings.HasPrefix(f.Encoding, "video/") || reads[f.Key])
	})
	if d.Cameras != nil {
		if n := len(d.Deltas.Action); n > 0 {
			s.MinSteps = slices.Max(d.Deltas.Action) + 1
			s.MinStepsWhy = "steps of the mix's action chunk"
		}
	} else {
		s.MinSteps = d.Config.Offset.Min + 1
		s.MinStepsWhy = fmt.Sprintf("steps an offset of %d needs", d.Config.Offset.Min)
	}
	if f, ok := info.Features.Lookup("timestamp"); ok && f.PerStep {
		s.TimestampKey, s.FPS = "timestamp", info.FPS
	}
	return s
}

// checkSelection reads every episode of one split selection of d once,
// and has the files that hold them audited as wholes when the format can
// (format.Auditor); a finding in reported already is left out.
func checkSelection(ctx context.Context, p *loader.Pipeline, d *loader.Dataset, split string, ranges []episode.Range, workers int, progress func(string, int64, int64), reported map[format.Finding]bool) (check.Report, error) {
	segs, err := d.Data.Info().Segments(ranges)
	if err != nil {
		return check.Report{}, err
	}
	var total int64
	for _, s := range segs {
		total += int64(s.Count)
	}
	what := d.Config.Name + " " + split
	progress(what, 0, total)
	c := check.New(d.Config.Name, split, checkSpec(p, d))
	var (
		mu   sync.Mutex
		done int64
	)
	err = d.Data.Scan(ctx, segs, workers, func(_ int, key episode.Key, ep episode.Episode, err error) error {
		defer func() {
			mu.Lock()
			done++
			progress(what, done, total)
			mu.Unlock()
		}()
		if err == nil {
			ep = ep.Rename(d.Config.Name)
			err = c.Add(ep)
		}
		if errors.Is(err, episode.ErrCorrupt) {
			c.Refused(fmt.Sprintf("%s/%s/%d/%d", d.Config.Name, key.Split, key.Shard, key.Record), err)
			return nil
		}
		return err
	})
	if err != nil {
		return check.Report{}, err
	}
	if a, ok := d.Data.(format.Auditor); ok {
		found, err := a.Audit(ctx, ranges)
		if err != nil {
			return check.Report{}, err
		}
		for _, f := range found {
			if reported[f] {
				continue
			}
			reported[f] = true
			kind := check.FrameCount
			if f.Kind == format.OrphanRow {
				kind = check.Orphan
			}
			c.Found(check.Defect{Kind: kind, Episode: f.Episode, File: f.File, Detail: f.Detail})
		}
	}
	return c.Report(), nil
}

// checkProgress shows one bar per dataset and split.
func checkProgress() func(what string, done, total int64) {
	bars := map[string]progress{}
	return func(what string, done, total int64) {
		bar := bars[what]
		if bar == nil {
			bar = newBar(total, "checking "+what, "episodes")
			bars[what] = bar
		}
		_ = bar.Set64(done)
		if done >= total {
			_ = bar.Finish()
		}
	}
}

// printCheck writes the report as a table, then each defect.
func printCheck(rep checkReport) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\tsplit\tepisodes\tsteps\tdefects\tsuggested chunk\taction autocorrelation (lag 0, 1, 2, 4, 8, 16, 32)\n")
	for _, d := range rep.Datasets {
		var ac []string
		for _, k := range []int{0, 1, 2, 4, 8, 16, 32} {
			if k < len(d.ActionAutocorrelation) {
				ac = append(ac, fmt.Sprintf("%.2f", d.ActionAutocorrelation[k]))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", d.Name, d.Split, d.Episodes, d.Steps, len(d.Defects), d.SuggestedChunk, strings.Join(ac, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range rep.Datasets {
		for _, x := range d.Defects {
			where := x.Episode
			if where == "" {
				where = d.Name + " " + x.File
			}
			fmt.Printf("%s %s: %s\n", x.Kind, where, x.Detail)
		}
		for _, n := range d.Notes {
			fmt.Printf("note %s %s: %s\n", d.Name, d.Split, n)
		}
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/oxefs/oxefs/bench"
	"github.com/oxefs/oxefs/loader"
)

type benchCmd struct {
	Mountpoint string `arg:"" optional:"" help:"Mount to read. Omit it to build the same batches in-process, without FUSE: those of --config, or of the built-in demo mix." type:"path"`
	pipelineFlags
	Readers int           `help:"Readers, each reading like a DataLoader worker: reader i reads start+i, start+i+R, ..." default:"4"`
	Warmup  int64         `help:"Batches read first and not measured." default:"5"`
	Batches int64         `help:"Batches measured." default:"50"`
	Start   int64         `help:"First batch index." default:"0"`
	Compute time.Duration `help:"Sleep per batch after reading it, as a training step would." default:"0s"`
	Out     string        `help:"Directory for the files it writes: ${bench_files}." default:"bench-out" type:"path"`
	Val     bool          `help:"Read the validation view."`
	Offline bool          `help:"${offline_help} In-process only: a MOUNTPOINT is read as it serves."`
	JSON    bool          `help:"Print the summary as one JSON object." name:"json"`
	Bare    bool          `help:"In-process only: instead of the pipeline, time a bare decode loop over the same samples' video frames (--workers decoders, stored size, no scheduler, resize or metadata): the decoder's ceiling for a LeRobot mix." name:"bare-decode"`
	Cost    bool          `help:"In-process only: what the config's augment blocks cost. Builds each batch twice in one process, with them and with --augment off, the two in turn batch by batch, one build at a time and with no readahead, and reports the CPU per sample of each and their ratio." name:"augment-cost"`
}

func (c *benchCmd) Run(ctx context.Context, log *slog.Logger) error {
	var src bench.Source
	switch {
	case c.Mountpoint != "" && c.Config != "":
		return errors.New("give a MOUNTPOINT to read, or --config to build in-process, not both")
	case c.Mountpoint != "" && c.Bare:
		return errors.New("--bare-decode runs in-process: give --config, not a MOUNTPOINT")
	case c.Mountpoint != "" && c.Cost:
		return errors.New("--augment-cost builds in-process: give --config, not a MOUNTPOINT")
	case c.Cost && c.Bare:
		return errors.New("--augment-cost and --bare-decode are two different runs: give one")
	case c.Cost && c.Augment == "off":
		return errors.New("--augment-cost compares the config's augmentation with --augment off itself: leave --augment on")
	case c.Mountpoint != "" && c.Offline:
		return errors.New("--offline builds in-process from the cache; a MOUNTPOINT is read as its daemon serves it (mount it with --offline)")
	case c.Mountpoint != "":
		if given := givenFlags(os.Args[1:], buildFlags...); len(given) > 0 {
			log.Warn("ignored with a MOUNTPOINT: the mount's daemon builds the batches with the flags it was started with; omit the MOUNTPOINT to build in-process with these",
				"flags", strings.Join(given, " "))
		}
		m, err := bench.NewMount(c.Mountpoint, c.Val)
		if err != nil {
			return err
		}
		src = m
	case c.Cost:
		return c.augmentCost(ctx, log)
	default:
		// In-process: --config's mix, or (as a mount would serve) the
		// built-in demo mix.
		p, err := c.open(ctx, log, c.Offline, nil, false)
		if err != nil {
			return err
		}
		defer p.Close()
		if c.Bare {
			return c.bare(ctx, p)
		}
		src = bench.InProcess{P: p, Val: c.Val, Desc: c.mixName()}
	}
	bar := newBar(c.Warmup+c.Batches, "benchmark", "batches")
	res, err := bench.Run(ctx, src, bench.Options{
		Readers: c.Readers, Warmup: c.Warmup, Batches: c.Batches, Start: c.Start, Compute: c.Compute,
		Progress: func() { _ = bar.Add(1) },
	})
	_ = bar.Finish()
	if err != nil {
		return err
	}
	s := res.Summarise()
	if err := res.WriteFiles(c.Out, s); err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(s)
	}
	s.Print(os.Stdout)
	fmt.Printf("files in %s\n", c.Out)
	return nil
}

// buildFlags are the flags that shape how batches are built: a mount's
// daemon took its own, so bench MOUNTPOINT ignores them.
var buildFlags = []string{"--workers", "--mem", "--disk", "--decoder", "--readahead", "--rank", "--world", "--seed",
	"--strict", "--max-fetch-rate", "--fetch-stall", "--fetch-timeout", "--verify-ranges", "--cache-dir"}

// givenFlags returns those of names that args give ("--workers 4" or
// "--workers=4"), in the order of names.
func givenFlags(args []string, names ...string) []string {
	var out []string
	for _, name := range names {
		for _, a := range args {
			if a == "--" {
				break
			}
			if a == name || strings.HasPrefix(a, name+"=") {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// bare times the bare decode loop over the samples the benchmark would
// read: the warmup batches first, untimed, then the measured ones.
func (c *benchCmd) bare(ctx context.Context, p *loader.Pipeline) error {
	if c.Warmup > 0 {
		if _, err := bench.BareDecode(ctx, p.Mix.Train, p.Mix.BareDatasets(), c.Start, c.Warmup, c.Workers); err != nil {
			return err
		}
	}
	res, err := bench.BareDecode(ctx, p.Mix.Train, p.Mix.BareDatasets(), c.Start+c.Warmup, c.Batches, c.Workers)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{
			"bare_decode": true, "samples": res.Samples, "frames": res.Frames,
			"seconds": res.Elapsed.Seconds(), "samples_per_s": res.SamplesPerSecond(), "workers": c.Workers,
		})
	}
	fmt.Printf("bare decode loop, %d workers: %d samples (%d frames) in %.2f s: %.1f samples/s\n",
		c.Workers, res.Samples, res.Frames, res.Elapsed.Seconds(), res.SamplesPerSecond())
	return nil
}

// augmentCost is --augment-cost: the config's batches with and without
// augmentation, side by side (bench.Paired), each pipeline without
// readahead so that no build runs while the other's is measured.
func (c *benchCmd) augmentCost(ctx context.Context, log *slog.Logger) error {
	if given := givenFlags(os.Args[1:], "--readahead", "--readers"); len(given) > 0 {
		log.Warn("ignored with --augment-cost: it builds one batch at a time, with no readahead", "flags", strings.Join(given, " "))
	}
	c.Readahead = 0
	on, err := c.open(ctx, log, c.Offline, nil, false)
	if err != nil {
		return err
	}
	defer on.Close()
	var doc struct {
		Augment json.RawMessage `json:"augment"`
	}
	if json.Unmarshal(on.Info(), &doc) != nil || len(doc.Augment) == 0 || string(doc.Augment) == "null" {
		return fmt.Errorf("--augment-cost: %s augments nothing (info.json lists no augment arrays: no augment block applies to any camera): nothing to compare", c.mixName())
	}
	c.Augment = "off"
	off, err := c.open(ctx, log, c.Offline, nil, false)
	if err != nil {
		return err
	}
	defer off.Close()
	desc := c.mixName()
	p := bench.Paired{
		A: bench.InProcess{P: on, Val: c.Val, Desc: desc + " (augment on)"},
		B: bench.InProcess{P: off, Val: c.Val, Desc: desc + " (augment off)"},
	}
	bar := newBar(c.Warmup+c.Batches, "augment cost", "batches")
	res, err := p.Run(ctx, bench.Options{Warmup: c.Warmup, Batches: c.Batches, Start: c.Start,
		Progress: func() { _ = bar.Add(1) }})
	_ = bar.Finish()
	if err != nil {
		return err
	}
	s := res.Summarise()
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{
			"augment_cost": true, "config": desc, "start": c.Start, "warmup": c.Warmup, "workers": c.Workers,
			"batches": s.Batches, "samples": s.Samples,
			"on_cpu_ms_per_sample": s.AMsPerSample, "off_cpu_ms_per_sample": s.BMsPerSample,
			"ratio": s.Ratio, "batch_ratio_median": s.BatchMedian, "batch_ratio_min": s.BatchMin, "batch_ratio_max": s.BatchMax,
		})
	}
	fmt.Printf("what augmentation costs, in-process %s: batches %d..%d after %d of warm-up, each built with and without it in turn, %d workers\n",
		desc, c.Start+c.Warmup, c.Start+c.Warmup+c.Batches-1, c.Warmup, c.Workers)
	fmt.Printf("  augment off  %6.3f ms CPU per sample\n", s.BMsPerSample)
	fmt.Printf("  augment on   %6.3f ms CPU per sample\n", s.AMsPerSample)
	fmt.Printf("  on ÷ off     %6.3f (batch by batch: median %.3f, %.3f–%.3f)\n", s.Ratio, s.BatchMedian, s.BatchMin, s.BatchMax)
	return nil
}

// mixName names what an in-process run builds: --config's file, or the
// built-in demo mix.
func (c *benchCmd) mixName() string {
	if c.Config == "" {
		return "built-in demo mix"
	}
	return c.Config
}

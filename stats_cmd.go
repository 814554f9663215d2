package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/norm"
)

type statsCmd struct {
	pipelineFlags
	JSON bool `help:"Print the statistics as JSON, by dataset (as info.json's datasets.<name>.stats shows them)."`
}

// Run computes each dataset's normalisation statistics where none are
// saved for its bytes and config (one pass over its train selection, with
// progress), saves them beside its episode-length index, and prints them.
func (c *statsCmd) Run(ctx context.Context, log *slog.Logger) error {
	p, err := c.open(ctx, log, false, nil, false)
	if err != nil {
		return err
	}
	defer p.Close()
	return printStats(ctx, p, c.Workers, c.Decoder, c.JSON)
}

// printStats computes what is missing (frames decoded with the JPEG
// decoder jpeg) and prints every dataset's statistics.
func printStats(ctx context.Context, p *loader.Pipeline, workers int, jpeg string, asJSON bool) error {
	if err := p.Mix.NormStats(ctx, true, workers, jpeg, indexProgress()); err != nil {
		return err
	}
	if asJSON {
		out := map[string]*norm.Stats{}
		for _, d := range p.Mix.Datasets {
			out[d.Config.Name] = d.Norm
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Printf("%s\n", b)
		return err
	}
	for _, d := range p.Mix.Datasets {
		s := d.Norm
		// Pairs hold the action summed over [t, t+offset), and their
		// statistics action_summed; step samples each step's action.
		about := "step samples: action and state per step"
		if s.ActionSum != nil {
			about = fmt.Sprintf("action_summed is over [t, t+offset) for offset %v", d.Config.Offset)
		}
		fmt.Printf("%s: %d episodes (%d skipped as corrupt); %s\n", d.Config.Name, s.Episodes, s.Skipped, about)
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "quantity\tdim\tmean\tstd\tmin\tmax\tq01\tq99\t\n")
		type quantity struct {
			name string
			s    *norm.Stat
		}
		quantities := []quantity{{"action", s.Action}, {"action_summed", s.ActionSum}, {"state", s.State}}
		for _, sl := range slices.Sorted(maps.Keys(s.Images)) {
			quantities = append(quantities, quantity{"image." + sl, s.Images[sl]}) // dims: R, G, B in [0, 1]
		}
		for _, q := range quantities {
			if q.s == nil {
				continue
			}
			for j := range q.s.Mean {
				var qs [2]float64
				if len(q.s.Q01) > j {
					qs = [2]float64{q.s.Q01[j], q.s.Q99[j]}
				}
				fmt.Fprintf(tw, "%s\t%d\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t\n", q.name, j, q.s.Mean[j], q.s.Std[j], q.s.Min[j], q.s.Max[j], qs[0], qs[1])
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

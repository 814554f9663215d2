// Command oxefs serves robot-learning datasets as training batches through a
// FUSE filesystem. See README.md.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/oxefs/oxefs/bench"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

type cli struct {
	LogLevel slog.Level `help:"Log level: debug, info, warn, error." default:"info" name:"log-level"`

	Mount   mountCmd   `cmd:"" help:"Serve a mix as batch files at MOUNTPOINT until SIGINT/SIGTERM."`
	Bench   benchCmd   `cmd:"" help:"Measure a mount, or without one the same batches built in-process (those of --config, or of the built-in demo mix)."`
	Warm    warmCmd    `cmd:"" help:"Fetch the shards a mix needs into the disk cache and build missing indexes, with progress."`
	Stats   statsCmd   `cmd:"" help:"Compute each dataset's normalisation statistics (mean, std, min, max, q01, q99 of actions and states), save and print them."`
	Inspect inspectCmd `cmd:"" help:"Describe a dataset, RLDS (TFDS) or LeRobot v3, local or on gs://, s3:// or the Hugging Face Hub (hf://): splits, files, features, image keys."`
	Synth   synthCmd   `cmd:"" help:"Write OXE-like synthetic datasets and mix configs for offline trials."`
	Check   checkCmd   `cmd:"" help:"Read every episode of each dataset's splits once and report defects (non-finite values, bad timestamps, frozen cameras, short or unreadable episodes) and the action autocorrelation."`
	View    viewCmd    `cmd:"" help:"Serve a web page of a mount: the mix, any batch as the trainer receives it, live counters."`
	Version versionCmd `cmd:"" help:"Print the oxefs version."`
}

type versionCmd struct{}

func (versionCmd) Run() error {
	fmt.Println("oxefs", version)
	return nil
}

func main() {
	var c cli
	kctx := kong.Parse(&c,
		kong.Name("oxefs"),
		kong.Description("Robot-learning datasets as training batches, through a FUSE filesystem."),
		kong.ShortUsageOnError(),
		kong.Vars{
			"cache_dir":    defaultCacheDir(),
			"mem":          defaultMem(),
			"workers":      fmt.Sprint(runtime.NumCPU()),
			"offline_help": offlineHelp,
			"bench_files":  strings.Join(bench.Files(), ", "),
		},
	)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: c.LogLevel}))
	kctx.BindTo(ctx, (*context.Context)(nil))
	kctx.Bind(log)
	if err := kctx.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "oxefs:", err)
		os.Exit(1)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/view"
)

type viewCmd struct {
	Mount    string `arg:"" help:"An oxefs mount (the directory that holds info.json), or a rank's directory of it." type:"existingdir"`
	Addr     string `help:"Address to serve the page on. Loopback unless you name another; port 0 picks a free one." default:"127.0.0.1:8765"`
	Check    string `help:"An oxefs check --json report to show on the page." type:"existingfile" placeholder:"FILE"`
	Bench    string `help:"An oxefs bench --out directory whose pictures (mixture over time, shares, latency) the live section shows, refreshed as bench rewrites them." type:"existingdir" placeholder:"DIR"`
	Episodes bool   `help:"Serve the episode scrubber: open, in this process, the datasets of the config the mount's info.json records, and read their episodes from their sources as the daemon does." default:"true" negatable:""`
	CacheDir string `help:"Disk cache the scrubber reads remote sources through (the daemon's may be shared)." default:"${cache_dir}" name:"cache-dir" type:"path"`
	Decoder  string `help:"JPEG decoder of the scrubber's frames: auto, turbo or go (see oxefs mount)." default:"auto" env:"OXEFS_DECODER"`
}

func (c *viewCmd) Run(ctx context.Context, log *slog.Logger) error {
	var check []byte
	if c.Check != "" {
		var err error
		if check, err = os.ReadFile(c.Check); err != nil {
			return err
		}
	}
	opts := view.Options{Check: check, BenchDir: c.Bench}
	if c.Episodes {
		p, err := mountDatasets(ctx, log, c.Mount, c.CacheDir, c.Decoder)
		if err != nil {
			// The rest of the page does without: it reads the mount only.
			log.Warn("view: no episode scrubber: the datasets of the mount's config did not open (--no-episodes: do not try)", "err", err)
		} else {
			defer p.Close()
			opts.Episodes = viewEpisodes{p, c.Decoder}
		}
	}
	done, err := serveView(ctx, log, c.Mount, c.Addr, opts)
	if err != nil {
		return err
	}
	return <-done
}

// mountDatasets opens the datasets of the mix the mount at dir serves,
// from the config its info.json records (every field of it, sources
// included, as the daemon parsed it), for the episode scrubber. Nothing
// is built: the pipeline is only the datasets and their episode cache.
func mountDatasets(ctx context.Context, log *slog.Logger, dir, cacheDir, decoder string) (*loader.Pipeline, error) {
	b, err := os.ReadFile(filepath.Join(dir, "info.json"))
	if err != nil {
		return nil, err
	}
	var in struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("info.json: %w", err)
	}
	if len(in.Config) == 0 {
		return nil, errors.New("info.json records no config")
	}
	cfg, err := config.Parse(in.Config) // JSON is YAML
	if err != nil {
		return nil, fmt.Errorf("info.json's config: %w", err)
	}
	return loader.Open(ctx, loader.Options{
		Config:     cfg,
		CacheDir:   cacheDir,
		Mem:        scrubberMem,
		Disk:       scrubberMem,
		Workers:    1,
		Decoder:    decoder,
		World:      1,
		AugmentOff: true,
		Version:    version,
		Log:        log.With("for", "view: episode scrubber"),
	})
}

// scrubberMem bounds what the scrubber's datasets hold (mostly the
// episodes it shows) and the disk cache they may fill.
const scrubberMem = 1 << 30

// serveView serves the page of the mount at dir on addr until ctx is
// done, and logs its URL.
func serveView(ctx context.Context, log *slog.Logger, dir, addr string, opts view.Options) (<-chan error, error) {
	opts.Log = log
	m, err := view.OpenMount(dir)
	if err != nil {
		return nil, err
	}
	a, done, err := view.Listen(ctx, addr, view.NewServer(m, opts), log)
	if err != nil {
		m.Close()
		return nil, err
	}
	log.Info("view: serving the page", "url", fmt.Sprintf("http://%s/", a), "mount", dir)
	out := make(chan error, 1)
	go func() {
		err := <-done
		m.Close()
		out <- err
	}()
	return out, nil
}

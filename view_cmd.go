package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/oxefs/oxefs/view"
)

type viewCmd struct {
	Mount string `arg:"" help:"An oxefs mount (the directory that holds info.json), or a rank's directory of it." type:"existingdir"`
	Addr  string `help:"Address to serve the page on. Loopback unless you name another; port 0 picks a free one." default:"127.0.0.1:8765"`
	Check string `help:"An oxefs check --json report to show on the page." type:"existingfile" placeholder:"FILE"`
	Bench string `help:"An oxefs bench --out directory whose pictures (mixture over time, shares, latency) the live section shows, refreshed as bench rewrites them." type:"existingdir" placeholder:"DIR"`
}

func (c *viewCmd) Run(ctx context.Context, log *slog.Logger) error {
	var check []byte
	if c.Check != "" {
		var err error
		if check, err = os.ReadFile(c.Check); err != nil {
			return err
		}
	}
	done, err := serveView(ctx, log, c.Mount, c.Addr, view.Options{Check: check, BenchDir: c.Bench})
	if err != nil {
		return err
	}
	return <-done
}

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

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oxefs/oxefs/fs"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/view"
)

type mountCmd struct {
	Mountpoint string `arg:"" help:"Empty directory to mount on (see --nonempty); created if missing." type:"path"`
	pipelineFlags
	Ranks       string        `help:"Serve these ranks of --world from this one daemon, each under MOUNTPOINT/rank/R/ (a list or ranges: 0-7 on the first 8-GPU node, 8-15 on the second, 0,2,4-5): one cache, one decode pool, one --mem. Instead of --rank." placeholder:"RANKS"`
	AllowOther  bool          `help:"Let other users read the mount (needs user_allow_other in /etc/fuse.conf unless root)." name:"allow-other"`
	Passthrough bool          `help:"Serve .npy files by FUSE passthrough where the kernel allows it (Linux 6.9 or later, as root): each batch is built in a memfd that the kernel reads and maps without the daemon. Elsewhere, and with --no-passthrough, files are served through the page cache." default:"true" negatable:""`
	DirectIO    bool          `help:"Serve .npy files with direct I/O instead of passthrough or the page cache: each read goes to the daemon, nothing is cached, and numpy mmap_mode cannot map them." name:"direct-io"`
	NonEmpty    bool          `help:"Mount over a directory that holds files (hidden while mounted). A live oxefs mount is refused regardless." name:"nonempty"`
	Offline     bool          `help:"${offline_help}"`
	Grace       time.Duration `help:"On SIGINT/SIGTERM the mount is detached at once (no new opens) and files already open or mapped are served until closed, for at most this long; then the daemon exits 0. A second signal ends the wait." default:"30s"`
	// ExitWithParent ties the daemon to the process that started it (the
	// Python package sets it): a trainer killed with SIGKILL, by the OOM
	// killer or a preemption, then leaves no daemon holding its memory.
	ExitWithParent bool `help:"Shut down as on SIGTERM when the process that started the daemon exits (oxefs.mount in Python sets this)." name:"exit-with-parent"`
	// ExitWhenUnlocked ties the daemon to every process that holds a lock
	// on a file: the local ranks of a torchrun job share one daemon so.
	ExitWhenUnlocked string `help:"Shut down as on SIGTERM once no other process holds a flock on this file (each user holds a shared lock while it reads; oxefs.mount in the ranks of a torchrun job shares one daemon this way)." name:"exit-when-unlocked" placeholder:"FILE" type:"existingfile"`
	RemoveOnExit     string `help:"On exit, once unmounted, remove this directory made for the daemon (its mountpoint, log, lock file): the files and empty directories directly in it, then itself, never deeper." name:"remove-on-exit" placeholder:"DIR" type:"existingdir"`
	View             string `help:"Serve a web page of the mount (the mix, any batch, live counters) on this address, e.g. 127.0.0.1:8765; oxefs view MOUNT serves the same page from another process." placeholder:"ADDR"`
}

// fusectlMissing says, when the grace period ends with files still open
// and the kernel's FUSE control filesystem is not mounted (so the daemon
// cannot cut the connection itself), what that means for the readers.
const fusectlMissing = "exiting with files still open: their reads now fail (ENOTCONN; SIGBUS in a mapping) " +
	"past what the kernel already holds (a passthrough file keeps reading from its memfd). " +
	"The daemon could not cut the connection first, as /sys/fs/fuse/connections (fusectl) is not mounted: " +
	"it ends as the daemon exits; mount fusectl (mount -t fusectl none /sys/fs/fuse/connections) to cut it at once"

func (c *mountCmd) Run(ctx context.Context, log *slog.Logger) error {
	if err := checkRemoveDir(c.RemoveOnExit); err != nil {
		return err
	}
	if c.RemoveOnExit != "" {
		defer removeOwnDir(log, c.RemoveOnExit) // last: after the unmount and p.Close
	}
	var parentGone, usersGone <-chan struct{} // nil: never
	follow, why, ppid := c.ExitWithParent, "--exit-with-parent", os.Getppid()
	if !follow && startedByGoRun(ppid) {
		follow, why = true, "started by go run, which does not pass SIGTERM on"
		log.Info("started by go run: shutting down when it exits, as --exit-with-parent does (go run does not pass SIGTERM on)")
	}
	if follow {
		parentGone = watchParent(ctx, ppid)
	}
	if c.ExitWhenUnlocked != "" {
		var err error
		if usersGone, err = watchLock(ctx, c.ExitWhenUnlocked); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.Mountpoint, 0o755); err != nil {
		return err
	}
	var ranks []int
	if c.Ranks != "" {
		if c.Rank != 0 {
			return fmt.Errorf("--rank %d --ranks %s: give one (--ranks serves several ranks, each under rank/R/)", c.Rank, c.Ranks)
		}
		var err error
		if ranks, err = parseRanks(c.Ranks, c.World); err != nil {
			return err
		}
	}
	p, err := c.open(ctx, log, c.Offline, ranks, c.Passthrough && !c.DirectIO)
	if err != nil {
		return err
	}
	defer p.Close()
	opts := fs.Options{
		Info:  p.Info,
		Stats: p.Stats,
		Recorder: func(n int64, val bool, bytes int, wait time.Duration) {
			p.ReadLatency.Observe(wait)
			p.ServedBytes.Add(int64(bytes))
		},
		MaxNodes: fs.MaxNodesFor(int64(c.Mem)),
		Log:      log,
	}
	if p.MultiRank() {
		for _, r := range p.Ranks {
			fr := fs.Rank{Rank: r.Rank, Train: p.FSView(r.Train), Info: func() []byte { return p.RankInfo(r) }, Stats: func() []byte { return p.RankStats(r) }}
			if r.Val != nil { // a nil *Scheduler in the interface would not be nil
				fr.Val = p.FSView(r.Val)
			}
			opts.Ranks = append(opts.Ranks, fr)
		}
	} else {
		opts.Train = p.FSView(p.Train)
		if p.Val != nil {
			opts.Val = p.FSView(p.Val)
		}
	}
	srv, err := fs.Mount(c.Mountpoint, opts, fs.MountOptions{AllowOther: c.AllowOther, Passthrough: c.Passthrough, DirectIO: c.DirectIO, NonEmpty: c.NonEmpty})
	if errors.Is(err, fs.ErrNotEmpty) {
		return fmt.Errorf("%w — pass --nonempty to mount over it", err)
	} else if err != nil {
		return err
	}
	serving := loader.Serving{Mode: srv.Serving(), PassthroughOpens: srv.PassthroughOpens, Nodes: srv.Nodes}
	if err := srv.Refused(); err != nil {
		serving.Refused = err.Error()
		log.Warn("FUSE passthrough refused: serving .npy files through the page cache", "reason", err)
	}
	if err := p.SetServing(serving); err != nil {
		srv.Unmount()
		return err
	}
	if c.View != "" {
		vctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if _, err := serveView(vctx, log, c.Mountpoint, c.View, view.Options{Episodes: viewEpisodes{p, c.Decoder}}); err != nil {
			srv.Unmount()
			return err
		}
	}
	if p.MultiRank() {
		log.Info("mounted", "mountpoint", c.Mountpoint, "ranks", c.Ranks, "world", c.World, "batches_per_rank", p.Train.Len(),
			"npy_bytes", p.Train.NPYSize(), "mem", c.Mem, "workers", c.Workers, "decoder", p.Pool.Decoder(), "serving", serving.Mode)
	} else {
		log.Info("mounted", "mountpoint", c.Mountpoint, "batches", p.Train.Len(), "npy_bytes", p.Train.NPYSize(),
			"mem", c.Mem, "workers", c.Workers, "decoder", p.Pool.Decoder(), "serving", serving.Mode)
	}
	gone := make(chan struct{})
	go func() {
		srv.Wait()
		close(gone)
	}()
	select {
	case <-ctx.Done():
		return c.drain(log, p, srv, gone)
	case <-parentGone:
		log.Info("the process that started the daemon exited: shutting down", "because", why)
		return c.drain(log, p, srv, gone)
	case <-usersGone:
		log.Info("no process holds the lock any more (--exit-when-unlocked): shutting down", "file", c.ExitWhenUnlocked)
		return c.drain(log, p, srv, gone)
	case <-gone:
		log.Info("unmounted from outside")
	}
	return nil
}

// watchParent returns a channel closed once the daemon's parent process,
// ppid at start, has exited: the daemon is then re-parented, and getppid
// changes. Polling getppid sees the parent process end, whichever of its
// threads started the daemon (PR_SET_PDEATHSIG would fire when that
// thread ended).
func watchParent(ctx context.Context, ppid int) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for os.Getppid() == ppid {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		close(gone)
	}()
	return gone
}

// drain shuts the mount down after a signal without cutting off readers:
// it detaches the mount, so no new open reaches it, and serves the files
// already open (a numpy memmap among them) until the last is closed, --grace
// passes or a second signal arrives. Only then is the connection aborted
// (a passthrough file still reads from its memfd; any other read of an
// open file is ENOTCONN where the page cache does not hold it, see
// fs.Server.Abort).
func (c *mountCmd) drain(log *slog.Logger, p *loader.Pipeline, srv *fs.Server, gone <-chan struct{}) error {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	if err := srv.Detach(); err != nil {
		log.Error("signal: detaching the mount failed; unmounting", "err", err)
		return srv.Unmount()
	}
	srv.StopOpens()
	p.StopReadahead()
	select {
	case <-gone:
		// The connection ended with the detach: the kernel had released
		// every file (open_files says what the daemon counted).
		log.Info("signal: unmounted", "open_files", srv.OpenFiles())
		return nil
	default:
	}
	open := srv.OpenFiles()
	log.Info(fmt.Sprintf("signal: detached; serving %d open files for up to %v", open, c.Grace),
		"mountpoint", c.Mountpoint, "open_files", open, "grace", c.Grace)
	grace := time.NewTimer(c.Grace)
	defer grace.Stop()
	select {
	case <-gone:
		if open > 0 {
			log.Info("signal: the last open file was closed; exiting")
		} else {
			log.Info("signal: no file open; exiting")
		}
		return nil
	case <-grace.C:
		log.Warn("signal: grace period over; cutting off open files", "open_files", srv.OpenFiles(), "grace", c.Grace)
	case <-again:
		log.Warn("second signal: cutting off open files", "open_files", srv.OpenFiles())
	}
	if !srv.Abort() {
		log.Info(fusectlMissing)
	}
	return nil
}

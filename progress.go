package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/oxefs/oxefs/internal/bytesize"
	"github.com/oxefs/oxefs/loader"
	"github.com/schollz/progressbar/v3"
)

// progress reports work done towards a total.
type progress interface {
	Add(n int) error
	Set64(n int64) error
	Finish() error
}

// newBar reports progress on stderr: a bar on a terminal; elsewhere (a log
// file, a pipe, a journal) a plain line every progressEvery and one at the
// end, because a bar's \r frames would pile up there.
func newBar(total int64, what, unit string) progress {
	if st, err := os.Stderr.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return newLineProgress(os.Stderr, total, what, unit, progressEvery)
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// progressEvery spaces the progress lines written where stderr is not a
// terminal.
const progressEvery = 10 * time.Second

// lineProgress writes progress as whole lines: "what: done/total unit".
type lineProgress struct {
	// constants
	w          io.Writer
	total      int64
	what, unit string
	every      time.Duration
	start      time.Time

	mu       sync.Mutex
	done     int64     // guarded by mu
	last     time.Time // guarded by mu: when the last line was written
	finished bool      // guarded by mu
}

func newLineProgress(w io.Writer, total int64, what, unit string, every time.Duration) *lineProgress {
	now := time.Now()
	return &lineProgress{w: w, total: total, what: what, unit: unit, every: every, start: now, last: now}
}

// Add counts n more done.
func (p *lineProgress) Add(n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.update(p.done + int64(n))
}

// Set64 sets the count done.
func (p *lineProgress) Set64(n int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.update(n)
}

// update sets done and writes a line when one is due. p.mu is held.
func (p *lineProgress) update(done int64) error {
	p.done = done
	if p.finished || time.Since(p.last) < p.every {
		return nil
	}
	p.last = time.Now()
	return p.line()
}

// Finish writes the last line, once: the count reached, which is the
// total unless the work failed.
func (p *lineProgress) Finish() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return nil
	}
	p.finished = true
	return p.line()
}

// line writes the state. p.mu is held.
func (p *lineProgress) line() error {
	_, err := fmt.Fprintf(p.w, "%s: %d/%d %s in %s\n", p.what, p.done, p.total, p.unit,
		time.Since(p.start).Round(100*time.Millisecond))
	return err
}

// indexProgress shows episode-length indexing and statistics passes, one
// bar per dataset and pass.
func indexProgress() func(loader.IndexProgress) {
	var (
		mu   sync.Mutex
		bars = map[loader.IndexProgress]progress{}
	)
	return func(p loader.IndexProgress) {
		mu.Lock()
		defer mu.Unlock()
		k := loader.IndexProgress{Dataset: p.Dataset, Stats: p.Stats}
		bar := bars[k]
		if bar == nil {
			what := fmt.Sprintf("indexing %s episode lengths", p.Dataset)
			if p.Stats {
				what = fmt.Sprintf("%s statistics", p.Dataset)
			}
			bar = newBar(p.Total, what, "episodes")
			bars[k] = bar
		}
		_ = bar.Set64(p.Done)
		if p.Done >= p.Total {
			_ = bar.Finish()
		}
	}
}

// defaultMem is a quarter of the memory the machine (or the cgroup) gives
// the daemon, at most 8 GiB, written as --help shows it.
func defaultMem() string {
	m := hostMemory()
	if m.Bytes == 0 {
		return "2GiB"
	}
	return bytesize.Compact(min(m.Bytes/4, 8<<30))
}

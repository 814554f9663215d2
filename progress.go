package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/oxefs/oxefs/mix"
)

// newBar is a progress bar on stderr.
func newBar(total int64, what, unit string) *progressbar.ProgressBar {
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

// indexProgress shows episode-length indexing, one bar per dataset.
func indexProgress() func(mix.IndexProgress) {
	var (
		mu   sync.Mutex
		bars = map[string]*progressbar.ProgressBar{}
	)
	return func(p mix.IndexProgress) {
		mu.Lock()
		defer mu.Unlock()
		bar := bars[p.Dataset]
		if bar == nil {
			bar = newBar(p.Total, fmt.Sprintf("indexing %s episode lengths", p.Dataset), "episodes")
			bars[p.Dataset] = bar
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
	return formatSize(min(m.Bytes/4, 8<<30))
}

package main

import (
	"fmt"
	"os"
	"sync"
	"syscall"
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

// defaultMem is a quarter of the machine's memory, at most 8 GiB.
func defaultMem() string {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return "2GiB"
	}
	quarter := int64(si.Totalram) * int64(si.Unit) / 4
	return fmt.Sprint(min(quarter, 8<<30))
}

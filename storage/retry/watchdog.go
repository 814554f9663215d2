package retry

import (
	"context"
	"math"
	"sync/atomic"
	"time"
)

// watchdog cancels an attempt that has delivered no byte for timeout.
// Reads only record the time of progress; the timer, when it fires, re-arms
// itself for the rest of the quiet period or cancels.
type watchdog struct {
	// constants
	timeout time.Duration
	start   time.Time
	timer   *time.Timer
	cancel  context.CancelCauseFunc

	// mutable state
	last atomic.Int64 // time of the last progress, ns since start; -1 while writing to the destination
	done atomic.Bool
}

func startWatchdog(timeout time.Duration, cancel context.CancelCauseFunc) *watchdog {
	d := &watchdog{timeout: timeout, start: time.Now(), cancel: cancel}
	// Armed only once d.timer is set, so that fire may use it.
	d.timer = time.AfterFunc(math.MaxInt64, d.fire)
	d.timer.Reset(timeout)
	return d
}

// busy suspends the watchdog while the destination is written: a slow
// destination is not a stalled source.
func (d *watchdog) busy() { d.last.Store(-1) }

// progress restarts the quiet period.
func (d *watchdog) progress() { d.last.Store(int64(time.Since(d.start))) }

func (d *watchdog) stop() {
	d.done.Store(true)
	d.timer.Stop()
}

func (d *watchdog) fire() {
	if d.done.Load() {
		return
	}
	last := d.last.Load()
	if last < 0 {
		d.timer.Reset(d.timeout)
		return
	}
	if quiet := time.Since(d.start) - time.Duration(last); quiet < d.timeout {
		d.timer.Reset(d.timeout - quiet)
		return
	}
	d.cancel(errStalled)
}

package diskcache

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
)

// rangeOpener opens n bytes of a source object from off.
type rangeOpener func(ctx context.Context, off, n int64) (io.ReadCloser, error)

// newPreemptible reads the n bytes at off of a source object for a fill whose
// writer is w (a FillFunc's), yielding the bandwidth to more urgent readers
// (see WithPriority): when the fill must pause, the request under way is
// abandoned at once, and once the fill may go on it is opened again at the
// byte reached. Pausing only between writes would not be enough: a
// request's bytes keep arriving into the socket's buffers, and the link
// is busy with them, until the reader reads again. A request abandoned for
// a pause is never reported as an error.
//
// When w is not a fill's writer, newPreemptible opens the range once and
// reads it as it comes.
func newPreemptible(ctx context.Context, w io.Writer, off, n int64, open rangeOpener) io.ReadCloser {
	s, _ := w.(*sink)
	return &preemptible{ctx: ctx, s: s, open: open, pos: off, end: off + n}
}

// errPaused ends a stopOnPause read whose request was abandoned.
var errPaused = errors.New("paused for a more urgent reader")

type preemptible struct {
	ctx  context.Context
	s    *sink // nil: never pauses
	open rangeOpener
	// stopOnPause makes Read return errPaused when the request is
	// abandoned, instead of waiting and opening it again: the caller
	// decides how to go on from the byte reached.
	stopOnPause bool

	pos, end int64
	rc       io.ReadCloser      // the request under way, or nil
	stop     context.CancelFunc // ends rc's request and its watch
	paused   atomic.Bool        // rc was abandoned for a pause
}

func (p *preemptible) Read(b []byte) (int, error) {
	for {
		if p.pos >= p.end {
			return 0, io.EOF
		}
		if p.rc == nil {
			if err := p.start(); err != nil {
				return 0, err
			}
			if p.rc == nil {
				if p.stopOnPause {
					return 0, errPaused
				}
				continue // paused while opening
			}
		}
		m, err := p.rc.Read(b[:min(int64(len(b)), p.end-p.pos)])
		p.pos += int64(m)
		if err != nil && p.paused.Load() && p.ctx.Err() == nil {
			p.drop()
			if p.s.stats != nil {
				p.s.stats.Abandoned.Add(1)
			}
			if m > 0 {
				return m, nil
			}
			if p.stopOnPause {
				return 0, errPaused
			}
			continue
		}
		if err == io.EOF && p.pos < p.end {
			return m, io.ErrUnexpectedEOF
		}
		return m, err
	}
}

// start waits until the fill may go on, then opens the rest of the range
// with a watch that abandons it when the fill must pause again. It leaves
// p.rc nil, without error, when the pause came while opening.
func (p *preemptible) start() error {
	if p.s != nil {
		if err := p.s.pause(); err != nil {
			return err
		}
	}
	ctx, stop := context.WithCancel(p.ctx)
	p.paused.Store(false)
	if p.s != nil && p.s.mustPause != nil {
		go p.watch(ctx, stop)
	}
	rc, err := p.open(ctx, p.pos, p.end-p.pos)
	if err != nil {
		stop()
		if p.paused.Load() && p.ctx.Err() == nil {
			if p.s.stats != nil {
				p.s.stats.Abandoned.Add(1)
			}
			return nil
		}
		return err
	}
	p.rc, p.stop = rc, stop
	return nil
}

// watch cancels the request of ctx when the fill must pause.
func (p *preemptible) watch(ctx context.Context, stop context.CancelFunc) {
	for {
		pause, changed := p.s.mustPause()
		if pause {
			p.paused.Store(true)
			stop()
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// drop ends the request under way.
func (p *preemptible) drop() {
	if p.rc != nil {
		p.stop()
		p.rc.Close()
		p.rc, p.stop = nil, nil
	}
}

func (p *preemptible) Close() error {
	p.drop()
	return nil
}

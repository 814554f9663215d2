package assemble

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/oxefs/oxefs/sample"
)

// errPoolClosed is returned by a submission after Pool.Close.
var errPoolClosed = errors.New("decode pool closed: the daemon is shutting down")

// Pool is the one set of decode workers shared by every dataset and every
// batch: each worker owns a sample.FrameWorker, whose FrameDecoder it
// decodes with, and the scratch of the kind of sample it builds, so a
// batch's samples decode in parallel on every core and nothing is
// allocated per frame.
//
// Submissions hold mu shared while they send; Close takes it exclusively to
// close jobs, so no one sends on a closed channel, and every job queued
// before Close runs.
type Pool struct {
	// constants
	kind    sample.Kind
	jobs    chan func(*worker) // closed by Close, under mu
	wg      sync.WaitGroup     // workers
	decoder string

	mu     sync.RWMutex
	closed bool // guarded by mu
}

// NewPool starts n workers that build kind's samples, each decoding with
// a FrameDecoder of newDecoder's (the one choice of decoder backend).
func NewPool(n int, kind sample.Kind, newDecoder func() (sample.FrameDecoder, error)) (*Pool, error) {
	if n < 1 {
		return nil, fmt.Errorf("--workers must be at least 1, got %d", n)
	}
	p := &Pool{kind: kind, jobs: make(chan func(*worker), 4*n)}
	workers := make([]*worker, n)
	for i := range workers {
		d, err := newDecoder()
		if err != nil {
			for _, w := range workers[:i] {
				w.frames.Close()
			}
			return nil, err
		}
		workers[i] = &worker{frames: sample.NewFrameWorker(d), kind: kind.NewWorker()}
	}
	p.decoder = workers[0].frames.Decoder().Name()
	for _, w := range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer w.frames.Close()
			for job := range p.jobs {
				job(w)
			}
		}()
	}
	return p, nil
}

// Decoder names the JPEG decoder in use.
func (p *Pool) Decoder() string { return p.decoder }

// submit queues job for a worker. It gives up when ctx ends first, and
// returns errPoolClosed after Close. A queued job always runs.
func (p *Pool) submit(ctx context.Context, job func(*worker)) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return errPoolClosed
	}
	if err := ctx.Err(); err != nil {
		return err // a select would pick a free queue slot half the time
	}
	select {
	case p.jobs <- job:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the workers once queued work is done; later submissions
// fail. It is safe to call more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// worker is one pool goroutine's: its side of the frame stage, which owns
// the decoder, and its kind's scratch.
type worker struct {
	frames *sample.FrameWorker
	kind   sample.Worker
}

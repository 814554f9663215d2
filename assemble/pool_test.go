package assemble

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/frames"
)

// TestPoolSubmitRacesClose submits decode jobs from many goroutines while
// the pool closes: a submission after Close is an error, never a send on a
// closed channel.
func TestPoolSubmitRacesClose(t *testing.T) {
	for range 20 {
		p, err := NewPool(2, frames.DecoderOptions{JPEG: frames.JPEGGo})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 100 {
					done := make(chan struct{})
					if err := p.submit(context.Background(), func(*worker) { close(done) }); err != nil {
						if !errors.Is(err, errPoolClosed) {
							t.Errorf("submit: %v, want errPoolClosed", err)
						}
						return
					}
					<-done // a queued job always runs
				}
			}()
		}
		close(start)
		p.Close()
		wg.Wait()
		p.Close() // idempotent
	}
}

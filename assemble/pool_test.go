package assemble

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// nopKind is a kind of sample whose samples hold nothing, for tests of
// the pool alone.
type nopKind struct{}

type nopWorker struct{}

func (nopWorker) Footprint() int { return 0 }

func (nopKind) Files() sample.Files                          { return sample.Files{Samples: 1, Shape: []int{1}} }
func (nopKind) NewWorker() sample.Worker                     { return nopWorker{} }
func (nopKind) NewBatch(int64, []byte) (sample.Batch, error) { return nopBatch{}, nil }
func (nopKind) Needs(int) sample.Need                        { return sample.Need{} }

type nopBatch struct{}

func (nopBatch) Build(context.Context, sample.Worker, sample.Frames, int, plan.Sample, episode.Episode) error {
	return nil
}
func (nopBatch) Finish([]plan.Sample, []bool) ([]byte, error) { return nil, nil }

func goDecoder() (sample.FrameDecoder, error) {
	return sample.NewCPU(frames.DecoderOptions{JPEG: frames.JPEGGo})
}

// TestPoolSubmitRacesClose submits decode jobs from many goroutines while
// the pool closes: a submission after Close is an error, never a send on a
// closed channel.
func TestPoolSubmitRacesClose(t *testing.T) {
	for range 20 {
		p, err := NewPool(2, nopKind{}, goDecoder)
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

package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/pairs"
	"github.com/oxefs/oxefs/plan"
)

// BareResult is what BareDecode measured.
type BareResult struct {
	Samples, Frames int
	Elapsed         time.Duration
}

// SamplesPerSecond is Samples over Elapsed.
func (r BareResult) SamplesPerSecond() float64 { return float64(r.Samples) / r.Elapsed.Seconds() }

// BareDataset is what the bare decode loop reads of one dataset of the
// mix.
type BareDataset struct {
	// Episodes loads the dataset's episodes.
	Episodes episode.Dataset
	// ImageKey is the camera decoded; Height and Width its stored frame
	// size.
	ImageKey      string
	Height, Width int
	// Frames selects a sample's frames, as the assembler does.
	Frames config.Frames
}

// BareDecode is the decoder's ceiling for batches [from, from+n) of pl
// (the train view), over datasets (by plan dataset index): the frames those batches' samples hold, decoded at their
// stored size by workers goroutines (one frames.Decoder each, samples
// dealt round-robin in plan order), with nothing else of the pipeline: no
// scheduler, no resize into a batch, no metadata. The episodes are loaded
// first and not timed. Samples whose camera is not a video, or whose
// episode is too short or damaged, are skipped. It is what `oxefs bench
// --bare-decode` reports next to the pipeline's samples/s over the same
// samples.
func BareDecode(ctx context.Context, pl *plan.Plan, datasets []BareDataset, from, n int64, workers int) (BareResult, error) {
	type job struct {
		v     episode.Video
		key   string
		idx   []int
		steps int
		w, h  int // stored frame size
	}
	var jobs []job
	var buf []plan.Sample
	eps := map[[2]any]episode.Episode{}
	var err error
	for b := from; b < from+n && b < pl.NumBatches(); b++ {
		buf = pl.Batch(b, buf[:0])
		for _, s := range buf {
			d := datasets[s.Dataset]
			k := [2]any{s.Dataset, s.Episode}
			ep, ok := eps[k]
			if !ok {
				if ep, err = d.Episodes.Episode(ctx, s.Episode); err != nil {
					continue
				}
				eps[k] = ep
			}
			view, err := ep.Feature(d.ImageKey)
			if err != nil {
				continue
			}
			v, ok := view.(episode.Video)
			if !ok {
				continue
			}
			sel, err := pairs.Select(d.Frames, s.Key, s.Unit, ep.Steps(), nil)
			if err != nil {
				continue
			}
			jobs = append(jobs, job{v: v, key: d.ImageKey, idx: sel.Indices, steps: ep.Steps(), w: d.Width, h: d.Height})
		}
	}
	if len(jobs) == 0 {
		return BareResult{}, fmt.Errorf("no sample of batches %d..%d has a video camera", from, from+n-1)
	}
	workers = max(workers, 1)
	errs := make([]error, workers)
	counts := make([]int, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec, err := frames.NewDecoder(frames.DecoderOptions{})
			if err != nil {
				errs[w] = err
				return
			}
			defer dec.Close()
			var slot []byte
			for i := w; i < len(jobs); i += workers {
				j := jobs[i]
				size := len(j.idx) * j.h * j.w * 3
				if cap(slot) < size {
					slot = make([]byte, size)
				}
				src := frames.Video{Key: j.key, Steps: j.steps, Stream: j.v}
				err := src.Decode(ctx, dec, j.idx, frames.Slot{Buf: slot[:size], Frames: len(j.idx), H: j.h, W: j.w})
				if err != nil {
					errs[w] = err
					return
				}
				counts[w] += len(j.idx)
			}
		}()
	}
	wg.Wait()
	res := BareResult{Samples: len(jobs), Elapsed: time.Since(start)}
	for w := range workers {
		if errs[w] != nil {
			return res, errs[w]
		}
		res.Frames += counts[w]
	}
	return res, nil
}

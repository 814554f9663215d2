package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/norm"
	"github.com/oxefs/oxefs/sample"
)

// statsVersion names what the saved statistics mean; changing it
// invalidates every saved set.
const statsVersion = 2 // 2: q10, q50, q90, per-episode quantiles, frames

// statsKey identifies what a dataset's statistics are computed over: the
// train selection, the keys, the offset range, for step samples that
// there is no action_summed, and the frames each camera slot is sampled
// as (images).
func statsKey(d *Dataset, steps bool, images []imageStats) string {
	b, _ := json.Marshal(struct {
		Version    int
		Train      []episode.Range
		ActionKeys []string
		StateKey   string
		Offset     config.Offset
		Steps      bool         `json:",omitempty"` // no action_summed; omitted for pairs, whose keys stay as they were
		Images     []imageStats `json:",omitempty"`
	}{statsVersion, d.Train, d.Config.ActionKeys, d.Config.StateKey, d.Config.Offset, steps, images})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// imageStats is a camera slot whose frame statistics are computed: its
// image key in the dataset, decoded as the slot's frames are served.
type imageStats struct {
	Slot     string
	Key      string
	H, W     int
	Resize   config.ResizeMode
	Decode   config.DecodeMode
	declared frames.Size
}

// imageSlots returns d's camera slots in a mix of step samples (none for
// pairs), in the mix's order.
func (m *Mix) imageSlots(d *Dataset) ([]imageStats, error) {
	var out []imageStats
	for _, sl := range m.kind.cameraSlots() {
		key, ok := d.Cameras[sl.Name]
		if !ok {
			continue
		}
		f, err := sample.LookupFeature(d.Data.Info(), "cameras."+sl.Name, key)
		if err != nil {
			return nil, err
		}
		im := imageStats{Slot: sl.Name, Key: key, H: sl.Size[0], W: sl.Size[1], Resize: m.Config.Resize, Decode: m.Config.DecodeOf(sl.Name).Pixels()}
		if len(f.Shape) == 3 {
			im.declared = frames.Size{W: max(f.Shape[1], 0), H: max(f.Shape[0], 0)}
		}
		out = append(out, im)
	}
	return out, nil
}

// statsName is the file the statistics are saved in, beside the dataset's
// length index: one per key, so mixes that read a dataset differently keep
// theirs.
func statsName(key string) string { return "normstats-" + key[:16] }

// NormStats sets each dataset's Norm: the statistics saved for its bytes
// and config, or, when compute is set, computed in one pass over its train
// selection (workers shards at once; 0 means GOMAXPROCS) and saved. Without
// compute, a dataset with none saved keeps Norm nil. progress, when set,
// is told how each pass advances. In a mix of step samples the pass also
// decodes a fixed sample of each episode's frames per camera slot
// (norm.ImageSteps) with the JPEG decoder jpeg (frames.DecoderOptions).
func (m *Mix) NormStats(ctx context.Context, compute bool, workers int, jpeg string, progress func(IndexProgress)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	summed := m.kind.summedActions()
	for _, d := range m.Datasets {
		images, err := m.imageSlots(d)
		if err != nil {
			return fmt.Errorf("dataset %s: statistics: %w", d.Config.Name, err)
		}
		key := statsKey(d, !summed, images)
		b, err := loadDerived(ctx, d, statsName(key), key)
		if err == nil {
			var s norm.Stats
			if err := json.Unmarshal(b, &s); err == nil {
				d.Norm = &s
				continue
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("dataset %s: statistics: %w", d.Config.Name, err)
		}
		if !compute {
			continue
		}
		s, err := computeStats(ctx, d, summed, images, workers, jpeg, progress)
		if err != nil {
			return fmt.Errorf("dataset %s: statistics: %w", d.Config.Name, err)
		}
		out, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if err := saveDerived(ctx, d, statsName(key), key, out); err != nil {
			return fmt.Errorf("dataset %s: save statistics: %w", d.Config.Name, err)
		}
		d.Norm = s
	}
	return nil
}

// computeStats reads every episode of d's train selection once; summed
// asks for action_summed (pair samples); images are the camera slots
// whose frames are sampled, decoded with the JPEG decoder jpeg.
func computeStats(ctx context.Context, d *Dataset, summed bool, images []imageStats, workers int, jpeg string, progress func(IndexProgress)) (*norm.Stats, error) {
	segs, err := d.Data.Info().Segments(d.Train)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, s := range segs {
		total += int64(s.Count)
	}
	spec := norm.Spec{ActionKeys: d.Config.ActionKeys, StateKey: d.Config.StateKey, Offset: d.Config.Offset, Summed: summed}
	for _, im := range images {
		spec.Images = append(spec.Images, im.Slot)
	}
	acc := norm.New(spec, d.ActionDim, d.StateDim, len(segs))
	dec := decoderPool{jpeg: jpeg, free: make(chan *frames.Decoder, workers)}
	defer dec.close()
	var (
		mu   sync.Mutex
		done int64
	)
	report := func() {
		if progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		progress(IndexProgress{Dataset: d.Config.Name, Done: done, Total: total, Stats: true})
	}
	if progress != nil {
		progress(IndexProgress{Dataset: d.Config.Name, Total: total, Stats: true})
	}
	err = d.Data.Scan(ctx, segs, workers, func(seg int, _ episode.Key, ep episode.Episode, err error) error {
		defer report()
		var pix [][]byte
		if err == nil && len(images) > 0 && acc.Uses(ep.Steps()) {
			pix, err = dec.sample(ctx, ep, images)
		}
		if err == nil {
			err = acc.Add(seg, ep)
		}
		if err == nil {
			for k, p := range pix {
				acc.AddImage(seg, k, p, len(norm.ImageSteps(ep.Steps())))
			}
		}
		if errors.Is(err, episode.ErrCorrupt) {
			acc.Skip(seg)
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s := acc.Stats()
	return &s, nil
}

// decoderPool lends the statistics pass's workers a frame decoder each.
type decoderPool struct {
	jpeg string
	free chan *frames.Decoder
}

// sample decodes the frames norm.ImageSteps picks of each camera in
// images, as interleaved RGB at the slot's size. Damaged frames make the
// episode corrupt (skipped and counted).
func (p *decoderPool) sample(ctx context.Context, ep episode.Episode, images []imageStats) ([][]byte, error) {
	var d *frames.Decoder
	select {
	case d = <-p.free:
	default:
		var err error
		if d, err = frames.NewDecoder(frames.DecoderOptions{JPEG: p.jpeg}); err != nil {
			return nil, err
		}
	}
	defer func() {
		select {
		case p.free <- d:
		default:
			d.Close()
		}
	}()
	idx := norm.ImageSteps(ep.Steps())
	out := make([][]byte, len(images))
	var cam sample.Camera
	for k, im := range images {
		src, err := cam.Open(ep, im.Key, im.declared)
		if err != nil {
			return nil, err
		}
		out[k] = make([]byte, len(idx)*im.H*im.W*3)
		slot := frames.Slot{Buf: out[k], Frames: len(idx), H: im.H, W: im.W, Layout: frames.BFHWC,
			Resize: frames.ResizeMode(im.Resize), Decode: frames.DecodeMode(im.Decode)} // same values: pairs' TestEnumsMatchFrames
		if err := src.Decode(ctx, d, idx, slot); err != nil {
			if _, bad := errors.AsType[*frames.ImageError](err); bad {
				return nil, ep.Corrupt(err)
			}
			return nil, fmt.Errorf("episode %s camera %s: %w", ep.ID(), im.Key, err)
		}
	}
	return out, nil
}

func (p *decoderPool) close() {
	for {
		select {
		case d := <-p.free:
			d.Close()
		default:
			return
		}
	}
}

// affine turns a dataset's statistics into a batch's normalisation; nil
// for NormNone or without the statistic.
func affine(mode config.NormMode, s *norm.Stat) *sample.Affine {
	if mode == config.NormNone || s == nil || s.Count == 0 {
		return nil
	}
	a := &sample.Affine{Scale: make([]float64, len(s.Mean)), Shift: make([]float64, len(s.Mean))}
	for j := range a.Scale {
		switch mode {
		case config.NormQuantile:
			a.Clip = true
			if span := s.Q99[j] - s.Q01[j]; span > 0 {
				a.Scale[j] = 2 / span
				a.Shift[j] = -2*s.Q01[j]/span - 1
			}
		case config.NormMeanStd:
			a.Scale[j], a.Shift[j] = 1, -s.Mean[j]
			if s.Std[j] > 0 {
				a.Scale[j], a.Shift[j] = 1/s.Std[j], -s.Mean[j]/s.Std[j]
			}
		}
	}
	return a
}

// loadDerived reads what was saved for the dataset's current bytes
// (format.Deriver); fs.ErrNotExist for a dataset that keeps nothing.
func loadDerived(ctx context.Context, d *Dataset, name, key string) ([]byte, error) {
	if dv, ok := d.Data.(format.Deriver); ok {
		return dv.LoadDerived(ctx, name, key)
	}
	return nil, fs.ErrNotExist
}

// saveDerived saves what loadDerived reads; for a dataset that keeps
// nothing, it saves nothing.
func saveDerived(ctx context.Context, d *Dataset, name, key string, b []byte) error {
	if dv, ok := d.Data.(format.Deriver); ok {
		return dv.SaveDerived(ctx, name, key, b)
	}
	return nil
}

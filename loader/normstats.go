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
	"github.com/oxefs/oxefs/norm"
	"github.com/oxefs/oxefs/sample"
)

// statsVersion names what the saved statistics mean; changing it
// invalidates every saved set.
const statsVersion = 1

// statsKey identifies what a dataset's statistics are computed over: the
// train selection, the keys, the offset range and, for step samples, that
// there is no action_summed.
func statsKey(d *Dataset, steps bool) string {
	b, _ := json.Marshal(struct {
		Version    int
		Train      []episode.Range
		ActionKeys []string
		StateKey   string
		Offset     config.Offset
		Steps      bool `json:",omitempty"` // no action_summed; omitted for pairs, whose keys stay as they were
	}{statsVersion, d.Train, d.Config.ActionKeys, d.Config.StateKey, d.Config.Offset, steps})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// statsName is the file the statistics are saved in, beside the dataset's
// length index: one per key, so mixes that read a dataset differently keep
// theirs.
func statsName(key string) string { return "normstats-" + key[:16] }

// NormStats sets each dataset's Norm: the statistics saved for its bytes
// and config, or, when compute is set, computed in one pass over its train
// selection (workers shards at once; 0 means GOMAXPROCS) and saved. Without
// compute, a dataset with none saved keeps Norm nil. progress, when set,
// is told how each pass advances.
func (m *Mix) NormStats(ctx context.Context, compute bool, workers int, progress func(IndexProgress)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	summed := m.kind.summedActions()
	for _, d := range m.Datasets {
		key := statsKey(d, !summed)
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
		s, err := computeStats(ctx, d, summed, workers, progress)
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
// asks for action_summed (pair samples).
func computeStats(ctx context.Context, d *Dataset, summed bool, workers int, progress func(IndexProgress)) (*norm.Stats, error) {
	segs, err := d.Data.Info().Segments(d.Train)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, s := range segs {
		total += int64(s.Count)
	}
	acc := norm.New(norm.Spec{ActionKeys: d.Config.ActionKeys, StateKey: d.Config.StateKey, Offset: d.Config.Offset, Summed: summed},
		d.ActionDim, d.StateDim, len(segs))
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
		if err == nil {
			err = acc.Add(seg, ep)
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

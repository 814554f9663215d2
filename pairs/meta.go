package pairs

import "github.com/oxefs/oxefs/config"

// Meta is one sample's metadata record, the drop-in for a trainer's batch
// dict (README "The mount"). Build fills it, reusing its slices.
type Meta struct {
	DatasetName string `json:"dataset_name"`
	// EpisodeID is stable: dataset/split/shard/record.
	EpisodeID string `json:"episode_id"`
	// FrameIdx is t, the first frame.
	FrameIdx int `json:"frame_idx"`
	// FrameIndices are all F frames, ascending.
	FrameIndices []int `json:"frame_indices"`
	Offset       int   `json:"offset"`
	// Language is the instruction at t (or the episode's), "" when the
	// dataset has none.
	Language string `json:"language"`
	// Action is the sum of the per-step actions over [t, t+offset), the
	// action keys concatenated in config order, summed in float64 and
	// padded with zeros to the mix's largest action dimension.
	Action []float64 `json:"action"`
	// InitialState is the state at t, padded with zeros likewise.
	InitialState []float64 `json:"initial_state"`
	Robot        string    `json:"robot"`
}

// DatasetMeta is what `meta: dataset` keeps.
type DatasetMeta struct {
	DatasetName string `json:"dataset_name"`
}

// For returns what to serialise for the sample under mode: m itself for
// MetaFull, a DatasetMeta for MetaDataset, nil for MetaNone (no .json).
func (m *Meta) For(mode config.MetaMode) any {
	switch mode {
	case config.MetaFull:
		return m
	case config.MetaDataset:
		return DatasetMeta{DatasetName: m.DatasetName}
	}
	return nil
}

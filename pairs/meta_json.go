package pairs

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/plan"
)

// batchMeta is a batch's .json file: one array per field, in sample order,
// the shape of a trainer's batch dict.
type batchMeta struct {
	DatasetName  []string `json:"dataset_name"`
	EpisodeID    []string `json:"episode_id,omitempty"`
	FrameIdx     []int    `json:"frame_idx,omitempty"`
	FrameIndices [][]int  `json:"frame_indices,omitempty"`
	Offset       []int    `json:"offset,omitempty"`
	Language     []string `json:"language,omitempty"`
	Action       []floats `json:"action,omitempty"`
	InitialState []floats `json:"initial_state,omitempty"`
	// ActionMask and StateMask are 1 for the dimensions of action and
	// initial_state that the sample's dataset has, 0 for the padding up to
	// the mix's widest: a padded 0 and a real 0 are told apart by them.
	ActionMask []mask   `json:"action_mask,omitempty"`
	StateMask  []mask   `json:"state_mask,omitempty"`
	Robot      []string `json:"robot,omitempty"`
	// IsRepeat is true for a sample that only fills the batch: the val
	// view's samples whose units it has served already. Only the val view
	// writes it (assemble.Options.MarkRepeats), so the train view's bytes are
	// unchanged.
	IsRepeat []bool `json:"is_repeat,omitempty"`
}

// mask is a JSON array of 0s and 1s: the first n of width are 1.
type mask struct{ n, width int }

func (m mask) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+2*m.width)
	out = append(out, '[')
	for i := range m.width {
		if i > 0 {
			out = append(out, ',')
		}
		if i < m.n {
			out = append(out, '1')
		} else {
			out = append(out, '0')
		}
	}
	return append(out, ']'), nil
}

// floats is a JSON array of numbers in which a non-finite value (which JSON
// cannot carry) is null, so one NaN in a dataset's actions cannot fail a
// batch.
type floats []float64

func (f floats) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+len(f)*12)
	out = append(out, '[')
	for i, x := range f {
		if i > 0 {
			out = append(out, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out = append(out, "null"...)
			continue
		}
		out = strconv.AppendFloat(out, x, 'g', -1, 64)
	}
	return append(out, ']'), nil
}

// metaJSON is the batch's .json under mode: every field for MetaFull,
// dataset_name (and is_repeat) for MetaDataset, nil (no .json) for
// MetaNone. dims[d] are dataset d's own action and state widths, for the
// masks; repeat, when not nil, is written as is_repeat.
func metaJSON(mode config.MetaMode, samples []plan.Sample, metas []Meta, dims []Dims, repeat []bool) ([]byte, error) {
	if mode == config.MetaNone {
		return nil, nil
	}
	var out batchMeta
	for i := range metas {
		m := &metas[i]
		out.DatasetName = append(out.DatasetName, m.DatasetName)
		if repeat != nil {
			out.IsRepeat = append(out.IsRepeat, repeat[i])
		}
		if mode != config.MetaFull {
			continue
		}
		out.EpisodeID = append(out.EpisodeID, m.EpisodeID)
		out.FrameIdx = append(out.FrameIdx, m.FrameIdx)
		out.FrameIndices = append(out.FrameIndices, m.FrameIndices)
		out.Offset = append(out.Offset, m.Offset)
		out.Language = append(out.Language, m.Language)
		out.Action = append(out.Action, m.Action)
		out.InitialState = append(out.InitialState, m.InitialState)
		d := dims[samples[i].Dataset]
		out.ActionMask = append(out.ActionMask, mask{d.Action, len(m.Action)})
		out.StateMask = append(out.StateMask, mask{d.State, len(m.InitialState)})
		out.Robot = append(out.Robot, m.Robot)
	}
	return json.Marshal(out)
}

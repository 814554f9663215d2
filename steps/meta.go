package steps

import (
	"encoding/json"

	"github.com/oxefs/oxefs/config"
)

// Meta is one sample's strings.
type Meta struct {
	DatasetName string
	// EpisodeID is stable: dataset/split/shard/record.
	EpisodeID string
	// Task is the language at t, "" when the dataset has none.
	Task  string
	Robot string
	// Index is the step's frame index across its dataset (LeRobot's index
	// column, what LeRobotDataset gives as "index"): −1 for a dataset that
	// numbers no frames across episodes (RLDS).
	Index int64
}

// batchJSON is a batch's .json: one array per field, in sample order.
type batchJSON struct {
	DatasetName []string `json:"dataset_name"`
	EpisodeID   []string `json:"episode_id,omitempty"`
	Task        []string `json:"task,omitempty"`
	Robot       []string `json:"robot,omitempty"`
	Index       []int64  `json:"index,omitempty"`
}

// MetaJSON is the batch's .json under mode: every field for MetaFull,
// dataset_name alone for MetaDataset, nil (no .json) for MetaNone.
func MetaJSON(mode config.MetaMode, metas []Meta) ([]byte, error) {
	if mode == config.MetaNone {
		return nil, nil
	}
	out := batchJSON{DatasetName: make([]string, len(metas))}
	full := mode == config.MetaFull
	if full {
		out.EpisodeID = make([]string, len(metas))
		out.Task = make([]string, len(metas))
		out.Robot = make([]string, len(metas))
		out.Index = make([]int64, len(metas))
	}
	for i, m := range metas {
		out.DatasetName[i] = m.DatasetName
		if full {
			out.EpisodeID[i], out.Task[i], out.Robot[i], out.Index[i] = m.EpisodeID, m.Task, m.Robot, m.Index
		}
	}
	return json.Marshal(out)
}

package plan

import "github.com/oxefs/oxefs/episode"

// Sample is one planned sample of a batch.
type Sample struct {
	// Dataset indexes the plan's datasets (config order, after datasets with
	// weight ≤ 0 are dropped). The train and val plans of one Mix use the
	// same indices.
	Dataset int
	// Episode is the record that holds the episode.
	Episode episode.Key
	// Unit is j < samples_per_episode, or the frame t itself when
	// samples_per_episode is 0 (every valid pair is a unit).
	Unit int
	// Epoch is the dataset-epoch this sample belongs to.
	Epoch int64
	// Key is the keyed hash of (seed, dataset, episode, unit, epoch) from
	// which every random choice for the sample is drawn (t, offset), with
	// Draw. Substitutes carry their own key.
	Key uint64
	// Index is the sample's number in its dataset's stream: it is the
	// dataset's Index-th sample since batch 0, at position Index mod units
	// of epoch Index / units.
	Index int64
	// Attempt is 0 for a planned sample and a for the a-th substitute
	// (Plan.Substitutes).
	Attempt int
}

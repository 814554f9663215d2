package rlds

import "github.com/oxefs/oxefs/episode"

// The errors about bad dataset bytes are the format-neutral model's.
var (
	ErrCorrupt        = episode.ErrCorrupt
	ErrMissingShard   = episode.ErrMissingShard
	ErrUnknownFeature = episode.ErrUnknownFeature
)

type (
	CorruptError        = episode.CorruptError
	UnknownFeatureError = episode.UnknownFeatureError
)

package pairs

import (
	"errors"
	"fmt"
)

// ErrShortEpisode matches *ShortEpisodeError.
var ErrShortEpisode = errors.New("episode too short for the offset")

// ShortEpisodeError is an episode with fewer steps than the offset needs.
// It is not corrupt data: such an episode simply has no sample units, and
// the plan substitutes another.
type ShortEpisodeError struct {
	Dataset string
	Episode string // the episode's ID
	Steps   int
	Need    int // Offset.Min + 1
}

func (e *ShortEpisodeError) Error() string {
	return fmt.Sprintf("dataset %s episode %s: %d steps, the offset needs at least %d", e.Dataset, e.Episode, e.Steps, e.Need)
}

// Is makes errors.Is(err, ErrShortEpisode) true.
func (e *ShortEpisodeError) Is(target error) bool { return target == ErrShortEpisode }

// What can be wrong with one image. An *ImageError wraps one of them.
var (
	// ErrEmptyImage: the step's image bytes are empty.
	ErrEmptyImage = errors.New("empty image")
	// ErrImageFormat: the bytes are neither a JPEG nor a PNG.
	ErrImageFormat = errors.New("not a JPEG or PNG image")
	// ErrUndecodable: the decoder rejected the bytes.
	ErrUndecodable = errors.New("undecodable image")
	// ErrImageSize: the decoded size is not what features.json declares or,
	// when it declares none, not that of the sample's first frame.
	ErrImageSize = errors.New("unexpected image size")
)

// ImageError is one bad image of an episode. Build returns it inside a
// *cache.CorruptError that names the dataset, shard and record.
type ImageError struct {
	Key  string
	Step int
	Err  error
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("%s step %d: %v", e.Key, e.Step, e.Err)
}

func (e *ImageError) Unwrap() error { return e.Err }

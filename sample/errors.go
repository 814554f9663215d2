package sample

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

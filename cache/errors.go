package cache

import (
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/episode"
)

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

// ErrUnavailable matches a source that kept failing after every retry within
// the retry budget. Such errors are a *UnavailableError.
var ErrUnavailable = errors.New("source unavailable")

// UnavailableError is a fetch that failed after Attempts tries.
type UnavailableError struct {
	URI      string
	Name     string
	Attempts int
	Err      error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s/%s: giving up after %d attempts: %v", e.URI, e.Name, e.Attempts, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

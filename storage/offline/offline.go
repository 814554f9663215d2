// Package offline is the storage decorator of offline mode (`oxefs mount
// --offline`): a backend that stands for a source which must not be
// contacted. Every read and stat fails at once with a *NotCachedError
// naming the object, without touching the wrapped backend, so that under
// the disk cache (storage/diskcache) an object is served only when it is
// already cached, and any other is reported as not cached instead of being
// fetched. It is no conformance-suite backend: it reads nothing by design.
//
// It imports only package storage of oxefs.
package offline

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/oxefs/oxefs/storage"
)

// ErrNotCached matches a read that offline mode refused because the object
// is not in the local cache. Such errors are a *NotCachedError. It does not
// match fs.ErrNotExist: the object may well exist at the source.
var ErrNotCached = errors.New("not in the local cache")

// NotCachedError is an object that offline mode needed and the local cache
// lacks.
type NotCachedError struct {
	URI  string // the source's location
	Name string // the object, relative to URI
}

func (e *NotCachedError) Error() string {
	return fmt.Sprintf("%s/%s: not in the local cache, and offline mode does not contact the source", e.URI, e.Name)
}

// Is makes errors.Is(err, ErrNotCached) true.
func (e *NotCachedError) Is(target error) bool { return target == ErrNotCached }

// Backend is a source that offline mode never contacts. It is no
// decorator (storage.Unwrapper): it reads nothing of the backend it stands
// for, so no capability of that backend is found through it (storage.As).
type Backend struct{ location string }

var _ storage.Backend = (*Backend)(nil)

// New returns b's offline stand-in: b's location, and no reads.
func New(b storage.Backend) *Backend { return &Backend{location: b.Location()} }

// Location is the wrapped backend's.
func (b *Backend) Location() string { return b.location }

// Open fails with a *NotCachedError.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return nil, &NotCachedError{URI: b.location, Name: name}
}

// Stat fails with a *NotCachedError.
func (b *Backend) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, &NotCachedError{URI: b.location, Name: name}
}

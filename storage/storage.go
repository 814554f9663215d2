// Package storage owns the seam between oxefs and the places datasets live:
// the Backend interface, the classes of storage errors (a missing object, a
// transient fault, a source given up on), optional capabilities such as
// objects readable in place as local files, and the registry that turns a
// dataset location ("gs://bucket/prefix", a local directory) into a Backend.
//
// Package storage imports nothing else of oxefs, and knows no protocol: each
// backend lives in its own package (storage/local, storage/gcs, storage/s3) and
// classifies its own errors, marking the retryable ones with Transient.
// Retries, rate limits and the disk cache are decorators (storage/retry,
// storage/ratelimit, storage/diskcache) that wrap any Backend and import
// only this package; so is storage/offline, the stand-in for a source that
// offline mode must not contact.
//
// # Adding a backend
//
// To read datasets from Azure Blob Storage, say, add a package
// storage/azure with a type that implements Backend and passes
// storagetest.Run, wrap its retryable errors with Transient and its missing
// objects with fs.ErrNotExist, and register its URL scheme from an init
// function:
//
//	func init() { storage.Register("az", open) }
//
// A program that imports the package (the CLI does, for its side effect)
// then accepts "az://container/prefix" wherever it accepts a location.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Backend is where one dataset's objects live: a local directory or a
// bucket prefix. Names are relative to it and use slashes
// ("features.json", "train/shard-00000"). A missing object is reported with
// an error that matches fs.ErrNotExist; an error worth retrying matches
// IsTransient. Every method is safe for concurrent use.
type Backend interface {
	// Location names the backend in messages and cache keys
	// ("gs://bucket/prefix", "/data/bridge/0.1.0").
	Location() string
	// Open streams length bytes of the named object from byte offset off,
	// or up to its end when length < 0. An offset at or past the end gives
	// an empty stream. Reads stop when ctx is done, at the latest between
	// two reads.
	Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error)
	// Stat identifies the bytes of the named object.
	Stat(ctx context.Context, name string) (ObjectInfo, error)
}

// ObjectInfo identifies the bytes of one object, so that what is derived
// from them (a length index, a cached copy) is rebuilt when they change,
// even when the dataset's layout does not.
type ObjectInfo struct {
	Size int64
	// Version changes whenever the bytes may have: a local file's size and
	// modification time (ns), a GCS object's generation and CRC32C.
	Version string
	// Checksum is what the source publishes of the bytes at Version
	// (see Checksum); zero when it publishes none, as a local directory.
	Checksum Checksum
}

// File is an object open as a local file: read at any offset, in place.
type File interface {
	io.ReaderAt
	io.Closer
	// Size is the object's size in bytes.
	Size() int64
}

// Filer is the capability of a backend whose objects are local files,
// readable in place without a fetch: a local directory, or a disk cache
// that fetches each object once. Callers look for it with As (IsFiler),
// through decorators, instead of for a concrete backend.
type Filer interface {
	Backend
	// OpenFile opens the named object as a local file.
	OpenFile(ctx context.Context, name string) (File, error)
}

// Unwrapper is a decorator: a backend that wraps another and reads its
// bytes unchanged (retries, a rate limit, the disk cache). Unwrap returns
// the backend it wraps, so that As finds a capability through the chain.
// A backend that changes what is read, or reads nothing of the backend it
// stands for (storage/offline), is no Unwrapper: nothing passes through
// it.
type Unwrapper interface {
	Unwrap() Backend
}

// As finds the first backend in b's chain of decorators (b, then what
// Unwrap returns, and so on) that is a T, sets target to it and returns
// true; it returns false when none is. T is a capability interface
// (Filer, Directory, Explainer) or a concrete backend type; as
// errors.As, never a type assertion on the outermost value, which a
// decorator hides.
func As[T any](b Backend, target *T) bool {
	for b != nil {
		if t, ok := b.(T); ok {
			*target = t
			return true
		}
		u, ok := b.(Unwrapper)
		if !ok {
			return false
		}
		b = u.Unwrap()
	}
	return false
}

// IsFiler reports whether b's objects are local files readable in place
// (a Filer, found through b's decorators with As).
func IsFiler(b Backend) bool {
	var f Filer
	return As(b, &f)
}

// Directory is the capability of a backend whose objects are the files
// under one directory of the local filesystem.
type Directory interface {
	Backend
	// Dir returns the directory, absolute.
	Dir() string
}

// Explainer is the capability of a backend that can add a remedy to one of
// its errors, where the cause is a common mistake (credentials refused by a
// public bucket, say).
type Explainer interface {
	// Explain returns err with the remedy added, or err itself when it
	// knows none. The result wraps err.
	Explain(err error) error
}

// Copier is the capability of a backend that copies whole objects itself
// (storage/retry: resuming after a fault, starting over after a checksum
// mismatch). Copy uses it when the backend has it. Decorators pass it on.
type Copier interface {
	// CopyTo streams the named object into w, exactly once and in order,
	// and returns the bytes written. Before writing it may call reserve
	// (when not nil) with the object's size, as a hint; an error from
	// reserve ends the copy. When w is a Restarter, a copy whose bytes
	// turn out damaged may start over.
	CopyTo(ctx context.Context, name string, w io.Writer, reserve func(size int64) error) (int64, error)
}

// Versioner is the capability of a backend that can read one version of
// an object (a GCS generation), so that reads spread over time (the
// headers of a shard, then its records) never mix the bytes of two
// uploads. Decorators pass it on (see OpenVersion).
type Versioner interface {
	// OpenVersion is Open of the object's bytes at version, an
	// ObjectInfo.Version that Stat returned. When the object no longer has
	// that version (rewritten or deleted since), it fails with a
	// *VersionError, which does not match fs.ErrNotExist.
	OpenVersion(ctx context.Context, name, version string, off, length int64) (io.ReadCloser, error)
}

// OpenVersion opens length bytes of version of the named object from off
// through b's Versioner. A backend without the capability reads the bytes
// there are now (Open): the callers' own checks (the TFRecord CRCs) are then
// the only guard against a rewrite.
func OpenVersion(ctx context.Context, b Backend, name, version string, off, length int64) (io.ReadCloser, error) {
	if v, ok := b.(Versioner); ok && version != "" {
		return v.OpenVersion(ctx, name, version, off, length)
	}
	return b.Open(ctx, name, off, length)
}

// Restarter is a destination that can drop what was written and start
// over, as an in-memory buffer can.
type Restarter interface {
	// Restart drops what was written and reports true, or reports false
	// when it cannot.
	Restart() bool
}

// Resumer is a destination told when a copy into it goes on after a
// fault from the byte it had reached, with another read (as storage/retry
// does): no checksum of one answer then covers the whole copy.
// Decorators' writers pass it on.
type Resumer interface {
	Resumed()
}

// Copy streams the named object into w through b's Copier when it has one,
// otherwise through Stat (for reserve's size hint, when reserve is not nil)
// and Open.
func Copy(ctx context.Context, b Backend, name string, w io.Writer, reserve func(size int64) error) (int64, error) {
	if c, ok := b.(Copier); ok {
		return c.CopyTo(ctx, name, w, reserve)
	}
	if reserve != nil {
		if info, err := b.Stat(ctx, name); err == nil {
			if err := reserve(info.Size); err != nil {
				return 0, err
			}
		}
	}
	rc, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return io.Copy(w, rc)
}

// ReadFile reads a whole (small) object into memory through Copy, so a
// retrying backend may start over after damaged bytes. The bytes are
// checked against the checksum the source publishes: by the backend's
// whole read, from its answer (see CheckWhole), or, when the copy was
// resumed after a fault and so came from several answers, against Stat's.
func ReadFile(ctx context.Context, b Backend, name string) ([]byte, error) {
	var buf memFile
	if _, err := Copy(ctx, b, name, &buf, nil); err != nil {
		return nil, err
	}
	if err := buf.checkResumed(ctx, b, name); err != nil {
		return nil, err
	}
	return buf.b, nil
}

// ErrTooLarge is ReadFileMax's refusal of an object larger than its
// bound.
var ErrTooLarge = errors.New("object too large")

// ReadFileMax is ReadFile of an object that must hold at most max bytes:
// a larger one is refused with an error wrapping ErrTooLarge that names
// the object and both sizes. The refusal comes before any byte is read
// where the source tells the size first, and at most max bytes are ever
// held.
func ReadFileMax(ctx context.Context, b Backend, name string, max int64) ([]byte, error) {
	buf := memFile{max: max}
	tooLarge := func(size string) error {
		return fmt.Errorf("%s is %s bytes, over the bound of %d MiB for it: %w", Object(b, name), size, max>>20, ErrTooLarge)
	}
	reserve := func(size int64) error {
		if size > max {
			return tooLarge(strconv.FormatInt(size, 10))
		}
		return nil
	}
	if _, err := Copy(ctx, b, name, &buf, reserve); err != nil {
		if errors.Is(err, errOverMax) {
			return nil, tooLarge("over " + strconv.FormatInt(max, 10))
		}
		return nil, err
	}
	if err := buf.checkResumed(ctx, b, name); err != nil {
		return nil, err
	}
	return buf.b, nil
}

// errOverMax is a bounded memFile's refusal of a write past its bound.
var errOverMax = errors.New("past the bound")

// memFile is an in-memory destination that can start over; with max > 0
// it holds at most max bytes.
type memFile struct {
	b   []byte
	max int64
	// resumed is set when the copy went on after a fault from the byte
	// it had reached (see Resumer).
	resumed bool
}

func (m *memFile) Write(p []byte) (int, error) {
	if m.max > 0 && int64(len(m.b)+len(p)) > m.max {
		return 0, errOverMax
	}
	m.b = append(m.b, p...)
	return len(p), nil
}

func (m *memFile) Restart() bool {
	m.b = m.b[:0]
	m.resumed = false
	return true
}

func (m *memFile) Resumed() { m.resumed = true }

// checkResumed checks the bytes of a copy that was resumed against the
// checksum Stat publishes, when there is one: the answers that carried
// them were each a part of the object, which no check of a whole answer
// covered. A mismatch is a transient *ChecksumError.
func (m *memFile) checkResumed(ctx context.Context, b Backend, name string) error {
	if !m.resumed {
		return nil
	}
	info, err := b.Stat(ctx, name)
	if err != nil {
		return fmt.Errorf("%s: identifying the object to check a resumed read: %w", Object(b, name), err)
	}
	h, err := info.Checksum.NewHash()
	if !info.Checksum.Published() || err != nil {
		return nil
	}
	h.Write(m.b)
	return Transient(info.Checksum.Check(Object(b, name), h.Sum(nil)))
}

// Object names a backend's object in messages: LOCATION/NAME.
func Object(b Backend, name string) string {
	return b.Location() + "/" + name
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Source is where one dataset's files live: a local TFDS directory or a GCS
// prefix. Names are relative to the dataset directory ("features.json",
// "bridge-train.tfrecord-00000-of-01024"). A missing file is reported with an
// error that matches fs.ErrNotExist.
type Source interface {
	// URI names the source in messages and cache keys.
	URI() string
	// Open streams the named file from byte offset off to its end.
	Open(ctx context.Context, name string, off int64) (io.ReadCloser, error)
	// Size returns the size in bytes of the named file.
	Size(ctx context.Context, name string) (int64, error)
	// Stat identifies the bytes of the named file (see ObjectInfo).
	Stat(ctx context.Context, name string) (ObjectInfo, error)
}

// Local is a dataset directory on a local or network filesystem. Shards are
// read in place; they never pass through the disk cache.
type Local struct {
	Dir string
}

var _ Source = Local{}

// URI returns the directory.
func (l Local) URI() string { return l.Dir }

// Path returns the local path of the named file.
func (l Local) Path(name string) string { return filepath.Join(l.Dir, filepath.FromSlash(name)) }

// Open opens the named file at offset off.
func (l Local) Open(_ context.Context, name string, off int64) (io.ReadCloser, error) {
	f, err := os.Open(l.Path(name))
	if err != nil {
		return nil, err
	}
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Size stats the named file.
func (l Local) Size(_ context.Context, name string) (int64, error) {
	st, err := os.Stat(l.Path(name))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// OpenSourceOptions configures OpenSource.
type OpenSourceOptions struct {
	// Anonymous reads public GCS buckets without credentials.
	Anonymous bool
}

// OpenSource returns the Source for a dataset location: "gs://bucket/prefix"
// or a local directory.
func OpenSource(ctx context.Context, location string, opts OpenSourceOptions) (Source, error) {
	if rest, ok := strings.CutPrefix(location, "gs://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, fmt.Errorf("source %q: no bucket after gs://", location)
		}
		return NewGCS(ctx, bucket, strings.Trim(prefix, "/"), opts)
	}
	if strings.Contains(location, "://") {
		return nil, fmt.Errorf("source %q: unsupported scheme (valid: gs://bucket/path or a local directory)", location)
	}
	st, err := os.Stat(location)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("source %q: no such directory", location)
		}
		return nil, fmt.Errorf("source %q: %w", location, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("source %q: not a directory", location)
	}
	abs, err := filepath.Abs(location)
	if err != nil {
		return nil, err
	}
	return Local{Dir: abs}, nil
}

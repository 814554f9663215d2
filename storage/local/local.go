// Package local is the storage backend for a dataset directory on a local
// or network filesystem. Its objects are files read in place (it is a
// storage.Filer), and it marks the OS errors worth retrying (a timeout or
// a reset connection of a network filesystem) as transient.
//
// It registers storage.LocalScheme, which storage.Open uses for every
// location without a URL scheme. It imports only package storage of oxefs.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/oxefs/oxefs/storage"
)

func init() {
	storage.Register(storage.LocalScheme, func(_ context.Context, location string, _ storage.Options) (storage.Backend, error) {
		return Open(location)
	})
}

// Backend is a dataset directory. Shards are read in place; they never
// pass through a disk cache.
type Backend struct {
	dir string
}

var (
	_ storage.Filer     = (*Backend)(nil)
	_ storage.Directory = (*Backend)(nil)
)

// Open returns the backend for an existing directory.
func Open(dir string) (*Backend, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("source %q: no such directory", dir)
		}
		return nil, fmt.Errorf("source %q: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("source %q: not a directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return New(abs), nil
}

// New returns the backend for dir without checking it.
func New(dir string) *Backend { return &Backend{dir: dir} }

// Location returns the directory.
func (b *Backend) Location() string { return b.dir }

// Dir returns the directory.
func (b *Backend) Dir() string { return b.dir }

// Path returns the local path of the named file.
func (b *Backend) Path(name string) string {
	return filepath.Join(b.dir, filepath.FromSlash(name))
}

// Open opens the named file at offset off, limited to length bytes when
// length >= 0.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	f, err := os.Open(b.Path(name))
	if err != nil {
		return nil, classify(err)
	}
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, classify(err)
		}
	}
	var r io.Reader = f
	if length >= 0 {
		r = io.LimitReader(f, length)
	}
	return &reader{ctx: ctx, r: r, f: f}, nil
}

// reader classifies the read errors of a file and stops once its context
// is done.
type reader struct {
	ctx context.Context
	r   io.Reader
	f   *os.File
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = classify(err)
	}
	return n, err
}

func (r *reader) Close() error { return r.f.Close() }

// OpenFile opens the named file for reads in place.
func (b *Backend) OpenFile(_ context.Context, name string) (storage.File, error) {
	f, err := os.Open(b.Path(name))
	if err != nil {
		return nil, classify(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, classify(err)
	}
	return &file{File: f, size: st.Size()}, nil
}

type file struct {
	*os.File
	size int64
}

func (f *file) Size() int64 { return f.size }

// Stat identifies the named file by its size and modification time.
func (b *Backend) Stat(_ context.Context, name string) (storage.ObjectInfo, error) {
	st, err := os.Stat(b.Path(name))
	if err != nil {
		return storage.ObjectInfo{}, classify(err)
	}
	return storage.ObjectInfo{
		Size:    st.Size(),
		Version: "size " + strconv.FormatInt(st.Size(), 10) + " mtime " + strconv.FormatInt(st.ModTime().UnixNano(), 10),
	}, nil
}

// classify marks the errors worth retrying (see isTransient) as transient.
func classify(err error) error {
	if isTransient(err) {
		return storage.Transient(err)
	}
	return err
}

// isTransient reports whether a filesystem error is worth retrying: a
// connection reset, refused or aborted (a network filesystem), an
// unexpected EOF, a timeout. A missing file and a cancelled context are
// not.
func isTransient(err error) bool { return storage.NetworkFault(err) }

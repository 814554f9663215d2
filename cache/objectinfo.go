package cache

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ObjectInfo identifies the bytes of one file of a Source, so that what is
// derived from them (a length index, a cached copy) is rebuilt when they
// change, even when the dataset's layout does not.
type ObjectInfo struct {
	Size int64
	// Version changes whenever the bytes may have: a local file's size and
	// modification time (ns), a GCS object's generation and CRC32C.
	Version string
}

// Stat identifies the named local file.
func (l Local) Stat(_ context.Context, name string) (ObjectInfo, error) {
	st, err := os.Stat(l.Path(name))
	if err != nil {
		return ObjectInfo{}, err
	}
	return ObjectInfo{
		Size:    st.Size(),
		Version: "size " + strconv.FormatInt(st.Size(), 10) + " mtime " + strconv.FormatInt(st.ModTime().UnixNano(), 10),
	}, nil
}

// Stat identifies the object by its generation (which every upload
// changes) and its CRC32C.
func (g *GCS) Stat(ctx context.Context, name string) (ObjectInfo, error) {
	attrs, err := g.object(name).Attrs(ctx)
	if err != nil {
		return ObjectInfo{}, gcsError(err)
	}
	return ObjectInfo{
		Size:    attrs.Size,
		Version: fmt.Sprintf("generation %d crc32c %08x", attrs.Generation, attrs.CRC32C),
	}, nil
}

// Stat identifies the named file, retrying transient errors as Fetch does:
// each attempt bounded by the stall timeout, the whole by MaxElapsed, after
// which it returns an *UnavailableError. A permanent error (a missing file,
// matching fs.ErrNotExist) returns as it is.
func (f *Fetcher) Stat(ctx context.Context, src Source, name string) (ObjectInfo, error) {
	p := f.Policy.withDefaults()
	start := time.Now()
	backoff := p.InitialBackoff
	for attempts := 1; ; attempts++ {
		actx, cancel := context.WithTimeout(ctx, p.StallTimeout)
		info, err := src.Stat(actx, name)
		cancel()
		switch {
		case err == nil:
			return info, nil
		case ctx.Err() != nil:
			return ObjectInfo{}, ctx.Err()
		case !IsTransient(err):
			return ObjectInfo{}, nameError(src, name, err)
		}
		wait := jitter(backoff)
		if time.Since(start)+wait > p.MaxElapsed {
			return ObjectInfo{}, &UnavailableError{URI: src.URI(), Name: name, Attempts: attempts, Err: err}
		}
		if err := sleep(ctx, wait); err != nil {
			return ObjectInfo{}, err
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}

package storage_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/offline"
	"github.com/oxefs/oxefs/storage/ratelimit"
	"github.com/oxefs/oxefs/storage/retry"
)

// hidden hides that a backend's objects are local files: it is no
// decorator (no Unwrap), as a backend that changes what is read is not.
type hidden struct{ storage.Backend }

// TestAs: a capability is found through the decorators that wrap a
// backend (Unwrap), as errors.As finds an error through wrapping: a local
// directory's Filer under retries and a rate limit is found, and is the
// directory itself; a disk cache is a Filer of its own; a backend that is
// no Filer is not one, wrapped or not, and nothing passes through a
// backend that is no decorator (hidden, offline's stand-in).
func TestAs(t *testing.T) {
	dir := local.New(t.TempDir())
	cache, err := diskcache.Open(t.TempDir(), 1<<20, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	decorate := func(b storage.Backend) storage.Backend {
		return ratelimit.New(retry.New(b, retry.Policy{}, nil, nil), ratelimit.NewLimiter(1<<30))
	}
	cached := cache.Wrap(decorate(hidden{dir}), "x", context.Background())
	for _, tc := range []struct {
		name string
		b    storage.Backend
		want storage.Backend // the Filer As finds; nil: none
	}{
		{"a local directory", dir, dir},
		{"a local directory under two decorators", decorate(dir), dir},
		{"a disk cache over a remote", cached, cached},
		{"no Filer", hidden{dir}, nil},
		{"no Filer under two decorators", decorate(hidden{dir}), nil},
		{"offline's stand-in for a local directory", offline.New(dir), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fl storage.Filer
			found := storage.As(tc.b, &fl)
			if found != (tc.want != nil) || (found && fl != tc.want) {
				t.Fatalf("As(%T) = %v, %T; want %v, %T", tc.b, found, fl, tc.want != nil, tc.want)
			}
			if storage.IsFiler(tc.b) != found {
				t.Fatalf("IsFiler(%T) = %v, As found %v", tc.b, !found, found)
			}
		})
	}
	var r *retry.Backend
	if !storage.As(decorate(dir), &r) || r == nil || r.Unwrap() != dir {
		t.Fatalf("As found no *retry.Backend under the rate limit: %v", r)
	}
}

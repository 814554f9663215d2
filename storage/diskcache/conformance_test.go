package diskcache_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		b, put := testkit.LocalBackend(t)
		c, err := diskcache.Open(t.TempDir(), 1<<30, slog.New(slog.DiscardHandler), 0)
		if err != nil {
			t.Fatal(err)
		}
		return c.Wrap(b, "src", context.Background()), put
	})
}

package ratelimit_test

import (
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/ratelimit"
	"github.com/oxefs/oxefs/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		b, put := testkit.LocalBackend(t)
		return ratelimit.New(b, ratelimit.NewLimiter(1<<30)), put
	})
}

package local_test

import (
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		return testkit.LocalBackend(t)
	})
}

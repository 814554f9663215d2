package hf

import (
	"testing"

	"github.com/oxefs/oxefs/internal/testkit/fakehub"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/storagetest"
)

// testRepo is the dataset repository the tests' fake Hubs serve.
const testRepo = "oxe/test"

// TestConformance runs the suite against a fake Hub: the objects of 1 KiB
// and more are LFS files, read through a redirect to its storage host, the
// others are answered by the Hub itself. The suite's put replaces a file
// in the pinned commit (a history rewrite), which Stat sees: it asks the
// Hub every time.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		hub := fakehub.New(t, fakehub.Options{})
		commit := hub.Commit(testRepo, "main", nil)
		b := newTestBackend(t, hub, Config{})
		return b, func(t *testing.T, name string, data []byte) {
			hub.Rewrite(testRepo, commit, name, data)
		}
	})
}

// newTestBackend reads testRepo from hub, cfg filling the rest.
func newTestBackend(t *testing.T, hub *fakehub.Hub, cfg Config) *Backend {
	t.Helper()
	cfg.Endpoint = hub.URL()
	if cfg.Repo == "" {
		cfg.Repo = testRepo
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

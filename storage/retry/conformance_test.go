package retry_test

import (
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		b, put := testkit.LocalBackend(t)
		policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
		return retry.New(b, policy, nil, nil), put
	})
}

package s3

import (
	"path"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/storagetest"
)

// TestConformance runs the suite through the real SDK client against
// gofakes3.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
		b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		return b, func(t *testing.T, name string, data []byte) {
			srv.Put(t, testkit.S3Bucket, path.Join(testkit.S3Prefix, name), data)
		}
	})
}

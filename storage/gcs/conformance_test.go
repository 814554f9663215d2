package gcs

import (
	"path"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/storagetest"
)

// TestConformance runs the suite through the real client against
// fake-gcs-server.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		srv := testkit.StartFakeGCS(t, nil)
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testkit.GCSBucket})
		b := NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, testkit.GCSPrefix)
		return b, func(t *testing.T, name string, data []byte) {
			srv.CreateObject(fakestorage.Object{
				ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testkit.GCSBucket, Name: path.Join(testkit.GCSPrefix, name)},
				Content:     data,
			})
		}
	})
}

package gcs

import (
	"path"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/storagetest"
)

// TestConformance runs the suite through the real client against
// fake-gcs-server.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		srv := startFakeGCS(t, nil)
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
		b := NewWithClient(newTestClient(t, srv.URL()), testBucket, testPrefix)
		return b, func(t *testing.T, name string, data []byte) {
			srv.CreateObject(fakestorage.Object{
				ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testBucket, Name: path.Join(testPrefix, name)},
				Content:     data,
			})
		}
	})
}

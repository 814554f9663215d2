// Package testkit holds test helpers that several packages share: an
// in-process fake GCS server reached through the real client, an HTTP
// proxy that injects faults in front of it, and a slog handler that records.
// Only tests import it.
package testkit

import (
	"context"
	"crypto/rand"
	"testing"

	gstorage "cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"
)

// The bucket and prefix under which StartFakeGCS serves its objects.
const (
	GCSBucket = "oxe-test"
	GCSPrefix = "bridge/0.1.0"
)

// StartFakeGCS serves objects, named relative to GCSBucket/GCSPrefix, from
// an in-process fake-gcs-server listening on loopback.
func StartFakeGCS(t testing.TB, objects map[string][]byte) *fakestorage.Server {
	t.Helper()
	var initial []fakestorage.Object
	for name, data := range objects {
		initial = append(initial, fakestorage.Object{
			ObjectAttrs: fakestorage.ObjectAttrs{BucketName: GCSBucket, Name: GCSPrefix + "/" + name},
			Content:     data,
		})
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		InitialObjects: initial,
		Scheme:         "http",
		Host:           "127.0.0.1",
		Port:           0,
		// The client reads objects through the XML API at
		// http://HOST/BUCKET/OBJECT; the fake server routes that path only
		// for its public host.
		PublicHost: "127.0.0.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// NewGCSClient returns a real storage client talking to baseURL
// (http://127.0.0.1:PORT) without credentials.
func NewGCSClient(t testing.TB, baseURL string) *gstorage.Client {
	t.Helper()
	client, err := gstorage.NewClient(context.Background(),
		option.WithEndpoint(baseURL+"/storage/v1/"),
		option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// RandomBytes returns n random bytes.
func RandomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

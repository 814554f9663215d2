// Package flipsource serves a dataset's files from a fake object store
// (fake-gcs-server, gofakes3 or the fake Hub) behind testkit.FaultProxies
// that flip a byte of chosen reads of one file, through the real clients:
// the tests of what a byte damaged in transit does to a dataset's
// metadata. It is a package of its own because it imports the backends,
// whose own tests import testkit.
package flipsource

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/hf"
	"github.com/oxefs/oxefs/storage/s3"
)

// lfsThreshold is the size from which the fake Hub keeps a file in LFS
// (its default).
const lfsThreshold = 1 << 10

// Kinds are the sources New serves from.
var Kinds = []string{"gs", "s3", "hf"}

// Source is a backend over a fake store behind flipping proxies.
type Source struct {
	storage.Backend
	proxies []*testkit.FaultProxy
}

// Flipped returns how many responses were sent with a byte flipped.
func (s *Source) Flipped() int {
	n := 0
	for _, p := range s.proxies {
		n += p.Flipped()
	}
	return n
}

// New serves files (named relative to the dataset) from a fake of kind
// ("gs", "s3", "hf"), and flips the middle byte of the n-th read (from 1)
// of the named file's bytes when flip(n): a read of the object itself, not
// a GCS JSON API call nor the Hub's redirect of an LFS file (whose bytes
// its storage host sends).
func New(t testing.TB, kind string, files map[string][]byte, name string, flip func(n int64) bool) *Source {
	t.Helper()
	carries := func(r testkit.SeenRequest) bool { return strings.HasSuffix(r.Path, "/"+name) }
	if kind == "hf" && len(files[name]) >= lfsThreshold {
		// The Hub answers a redirect; the storage host sends the bytes.
		sum := sha256.Sum256(files[name])
		lfs := "/lfs/" + hex.EncodeToString(sum[:])
		carries = func(r testkit.SeenRequest) bool { return r.Path == lfs }
	}
	var reads atomic.Int64
	plan := func(r testkit.SeenRequest, _ int) testkit.Fault {
		if r.Method == "GET" && !strings.HasPrefix(r.Path, "/storage/v1/") && carries(r) && flip(reads.Add(1)) {
			return testkit.FlipAt(int64(len(files[name]) / 2))
		}
		return testkit.Pass()
	}
	switch kind {
	case "gs":
		proxy := testkit.NewRequestFaultProxy(t, testkit.StartFakeGCS(t, files).URL(), plan)
		b := gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, testkit.GCSPrefix)
		return &Source{Backend: b, proxies: []*testkit.FaultProxy{proxy}}
	case "s3":
		srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
		for n, data := range files {
			srv.Put(t, testkit.S3Bucket, path.Join(testkit.S3Prefix, n), data)
		}
		proxy := testkit.NewRequestFaultProxy(t, srv.URL, plan)
		cfg := srv.Config()
		cfg.BaseEndpoint = aws.String(proxy.URL())
		b := s3.NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		return &Source{Backend: b, proxies: []*testkit.FaultProxy{proxy}}
	case "hf":
		hub := fakehub.New(t, fakehub.Options{LFSThreshold: lfsThreshold})
		hub.Commit("oxe/flipped", "main", files)
		hubProxy := testkit.NewRequestFaultProxy(t, hub.URL(), plan)
		stProxy := testkit.NewRequestFaultProxy(t, hub.StorageURL(), plan)
		hub.RedirectStorageTo(stProxy.URL())
		b, err := hf.New(hf.Config{Endpoint: hubProxy.URL(), Repo: "oxe/flipped"})
		if err != nil {
			t.Fatal(err)
		}
		return &Source{Backend: b, proxies: []*testkit.FaultProxy{hubProxy, stProxy}}
	}
	t.Fatalf("flipsource: unknown kind %q (valid: %s)", kind, strings.Join(Kinds, ", "))
	return nil
}

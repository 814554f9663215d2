package gcs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/ratelimit"
	"github.com/oxefs/oxefs/storage/retry"
)

// TestOpenVersion: a read pinned to the generation Stat gave serves that
// generation's bytes; once the object is rewritten, the same read fails
// with storage.ErrVersionGone, which is permanent and never
// fs.ErrNotExist, directly and through the retry and rate-limit
// decorators. A read of the new version serves the new bytes.
func TestOpenVersion(t *testing.T) {
	ctx := context.Background()
	oldBytes := testkit.RandomBytes(t, 5000)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"obj": oldBytes})
	g := NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, testkit.GCSPrefix)
	policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxElapsed: 5 * time.Second}
	stacks := map[string]storage.Backend{
		"gcs":             g,
		"retry":           retry.New(g, policy, nil, nil),
		"ratelimit/retry": ratelimit.New(retry.New(g, policy, nil, nil), ratelimit.NewLimiter(1<<30)),
	}
	info, err := g.Stat(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	readVersion := func(b storage.Backend, version string, off, length int64) ([]byte, error) {
		rc, err := storage.OpenVersion(ctx, b, "obj", version, off, length)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	for name, b := range stacks {
		got, err := readVersion(b, info.Version, 100, 50)
		if err != nil || !bytes.Equal(got, oldBytes[100:150]) {
			t.Fatalf("%s: ranged read of the current version: %v (or other bytes)", name, err)
		}
	}

	newBytes := testkit.RandomBytes(t, 5000)
	srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testkit.GCSBucket, Name: path.Join(testkit.GCSPrefix, "obj")},
		Content:     newBytes,
	})
	now, err := g.Stat(ctx, "obj")
	if err != nil || now.Version == info.Version {
		t.Fatalf("Stat after the rewrite = %+v, %v; want a new version", now, err)
	}
	for name, b := range stacks {
		got, err := readVersion(b, info.Version, 100, 50)
		if !errors.Is(err, storage.ErrVersionGone) || errors.Is(err, fs.ErrNotExist) || storage.IsTransient(err) {
			t.Errorf("%s: read of the overwritten version: %d bytes, %v; want ErrVersionGone only", name, len(got), err)
		}
		got, err = readVersion(b, now.Version, 100, 50)
		if err != nil || !bytes.Equal(got, newBytes[100:150]) {
			t.Errorf("%s: read of the new version: %v (or other bytes)", name, err)
		}
	}
	if _, err := g.OpenVersion(ctx, "obj", "size 5 mtime 7", 0, 1); err == nil {
		t.Error("OpenVersion of a version that is not a generation: no error")
	}
}

// TestStatPublishesCRC32C: Stat returns the object's CRC32C as its
// checksum, which a copy of the object's bytes passes and a copy with one
// byte flipped fails.
func TestStatPublishesCRC32C(t *testing.T) {
	data := testkit.RandomBytes(t, 5000)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"obj": data})
	g := NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, testkit.GCSPrefix)
	info, err := g.Stat(t.Context(), "obj")
	if err != nil {
		t.Fatal(err)
	}
	if info.Checksum.Algorithm != storage.CRC32C {
		t.Fatalf("checksum %+v, want a CRC32C", info.Checksum)
	}
	sum := func(b []byte) []byte {
		h, err := info.Checksum.NewHash()
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
		return h.Sum(nil)
	}
	if err := info.Checksum.Check("obj", sum(data)); err != nil {
		t.Fatalf("the object's own bytes: %v", err)
	}
	bad := bytes.Clone(data)
	bad[100] ^= 1
	if err := info.Checksum.Check("obj", sum(bad)); !errors.Is(err, storage.ErrChecksum) {
		t.Fatalf("a flipped byte: %v, want storage.ErrChecksum", err)
	}
}

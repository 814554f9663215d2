package rlds

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/hf"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/storage/s3"
	"github.com/oxefs/oxefs/store"
)

// metaFlipSource serves tiny_bridge from a fake of kind ("gs", "s3",
// "hf") behind FaultProxies that flip a byte of the reads flip picks of
// the responses that carry the bytes of the metadata file named file: the
// object read (not a GCS JSON API call, nor the Hub's redirect of an LFS
// file, whose bytes the storage host sends).
func metaFlipSource(t *testing.T, kind, file string, flip func(n int64) bool) (storage.Backend, func() int) {
	t.Helper()
	md := loadManifest(t).Datasets["tiny_bridge"]
	files := testkit.ReadDirFiles(t, filepath.Join(fixtureDir, md.Dir))
	sum := sha256.Sum256(files[file])
	var reads atomic.Int64
	plan := func(r testkit.SeenRequest, _ int) testkit.Fault {
		carries := r.Method == "GET" && !strings.HasPrefix(r.Path, "/storage/v1/") &&
			(strings.HasSuffix(r.Path, "/"+file) || r.Path == "/lfs/"+hex.EncodeToString(sum[:]))
		if carries && flip(reads.Add(1)) {
			return testkit.FlipAt(int64(len(files[file]) / 2))
		}
		return testkit.Pass()
	}
	switch kind {
	case "gs":
		proxy := testkit.NewRequestFaultProxy(t, testkit.StartFakeGCS(t, fixtureObjects(t, md.Dir)).URL(), plan)
		return gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir)), proxy.Flipped
	case "s3":
		srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
		srv.PutDir(t, testkit.S3Bucket, path.Join(testkit.S3Prefix, md.Dir), filepath.Join(fixtureDir, md.Dir))
		proxy := testkit.NewRequestFaultProxy(t, srv.URL, plan)
		cfg := srv.Config()
		cfg.BaseEndpoint = aws.String(proxy.URL())
		return s3.NewWithConfig(cfg, testkit.S3Bucket, path.Join(testkit.S3Prefix, md.Dir), storage.Options{}), proxy.Flipped
	}
	hub := fakehub.New(t, fakehub.Options{})
	hub.Commit("oxe/tiny_bridge", "main", files)
	hubProxy := testkit.NewRequestFaultProxy(t, hub.URL(), plan)
	stProxy := testkit.NewRequestFaultProxy(t, hub.StorageURL(), plan)
	hub.RedirectStorageTo(stProxy.URL())
	src, err := hf.New(hf.Config{Endpoint: hubProxy.URL(), Repo: "oxe/tiny_bridge"})
	if err != nil {
		t.Fatal(err)
	}
	return src, func() int { return hubProxy.Flipped() + stProxy.Flipped() }
}

// TestFlippedMetadataIsReadAgain: a byte flipped in transit in
// dataset_info.json or features.json, read whole from fake GCS, S3 or the
// Hub, fails the check against the checksum the source publishes and is
// read again: the dataset opens with the metadata of a local open, and
// what SaveOffline keeps for --offline is those bytes (an offline open
// gives the same dataset). Flipped on every try, the open fails with a
// transient checksum error naming the object, and nothing is saved under
// the index directory.
func TestFlippedMetadataIsReadAgain(t *testing.T) {
	md := loadManifest(t).Datasets["tiny_bridge"]
	near := openLocal(t, newTestStore(t, ""), md.Dir)
	policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Second}
	for _, kind := range []string{"gs", "s3", "hf"} {
		for _, file := range []string{"dataset_info.json", "features.json"} {
			t.Run(kind+"/"+file, func(t *testing.T) {
				ctx := context.Background()
				src, flipped := metaFlipSource(t, kind, file, func(n int64) bool { return n == 1 })
				cacheDir := t.TempDir()
				s, err := store.NewStore(mustOptions(stackOptions(t, cacheDir, 1<<30, policy)))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				ds, err := Open(ctx, s, "", src)
				if err != nil {
					t.Fatal(err)
				}
				if flipped() != 1 {
					t.Fatalf("%d responses flipped, want 1", flipped())
				}
				sameMetadata(t, ds, near)
				if err := ds.SaveOffline(ctx); err != nil {
					t.Fatal(err)
				}
				s.Close()

				opts := mustOptions(stackOptions(t, cacheDir, 1<<30, policy))
				opts.Offline = true
				off, err := store.NewStore(opts)
				if err != nil {
					t.Fatal(err)
				}
				defer off.Close()
				ods, err := Open(ctx, off, "", src)
				if err != nil {
					t.Fatalf("offline open: %v", err)
				}
				sameMetadata(t, ods, near)
			})
			t.Run(kind+"/"+file+"/every try", func(t *testing.T) {
				src, flipped := metaFlipSource(t, kind, file, func(int64) bool { return true })
				cacheDir := t.TempDir()
				s, err := store.NewStore(mustOptions(stackOptions(t, cacheDir, 1<<30, policy)))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				_, err = Open(context.Background(), s, "", src)
				if !errors.Is(err, storage.ErrChecksum) || !strings.Contains(err.Error(), file) {
					t.Fatalf("open: %v, want a checksum error naming %s", err, file)
				}
				if !strings.Contains(err.Error(), "damaged") {
					t.Errorf("open: %v: does not say the bytes came damaged", err)
				}
				if flipped() < 2 {
					t.Errorf("%d responses flipped: not read again", flipped())
				}
				indexFiles(t, filepath.Join(cacheDir, "index"))
			})
		}
	}
}

// sameMetadata fails t unless ds has the metadata of the local open near.
func sameMetadata(t *testing.T, ds, near *Dataset) {
	t.Helper()
	if !bytes.Equal(ds.infoJSON, near.infoJSON) || !bytes.Equal(ds.featJSON, near.featJSON) {
		t.Fatal("dataset_info.json or features.json differ from the local files")
	}
	if !reflect.DeepEqual(ds.Meta, near.Meta) || !reflect.DeepEqual(ds.Features, near.Features) {
		t.Fatal("the parsed metadata differs from a local open's")
	}
}

// indexFiles fails t when there is any file under dir.
func indexFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err == nil && !d.IsDir() {
			t.Errorf("saved under the index directory: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

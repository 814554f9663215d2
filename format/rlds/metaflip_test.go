package rlds

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/flipsource"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"
)

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
	files := testkit.ReadDirFiles(t, filepath.Join(fixtureDir, md.Dir))
	for _, kind := range flipsource.Kinds {
		for _, file := range []string{"dataset_info.json", "features.json"} {
			t.Run(kind+"/"+file, func(t *testing.T) {
				ctx := context.Background()
				src := flipsource.New(t, kind, files, file, func(n int64) bool { return n == 1 })
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
				if src.Flipped() != 1 {
					t.Fatalf("%d responses flipped, want 1", src.Flipped())
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
				src := flipsource.New(t, kind, files, file, func(int64) bool { return true })
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
				if src.Flipped() < 2 {
					t.Errorf("%d responses flipped: not read again", src.Flipped())
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

package lerobot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/cachekit"
	"github.com/oxefs/oxefs/internal/testkit/flipsource"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"
)

// TestFlippedMetadataIsReadAgain: a byte flipped in transit in
// meta/info.json or the episode table, read whole from fake GCS, S3 or the
// Hub, fails the check against the checksum the source publishes and is
// read again: the dataset opens with the metadata and episodes of a local
// open. Flipped on every try, the open fails with a transient checksum
// error naming the object, and nothing is saved under the index
// directory.
func TestFlippedMetadataIsReadAgain(t *testing.T) {
	dir := filepath.Join(fixtures, "lerobot_h264")
	files := testkit.ReadDirFiles(t, dir)
	near := openFixture(t, "lerobot_h264")
	policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Second}
	open := func(t *testing.T, src storage.Backend) (*Dataset, string, error) {
		indexDir := t.TempDir()
		st, err := store.NewStore(store.Options{IndexDir: indexDir, Disk: cachekit.Disk(t, t.TempDir(), 64<<20, nil, 0),
			Remote: func(b storage.Backend) storage.Backend { return retry.New(b, policy, nil, nil) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		d, err := Open(context.Background(), "lerobot_h264", src, Options{Store: st})
		return d, indexDir, err
	}
	for _, kind := range flipsource.Kinds {
		for _, file := range []string{InfoPath, "meta/episodes/chunk-000/file-000.parquet"} {
			if files[file] == nil {
				t.Fatalf("no %s in the fixture", file)
			}
			t.Run(kind+"/"+file, func(t *testing.T) {
				src := flipsource.New(t, kind, files, file, func(n int64) bool { return n == 1 })
				d, _, err := open(t, src)
				if err != nil {
					t.Fatal(err)
				}
				if src.Flipped() != 1 {
					t.Fatalf("%d responses flipped, want 1", src.Flipped())
				}
				if !reflect.DeepEqual(d.Meta, near.Meta) || !reflect.DeepEqual(d.Episodes(), near.Episodes()) || !reflect.DeepEqual(d.Tasks(), near.Tasks()) {
					t.Fatal("the metadata, episodes or tasks differ from a local open's")
				}
			})
			t.Run(kind+"/"+file+"/every try", func(t *testing.T) {
				src := flipsource.New(t, kind, files, file, func(int64) bool { return true })
				_, indexDir, err := open(t, src)
				if !errors.Is(err, storage.ErrChecksum) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "damaged") {
					t.Fatalf("open: %v, want a checksum error naming %s", err, file)
				}
				if src.Flipped() < 2 {
					t.Errorf("%d responses flipped: not read again", src.Flipped())
				}
				err = filepath.WalkDir(indexDir, func(p string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						t.Errorf("saved under the index directory: %s", p)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

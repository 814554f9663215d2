package rlds

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
)

// TestOpenRefusesHugeMetadata: a dataset_info.json or features.json past
// MaxMetadataBytes (here valid JSON, padded with a long description) is
// refused with an error naming the file and the bound, from a local
// directory and from GCS, instead of being read whole and parsed.
func TestOpenRefusesHugeMetadata(t *testing.T) {
	src := filepath.Join(testkit.Testdata(t), "datasets", "tiny_bridge", "1.0.0")
	pad := func(b []byte) []byte {
		return append([]byte(`{"description": "`+strings.Repeat("x", MaxMetadataBytes)+`", `), bytes.TrimPrefix(bytes.TrimSpace(b), []byte("{"))...)
	}
	for _, file := range []string{"dataset_info.json", "features.json"} {
		dir := testkit.CopyDirEdit(t, src, func(name string, b []byte) []byte {
			if name == file {
				return pad(b)
			}
			return b
		})
		objects := map[string][]byte{}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			objects[e.Name()] = b
		}
		srv := testkit.StartFakeGCS(t, objects)
		for _, tc := range []struct {
			name string
			src  storage.Backend
		}{
			{"local", local.New(dir)},
			{"gcs", gcs.NewWithClientOptions(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, testkit.GCSPrefix, storage.Options{})},
		} {
			t.Run(file+"/"+tc.name, func(t *testing.T) {
				_, err := Open(context.Background(), hintStore(t), "", tc.src)
				if !errors.Is(err, storage.ErrTooLarge) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "16 MiB") {
					t.Fatalf("Open with a %d-byte %s: %v, want ErrTooLarge naming the file and the 16 MiB bound", MaxMetadataBytes+20, file, err)
				}
				t.Log(err)
			})
		}
	}
	// The same file within the bound opens.
	if _, err := Open(context.Background(), hintStore(t), "", local.New(src)); err != nil {
		t.Fatal(err)
	}
}

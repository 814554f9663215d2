package rlds

import (
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"

	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func hintStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.NewStore(mustOptions(stackOptions(t, t.TempDir(), 1<<30, retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		MaxElapsed: time.Second, StallTimeout: time.Second})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestHintDatasetsBelow: a local source that is a directory above
// datasets lists those within three levels, sorted (a/b/c/too_deep and
// kuka/1.0.0/nested/2.0 are four down).
func TestHintDatasetsBelow(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"bridge/0.1.0", "kuka/1.0.0", "oxe/fractal/0.1.0", "a/b/c/too_deep", "kuka/1.0.0/nested/2.0"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "dataset_info.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "empty/1.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := hintStore(t)
	for _, tc := range []struct {
		dir, want string
	}{
		{root, "datasets below it: bridge/0.1.0, kuka/1.0.0, oxe/fractal/0.1.0 (give one of them as the source, e.g. " +
			filepath.Join(root, "bridge/0.1.0") + ")"},
		{filepath.Join(root, "oxe"), "datasets below it: fractal/0.1.0 ("},
	} {
		_, err := Open(context.Background(), s, "", local.New(tc.dir))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "no dataset_info.json in "+tc.dir) {
			t.Errorf("Open(%s): %v\nwant %q", tc.dir, err, tc.want)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%s): %v does not match fs.ErrNotExist", tc.dir, err)
		}
	}
	// Nothing below: no hint.
	_, err := Open(context.Background(), s, "", local.New(filepath.Join(root, "empty")))
	if err == nil || strings.Contains(err.Error(), "below it") {
		t.Errorf("Open(empty): %v, want no hint", err)
	}
}

// TestHintAnonymous: a GCS source whose credentials are refused (401, 403)
// suggests anonymous access, unless it is anonymous already; other
// failures get no hint.
func TestHintAnonymous(t *testing.T) {
	srv := testkit.StartFakeGCS(t, map[string][]byte{"dataset_info.json": []byte("{}")})
	for _, tc := range []struct {
		name      string
		code      int
		anonymous bool
		hint      bool
	}{
		{"401", 401, false, true},
		{"403", 403, false, true},
		{"403 anonymous already", 403, true, false},
		{"404", 404, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := testkit.NewFaultProxy(t, srv.URL(), func(int) testkit.Fault { return testkit.Respond(tc.code) })
			src := gcs.NewWithClientOptions(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, testkit.GCSPrefix,
				storage.Options{Anonymous: tc.anonymous})
			_, err := Open(context.Background(), hintStore(t), "", src)
			if err == nil {
				t.Fatal("Open succeeded through a proxy that refuses everything")
			}
			if got := strings.Contains(err.Error(), "`anonymous: true`"); got != tc.hint {
				t.Fatalf("Open: %v\nhint shown: %v, want %v", err, got, tc.hint)
			}
		})
	}
}

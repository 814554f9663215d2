package loader

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/retry"
)

// TestLeRobotFromGCS reads lerobot_av1 from a gs:// source (fake-gcs-server
// through the real client, behind a proxy that fails some requests with
// 503): the storage stack's retries carry it, and every episode and every
// frame equals the local read. A source that keeps failing is a read error,
// not corrupt data.
func TestLeRobotFromGCS(t *testing.T) {
	requireVideo(t)
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	objects := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		objects[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	upstream := testkit.StartFakeGCS(t, objects)
	var requests atomic.Int64
	var dead atomic.Bool
	proxy := testkit.NewFaultProxy(t, upstream.URL(), func(int) testkit.Fault {
		if n := requests.Add(1); dead.Load() || n%5 == 0 {
			return testkit.Respond(503)
		}
		return testkit.Pass()
	})
	st, err := OpenStorage(StorageOptions{CacheDir: t.TempDir(), Disk: 1 << 30, Log: testkit.TestLogger(t),
		Retry: retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	var src storage.Backend = gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, path.Clean(testkit.GCSPrefix))
	data, err := OpenData(ctx, "remote", src, st.Store, nil)
	if err != nil {
		t.Fatal(err)
	}
	remote, ok := data.(*lerobot.Dataset)
	if !ok {
		t.Fatalf("opened as %T, want a LeRobot dataset", data)
	}
	near, err := lerobot.Open(ctx, "remote", local.New(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	decode := func(ep episode.Episode) []byte {
		v, err := ep.Feature("observation.images.top")
		if err != nil {
			t.Fatal(err)
		}
		idx := []int{0, ep.Steps() / 2, ep.Steps() - 1}
		out := make([]byte, len(idx)*48*64*3)
		src := &frames.Video{Key: "top", Steps: ep.Steps(), Stream: v.(episode.Video)}
		if err := src.Decode(ctx, dec, idx, frames.Slot{Buf: out, Frames: len(idx), H: 48, W: 64}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for i := range int64(len(near.Episodes())) {
		key, _ := near.Key(i)
		a, err := remote.Episode(ctx, key)
		if err != nil {
			t.Fatalf("episode %d from gs://: %v", i, err)
		}
		b, err := near.Episode(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		fa, fb := actionValues(t, a), actionValues(t, b)
		if len(fa) != len(fb) || fa[0] != fb[0] || fa[len(fa)-1] != fb[len(fb)-1] {
			t.Errorf("episode %d: actions differ between gs:// and local", i)
		}
		if st := testkit.Diff(decode(b), decode(a)); st.Max != 0 {
			t.Errorf("episode %d: frames differ between gs:// and local: %v", i, st)
		}
	}
	if requests.Load() < 10 {
		t.Errorf("only %d requests reached the proxy", requests.Load())
	}
	dead.Store(true)
	key, _ := near.Key(2)
	fresh, err := OpenData(ctx, "remote", src, st.Store, nil)
	if err == nil {
		_, err = fresh.Episode(ctx, key)
	}
	if err == nil || errors.Is(err, episode.ErrCorrupt) {
		t.Errorf("a dead source: %v, want a read error that is not corrupt data", err)
	}
}

func actionValues(t *testing.T, ep episode.Episode) []float64 {
	t.Helper()
	v, err := ep.Feature("action")
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.Float64s(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

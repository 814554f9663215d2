package gcs

import (
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/retry"

	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"testing"
	"time"

	"google.golang.org/api/googleapi"
)

func readAll(t *testing.T, src storage.Backend, name string, off int64) []byte {
	t.Helper()
	rc, err := src.Open(context.Background(), name, off, -1)
	if err != nil {
		t.Fatalf("Open(%q, %d): %v", name, off, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q from %d: %v", name, off, err)
	}
	return b
}

func TestGCSSource(t *testing.T) {
	shard := testkit.RandomBytes(t, 3<<20+12345)
	info := []byte(`{"name": "bridge", "version": "0.1.0"}`)
	srv := testkit.StartFakeGCS(t, map[string][]byte{
		"bridge-train.tfrecord-00000-of-00001": shard,
		"dataset_info.json":                    info,
	})
	src := NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, testkit.GCSPrefix)
	ctx := context.Background()

	if got, want := src.Location(), "gs://"+testkit.GCSBucket+"/"+testkit.GCSPrefix; got != want {
		t.Errorf("Location() = %q, want %q", got, want)
	}
	for _, off := range []int64{0, 1, int64(len(shard)) / 2, int64(len(shard)) - 1, int64(len(shard))} {
		got := readAll(t, src, "bridge-train.tfrecord-00000-of-00001", off)
		if !bytes.Equal(got, shard[off:]) {
			t.Errorf("Open at %d: got %d bytes, want the %d bytes of the object from there", off, len(got), len(shard[off:]))
		}
	}
	if got := readAll(t, src, "dataset_info.json", 0); !bytes.Equal(got, info) {
		t.Errorf("dataset_info.json = %q, want %q", got, info)
	}
	if info, err := src.Stat(ctx, "bridge-train.tfrecord-00000-of-00001"); err != nil || info.Size != int64(len(shard)) {
		t.Errorf("Stat = %+v, %v; want size %d", info, err, len(shard))
	}

	if _, err := src.Open(ctx, "missing.json", 0, -1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing object: %v, want fs.ErrNotExist", err)
	}
	if _, err := src.Stat(ctx, "missing.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing object: %v, want fs.ErrNotExist", err)
	}
	other := NewWithClient(testkit.NewGCSClient(t, srv.URL()), "no-such-bucket", testkit.GCSPrefix)
	if _, err := other.Open(ctx, "dataset_info.json", 0, -1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open in a missing bucket: %v, want fs.ErrNotExist", err)
	}
}

// TestGCSOpenSourceEmulatorHost checks that gs:// locations honour
// STORAGE_EMULATOR_HOST, as the storage client documents.
func TestGCSOpenSourceEmulatorHost(t *testing.T) {
	shard := testkit.RandomBytes(t, 1<<20)
	info := []byte(`{"splits": []}`)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"dataset_info.json": info, "shard": shard})
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", u.Host) // host:port, no scheme: http is implied

	src, err := storage.Open(context.Background(), "gs://"+testkit.GCSBucket+"/"+testkit.GCSPrefix+"/", storage.Options{Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := src.Location(), "gs://"+testkit.GCSBucket+"/"+testkit.GCSPrefix; got != want {
		t.Errorf("Location() = %q, want %q", got, want)
	}
	got, err := storage.ReadFile(context.Background(), src, "dataset_info.json")
	if err != nil || !bytes.Equal(got, info) {
		t.Errorf("ReadFile = %q, %v; want %q", got, err, info)
	}
	if got := readAll(t, src, "shard", 1000); !bytes.Equal(got, shard[1000:]) {
		t.Errorf("Open at 1000: got %d bytes, want %d", len(got), len(shard)-1000)
	}
}

// TestGCSClientDoesNotRetry checks that every request the storage client
// makes is one attempt: a 503 fails Open, and a body that breaks mid-stream
// fails the read instead of being reopened behind storage/retry's back.
func TestGCSClientDoesNotRetry(t *testing.T) {
	data := testkit.RandomBytes(t, 1<<20)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"shard": data})

	t.Run("503", func(t *testing.T) {
		proxy := testkit.NewFaultProxy(t, srv.URL(), func(int) testkit.Fault { return testkit.Respond(http.StatusServiceUnavailable) })
		src := NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, testkit.GCSPrefix)
		// Bounded: a client that retried 503s would do so until the
		// context ends.
		ctx, cancel := context.WithTimeout(context.Background(), notHung)
		defer cancel()
		_, err := src.Open(ctx, "shard", 0, -1)
		if ae, ok := errors.AsType[*googleapi.Error](err); !ok || ae.Code != http.StatusServiceUnavailable {
			t.Fatalf("Open: %v, want a googleapi 503", err)
		}
		if n := len(proxy.Requests()); n != 1 {
			t.Errorf("the client made %d requests, want 1", n)
		}
	})
	t.Run("broken body", func(t *testing.T) {
		const cut = 300_000
		proxy := testkit.NewOffsetFaultProxy(t, srv.URL(), func(off int64, _ int) testkit.Fault {
			if off == 0 {
				return testkit.DropAfter(cut)
			}
			return testkit.Pass()
		})
		src := NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, testkit.GCSPrefix)
		ctx, cancel := context.WithTimeout(context.Background(), notHung)
		defer cancel()
		rc, err := src.Open(ctx, "shard", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if !errors.Is(err, io.ErrUnexpectedEOF) || !storage.IsTransient(err) {
			t.Errorf("read: %v, want a transient unexpected EOF", err)
		}
		if !bytes.Equal(got, data[:cut]) {
			t.Errorf("read %d bytes before the error, want the first %d", len(got), cut)
		}
		// The client's reopen is refused as it asks for a connection; on a
		// busy machine the request may still go out, to be abandoned at once.
		if reqs := proxy.Requests(); len(reqs) > 2 || len(reqs) == 2 && reqs[1].Range != testkit.RangeFrom(cut) {
			t.Errorf("the client made requests %v, want one (and at most the abandoned reopen at %d)", reqs, cut)
		}
	})
}

// TestRetryAfterHonoured: under storage/retry, a 429's Retry-After from
// GCS holds the next request back that long (the policy's own backoff is
// a millisecond), and a Retry-After longer than the fetch budget gives up
// at once, without asking again.
func TestRetryAfterHonoured(t *testing.T) {
	data := testkit.RandomBytes(t, 3000)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"shard": data})
	for _, tc := range []struct {
		name     string
		limited  int
		wait     time.Duration
		budget   time.Duration
		giveUp   bool
		requests int // object reads seen
	}{
		{"waits", 2, time.Second, 30 * time.Second, false, 3},
		{"gives up past the budget", 1, 60 * time.Second, 500 * time.Millisecond, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := testkit.NewRequestFaultProxy(t, srv.URL(), func(r testkit.SeenRequest, nth int) testkit.Fault {
				if r.ReadsObject("shard") && nth < tc.limited {
					return testkit.RespondAfter(http.StatusTooManyRequests, tc.wait)
				}
				return testkit.Pass()
			})
			src := NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, testkit.GCSPrefix)
			policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxElapsed: tc.budget, StallTimeout: 10 * time.Second}
			b := retry.New(src, policy, nil, nil)
			var got bytes.Buffer
			_, err := b.Fetch(context.Background(), "shard", &got)
			switch {
			case tc.giveUp && !errors.Is(err, storage.ErrUnavailable):
				t.Fatalf("fetch under a %v Retry-After with a %v budget: %v; want storage.ErrUnavailable", tc.wait, tc.budget, err)
			case !tc.giveUp && (err != nil || !bytes.Equal(got.Bytes(), data)):
				t.Fatalf("fetch: %d bytes, %v", got.Len(), err)
			}
			var reads []testkit.SeenRequest
			for _, r := range proxy.Requests() {
				if r.ReadsObject("shard") {
					reads = append(reads, r)
				}
			}
			if len(reads) != tc.requests {
				t.Fatalf("%d reads of the object, want %d", len(reads), tc.requests)
			}
			for i := 1; i < len(reads); i++ {
				if gap := reads[i].Time.Sub(reads[i-1].Time); gap < tc.wait {
					t.Errorf("read %d came %v after a 429 with Retry-After %v", i, gap, tc.wait)
				}
			}
		})
	}
}

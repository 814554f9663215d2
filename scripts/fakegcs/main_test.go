package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/ratelimit"
	"github.com/oxefs/oxefs/storage/s3"
)

func writeTree(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLatencyAndRate reads through the real client: every request waits
// at least the latency, and a read larger than a second's burst takes at
// least the time the rate allows for the rest.
func TestLatencyAndRate(t *testing.T) {
	data := testkit.RandomBytes(t, 3<<20)
	dir := writeTree(t, map[string][]byte{"ds/1.0.0/shard": data, "ds/1.0.0/info.json": []byte("{}")})
	ts := httptest.NewUnstartedServer(nil)
	srv, n, err := open(dir, "b", "", "http://"+ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if n != 2 {
		t.Fatalf("%d objects, want 2", n)
	}
	const latency = 80 * time.Millisecond
	const rate = 2 << 20
	ts.Config.Handler = slow(srv.HTTPHandler(), latency, ratelimit.NewLimiter(rate))
	ts.Start()
	defer ts.Close()
	obj := testkit.NewGCSClient(t, ts.URL).Bucket("b").Object("ds/1.0.0/shard")
	ctx := context.Background()

	start := time.Now()
	attrs, err := obj.Attrs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < latency {
		t.Errorf("attrs took %s, want at least the latency %s", d, latency)
	}
	if attrs.Size != int64(len(data)) {
		t.Errorf("size %d, want %d", attrs.Size, len(data))
	}

	start = time.Now()
	r, err := obj.NewReader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("object bytes differ from the file's")
	}
	// The limiter's bucket starts with a second of tokens (2 MiB): the last
	// MiB waits half a second.
	if want := latency + time.Second*time.Duration(len(data)-rate)/rate; time.Since(start) < want {
		t.Errorf("3 MiB at 2 MiB/s took %s, want at least %s", time.Since(start), want)
	}
}

// TestFlip: -flip 2 damages every second object read, by one byte, and
// leaves the metadata answers alone.
func TestFlip(t *testing.T) {
	data := testkit.RandomBytes(t, 1<<20)
	dir := writeTree(t, map[string][]byte{"ds/shard": data})
	ts := httptest.NewUnstartedServer(nil)
	srv, _, err := open(dir, "b", "", "http://"+ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ts.Config.Handler = flip(srv.HTTPHandler(), 2)
	ts.Start()
	defer ts.Close()
	obj := testkit.NewGCSClient(t, ts.URL).Bucket("b").Object("ds/shard")
	ctx := context.Background()
	damaged := 0
	for range 4 {
		if _, err := obj.Attrs(ctx); err != nil {
			t.Fatalf("metadata: %v", err)
		}
		// A ranged read: the client checks no CRC32C of it.
		r, err := obj.NewRangeReader(ctx, 1, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		diff := 0
		for i := range got {
			if got[i] != data[1+i] {
				diff++
			}
		}
		if len(got) != len(data)-1 || diff > 1 {
			t.Fatalf("read %d bytes, %d differ; want %d, at most one", len(got), diff, len(data)-1)
		}
		damaged += diff
	}
	if damaged != 2 {
		t.Errorf("%d of 4 reads damaged, want 2", damaged)
	}
}

// TestStoreReuse serves from -store twice: an unchanged file is reused as
// stored, and a changed one is copied again.
func TestStoreReuse(t *testing.T) {
	dir := writeTree(t, map[string][]byte{"a": []byte("first a"), "b": []byte("first b")})
	store := t.TempDir()
	generations := func() map[string]int64 {
		srv, _, err := open(dir, "bk", store, "http://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		out := map[string]int64{}
		for _, name := range []string{"a", "b"} {
			o, err := srv.GetObject("bk", name)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(o.Content, want) {
				t.Errorf("%s: stored %q, file holds %q", name, o.Content, want)
			}
			out[name] = o.Generation
		}
		return out
	}
	first := generations()
	// A new modification time and size: the object is stale.
	if err := os.WriteFile(filepath.Join(dir, "b"), []byte("second b!"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "b"), future, future); err != nil {
		t.Fatal(err)
	}
	second := generations()
	if second["a"] != first["a"] {
		t.Errorf("unchanged a was copied again: generation %d then %d", first["a"], second["a"])
	}
	if second["b"] == first["b"] {
		t.Errorf("changed b kept generation %d", first["b"])
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: 0}, {in: "10MB", want: 10_000_000}, {in: "1.5mb", want: 1_500_000},
		{in: "512KiB", want: 512 << 10}, {in: "2GiB", want: 2 << 30}, {in: "1048576", want: 1 << 20},
		{in: "70 MB", want: 70_000_000}, {in: "fast", bad: true}, {in: "-1MB", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseRate(tc.in)
			if tc.bad {
				if err == nil {
					t.Errorf("parseRate(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseRate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestS3 serves a tree with -s3 and reads it through the S3 backend: the
// bytes are the files', and every request waits at least the latency.
func TestS3(t *testing.T) {
	data := testkit.RandomBytes(t, 1<<20)
	dir := writeTree(t, map[string][]byte{"ds/1.0.0/shard": data, "ds/1.0.0/info.json": []byte("{}")})
	h, n, err := openS3(dir, "b")
	if err != nil || n != 2 {
		t.Fatalf("openS3: %d objects, %v; want 2", n, err)
	}
	const latency = 80 * time.Millisecond
	ts := httptest.NewServer(slow(h, latency, nil))
	defer ts.Close()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(ts.URL), Credentials: aws.AnonymousCredentials{}}
	b := s3.NewWithConfig(cfg, "b", "ds/1.0.0", storage.Options{Anonymous: true})
	start := time.Now()
	rc, err := b.Open(context.Background(), "shard", 100, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[100:1100]) {
		t.Fatalf("read %d bytes (%v), want the shard's 1000 from byte 100", len(got), err)
	}
	if d := time.Since(start); d < latency {
		t.Errorf("a ranged read took %v, under the %v latency", d, latency)
	}
}

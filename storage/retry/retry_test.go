package retry

import (
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"

	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/api/googleapi"
)

// notHung bounds how long a test waits for a call that must return: far
// beyond what a correct implementation needs, so it decides only "hung or
// not".
const notHung = 10 * time.Second

const testShard = "bridge-train.tfrecord-00000-of-00001"

// faultSetup serves a 3 MiB shard through a faultProxy and returns a GCS
// source that reads it with a real storage client.
func faultSetup(t *testing.T, plan func(off int64, nth int) testkit.Fault) (*gcs.Backend, *testkit.FaultProxy, []byte) {
	t.Helper()
	data := testkit.RandomBytes(t, 3<<20+777)
	srv := testkit.StartFakeGCS(t, map[string][]byte{testShard: data})
	proxy := testkit.NewOffsetFaultProxy(t, srv.URL(), plan)
	return gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, testkit.GCSPrefix), proxy, data
}

// fastRetries retries at once and never gives up in a test's lifetime.
var fastRetries = Policy{
	InitialBackoff: time.Millisecond,
	MaxBackoff:     10 * time.Millisecond,
	MaxElapsed:     time.Minute,
	StallTimeout:   time.Minute,
}

type fetchResult struct {
	data []byte
	n    int64
	err  error
}

// fetchWithin runs Fetch and fails the test if it has not returned within
// notHung.
func fetchWithin(t *testing.T, ctx context.Context, f *fetcher, src storage.Backend, name string) fetchResult {
	t.Helper()
	ch := make(chan fetchResult, 1)
	go func() {
		var buf bytes.Buffer
		n, err := f.Fetch(ctx, src, name, &buf)
		ch <- fetchResult{buf.Bytes(), n, err}
	}()
	select {
	case r := <-ch:
		return r
	case <-time.After(notHung):
		t.Fatalf("Fetch(%s) still running after %v", name, notHung)
		return fetchResult{}
	}
}

// checkRanges checks that the proxy saw exactly one request per offset
// given, in order.
func checkRanges(t *testing.T, got []testkit.SeenRequest, offsets ...int64) {
	t.Helper()
	if len(got) != len(offsets) {
		t.Fatalf("proxy saw %d requests %v, want %d", len(got), got, len(offsets))
	}
	for i, off := range offsets {
		if got[i].Range != testkit.RangeFrom(off) {
			t.Errorf("request %d: Range %q, want %q (resume at byte %d)", i, got[i].Range, testkit.RangeFrom(off), off)
		}
	}
}

func checkData(t *testing.T, r fetchResult, want []byte) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Fetch: %v", r.err)
	}
	if r.n != int64(len(want)) || !bytes.Equal(r.data, want) {
		t.Fatalf("Fetch returned n=%d and %d bytes, want the %d bytes of the object", r.n, len(r.data), len(want))
	}
}

func TestFetchRetriesServerErrors(t *testing.T) {
	codes := []int{503, 500, 429, 408}
	src, proxy, data := faultSetup(t, func(_ int64, nth int) testkit.Fault {
		if nth < len(codes) {
			return testkit.Respond(codes[nth])
		}
		return testkit.Pass()
	})
	logs := testkit.NewLogRecorder()
	stats := new(Stats)
	f := &fetcher{Policy: fastRetries, Stats: stats, Log: slog.New(logs)}
	checkData(t, fetchWithin(t, context.Background(), f, src, testShard), data)

	if got := stats.Retries.Load(); got != int64(len(codes)) {
		t.Errorf("Retries = %d, want %d", got, len(codes))
	}
	if got := stats.Attempts.Load(); got != int64(len(codes)+1) {
		t.Errorf("Attempts = %d, want %d", got, len(codes)+1)
	}
	if got := stats.Bytes.Load(); got != int64(len(data)) {
		t.Errorf("Bytes = %d, want %d", got, len(data))
	}
	if got := stats.Failures.Load(); got != 0 {
		t.Errorf("Failures = %d, want 0", got)
	}
	// One request per attempt: the storage client retried nothing itself.
	checkRanges(t, proxy.Requests(), 0, 0, 0, 0, 0)

	recs := logs.All()
	if len(recs) != len(codes) {
		t.Fatalf("%d log records, want one per retry (%d): %v", len(recs), len(codes), recs)
	}
	for i, rec := range recs {
		// Each is the source's first retry at its step: a warn line.
		if rec["level"] != "WARN" || rec["file"] != testShard || rec["attempt"] != strconv.Itoa(i+1) || rec["error"] == "" ||
			rec["source"] != src.Location() || rec["gives_up_in"] == "" {
			t.Errorf("log record %d = %v, want a WARN record naming source %s, file %s, attempt %d, the error and the time left", i, rec, src.Location(), testShard, i+1)
		}
	}
}

// TestRetryWarnsOncePerStep: reads of one source that fail together, each
// through its own Backend over shared Stats, log one warn line per backoff
// step between them, the others' retries at debug level; once the source
// answers, its next failure warns again.
func TestRetryWarnsOncePerStep(t *testing.T) {
	const failures = 6
	var failed atomic.Int64
	src, _, data := faultSetup(t, func(_ int64, _ int) testkit.Fault {
		if failed.Add(1) <= failures {
			return testkit.Respond(503)
		}
		return testkit.Pass()
	})
	logs := testkit.NewLogRecorder()
	f := &fetcher{Policy: fastRetries, Stats: new(Stats), Log: slog.New(logs)}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { checkData(t, fetchWithin(t, context.Background(), f, src, testShard), data) })
	}
	wg.Wait()
	warned := map[string]bool{}
	debug := 0
	for _, rec := range logs.All() {
		switch rec["level"] {
		case "WARN":
			if warned[rec["attempt"]] {
				t.Errorf("attempt %s warned twice: %v", rec["attempt"], logs.All())
			}
			warned[rec["attempt"]] = true
		case "DEBUG":
			debug++
		}
	}
	if len(warned)+debug != failures || len(warned) == 0 {
		t.Errorf("%d warn and %d debug records for %d failed attempts, want one warn per step and debug for the rest", len(warned), debug, failures)
	}
	// The source answered: a new failure warns from its first step.
	failed.Store(failures - 1)
	before := len(logs.All())
	checkData(t, fetchWithin(t, context.Background(), f, src, testShard), data)
	if recs := logs.All()[before:]; len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["attempt"] != "1" {
		t.Errorf("after the source answered, a failure logged %v, want one WARN record at attempt 1", recs)
	}
}

func TestFetchResumesAfterDroppedConnection(t *testing.T) {
	const first, second = 500_000, 1_000_000
	src, proxy, data := faultSetup(t, func(off int64, _ int) testkit.Fault {
		switch off {
		case 0:
			return testkit.DropAfter(first)
		case first:
			return testkit.DropAfter(second)
		}
		return testkit.Pass()
	})
	stats := new(Stats)
	f := &fetcher{Policy: fastRetries, Stats: stats}
	checkData(t, fetchWithin(t, context.Background(), f, src, testShard), data)

	// After a broken body the storage client may send its own reopen,
	// which GCS.Open makes it abandon before any byte is read; on a busy
	// machine the proxy can see it, as a repeat of the request that follows.
	reqs := slices.Compact(proxy.Requests())
	checkRanges(t, reqs, 0, first, first+second)
	if got := stats.Retries.Load(); got != 2 {
		t.Errorf("Retries = %d, want 2", got)
	}
	if got := stats.Bytes.Load(); got != int64(len(data)) {
		t.Errorf("Bytes = %d, want %d: every byte written once", got, len(data))
	}
}

func TestFetchResumesAfterStall(t *testing.T) {
	const before = 700_000
	src, proxy, data := faultSetup(t, func(off int64, nth int) testkit.Fault {
		if off == 0 && nth == 0 {
			return testkit.HangAfter(before)
		}
		return testkit.Pass()
	})
	stats := new(Stats)
	policy := fastRetries
	policy.StallTimeout = 200 * time.Millisecond
	f := &fetcher{Policy: policy, Stats: stats}
	checkData(t, fetchWithin(t, context.Background(), f, src, testShard), data)

	// A loaded machine may stall an attempt once more on its own; the
	// resume after the planned stall is what matters.
	reqs := proxy.Requests()
	if len(reqs) < 2 || reqs[1].Range != testkit.RangeFrom(before) {
		t.Errorf("requests %v: the second should resume at byte %d", reqs, before)
	}
	if got := stats.Retries.Load(); got < 1 {
		t.Errorf("Retries = %d, want at least 1", got)
	}
}

func TestFetchGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  testkit.Fault
		policy Policy
		cause  func(error) bool
	}{
		{
			name:   "always 503",
			fault:  testkit.Respond(http.StatusServiceUnavailable),
			policy: Policy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Minute},
			cause: func(err error) bool {
				ae, ok := errors.AsType[*googleapi.Error](err)
				return ok && ae.Code == http.StatusServiceUnavailable
			},
		},
		{
			name:   "always hangs",
			fault:  testkit.HangAtOnce(),
			policy: Policy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: 100 * time.Millisecond},
			cause:  func(err error) bool { return errors.Is(err, errStalled) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, proxy, _ := faultSetup(t, testkit.Always(tc.fault))
			stats := new(Stats)
			f := &fetcher{Policy: tc.policy, Stats: stats}
			r := fetchWithin(t, context.Background(), f, src, testShard)

			ue, ok := errors.AsType[*storage.UnavailableError](r.err)
			if !ok || !errors.Is(r.err, storage.ErrUnavailable) {
				t.Fatalf("Fetch: %v, want an *storage.UnavailableError", r.err)
			}
			if ue.URI != src.Location() || ue.Name != testShard {
				t.Errorf("error names %s/%s, want %s/%s", ue.URI, ue.Name, src.Location(), testShard)
			}
			if ue.Attempts < 2 || int64(ue.Attempts) != stats.Attempts.Load() {
				t.Errorf("error says %d attempts, stats %d; want the same number, more than 1", ue.Attempts, stats.Attempts.Load())
			}
			if !tc.cause(r.err) {
				t.Errorf("Fetch: %v does not wrap the last error expected", r.err)
			}
			if got := len(proxy.Requests()); got != ue.Attempts {
				t.Errorf("proxy saw %d requests for %d attempts", got, ue.Attempts)
			}
			if got := stats.Failures.Load(); got != 1 {
				t.Errorf("Failures = %d, want 1", got)
			}
		})
	}
}

func TestFetchPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		fault testkit.Fault
		want  func(error) bool
	}{
		{"missing object", "missing.json", testkit.Pass(), func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"403", testShard, testkit.Respond(http.StatusForbidden), isCode(http.StatusForbidden)},
		{"400", testShard, testkit.Respond(http.StatusBadRequest), isCode(http.StatusBadRequest)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, proxy, _ := faultSetup(t, testkit.Always(tc.fault))
			stats := new(Stats)
			// A retry would wait an hour, and fail the test by not
			// returning.
			f := &fetcher{Policy: Policy{InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxElapsed: 10 * time.Hour}, Stats: stats}
			r := fetchWithin(t, context.Background(), f, src, tc.file)
			if !tc.want(r.err) || errors.Is(r.err, storage.ErrUnavailable) {
				t.Errorf("Fetch: %v, want the permanent error itself", r.err)
			}
			if got := stats.Attempts.Load(); got != 1 {
				t.Errorf("Attempts = %d, want 1", got)
			}
			if got := len(proxy.Requests()); got != 1 {
				t.Errorf("proxy saw %d requests, want 1", got)
			}
		})
	}
}

func isCode(code int) func(error) bool {
	return func(err error) bool {
		ae, ok := errors.AsType[*googleapi.Error](err)
		return ok && ae.Code == code
	}
}

func TestFetchCancel(t *testing.T) {
	t.Run("during backoff", func(t *testing.T) {
		src, _, _ := faultSetup(t, testkit.Always(testkit.Respond(http.StatusServiceUnavailable)))
		logs := testkit.NewLogRecorder()
		f := &fetcher{Policy: Policy{InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxElapsed: 10 * time.Hour}, Log: slog.New(logs)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-logs.Signal // the retry is logged just before the wait
			cancel()
		}()
		r := fetchWithin(t, ctx, f, src, testShard)
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("Fetch: %v, want context.Canceled", r.err)
		}
	})
	t.Run("during a stalled read", func(t *testing.T) {
		src, proxy, _ := faultSetup(t, testkit.Always(testkit.HangAfter(100_000)))
		stats := new(Stats)
		f := &fetcher{Policy: Policy{StallTimeout: time.Hour}, Stats: stats}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-proxy.Hung
			cancel()
		}()
		r := fetchWithin(t, ctx, f, src, testShard)
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("Fetch: %v, want context.Canceled", r.err)
		}
		if r.n > 100_000 {
			t.Errorf("Fetch wrote %d bytes, but only 100000 were sent", r.n)
		}
		if got := stats.Attempts.Load(); got != 1 {
			t.Errorf("Attempts = %d, want 1", got)
		}
	})
	t.Run("before the start", func(t *testing.T) {
		src, proxy, _ := faultSetup(t, testkit.Always(testkit.Pass()))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := fetchWithin(t, ctx, &fetcher{}, src, testShard)
		if !errors.Is(r.err, context.Canceled) || r.n != 0 {
			t.Errorf("Fetch = %d, %v; want 0, context.Canceled", r.n, r.err)
		}
		if got := len(proxy.Requests()); got != 0 {
			t.Errorf("proxy saw %d requests, want 0", got)
		}
	})
}

// countingSource counts the readers a backend opens and closes.
type countingSource struct {
	storage.Backend

	mu             sync.Mutex
	opened, closed int // guarded by mu
}

type countedReader struct {
	io.ReadCloser
	s *countingSource
}

func (s *countingSource) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	rc, err := s.Backend.Open(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.opened++
	s.mu.Unlock()
	return countedReader{rc, s}, nil
}

func (r countedReader) Close() error {
	r.s.mu.Lock()
	r.s.closed++
	r.s.mu.Unlock()
	return r.ReadCloser.Close()
}

func TestFetchClosesEveryReader(t *testing.T) {
	gcs, _, data := faultSetup(t, func(off int64, nth int) testkit.Fault {
		switch {
		case off == 0:
			return testkit.DropAfter(1000)
		case off == 1000:
			return testkit.HangAfter(2000)
		case off == 3000 && nth == 0:
			return testkit.Respond(http.StatusBadGateway)
		}
		return testkit.Pass()
	})
	src := &countingSource{Backend: gcs}
	policy := fastRetries
	policy.StallTimeout = 200 * time.Millisecond
	checkData(t, fetchWithin(t, context.Background(), &fetcher{Policy: policy}, src, testShard), data)
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.opened < 3 || src.opened != src.closed {
		t.Errorf("opened %d readers, closed %d; want every one closed", src.opened, src.closed)
	}
}

// failingWriter accepts limit bytes, then fails.
type failingWriter struct {
	limit int
	n     int
}

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		k := w.limit - w.n
		w.n = w.limit
		return k, errDiskFull
	}
	w.n += len(p)
	return len(p), nil
}

func TestFetchLocal(t *testing.T) {
	dir := t.TempDir()
	data := testkit.RandomBytes(t, 2<<20+333) // more than one copy buffer
	if err := os.WriteFile(filepath.Join(dir, testShard), data, 0o644); err != nil {
		t.Fatal(err)
	}
	info := []byte(`{"name": "bridge"}`)
	if err := os.WriteFile(filepath.Join(dir, "dataset_info.json"), info, 0o644); err != nil {
		t.Fatal(err)
	}
	src := local.New(dir)
	ctx := context.Background()

	t.Run("whole file", func(t *testing.T) {
		stats := new(Stats)
		f := &fetcher{Stats: stats}
		checkData(t, fetchWithin(t, ctx, f, src, testShard), data)
		if stats.Attempts.Load() != 1 || stats.Bytes.Load() != int64(len(data)) {
			t.Errorf("Attempts = %d, Bytes = %d; want 1, %d", stats.Attempts.Load(), stats.Bytes.Load(), len(data))
		}
	})
	t.Run("ReadFile", func(t *testing.T) {
		got, err := (&fetcher{}).ReadFile(ctx, src, "dataset_info.json")
		if err != nil || !bytes.Equal(got, info) {
			t.Errorf("ReadFile = %q, %v; want %q", got, err, info)
		}
	})
	t.Run("missing", func(t *testing.T) {
		stats := new(Stats)
		f := &fetcher{Policy: Policy{InitialBackoff: time.Hour}, Stats: stats}
		_, err := f.ReadFile(ctx, src, "features.json")
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, storage.ErrUnavailable) {
			t.Errorf("ReadFile: %v, want fs.ErrNotExist", err)
		}
		if stats.Attempts.Load() != 1 || stats.Failures.Load() != 1 {
			t.Errorf("Attempts = %d, Failures = %d; want 1, 1", stats.Attempts.Load(), stats.Failures.Load())
		}
	})
	t.Run("writer fails", func(t *testing.T) {
		stats := new(Stats)
		f := &fetcher{Policy: Policy{InitialBackoff: time.Hour}, Stats: stats}
		w := &failingWriter{limit: 1<<20 + 5}
		n, err := f.Fetch(ctx, src, testShard, w)
		if !errors.Is(err, errDiskFull) || n != int64(w.limit) {
			t.Errorf("Fetch = %d, %v; want %d, %v", n, err, w.limit, errDiskFull)
		}
		if stats.Attempts.Load() != 1 {
			t.Errorf("Attempts = %d, want 1: a failing destination is not retried", stats.Attempts.Load())
		}
	})
}

func TestFetchRetryPolicyDefaults(t *testing.T) {
	if got, want := (Policy{}).WithDefaults(), DefaultPolicy(); got != want {
		t.Errorf("zero policy = %+v, want the default %+v", got, want)
	}
	p := Policy{InitialBackoff: time.Second, MaxBackoff: time.Millisecond, StallTimeout: time.Second}.WithDefaults()
	if p.MaxBackoff != time.Second || p.StallTimeout != time.Second || p.MaxElapsed != DefaultPolicy().MaxElapsed {
		t.Errorf("withDefaults = %+v: MaxBackoff raised to InitialBackoff, StallTimeout kept, MaxElapsed defaulted", p)
	}
}

func BenchmarkFetchGCS(b *testing.B) {
	const size = 64 << 20
	srv := testkit.StartFakeGCS(b, map[string][]byte{testShard: testkit.RandomBytes(b, size)})
	src := gcs.NewWithClient(testkit.NewGCSClient(b, srv.URL()), testkit.GCSBucket, testkit.GCSPrefix)
	f := &fetcher{Stats: new(Stats)}
	ctx := context.Background()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		n, err := f.Fetch(ctx, src, testShard, io.Discard)
		if err != nil || n != size {
			b.Fatalf("Fetch = %d, %v", n, err)
		}
	}
}

// fetcher makes a Backend over each source it is given, as the tests need
// several sources with one policy.
type fetcher struct {
	Policy Policy
	Stats  *Stats
	Log    *slog.Logger
}

func (f *fetcher) Fetch(ctx context.Context, src storage.Backend, name string, w io.Writer) (int64, error) {
	return New(src, f.Policy, f.Stats, f.Log).Fetch(ctx, name, w)
}

func (f *fetcher) ReadFile(ctx context.Context, src storage.Backend, name string) ([]byte, error) {
	return storage.ReadFile(ctx, New(src, f.Policy, f.Stats, f.Log), name)
}

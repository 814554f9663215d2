package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/googleapi"
)

// notHung bounds how long a test waits for a call that must return: far
// beyond what a correct implementation needs, so it decides only "hung or
// not".
const notHung = 10 * time.Second

// faultKind is what a faultProxy does with one request.
type faultKind int

const (
	faultPass    faultKind = iota // forward the request and its response
	faultRespond                  // answer with an error status
	faultDrop                     // forward, then cut the connection after some body bytes
	faultHang                     // forward, then send nothing more after some body bytes
)

type fault struct {
	kind  faultKind
	code  int   // faultRespond: the status
	after int64 // faultDrop, faultHang: body bytes sent first
}

func pass() fault             { return fault{kind: faultPass} }
func respond(code int) fault  { return fault{kind: faultRespond, code: code} }
func dropAfter(n int64) fault { return fault{kind: faultDrop, after: n} }
func hangAfter(n int64) fault { return fault{kind: faultHang, after: n} }
func hangAtOnce() fault       { return fault{kind: faultHang, after: -1} }

func always(f fault) func(off int64, nth int) fault { return func(int64, int) fault { return f } }

// seenRequest is a request as the proxy received it.
type seenRequest struct {
	Method, Path, Range string
}

// faultProxy is an HTTP reverse proxy in front of the fake GCS server that
// breaks requests as its plan says.
type faultProxy struct {
	// dependencies
	srv      *httptest.Server
	upstream string
	client   *http.Client

	// constants
	plan func(i int, off int64, nth int) fault
	done chan struct{} // closed when the test ends; releases hanging handlers
	hung chan struct{} // gets a value (if there is room) when a handler starts hanging

	mu   sync.Mutex
	seen []seenRequest // guarded by mu
}

// newFaultProxy starts a proxy whose plan decides the i-th request (from 0).
func newFaultProxy(t testing.TB, upstream string, plan func(i int) fault) *faultProxy {
	t.Helper()
	return startFaultProxy(t, upstream, func(i int, _ int64, _ int) fault { return plan(i) })
}

// newOffsetFaultProxy starts a proxy whose plan decides a request by the
// byte it starts at and by how many requests started there before (nth).
// Such plans stay true when the storage client sends a request and abandons
// it before the response (see GCS.Open), which index plans do not.
func newOffsetFaultProxy(t testing.TB, upstream string, plan func(off int64, nth int) fault) *faultProxy {
	t.Helper()
	return startFaultProxy(t, upstream, func(_ int, off int64, nth int) fault { return plan(off, nth) })
}

func startFaultProxy(t testing.TB, upstream string, plan func(i int, off int64, nth int) fault) *faultProxy {
	p := &faultProxy{
		upstream: upstream,
		client:   &http.Client{Transport: &http.Transport{}},
		plan:     plan,
		done:     make(chan struct{}),
		hung:     make(chan struct{}, 64),
	}
	p.srv = httptest.NewServer(p)
	// Cleanups run last-registered first: release hanging handlers, then
	// wait for every handler to return.
	t.Cleanup(func() {
		p.srv.Close()
		p.client.CloseIdleConnections()
	})
	t.Cleanup(func() { close(p.done) })
	return p
}

func (p *faultProxy) URL() string { return p.srv.URL }

// requests returns the requests received so far.
func (p *faultProxy) requests() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenRequest(nil), p.seen...)
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seen := seenRequest{Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range")}
	off, err := rangeStart(seen.Range)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	nth := 0
	for _, s := range p.seen {
		if s.Path == seen.Path && s.Range == seen.Range {
			nth++
		}
	}
	p.seen = append(p.seen, seen)
	f := p.plan(len(p.seen)-1, off, nth)
	p.mu.Unlock()

	switch {
	case f.kind == faultRespond:
		http.Error(w, http.StatusText(f.code), f.code)
		return
	case f.kind == faultHang && f.after < 0:
		p.hang(r)
		return
	}

	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	res, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	if f.kind == faultPass {
		io.Copy(w, res.Body)
		return
	}
	io.CopyN(w, res.Body, f.after)
	rc := http.NewResponseController(w)
	rc.Flush()
	if f.kind == faultHang {
		p.hang(r)
		return
	}
	// faultDrop: the response promised Content-Length bytes; closing the
	// connection now makes the client see an unexpected EOF.
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes the connection too
	}
	conn.Close()
}

// rangeStart returns the first byte a "bytes=N-[M]" Range asks for: 0
// without a Range, -1 for a suffix range.
func rangeStart(h string) (int64, error) {
	if h == "" {
		return 0, nil
	}
	spec, ok := strings.CutPrefix(h, "bytes=")
	start, _, ok2 := strings.Cut(spec, "-")
	if !ok || !ok2 {
		return 0, fmt.Errorf("unexpected Range %q", h)
	}
	if start == "" {
		return -1, nil
	}
	return strconv.ParseInt(start, 10, 64)
}

// hang blocks until the client gives up or the test ends.
func (p *faultProxy) hang(r *http.Request) {
	select {
	case p.hung <- struct{}{}:
	default:
	}
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
}

// logRecorder is a slog.Handler that keeps debug records and signals each.
type logRecorder struct {
	signal chan struct{} // gets a value, if there is room, per record

	mu      sync.Mutex
	records []map[string]string // guarded by mu
}

func newLogRecorder() *logRecorder { return &logRecorder{signal: make(chan struct{}, 1)} }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"msg": r.Message, "level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
	select {
	case h.signal <- struct{}{}:
	default:
	}
	return nil
}

func (h *logRecorder) all() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]string(nil), h.records...)
}

const testShard = "bridge-train.tfrecord-00000-of-00001"

// faultSetup serves a 3 MiB shard through a faultProxy and returns a GCS
// source that reads it with a real storage client.
func faultSetup(t *testing.T, plan func(off int64, nth int) fault) (*GCS, *faultProxy, []byte) {
	t.Helper()
	data := randomBytes(t, 3<<20+777)
	srv := startFakeGCS(t, map[string][]byte{testShard: data})
	proxy := newOffsetFaultProxy(t, srv.URL(), plan)
	return NewGCSWithClient(newTestClient(t, proxy.URL()), testBucket, testPrefix), proxy, data
}

// fastRetries retries at once and never gives up in a test's lifetime.
var fastRetries = RetryPolicy{
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
func fetchWithin(t *testing.T, ctx context.Context, f *Fetcher, src Source, name string) fetchResult {
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

func rangeFrom(off int64) string {
	if off == 0 {
		return ""
	}
	return "bytes=" + strconv.FormatInt(off, 10) + "-"
}

// checkRanges checks that the proxy saw exactly one request per offset
// given, in order.
func checkRanges(t *testing.T, got []seenRequest, offsets ...int64) {
	t.Helper()
	if len(got) != len(offsets) {
		t.Fatalf("proxy saw %d requests %v, want %d", len(got), got, len(offsets))
	}
	for i, off := range offsets {
		if got[i].Range != rangeFrom(off) {
			t.Errorf("request %d: Range %q, want %q (resume at byte %d)", i, got[i].Range, rangeFrom(off), off)
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
	src, proxy, data := faultSetup(t, func(_ int64, nth int) fault {
		if nth < len(codes) {
			return respond(codes[nth])
		}
		return pass()
	})
	logs := newLogRecorder()
	stats := new(FetchStats)
	f := &Fetcher{Policy: fastRetries, Stats: stats, Log: slog.New(logs)}
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
	checkRanges(t, proxy.requests(), 0, 0, 0, 0, 0)

	recs := logs.all()
	if len(recs) != len(codes) {
		t.Fatalf("%d log records, want one per retry (%d): %v", len(recs), len(codes), recs)
	}
	for i, rec := range recs {
		if rec["level"] != "DEBUG" || rec["file"] != testShard || rec["attempt"] != strconv.Itoa(i+1) || rec["error"] == "" {
			t.Errorf("log record %d = %v, want a DEBUG record naming file %s, attempt %d and the error", i, rec, testShard, i+1)
		}
	}
}

func TestFetchResumesAfterDroppedConnection(t *testing.T) {
	const first, second = 500_000, 1_000_000
	src, proxy, data := faultSetup(t, func(off int64, _ int) fault {
		switch off {
		case 0:
			return dropAfter(first)
		case first:
			return dropAfter(second)
		}
		return pass()
	})
	stats := new(FetchStats)
	f := &Fetcher{Policy: fastRetries, Stats: stats}
	checkData(t, fetchWithin(t, context.Background(), f, src, testShard), data)

	// After a broken body the storage client may send its own reopen,
	// which GCS.Open makes it abandon before any byte is read; on a busy
	// machine the proxy can see it, as a repeat of the request that follows.
	reqs := slices.Compact(proxy.requests())
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
	src, proxy, data := faultSetup(t, func(off int64, nth int) fault {
		if off == 0 && nth == 0 {
			return hangAfter(before)
		}
		return pass()
	})
	stats := new(FetchStats)
	policy := fastRetries
	policy.StallTimeout = 200 * time.Millisecond
	f := &Fetcher{Policy: policy, Stats: stats}
	checkData(t, fetchWithin(t, context.Background(), f, src, testShard), data)

	// A loaded machine may stall an attempt once more on its own; the
	// resume after the planned stall is what matters.
	reqs := proxy.requests()
	if len(reqs) < 2 || reqs[1].Range != rangeFrom(before) {
		t.Errorf("requests %v: the second should resume at byte %d", reqs, before)
	}
	if got := stats.Retries.Load(); got < 1 {
		t.Errorf("Retries = %d, want at least 1", got)
	}
}

func TestFetchGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  fault
		policy RetryPolicy
		cause  func(error) bool
	}{
		{
			name:   "always 503",
			fault:  respond(http.StatusServiceUnavailable),
			policy: RetryPolicy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Minute},
			cause: func(err error) bool {
				ae, ok := errors.AsType[*googleapi.Error](err)
				return ok && ae.Code == http.StatusServiceUnavailable
			},
		},
		{
			name:   "always hangs",
			fault:  hangAtOnce(),
			policy: RetryPolicy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: 100 * time.Millisecond},
			cause:  func(err error) bool { return errors.Is(err, errStalled) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, proxy, _ := faultSetup(t, always(tc.fault))
			stats := new(FetchStats)
			f := &Fetcher{Policy: tc.policy, Stats: stats}
			r := fetchWithin(t, context.Background(), f, src, testShard)

			ue, ok := errors.AsType[*UnavailableError](r.err)
			if !ok || !errors.Is(r.err, ErrUnavailable) {
				t.Fatalf("Fetch: %v, want an *UnavailableError", r.err)
			}
			if ue.URI != src.URI() || ue.Name != testShard {
				t.Errorf("error names %s/%s, want %s/%s", ue.URI, ue.Name, src.URI(), testShard)
			}
			if ue.Attempts < 2 || int64(ue.Attempts) != stats.Attempts.Load() {
				t.Errorf("error says %d attempts, stats %d; want the same number, more than 1", ue.Attempts, stats.Attempts.Load())
			}
			if !tc.cause(r.err) {
				t.Errorf("Fetch: %v does not wrap the last error expected", r.err)
			}
			if got := len(proxy.requests()); got != ue.Attempts {
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
		fault fault
		want  func(error) bool
	}{
		{"missing object", "missing.json", pass(), func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"403", testShard, respond(http.StatusForbidden), isCode(http.StatusForbidden)},
		{"400", testShard, respond(http.StatusBadRequest), isCode(http.StatusBadRequest)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, proxy, _ := faultSetup(t, always(tc.fault))
			stats := new(FetchStats)
			// A retry would wait an hour, and fail the test by not
			// returning.
			f := &Fetcher{Policy: RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxElapsed: 10 * time.Hour}, Stats: stats}
			r := fetchWithin(t, context.Background(), f, src, tc.file)
			if !tc.want(r.err) || errors.Is(r.err, ErrUnavailable) {
				t.Errorf("Fetch: %v, want the permanent error itself", r.err)
			}
			if got := stats.Attempts.Load(); got != 1 {
				t.Errorf("Attempts = %d, want 1", got)
			}
			if got := len(proxy.requests()); got != 1 {
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
		src, _, _ := faultSetup(t, always(respond(http.StatusServiceUnavailable)))
		logs := newLogRecorder()
		f := &Fetcher{Policy: RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxElapsed: 10 * time.Hour}, Log: slog.New(logs)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-logs.signal // the retry is logged just before the wait
			cancel()
		}()
		r := fetchWithin(t, ctx, f, src, testShard)
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("Fetch: %v, want context.Canceled", r.err)
		}
	})
	t.Run("during a stalled read", func(t *testing.T) {
		src, proxy, _ := faultSetup(t, always(hangAfter(100_000)))
		stats := new(FetchStats)
		f := &Fetcher{Policy: RetryPolicy{StallTimeout: time.Hour}, Stats: stats}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-proxy.hung
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
		src, proxy, _ := faultSetup(t, always(pass()))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := fetchWithin(t, ctx, &Fetcher{}, src, testShard)
		if !errors.Is(r.err, context.Canceled) || r.n != 0 {
			t.Errorf("Fetch = %d, %v; want 0, context.Canceled", r.n, r.err)
		}
		if got := len(proxy.requests()); got != 0 {
			t.Errorf("proxy saw %d requests, want 0", got)
		}
	})
}

// countingSource counts the readers a Source opens and closes.
type countingSource struct {
	Source

	mu             sync.Mutex
	opened, closed int // guarded by mu
}

type countedReader struct {
	io.ReadCloser
	s *countingSource
}

func (s *countingSource) Open(ctx context.Context, name string, off int64) (io.ReadCloser, error) {
	rc, err := s.Source.Open(ctx, name, off)
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
	gcs, _, data := faultSetup(t, func(off int64, nth int) fault {
		switch {
		case off == 0:
			return dropAfter(1000)
		case off == 1000:
			return hangAfter(2000)
		case off == 3000 && nth == 0:
			return respond(http.StatusBadGateway)
		}
		return pass()
	})
	src := &countingSource{Source: gcs}
	policy := fastRetries
	policy.StallTimeout = 200 * time.Millisecond
	checkData(t, fetchWithin(t, context.Background(), &Fetcher{Policy: policy}, src, testShard), data)
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
	data := randomBytes(t, 2<<20+333) // more than one copy buffer
	if err := os.WriteFile(filepath.Join(dir, testShard), data, 0o644); err != nil {
		t.Fatal(err)
	}
	info := []byte(`{"name": "bridge"}`)
	if err := os.WriteFile(filepath.Join(dir, "dataset_info.json"), info, 0o644); err != nil {
		t.Fatal(err)
	}
	src := Local{Dir: dir}
	ctx := context.Background()

	t.Run("whole file", func(t *testing.T) {
		stats := new(FetchStats)
		f := &Fetcher{Stats: stats}
		checkData(t, fetchWithin(t, ctx, f, src, testShard), data)
		if stats.Attempts.Load() != 1 || stats.Bytes.Load() != int64(len(data)) {
			t.Errorf("Attempts = %d, Bytes = %d; want 1, %d", stats.Attempts.Load(), stats.Bytes.Load(), len(data))
		}
	})
	t.Run("ReadFile", func(t *testing.T) {
		got, err := (&Fetcher{}).ReadFile(ctx, src, "dataset_info.json")
		if err != nil || !bytes.Equal(got, info) {
			t.Errorf("ReadFile = %q, %v; want %q", got, err, info)
		}
	})
	t.Run("missing", func(t *testing.T) {
		stats := new(FetchStats)
		f := &Fetcher{Policy: RetryPolicy{InitialBackoff: time.Hour}, Stats: stats}
		_, err := f.ReadFile(ctx, src, "features.json")
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUnavailable) {
			t.Errorf("ReadFile: %v, want fs.ErrNotExist", err)
		}
		if stats.Attempts.Load() != 1 || stats.Failures.Load() != 1 {
			t.Errorf("Attempts = %d, Failures = %d; want 1, 1", stats.Attempts.Load(), stats.Failures.Load())
		}
	})
	t.Run("writer fails", func(t *testing.T) {
		stats := new(FetchStats)
		f := &Fetcher{Policy: RetryPolicy{InitialBackoff: time.Hour}, Stats: stats}
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

func TestFetchIsTransient(t *testing.T) {
	opErr := func(errno syscall.Errno) error {
		return &url.Error{Op: "Get", URL: "http://x/b/o", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"503", &googleapi.Error{Code: 503}, true},
		{"500", &googleapi.Error{Code: 500}, true},
		{"429", &googleapi.Error{Code: 429}, true},
		{"408", &googleapi.Error{Code: 408}, true},
		{"wrapped 502", fmt.Errorf("shard x: %w", &googleapi.Error{Code: 502}), true},
		{"403", &googleapi.Error{Code: 403}, false},
		{"400", &googleapi.Error{Code: 400}, false},
		{"404", &googleapi.Error{Code: 404}, false},
		{"not exist", fmt.Errorf("%w: storage: object doesn't exist", fs.ErrNotExist), false},
		{"local not exist", &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, false},
		{"permission", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"reset", opErr(syscall.ECONNRESET), true},
		{"refused", opErr(syscall.ECONNREFUSED), true},
		{"timeout", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, true},
		{"deadline", context.DeadlineExceeded, true},
		{"canceled", context.Canceled, false},
		{"stalled", fmt.Errorf("%w: no byte for 30s", errStalled), true},
		{"other", errors.New("storage: partial request not satisfied"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsTransient(tc.err); got != tc.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestFetchRetryPolicyDefaults(t *testing.T) {
	if got, want := (RetryPolicy{}).withDefaults(), DefaultRetryPolicy(); got != want {
		t.Errorf("zero policy = %+v, want the default %+v", got, want)
	}
	p := RetryPolicy{InitialBackoff: time.Second, MaxBackoff: time.Millisecond, StallTimeout: time.Second}.withDefaults()
	if p.MaxBackoff != time.Second || p.StallTimeout != time.Second || p.MaxElapsed != DefaultRetryPolicy().MaxElapsed {
		t.Errorf("withDefaults = %+v: MaxBackoff raised to InitialBackoff, StallTimeout kept, MaxElapsed defaulted", p)
	}
}

func BenchmarkFetchGCS(b *testing.B) {
	const size = 64 << 20
	srv := startFakeGCS(b, map[string][]byte{testShard: randomBytes(b, size)})
	src := NewGCSWithClient(newTestClient(b, srv.URL()), testBucket, testPrefix)
	f := &Fetcher{Stats: new(FetchStats)}
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

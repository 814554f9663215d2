package testkit

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FaultKind is what a FaultProxy does with one request.
type FaultKind int

const (
	FaultPass    FaultKind = iota // forward the request and its response
	FaultRespond                  // answer with an error status
	FaultDrop                     // forward, then cut the connection after some body bytes
	FaultHang                     // forward, then send nothing more after some body bytes
	FaultFlip                     // forward, with one body byte flipped
)

// Fault is what a FaultProxy does with one request, and how.
type Fault struct {
	kind  FaultKind
	code  int           // FaultRespond: the status
	wait  time.Duration // FaultRespond: the Retry-After sent, when positive
	after int64         // FaultDrop, FaultHang: body bytes sent first; FaultFlip: the byte flipped
}

// Pass forwards the request and its response.
func Pass() Fault { return Fault{kind: FaultPass} }

// Respond answers with an error status.
func Respond(code int) Fault { return Fault{kind: FaultRespond, code: code} }

// RespondAfter answers with an error status and a Retry-After of wait
// (whole seconds, at least 1), as a server that throttles does.
func RespondAfter(code int, wait time.Duration) Fault {
	return Fault{kind: FaultRespond, code: code, wait: max(wait, time.Second)}
}

// DropAfter cuts the connection after n body bytes.
func DropAfter(n int64) Fault { return Fault{kind: FaultDrop, after: n} }

// HangAfter sends nothing more after n body bytes.
func HangAfter(n int64) Fault { return Fault{kind: FaultHang, after: n} }

// HangAtOnce sends nothing at all.
func HangAtOnce() Fault { return Fault{kind: FaultHang, after: -1} }

// FlipAt forwards the response with the bits of its body byte n inverted
// (when the body has that byte), as a faulty proxy or middlebox might:
// the status, headers and length are untouched, so only a checksum can
// tell.
func FlipAt(n int64) Fault { return Fault{kind: FaultFlip, after: n} }

// Always is an offset plan that does f to every request.
func Always(f Fault) func(off int64, nth int) Fault { return func(int64, int) Fault { return f } }

// SeenRequest is a request as the proxy received it.
type SeenRequest struct {
	Method, Path, Range string
	Time                time.Time // when it arrived
}

// ReadsObject reports whether r reads the bytes of the object whose name
// ends in /name (the client's XML API read, GET /BUCKET/OBJECT), as
// opposed to asking its metadata (the JSON API, under /storage/v1/).
func (r SeenRequest) ReadsObject(name string) bool {
	return r.Method == "GET" && !strings.HasPrefix(r.Path, "/storage/v1/") && strings.HasSuffix(r.Path, "/"+name)
}

// FaultProxy is an HTTP reverse proxy in front of the fake GCS server that
// breaks requests as its plan says.
type FaultProxy struct {
	// dependencies
	srv      *httptest.Server
	upstream string
	client   *http.Client

	// constants
	plan func(i int, r SeenRequest, off int64, nth int) Fault
	done chan struct{} // closed when the test ends; releases hanging handlers
	Hung chan struct{} // gets a value (if there is room) when a handler starts hanging

	mu      sync.Mutex
	seen    []SeenRequest // guarded by mu
	flipped int           // guarded by mu: responses sent with a byte flipped
}

// NewFaultProxy starts a proxy whose plan decides the i-th request (from 0).
func NewFaultProxy(t testing.TB, upstream string, plan func(i int) Fault) *FaultProxy {
	t.Helper()
	return startFaultProxy(t, upstream, func(i int, _ SeenRequest, _ int64, _ int) Fault { return plan(i) })
}

// NewOffsetFaultProxy starts a proxy whose plan decides a request by the
// byte it starts at and by how many requests started there before (nth).
// Such plans stay true when the storage client sends a request and abandons
// it before the response (see the gcs backend's Open), which index plans do not.
func NewOffsetFaultProxy(t testing.TB, upstream string, plan func(off int64, nth int) Fault) *FaultProxy {
	t.Helper()
	return startFaultProxy(t, upstream, func(_ int, _ SeenRequest, off int64, nth int) Fault { return plan(off, nth) })
}

// NewRequestFaultProxy starts a proxy whose plan decides a request by what
// it asks for (method, path, Range) and by how many requests asked for the
// same before (nth): flip a byte in the first read of one object, say.
func NewRequestFaultProxy(t testing.TB, upstream string, plan func(r SeenRequest, nth int) Fault) *FaultProxy {
	t.Helper()
	return startFaultProxy(t, upstream, func(_ int, r SeenRequest, _ int64, nth int) Fault { return plan(r, nth) })
}

func startFaultProxy(t testing.TB, upstream string, plan func(i int, r SeenRequest, off int64, nth int) Fault) *FaultProxy {
	p := &FaultProxy{
		upstream: upstream,
		// A proxy passes redirects on to the client, as it does any answer.
		client: &http.Client{Transport: &http.Transport{},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		plan: plan,
		done: make(chan struct{}),
		Hung: make(chan struct{}, 64),
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

// URL is the proxy's base URL.
func (p *FaultProxy) URL() string { return p.srv.URL }

// Requests returns the requests received so far.
func (p *FaultProxy) Requests() []SeenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]SeenRequest(nil), p.seen...)
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seen := SeenRequest{Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range"), Time: time.Now()}
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
	f := p.plan(len(p.seen)-1, seen, off, nth)
	p.mu.Unlock()

	switch {
	case f.kind == FaultRespond:
		if f.wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((f.wait+time.Second-1)/time.Second)))
		}
		http.Error(w, http.StatusText(f.code), f.code)
		return
	case f.kind == FaultHang && f.after < 0:
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
	if f.kind == FaultPass {
		io.Copy(w, res.Body)
		return
	}
	if f.kind == FaultFlip {
		p.mu.Lock()
		p.flipped++
		p.mu.Unlock()
		io.Copy(w, &flipReader{r: res.Body, at: f.after})
		return
	}
	io.CopyN(w, res.Body, f.after)
	rc := http.NewResponseController(w)
	rc.Flush()
	if f.kind == FaultHang {
		p.hang(r)
		return
	}
	// FaultDrop: the response promised Content-Length bytes; closing the
	// connection now makes the client see an unexpected EOF.
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes the connection too
	}
	conn.Close()
}

// Flipped returns how many responses were sent with a byte flipped
// (FlipAt) so far.
func (p *FaultProxy) Flipped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flipped
}

// flipReader reads r with the bits of byte at inverted.
type flipReader struct {
	r   io.Reader
	at  int64
	pos int64
}

func (f *flipReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if f.at >= f.pos && f.at < f.pos+int64(n) {
		b[f.at-f.pos] ^= 0xff
	}
	f.pos += int64(n)
	return n, err
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
func (p *FaultProxy) hang(r *http.Request) {
	select {
	case p.Hung <- struct{}{}:
	default:
	}
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
}

// RangeFrom is the Range header of a read from off to the end, as the
// storage client sends it: none from 0.
func RangeFrom(off int64) string {
	if off == 0 {
		return ""
	}
	return "bytes=" + strconv.FormatInt(off, 10) + "-"
}

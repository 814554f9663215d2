package testkit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// HangProxy is an HTTP reverse proxy in front of a server (fake GCS): while
// Hang is set, it accepts every request whose path Match accepts and never
// answers it (a hung source); everything else is forwarded.
type HangProxy struct {
	Hang atomic.Bool
	srv  *httptest.Server
}

// NewHangProxy starts a proxy to upstream (a base URL) that hangs the
// requests match accepts while Hang is set. Hung handlers return when the
// test ends.
func NewHangProxy(t testing.TB, upstream string, match func(path string) bool) *HangProxy {
	t.Helper()
	p := &HangProxy{}
	release := make(chan struct{})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.Hang.Load() && match(r.URL.Path) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		res, ok := Forward(w, r, upstream, http.DefaultTransport)
		if !ok {
			return
		}
		defer res.Body.Close()
		CopyHeader(w, res)
		io.Copy(w, res.Body)
	}))
	t.Cleanup(p.srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: hung handlers return
	return p
}

// URL is the proxy's base URL.
func (p *HangProxy) URL() string { return p.srv.URL }

// Forward sends r, with its headers, to upstream (a base URL) through rt
// and returns the response for the caller to relay and close. When the
// request cannot be sent it answers w with an error itself and returns
// false.
func Forward(w http.ResponseWriter, r *http.Request, upstream string, rt http.RoundTripper) (*http.Response, bool) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, false
	}
	req.Header = r.Header.Clone()
	res, err := rt.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return nil, false
	}
	return res, true
}

// CopyHeader writes res's headers and status to w.
func CopyHeader(w http.ResponseWriter, res *http.Response) {
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
}

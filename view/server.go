package view

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"
)

//go:embed assets
var assets embed.FS

var pageTemplate = template.Must(template.ParseFS(assets, "assets/index.html"))

// Options configure a Server.
type Options struct {
	// Check is an `oxefs check --json` report to show, or nil.
	Check []byte
	// Episodes feeds the episode scrubber; nil without one.
	Episodes Episodes
	// BenchDir is an `oxefs bench --out` directory whose pictures the
	// live section shows ("" for none).
	BenchDir string
	// Encoders bounds the frames encoded at once (default 2), so that a
	// page open beside training takes little of the daemon's CPU.
	Encoders int64
	Log      *slog.Logger
}

// Server is the viewer's HTTP handler over one mount.
type Server struct {
	// dependencies
	mount *Mount
	log   *slog.Logger
	// constants
	check    []byte
	episodes Episodes
	benchDir string
	mux      *http.ServeMux
	// encode bounds concurrent frame encodes.
	encode *semaphore.Weighted
	// batches keeps the last batches described (safe for concurrent use).
	batches *batchCache
}

// NewServer returns the viewer of m.
func NewServer(m *Mount, opts Options) *Server {
	if opts.Encoders <= 0 {
		opts.Encoders = 2
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{mount: m, log: opts.Log, check: opts.Check, episodes: opts.Episodes, benchDir: opts.BenchDir, encode: semaphore.NewWeighted(opts.Encoders), batches: newBatchCache(), mux: http.NewServeMux()}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.HandleFunc("GET /api/info", s.api(s.info, "rank"))
	s.mux.HandleFunc("GET /api/stats", s.api(s.stats, "rank"))
	s.mux.HandleFunc("GET /api/mix", s.api(s.mix, "rank"))
	s.mux.HandleFunc("GET /api/batch", s.api(s.batch, "rank", "view", "n"))
	s.mux.HandleFunc("GET /api/check", s.api(s.checkReport))
	s.mux.HandleFunc("GET /api/frame", s.frame)
	s.mux.HandleFunc("GET /api/episodes", s.api(s.episodeDatasets))
	s.mux.HandleFunc("GET /api/bench", s.api(s.benchPlots))
	s.mux.HandleFunc("GET /api/bench/{name}", s.benchPlot)
	s.mux.HandleFunc("GET /api/episode", s.episode)
	s.mux.HandleFunc("GET /api/episode/frame", s.episodeFrame)
	return s
}

// ServeHTTP serves the page and its data: GET and HEAD only, from a
// loopback Host when the server listens on loopback (no DNS rebinding).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("view: handler panic", "path", r.URL.Path, "panic", v)
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
	}()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the viewer is read-only: GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopback(local.String()) && !loopbackHost(r.Host) {
		http.Error(w, "Host "+strconv.Quote(r.Host)+" is not this machine's: open the page at the address the daemon logged", http.StatusForbidden)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackHost(h string) bool {
	host, _, err := net.SplitHostPort(h)
	if err != nil {
		host = h
	}
	return host == "localhost" || isLoopback(host)
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(w, struct{ Mount string }{s.mount.Dir()}); err != nil {
		s.log.Warn("view: page", "err", err)
	}
}

// query checks that q holds only the allowed keys, each at most once.
func query(q url.Values, allowed ...string) error {
	for k, v := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return badRequest("unknown parameter %q (this endpoint takes %s)", k, strings.Join(allowed, ", "))
		}
		if len(v) > 1 {
			return badRequest("parameter %q given %d times", k, len(v))
		}
	}
	return nil
}

// api wraps a JSON endpoint: its query is checked, its answer or error
// written.
func (s *Server) api(h func(url.Values) (any, error), allowed ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if err := query(q, allowed...); err != nil {
			s.fail(w, r, err)
			return
		}
		v, err := h(q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.writeJSON(w, r, v)
	}
}

// writeJSON writes v (a json.RawMessage as it is).
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// fail writes err: 400 for the request's fault, 404 for what the mount
// does not have, 504 when the mount did not answer in time, 500 else.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case isNotExist(err), errors.Is(err, errNotFound):
		code = http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	if code >= 500 {
		s.log.Warn("view: request failed", "path", r.URL.Path, "query", r.URL.RawQuery, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")})
}

func (s *Server) info(q url.Values) (any, error) {
	r, err := s.mount.rank(q.Get("rank"))
	if err != nil {
		return nil, err
	}
	b, err := redactJSON(r.raw)
	return json.RawMessage(b), err
}

func (s *Server) stats(q url.Values) (any, error) {
	r, err := s.mount.rank(q.Get("rank"))
	if err != nil {
		return nil, err
	}
	_, raw, err := s.mount.stats(r)
	if err != nil {
		return nil, err
	}
	b, err := redactJSON(raw)
	return json.RawMessage(b), err
}

func (s *Server) mix(q url.Values) (any, error) {
	r, err := s.mount.rank(q.Get("rank"))
	if err != nil {
		return nil, err
	}
	return s.mount.readMix(r)
}

// batchIndex parses n: a batch number.
func batchIndex(q string) (int64, error) {
	if q == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("n %q is not a batch number", q)
	}
	return n, nil
}

func (s *Server) batch(q url.Values) (any, error) {
	r, err := s.mount.rank(q.Get("rank"))
	if err != nil {
		return nil, err
	}
	n, err := batchIndex(q.Get("n"))
	if err != nil {
		return nil, err
	}
	key := keyOf(r, q.Get("view"), n)
	if b := s.batches.get(key); b != nil {
		return b, nil
	}
	bv, err := s.mount.readBatch(r, q.Get("view"), n)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(bv)
	if err != nil {
		return nil, err
	}
	s.batches.put(key, b)
	return json.RawMessage(b), nil
}

func (s *Server) checkReport(url.Values) (any, error) {
	if s.check == nil {
		return nil, fmt.Errorf("no check report: run oxefs check --config mix.yaml --json > report.json and pass --check report.json: %w", fs.ErrNotExist)
	}
	return json.RawMessage(s.check), nil
}

// frame serves one frame as PNG (or JPEG with format=jpeg), read from the
// batch's array of that slot: only that frame's bytes are read.
func (s *Server) frame(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	if err := query(q, "rank", "view", "n", "sample", "slot", "step", "format"); err != nil {
		s.fail(w, req, err)
		return
	}
	img, err := s.readFrame(req.Context(), q)
	if err != nil {
		s.fail(w, req, err)
		return
	}
	if err := s.encode.Acquire(req.Context(), 1); err != nil {
		s.fail(w, req, err)
		return
	}
	b, ctype, err := encodeFrame(img, q.Get("format"))
	s.encode.Release(1)
	if err != nil {
		s.fail(w, req, err)
		return
	}
	w.Header().Set("Content-Type", ctype)
	// A batch is a pure function of (config, seed, N): its frames do not
	// change while the mount lives.
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.Write(b)
}

func (s *Server) readFrame(ctx context.Context, q url.Values) (*image.RGBA, error) {
	r, err := s.mount.rank(q.Get("rank"))
	if err != nil {
		return nil, err
	}
	n, err := batchIndex(q.Get("n"))
	if err != nil {
		return nil, err
	}
	dir, vi, err := r.batchDir(q.Get("view"))
	if err != nil {
		return nil, err
	}
	if vi == nil || n >= vi.NumBatches {
		return nil, badRequest("batch %d: the %s view lists %d batches", n, viewName(q.Get("view")), numBatches(vi))
	}
	var ref frameRef
	if ref.Sample, err = smallInt(q.Get("sample"), "sample"); err != nil {
		return nil, err
	}
	if ref.Step, err = smallInt(q.Get("step"), "step"); err != nil {
		return nil, err
	}
	ref.Slot = q.Get("slot")
	if ref.Slot == "" {
		ref.Slot = "frames"
		if s, steps := r.info.steps(); steps && len(s.Slots) > 0 {
			ref.Slot = r.info.Sample.Slots[0].Name
		}
	}
	name, err := r.frameFile(dir, n, ref.Slot)
	if err != nil {
		return nil, err
	}
	f, a, err := s.mount.openArray(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	layout := r.info.Config.Layout
	if r.info.Frames != nil {
		layout = r.info.Frames.Layout
	}
	img, err := readFrame(f, a, layout, ref)
	if err != nil {
		return nil, err
	}
	if sizes, rows := r.compressedFiles(dir, n, ref.Slot); sizes != "" {
		// decode: gpu: a JPEG in the frame's place is decoded as the
		// trainer decodes it
		dec, err := s.compressedFrame(ctx, f, a, sizes, rows, r.info.Config.Resize, ref)
		if err != nil || dec != nil {
			return dec, err
		}
	}
	return img, nil
}

func numBatches(vi *viewInfo) int64 {
	if vi == nil {
		return 0
	}
	return vi.NumBatches
}

func smallInt(q, what string) (int, error) {
	if q == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(q)
	if err != nil || v < 0 || v > 1<<30 {
		return 0, badRequest("%s %q is not an index", what, q)
	}
	return v, nil
}

// Listen starts serving the viewer of m on addr until ctx is done, and
// returns the address it listens on (addr's port 0 picks one).
func Listen(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--view %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute, // a batch's first read waits for its build
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return ln.Addr(), done, nil
}

// benchPlots are the pictures oxefs bench writes into --out, the only
// files of BenchDir the page serves.
var benchPlots = []string{"mixture_over_time.svg", "mixture_shares.svg", "latency.svg"}

// benchPlots lists the bench pictures there are.
func (s *Server) benchPlots(url.Values) (any, error) {
	out := []string{}
	if s.benchDir == "" {
		return out, nil
	}
	for _, name := range benchPlots {
		if st, err := os.Stat(filepath.Join(s.benchDir, name)); err == nil && st.Mode().IsRegular() {
			out = append(out, name)
		}
	}
	return out, nil
}

// benchPlot serves one of them.
func (s *Server) benchPlot(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !slices.Contains(benchPlots, name) || s.benchDir == "" {
		s.fail(w, r, fmt.Errorf("bench picture %q: %w", name, errNotFound))
		return
	}
	b, err := os.ReadFile(filepath.Join(s.benchDir, name))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

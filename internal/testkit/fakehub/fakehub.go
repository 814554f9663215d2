// Package fakehub is a Hugging Face Hub for tests and offline measurements:
// an HTTP server on loopback that serves dataset repositories, held in
// memory, through the endpoints of the Hub's documented HTTP API that
// oxefs's storage/hf and huggingface_hub's snapshot_download and
// hf_hub_download use:
//
//	GET  /api/datasets/OWNER/NAME[/revision/REV]     repository info: sha, siblings
//	GET  /api/datasets/OWNER/NAME/tree/REV[/PATH]    files (recursive=true), paginated by Link
//	HEAD /datasets/OWNER/NAME/resolve/REV/PATH       ETag, X-Repo-Commit, Content-Length
//	GET  /datasets/OWNER/NAME/resolve/REV/PATH       the bytes, with Range
//
// A file of LFSThreshold bytes or more is an LFS file: its resolve answer
// is a 302 to a second listener (the "storage host", on another port),
// with X-Linked-Etag (its SHA-256) and X-Linked-Size, as the Hub redirects
// to its CDN. A signed query is required there, and every request that
// reaches it carrying an Authorization header is counted.
//
// Fault knobs: RequireToken (401 for a request without the token, the
// answer naming the token it got, so that a client's redaction is
// tested), RateLimit and RateLimitStorage (429 with Retry-After from the
// Hub or from its storage host), Latency and Rate (a round trip
// and a bandwidth, for cold-start figures), and Commit, which moves a
// branch to a new commit mid-run. Every request is recorded.
//
// Only tests and scripts/fakehub import it.
package fakehub

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxefs/oxefs/storage/ratelimit"
)

// Options configures a Hub.
type Options struct {
	// LFSThreshold is the size from which a file is an LFS file (1 KiB
	// when 0; negative: none is).
	LFSThreshold int64
	// PageSize is the most entries one tree answer lists (1000 when 0).
	PageSize int
	// Latency delays every answer before it starts.
	Latency time.Duration
	// Rate caps the bytes per second of all answers together (0: no cap).
	Rate int64
}

// Request is one request the Hub or its storage host answered.
type Request struct {
	Host   string // "hub" or "storage"
	Method string
	Path   string // unescaped
	Range  string
	Auth   string // the Authorization header
	Status int
	Bytes  int64     // body bytes sent
	Time   time.Time // when the request arrived
}

// Hub is the fake Hub. Its methods are safe for concurrent use.
type Hub struct {
	// constants
	opts    Options
	hub     *http.Server
	storage *http.Server
	hubURL  string
	stURL   string
	limiter *ratelimit.Limiter

	mu         sync.Mutex
	repos      map[string]*repo // guarded by mu: by "OWNER/NAME"
	token      string           // guarded by mu: required when not ""
	limited    int              // guarded by mu: requests still to answer 429
	retryAfter time.Duration    // guarded by mu
	stLimited  int              // guarded by mu: storage host requests still to answer 429
	stAfter    time.Duration    // guarded by mu: their Retry-After
	signing    int              // guarded by mu: the storage URLs' key, which RotateSigning changes
	redirectTo string           // guarded by mu: the storage host's URL in redirects, when not stURL
	requests   []Request        // guarded by mu
}

type repo struct {
	refs    map[string]string  // branch or tag → commit
	commits map[string]*commit // by id
}

type commit struct {
	id    string
	files map[string]*file
}

type file struct {
	data   []byte
	blob   string // git blob id of what git stores: the bytes, or an LFS pointer
	sha256 string // of the bytes
	lfs    bool
}

// New starts a Hub on loopback, closed when the test ends.
func New(t testing.TB, opts Options) *Hub {
	t.Helper()
	h, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// Listen starts a Hub at addr and its storage host on another port of the
// same interface.
func Listen(addr string, opts Options) (*Hub, error) {
	if opts.LFSThreshold == 0 {
		opts.LFSThreshold = 1 << 10
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 1000
	}
	hl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(hl.Addr().String())
	sl, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		hl.Close()
		return nil, err
	}
	h := &Hub{
		opts:    opts,
		hubURL:  "http://" + hl.Addr().String(),
		stURL:   "http://" + sl.Addr().String(),
		limiter: ratelimit.NewLimiter(opts.Rate),
		repos:   map[string]*repo{},
	}
	h.hub = &http.Server{Handler: h.recorded("hub", http.HandlerFunc(h.serveHub))}
	h.storage = &http.Server{Handler: h.recorded("storage", http.HandlerFunc(h.serveStorage))}
	go h.hub.Serve(hl)
	go h.storage.Serve(sl)
	return h, nil
}

// Close stops both listeners.
func (h *Hub) Close() {
	h.hub.Close()
	h.storage.Close()
}

// StorageURL is the storage host's base URL.
func (h *Hub) StorageURL() string { return h.stURL }

// RedirectStorageTo makes LFS redirects name u instead of the storage
// host: a proxy in front of it (a testkit.FaultProxy, say).
func (h *Hub) RedirectStorageTo(u string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.redirectTo = u
}

// URL is the Hub's endpoint, for HF_ENDPOINT.
func (h *Hub) URL() string { return h.hubURL }

// Commit makes a commit of repo ("OWNER/NAME", created if new) holding
// exactly files, moves branch to it, and returns its id.
func (h *Hub) Commit(repoID, branch string, files map[string][]byte) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[repoID]
	if r == nil {
		r = &repo{refs: map[string]string{}, commits: map[string]*commit{}}
		h.repos[repoID] = r
	}
	c := &commit{files: map[string]*file{}}
	sum := sha1.New()
	fmt.Fprintf(sum, "%s %s %d\n", repoID, r.refs[branch], len(r.commits))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := h.newFile(files[name])
		c.files[name] = f
		fmt.Fprintf(sum, "%s %s\n", name, f.blob)
	}
	c.id = hex.EncodeToString(sum.Sum(nil))
	r.commits[c.id] = c
	r.refs[branch] = c.id
	return c.id
}

// SetRef points a branch or tag of repo at commit id.
func (h *Hub) SetRef(repoID, ref, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[repoID].refs[ref] = id
}

// Rewrite replaces the named file of an existing commit in place, as only
// a rewrite of the Hub's history could (the conformance suite's new bytes
// under one name).
func (h *Hub) Rewrite(repoID, id, name string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[repoID].commits[id].files[name] = h.newFile(data)
}

func (h *Hub) newFile(data []byte) *file {
	data = bytes.Clone(data)
	s := sha256.Sum256(data)
	f := &file{data: data, sha256: hex.EncodeToString(s[:])}
	f.lfs = h.opts.LFSThreshold >= 0 && int64(len(data)) >= h.opts.LFSThreshold
	stored := data
	if f.lfs {
		stored = f.pointer()
	}
	b := sha1.New()
	fmt.Fprintf(b, "blob %d\x00", len(stored))
	b.Write(stored)
	f.blob = hex.EncodeToString(b.Sum(nil))
	return f
}

// pointer is the LFS pointer file git stores for an LFS file.
func (f *file) pointer() []byte {
	return fmt.Appendf(nil, "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", f.sha256, len(f.data))
}

// RequireToken makes every request to the Hub (not to its storage host,
// whose URLs are signed) need "Authorization: Bearer token"; "" lifts it.
func (h *Hub) RequireToken(token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.token = token
}

// RateLimit answers the next n requests to the Hub with 429 and a
// Retry-After of wait (whole seconds, at least 1).
func (h *Hub) RateLimit(n int, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.limited, h.retryAfter = n, wait
}

// RateLimitStorage answers the next n requests to the storage host with
// 429 and a Retry-After of wait (whole seconds, at least 1), as a CDN
// throttles: the URL stays valid.
func (h *Hub) RateLimitStorage(n int, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stLimited, h.stAfter = n, wait
}

// retryAfterSeconds is wait as a Retry-After header: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(wait time.Duration) string {
	return strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second)))
}

// RotateSigning expires every storage URL handed out so far, as signed
// URLs expire: the storage host refuses them (403) from now on.
func (h *Hub) RotateSigning() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.signing++
}

// signature is the storage URL signature of an LFS file.
func (h *Hub) signature(sha string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%s-%d", sha[:8], h.signing)
}

// Requests returns every request answered so far, in order.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

// recorded records each request with its status and body bytes, after the
// latency and under the rate of the options.
func (h *Hub) recorded(host string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		if h.opts.Latency > 0 {
			t := time.NewTimer(h.opts.Latency)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		rw := &recorder{ResponseWriter: w, ctx: r.Context(), lim: h.limiter, status: http.StatusOK}
		next.ServeHTTP(rw, r)
		h.mu.Lock()
		h.requests = append(h.requests, Request{Host: host, Method: r.Method, Path: r.URL.Path,
			Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization"), Status: rw.status, Bytes: rw.bytes, Time: arrived})
		h.mu.Unlock()
	})
}

// recorder counts what an answer sends, paced by a limiter.
type recorder struct {
	http.ResponseWriter
	ctx    context.Context
	lim    *ratelimit.Limiter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), 32<<10)]
		if err := w.lim.Wait(w.ctx, len(chunk)); err != nil {
			return written, err
		}
		n, err := w.ResponseWriter.Write(chunk)
		written += n
		w.bytes += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// hubError answers an error as the Hub does: X-Error-Code,
// X-Error-Message and a JSON body.
func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// serveHub routes a request to the Hub.
func (h *Hub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	token, limited, wait := h.token, h.limited, h.retryAfter
	if limited > 0 {
		h.limited--
	}
	h.mu.Unlock()
	if limited > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(wait))
		hubError(w, http.StatusTooManyRequests, "", "Too many requests: retry later")
		return
	}
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		hubError(w, http.StatusUnauthorized, "GatedRepo",
			fmt.Sprintf("Access to this dataset is restricted; you must be authenticated to access it (token %q is not valid).", got))
		return
	}
	// Segments as sent, so that an escaped revision (refs%2Fpr%2F1) stays one.
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, s := range segs {
		segs[i], _ = url.PathUnescape(s)
	}
	switch {
	case len(segs) >= 4 && segs[0] == "api" && segs[1] == "datasets":
		repoID := segs[2] + "/" + segs[3]
		rest := segs[4:]
		switch {
		case len(rest) == 0:
			h.serveInfo(w, r, repoID, "main")
		case len(rest) == 2 && rest[0] == "revision":
			h.serveInfo(w, r, repoID, rest[1])
		case len(rest) >= 2 && rest[0] == "tree":
			h.serveTree(w, r, repoID, rest[1], strings.Join(rest[2:], "/"))
		default:
			hubError(w, http.StatusNotFound, "", "no such endpoint: "+r.URL.Path)
		}
	case len(segs) >= 6 && segs[0] == "datasets" && segs[3] == "resolve":
		h.serveResolve(w, r, segs[1]+"/"+segs[2], segs[4], strings.Join(segs[5:], "/"))
	default:
		hubError(w, http.StatusNotFound, "", "no such endpoint: "+r.URL.Path)
	}
}

// lookup finds the commit rev names in repoID, or answers the error.
func (h *Hub) lookup(w http.ResponseWriter, r0 *http.Request, repoID, rev string) *commit {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[repoID]
	if r == nil {
		// As the Hub answers: without a token, 401, so that a private
		// repository and a missing one look alike.
		status := http.StatusNotFound
		if r0.Header.Get("Authorization") == "" {
			status = http.StatusUnauthorized
		}
		hubError(w, status, "RepoNotFound", "Repository not found")
		return nil
	}
	id, ok := r.refs[rev]
	if !ok {
		id = rev
	}
	c := r.commits[id]
	if c == nil {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return nil
	}
	// A snapshot: Rewrite may replace a file while the answer is written.
	return &commit{id: c.id, files: maps.Clone(c.files)}
}

func (h *Hub) serveInfo(w http.ResponseWriter, r *http.Request, repoID, rev string) {
	c := h.lookup(w, r, repoID, rev)
	if c == nil {
		return
	}
	type sibling struct {
		Name string `json:"rfilename"`
	}
	var siblings []sibling
	for _, name := range slices.Sorted(maps.Keys(c.files)) {
		siblings = append(siblings, sibling{name})
	}
	owner, _, _ := strings.Cut(repoID, "/")
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"_id": c.id[:24], "id": repoID, "author": owner, "sha": c.id,
		"lastModified": "2026-01-01T00:00:00.000Z", "private": false, "gated": false, "disabled": false,
		"downloads": 0, "likes": 0, "tags": []string{}, "siblings": siblings,
		"createdAt": "2026-01-01T00:00:00.000Z", "usedStorage": 0,
	})
}

// treeEntry is an entry of a tree answer.
type treeEntry struct {
	Type string    `json:"type"`
	OID  string    `json:"oid"`
	Size int64     `json:"size"`
	Path string    `json:"path"`
	LFS  *lfsEntry `json:"lfs,omitempty"`
}

type lfsEntry struct {
	OID         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

// serveTree lists the files and folders under dir (every level when
// recursive, else one), a page at a time: the next page's URL is in a
// Link header (rel="next"), its position in the cursor parameter.
func (h *Hub) serveTree(w http.ResponseWriter, r *http.Request, repoID, rev, dir string) {
	c := h.lookup(w, r, repoID, rev)
	if c == nil {
		return
	}
	q := r.URL.Query()
	recursive := q.Get("recursive") == "1" || strings.EqualFold(q.Get("recursive"), "true")
	dir = strings.Trim(dir, "/")
	var entries []treeEntry
	dirs := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(c.files)) {
		rel := name
		if dir != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(name, dir+"/"); !ok {
				continue
			}
		}
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			d := path.Join(dir, strings.Join(parts[:i], "/"))
			if (recursive || i == 1) && !dirs[d] {
				dirs[d] = true
				entries = append(entries, treeEntry{Type: "directory", OID: treeOID(d), Path: d})
			}
		}
		if !recursive && len(parts) > 1 {
			continue
		}
		f := c.files[name]
		e := treeEntry{Type: "file", OID: f.blob, Size: int64(len(f.data)), Path: name}
		if f.lfs {
			e.LFS = &lfsEntry{OID: f.sha256, Size: int64(len(f.data)), PointerSize: len(f.pointer())}
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 && dir != "" {
		hubError(w, http.StatusNotFound, "EntryNotFound", dir+" does not exist on "+rev)
		return
	}
	start, _ := strconv.Atoi(q.Get("cursor"))
	start = min(max(start, 0), len(entries))
	end := min(start+h.opts.PageSize, len(entries))
	if end < len(entries) {
		next := *r.URL
		nq := next.Query()
		nq.Set("cursor", strconv.Itoa(end))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf("<%s%s>; rel=\"next\"", h.hubURL, next.RequestURI()))
	}
	w.Header().Set("Content-Type", "application/json")
	page := entries[start:end]
	if page == nil {
		page = []treeEntry{}
	}
	json.NewEncoder(w).Encode(page)
}

// treeOID is a folder's id in tree answers (any stable 40 hex digits).
func treeOID(dir string) string {
	s := sha1.Sum([]byte("tree " + dir))
	return hex.EncodeToString(s[:])
}

// serveResolve answers a file: its bytes (with Range) and ETag for a
// regular file, a redirect to the storage host for an LFS file.
func (h *Hub) serveResolve(w http.ResponseWriter, r *http.Request, repoID, rev, name string) {
	c := h.lookup(w, r, repoID, rev)
	if c == nil {
		return
	}
	f := c.files[name]
	if f == nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", name+" does not exist on "+rev)
		return
	}
	w.Header().Set("X-Repo-Commit", c.id)
	if f.lfs {
		w.Header().Set("X-Linked-Etag", `"`+f.sha256+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
		w.Header().Set("ETag", `"`+f.sha256+`"`)
		h.mu.Lock()
		st := cmp.Or(h.redirectTo, h.stURL)
		h.mu.Unlock()
		w.Header().Set("Location", fmt.Sprintf("%s/lfs/%s?sig=%s", st, f.sha256, h.signature(f.sha256)))
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+f.blob+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.data))
}

// serveStorage answers the storage host: an LFS file's bytes by SHA-256,
// for a signed URL.
func (h *Hub) serveStorage(w http.ResponseWriter, r *http.Request) {
	sha, ok := strings.CutPrefix(r.URL.Path, "/lfs/")
	if !ok || len(sha) < 8 || r.URL.Query().Get("sig") != h.signature(sha) {
		http.Error(w, "AccessDenied: bad signature", http.StatusForbidden)
		return
	}
	h.mu.Lock()
	limited, wait := h.stLimited, h.stAfter
	if limited > 0 {
		h.stLimited--
	}
	h.mu.Unlock()
	if limited > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(wait))
		http.Error(w, "SlowDown: too many requests", http.StatusTooManyRequests)
		return
	}
	var data []byte
	h.mu.Lock()
	for _, repo := range h.repos {
		for _, c := range repo.commits {
			for _, f := range c.files {
				if f.lfs && f.sha256 == sha {
					data = f.data
				}
			}
		}
	}
	h.mu.Unlock()
	if data == nil {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", `"`+sha[:32]+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

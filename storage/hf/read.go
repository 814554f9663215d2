package hf

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/oxefs/oxefs/storage"
)

// Open streams length bytes of the named object at the pinned commit from
// offset off (to its end when length < 0): GET
// /datasets/REPO/resolve/COMMIT/PATH with a Range header. An LFS file's
// answer is a redirect to its storage host, which Open follows itself,
// without the token when the host is another. An offset at or past the end
// gives an empty stream. Reads stop when ctx is done.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return b.open(ctx, name, "", off, length)
}

// OpenVersion is Open of the object's bytes at version, what Stat
// returned: the Hub names the bytes it serves (the X-Linked-Etag or ETag
// of its first answer), and bytes of another version are a
// *storage.VersionError. At a pinned commit they never are, unless the
// Hub's history was rewritten under it.
func (b *Backend) OpenVersion(ctx context.Context, name, version string, off, length int64) (io.ReadCloser, error) {
	return b.open(ctx, name, version, off, length)
}

func (b *Backend) open(ctx context.Context, name, version string, off, length int64) (io.ReadCloser, error) {
	commit, err := b.Commit(ctx)
	if err != nil {
		return nil, err
	}
	if length == 0 {
		return http.NoBody, nil
	}
	rng := fmt.Sprintf("bytes=%d-", off)
	if length > 0 {
		rng = fmt.Sprintf("bytes=%d-%d", off, off+length-1)
	}
	a, err := b.get(ctx, http.MethodGet, commit, name, rng)
	if err != nil {
		if version != "" && errors.Is(err, fs.ErrNotExist) {
			return nil, &storage.VersionError{Object: storage.Object(b, name), Version: version, Err: err}
		}
		return nil, err
	}
	if got := a.version(commit); version != "" && got != version {
		a.resp.Body.Close()
		return nil, &storage.VersionError{Object: storage.Object(b, name), Version: version,
			Err: fmt.Errorf("commit %s serves version %q", commit, got)}
	}
	resp := a.resp
	var rc io.ReadCloser = &body{rc: resp.Body, ctx: ctx, object: storage.Object(b, name), off: off}
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		// A server that ignored the range sent the whole object.
		if off > 0 {
			if _, err := io.CopyN(io.Discard, rc, off); err != nil {
				rc.Close()
				if err == io.EOF {
					return http.NoBody, nil
				}
				return nil, err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		resp.Body.Close()
		return http.NoBody, nil
	default:
		defer resp.Body.Close()
		return nil, b.statusError(resp, name)
	}
	if length > 0 {
		rc = limited{io.LimitReader(rc, length), rc}
	}
	if off == 0 && length < 0 {
		if c, h := a.published(resp); h != nil {
			rc, _ = storage.CheckWhole(rc, storage.Object(b, name), c, h)
		}
	}
	return rc, nil
}

// published returns the checksum the answer publishes of the object's
// whole bytes, which resp carries, and a hash to compute it; a nil hash
// when it publishes none that is unambiguous. An LFS file's oid is the
// SHA-256 of its bytes; any other file's ETag, when it is 40 hex digits,
// is its git blob id, which hashes the size first: the size resp says it
// carries (a 200's Content-Length, or a 206's that covers the whole
// object), or none when resp does not say.
func (a *answer) published(resp *http.Response) (storage.Checksum, hash.Hash) {
	switch {
	case a.lfs && isSHA256(a.oid):
		return storage.Checksum{Algorithm: storage.SHA256, Sum: strings.ToLower(a.oid)}, sha256.New()
	case !a.lfs && isHex(a.oid, 40):
		size := wholeSize(resp)
		if size < 0 {
			return storage.Checksum{}, nil
		}
		return storage.Checksum{Algorithm: storage.GitBlob, Sum: strings.ToLower(a.oid)}, storage.NewGitBlobHash(size)
	}
	return storage.Checksum{}, nil
}

// wholeSize returns the size of the whole object that resp, an answer to
// a read from its first byte to its end, carries: -1 when resp does not
// say (a body of unknown length, one decompressed on the way, a 206 whose
// Content-Range is not "bytes 0-(N-1)/N").
func wholeSize(resp *http.Response) int64 {
	n := resp.ContentLength
	if n < 0 || resp.Uncompressed {
		return -1
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return n
	case http.StatusPartialContent:
		if resp.Header.Get("Content-Range") == fmt.Sprintf("bytes 0-%d/%d", n-1, n) {
			return n
		}
	}
	return -1
}

// limited is a body read up to a length.
type limited struct {
	io.Reader
	io.Closer
}

// Stat identifies the named object at the pinned commit with one HEAD of
// its resolve URL, as huggingface_hub's get_hf_file_metadata does. The
// version is the digest the Hub publishes for the file:
//
//	"sha256 HEX"     an LFS file: the SHA-256 of its bytes (X-Linked-Etag,
//	                 the lfs.oid of the tree listing)
//	"git-blob HEX"   any other file: its git blob id, the SHA-1 of
//	                 "blob SIZE\x00" and its bytes (ETag, the tree's oid)
//	"commit HEX"     a Hub that names neither: the pinned commit, which
//	                 fixes the bytes as well
//
// so that a verifier can check the bytes it fetched against the first two.
func (b *Backend) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	commit, err := b.Commit(ctx)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	a, err := b.get(ctx, http.MethodHead, commit, name, "")
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	defer a.resp.Body.Close()
	if a.resp.StatusCode != http.StatusOK && !a.redirected {
		return storage.ObjectInfo{}, b.statusError(a.resp, name)
	}
	if a.size < 0 {
		return storage.ObjectInfo{}, fmt.Errorf("%s: the hub gave no size (neither X-Linked-Size nor Content-Length)", storage.Object(b, name))
	}
	info := storage.ObjectInfo{Size: a.size, Version: a.version(commit)}
	if a.lfs && isSHA256(a.oid) {
		// An LFS file's oid is the SHA-256 of its bytes: what the disk
		// cache checks a whole copy against. A git blob id hashes a header
		// with the bytes, so other files publish nothing checkable.
		info.Checksum = storage.Checksum{Algorithm: storage.SHA256, Sum: strings.ToLower(a.oid)}
	}
	return info, nil
}

// isSHA256 reports whether s is a SHA-256 digest in hex.
func isSHA256(s string) bool { return isHex(s, 64) }

// isHex reports whether s is n hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// answer is what the Hub said of one object: the response that carries
// its bytes (after redirects), and the identity its first answer gave.
type answer struct {
	resp       *http.Response
	redirected bool   // the Hub's first answer was a redirect (an LFS file)
	oid        string // X-Linked-Etag, else ETag, unquoted; "" when neither
	lfs        bool   // the oid is an LFS SHA-256
	size       int64  // X-Linked-Size, else Content-Length; -1 when neither
}

// version is the ObjectInfo.Version the answer names (see Stat).
func (a *answer) version(commit string) string {
	switch {
	case a.oid == "":
		return "commit " + commit
	case a.lfs:
		return "sha256 " + a.oid
	default:
		return "git-blob " + a.oid
	}
}

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 10

// get makes method's request for the named object at commit and follows
// its redirects, but for a HEAD whose redirect names the object's
// identity (an LFS file: X-Linked-Etag, X-Linked-Size). A status the
// caller must judge (416, ...) is the answer; an error status is an error.
// The caller closes the answer's body.
//
// An LFS file's redirect is remembered for redirectTTL, so the reads that
// follow (a shard's header hops, its records) go straight to its storage
// host: one round trip each instead of two. A storage host that refuses
// a remembered URL (expired, say) sends the request back to the Hub; one
// that is busy (429, 408, 5xx) is a transient error with its
// Retry-After, and the URL is used again after the wait.
func (b *Backend) get(ctx context.Context, method, commit, name, rng string) (*answer, error) {
	if method == http.MethodGet {
		if a, err := b.getRemembered(ctx, name, rng); a != nil || err != nil {
			return a, err
		}
	}
	u := b.fileURL(commit, name)
	a := &answer{size: -1}
	for hop := 0; ; hop++ {
		resp, err := b.send(ctx, method, u, rng)
		if err != nil {
			return nil, err
		}
		hub := sameOrigin(u, b.endpoint)
		if hub && a.oid == "" {
			a.identify(resp)
		}
		if a.size < 0 && method == http.MethodHead && resp.StatusCode == http.StatusOK && resp.ContentLength >= 0 {
			// A redirect that named no size: the storage host's answer does.
			a.size = resp.ContentLength
		}
		if !isRedirect(resp.StatusCode) {
			if resp.StatusCode >= 400 && resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
				defer resp.Body.Close()
				if hub {
					return nil, b.statusError(resp, name)
				}
				return nil, b.storageError(resp, name)
			}
			a.resp = resp
			return a, nil
		}
		a.redirected = true
		loc, err := resp.Location()
		if err == nil && hub && a.lfs && a.size >= 0 {
			b.remember(name, loc, a)
		}
		if method == http.MethodHead && a.lfs && a.size >= 0 {
			a.resp = resp
			return a, nil
		}
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: redirect without a location: %w", storage.Object(b, name), err)
		}
		if hop+1 >= maxRedirects {
			return nil, fmt.Errorf("%s: more than %d redirects", storage.Object(b, name), maxRedirects)
		}
		u = loc
	}
}

// redirectTTL is how long an LFS file's redirect is used again: well
// within the life of the Hub's signed storage URLs (an hour), and a
// refused one is asked for again anyway.
const redirectTTL = 10 * time.Minute

// maxRedirectsKept bounds the redirects a Backend remembers (a few
// hundred bytes each).
const maxRedirectsKept = 4096

// redirect is an LFS file's storage URL, and the identity the Hub gave
// with it.
type redirect struct {
	url  *url.URL
	oid  string
	size int64
	at   time.Time
}

// remember keeps an LFS file's redirect at the pinned commit.
func (b *Backend) remember(name string, loc *url.URL, a *answer) {
	b.redirMu.Lock()
	defer b.redirMu.Unlock()
	if b.redirects == nil || len(b.redirects) >= maxRedirectsKept {
		// Bounded: a dataset of very many files starts over, and its next
		// reads ask the Hub again.
		b.redirects = map[string]redirect{}
	}
	b.redirects[name] = redirect{url: loc, oid: a.oid, size: a.size, at: time.Now()}
}

// getRemembered reads the named LFS file from the storage URL its last
// redirect gave, when there is one that is fresh: the answer, or nil (and
// no error) when the Hub must be asked (none, stale, or refused by the
// storage host).
func (b *Backend) getRemembered(ctx context.Context, name, rng string) (*answer, error) {
	b.redirMu.Lock()
	r, ok := b.redirects[name]
	if ok && time.Since(r.at) > redirectTTL {
		delete(b.redirects, name)
		ok = false
	}
	b.redirMu.Unlock()
	if !ok {
		return nil, nil
	}
	resp, err := b.send(ctx, http.MethodGet, r.url, rng)
	if err != nil {
		return nil, err
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		// The host is busy, the URL is fine: wait as it asks (its
		// Retry-After), then use the URL again.
		defer resp.Body.Close()
		return nil, b.storageError(resp, name)
	case code >= 300 && code != http.StatusRequestedRangeNotSatisfiable:
		// Expired or refused (403, 400, 404...): a new redirect.
		resp.Body.Close()
		b.redirMu.Lock()
		delete(b.redirects, name)
		b.redirMu.Unlock()
		return nil, nil
	}
	return &answer{resp: resp, redirected: true, oid: r.oid, lfs: true, size: r.size}, nil
}

// identify reads the object's identity from an answer of the Hub: an LFS
// file's redirect names it in X-Linked-Etag and X-Linked-Size, any other
// file's answer in ETag and Content-Length.
func (a *answer) identify(resp *http.Response) {
	h := resp.Header
	if etag := h.Get("X-Linked-Etag"); etag != "" {
		a.oid, a.lfs = unquote(etag), true
	} else if !isRedirect(resp.StatusCode) {
		a.oid = unquote(h.Get("ETag"))
	}
	if s, err := strconv.ParseInt(h.Get("X-Linked-Size"), 10, 64); err == nil && s >= 0 {
		a.size = s
	} else if resp.StatusCode == http.StatusOK && resp.ContentLength >= 0 {
		a.size = resp.ContentLength
	}
}

// unquote strips an entity tag's weakness mark and quotes.
func unquote(etag string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(etag), "W/"), `"`)
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// body is an object's stream: it stops when its context is done, and
// marks a connection lost mid-stream as transient.
type body struct {
	rc     io.ReadCloser
	ctx    context.Context
	object string
	off    int64 // offset of the next byte
}

func (r *body) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.rc.Read(p)
	r.off += int64(n)
	switch {
	case err == nil || err == io.EOF:
		return n, err
	case r.ctx.Err() != nil:
		return n, r.ctx.Err()
	}
	return n, storage.Transient(fmt.Errorf("%s: connection lost at byte %d: %w", r.object, r.off, unexpectedEOF(err)))
}

// unexpectedEOF makes a body that ended early match io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	return fmt.Errorf("%w (%v)", io.ErrUnexpectedEOF, err)
}

func (r *body) Close() error { return r.rc.Close() }

// Package gcs is the storage backend for a dataset under a Google Cloud
// Storage prefix, read with the official client. It owns everything that
// knows GCS: the anonymous option, the credentials hint, the refusal of the
// client's own retries and resumes (retries are storage/retry's), and the
// classification of googleapi status codes (408, 429, 5xx) and network
// faults as transient.
//
// It registers the URL scheme "gs" ("gs://bucket/prefix"). It imports only
// package storage of oxefs.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptrace"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	gstorage "cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/oxefs/oxefs/storage"
)

func init() { storage.Register("gs", Open) }

// Backend is a dataset directory under a GCS prefix. Credentials come from
// the environment (application default credentials) unless it is
// anonymous; STORAGE_EMULATOR_HOST is honoured by the client.
type Backend struct {
	client    *gstorage.Client
	bucket    string
	prefix    string
	anonymous bool   // reads without credentials
	emulator  string // STORAGE_EMULATOR_HOST when set: the endpoint read instead of GCS
}

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Explainer = (*Backend)(nil)
	_ storage.Versioner = (*Backend)(nil)
)

// Open connects to a location "gs://bucket/prefix".
func Open(ctx context.Context, location string, opts storage.Options) (storage.Backend, error) {
	bucket, prefix, err := storage.SplitBucket(location, "gs")
	if err != nil {
		return nil, err
	}
	return New(ctx, bucket, prefix, opts)
}

// New connects to gs://bucket/prefix.
func New(ctx context.Context, bucket, prefix string, opts storage.Options) (*Backend, error) {
	var copts []option.ClientOption
	if opts.Anonymous {
		copts = append(copts, option.WithoutAuthentication())
	}
	client, err := gstorage.NewClient(ctx, copts...)
	if err != nil {
		if !opts.Anonymous {
			err = withCredentialsHint(err)
		}
		return nil, fmt.Errorf("gs://%s/%s: %w", bucket, prefix, err)
	}
	return NewWithClientOptions(client, bucket, prefix, opts), nil
}

// NewWithClient reads gs://bucket/prefix through an existing client.
// Retries are storage/retry's, so they are counted, logged and bounded in
// one place: the client's retry policy is set to RetryNever, which makes
// every request a single attempt, and Open stops the HTTP reader's own
// resume after a broken body (see Open).
func NewWithClient(client *gstorage.Client, bucket, prefix string) *Backend {
	return NewWithClientOptions(client, bucket, prefix, storage.Options{})
}

// NewWithClientOptions is NewWithClient for a client made with opts (an
// anonymous client gets no credentials hint).
func NewWithClientOptions(client *gstorage.Client, bucket, prefix string, opts storage.Options) *Backend {
	client.SetRetry(gstorage.WithPolicy(gstorage.RetryNever))
	return &Backend{client: client, bucket: bucket, prefix: prefix, anonymous: opts.Anonymous,
		emulator: os.Getenv("STORAGE_EMULATOR_HOST")}
}

// Location returns gs://bucket/prefix.
func (g *Backend) Location() string { return "gs://" + path.Join(g.bucket, g.prefix) }

func (g *Backend) object(name string) *gstorage.ObjectHandle {
	return g.client.Bucket(g.bucket).Object(path.Join(g.prefix, name))
}

// Open streams length bytes of the object from offset off (to its end when
// length < 0). Reads use the XML API (GET /BUCKET/OBJECT with a Range
// header); an offset at or past the end gives an empty stream, as a local
// file does. Reads stop when ctx is done.
//
// The client's HTTP reader (v1.70.0) reopens the object by itself when a body
// breaks mid-stream, whatever the retry policy, with no backoff and unseen by
// oxefs's counters. Open refuses that second request: a trace hook cancels
// the reader's context as the request asks for a connection (both the HTTP/1
// and HTTP/2 transports call it), so the read fails instead with a transient
// error matching io.ErrUnexpectedEOF and storage/retry resumes after its
// backoff. On a busy machine the refused request may still reach the server;
// the reader abandons it before any byte is read.
func (g *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return g.open(ctx, g.object(name), off, length)
}

// OpenVersion is Open of one generation of the object: version is what
// Stat returned ("generation G crc32c C"). The request names the generation
// (ObjectHandle.Generation), so GCS serves those bytes or none: a generation
// that was overwritten or deleted since is a 404, which OpenVersion reports
// as a *storage.VersionError (matching storage.ErrVersionGone, not
// fs.ErrNotExist).
func (g *Backend) OpenVersion(ctx context.Context, name, version string, off, length int64) (io.ReadCloser, error) {
	gen, err := parseGeneration(version)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", g.Location(), name, err)
	}
	rc, err := g.open(ctx, g.object(name).Generation(gen), off, length)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &storage.VersionError{Object: g.Location() + "/" + name, Version: version, Err: err}
	}
	return rc, err
}

// parseGeneration reads the generation out of a version that Stat made.
func parseGeneration(version string) (int64, error) {
	var gen int64
	var crc uint32
	if _, err := fmt.Sscanf(version, "generation %d crc32c %x", &gen, &crc); err != nil || gen <= 0 {
		return 0, fmt.Errorf("version %q is not a GCS generation", version)
	}
	return gen, nil
}

func (g *Backend) open(ctx context.Context, obj *gstorage.ObjectHandle, off, length int64) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	var opened atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		// Every request a reader makes after NewRangeReader returned is a
		// reopen.
		GetConn: func(string) {
			if opened.Load() {
				cancel(errReopen)
			}
		},
	})
	if length < 0 {
		length = -1
	}
	r, err := obj.NewRangeReader(ctx, off, length)
	if err != nil {
		cancel(nil)
		if ae, ok := errors.AsType[*googleapi.Error](err); ok && ae.Code == http.StatusRequestedRangeNotSatisfiable && off > 0 {
			return http.NoBody, nil
		}
		return nil, classify(err)
	}
	opened.Store(true)
	return &reader{r: r, ctx: ctx, cancel: cancel, off: off}, nil
}

// errReopen is the cancellation cause of a reader whose HTTP body broke.
var errReopen = errors.New("reopen refused")

// reader is an object stream that surfaces a broken body as an error.
type reader struct {
	r      *gstorage.Reader
	ctx    context.Context
	cancel context.CancelCauseFunc
	off    int64 // offset of the next byte
}

func (r *reader) Read(p []byte) (int, error) {
	// The client sees a cancelled context only once its transport closes
	// the connection, which it does asynchronously; until then bytes
	// already received would still be read. Stop here, as a local file
	// does.
	var n int
	err := r.ctx.Err()
	if err == nil {
		n, err = r.r.Read(p)
		r.off += int64(n)
	}
	switch {
	case err == nil || err == io.EOF:
		return n, err
	case errors.Is(context.Cause(r.ctx), errReopen):
		err = fmt.Errorf("connection lost at byte %d: %w", r.off, io.ErrUnexpectedEOF)
	case strings.Contains(err.Error(), "bad CRC on"):
		// The client's CRC32C check of a whole object (v1.70.0 returns a
		// plain error: "storage: bad CRC on read: got X, want Y").
		err = fmt.Errorf("%w: %w", storage.ErrChecksum, err)
	}
	return n, classify(err)
}

func (r *reader) Close() error {
	err := r.r.Close()
	r.cancel(nil)
	return err
}

// Stat identifies the object by its generation (which every upload
// changes) and its CRC32C, which it also publishes as the object's
// checksum (every GCS object has one, composite objects included).
func (g *Backend) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	attrs, err := g.object(name).Attrs(ctx)
	if err != nil {
		return storage.ObjectInfo{}, classify(err)
	}
	info := storage.ObjectInfo{
		Size:    attrs.Size,
		Version: fmt.Sprintf("generation %d crc32c %08x", attrs.Generation, attrs.CRC32C),
	}
	// The client reads a missing crc32c field as 0: an emulator that
	// publishes none must not make every copy look damaged. (A real CRC32C
	// of 0 over non-empty bytes, 1 object in 2^32, goes unchecked.)
	if attrs.CRC32C != 0 || attrs.Size == 0 {
		info.Checksum = storage.CRC32CChecksum(attrs.CRC32C)
	}
	return info, nil
}

// anonymousHint is the remedy for a public bucket read with credentials
// that are missing or refused.
const anonymousHint = "if the bucket is public, read it without credentials: " +
	"`anonymous: true` on the dataset in the mix config, or --anonymous for inspect"

// Explain adds the anonymous remedy to credentials refused (HTTP 401 or
// 403) by a backend that reads with credentials, and says which endpoint
// to check when the connection itself fails (refused, unreachable, timed
// out): the emulator of STORAGE_EMULATOR_HOST when it is set, else GCS.
func (g *Backend) Explain(err error) error {
	if ae, ok := errors.AsType[*googleapi.Error](err); ok && !g.anonymous &&
		(ae.Code == http.StatusUnauthorized || ae.Code == http.StatusForbidden) {
		return fmt.Errorf("%w; %s", err, anonymousHint)
	}
	if storage.NetworkFault(err) {
		if g.emulator != "" {
			return fmt.Errorf("%w; STORAGE_EMULATOR_HOST=%s sends every gs:// read there: start the emulator at that address, or unset the variable to read GCS", err, g.emulator)
		}
		return fmt.Errorf("%w; check that this machine reaches storage.googleapis.com (network, firewall, proxy, DNS)", err)
	}
	return err
}

// withCredentialsHint adds the anonymous remedy to a client that could not
// be made for lack of credentials.
func withCredentialsHint(err error) error {
	return fmt.Errorf("%w; %s", err, anonymousHint)
}

// classify makes a missing object match fs.ErrNotExist and marks the
// errors worth retrying (see isTransient) as transient, after the
// server's Retry-After when it sent one.
func classify(err error) error {
	if errors.Is(err, gstorage.ErrObjectNotExist) || errors.Is(err, gstorage.ErrBucketNotExist) {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	if isTransient(err) {
		var wait time.Duration
		if ae, ok := errors.AsType[*googleapi.Error](err); ok {
			wait = storage.ParseRetryAfter(ae.Header.Get("Retry-After"))
		}
		return storage.TransientAfter(err, wait)
	}
	return err
}

// isTransient reports whether err is worth retrying: HTTP 408, 429 and 5xx,
// a connection reset, refused or aborted, an unexpected EOF, a timeout, a
// checksum mismatch (read again from the start: see storage.ErrChecksum),
// and whatever else the client retries by default (a lost HTTP/2
// connection, a closed idle connection). A missing object and a cancelled
// context are not.
func isTransient(err error) bool {
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, storage.ErrChecksum), storage.NetworkFault(err):
		return true
	}
	if ae, ok := errors.AsType[*googleapi.Error](err); ok {
		return ae.Code == 408 || ae.Code == 429 || (ae.Code >= 500 && ae.Code < 600)
	}
	return gstorage.ShouldRetry(err)
}

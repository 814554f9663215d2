package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptrace"
	"path"
	"strings"
	"sync/atomic"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// GCS is a dataset directory under a Google Cloud Storage prefix, read with
// the official client. Credentials come from the environment (application
// default credentials) unless the source is anonymous; STORAGE_EMULATOR_HOST
// is honoured by the client.
type GCS struct {
	client    *storage.Client
	bucket    string
	prefix    string
	anonymous bool // reads without credentials
}

var _ Source = (*GCS)(nil)

// NewGCS connects to gs://bucket/prefix.
func NewGCS(ctx context.Context, bucket, prefix string, opts OpenSourceOptions) (*GCS, error) {
	var copts []option.ClientOption
	if opts.Anonymous {
		copts = append(copts, option.WithoutAuthentication())
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		if !opts.Anonymous {
			err = withCredentialsHint(err)
		}
		return nil, fmt.Errorf("gs://%s/%s: %w", bucket, prefix, err)
	}
	g := NewGCSWithClient(client, bucket, prefix)
	g.anonymous = opts.Anonymous
	return g, nil
}

// NewGCSWithClient reads gs://bucket/prefix through an existing client.
// Retries are oxefs's own (see Fetcher), so they are counted, logged and
// bounded in one place: the client's retry policy is set to RetryNever,
// which makes every request a single attempt, and Open stops the HTTP
// reader's own resume after a broken body (see Open).
func NewGCSWithClient(client *storage.Client, bucket, prefix string) *GCS {
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	return &GCS{client: client, bucket: bucket, prefix: prefix}
}

// URI returns gs://bucket/prefix.
func (g *GCS) URI() string { return "gs://" + path.Join(g.bucket, g.prefix) }

func (g *GCS) object(name string) *storage.ObjectHandle {
	return g.client.Bucket(g.bucket).Object(path.Join(g.prefix, name))
}

// Open streams the object from offset off. Reads use the XML API
// (GET /BUCKET/OBJECT with "Range: bytes=off-"); an offset at or past the end
// gives an empty stream, as a local file does. Reads stop when ctx is done.
//
// The client's HTTP reader (v1.70.0) reopens the object by itself when a body
// breaks mid-stream, whatever the retry policy, with no backoff and unseen by
// oxefs's counters. Open refuses that second request: a trace hook cancels
// the reader's context as the request asks for a connection (both the HTTP/1
// and HTTP/2 transports call it), so the read fails instead with an error
// matching io.ErrUnexpectedEOF and the Fetcher resumes after its backoff. On
// a busy machine the refused request may still reach the server; the reader
// abandons it before any byte is read.
func (g *GCS) Open(ctx context.Context, name string, off int64) (io.ReadCloser, error) {
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
	r, err := g.object(name).NewRangeReader(ctx, off, -1)
	if err != nil {
		cancel(nil)
		if ae, ok := errors.AsType[*googleapi.Error](err); ok && ae.Code == http.StatusRequestedRangeNotSatisfiable && off > 0 {
			return http.NoBody, nil
		}
		return nil, gcsError(err)
	}
	opened.Store(true)
	return &gcsReader{r: r, ctx: ctx, cancel: cancel, off: off}, nil
}

// errReopen is the cancellation cause of a reader whose HTTP body broke.
var errReopen = errors.New("reopen refused")

// gcsReader is an object stream that surfaces a broken body as an error.
type gcsReader struct {
	r      *storage.Reader
	ctx    context.Context
	cancel context.CancelCauseFunc
	off    int64 // offset of the next byte
}

func (r *gcsReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.off += int64(n)
	switch {
	case err == nil || err == io.EOF:
	case errors.Is(context.Cause(r.ctx), errReopen):
		err = fmt.Errorf("connection lost at byte %d: %w", r.off, io.ErrUnexpectedEOF)
	case strings.Contains(err.Error(), "bad CRC on"):
		// The client's CRC32C check of a whole object (v1.70.0 returns a
		// plain error: "storage: bad CRC on read: got X, want Y").
		err = fmt.Errorf("%w: %w", errChecksum, err)
	}
	return n, err
}

func (r *gcsReader) Close() error {
	err := r.r.Close()
	r.cancel(nil)
	return err
}

// Size returns the object's size.
func (g *GCS) Size(ctx context.Context, name string) (int64, error) {
	attrs, err := g.object(name).Attrs(ctx)
	if err != nil {
		return 0, gcsError(err)
	}
	return attrs.Size, nil
}

// gcsError makes a missing object match fs.ErrNotExist.
func gcsError(err error) error {
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

package retry

import (
	"context"
	"errors"
	"io"
	"time"
)

// errReaderClosed ends the fetch behind a reader closed before its end.
var errReaderClosed = errors.New("reader closed")

// Open streams length bytes of the named object from off (to its end when
// length < 0) with Fetch's retries: after a transient fault the stream
// resumes at the offset already delivered, unseen by the reader, and a
// source given up on ends it with a *storage.UnavailableError. Time the
// caller spends between reads is not a stall.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return b.OpenVersion(ctx, name, "", off, length)
}

// OpenVersion is Open pinned to one version of the object (see
// storage.Versioner): every attempt, the resumes included, reads that
// version, and a version gone fails the stream at once with the backend's
// *storage.VersionError. With version "" it is Open.
func (b *Backend) OpenVersion(ctx context.Context, name, version string, off, length int64) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	r := &reader{pr: pr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_, err := b.fetch(ctx, name, version, off, length, pw, time.Now())
		pw.CloseWithError(err) // nil: io.EOF
	}()
	return r, nil
}

// reader is the read end of a fetch into a pipe.
type reader struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{} // closed when the fetch has returned
}

func (r *reader) Read(p []byte) (int, error) { return r.pr.Read(p) }

// Close ends the fetch and waits for it, so no attempt outlives the reader.
func (r *reader) Close() error {
	r.pr.CloseWithError(errReaderClosed)
	r.cancel()
	<-r.done
	return nil
}

package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnavailable matches a source that kept failing after every retry
// within the retry budget. Such errors are an *UnavailableError.
var ErrUnavailable = errors.New("source unavailable")

// UnavailableError is a read that failed after Attempts tries.
type UnavailableError struct {
	URI      string
	Name     string
	Attempts int
	// Damaged counts the attempts whose bytes failed the source's
	// checksum (ErrChecksum).
	Damaged int
	Err     error
}

func (e *UnavailableError) Error() string {
	switch {
	case e.Damaged > 0 && e.Damaged == e.Attempts:
		return fmt.Sprintf("%s/%s: giving up after %d attempts: the bytes came damaged on each try: %v", e.URI, e.Name, e.Attempts, e.Err)
	case e.Damaged > 0:
		return fmt.Sprintf("%s/%s: giving up after %d attempts (%d with damaged bytes): %v", e.URI, e.Name, e.Attempts, e.Damaged, e.Err)
	}
	return fmt.Sprintf("%s/%s: giving up after %d attempts: %v", e.URI, e.Name, e.Attempts, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// ErrChecksum marks bytes that failed a backend's end-to-end checksum:
// damaged in transit, worth reading again from the start (which a
// retrying copy into a Restarter does).
var ErrChecksum = errors.New("checksum mismatch")

// TransientError marks an error worth retrying: a backend wraps the
// faults it knows to pass (an HTTP 503, a reset connection, a timeout)
// with Transient. Its text is the wrapped error's.
type TransientError struct {
	Err error
	// RetryAfter, when positive, is how long the source asked to be left
	// alone before the next attempt (an HTTP Retry-After): a retry waits
	// at least that long.
	RetryAfter time.Duration
}

func (e *TransientError) Error() string { return e.Err.Error() }

func (e *TransientError) Unwrap() error { return e.Err }

// Transient marks err as worth retrying; nil stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err}
}

// TransientAfter marks err as worth retrying no sooner than after d (the
// source's Retry-After); nil stays nil.
func TransientAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err, RetryAfter: d}
}

// ParseRetryAfter reads an HTTP Retry-After header, as every HTTP source
// sends it with a 429 or 503: delay-seconds, or an HTTP date; 0 when it
// is absent, unreadable or already past.
func ParseRetryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		// A day is far past any fetch budget; larger values would overflow.
		return time.Duration(min(s, 86400)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		// A date is bounded as the seconds are: a far one (the fuzzer's
		// year 2100) is no reason to sleep for decades.
		return min(max(time.Until(t), 0), 24*time.Hour)
	}
	return 0
}

// RetryAfter returns the wait a transient err asks for before the next
// attempt (see TransientAfter), 0 when it asks none.
func RetryAfter(err error) time.Duration {
	if te, ok := errors.AsType[*TransientError](err); ok {
		return max(te.RetryAfter, 0)
	}
	return 0
}

// IsTransient reports whether err is marked worth retrying (see Transient).
// A cancelled context never is, whatever the marks.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	_, ok := errors.AsType[*TransientError](err)
	return ok
}

// NetworkFault reports whether err is a fault of the connection or the
// filesystem under a backend that a later attempt may not meet: a
// connection reset, refused or aborted, a broken pipe, an unreachable host
// or network, a timeout, a temporary DNS failure, an unexpected EOF. A
// missing object and a cancelled context are not. Backends use it to
// classify the errors they share; each adds its own protocol's (HTTP
// status codes, say).
func NetworkFault(err error) bool {
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.ENETDOWN):
		return true
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return de.IsTemporary || de.IsTimeout
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return true
	}
	return false
}

// ErrVersionGone matches a read of an object version that no longer exists:
// the object was rewritten or deleted after the version was taken. Such
// errors are a *VersionError. It is permanent (never transient) and does not
// match fs.ErrNotExist: what was derived from that version (an index, cached
// ranges) is stale, and the object may well exist in another version.
var ErrVersionGone = errors.New("object version gone")

// VersionError is a read of a version of an object that is gone.
type VersionError struct {
	Object  string // LOCATION/NAME
	Version string
	// Err is the backend's own error, for the message only: it is not
	// unwrapped, so that a 404 does not make the object look missing.
	Err error
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s: %s is gone (the object was rewritten or deleted since): %v", e.Object, e.Version, e.Err)
}

// Is makes errors.Is(err, ErrVersionGone) true.
func (e *VersionError) Is(target error) bool { return target == ErrVersionGone }

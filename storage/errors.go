package storage

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnavailable matches a source that kept failing after every retry
// within the retry budget. Such errors are an *UnavailableError.
var ErrUnavailable = errors.New("source unavailable")

// UnavailableError is a read that failed after Attempts tries.
type UnavailableError struct {
	URI      string
	Name     string
	Attempts int
	Err      error
}

func (e *UnavailableError) Error() string {
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
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }

func (e *TransientError) Unwrap() error { return e.Err }

// Transient marks err as worth retrying; nil stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err}
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

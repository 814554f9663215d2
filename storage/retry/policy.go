// Package retry is the storage decorator that rides out transient faults:
// it retries with jittered exponential backoff, resumes a broken read at
// the offset already delivered, abandons an attempt that stalls, gives up
// on a source after a budget of time without progress (an
// *storage.UnavailableError), and counts and logs every attempt.
//
// Which errors are transient is the wrapped backend's call (it marks them
// with storage.Transient); this package knows no protocol. It imports only
// package storage of oxefs.
package retry

import "time"

// Policy says how long a Backend keeps trying a failing source.
type Policy struct {
	// InitialBackoff is the wait after the first failed attempt. Each
	// further wait doubles, drawn with jitter from [w/2, w], up to
	// MaxBackoff. An attempt that delivered bytes restarts the doubling.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxElapsed bounds the time a fetch goes without progress, waits
	// included: counted from the start of the fetch, and again from the end
	// of every attempt that delivered bytes. When the next wait would
	// overrun it, the fetch fails with an *UnavailableError; as an attempt
	// that delivers nothing lasts at most StallTimeout, a dead source is
	// given up within MaxElapsed + StallTimeout. A download that keeps
	// moving is never abandoned, however large the file.
	MaxElapsed time.Duration
	// StallTimeout abandons an attempt that delivers no byte for this long,
	// the wait for the response included (a half-open connection never
	// fails by itself). A stall is a transient error.
	StallTimeout time.Duration
}

// DefaultPolicy suits GCS and network filesystems:
//   - 100ms first wait: most GCS faults (a reset connection, one 503) clear
//     at once, and a trainer should not pay the client library's 1s for them;
//   - 10s largest wait: reached after seven doublings, so a 429 or a run of
//     503s backs off as GCS asks, while a source that recovers is noticed
//     within seconds; the jitter spreads the daemons of a cluster;
//   - 2min without progress: rides out a regional blip, yet a reader gets
//     EIO for its batch rather than a silent hang;
//   - 30s stall: GCS sends the first byte in well under a second and rarely
//     pauses for more than a few; nothing for 30s is a dead connection.
func DefaultPolicy() Policy {
	return Policy{
		InitialBackoff: 100 * time.Millisecond,
		MaxBackoff:     10 * time.Second,
		MaxElapsed:     2 * time.Minute,
		StallTimeout:   30 * time.Second,
	}
}

// WithDefaults fills the fields that are not positive from DefaultPolicy.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = d.MaxElapsed
	}
	if p.StallTimeout <= 0 {
		p.StallTimeout = d.StallTimeout
	}
	return p
}

// MemoWindow is how long a failure that gave up is worth remembering (see
// diskcache.Options.FailMemo): MaxBackoff, the longest a Backend waits
// between two attempts, so a recovered source is noticed as soon as
// continued retries would have noticed it; at most MaxElapsed.
func (p Policy) MemoWindow() time.Duration {
	p = p.WithDefaults()
	return min(p.MaxBackoff, p.MaxElapsed)
}

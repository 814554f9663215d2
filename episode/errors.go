package episode

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCorrupt matches every error about bad bytes in a dataset: a checksum
// mismatch, a truncated record, a missing or malformed feature. Such errors
// are a *CorruptError.
var ErrCorrupt = errors.New("corrupt data")

// ErrMissingShard matches a *CorruptError for an episode whose shard is not
// there although the dataset's metadata lists it. It does not match
// fs.ErrNotExist: the episode is listed, so a reader must never see "no such
// file" for it.
var ErrMissingShard = errors.New("shard missing")

// ErrUnknownFeature matches an *UnknownFeatureError.
var ErrUnknownFeature = errors.New("unknown feature")

// CorruptError names the bad record. Record is the record's index within its
// shard, or -1 when the damage is in the shard's framing before any record
// could be located.
type CorruptError struct {
	Dataset string
	Shard   string
	Record  int
	Err     error
}

func (e *CorruptError) Error() string {
	if e.Record < 0 {
		return fmt.Sprintf("dataset %s shard %s: %v", e.Dataset, e.Shard, e.Err)
	}
	return fmt.Sprintf("dataset %s shard %s record %d: %v", e.Dataset, e.Shard, e.Record, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// UnknownFeatureError is a feature key the dataset does not declare. Valid
// lists the keys that would fit.
type UnknownFeatureError struct {
	Dataset string
	Key     string
	Valid   []string
}

func (e *UnknownFeatureError) Error() string {
	return fmt.Sprintf("dataset %s has no feature %q (valid: %s)", e.Dataset, e.Key, JoinLimited(e.Valid, 40))
}

// Is makes errors.Is(err, ErrUnknownFeature) true.
func (e *UnknownFeatureError) Is(target error) bool { return target == ErrUnknownFeature }

// JoinLimited joins the first n strings with ", " and counts the rest.
func JoinLimited(s []string, n int) string {
	var b strings.Builder
	for i, x := range s {
		if i == n {
			fmt.Fprintf(&b, ", ... %d more", len(s)-n)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}

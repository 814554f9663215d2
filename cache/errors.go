package cache

import (
	"errors"
	"fmt"
)

// ErrCorrupt matches every error about bad bytes in a dataset: a CRC
// mismatch, a truncated record, a record that is not a tf.train.Example, a
// missing or malformed feature. Such errors are a *CorruptError.
var ErrCorrupt = errors.New("corrupt data")

// ErrMissingShard matches a *CorruptError for an episode whose shard is
// not there: deleted from a local dataset, or an object missing from the
// bucket although dataset_info.json lists it. It does not match
// fs.ErrNotExist: the episode is listed, so a reader must never see
// "no such file" for it.
var ErrMissingShard = errors.New("shard missing")

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

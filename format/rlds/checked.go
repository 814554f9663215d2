package rlds

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxefs/oxefs/store"
)

// checkedRecords remembers, for the daemon's life, which records of which
// shard files have passed their data CRC, so that a record loaded again
// (an episode evicted from the RAM cache and asked for again) is read
// without computing the CRC of its megabytes once more. A file is known by
// its identity (fileID): a local shard rewritten in place, or a disk cache
// file fetched again, is a new identity, and its records are checked
// again. A damaged shard is still found on its first load in a daemon; a
// disk cache file damaged in place after a record of it passed is not
// (it was checked as it arrived; see identify).
//
// Memory: one bit per record of each file seen, at most maxCheckedFiles
// files (past that the set starts over: records are then checked again).
type checkedRecords struct {
	mu    sync.Mutex
	files map[fileID][]uint64 // guarded by mu: bit r set: record r passed

	// Skipped counts loads that skipped the data CRC.
	Skipped atomic.Int64
}

// maxCheckedFiles bounds the files checkedRecords remembers.
const maxCheckedFiles = 1 << 16

// settled is how long ago a file must have last changed for its checks to
// be remembered: file timestamps are only as fine as the kernel's clock
// tick, so a file written again within the same tick as a check could
// keep its identity. A file changed more recently is checked on every
// load.
var settled = 2 * time.Second

// fileID identifies one version of a file: a rewrite in place changes its
// change time (which no call can set back) if not its size or
// modification time; a file made anew has a birth time of its own, even
// where its inode number is reused.
type fileID struct {
	dev, ino            uint64
	size                int64
	mtime, ctime, btime int64 // nanoseconds; btime 0 for local shards
}

// identify returns f's identity, and false when f has none (not a file, or
// a disk cache file on a file system without birth times) or changed too
// recently (see settled) for a check of it to be remembered.
func identify(f shardFile) (fileID, bool) {
	if rf, ok := f.(*recordFile); ok {
		f = rf.shardFile // a record fetched alone into the disk cache
	}
	id, ok := fileIDOf(f)
	if !ok {
		return fileID{}, false
	}
	if _, cached := f.(*store.CacheEntry); cached {
		// A disk cache file was checked as it arrived and is published by
		// rename, never written again in place (an object fetched again
		// is a new file); the cache sets its times on every open (its LRU
		// order), so it is known by device, inode, size and birth time.
		id.mtime, id.ctime = 0, 0
		return id, id.btime != 0
	}
	id.btime = 0
	if time.Now().UnixNano()-max(id.mtime, id.ctime) < int64(settled) {
		return fileID{}, false
	}
	return id, true
}

// passed reports whether record rec of the file id passed its data CRC.
func (c *checkedRecords) passed(id fileID, rec int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	bits := c.files[id]
	return rec >= 0 && rec/64 < len(bits) && bits[rec/64]&(1<<(rec%64)) != 0
}

// pass notes that record rec of the file id passed its data CRC.
func (c *checkedRecords) pass(id fileID, rec int) {
	if rec < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	bits, ok := c.files[id]
	if c.files == nil || (!ok && len(c.files) >= maxCheckedFiles) {
		c.files = make(map[fileID][]uint64)
	}
	if need := rec/64 + 1; len(bits) < need {
		bits = append(bits, make([]uint64, need-len(bits))...)
	}
	bits[rec/64] |= 1 << (rec % 64)
	c.files[id] = bits
}

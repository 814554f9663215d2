package diskcache

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"github.com/oxefs/oxefs/internal/bytesize"
)

// freeBytes is the space an unprivileged writer may still use on the
// filesystem holding dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// clampBudget lowers a disk budget that the cache's filesystem cannot hold
// to what it can: the free space plus what the cache already holds (which
// eviction can reuse). It warns when it does, and fails when the cache can
// hold nothing at all.
func clampBudget(dir string, budget int64, held int64, log *slog.Logger) (int64, error) {
	free, err := freeBytes(dir)
	if err != nil {
		log.Warn("disk cache: cannot tell the free space; --disk is not checked against it", "dir", dir, "err", err)
		return budget, nil
	}
	room := free + held
	if budget <= room {
		return budget, nil
	}
	if room <= 0 {
		return 0, fmt.Errorf("disk cache %s: the filesystem is full (0 bytes free); free space there or pass another --cache-dir", dir)
	}
	log.Warn("--disk is larger than the cache filesystem can hold: the disk cache is bounded by the free space instead",
		"dir", dir, "disk", bytesize.Format(budget), "free", bytesize.Format(free), "cached", bytesize.Format(held), "using", bytesize.Format(room))
	return room, nil
}

// heldBytes is the size of the complete files in the cache.
func (c *Cache) heldBytes() int64 {
	_, total, err := c.scan()
	if err != nil {
		return 0
	}
	return total
}

// makeRoomOnDisk handles a fill that ran out of space on the filesystem
// (ENOSPC) although the budget allowed it: other files, or other processes'
// temp files, took the space. It evicts least recently used files until
// size bytes are free, as far as files not in use allow, and reports the
// free space then.
func (c *Cache) makeRoomOnDisk(size int64, keep string) (int64, error) {
	free, err := freeBytes(c.dir)
	if err != nil {
		return 0, err
	}
	short := size - free
	if short <= 0 {
		return free, nil
	}
	if _, err := c.evictLRU(keep, func(_, removed int64) bool { return removed < short }); err != nil {
		return 0, err
	}
	return freeBytes(c.dir)
}

// errNoSpace names a shard that does not fit on the cache filesystem.
func (c *Cache) errNoSpace(key string, size, free int64, err error) error {
	what := fmt.Sprintf("%d bytes", size)
	if size <= 0 {
		what = "of unknown size"
	}
	return fmt.Errorf("disk cache %s (%s) does not fit on the filesystem of %s: %s free after evicting every cached file not in use "+
		"(--disk budget %s); free space there or pass another --cache-dir: %w",
		key, what, c.dir, bytesize.Format(free), bytesize.Format(c.budget), err)
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// resetTemp empties a temp file for a second attempt.
func resetTemp(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, 0)
	return err
}

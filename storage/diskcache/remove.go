package diskcache

import (
	"errors"
	"io/fs"
	"os"
)

// Remove drops key from the cache, when it is there: its bytes are stale.
// A reader that has it open keeps reading the old bytes through its
// descriptor; the next open fills it again.
func (c *Cache) Remove(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.Remove(c.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

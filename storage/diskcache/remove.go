package diskcache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// removeTree drops every entry under the directory key. Lock files stay:
// another process may hold one.
func (c *Cache) removeTree(key string) error {
	root := c.path(key)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("disk cache: remove %s: %w", key, err)
	}
	return nil
}

// Demand registers a reader waiting on the source outside a fill (reading
// headers to index an object, say): until done is called, prefetch fills
// pause between writes as they do for readers waiting on fills.
func (c *Cache) Demand() (done func()) {
	c.demand.enter()
	var once sync.Once
	return func() { once.Do(c.demand.leave) }
}

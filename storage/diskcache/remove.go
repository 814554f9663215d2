package diskcache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// Demand registers a reader of ctx's priority (see WithPriority) waiting
// on the source outside a fill (reading headers to index an object, say):
// until done is called, the fills less urgent than it pause, as they do
// for readers waiting on fills.
func (c *Cache) Demand(ctx context.Context) (done func()) {
	return c.gate.enter(PriorityOf(ctx))
}

package view

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
)

// batchCacheSize is how many batches /api/batch keeps described.
const batchCacheSize = 4

// batchCache keeps the answers /api/batch gave last, as JSON. A batch is a
// pure function of the mount's config, seed and N, so the answer for
// (info.json, rank, view, N) never changes; a page refreshed beside
// training asks again and again for the batch it shows, and each read of
// its arrays through the mount would have the daemon build that batch
// again once its memory let it go.
type batchCache struct {
	mu   sync.Mutex
	keys []batchKey                   // guarded by mu: least recently used first
	vals map[batchKey]json.RawMessage // guarded by mu
}

type batchKey struct {
	info [32]byte // sha256 of the rank's info.json
	rank int
	view string
	n    int64
}

func newBatchCache() *batchCache {
	return &batchCache{vals: map[batchKey]json.RawMessage{}}
}

func keyOf(r rankDir, view string, n int64) batchKey {
	return batchKey{info: sha256.Sum256(r.raw), rank: r.Rank, view: viewName(view), n: n}
}

// get returns the answer for k, or nil.
func (c *batchCache) get(k batchKey) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vals[k]
	if ok {
		c.touch(k)
	}
	return v
}

// put keeps v as the answer for k, letting the least recently used go.
func (c *batchCache) put(k batchKey, v json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.vals[k]; ok {
		c.touch(k)
		return
	}
	c.vals[k] = v
	c.keys = append(c.keys, k)
	if len(c.keys) > batchCacheSize {
		delete(c.vals, c.keys[0])
		c.keys = c.keys[1:]
	}
}

// touch moves k to the most recently used end.
func (c *batchCache) touch(k batchKey) {
	for i, x := range c.keys {
		if x == k {
			c.keys = append(append(c.keys[:i:i], c.keys[i+1:]...), k)
			return
		}
	}
}

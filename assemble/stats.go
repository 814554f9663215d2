package assemble

import (
	"sync"
	"sync/atomic"
)

// Stats counts what the builders of one view did, for stats.json.
type Stats struct {
	// FramesDecoded counts the frames step samples decoded (package
	// steps: each once per batch, whichever samples use it).
	FramesDecoded atomic.Int64
	// FramesCompressed counts the frames served as their JPEG bytes for
	// the trainer to decode (decode: gpu), each once per batch.
	FramesCompressed atomic.Int64
	// Samples counts samples built per dataset (index of the datasets
	// given to New).
	Samples []atomic.Int64

	mu            sync.Mutex
	substitutions map[string]int64  // guarded by mu: by reason kind
	bad           map[string]string // guarded by mu: episode id -> reason, first seen
	badOrder      []string          // guarded by mu: episode ids in the order seen
	noEpisode     map[string]string // guarded by mu: dataset -> why none of its episodes can be used
}

// NewStats counts for datasets datasets.
func NewStats(datasets int) *Stats {
	return &Stats{
		Samples:       make([]atomic.Int64, datasets),
		substitutions: map[string]int64{},
		bad:           map[string]string{},
		noEpisode:     map[string]string{},
	}
}

// unusable records that no episode of dataset can be used, and why.
func (s *Stats) unusable(dataset string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noEpisode[dataset] = err.Error()
}

// Unusable returns the datasets none of whose episodes can be used, with
// the reason: their samples fail.
func (s *Stats) Unusable() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.noEpisode))
	for k, v := range s.noEpisode {
		out[k] = v
	}
	return out
}

// maxBadListed bounds the bad episodes stats.json lists by name.
const maxBadListed = 1000

// substituted records that a unit of episode id was replaced because of
// err. It reports whether this episode is new (to be logged once).
func (s *Stats) substituted(kind, id string, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.substitutions[kind]++
	if _, seen := s.bad[id]; seen {
		return false
	}
	if len(s.badOrder) < maxBadListed {
		s.bad[id] = err.Error()
		s.badOrder = append(s.badOrder, id)
	}
	return true
}

// Substitutions returns counts by reason and the bad episodes with the
// first error seen for each (dataset/split/shard/record: reason).
func (s *Stats) Substitutions() (map[string]int64, []BadEpisode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := make(map[string]int64, len(s.substitutions))
	for k, v := range s.substitutions {
		counts[k] = v
	}
	bad := make([]BadEpisode, len(s.badOrder))
	for i, id := range s.badOrder {
		bad[i] = BadEpisode{Episode: id, Reason: s.bad[id]}
	}
	return counts, bad
}

// BadEpisode is an episode whose units were substituted.
type BadEpisode struct {
	Episode string `json:"episode"`
	Reason  string `json:"reason"`
}

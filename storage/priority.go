package storage

import (
	"context"
	"math"
)

// Reads from a source have a priority, carried by their context: lower is
// more urgent. The mount gives a batch's reads the batch's index, so the
// batch a reader waits for comes before those built ahead of it, and
// whole-shard prefetches have Background, below every reader. The disk
// cache pauses fills for more urgent readers, and a rate limit gives the
// link to the most urgent reads first (storage/ratelimit).

// Background is the priority of prefetches: below every reader's.
const Background int64 = math.MaxInt64

type priorityKey struct{}

// WithPriority returns ctx carrying the priority p for the reads made
// under it.
func WithPriority(ctx context.Context, p int64) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// WithPriorityFunc returns ctx carrying a priority that may change while
// the reads under it go on (a download whose priority rises when a more
// urgent reader waits for it): PriorityOf calls p each time.
func WithPriorityFunc(ctx context.Context, p func() int64) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityOf returns the priority WithPriority or WithPriorityFunc set on
// ctx, or 0, the most urgent.
func PriorityOf(ctx context.Context) int64 {
	switch p := ctx.Value(priorityKey{}).(type) {
	case int64:
		return p
	case func() int64:
		return p()
	}
	return 0
}

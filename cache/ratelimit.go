package cache

import (
	"context"
	"sync"
	"time"
)

// RateLimiter caps the bytes per second fetched from sources (the mount's
// --max-fetch-rate), shared by every fetch. It is a token bucket holding at
// most one second of tokens, so a burst never exceeds the rate for long.
type RateLimiter struct {
	rate float64 // bytes per second

	mu     sync.Mutex
	tokens float64   // guarded by mu; negative: bytes owed
	last   time.Time // guarded by mu
}

// NewRateLimiter allows bytesPerSecond; zero or less means no limit (nil).
func NewRateLimiter(bytesPerSecond int64) *RateLimiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &RateLimiter{rate: float64(bytesPerSecond), tokens: float64(bytesPerSecond), last: time.Now()}
}

// Wait accounts n bytes just received and sleeps until the rate allows
// them, or ctx ends. A nil limiter never waits.
func (l *RateLimiter) Wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	l.tokens = min(l.tokens+now.Sub(l.last).Seconds()*l.rate, l.rate)
	l.last = now
	l.tokens -= float64(n)
	owed := -l.tokens
	l.mu.Unlock()
	if owed <= 0 {
		return nil
	}
	return sleep(ctx, time.Duration(owed/l.rate*float64(time.Second)))
}

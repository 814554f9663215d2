// Package cachekit builds the disk caches that tests of the formats put
// under a store (store.Options.Disk), so that those tests need not import
// storage/diskcache: formats read through package store and never name the
// cache. It is imported only from _test.go files. It lives apart from
// package testkit, which the disk cache's own tests import.
package cachekit

import (
	"log/slog"
	"testing"
	"time"

	"github.com/oxefs/oxefs/storage/diskcache"
)

// Disk opens a disk cache under dir bounded by budget bytes, remembering
// failed fetches for memo (zero: not at all); log may be nil. The test
// fails when it cannot be opened.
func Disk(t testing.TB, dir string, budget int64, log *slog.Logger, memo time.Duration) *diskcache.Cache {
	t.Helper()
	c, err := diskcache.Open(dir, budget, log, memo)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

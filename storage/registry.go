package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Options configures the backend that Open makes.
type Options struct {
	// Anonymous reads a public bucket without credentials.
	Anonymous bool
}

// Opener makes the backend for one location of its scheme: the whole
// location as given ("gs://bucket/prefix"), or a local path for LocalScheme.
type Opener func(ctx context.Context, location string, opts Options) (Backend, error)

// LocalScheme is the scheme under which the local-directory backend
// registers: Open gives it every location without "://".
const LocalScheme = "file"

var (
	registryMu sync.Mutex
	registry   = map[string]Opener{} // guarded by registryMu: by scheme
)

// Register makes Open accept locations of scheme ("gs" for
// "gs://bucket/prefix"). A backend package calls it from an init function.
// Registering a scheme twice panics.
func Register(scheme string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[scheme]; dup {
		panic("storage: scheme " + scheme + " registered twice")
	}
	registry[scheme] = open
}

// Open returns the backend for a dataset location, chosen by its URL
// scheme; a location without one is a local directory. An unknown scheme
// is an error that names the valid ones.
func Open(ctx context.Context, location string, opts Options) (Backend, error) {
	scheme, _, remote := strings.Cut(location, "://")
	if !remote {
		scheme = LocalScheme
	}
	registryMu.Lock()
	open, ok := registry[scheme]
	registryMu.Unlock()
	if !ok {
		if !remote {
			return nil, fmt.Errorf("source %q: no backend for local directories (import storage/local)", location)
		}
		return nil, fmt.Errorf("source %q: unsupported scheme %q (valid: %s)", location, scheme, validSchemes())
	}
	return open(ctx, location, opts)
}

// validSchemes lists the locations Open accepts: "gs://… or hf://… or a
// local directory" (each backend's own errors give its full form).
func validSchemes() string {
	registryMu.Lock()
	var valid []string
	local := false
	for s := range registry {
		if s == LocalScheme {
			local = true
			continue
		}
		valid = append(valid, s+"://…")
	}
	registryMu.Unlock()
	slices.Sort(valid)
	if local {
		valid = append(valid, "a local directory")
	}
	if len(valid) == 0 {
		return "none registered"
	}
	return strings.Join(valid, " or ")
}

// SplitBucket splits a location "SCHEME://bucket/prefix" of a bucket
// store into its bucket and its prefix (without surrounding slashes); a
// location of another scheme, or with no bucket, is an error naming it.
func SplitBucket(location, scheme string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(location, scheme+"://")
	if !ok {
		return "", "", fmt.Errorf("source %q: not a %s:// location", location, scheme)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("source %q: no bucket after %s://", location, scheme)
	}
	return bucket, strings.Trim(prefix, "/"), nil
}

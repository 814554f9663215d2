package format

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/oxefs/oxefs/storage"
)

// Format is one dataset format as the registry knows it.
type Format struct {
	// Name names the format in messages ("LeRobot", "RLDS").
	Name string
	// Probe reports whether src holds a dataset of this format. A probe
	// that cannot tell (the source does not answer) says false, and the
	// next format is tried. A nil Probe claims every source: that format
	// is the fallback, registered last, whose open errors say what a
	// dataset directory lacks.
	Probe func(ctx context.Context, src storage.Backend, env *Env) bool
	// Open opens the dataset at src; name, when not empty, overrides the
	// dataset's own name in ids and messages.
	Open func(ctx context.Context, name string, src storage.Backend, env *Env) (Dataset, error)
	// MissingOffline, when set, says what env's cache lacks to open src
	// offline as this format: a phrase ("metadata features.json"), or ""
	// when nothing is missing.
	MissingOffline func(src storage.Backend, env *Env) string
}

var (
	registryMu sync.Mutex
	registry   []Format // guarded by registryMu: in probe order
)

// Register adds a format; Open probes the formats in the order they were
// registered. Registering a name twice, or a format after the fallback
// (nil Probe), panics.
func Register(f Format) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, g := range registry {
		if g.Name == f.Name {
			panic("format: " + f.Name + " registered twice")
		}
		if g.Probe == nil {
			panic("format: " + f.Name + " registered after the fallback format " + g.Name)
		}
	}
	registry = append(registry, f)
}

// formats returns the registered formats, in probe order.
func formats() []Format {
	registryMu.Lock()
	defer registryMu.Unlock()
	return registry[:len(registry):len(registry)]
}

// Open opens the dataset at src in the first registered format whose probe
// claims it.
func Open(ctx context.Context, name string, src storage.Backend, env *Env) (Dataset, error) {
	fs := formats()
	for _, f := range fs {
		if f.Probe == nil || f.Probe(ctx, src, env) {
			return f.Open(ctx, name, src, env)
		}
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("dataset %s: no format registered (import format/formats)", src.Location())
	}
	return nil, fmt.Errorf("dataset %s: not a dataset of any format oxefs reads (%s)", src.Location(), names(fs))
}

// MissingOffline says what env's cache lacks to open src offline: "" when
// some format has everything, else what the fallback format lacks, and
// what each other format would ("metadata features.json (or, for a
// LeRobot dataset, its files and lerobot-offline.json)").
func MissingOffline(src storage.Backend, env *Env) string {
	var first string
	var others []string
	for _, f := range formats() {
		if f.MissingOffline == nil {
			continue
		}
		lack := f.MissingOffline(src, env)
		if lack == "" {
			return ""
		}
		if f.Probe == nil {
			first = lack
		} else {
			others = append(others, fmt.Sprintf("or, for a %s dataset, %s", f.Name, lack))
		}
	}
	if first == "" && len(others) > 0 {
		first, others = others[0], others[1:]
	}
	if len(others) == 0 {
		return first
	}
	return first + " (" + strings.Join(others, "; ") + ")"
}

func names(fs []Format) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return strings.Join(out, ", ")
}

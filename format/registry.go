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
	// Probe reports whether src holds a dataset of this format: true or
	// false when the source said (a file there, or missing), an error
	// when it could not be asked (it does not answer, its host is
	// unknown). Open stops at that error instead of trying the next
	// format, whose probe would meet the same outage and wait out a
	// second retry budget: opening a source has one bound. A nil Probe
	// claims every source: that format is the fallback, registered last,
	// whose open errors say what a dataset directory lacks.
	Probe func(ctx context.Context, src storage.Backend, env *Env) (bool, error)
	// Open opens the dataset at src; name, when not empty, overrides the
	// dataset's own name in ids and messages.
	Open func(ctx context.Context, name string, src storage.Backend, env *Env) (Dataset, error)
	// MissingOffline, when set, says what env's cache lacks to open src
	// offline as this format: a phrase ("metadata features.json"), or ""
	// when nothing is missing.
	MissingOffline func(src storage.Backend, env *Env) string
	// Synth, when set, writes synthetic datasets of this format for
	// `oxefs synth`.
	Synth func(ctx context.Context, opts SynthOptions) (SynthResult, error)
}

// Registry is a set of formats in probe order. The package's functions
// use the one registry that format/formats fills; tests make their own.
type Registry struct {
	mu      sync.Mutex
	formats []Format // guarded by mu: in probe order
}

// registry is the one that Register, Open and MissingOffline use.
var registry Registry

// Register adds a format to the registry; Open probes the formats in the
// order they were registered. A format package's registration (package
// format/formats) calls it from an init function. Registering a name
// twice, or a format after the fallback (nil Probe), panics.
func Register(f Format) { registry.Register(f) }

// Open opens the dataset at src in the first registered format whose probe
// claims it.
func Open(ctx context.Context, name string, src storage.Backend, env *Env) (Dataset, error) {
	return registry.Open(ctx, name, src, env)
}

// MissingOffline says what env's cache lacks to open src offline (see
// Registry.MissingOffline).
func MissingOffline(src storage.Backend, env *Env) string { return registry.MissingOffline(src, env) }

// Register adds f after the formats registered before it.
func (r *Registry) Register(f Format) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.formats {
		if g.Name == f.Name {
			panic("format: " + f.Name + " registered twice")
		}
		if g.Probe == nil {
			panic("format: " + f.Name + " registered after the fallback format " + g.Name)
		}
	}
	r.formats = append(r.formats, f)
}

// list returns the formats, in probe order.
func (r *Registry) list() []Format {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.formats[:len(r.formats):len(r.formats)]
}

// Open opens the dataset at src in the first format whose probe claims
// it; a probe that could not ask the source ends the open with its error.
func (r *Registry) Open(ctx context.Context, name string, src storage.Backend, env *Env) (Dataset, error) {
	fs := r.list()
	for _, f := range fs {
		if f.Probe == nil {
			return f.Open(ctx, name, src, env)
		}
		ok, err := f.Probe(ctx, src, env)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: looking for a %s dataset: %w", src.Location(), f.Name, err)
		}
		if ok {
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
func (r *Registry) MissingOffline(src storage.Backend, env *Env) string {
	var first string
	var others []string
	for _, f := range r.list() {
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

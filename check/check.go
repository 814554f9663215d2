// Package check reads a dataset's episodes and reports their defects:
// non-finite state and action values, timestamps that go backwards or
// stray from 1/fps, frozen cameras (a run of identical consecutive
// frames), episodes too short for the mix's chunk or offset, and episodes
// the format refuses (frame counts that disagree between the data table,
// the video and the metadata are such refusals); defects of whole files
// that the format finds (rows of the data that no episode owns, video
// files with a frame more or less than their episodes' rows), which the
// caller hands over as they are; plus the action autocorrelation by lag,
// and the chunk length it suggests. It knows episodes, not formats or
// storage: the caller loads the episodes (`oxefs check` through each
// dataset's Scan) and hands them over.
package check

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/oxefs/oxefs/episode"
)

// Defect kinds.
const (
	NonFinite  = "non_finite"   // NaN or ±Inf in an action or state value
	Timestamp  = "timestamp"    // not increasing, or a step off 1/fps
	Frozen     = "frozen"       // a camera's identical consecutive frames
	Short      = "short"        // fewer steps than the mix's chunk or offset needs
	Unreadable = "unreadable"   // the format refuses the episode (its reason says why)
	FrameCount = "frame_count"  // a camera's frames disagree with the episode's steps
	Orphan     = "orphaned_row" // a row of the data that no episode owns
)

// Spec says what to check in a dataset's episodes.
type Spec struct {
	ActionKeys []string
	StateKey   string
	// Cameras are the per-step image keys to check (all the dataset's).
	Cameras []string
	// TimestampKey is the per-step timestamp feature ("" when the dataset
	// has none, as RLDS); FPS the frame rate its steps should keep.
	TimestampKey string
	FPS          float64
	// MinSteps is the fewest steps an episode needs for the mix (its
	// chunk, or its offset plus one), and MinStepsWhy says which.
	MinSteps    int
	MinStepsWhy string
	// FrozenRun is the number of identical consecutive frames that make
	// a frozen camera (default 3).
	FrozenRun int
	// MaxLag is the largest lag of the autocorrelation (default 64).
	MaxLag int
}

// Defect is one problem of one episode, or of one file (File set).
type Defect struct {
	Kind    string `json:"kind"`
	Episode string `json:"episode"` // "" for a defect of a file that lies in no episode
	// File names the file of a defect found in a whole file (see Found).
	File   string `json:"file,omitempty"`
	Detail string `json:"detail"`
}

// Report is a dataset's result.
type Report struct {
	Name     string   `json:"name"`
	Split    string   `json:"split"`
	Episodes int      `json:"episodes"`
	Steps    int64    `json:"steps"`
	Defects  []Defect `json:"defects"`
	// ActionAutocorrelation[k] is the autocorrelation of the actions at
	// lag k, pooled over episodes, averaged over action dimensions.
	ActionAutocorrelation []float64 `json:"action_autocorrelation"`
	// SuggestedChunk is the largest lag at which the actions are still
	// correlated at 0.5 or more, plus one: the actions a policy could
	// predict from one observation.
	SuggestedChunk int      `json:"suggested_chunk"`
	Notes          []string `json:"notes,omitempty"`
}

// Checker accumulates one dataset's episodes; Add may be called from
// several goroutines.
type Checker struct {
	// constants
	name, split string
	spec        Spec

	mu    sync.Mutex
	eps   map[string]*episodeResult // guarded by mu: by episode id
	files []Defect                  // guarded by mu: see Found
	notes map[string]bool           // guarded by mu
}

type episodeResult struct {
	steps   int
	defects []Defect
	num     [][]float64 // [dim][lag] Σ x_t x_{t+k} of the centred actions
	den     []float64   // [dim] Σ x_t²
}

// New returns a Checker of dataset name's split.
func New(name, split string, spec Spec) *Checker {
	if spec.FrozenRun <= 1 {
		spec.FrozenRun = 3
	}
	if spec.MaxLag <= 0 {
		spec.MaxLag = 64
	}
	return &Checker{name: name, split: split, spec: spec, eps: map[string]*episodeResult{}, notes: map[string]bool{}}
}

// Refused records an episode the format could not load.
func (c *Checker) Refused(id string, err error) {
	kind := Unreadable
	if msg := err.Error(); strings.Contains(msg, "frame") || strings.Contains(msg, "video") || strings.Contains(msg, "timestamp") {
		kind = FrameCount
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eps[id] = &episodeResult{defects: []Defect{{Kind: kind, Episode: id, Detail: err.Error()}}}
}

// Found records a defect of a whole file, which the format found (a row
// no episode owns, a video with a frame too few): reported after the
// episodes' defects, in the order found.
func (c *Checker) Found(d Defect) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files = append(c.files, d)
}

func (c *Checker) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes[s] = true
}

// Add checks one episode.
func (c *Checker) Add(ep episode.Episode) error {
	id, L := ep.ID(), ep.Steps()
	r := &episodeResult{steps: L}
	bad := func(kind, format string, args ...any) {
		r.defects = append(r.defects, Defect{Kind: kind, Episode: id, Detail: fmt.Sprintf(format, args...)})
	}
	if c.spec.MinSteps > 0 && L < c.spec.MinSteps {
		bad(Short, "%d steps, fewer than the %d %s", L, c.spec.MinSteps, c.spec.MinStepsWhy)
	}
	var actions [][]float64 // [step][dim], the action keys concatenated
	for _, key := range c.spec.ActionKeys {
		v, per, err := values(ep, key)
		if err != nil {
			return err
		}
		if actions == nil {
			actions = make([][]float64, L)
		}
		for s := range L {
			if (s+1)*per <= len(v) {
				actions[s] = append(actions[s], v[s*per:(s+1)*per]...)
			}
		}
		nonFinite(v, per, key, bad)
	}
	if c.spec.StateKey != "" {
		v, per, err := values(ep, c.spec.StateKey)
		if err != nil {
			return err
		}
		nonFinite(v, per, c.spec.StateKey, bad)
	}
	if c.spec.TimestampKey != "" {
		v, _, err := values(ep, c.spec.TimestampKey)
		if err != nil {
			return err
		}
		timestamps(v, c.spec.FPS, bad)
	}
	for _, cam := range c.spec.Cameras {
		if err := c.frozen(ep, cam, bad); err != nil {
			return err
		}
	}
	r.num, r.den = autocorr(actions, c.spec.MaxLag)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eps[id] = r
	return nil
}

// values reads a numeric feature: its values step-major and its values
// per step.
func values(ep episode.Episode, key string) ([]float64, int, error) {
	v, err := ep.Feature(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := v.Float64s(nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", key, err)
	}
	return f, max(v.Per(), 1), nil
}

func nonFinite(v []float64, per int, key string, bad func(string, string, ...any)) {
	n, first := 0, -1
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if n > 0 {
		bad(NonFinite, "%s: %d values not finite, the first %v at step %d, dimension %d", key, n, v[first], first/per, first%per)
	}
}

// timestamps checks that each step's timestamp follows the last by 1/fps
// (within 1e-4 s, LeRobot's tolerance), and at least increases.
func timestamps(v []float64, fps float64, bad func(string, string, ...any)) {
	const tol = 1e-4
	for s := 1; s < len(v); s++ {
		d := v[s] - v[s-1]
		switch {
		case !(d > 0):
			bad(Timestamp, "step %d at %.6g s does not follow step %d at %.6g s", s, v[s], s-1, v[s-1])
			return
		case fps > 0 && math.Abs(d-1/fps) > tol:
			bad(Timestamp, "step %d at %.6g s is %.6g s after step %d, not 1/fps = %.6g s", s, v[s], d, s-1, 1/fps)
			return
		}
	}
}

// frozen finds a run of FrozenRun or more identical consecutive frames
// of a camera stored as images: byte-identical, or decoding to the same
// pixels. Cameras in a video track are not decoded here (noted).
func (c *Checker) frozen(ep episode.Episode, key string, bad func(string, string, ...any)) error {
	v, err := ep.Feature(key)
	if err != nil {
		return err
	}
	if vid, ok := v.(episode.Video); ok {
		// Every step must have its frame in the video: a step whose
		// timestamp lies outside the track means the data table and the
		// video disagree on the episode's frames.
		for s := range ep.Steps() {
			if _, err := vid.Shown(s); err != nil {
				bad(FrameCount, "%s: step %d has no frame in the video: %v", key, s, err)
				break
			}
		}
		c.note(key + ": a video camera, checked for its frames, not for frozen ones")
		return nil
	}
	var prev, prevPix []byte // the last frame, and its pixels once decoded
	run, start := 1, 0
	for s := range ep.Steps() {
		b := v.Bytes(s)
		same := false
		var pix []byte
		if s > 0 {
			if bytes.Equal(b, prev) {
				same, pix = true, prevPix
			} else {
				pix = pixels(b)
				if prevPix == nil {
					prevPix = pixels(prev)
				}
				same = pix != nil && prevPix != nil && bytes.Equal(pix, prevPix)
			}
		}
		if same {
			run++
		} else {
			if run >= c.spec.FrozenRun {
				break
			}
			run, start = 1, s
		}
		prev, prevPix = b, pix
	}
	if run >= c.spec.FrozenRun {
		bad(Frozen, "%s: steps %d to %d show the same frame", key, start, start+run-1)
	}
	return nil
}

// pixels decodes an encoded image to RGBA bytes; nil when it does not
// decode.
func pixels(b []byte) []byte {
	var img image.Image
	var err error
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		img, err = png.Decode(bytes.NewReader(b))
	default:
		img, err = jpeg.Decode(bytes.NewReader(b))
	}
	if err != nil {
		return nil
	}
	rgba := image.NewRGBA(img.Bounds())
	draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
	return rgba.Pix
}

// autocorr returns, per action dimension, Σ_t x_t·x_{t+k} for k ≤ maxLag
// and Σ_t x_t² of the episode's centred actions.
func autocorr(actions [][]float64, maxLag int) ([][]float64, []float64) {
	if len(actions) < 2 || len(actions[0]) == 0 {
		return nil, nil
	}
	D, L := len(actions[0]), len(actions)
	num := make([][]float64, D)
	den := make([]float64, D)
	x := make([]float64, L)
	for d := range D {
		mean := 0.0
		for t := range L {
			if d < len(actions[t]) {
				x[t] = actions[t][d]
			}
			mean += x[t]
		}
		mean /= float64(L)
		for t := range x {
			x[t] -= mean
		}
		num[d] = make([]float64, maxLag+1)
		for k := 0; k <= maxLag && k < L; k++ {
			s := 0.0
			for t := 0; t+k < L; t++ {
				s += x[t] * x[t+k]
			}
			num[d][k] = s
		}
		den[d] = num[d][0]
	}
	return num, den
}

// Report sums the episodes up, in episode order whatever the order they
// were added in.
func (c *Checker) Report() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := Report{Name: c.name, Split: c.split, Episodes: len(c.eps), Defects: []Defect{}}
	ids := make([]string, 0, len(c.eps))
	for id := range c.eps {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return episodeLess(ids[i], ids[j]) })
	var num [][]float64
	var den []float64
	for _, id := range ids {
		r := c.eps[id]
		rep.Steps += int64(r.steps)
		rep.Defects = append(rep.Defects, r.defects...)
		if r.num == nil {
			continue
		}
		if num == nil {
			num = make([][]float64, len(r.num))
			for d := range num {
				num[d] = make([]float64, c.spec.MaxLag+1)
			}
			den = make([]float64, len(r.den))
		}
		for d := range min(len(num), len(r.num)) {
			for k := range r.num[d] {
				num[d][k] += r.num[d][k]
			}
			den[d] += r.den[d]
		}
	}
	rep.Defects = append(rep.Defects, c.files...)
	if num != nil {
		rep.ActionAutocorrelation = make([]float64, c.spec.MaxLag+1)
		for k := range rep.ActionAutocorrelation {
			n, sum := 0, 0.0
			for d := range num {
				if den[d] > 0 && !math.IsNaN(num[d][k]) && !math.IsInf(num[d][k], 0) {
					sum += num[d][k] / den[d]
					n++
				}
			}
			if n > 0 {
				rep.ActionAutocorrelation[k] = sum / float64(n)
			}
		}
		rep.SuggestedChunk = 1
		for k := 1; k < len(rep.ActionAutocorrelation) && rep.ActionAutocorrelation[k] >= 0.5; k++ {
			rep.SuggestedChunk = k + 1
		}
	}
	for n := range c.notes {
		rep.Notes = append(rep.Notes, n)
	}
	slices.Sort(rep.Notes)
	return rep
}

// episodeLess orders episode ids dataset/split/shard/record numerically.
func episodeLess(a, b string) bool {
	pa, pb := strings.Split(a, "/"), strings.Split(b, "/")
	for i := range min(len(pa), len(pb)) {
		if pa[i] == pb[i] {
			continue
		}
		var na, nb int
		if _, err := fmt.Sscan(pa[i], &na); err == nil {
			if _, err := fmt.Sscan(pb[i], &nb); err == nil {
				return na < nb
			}
		}
		return pa[i] < pb[i]
	}
	return len(pa) < len(pb)
}

// ErrDefects is returned by a caller that fails on defects (oxefs check
// exits 1 when any dataset has one).
var ErrDefects = errors.New("defects found")

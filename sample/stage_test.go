package sample

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
)

// fakeEpisode is an episode of steps steps whose cameras are any key.
type fakeEpisode struct {
	key   episode.Key
	steps int
}

func (e fakeEpisode) ID() string       { return fmt.Sprintf("fake/%d", e.key.Record) }
func (e fakeEpisode) Dataset() string  { return "fake" }
func (e fakeEpisode) Key() episode.Key { return e.key }
func (e fakeEpisode) Steps() int       { return e.steps }
func (e fakeEpisode) Size() int        { return 0 }
func (e fakeEpisode) Corrupt(err error) error {
	return &episode.CorruptError{Dataset: "fake", Shard: "s", Record: e.key.Record, Err: err}
}
func (e fakeEpisode) Rename(string) episode.Episode { return e }
func (e fakeEpisode) Feature(key string) (episode.View, error) {
	if v, ok := views[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("no camera %q", key)
}

// views are the cameras of fake episodes, made once (a view made per call
// would be an allocation of the fake's, not of the stage's).
var views = map[string]*fakeView{"a": {"a"}, "b": {"b"}}

type fakeView struct{ key string }

func (v *fakeView) Spec() episode.Feature                     { return episode.Feature{Key: v.key} }
func (v *fakeView) Per() int                                  { return 1 }
func (v *fakeView) Bytes(int) []byte                          { return nil }
func (v *fakeView) Float64s(dst []float64) ([]float64, error) { return dst, nil }
func (v *fakeView) Int64s(dst []int64) ([]int64, error)       { return dst, nil }

// pixel is the value the fake decoder writes for a frame: a function of
// its camera, step and Params, so that a frame in the wrong place shows.
func pixel(image string, step int, p Params) byte {
	v := byte(step*7 + len(image))
	if n, ok := p.(int); ok {
		v += byte(31 * n)
	}
	return v
}

// fakeDecoder decodes without a codec: every byte of frame k is
// pixel(camera, steps[k], p), written in the slot's layout. It counts the
// frames it decodes by (camera, step, Params), and can fail a step or
// block before decoding.
type fakeDecoder struct {
	mu      sync.Mutex
	decoded map[frameOf]int // guarded by mu
	direct  int             // guarded by mu: decodes whose slot was Direct
	fail    map[int]bool    // guarded by mu: steps whose decode fails
	// Direct is the slot buffer whose decodes count as direct.
	Direct []byte
	// before, when set, runs before each decode.
	before func(steps []int)
}

// frameOf is one decoded frame of the fake decoder.
type frameOf struct {
	image string
	step  int
	p     Params
}

func newFakeDecoder() *fakeDecoder {
	return &fakeDecoder{decoded: map[frameOf]int{}, fail: map[int]bool{}}
}

func (d *fakeDecoder) Decode(_ context.Context, src frames.Source, steps []int, dst frames.Slot, p Params) error {
	if d.before != nil {
		d.before(steps)
	}
	img := src.(*frames.Images).Key
	d.mu.Lock()
	if len(d.Direct) > 0 && len(dst.Buf) > 0 && &dst.Buf[0] == &d.Direct[0] {
		d.direct++
	}
	for _, s := range steps {
		if d.fail[s] {
			delete(d.fail, s)
			d.mu.Unlock()
			return &frames.ImageError{Key: img, Step: s, Err: errors.New("bad image")}
		}
		d.decoded[frameOf{img, s, p}]++
	}
	d.mu.Unlock()
	hw := dst.H * dst.W
	for k, s := range steps {
		v := pixel(img, s, p)
		if dst.Layout == frames.BCFHW {
			for c := range 3 {
				at := (c*dst.Frames + k) * hw
				for j := range hw {
					dst.Buf[at+j] = v
				}
			}
			continue
		}
		for j := range hw * 3 {
			dst.Buf[k*hw*3+j] = v
		}
	}
	return nil
}

func (d *fakeDecoder) Name() string   { return "fake" }
func (d *fakeDecoder) Footprint() int { return 0 }
func (d *fakeDecoder) Close()         {}

func (d *fakeDecoder) total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.decoded {
		n += c
	}
	return n
}

// cam is one camera request of a test sample.
type cam struct {
	image  string
	steps  []int
	params Params
}

// testSample is a sample's requests in a buffer of its own.
type testSample struct {
	ep   fakeEpisode
	cams []cam
	bufs [][]byte
}

const testH, testW = 2, 3

func (s *testSample) requests(layout frames.Layout) []Request {
	if s.bufs == nil {
		for _, c := range s.cams {
			s.bufs = append(s.bufs, make([]byte, len(c.steps)*testH*testW*3))
		}
	}
	reqs := make([]Request, len(s.cams))
	for k, c := range s.cams {
		reqs[k] = Request{Image: c.image, Params: c.params, Steps: c.steps,
			Dst: frames.Slot{Buf: s.bufs[k], Frames: len(c.steps), H: testH, W: testW, Layout: layout}}
	}
	return reqs
}

// check reports the first position of s whose pixels are not its frame's.
func (s *testSample) check(layout frames.Layout) error {
	hw := testH * testW
	for k, c := range s.cams {
		for p, step := range c.steps {
			want := pixel(c.image, step, c.params)
			for ch := range 3 {
				var at int
				if layout == frames.BCFHW {
					at = (ch*len(c.steps) + p) * hw
				} else {
					at = p*hw*3 + ch
				}
				if got := s.bufs[k][at]; got != want {
					return fmt.Errorf("camera %s position %d (step %d): pixel %d, want %d", c.image, p, step, got, want)
				}
			}
		}
	}
	return nil
}

// paramsOf draws 100·unit + 10·i + k for camera k of sample i: each
// sample its own.
type paramsOf struct{}

func (paramsOf) Params(_ int64, i int, s plan.Sample, k int) Params { return i*10 + k + 100*s.Unit }

// TestStageDecodesEachFrameOnce: the samples of a batch, built at once,
// decode each distinct (dataset, episode, camera, step, size, Params)
// once, whether samples share it, two cameras of one sample share it, or
// a request repeats it; every position gets its frame, in both layouts.
func TestStageDecodesEachFrameOnce(t *testing.T) {
	ep := fakeEpisode{key: episode.Key{Split: "train", Record: 1}, steps: 10}
	other := fakeEpisode{key: episode.Key{Split: "train", Record: 2}, steps: 10}
	for _, tc := range []struct {
		name    string
		samples []testSample
		want    int // distinct frames
	}{
		{"no sharing", []testSample{
			{ep: ep, cams: []cam{{image: "a", steps: []int{0, 1}}}},
			{ep: ep, cams: []cam{{image: "a", steps: []int{2, 3}}}},
		}, 4},
		{"samples share frames", []testSample{
			{ep: ep, cams: []cam{{image: "a", steps: []int{0, 1, 2}}}},
			{ep: ep, cams: []cam{{image: "a", steps: []int{1, 2, 3}}}},
			{ep: ep, cams: []cam{{image: "a", steps: []int{2, 3, 4}}}},
			{ep: ep, cams: []cam{{image: "a", steps: []int{0, 1, 2}}}},
		}, 5},
		{"clamped repeats within a request", []testSample{
			{ep: ep, cams: []cam{{image: "a", steps: []int{0, 0, 0, 1}}}},
			{ep: ep, cams: []cam{{image: "a", steps: []int{9, 9, 8}}}},
		}, 4},
		{"two cameras, one image key", []testSample{
			{ep: ep, cams: []cam{{image: "a", steps: []int{3, 4}}, {image: "a", steps: []int{4, 5}}}},
		}, 3},
		{"other cameras and episodes are other frames", []testSample{
			{ep: ep, cams: []cam{{image: "a", steps: []int{1}}, {image: "b", steps: []int{1}}}},
			{ep: other, cams: []cam{{image: "a", steps: []int{1}}}},
		}, 3},
		{"Params are part of the frame", []testSample{
			{ep: ep, cams: []cam{{image: "a", steps: []int{1, 2}, params: 1}}},
			{ep: ep, cams: []cam{{image: "a", steps: []int{1, 2}, params: 2}}},
			{ep: ep, cams: []cam{{image: "a", steps: []int{1, 2}, params: 1}}},
		}, 4},
	} {
		for _, layout := range []frames.Layout{frames.BFHWC, frames.BCFHW} {
			t.Run(fmt.Sprintf("%s %v", tc.name, layout), func(t *testing.T) {
				dec := newFakeDecoder()
				st := NewStage()
				st.Reset(0, make([]plan.Sample, len(tc.samples)), Identity{})
				errs := make([]error, len(tc.samples))
				var wg sync.WaitGroup
				for i := range tc.samples {
					wg.Go(func() {
						s := &tc.samples[i]
						w := NewFrameWorker(dec)
						errs[i] = st.For(w, i).Place(t.Context(), 0, s.ep, s.requests(layout))
					})
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("sample %d: %v", i, err)
					}
					if err := tc.samples[i].check(layout); err != nil {
						t.Fatalf("sample %d: %v", i, err)
					}
				}
				if n := dec.total(); n != tc.want {
					t.Fatalf("%d frames decoded, want %d (each distinct frame once)", n, tc.want)
				}
			})
		}
	}
}

// TestStageDecodesStraightIntoPlace: a request that is nothing but frames
// its sample claimed, in ascending order, is decoded straight into its
// slot (no copy); one that is not goes through the worker's scratch.
func TestStageDecodesStraightIntoPlace(t *testing.T) {
	ep := fakeEpisode{key: episode.Key{Record: 1}, steps: 10}
	for _, tc := range []struct {
		name   string
		steps  []int
		direct bool
	}{
		{"ascending", []int{2, 5, 7}, true},
		{"one frame", []int{4}, true},
		{"descending", []int{5, 2}, false},
		{"a repeat", []int{3, 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := newFakeDecoder()
			st := NewStage()
			st.Reset(0, make([]plan.Sample, 1), Identity{})
			s := testSample{ep: ep, cams: []cam{{image: "a", steps: tc.steps}}}
			reqs := s.requests(frames.BFHWC)
			dec.Direct = s.bufs[0]
			if err := st.For(NewFrameWorker(dec), 0).Place(t.Context(), 0, ep, reqs); err != nil {
				t.Fatal(err)
			}
			if err := s.check(frames.BFHWC); err != nil {
				t.Fatal(err)
			}
			if got := dec.direct == 1; got != tc.direct {
				t.Fatalf("decoded into the slot: %v, want %v", got, tc.direct)
			}
		})
	}
}

// TestStageGivenUp: a frame whose owner fails to decode it is corrupt data
// of the owner's episode; a sample that claimed it meanwhile (and so
// waits on the owner) decodes it itself, and a later sample claims it
// anew.
func TestStageGivenUp(t *testing.T) {
	ep := fakeEpisode{key: episode.Key{Record: 1}, steps: 10}
	dec := newFakeDecoder()
	dec.fail[4] = true // the first decode of step 4 only
	st := NewStage()
	st.Reset(0, make([]plan.Sample, 3), Identity{})
	ownerDecoding, waiterClaimed := make(chan struct{}), make(chan struct{})
	dec.before = func(steps []int) {
		switch steps[0] {
		case 4:
			select {
			case <-ownerDecoding: // the waiter's own decode of step 4
			default:
				close(ownerDecoding)
				<-waiterClaimed
			}
		case 3:
			close(waiterClaimed) // sample 1 has claimed step 3 and asked for step 4
		}
	}
	s0 := testSample{ep: ep, cams: []cam{{image: "a", steps: []int{4}}}}
	s1 := testSample{ep: ep, cams: []cam{{image: "a", steps: []int{3, 4}}}}
	err0 := make(chan error, 1)
	go func() { err0 <- st.For(NewFrameWorker(dec), 0).Place(t.Context(), 0, ep, s0.requests(frames.BFHWC)) }()
	<-ownerDecoding
	err1 := st.For(NewFrameWorker(dec), 1).Place(t.Context(), 0, ep, s1.requests(frames.BFHWC))
	var ce *episode.CorruptError
	var ie *frames.ImageError
	if err := <-err0; !errors.As(err, &ce) || !errors.As(err, &ie) || ie.Step != 4 {
		t.Fatalf("owner: %v, want a *episode.CorruptError wrapping the *frames.ImageError of step 4", err)
	}
	if err1 != nil {
		t.Fatalf("the waiting sample: %v", err1)
	}
	if err := s1.check(frames.BFHWC); err != nil {
		t.Fatalf("the waiting sample: %v", err)
	}
	s2 := testSample{ep: ep, cams: []cam{{image: "a", steps: []int{4}}}}
	if err := st.For(NewFrameWorker(dec), 2).Place(t.Context(), 0, ep, s2.requests(frames.BFHWC)); err != nil {
		t.Fatal(err)
	}
	if err := s2.check(frames.BFHWC); err != nil {
		t.Fatal(err)
	}
	if n := dec.total(); n != 3 {
		t.Fatalf("%d frames decoded, want 3: step 3, step 4 by the waiter, and again by the later sample", n)
	}
}

// TestStageRevoke: once a sample's claims are revoked (its build failed
// after them and a substitute will overwrite it), later samples decode
// those frames themselves instead of copying what the substitute wrote.
func TestStageRevoke(t *testing.T) {
	ep := fakeEpisode{key: episode.Key{Record: 1}, steps: 10}
	dec := newFakeDecoder()
	st := NewStage()
	st.Reset(0, make([]plan.Sample, 2), Identity{})
	s0 := testSample{ep: ep, cams: []cam{{image: "a", steps: []int{1, 2}}}}
	if err := st.For(NewFrameWorker(dec), 0).Place(t.Context(), 0, ep, s0.requests(frames.BFHWC)); err != nil {
		t.Fatal(err)
	}
	st.Revoke(0)
	for i := range s0.bufs[0] {
		s0.bufs[0][i] = 0xee // the substitute's pixels
	}
	s1 := testSample{ep: ep, cams: []cam{{image: "a", steps: []int{2, 3}}}}
	if err := st.For(NewFrameWorker(dec), 1).Place(t.Context(), 0, ep, s1.requests(frames.BFHWC)); err != nil {
		t.Fatal(err)
	}
	if err := s1.check(frames.BFHWC); err != nil {
		t.Fatalf("after a revoke: %v", err)
	}
	if n := dec.total(); n != 4 {
		t.Fatalf("%d frames decoded, want 4: steps 1, 2 by sample 0 and 2, 3 again by sample 1", n)
	}
}

// TestStageParams: each camera of each sample asks the Transformer for
// its Params, with the batch, the sample's index and planned sample, and
// the slot.
func TestStageParams(t *testing.T) {
	st := NewStage()
	st.Reset(7, []plan.Sample{{Unit: 1}, {Unit: 2}, {Unit: 3}}, paramsOf{})
	w := NewFrameWorker(newFakeDecoder())
	for _, tc := range []struct{ i, k, want int }{{0, 0, 100}, {2, 0, 320}, {2, 1, 321}} {
		if got := st.For(w, tc.i).Params(tc.k); got != tc.want {
			t.Errorf("sample %d slot %d: Params %v, want %d", tc.i, tc.k, got, tc.want)
		}
	}
	st.Reset(8, make([]plan.Sample, 3), Identity{})
	if got := st.For(w, 1).Params(0); got != nil {
		t.Errorf("Identity's Params %v, want nil", got)
	}
}

// TestStageAllocs: a stage reused from batch to batch claims, decodes and
// copies without allocating, shared frames and repeats included.
func TestStageAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	var ep episode.Episode = fakeEpisode{key: episode.Key{Split: "train", Record: 1}, steps: 10} // boxed once
	dec := newFakeDecoder()
	st := NewStage()
	w := NewFrameWorker(dec)
	samples := []testSample{
		{cams: []cam{{image: "a", steps: []int{0, 1, 2}}, {image: "b", steps: []int{2, 2}}}},
		{cams: []cam{{image: "a", steps: []int{1, 2, 3}}, {image: "b", steps: []int{3, 2}}}},
	}
	reqs := make([][]Request, len(samples))
	for i := range samples {
		reqs[i] = samples[i].requests(frames.BCFHW)
	}
	planned := make([]plan.Sample, len(samples))
	batch := func() {
		st.Reset(0, planned, Identity{})
		for i := range samples {
			if err := st.For(w, i).Place(context.Background(), 0, ep, reqs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	batch() // warm: scratch and claims grown
	if n := testing.AllocsPerRun(20, batch); n != 0 {
		t.Fatalf("%.1f allocations a batch, want 0", n)
	}
	for i := range samples {
		if err := samples[i].check(frames.BCFHW); err != nil {
			t.Fatal(err)
		}
	}
}

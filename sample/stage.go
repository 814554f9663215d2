package sample

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
)

// Request asks the stage for one camera's frames of one sample.
type Request struct {
	// Image is the camera's image key in the episode; Declared the frame
	// size the dataset declares for it (zero fields: unknown).
	Image    string
	Declared frames.Size
	// Params are the sample's transform parameters for this camera (see
	// Transformer); nil is the identity.
	Params Params
	// Steps is the step shown at each position of Dst, in any order,
	// repeats allowed.
	Steps []int
	// Dst is where the frames go: the sample's frames of this camera in the
	// batch's buffer, Dst.Frames == len(Steps).
	Dst frames.Slot
	// Compressed, when not nil (one per step; Dst in BFHWC), asks for the
	// frames the camera stores as JPEG images as those images' bytes
	// where they fit (frames.Images.Compressed): frame k of Dst then holds
	// the image from its first byte and zeros after it, and Compressed[k]
	// its length. Every other frame is decoded as without it and has
	// Compressed[k] = 0, as do all the frames of a dropped camera
	// (Params that say Dropped).
	Compressed []int32
}

// Dropper is Params that can drop a camera: its frames are zeros.
type Dropper interface{ Dropped() bool }

// dropped reports whether p drops its camera.
func dropped(p Params) bool {
	d, ok := p.(Dropper)
	return ok && d.Dropped()
}

// FrameKey names one decoded frame: two positions with the same key show
// the same pixels. (A batch's layout, resize and decode modes are the
// mix's, the same for every request.)
type FrameKey struct {
	Dataset int // the plan's dataset index
	Episode episode.Key
	Image   string
	Step    int
	H, W    int
	Params  Params
	// Compressed: the frame is asked for as its JPEG bytes where it can
	// be (Request.Compressed).
	Compressed bool
}

// claim states.
const (
	pending uint8 = iota // its owner is decoding it
	decoded              // its pixels are at (dst, pos)
	gone                 // given up or revoked: those waiting decode it themselves
)

// claim is a frame one sample decodes for the batch.
type claim struct {
	key    FrameKey
	state  uint8
	sample int
	dst    frames.Slot // the owner's request's slot
	sizes  []int32     // the owner's request's Compressed
	pos    int         // the frame's position in dst
}

// Stage is one batch's frame stage: the claims on its frames. It is reused
// from batch to batch (Reset), so that claiming allocates nothing in
// steady state.
type Stage struct {
	// constants of the batch
	n       int64
	planned []plan.Sample
	tf      Transformer

	mu     sync.Mutex
	cond   sync.Cond
	claims map[FrameKey]int32 // guarded by mu: index into list
	list   []claim            // guarded by mu
	owned  [][]int32          // guarded by mu: by sample, the claims it released decoded
	// samples[i] guards sample i's frames while another sample copies from
	// them, against Revoke.
	samples []sync.RWMutex
}

// NewStage returns an empty stage; Reset readies it for a batch.
func NewStage() *Stage {
	s := &Stage{claims: map[FrameKey]int32{}}
	s.cond.L = &s.mu
	return s
}

// Reset makes the stage batch n's, whose samples the plan made planned,
// and whose transform parameters tf draws. No sample of the previous batch
// may still use it.
func (s *Stage) Reset(n int64, planned []plan.Sample, tf Transformer) {
	s.n, s.planned, s.tf = n, planned, tf
	samples := len(planned)
	clear(s.claims)
	s.list = s.list[:0]
	if cap(s.owned) < samples {
		s.owned = make([][]int32, samples)
	}
	s.owned = s.owned[:samples]
	for i := range s.owned {
		s.owned[i] = s.owned[i][:0]
	}
	if len(s.samples) < samples {
		s.samples = make([]sync.RWMutex, samples)
	}
}

// Revoke withdraws the claims sample i released as decoded, before sample
// i is rewritten (its build failed after them; the builder substitutes):
// no one copies from it any longer, and later samples claim those frames
// anew.
func (s *Stage) Revoke(i int) {
	s.samples[i].Lock()
	defer s.samples[i].Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.owned[i] {
		s.forget(c)
	}
	s.owned[i] = s.owned[i][:0]
}

// forget marks claim c gone and drops it from the claims, so that the
// next sample that asks claims the frame anew. s.mu is held.
func (s *Stage) forget(c int32) {
	s.list[c].state = gone
	if k := s.list[c].key; s.claims[k] == c {
		delete(s.claims, k)
	}
}

// Frames is sample i's way to a batch's Stage, on one worker.
type Frames struct {
	stage *Stage
	w     *FrameWorker
	i     int
}

// For returns sample i's Frames on worker w.
func (s *Stage) For(w *FrameWorker, i int) Frames { return Frames{stage: s, w: w, i: i} }

// Params are the transform parameters of the sample's camera slot k.
func (f Frames) Params(k int) Params {
	return f.stage.tf.Params(f.stage.n, f.i, f.stage.planned[f.i], k)
}

// position is one frame of a sample: position pos of request req.
type position struct {
	req, pos, step int
	key            FrameKey
	claim          int32
	from           int  // repeats: the index in want of the position it copies, else -1
	mine           bool // this sample claimed the frame
}

// Place writes the frames of reqs, cameras of episode ep of plan dataset
// dataset, decoding each frame once per batch: it claims the frames no
// sample has claimed, decodes them, releases them, and only then waits
// for the others' and copies them (decoding itself those whose owner gave
// up). Bad frame data is corrupt data of the episode (a
// *episode.CorruptError wrapping a *frames.ImageError); another error (a
// read that failed) names the episode.
func (f Frames) Place(ctx context.Context, dataset int, ep episode.Episode, reqs []Request) error {
	s, w, i := f.stage, f.w, f.i
	want := w.want[:0]
	defer func() { w.want = want[:0] }()
	key := ep.Key()
	for r := range reqs {
		q := &reqs[r]
		if q.Dst.Frames != len(q.Steps) {
			return fmt.Errorf("a request of %d steps for a slot of %d frames", len(q.Steps), q.Dst.Frames)
		}
		for p, step := range q.Steps {
			k := FrameKey{Dataset: dataset, Episode: key, Image: q.Image, Step: step, H: q.Dst.H, W: q.Dst.W, Params: q.Params, Compressed: q.Compressed != nil}
			from := -1
			for j := range want {
				if want[j].key == k {
					from = j
					break
				}
			}
			want = append(want, position{req: r, pos: p, step: step, key: k, from: from})
		}
	}

	// Claim.
	owned := w.owned[:0]
	s.mu.Lock()
	for j := range want {
		x := &want[j]
		if x.from >= 0 {
			continue
		}
		if c, ok := s.claims[x.key]; ok {
			x.claim = c
			continue
		}
		c := int32(len(s.list))
		s.list = append(s.list, claim{key: x.key, state: pending, sample: i, dst: reqs[x.req].Dst, sizes: reqs[x.req].Compressed, pos: x.pos})
		s.claims[x.key] = c
		x.claim, x.mine = c, true
		owned = append(owned, c)
	}
	s.mu.Unlock()
	w.owned = owned

	// Decode what this sample owns, request by request, then release it.
	if err := w.decodeOwned(ctx, ep, reqs, want); err != nil {
		s.release(i, owned, false)
		return err
	}
	s.release(i, owned, true)

	// Copy the others' frames, then this sample's repeats.
	for j := range want {
		x := &want[j]
		if x.from >= 0 || x.mine {
			continue
		}
		if err := s.await(ctx, w, ep, reqs, i, x); err != nil {
			return err
		}
	}
	for j := range want {
		x := &want[j]
		if x.from < 0 {
			continue
		}
		y := &want[x.from]
		copyFrame(&reqs[x.req], x.pos, reqs[y.req].Dst, reqs[y.req].Compressed, y.pos)
	}
	return nil
}

// release ends sample i's claims cs: decoded, their pixels can be copied;
// not, they are forgotten (later samples claim the frames anew) and those
// waiting decode them themselves.
func (s *Stage) release(i int, cs []int32, ok bool) {
	if len(cs) == 0 {
		return
	}
	s.mu.Lock()
	for _, c := range cs {
		if ok {
			s.list[c].state = decoded
			continue
		}
		s.forget(c)
	}
	if ok {
		s.owned[i] = append(s.owned[i], cs...)
	}
	s.mu.Unlock()
	s.cond.Broadcast()
}

// await waits for another sample's claim on x's frame and copies its
// pixels, or decodes the frame itself when the owner gave up. The owner
// decodes before it waits on anyone, so the wait ends.
func (s *Stage) await(ctx context.Context, w *FrameWorker, ep episode.Episode, reqs []Request, i int, x *position) error {
	s.mu.Lock()
	for s.list[x.claim].state == pending {
		s.cond.Wait()
	}
	c := s.list[x.claim]
	s.mu.Unlock()
	q := &reqs[x.req]
	if c.state == decoded && c.sample != i {
		s.samples[c.sample].RLock()
		s.mu.Lock()
		valid := s.list[x.claim].state == decoded // not revoked meanwhile
		s.mu.Unlock()
		if valid {
			copyFrame(q, x.pos, c.dst, c.sizes, c.pos)
		}
		s.samples[c.sample].RUnlock()
		if valid {
			return nil
		}
	}
	w.one = append(w.one[:0], x.step)
	buf, sizes, err := w.decode(ctx, ep, q, w.one)
	if err != nil {
		return err
	}
	copyFrame(q, x.pos, buf, sizes, 0)
	return nil
}

// copyFrame copies frame from of src (with its compressed size, where src
// has sizes) to frame to of q's slot, two slots of the same size and
// layout.
func copyFrame(q *Request, to int, src frames.Slot, sizes []int32, from int) {
	dst := q.Dst
	if q.Compressed != nil {
		q.Compressed[to] = sizes[from]
	}
	hw := dst.H * dst.W
	if dst.Layout == frames.BCFHW {
		for c := range 3 {
			copy(dst.Buf[(c*dst.Frames+to)*hw:(c*dst.Frames+to+1)*hw], src.Buf[(c*src.Frames+from)*hw:(c*src.Frames+from+1)*hw])
		}
		return
	}
	copy(dst.Buf[to*hw*3:(to+1)*hw*3], src.Buf[from*hw*3:(from+1)*hw*3])
}

// FrameWorker is one decode worker goroutine's side of the frame stage:
// its FrameDecoder and the scratch reused from sample to sample. It is
// not safe for concurrent use.
type FrameWorker struct {
	dec FrameDecoder

	// scratch
	want    []position
	owned   []int32
	steps   []int
	one     []int
	scratch []byte
	sizes   []int32 // the scratch's compressed sizes
	single  [1]int
	camera  Camera

	decoded    int64
	compressed int64
}

// NewFrameWorker returns a worker that decodes with dec and owns it
// (Close closes it).
func NewFrameWorker(dec FrameDecoder) *FrameWorker { return &FrameWorker{dec: dec} }

// Decoder returns the worker's decoder.
func (w *FrameWorker) Decoder() FrameDecoder { return w.dec }

// Decoded is the number of frames the worker has decoded.
func (w *FrameWorker) Decoded() int64 { return w.decoded }

// Compressed is the number of frames the worker has served as their JPEG
// bytes (Request.Compressed) instead of decoding them.
func (w *FrameWorker) Compressed() int64 { return w.compressed }

// Footprint is the bytes the worker's reusable buffers hold, its
// decoder's included.
func (w *FrameWorker) Footprint() int {
	return w.dec.Footprint() + cap(w.scratch) + 8*(cap(w.steps)+cap(w.one)) + 4*cap(w.sizes)
}

// Close closes the worker's decoder.
func (w *FrameWorker) Close() { w.dec.Close() }

// decodeOwned decodes the frames the sample owns, each request's in one
// call: straight into the request's slot when it is nothing but frames
// the sample owns, in ascending order; else into scratch, then copied to
// their positions.
func (w *FrameWorker) decodeOwned(ctx context.Context, ep episode.Episode, reqs []Request, want []position) error {
	at := 0 // want is in request order
	for r := range reqs {
		q := &reqs[r]
		ps := want[at : at+len(q.Steps)]
		at += len(q.Steps)
		st := w.steps[:0]
		direct := true
		for j := range ps {
			x := &ps[j]
			if !x.mine {
				direct = false
				continue
			}
			if len(st) > 0 && x.step <= st[len(st)-1] {
				direct = false
			}
			st = append(st, x.step)
		}
		w.steps = st
		if len(st) == 0 {
			continue
		}
		if direct {
			if err := w.decodeInto(ctx, ep, q, st, q.Dst, q.Compressed); err != nil {
				return err
			}
			continue
		}
		slices.Sort(st)
		buf, sizes, err := w.decode(ctx, ep, q, st)
		if err != nil {
			return err
		}
		for j := range ps {
			x := &ps[j]
			if x.mine {
				f, _ := slices.BinarySearch(st, x.step)
				copyFrame(q, x.pos, buf, sizes, f)
			}
		}
	}
	return nil
}

// decode decodes steps (ascending, distinct) of q's camera into the
// worker's scratch, in q's size and layout, and returns that slot (frame
// j of it is steps[j]) and, where q asks for compressed frames, their
// sizes (else nil).
func (w *FrameWorker) decode(ctx context.Context, ep episode.Episode, q *Request, steps []int) (frames.Slot, []int32, error) {
	n := len(steps) * q.Dst.H * q.Dst.W * 3
	if cap(w.scratch) < n {
		w.scratch = make([]byte, n)
	}
	dst := q.Dst
	dst.Buf, dst.Frames = w.scratch[:n], len(steps)
	var sizes []int32
	if q.Compressed != nil {
		if cap(w.sizes) < len(steps) {
			w.sizes = make([]int32, len(steps))
		}
		sizes = w.sizes[:len(steps)]
	}
	return dst, sizes, w.decodeInto(ctx, ep, q, steps, dst, sizes)
}

// decodeInto decodes steps of q's camera into dst; with sizes (one per
// step), JPEG frames are served compressed where they can be (see
// Request.Compressed).
func (w *FrameWorker) decodeInto(ctx context.Context, ep episode.Episode, q *Request, steps []int, dst frames.Slot, sizes []int32) error {
	src, err := w.camera.Open(ep, q.Image, q.Declared)
	if err != nil {
		return err
	}
	images, _ := src.(*frames.Images)
	if sizes == nil || images == nil || dropped(q.Params) {
		clear(sizes)
		return w.decodeFrames(ctx, ep, src, steps, dst, q.Params)
	}
	room := dst.H * dst.W * 3
	var want frames.Size
	for j, step := range steps {
		frame := dst.Buf[j*room : (j+1)*room]
		if b, size, ok := images.Compressed(step, want, room); ok {
			clear(frame[copy(frame, b):])
			sizes[j], want = int32(len(b)), size
			w.compressed++
			continue
		}
		sizes[j] = 0
		one := dst
		one.Buf, one.Frames = frame, 1
		w.single[0] = step
		if err := w.decodeFrames(ctx, ep, src, w.single[:], one, q.Params); err != nil {
			return err
		}
	}
	return nil
}

// decodeFrames decodes steps of src into dst with the parameters p.
func (w *FrameWorker) decodeFrames(ctx context.Context, ep episode.Episode, src frames.Source, steps []int, dst frames.Slot, p Params) error {
	w.decoded += int64(len(steps))
	if err := w.dec.Decode(ctx, src, steps, dst, p); err != nil {
		var ie *frames.ImageError
		if errors.As(err, &ie) {
			return ep.Corrupt(err)
		}
		return fmt.Errorf("dataset %s episode %s: %w", ep.Dataset(), ep.ID(), err)
	}
	return nil
}

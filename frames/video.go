package frames

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/oxefs/oxefs/frames/av"
)

// ErrVideo matches what is wrong with a video sample's data: it cannot be
// read whole from its file, or the decoder rejects it, or it does not give
// the frame the track says it shows. An *ImageError wraps it.
var ErrVideo = errors.New("bad video data")

// Stream is one camera stored as a compressed video track that many
// episodes share: what Video decodes frames from. A format's video view
// implements it (episode.Video has the same methods). Samples are numbered
// in decode order over the whole track; a stream may describe only the
// samples its steps need: from where the first frame shown starts
// decoding to the end of the group of pictures of the last (see
// episode.Video).
type Stream interface {
	// File names the video file, unique within the process: the Decoder
	// keeps its position per file.
	File() string
	// Codec is "av1", "h264" or "hevc" and the configuration record
	// (av1C, avcC or hvcC payload).
	Codec() (name string, config []byte)
	// Shown is the sample that shows the step.
	Shown(step int) (sample int, err error)
	// Samples is one past the last sample the stream describes.
	Samples() int
	// Start is the keyframe decoding must start from to show sample j, -1
	// when there is none. It is the format's to say: the last keyframe
	// before j, or an earlier one when j is a leading picture of an open
	// group of pictures (see episode.DecodeStart).
	Start(j int) int
	// Sample j's bytes are at [off, off+size) of the file; pts is its
	// presentation time; key says decoding can start there. A sample the
	// stream does not describe has size 0.
	Sample(j int) (off int64, size int, pts int64, key bool)
	// ReadAt reads the file, bounded by ctx.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

// maxVideoRead bounds the bytes read at once from a video file: the
// samples from the decoder's position, or the keyframe before, up to the
// frame wanted. Beyond it samples are read one by one.
const maxVideoRead = 16 << 20

// Video is a Source of frames decoded from a video track. For each frame
// asked, it finds the sample that shows the step and the keyframe at or
// before it, decodes forward from there (or from where the Decoder's
// stream state for the same file stopped, when that is on the way) and
// writes the frame whose presentation time is the sample's through the same
// resize path as Images.
type Video struct {
	// Key names the camera in errors.
	Key string
	// Steps is the number of frames.
	Steps int
	// Stream is the track.
	Stream Stream
	// Size is the size every frame must have; a zero field is not checked.
	Size Size
	// SizeFrom says where Size comes from, for errors.
	SizeFrom string
}

var _ Source = (*Video)(nil)

// Len returns Steps.
func (s *Video) Len() int { return s.Steps }

// videoState is a Decoder's position in one video file: the codec
// context, the next sample to send and the last presentation time
// received, and the buffers reused from frame to frame.
type videoState struct {
	file   string
	codec  string
	config string
	dec    *av.Decoder
	next   int   // next sample to send, in decode order
	last   int64 // pts of the last frame received; math.MinInt64 after a reset
	sent   bool  // anything sent since the reset
	eos    bool  // the end of the stream was sent: no packet may follow

	buf    []byte // file bytes [bufOff, bufOff+len(buf))
	bufOff int64
	rgb    []byte
}

// Decode decodes and writes the frames idx into dst; see Source.
func (s *Video) Decode(ctx context.Context, d *Decoder, idx []int, dst Slot) error {
	want, what, err := checkRequest(s.Key, s.Steps, idx, dst, s.Size, s.SizeFrom)
	if err != nil {
		return err
	}
	if dst.Augment.Drop {
		clear(dst.Buf)
		return nil
	}
	for k, step := range idx {
		j, err := s.Stream.Shown(step)
		if err != nil {
			return &ImageError{Key: s.Key, Step: step, Err: fmt.Errorf("%w: %v", ErrVideo, err)}
		}
		img, err := d.videoFrame(ctx, s.Stream, j)
		if err != nil {
			var bad *badVideo
			if errors.As(err, &bad) {
				return &ImageError{Key: s.Key, Step: step, Err: bad.err}
			}
			return fmt.Errorf("camera %s step %d: %w", s.Key, step, err)
		}
		if (want.W != 0 && img.W != want.W) || (want.H != 0 && img.H != want.H) {
			return &ImageError{Key: s.Key, Step: step, Err: fmt.Errorf("%w: the video frame is %dx%d (WxH), %s %dx%d", ErrImageSize, img.W, img.H, what, want.W, want.H)}
		}
		if k == 0 && (want.W == 0 || want.H == 0) {
			want, what = img.Encoded, "the sample's first frame is"
		}
		d.write(dst.frame(k), dst, img)
	}
	return nil
}

// badVideo is bad data of the stream, as opposed to a read that failed.
type badVideo struct{ err error }

func (b *badVideo) Error() string { return b.err.Error() }

func bad(format string, args ...any) error {
	return &badVideo{fmt.Errorf("%w: %s", ErrVideo, fmt.Sprintf(format, args...))}
}

// videoFrame decodes sample j of the stream to RGB, in d's buffer.
func (d *Decoder) videoFrame(ctx context.Context, s Stream, j int) (rgbImage, error) {
	n := s.Samples()
	if j < 0 || j >= n {
		return rgbImage{}, bad("sample %d of a track of %d", j, n)
	}
	_, _, pts, _ := s.Sample(j)
	key := s.Start(j)
	if key >= 0 && key <= j {
		if _, _, _, k := s.Sample(key); !k {
			key = -1
		}
	}
	if key < 0 || key > j {
		return rgbImage{}, bad("no keyframe at or before sample %d", j)
	}
	v, err := d.videoState(s)
	if err != nil {
		return rgbImage{}, err
	}
	// Continue from the decoder's position when the frame is still ahead
	// of it and the position is within the frame's run from its keyframe;
	// otherwise start again at the keyframe.
	// After the end of the stream was sent (the decoder drained at the
	// end of the samples a stream describes), only the frames already
	// decoded can follow: a stream that describes more samples starts
	// again.
	if !(v.sent && pts > v.last && v.next >= key && v.next <= n) || (v.eos && v.next < n) {
		v.dec.Reset()
		v.next, v.last, v.sent, v.eos = key, math.MinInt64, false, false
	}
	drained := v.eos
	for steps := 0; steps <= 2*(n-key)+4; steps++ {
		f, err := v.dec.Receive()
		if err != nil {
			v.sent = false // the state is unknown: start again next time
			return rgbImage{}, &badVideo{fmt.Errorf("%w: %v", ErrVideo, err)}
		}
		if f != nil {
			v.last = f.PTS
			switch {
			case f.PTS == pts:
				return d.videoRGB(v, f)
			case f.PTS > pts && f.PTS != av.NoPTS:
				v.sent = false
				return rgbImage{}, bad("the decoder skipped the frame at pts %d (next is %d)", pts, f.PTS)
			}
			continue
		}
		if drained {
			break
		}
		if v.next >= n {
			if err := v.dec.Send(nil); err != nil {
				v.sent = false
				return rgbImage{}, &badVideo{fmt.Errorf("%w: %v", ErrVideo, err)}
			}
			drained, v.eos = true, true
			continue
		}
		pkt, err := v.sample(ctx, s, v.next, j)
		if err != nil {
			v.sent = false
			return rgbImage{}, err
		}
		_, _, p, _ := s.Sample(v.next)
		v.next++
		v.sent = true
		if err := v.dec.SendPTS(pkt, p); err != nil {
			v.sent = false
			return rgbImage{}, &badVideo{fmt.Errorf("%w: sample %d: %v", ErrVideo, v.next-1, err)}
		}
	}
	v.sent = false
	return rgbImage{}, bad("no frame at pts %d decoded from samples %d..%d", pts, key, v.next-1)
}

// videoState returns the decoder's state for the stream's file, opening a
// codec context when the file or codec changes.
func (d *Decoder) videoState(s Stream) (*videoState, error) {
	codec, config := s.Codec()
	v := d.video
	if v != nil && v.file == s.File() && v.codec == codec && v.config == string(config) {
		return v, nil
	}
	if v != nil && v.dec != nil && v.codec == codec && v.config == string(config) {
		v.file, v.sent = s.File(), false
		v.buf = v.buf[:0]
		return v, nil
	}
	dec, err := av.NewDecoder(codec, config)
	if err != nil {
		if errors.Is(err, av.ErrUnavailable) {
			return nil, err
		}
		return nil, bad("%v", err)
	}
	if v == nil {
		v = &videoState{}
		d.video = v
	}
	if v.dec != nil {
		v.dec.Close()
	}
	v.file, v.codec, v.config, v.dec, v.sent = s.File(), codec, string(config), dec, false
	v.buf = v.buf[:0]
	return v, nil
}

// sample returns sample i's bytes, reading from the file the samples i up
// to target (or i alone when that run is too long or not contiguous) into
// the state's buffer when they are not there yet.
func (v *videoState) sample(ctx context.Context, s Stream, i, target int) ([]byte, error) {
	off, size, _, _ := s.Sample(i)
	if size <= 0 {
		return nil, bad("sample %d is empty", i)
	}
	if off >= v.bufOff && off+int64(size) <= v.bufOff+int64(len(v.buf)) {
		return v.buf[off-v.bufOff : off-v.bufOff+int64(size)], nil
	}
	end := off + int64(size)
	if target > i {
		if toff, tsize, _, _ := s.Sample(target); toff > off && toff+int64(tsize)-off <= maxVideoRead {
			end = toff + int64(tsize)
		}
	}
	n := int(end - off)
	if cap(v.buf) < n {
		v.buf = make([]byte, n)
	}
	v.buf = v.buf[:n]
	got, err := s.ReadAt(ctx, v.buf, off)
	if got < len(v.buf) || (err != nil && err != io.EOF) {
		v.buf = v.buf[:0]
		if err == nil || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, bad("sample %d at %d: %d of %d bytes in the file: truncated", i, off, got, n)
		}
		return nil, err
	}
	v.bufOff = off
	return v.buf[:size], nil
}

// videoRGB converts a decoded frame to RGB in the state's buffer.
func (d *Decoder) videoRGB(v *videoState, f *av.Frame) (rgbImage, error) {
	if err := (Size{}).check(f.Width, f.Height, ""); err != nil {
		return rgbImage{}, &badVideo{err}
	}
	n := f.Width * f.Height * 3
	if cap(v.rgb) < n {
		v.rgb = make([]byte, n)
	}
	v.rgb = v.rgb[:n]
	if err := f.RGB(v.rgb); err != nil {
		return rgbImage{}, &badVideo{fmt.Errorf("%w: %v", ErrVideo, err)}
	}
	return rgbImage{Pix: v.rgb, W: f.Width, H: f.Height, Stride: f.Width * 3, Encoded: Size{W: f.Width, H: f.Height}}, nil
}

// closeVideo releases the decoder's video state.
func (d *Decoder) closeVideo() {
	if d.video != nil && d.video.dec != nil {
		d.video.dec.Close()
	}
	d.video = nil
}

// videoFootprint is the bytes the video state's buffers hold (the codec's
// own reference frames are not counted).
func (d *Decoder) videoFootprint() int {
	if d.video == nil {
		return 0
	}
	return cap(d.video.buf) + cap(d.video.rgb)
}

package av

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestDecodeClips decodes every clip and compares the planes with PyAV's
// bit for bit (the decoders are the same libraries, or exact by their
// specifications), the pts with the packets' (which proves the AVFrame pts
// offset), and the RGB with PyAV's to_ndarray(format="rgb24").
func TestDecodeClips(t *testing.T) {
	for _, name := range clipNames {
		t.Run(name, func(t *testing.T) {
			c := loadClip(t, name)
			d := decoder(t, c)
			if d.Name() != c.Decoder {
				t.Errorf("decoder %q, PyAV used %q", d.Name(), c.Decoder)
			}
			frames, err := decodeAll(d, c, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(frames) != c.Frames {
				t.Fatalf("%d frames, want %d", len(frames), c.Frames)
			}
			var sum float64
			largest := 0
			for i, f := range frames {
				if f.pts != c.FramePTS[i] {
					t.Errorf("frame %d: pts %d, want %d (presentation order)", i, f.pts, c.FramePTS[i])
				}
				if f.format.String() != c.PixFmt {
					t.Errorf("frame %d: format %v, want %s", i, f.format, c.PixFmt)
				}
				if want := c.ColorRange == 2 || strings.HasPrefix(c.PixFmt, "yuvj"); f.full != want {
					t.Errorf("frame %d: full range %v, want %v", i, f.full, want)
				}
				if int(f.cs) != c.ColorSpace {
					t.Errorf("frame %d: colour space %d, want %d", i, f.cs, c.ColorSpace)
				}
				if !bytes.Equal(f.yuv, c.yuv[i]) {
					t.Errorf("frame %d: planes differ from PyAV's (max |Δ| %d)", i, testkit.Diff(f.yuv, c.yuv[i]).Max)
				}
				if f.rgbErr != nil {
					t.Fatalf("frame %d: RGB: %v", i, f.rgbErr)
				}
				st := testkit.Diff(f.rgb, c.rgb[i])
				sum += st.Mean
				largest = max(largest, st.Max)
			}
			t.Logf("%s (%s, %s): %d frames, RGB vs PyAV: mean |Δ| %.4f, max |Δ| %d",
				name, d.Name(), c.PixFmt, len(frames), sum/float64(len(frames)), largest)
			if largest != 0 {
				t.Errorf("RGB differs from PyAV's: max |Δ| %d, want 0", largest)
			}
		})
	}
}

// TestResetFromKeyframe: after a full decode and after a decode cut short,
// Reset and decoding from the second keyframe give PyAV's frames from that
// keyframe on, and nothing left over from before.
func TestResetFromKeyframe(t *testing.T) {
	for _, name := range clipNames {
		t.Run(name, func(t *testing.T) {
			c := loadClip(t, name)
			d := decoder(t, c)
			key := -1
			for i, p := range c.Packets {
				if i > 0 && p.Key {
					key = i
					break
				}
			}
			if key < 0 {
				t.Fatal("clip has one keyframe")
			}
			if _, err := decodeAll(d, c, 0); err != nil {
				t.Fatal(err)
			}
			for _, cut := range []int{len(c.samples), 3} {
				if cut < len(c.samples) {
					// Stop in the middle, with frames held back.
					d.Reset()
					for i := range cut {
						if err := d.Send(c.samples[i]); err != nil {
							t.Fatal(err)
						}
						for {
							f, err := d.Receive()
							if err != nil {
								t.Fatal(err)
							}
							if f == nil {
								break
							}
						}
					}
				}
				d.Reset()
				if f, err := d.Receive(); f != nil || err != nil {
					t.Fatalf("Receive right after Reset: %v, %v; want nothing", f, err)
				}
				frames, err := decodeAll(d, c, key)
				if err != nil {
					t.Fatal(err)
				}
				first := c.Frames - len(frames)
				if first < 0 || len(frames) == 0 || frames[0].pts != c.Packets[key].PTS {
					t.Fatalf("cut %d: %d frames from keyframe %d (pts %d)", cut, len(frames), key, c.Packets[key].PTS)
				}
				for i, f := range frames {
					if f.pts != c.FramePTS[first+i] || !bytes.Equal(f.yuv, c.yuv[first+i]) {
						t.Errorf("cut %d: frame %d after Reset (pts %d) differs from PyAV's frame %d", cut, i, f.pts, first+i)
					}
				}
			}
		})
	}
}

// TestCorrupt: truncated samples, random bytes and zeros give errors or
// frames, never a crash or a hang, and the decoder decodes the clip
// correctly after a Reset.
func TestCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range clipNames {
		t.Run(name, func(t *testing.T) {
			c := loadClip(t, name)
			d := decoder(t, c)
			var bad [][]byte
			for _, s := range c.samples {
				bad = append(bad, s[:len(s)/2], s[:1])
			}
			for range 20 {
				b := make([]byte, 1+rng.IntN(300))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				bad = append(bad, b)
			}
			bad = append(bad, make([]byte, 100))
			// Garbage on its own, and after a good keyframe.
			errs := 0
			for round := range 2 {
				d.Reset()
				if round == 1 {
					if err := d.Send(c.samples[0]); err != nil {
						t.Fatal(err)
					}
				}
				for _, b := range bad {
					if err := d.Send(b); err != nil {
						errs++
						continue
					}
					for {
						f, err := d.Receive()
						if err != nil {
							errs++
							break
						}
						if f == nil {
							break
						}
					}
				}
				if err := d.Send(nil); err == nil {
					for {
						f, err := d.Receive()
						if f == nil || err != nil {
							break
						}
					}
				}
			}
			t.Logf("%d corrupt samples, %d errors", 2*len(bad), errs)
			d.Reset()
			frames, err := decodeAll(d, c, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(frames) != c.Frames {
				t.Fatalf("after corrupt input: %d frames, want %d", len(frames), c.Frames)
			}
			for i, f := range frames {
				if !bytes.Equal(f.yuv, c.yuv[i]) {
					t.Errorf("after corrupt input: frame %d differs from PyAV's", i)
				}
			}
		})
	}
}

func TestDrained(t *testing.T) {
	c := loadClip(t, "h264_48x32")
	d := decoder(t, c)
	if _, err := decodeAll(d, c, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Send(c.samples[0]); err == nil {
		t.Error("Send after the end of the stream was accepted without Reset")
	}
	d.Reset()
	if frames, err := decodeAll(d, c, 0); err != nil || len(frames) != c.Frames {
		t.Errorf("after drain and Reset: %d frames, %v", len(frames), err)
	}
}

func TestUnknownCodec(t *testing.T) {
	_, err := NewDecoder("vp9", nil)
	if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "av1, h264 or hevc") {
		t.Errorf("NewDecoder(vp9): %v", err)
	}
}

func TestAvailable(t *testing.T) {
	err := Available()
	if err == nil {
		return
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install libavcodec59") {
		t.Errorf("Available: %v: want ErrUnavailable naming the package to install", err)
	}
	t.Logf("libavcodec unavailable: %v", err)
}

func TestClose(t *testing.T) {
	c := loadClip(t, "av1_48x32")
	d := decoder(t, c)
	d.Close()
	d.Close()
	if err := d.Send(c.samples[0]); err == nil {
		t.Error("Send after Close succeeded")
	}
	if _, err := d.Receive(); err == nil {
		t.Error("Receive after Close succeeded")
	}
	d.Reset()
}

package av

import (
	"errors"
	"testing"

	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// testFrames draws n RGB frames of a moving gradient with a square.
func testFrames(w, h, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		f := make([]byte, w*h*3)
		for y := range h {
			for x := range w {
				p := f[(y*w+x)*3:]
				p[0] = byte(40 + (x*150)/w + i*3)
				p[1] = byte(60 + (y*120)/h)
				p[2] = byte(200 - (x+y)*100/(w+h))
				if x >= 8+2*i && x < 24+2*i && y >= 10 && y < 26 {
					p[0], p[1], p[2] = 230, 40, 40
				}
			}
		}
		out[i] = f
	}
	return out
}

// TestEncodeRoundTrip encodes 12 frames with each codec, decodes them
// with Decoder from the configuration record and the samples, and checks
// the pictures, the timestamps and the keyframes.
func TestEncodeRoundTrip(t *testing.T) {
	const w, h, n = 96, 64, 12
	frames := testFrames(w, h, n)
	for _, codec := range []string{"av1", "h264"} {
		t.Run(codec, func(t *testing.T) {
			enc, err := NewEncoder(codec, w, h, 10, EncoderOptions{})
			if errors.Is(err, ErrUnavailable) {
				skipNoEncoder(t, codec, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			for _, f := range frames {
				if err := enc.Encode(f); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.Flush(); err != nil {
				t.Fatal(err)
			}
			pkts := enc.Packets()
			if len(pkts) != n {
				t.Fatalf("%s: %d packets for %d frames", enc.Name(), len(pkts), n)
			}
			for i, p := range pkts {
				if p.PTS != int64(i) || p.DTS != p.PTS {
					t.Errorf("packet %d: pts %d dts %d, want %d (no reordering)", i, p.PTS, p.DTS, i)
				}
				if want := i%2 == 0; p.Key != want {
					t.Errorf("packet %d: key %v, want %v (GOP 2)", i, p.Key, want)
				}
			}
			dec, err := NewDecoder(codec, enc.Extradata())
			if err != nil {
				t.Fatal(err)
			}
			defer dec.Close()
			rgb := make([]byte, w*h*3)
			got := 0
			take := func() {
				for {
					f, err := dec.Receive()
					if err != nil {
						t.Fatal(err)
					}
					if f == nil {
						return
					}
					if err := f.RGB(rgb); err != nil {
						t.Fatal(err)
					}
					if f.PTS != int64(got) {
						t.Errorf("frame %d: pts %d", got, f.PTS)
					}
					if q := testkit.PSNR(rgb, frames[got]); q < 30 {
						t.Errorf("frame %d: PSNR %.1f dB, want > 30", got, q)
					}
					got++
				}
			}
			for _, p := range pkts {
				if err := dec.SendPTS(p.Data, p.PTS); err != nil {
					t.Fatal(err)
				}
				take()
			}
			if err := dec.Send(nil); err != nil {
				t.Fatal(err)
			}
			take()
			if got != n {
				t.Fatalf("decoded %d frames of %d", got, n)
			}
			t.Logf("%s: extradata %x, %d packets", enc.Name(), enc.Extradata()[:4], len(pkts))
		})
	}
}

// TestEncoderDeterministic encodes the same frames twice.
func TestEncoderDeterministic(t *testing.T) {
	frames := testFrames(96, 64, 6)
	run := func() []Packet {
		enc, err := NewEncoder("av1", 96, 64, 10, EncoderOptions{})
		if errors.Is(err, ErrUnavailable) {
			skipNoEncoder(t, "av1", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		for _, f := range frames {
			if err := enc.Encode(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Flush(); err != nil {
			t.Fatal(err)
		}
		return enc.Packets()
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatalf("%d and %d packets", len(a), len(b))
	}
	for i := range a {
		if string(a[i].Data) != string(b[i].Data) {
			t.Fatalf("packet %d differs between two runs", i)
		}
	}
}

func TestNewEncoderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, codec string
		w, h        int
	}{
		{"unknown codec", "vp9", 64, 48},
		{"odd width", "av1", 63, 48},
		{"zero height", "h264", 64, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewEncoder(tc.codec, tc.w, tc.h, 10, EncoderOptions{}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// skipNoEncoder skips a test that needs codec's encoder: as missing where
// libavcodec itself is, else because this libavcodec was built without it.
func skipNoEncoder(t *testing.T, codec string, err error) {
	t.Helper()
	if Available() != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	t.Skipf("no %s encoder in this libavcodec: %v", codec, err)
}

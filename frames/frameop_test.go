package frames

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// TestFrameOpsAfterColour: a slot's Ops run over every frame after the
// colour ops, in their order, whatever the layout, both when the frame is
// decoded straight into place (its own size) and when it is resized; a
// FrameOp without Apply is refused.
func TestFrameOpsAfterColour(t *testing.T) {
	d := testDecoder(t, JPEGAuto)
	jpg := readTestImage(t, "jpeg420.jpg") // 37x29
	ctx := context.Background()
	// swap exchanges red and blue; add adds v[0] to red (wrapping), so the two orders differ.
	// Brightness first makes the swap's input the colour ops' result.
	swap := FrameOp{Apply: func(f Frame, _ *[FrameOpValues]float32) {
		for y := range f.H() {
			for x := range f.W() {
				r, g, b := f.At(x, y)
				f.Set(x, y, b, g, r)
			}
		}
	}}
	add := FrameOp{Apply: func(f Frame, v *[FrameOpValues]float32) {
		for y := range f.H() {
			for x := range f.W() {
				r, g, b := f.At(x, y)
				f.Set(x, y, r+uint8(v[0]), g, b)
			}
		}
	}, Values: [FrameOpValues]float32{3}}
	colour := []Colour{{Brightness, 1.3}}
	for _, size := range [][2]int{{29, 37}, {20, 24}} {
		for _, layout := range []Layout{BFHWC, BCFHW} {
			t.Run(fmt.Sprintf("%dx%d/%v", size[0], size[1], layout), func(t *testing.T) {
				H, W := size[0], size[1]
				decode := func(a Augment) []byte {
					s := Slot{Buf: make([]byte, 2*H*W*3), Frames: 2, H: H, W: W, Layout: layout, Augment: a}
					if err := (&Images{Key: "cam", Steps: 1, Encoded: steps{jpg}}).Decode(ctx, d, []int{0, 0}, s); err != nil {
						t.Fatal(err)
					}
					return s.Buf
				}
				base := decode(Augment{Colour: colour})
				got := decode(Augment{Colour: colour, Ops: []FrameOp{swap, add}})
				want := make([]byte, len(base))
				for f := range 2 {
					src := newFrameDst(base, layout, f, 2, H, W)
					dst := newFrameDst(want, layout, f, 2, H, W)
					for y := range H {
						for x := range W {
							r, g, b := Frame{src}.At(x, y)
							dst.put(x, y, b+3, g, r)
						}
					}
				}
				if bytes.Equal(base, want) {
					t.Fatal("the ops change nothing on this frame: the test checks nothing")
				}
				if !bytes.Equal(got, want) {
					t.Error("the frames are not the colour ops' result with swap, then add, applied")
				}
			})
		}
	}
	s := Slot{Buf: make([]byte, 29*37*3), Frames: 1, H: 29, W: 37, Augment: Augment{Ops: []FrameOp{{}}}}
	if err := (&Images{Key: "cam", Steps: 1, Encoded: steps{jpg}}).Decode(ctx, d, []int{0}, s); err == nil {
		t.Error("a FrameOp without Apply was accepted")
	}
}

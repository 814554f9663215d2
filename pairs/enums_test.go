package pairs

import (
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/frames"
)

// TestEnumsMatchFrames: the assembler converts Config.Layout,
// Config.Resize and Config.Decode to package frames' types by value, so
// each value must name the same thing in both packages.
func TestEnumsMatchFrames(t *testing.T) {
	for i := range 4 { // every value, and one past them
		if a, b := Layout(i).String(), frames.Layout(i).String(); a != b {
			t.Errorf("layout %d: %s here, %s in frames", i, a, b)
		}
	}
	for i := range 5 {
		if a, b := ResizeMode(i).String(), frames.ResizeMode(i).String(); a != b {
			t.Errorf("resize %d: %s here, %s in frames", i, a, b)
		}
	}
	for i := range 4 {
		m := config.DecodeMode(i)
		if m == config.DecodeGPU {
			// gpu is no way of decoding pixels: its decoded frames are exact
			if p := m.Pixels(); p != config.DecodeExact {
				t.Errorf("decode gpu decodes pixels as %v, want exact", p)
			}
			continue
		}
		if a, b := m.Pixels().String(), frames.DecodeMode(m.Pixels()).String(); a != b {
			t.Errorf("decode %d: %s here, %s in frames", i, a, b)
		}
	}
}

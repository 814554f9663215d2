package synth

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/oxefs/oxefs/format/rlds/example"
	"github.com/oxefs/oxefs/format/synthetic"
)

// TestContentMatchesRecords checks that EpisodeContent gives the numbers,
// the instruction and the frames of the RLDS record of the same episode.
func TestContentMatchesRecords(t *testing.T) {
	for _, d := range synthetic.Datasets()[:4] {
		t.Run(d.Name, func(t *testing.T) {
			const seed, index = 7, 3
			steps := synthetic.EpisodeSteps(d, seed, "val", index)
			k := episodeKey{seed: seed, dataset: d.Name, split: "val", index: index, id: 99, steps: steps}
			rec, _, err := record(d, k, newEncoder())
			if err != nil {
				t.Fatal(err)
			}
			ex, err := example.Parse(rec)
			if err != nil {
				t.Fatal(err)
			}
			c := synthetic.EpisodeContent(d, seed, "val", index, steps)
			off := 0
			for _, a := range d.Actions {
				f, _ := ex.Feature(a.Key)
				vals := f.AppendFloats(nil)
				for s := range steps {
					for i := range a.Dim {
						if vals[s*a.Dim+i] != c.Actions[s][off+i] {
							t.Fatalf("%s step %d [%d]: %v, content %v", a.Key, s, i, vals[s*a.Dim+i], c.Actions[s][off+i])
						}
					}
				}
				off += a.Dim
			}
			if off != d.ActionDim() {
				t.Errorf("ActionDim %d, actions %d", d.ActionDim(), off)
			}
			if d.State.Key != "" {
				f, _ := ex.Feature(d.State.Key)
				vals := f.AppendFloats(nil)
				for s := range steps {
					for i := range d.State.Dim {
						if vals[s*d.State.Dim+i] != c.State[s][i] {
							t.Fatalf("state step %d [%d] differs", s, i)
						}
					}
				}
			}
			if d.Language.Codepoints == 0 {
				f, _ := ex.Feature(d.Language.Key)
				if got := string(f.Bytes(0)); got != c.Instruction {
					t.Errorf("instruction %q, content %q", got, c.Instruction)
				}
			}
			// The last frame of the first camera, encoded as the record's.
			cam := d.Cameras[0]
			img := image.NewRGBA(image.Rect(0, 0, cam.Width, cam.Height))
			c.Render(0, steps-1, img)
			var b bytes.Buffer
			if d.PNG {
				err = (&png.Encoder{CompressionLevel: png.DefaultCompression}).Encode(&b, img)
			} else {
				err = jpeg.Encode(&b, img, &jpeg.Options{Quality: synthetic.JPEGQuality})
			}
			if err != nil {
				t.Fatal(err)
			}
			f, _ := ex.Feature(cam.Key)
			if !bytes.Equal(f.Bytes(steps-1), b.Bytes()) {
				t.Error("rendered frame differs from the record's")
			}
		})
	}
}

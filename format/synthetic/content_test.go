package synthetic

import (
	"image"
	"slices"
	"testing"
)

// TestActionPartsFillTheirWidth: each action part of the table takes as
// many values from the plan vector as its Dim, so that a writer can cut
// Content.Actions back into parts by Dim.
func TestActionPartsFillTheirWidth(t *testing.T) {
	var full [maxActionDim]float32
	for _, d := range Datasets() {
		for _, a := range d.Actions {
			if n := len(actionPart(a, full[:])); n != a.Dim {
				t.Errorf("%s %s: the part takes %d values, Dim is %d", d.Name, a.Key, n, a.Dim)
			}
		}
	}
}

// TestContentIsAFunctionOfItsKey: the same key gives the same content,
// whatever was drawn before, and another episode gives other content.
func TestContentIsAFunctionOfItsKey(t *testing.T) {
	d := Datasets()[0]
	steps := EpisodeSteps(d, 3, "train", 1)
	if steps < d.MinSteps || steps > d.MaxSteps {
		t.Fatalf("EpisodeSteps %d outside [%d, %d]", steps, d.MinSteps, d.MaxSteps)
	}
	a := EpisodeContent(d, 3, "train", 1, steps)
	EpisodeContent(d, 3, "train", 2, steps)
	b := EpisodeContent(d, 3, "train", 1, steps)
	if a.Instruction != b.Instruction || len(a.Actions) != steps || len(a.Actions[0]) != d.ActionDim() {
		t.Fatalf("content differs or is misshapen: %q / %q, %d actions of %d", a.Instruction, b.Instruction, len(a.Actions), len(a.Actions[0]))
	}
	for s := range steps {
		if !slices.Equal(a.Actions[s], b.Actions[s]) {
			t.Fatalf("step %d: actions differ for the same key", s)
		}
	}
	cam := d.Cameras[0]
	ia := image.NewRGBA(image.Rect(0, 0, cam.Width, cam.Height))
	ib := image.NewRGBA(image.Rect(0, 0, cam.Width, cam.Height))
	b.Render(0, steps-1, ib) // b renders out of order: frames do not depend on it
	a.Render(0, 0, ia)
	a.Render(0, steps-1, ia)
	if !slices.Equal(ia.Pix, ib.Pix) {
		t.Error("the same frame rendered twice differs")
	}
	c := EpisodeContent(d, 3, "train", 2, steps)
	if slices.Equal(c.Actions[1], a.Actions[1]) {
		t.Error("episodes 1 and 2 have the same actions")
	}
}

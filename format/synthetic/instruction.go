package synthetic

import (
	"math"
	"strings"
)

// maxActionDim is the widest action the plan vector provides.
const maxActionDim = 30

// actionPart picks an action feature's values out of the plan vector by
// what its key means.
func actionPart(a Tensor, full []float32) []float32 {
	switch {
	case strings.HasSuffix(a.Key, "/world_vector"):
		return full[0:3]
	case strings.HasSuffix(a.Key, "/rotation_delta"):
		return full[3:6]
	case strings.HasSuffix(a.Key, "/gripper_closedness_action"):
		return full[6:7]
	case strings.HasSuffix(a.Key, "/open_gripper"):
		return []float32{1 - full[6]}
	}
	return full[:a.Dim]
}

// colourNames name an object's colour in its instruction.
var colourNames = []struct {
	name string
	rgb  [3]float64
}{
	{"red", [3]float64{220, 40, 40}}, {"green", [3]float64{40, 200, 60}}, {"blue", [3]float64{40, 80, 220}},
	{"yellow", [3]float64{230, 220, 50}}, {"orange", [3]float64{240, 140, 30}}, {"purple", [3]float64{150, 50, 200}},
	{"pink", [3]float64{240, 130, 190}}, {"cyan", [3]float64{40, 210, 220}}, {"white", [3]float64{235, 235, 235}},
	{"grey", [3]float64{128, 128, 128}}, {"brown", [3]float64{130, 80, 40}}, {"black", [3]float64{30, 30, 30}},
}

func colourName(c [3]float64) string {
	best, dist := "", math.Inf(1)
	for _, n := range colourNames {
		d := 0.0
		for i := range c {
			d += (c[i] - n.rgb[i]) * (c[i] - n.rgb[i])
		}
		if d < dist {
			best, dist = n.name, d
		}
	}
	return best
}

// instruction describes what the episode's arm does, in the words of the
// OXE datasets' annotations.
func instruction(m *motion, r *rng) string {
	o := m.objects[m.carried]
	shape := "block"
	if o.round {
		shape = []string{"ball", "can", "cup", "sponge"}[r.intn(4)]
	}
	obj := colourName(o.col) + " " + shape
	other := m.objects[(m.carried+1)%len(m.objects)]
	dest := colourName(other.col) + " " + []string{"bowl", "plate", "box", "cloth"}[r.intn(4)]
	switch r.intn(5) {
	case 0:
		return "pick up the " + obj + " and put it in the " + dest
	case 1:
		return "move the " + obj + " next to the " + dest
	case 2:
		return "put " + obj + " on " + dest
	case 3:
		return "place the " + obj + " to the " + []string{"left", "right", "front", "back"}[r.intn(4)] + " of the " + dest
	default:
		return "push the " + obj + " towards the " + dest
	}
}

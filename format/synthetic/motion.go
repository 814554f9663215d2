package synthetic

import "math"

// motion is one episode's plan, which its cameras, actions and states all
// follow, so that they agree: the end effector reaches for an object,
// closes the gripper, carries the object to a place, opens the gripper and
// retreats. Positions are in a unit workspace: x, y across the table,
// z the height above it.
type motion struct {
	steps  int
	pos    [][3]float64 // end effector, per step
	rot    [][3]float64 // roll, pitch, yaw, per step
	grip   []float64    // 0 open, 1 closed, per step
	joints [][8]float64 // smooth joint-like signals for wide actions/states

	objects []object
	carried int          // index in objects of the one the gripper moves
	held    [][2]float64 // the carried object's position, per step
}

// object is something on the table. Its position is in workspace units; a
// carried object follows the gripper while it is closed.
type object struct {
	x, y   float64
	rx, ry float64 // half-extent
	round  bool    // ellipse, else box
	col    [3]float64
}

func smoothstep(t float64) float64 {
	t = min(max(t, 0), 1)
	return t * t * (3 - 2*t)
}

// newMotion draws an episode plan of n steps.
func newMotion(r *rng, n int) *motion {
	m := &motion{
		steps:  n,
		pos:    make([][3]float64, n),
		rot:    make([][3]float64, n),
		grip:   make([]float64, n),
		joints: make([][8]float64, n),
	}
	k := r.span(4, 8)
	for i := 0; i < k; i++ {
		o := object{
			x:     r.between(0.15, 0.85),
			y:     r.between(0.3, 0.85),
			rx:    r.between(0.03, 0.09),
			round: r.intn(2) == 0,
		}
		o.ry = o.rx * r.between(0.6, 1.5)
		// Saturated toy colours, as on most lab tables.
		for c := range o.col {
			o.col[c] = r.between(20, 235)
		}
		o.col[r.intn(3)] = r.between(170, 250)
		m.objects = append(m.objects, o)
	}
	m.carried = r.intn(k)
	target := m.objects[m.carried]

	start := [3]float64{r.between(0.3, 0.7), r.between(0.1, 0.3), r.between(0.6, 0.9)}
	pick := [3]float64{target.x, target.y, 0.05}
	place := [3]float64{r.between(0.15, 0.85), r.between(0.35, 0.85), 0.08}
	end := [3]float64{r.between(0.3, 0.7), r.between(0.1, 0.35), r.between(0.5, 0.9)}
	// Phase boundaries, as fractions of the episode.
	tGrasp := r.between(0.3, 0.4)
	tRelease := r.between(0.65, 0.8)
	wob := [3]float64{r.between(0.005, 0.015), r.between(0.005, 0.015), r.between(0.005, 0.02)}
	wf := r.between(0.2, 0.5)
	var phase [8]float64
	var freq [8]float64
	for j := range phase {
		phase[j] = r.between(0, 2*math.Pi)
		freq[j] = r.between(0.05, 0.25)
	}
	rot0 := [3]float64{r.between(-0.2, 0.2), r.between(-0.2, 0.2), r.between(-math.Pi, math.Pi)}

	for s := 0; s < n; s++ {
		t := float64(s) / float64(max(n-1, 1))
		var a, b [3]float64
		var u float64
		switch {
		case t < tGrasp:
			a, b, u = start, pick, smoothstep(t/tGrasp*1.15)
		case t < tRelease:
			a, b, u = pick, place, smoothstep((t-tGrasp)/(tRelease-tGrasp)*1.1-0.05)
			m.grip[s] = 1
		default:
			a, b, u = place, end, smoothstep((t-tRelease)/(1-tRelease)*1.2)
		}
		// Lift while carrying: the z path is an arc over the straight line.
		lift := 0.0
		if m.grip[s] == 1 {
			lift = 0.25 * math.Sin(math.Pi*u)
		}
		for c := range 3 {
			m.pos[s][c] = a[c] + (b[c]-a[c])*u + wob[c]*math.Sin(wf*float64(s)+phase[c])
		}
		m.pos[s][2] += lift
		for c := range 3 {
			m.rot[s][c] = rot0[c] + 0.1*math.Sin(freq[c]*float64(s)+phase[3+c])
		}
		for j := range m.joints[s] {
			m.joints[s][j] = 0.8*math.Sin(freq[j]*float64(s)+phase[j]) + 0.3*m.pos[s][j%3]
		}
	}
	// The carried object rides under the gripper while it is closed and
	// stays where it was put after.
	m.held = make([][2]float64, n)
	at := [2]float64{target.x, target.y}
	for s := range n {
		if m.grip[s] == 1 {
			at = [2]float64{m.pos[s][0], m.pos[s][1]}
		}
		m.held[s] = at
	}
	return m
}

// objectAt returns object i's position at step s.
func (m *motion) objectAt(i, s int) (x, y float64) {
	if i == m.carried {
		return m.held[s][0], m.held[s][1]
	}
	return m.objects[i].x, m.objects[i].y
}

// action returns the step's action as a robot would log it: the first
// three values are the end effector's translation to the next step, then
// its rotation, then the gripper command, then joint-like velocities.
// dim may be anything from 1 to 30; values beyond the plan's 15 signals
// repeat them with other scales.
func (m *motion) action(s int, dst []float32) {
	nxt := min(s+1, m.steps-1)
	var v [15]float64
	for c := range 3 {
		v[c] = (m.pos[nxt][c] - m.pos[s][c]) * 10
		v[3+c] = (m.rot[nxt][c] - m.rot[s][c]) * 10
	}
	v[6] = m.grip[nxt]
	for j := range 8 {
		v[7+j] = m.joints[nxt][j] - m.joints[s][j]
	}
	for i := range dst {
		dst[i] = float32(v[i%15] * float64(1+i/15))
	}
}

// state returns the robot's proprioception at step s: position, rotation,
// gripper, then joint positions.
func (m *motion) state(s int, dst []float32) {
	var v [15]float64
	copy(v[:3], m.pos[s][:])
	copy(v[3:6], m.rot[s][:])
	v[6] = m.grip[s]
	copy(v[7:], m.joints[s][:])
	for i := range dst {
		dst[i] = float32(v[i%15])
	}
}

package av

import (
	"slices"
	"testing"
)

// BenchmarkDecode decodes each clip end to end (Reset, every sample,
// drain) and reports frames/s.
func BenchmarkDecode(b *testing.B) {
	for _, name := range clipNames {
		b.Run(name, func(b *testing.B) {
			c := loadClip(b, name)
			d := decoder(b, c)
			n := 0
			count := func(*Frame) { n++ }
			sends := append(slices.Clone(c.samples), nil) // nil: drain
			for b.Loop() {
				d.Reset()
				for _, s := range sends {
					if err := d.Send(s); err != nil {
						b.Fatal(err)
					}
					if err := receiveAll(d, count); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkRGB converts a 640x480 yuv420p frame, LeRobot's usual camera
// size.
func BenchmarkRGB(b *testing.B) {
	const w, h = 640, 480
	y := make([]byte, w*h)
	u := make([]byte, w*h/4)
	v := make([]byte, w*h/4)
	for i := range y {
		y[i] = byte(i * 7)
	}
	for i := range u {
		u[i], v[i] = byte(i*3), byte(i*5)
	}
	f := &Frame{Width: w, Height: h, Format: YUV420P, Planes: [3][]byte{y, u, v}, Strides: [3]int{w, w / 2, w / 2}, ColorSpace: ColorSpaceUnspecified}
	dst := make([]byte, w*h*3)
	b.SetBytes(w * h * 3)
	n := 0
	for b.Loop() {
		if err := f.RGB(dst); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
}

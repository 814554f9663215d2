package view

import (
	"image"
	"math/rand/v2"
	"testing"
)

// BenchmarkEncodeFrame: the cost of one 256×256 frame on the page, as
// PNG (exact, the default) and JPEG.
func BenchmarkEncodeFrame(b *testing.B) {
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		// A textured image: smooth gradients plus noise, like a camera's.
		img.Pix[i] = byte(i/1024 + r.IntN(24))
	}
	for _, format := range []string{"png", "jpeg"} {
		b.Run(format, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := encodeFrame(img, format); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

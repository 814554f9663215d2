package testkit

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"testing"
)

// DiffStats compares two equally long pixel arrays.
type DiffStats struct {
	Mean  float64
	Max   int
	Count int // values that differ
}

// Diff compares a and b value by value.
func Diff(a, b []byte) DiffStats {
	var s DiffStats
	var sum int
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
		s.Max = max(s.Max, d)
		if d != 0 {
			s.Count++
		}
	}
	s.Mean = float64(sum) / float64(len(a))
	return s
}

// PSNR is the peak signal-to-noise ratio of b against a, in dB, for 8-bit
// values: 10·log10(255² / mean squared difference). Equal arrays give +Inf.
func PSNR(a, b []byte) float64 {
	var se float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		se += d * d
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(len(a))))
}

func (s DiffStats) String() string {
	return fmt.Sprintf("mean |diff| %.4f, max %d, %d values differ", s.Mean, s.Max, s.Count)
}

// PNGBomb writes a valid PNG of w×h pixels of one colour (all zeros), of
// the given bit depth and colour type (2: RGB, 6: RGBA, 0: gray): a few KB
// that image/png would decode into w·h·(bytes per pixel) bytes.
func PNGBomb(t testing.TB, w, h, depth, colorType int) []byte {
	t.Helper()
	channels := map[int]int{0: 1, 2: 3, 4: 2, 6: 4}[colorType]
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.Write(&out, binary.BigEndian, c.Sum32())
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, byte(depth), byte(colorType), 0, 0, 0)
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	zw, err := zlib.NewWriterLevel(&idat, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]byte, 1+(w*channels*depth+7)/8) // filter byte 0, then zeros
	for range h {
		if _, err := zw.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// FrameHWC extracts frame f of a sample's slot of F frames of H×W as
// [H][W][3]: the slot is [F][H][W][3], or [3][F][H][W] when planar.
func FrameHWC(slot []byte, planar bool, f, F, H, W int) []byte {
	out := make([]byte, H*W*3)
	for y := range H {
		for x := range W {
			for c := range 3 {
				i := ((f*H+y)*W+x)*3 + c
				if planar {
					i = ((c*F+f)*H+y)*W + x
				}
				out[(y*W+x)*3+c] = slot[i]
			}
		}
	}
	return out
}

// Allocated returns the bytes f allocates on the Go heap.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

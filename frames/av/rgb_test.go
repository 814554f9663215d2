package av

import (
	"encoding/json"
	"fmt"
	"image"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestRGBNoise compares Frame.RGB with PyAV's conversion of random frames
// in every pixel format, colour space and range it handles (no libavcodec
// needed: the frames are built from testdata/noise.yuv.png).
func TestRGBNoise(t *testing.T) {
	var meta struct {
		Width, Height int
		Cases         []struct {
			PixFmt     string `json:"pix_fmt"`
			ColorSpace int    `json:"colorspace"`
			ColorRange int    `json:"color_range"`
		}
	}
	if err := json.Unmarshal(readFile(t, "noise.json"), &meta); err != nil {
		t.Fatal(err)
	}
	w, h := meta.Width, meta.Height
	yuv := readPNG(t, "noise.yuv.png")
	rgb := splitRGB(t, readPNG(t, "noise.rgb.png"), len(meta.Cases), w, h)
	formats := map[string]PixelFormat{"yuv420p": YUV420P, "yuvj420p": YUVJ420P, "yuv422p": YUV422P, "yuvj422p": YUVJ422P}
	row := 0
	for i, tc := range meta.Cases {
		format, ok := formats[tc.PixFmt]
		if !ok {
			t.Fatalf("case %d: format %s", i, tc.PixFmt)
		}
		ch := h
		if format == YUV420P || format == YUVJ420P {
			ch = (h + 1) / 2
		}
		planes := splitYUV(t, subImage(t, yuv, row, h+2*ch), 1, w, h, (w+1)/2, ch)[0]
		row += h + 2*ch
		cw := (w + 1) / 2
		f := &Frame{
			Width: w, Height: h, Format: format,
			Planes:     [3][]byte{planes[:w*h], planes[w*h : w*h+cw*ch], planes[w*h+cw*ch:]},
			Strides:    [3]int{w, cw, cw},
			FullRange:  tc.ColorRange == 2,
			ColorSpace: ColorSpace(tc.ColorSpace),
		}
		t.Run(fmt.Sprintf("%s_cs%d_range%d", tc.PixFmt, tc.ColorSpace, tc.ColorRange), func(t *testing.T) {
			dst := make([]byte, w*h*3)
			if err := f.RGB(dst); err != nil {
				t.Fatal(err)
			}
			if st := testkit.Diff(dst, rgb[i]); st.Max != 0 {
				t.Errorf("RGB vs PyAV: %v, want 0", st)
			}
		})
	}
}

func TestRGBRefuses(t *testing.T) {
	y := make([]byte, 64*64)
	ok := Frame{Width: 8, Height: 8, Format: YUV420P, Planes: [3][]byte{y, y, y}, Strides: [3]int{8, 4, 4}, ColorSpace: ColorSpaceUnspecified}
	for _, tc := range []struct {
		name string
		edit func(*Frame)
		dst  int
		want string
	}{
		{"small destination", func(*Frame) {}, 8*8*3 - 1, "destination"},
		{"odd height", func(f *Frame) { f.Height = 7 }, 8 * 8 * 3, "odd height"},
		{"4:4:4", func(f *Frame) { f.Format = YUV444P }, 8 * 8 * 3, "yuv444p"},
		{"10-bit", func(f *Frame) { f.Format = 64; f.formatName = "yuv420p10le" }, 8 * 8 * 3, "yuv420p10le"},
		{"YCgCo", func(f *Frame) { f.ColorSpace = 8 }, 8 * 8 * 3, "colour space 8"},
		{"no planes", func(f *Frame) { f.Planes = [3][]byte{} }, 8 * 8 * 3, "plane 0"},
		{"short chroma", func(f *Frame) { f.Planes[2] = y[:15] }, 8 * 8 * 3, "plane 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ok
			tc.edit(&f)
			err := f.RGB(make([]byte, tc.dst))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RGB: %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if err := ok.RGB(make([]byte, 8*8*3)); err != nil {
		t.Errorf("RGB of a valid frame: %v", err)
	}
}

// TestRGBCoefficients pins the int16 coefficients derived for BT.601 to
// the values libswscale stores (yCoeff, vrCoeff, ubCoeff, vgCoeff,
// ugCoeff): 9539 13075 16525 −6660 −3209 limited, 8192 11485 14516 −5850
// −2819 full.
func TestRGBCoefficients(t *testing.T) {
	for _, tc := range []struct {
		full bool
		want [5]int32 // the table entries for Y = 255 and U, V = 255
	}{
		{false, [5]int32{(2040 - 128) * 9539 >> 16, 1016 * 13075 >> 16, 1016 * 16525 >> 16, 1016 * -3209 >> 16, 1016 * -6660 >> 16}},
		{true, [5]int32{2040 * 8192 >> 16, 1016 * 11485 >> 16, 1016 * 14516 >> 16, 1016 * -2819 >> 16, 1016 * -5850 >> 16}},
	} {
		tb := tablesFor(bt601, tc.full)
		got := [5]int32{tb.y[255], tb.vr[255], tb.ub[255], tb.ug[255], tb.vg[255]}
		if got != tc.want {
			t.Errorf("full=%v: %v, want %v", tc.full, got, tc.want)
		}
	}
}

// subImage returns rows [row, row+n) of a grey image.
func subImage(t *testing.T, img image.Image, row, n int) image.Image {
	t.Helper()
	g, ok := img.(*image.Gray)
	if !ok {
		t.Fatalf("YUV image is %T, want grey", img)
	}
	return g.SubImage(image.Rect(0, row, g.Rect.Dx(), row+n))
}

// TestRGBClampRange checks the bound clampTable relies on: every channel
// sum, for every matrix and range, lies within its index range.
func TestRGBClampRange(t *testing.T) {
	for _, m := range []matrix{bt601, bt709, fcc, smpte240, bt2020} {
		for _, full := range []bool{false, true} {
			tb := tablesFor(m, full)
			lo, hi := int32(0), int32(0)
			for y := range 256 {
				for c := range 256 {
					for _, s := range []int32{tb.y[y] + tb.vr[c], tb.y[y] + tb.ub[c], tb.y[y] + tb.ug[c] + tb.vg[0], tb.y[y] + tb.ug[c] + tb.vg[255], tb.y[y] + tb.ug[0] + tb.vg[c], tb.y[y] + tb.ug[255] + tb.vg[c]} {
						lo, hi = min(lo, s), max(hi, s)
					}
				}
			}
			if lo+clampOffset < 0 || hi+clampOffset >= int32(len(clampTable)) {
				t.Errorf("matrix %v full %v: sums in [%d, %d], outside the clamp table", m, full, lo, hi)
			}
		}
	}
}

// TestRGBOddWidth: the last column of an odd-width frame converts as the
// same column of a frame one pixel wider.
func TestRGBOddWidth(t *testing.T) {
	const w, h = 7, 4
	y := []byte("abcdefgh" + "ijklmnop" + "qrstuvwx" + "yz012345")
	u := []byte{10, 60, 120, 250, 30, 90, 200, 5}
	v := []byte{240, 128, 16, 70, 1, 255, 99, 180}
	odd := &Frame{Width: w, Height: h, Format: YUV420P, Planes: [3][]byte{y, u, v}, Strides: [3]int{8, 4, 4}}
	even := *odd
	even.Width = w + 1
	a, b := make([]byte, w*h*3), make([]byte, (w+1)*h*3)
	if err := odd.RGB(a); err != nil {
		t.Fatal(err)
	}
	if err := even.RGB(b); err != nil {
		t.Fatal(err)
	}
	for r := range h {
		if got, want := a[r*w*3:][:w*3], b[r*(w+1)*3:][:w*3]; string(got) != string(want) {
			t.Errorf("row %d: %v, want %v", r, got, want)
		}
	}
}

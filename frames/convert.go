package frames

import (
	"fmt"
	"image"
	"image/color"
)

// toRGB writes img as packed RGB into dst (len 3·w·h), the way
// tf.io.decode_image(…, channels=3) converts: gray is replicated, alpha is
// dropped without compositing, 16-bit samples keep their high byte (libpng's
// png_set_strip_16). It handles every type image/jpeg and image/png return.
// rows is scratch for the chroma upsampling of image/jpeg's output.
func toRGB(dst []byte, img image.Image, rows *[]byte) error {
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	switch m := img.(type) {
	case *image.YCbCr:
		if !ycbcrFancy(dst, m, rows) {
			ycbcrToRGB(dst, m)
		}
	case *image.Gray:
		for y := range h {
			src := m.Pix[y*m.Stride : y*m.Stride+w]
			out := dst[y*w*3 : (y+1)*w*3]
			for x, v := range src {
				out[3*x], out[3*x+1], out[3*x+2] = v, v, v
			}
		}
	case *image.Gray16:
		for y := range h {
			src := m.Pix[y*m.Stride : y*m.Stride+2*w]
			out := dst[y*w*3 : (y+1)*w*3]
			for x := range w {
				v := src[2*x]
				out[3*x], out[3*x+1], out[3*x+2] = v, v, v
			}
		}
	case *image.RGBA: // opaque PNGs: premultiplied equals straight
		packRGB(dst, m.Pix, m.Stride, w, h, 4, 1)
	case *image.NRGBA:
		packRGB(dst, m.Pix, m.Stride, w, h, 4, 1)
	case *image.RGBA64:
		packRGB(dst, m.Pix, m.Stride, w, h, 8, 2)
	case *image.NRGBA64:
		packRGB(dst, m.Pix, m.Stride, w, h, 8, 2)
	case *image.Paletted:
		var pal [256][3]byte
		for i, c := range m.Palette {
			if i == len(pal) {
				break
			}
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			pal[i] = [3]byte{n.R, n.G, n.B}
		}
		for y := range h {
			src := m.Pix[y*m.Stride : y*m.Stride+w]
			out := dst[y*w*3 : (y+1)*w*3]
			for x, v := range src {
				p := pal[v]
				out[3*x], out[3*x+1], out[3*x+2] = p[0], p[1], p[2]
			}
		}
	case *image.CMYK:
		for y := range h {
			src := m.Pix[y*m.Stride : y*m.Stride+4*w]
			out := dst[y*w*3 : (y+1)*w*3]
			for x := range w {
				p := src[4*x : 4*x+4]
				out[3*x], out[3*x+1], out[3*x+2] = color.CMYKToRGB(p[0], p[1], p[2], p[3])
			}
		}
	default:
		return fmt.Errorf("%w: unsupported pixel type %T", ErrUndecodable, img)
	}
	return nil
}

// packRGB copies the first three samples of each pixel (the high byte of
// each when samples are 2 bytes, big-endian as Go stores them).
func packRGB(dst, pix []byte, stride, w, h, bpp, bps int) {
	for y := range h {
		src := pix[y*stride : y*stride+bpp*w]
		out := dst[y*w*3 : (y+1)*w*3]
		for x := range w {
			p := src[bpp*x : bpp*x+bpp]
			out[3*x], out[3*x+1], out[3*x+2] = p[0], p[bps], p[2*bps]
		}
	}
}

// ycbcrToRGB converts image/jpeg's planes with libjpeg's colour conversion
// and nearest-neighbour chroma (what libjpeg does for 4:4:4 and for the
// ratios it has no fancy upsampler for).
func ycbcrToRGB(dst []byte, m *image.YCbCr) {
	r := m.Rect
	w, h := r.Dx(), r.Dy()
	var hs, vs int // chroma shifts
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio422:
		hs = 1
	case image.YCbCrSubsampleRatio420:
		hs, vs = 1, 1
	case image.YCbCrSubsampleRatio440:
		vs = 1
	case image.YCbCrSubsampleRatio411:
		hs = 2
	case image.YCbCrSubsampleRatio410:
		hs, vs = 2, 1
	}
	for y := range h {
		yy := r.Min.Y + y
		ys := m.Y[(yy-r.Min.Y)*m.YStride : (yy-r.Min.Y)*m.YStride+w]
		crow := ((yy >> vs) - (r.Min.Y >> vs)) * m.CStride
		out := dst[y*w*3 : (y+1)*w*3]
		for x, yv := range ys {
			ci := crow + ((r.Min.X + x) >> hs) - (r.Min.X >> hs)
			out[3*x], out[3*x+1], out[3*x+2] = yccToRGB(yv, m.Cb[ci], m.Cr[ci])
		}
	}
}

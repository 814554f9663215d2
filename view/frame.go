package view

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
)

// frameRef names one frame of a batch: sample, slot, history step.
type frameRef struct {
	Sample int
	Slot   string
	Step   int
}

// frameFile is the file and array layout that hold a slot's frames.
func (r rankDir) frameFile(dir string, n int64, slot string) (string, error) {
	if _, steps := r.info.steps(); !steps {
		if slot != "frames" {
			return "", badRequest("slot %q: a pair-mode batch has one slot, frames", slot)
		}
		return dir + batchName(n) + ".npy", nil
	}
	for _, s := range r.info.Sample.Slots {
		if s.Name == slot {
			file := "observation.images." + slot + ".npy"
			if !safeArrayFile.MatchString(file) {
				return "", fmt.Errorf("slot name %q", slot)
			}
			return dir + batchName(n) + "." + file, nil
		}
	}
	names := make([]string, 0, len(r.info.Sample.Slots))
	for _, s := range r.info.Sample.Slots {
		names = append(names, s.Name)
	}
	return "", badRequest("slot %q: the mix's slots are %v", slot, names)
}

// readFrame reads one frame, [H, W, 3] uint8, from an array of frames
// laid out BFHWC ([B, T, H, W, 3]) or BCFHW ([B, 3, T, H, W]).
func readFrame(f io.ReaderAt, a npyArray, layout string, ref frameRef) (*image.RGBA, error) {
	if a.DType != "|u1" || len(a.Shape) != 5 {
		return nil, fmt.Errorf("frames array %s %v", a.DType, a.Shape)
	}
	B := a.Shape[0]
	var T, H, W int
	planar := layout == "BCFHW"
	if planar {
		T, H, W = a.Shape[2], a.Shape[3], a.Shape[4]
	} else {
		T, H, W = a.Shape[1], a.Shape[2], a.Shape[3]
	}
	if ref.Sample < 0 || ref.Sample >= B {
		return nil, badRequest("sample %d: the batch holds samples 0 to %d", ref.Sample, B-1)
	}
	if ref.Step < 0 || ref.Step >= T {
		return nil, badRequest("step %d: the slot has steps 0 to %d", ref.Step, T-1)
	}
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	plane := int64(H) * int64(W)
	if !planar {
		buf := make([]byte, plane*3)
		off := a.Offset + (int64(ref.Sample)*int64(T)+int64(ref.Step))*plane*3
		if _, err := f.ReadAt(buf, off); err != nil {
			return nil, err
		}
		for p := range plane {
			copy(img.Pix[p*4:p*4+3], buf[p*3:p*3+3])
			img.Pix[p*4+3] = 255
		}
		return img, nil
	}
	buf := make([]byte, plane)
	for c := range int64(3) {
		off := a.Offset + ((int64(ref.Sample)*3+c)*int64(T)+int64(ref.Step))*plane
		if _, err := f.ReadAt(buf, off); err != nil {
			return nil, err
		}
		for p := range plane {
			img.Pix[p*4+c] = buf[p]
		}
	}
	for p := range plane {
		img.Pix[p*4+3] = 255
	}
	return img, nil
}

// encodeFrame writes img as PNG (exact) or JPEG (smaller). The PNG is
// stored without compression: 1.7 ms for a 256×256 frame against 24 ms
// at png.BestSpeed (BenchmarkEncodeFrame), and the page is served on
// loopback, where bytes are cheap and CPU is the trainer's.
func encodeFrame(img image.Image, format string) ([]byte, string, error) {
	var b bytes.Buffer
	switch format {
	case "", "png":
		enc := png.Encoder{CompressionLevel: png.NoCompression}
		if err := enc.Encode(&b, img); err != nil {
			return nil, "", err
		}
		return b.Bytes(), "image/png", nil
	case "jpeg":
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
			return nil, "", err
		}
		return b.Bytes(), "image/jpeg", nil
	}
	return nil, "", badRequest("format %q: png or jpeg", format)
}

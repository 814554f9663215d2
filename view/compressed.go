package view

import (
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"io"
	"math"
	"slices"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/frames"
)

// compressedFiles names, for a slot of a decode: gpu mount, the file of
// its frames' JPEG sizes and the file of its augmentation rows (each ""
// when there is none): a frame with a size holds its JPEG's bytes, which
// the page decodes as the trainer would.
func (r rankDir) compressedFiles(dir string, n int64, slot string) (sizes, rows string) {
	s, steps := r.info.steps()
	if !steps {
		if r.info.Frames == nil || r.info.Frames.JPEGSize == "" {
			return "", ""
		}
		sizes = dir + batchName(n) + ".jpeg_size.npy"
		if slices.Contains(r.info.Files, "augment.npy") {
			rows = dir + batchName(n) + ".augment.npy"
		}
		return sizes, rows
	}
	for _, sl := range s.Slots {
		if sl.Name != slot || sl.JPEGSize == "" || !safeArrayFile.MatchString(sl.JPEGSize+".npy") {
			continue
		}
		sizes = dir + batchName(n) + "." + sl.JPEGSize + ".npy"
		for _, a := range s.Arrays {
			if a.Name == "observation.images."+slot+".augment" && safeArrayFile.MatchString(a.File) {
				rows = dir + batchName(n) + "." + a.File
			}
		}
	}
	return sizes, rows
}

// compressedFrame returns the frame ref of a decode: gpu batch decoded as
// the trainer decodes it — the JPEG in the frame's place, resized and
// augmented as the batch's row says — or nil when the frame holds pixels
// (its size is 0). f and a are the slot's frames array (BFHWC).
func (s *Server) compressedFrame(ctx context.Context, f io.ReaderAt, a npyArray, sizesFile, rowsFile, resize string, ref frameRef) (*image.RGBA, error) {
	sf, sa, err := s.mount.openArray(sizesFile)
	if err != nil {
		return nil, err
	}
	defer sf.Close()
	B, T, H, W := a.Shape[0], a.Shape[1], a.Shape[2], a.Shape[3]
	if sa.DType != "<i4" || !slices.Equal(sa.Shape, []int{B, T}) {
		return nil, fmt.Errorf("%s: %s %v, want int32 [%d %d]", sizesFile, sa.DType, sa.Shape, B, T)
	}
	at := int64(ref.Sample)*int64(T) + int64(ref.Step)
	var b4 [4]byte
	if _, err := sf.ReadAt(b4[:], sa.Offset+4*at); err != nil {
		return nil, err
	}
	size := int64(int32(binary.LittleEndian.Uint32(b4[:])))
	if size == 0 {
		return nil, nil
	}
	room := int64(H) * int64(W) * 3
	if size < 0 || size > room {
		return nil, fmt.Errorf("%s: sample %d step %d: a JPEG of %d bytes in a frame of %d", sizesFile, ref.Sample, ref.Step, size, room)
	}
	jpeg := make([]byte, size)
	if _, err := f.ReadAt(jpeg, a.Offset+at*room); err != nil {
		return nil, err
	}
	p := augment.Identity()
	if rowsFile != "" {
		if p, err = s.readRow(rowsFile, ref.Sample, B); err != nil {
			return nil, err
		}
	}
	mode, ok := map[string]frames.ResizeMode{"": frames.Squash, "squash": frames.Squash, "crop": frames.Crop, "pad": frames.Pad}[resize]
	if !ok {
		return nil, fmt.Errorf("info.json: resize %q (valid: squash, crop, pad)", resize)
	}
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	buf := make([]byte, room)
	src := &frames.Images{Key: ref.Slot, Steps: 1, Encoded: oneImage(jpeg)}
	dst := frames.Slot{Buf: buf, Frames: 1, H: H, W: W, Layout: frames.BFHWC, Resize: mode, Decode: frames.Exact, Augment: p.Augment()}
	if err := src.Decode(ctx, dec, []int{0}, dst); err != nil {
		return nil, fmt.Errorf("sample %d step %d: the compressed frame: %w", ref.Sample, ref.Step, err)
	}
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	for px := range H * W {
		copy(img.Pix[px*4:px*4+3], buf[px*3:px*3+3])
		img.Pix[px*4+3] = 255
	}
	return img, nil
}

// readRow reads sample i's augmentation row from an [B, width] float32
// array file.
func (s *Server) readRow(name string, i, B int) (augment.Params, error) {
	f, a, err := s.mount.openArray(name)
	if err != nil {
		return augment.Params{}, err
	}
	defer f.Close()
	if a.DType != "<f4" || len(a.Shape) != 2 || a.Shape[0] != B || a.Shape[1] != augment.Width() {
		return augment.Params{}, fmt.Errorf("%s: %s %v, want float32 [%d %d]", name, a.DType, a.Shape, B, augment.Width())
	}
	raw := make([]byte, 4*a.Shape[1])
	if _, err := f.ReadAt(raw, a.Offset+int64(i)*int64(len(raw))); err != nil {
		return augment.Params{}, err
	}
	row := make([]float32, a.Shape[1])
	for j := range row {
		row[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
	}
	p, err := augment.FromRow(row)
	if err != nil {
		return augment.Params{}, fmt.Errorf("%s: sample %d: %w", name, i, err)
	}
	return p, nil
}

// oneImage is a camera of one encoded image.
type oneImage []byte

func (o oneImage) Bytes(int) []byte { return o }

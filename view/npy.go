package view

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// npyArray is the header of a NumPy 1.0 file: its element type, shape
// and where the data starts.
type npyArray struct {
	DType  string // "|u1", "|b1", "<f4", "<f8", "<i8"
	Shape  []int
	Offset int64 // of the first element
}

// itemSize is the bytes per element, or 0 for a type the viewer does not
// read.
func (a npyArray) itemSize() int {
	switch a.DType {
	case "|u1", "|b1", "|i1":
		return 1
	case "<f4", "<i4":
		return 4
	case "<f8", "<i8":
		return 8
	}
	return 0
}

// elems is the number of elements of a row: the product of the shape past
// its first dimension.
func (a npyArray) rowElems() int {
	n := 1
	for _, d := range a.Shape[1:] {
		n *= d
	}
	return n
}

var (
	npyMagic   = "\x93NUMPY"
	descrRE    = regexp.MustCompile(`'descr':\s*'([^']+)'`)
	fortranRE  = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	shapeRE    = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
	errNotNPY  = errors.New("not a NumPy 1.0 file")
	maxElems   = int64(1) << 40
	maxHeaderB = 1 << 16
)

// readNPYHeader parses the header of a .npy file. It accepts what the
// mount writes (version 1.0, C order) and refuses anything else.
func readNPYHeader(r io.ReaderAt) (npyArray, error) {
	var pre [10]byte
	if _, err := r.ReadAt(pre[:], 0); err != nil {
		return npyArray{}, fmt.Errorf("npy header: %w", err)
	}
	if string(pre[:6]) != npyMagic || pre[6] != 1 {
		return npyArray{}, errNotNPY
	}
	n := int(binary.LittleEndian.Uint16(pre[8:]))
	if n > maxHeaderB {
		return npyArray{}, errNotNPY
	}
	h := make([]byte, n)
	if _, err := r.ReadAt(h, 10); err != nil {
		return npyArray{}, fmt.Errorf("npy header: %w", err)
	}
	return parseNPYHeader(string(h), int64(10+n))
}

func parseNPYHeader(h string, offset int64) (npyArray, error) {
	d := descrRE.FindStringSubmatch(h)
	f := fortranRE.FindStringSubmatch(h)
	s := shapeRE.FindStringSubmatch(h)
	if d == nil || f == nil || s == nil || f[1] != "False" {
		return npyArray{}, fmt.Errorf("%w: header %q", errNotNPY, h)
	}
	a := npyArray{DType: d[1], Offset: offset}
	total := int64(1)
	for _, p := range strings.Split(s[1], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return npyArray{}, fmt.Errorf("%w: shape %q", errNotNPY, s[1])
		}
		a.Shape = append(a.Shape, v)
		total *= int64(max(v, 1))
		if total > maxElems {
			return npyArray{}, fmt.Errorf("%w: shape %q too large", errNotNPY, s[1])
		}
	}
	if len(a.Shape) == 0 {
		return npyArray{}, fmt.Errorf("%w: a scalar", errNotNPY)
	}
	return a, nil
}

// row reads row i of a (a[i], flattened); booleans and integers become
// 0/1 and their value.
func (a npyArray) row(r io.ReaderAt, i int) (numbers, error) {
	size := a.itemSize()
	if size == 0 {
		return numbers{}, fmt.Errorf("dtype %s is not one the viewer reads", a.DType)
	}
	if i < 0 || i >= a.Shape[0] {
		return numbers{}, fmt.Errorf("row %d of %d", i, a.Shape[0])
	}
	n := a.rowElems()
	if int64(n)*int64(size) > 256<<20 {
		return numbers{}, fmt.Errorf("a row of %v %s is too large to show", a.Shape, a.DType)
	}
	b := make([]byte, n*size)
	if _, err := r.ReadAt(b, a.Offset+int64(i)*int64(len(b))); err != nil {
		return numbers{}, fmt.Errorf("row %d: %w", i, err)
	}
	out := numbers{V: make([]float64, n), Bits: 64}
	if a.DType == "<f4" {
		out.Bits = 32
	}
	for j := range out.V {
		v := b[j*size:]
		switch a.DType {
		case "|u1", "|b1":
			out.V[j] = float64(v[0])
		case "|i1":
			out.V[j] = float64(int8(v[0]))
		case "<f4":
			out.V[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(v)))
		case "<i4":
			out.V[j] = float64(int32(binary.LittleEndian.Uint32(v)))
		case "<f8":
			out.V[j] = math.Float64frombits(binary.LittleEndian.Uint64(v))
		case "<i8":
			out.V[j] = float64(int64(binary.LittleEndian.Uint64(v)))
		}
	}
	return out, nil
}

// numbers are values read from an array, written to JSON as the shortest
// decimal that reads back as the same value of the array's type (float32
// or float64), so a value on the page equals the .npy's. NaN and the
// infinities, which JSON lacks, are the strings "NaN", "Infinity" and
// "-Infinity" (what JavaScript's Number() reads).
type numbers struct {
	V    []float64
	Bits int
}

func (n numbers) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(n.V)*8)
	b = append(b, '[')
	for i, v := range n.V {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(v):
			b = append(b, `"NaN"`...)
		case math.IsInf(v, 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(v, -1):
			b = append(b, `"-Infinity"`...)
		default:
			b = strconv.AppendFloat(b, v, 'g', -1, n.Bits)
		}
	}
	return append(b, ']'), nil
}

// rows reads the whole array, one row per first index.
func (a npyArray) rows(r io.ReaderAt) ([]numbers, error) {
	size := a.itemSize()
	if size == 0 {
		return nil, fmt.Errorf("dtype %s is not one the viewer reads", a.DType)
	}
	n := a.rowElems()
	if int64(a.Shape[0])*int64(n)*int64(size) > 256<<20 {
		return nil, fmt.Errorf("array %v of %s is too large to show", a.Shape, a.DType)
	}
	out := make([]numbers, a.Shape[0])
	for i := range out {
		row, err := a.row(r, i)
		if err != nil {
			return nil, err
		}
		out[i] = row
	}
	return out, nil
}

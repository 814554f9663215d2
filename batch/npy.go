package batch

import (
	"fmt"
	"strings"
)

// npyAlign is the length every .npy header is padded to a multiple of, so
// that a file's size is known without building it and the array data starts
// aligned.
const npyAlign = 64

// NPYHeader returns a NumPy format 1.0 header for a C-order uint8 array of
// the given shape, padded with spaces (and a final newline) to a multiple of
// 64 bytes, as numpy.save writes it.
func NPYHeader(shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%s), }", tuple)
	// magic (6) + version (2) + header length (2) + dict + padding + '\n'
	total := 10 + len(dict) + 1
	total += (npyAlign - total%npyAlign) % npyAlign
	hlen := total - 10
	if hlen > 0xffff {
		panic("npy header longer than format 1.0 allows")
	}
	h := make([]byte, 0, total)
	h = append(h, "\x93NUMPY\x01\x00"...)
	h = append(h, byte(hlen), byte(hlen>>8))
	h = append(h, dict...)
	for len(h) < total-1 {
		h = append(h, ' ')
	}
	return append(h, '\n')
}

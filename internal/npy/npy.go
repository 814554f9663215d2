// Package npy writes NumPy format 1.0 headers, the one writer of the .npy
// files oxefs serves: a pair-mode batch's single array (package batch) and
// each array of a step-mode batch (package steps).
package npy

import (
	"fmt"
	"strings"
)

// Align is the length every header is padded to a multiple of, as
// numpy.save pads it: a file's size is known without building it and the
// array data starts aligned.
const Align = 64

// Header returns the NumPy format 1.0 header of a C-order array of dtype
// (a NumPy type string: "|u1", "<f4", …) and shape, padded with spaces and
// a final newline to a multiple of Align bytes.
func Header(dtype string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, tuple)
	// magic (6) + version (2) + header length (2) + dict + padding + '\n'
	total := 10 + len(dict) + 1
	total += (Align - total%Align) % Align
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

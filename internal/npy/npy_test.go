package npy

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestHeader: the dict is the one numpy.save writes (numpy's
// format.write_array_header_1_0: the repr of descr, fortran_order and
// the shape tuple, a one-element tuple with its comma), padded with
// spaces and a newline to a multiple of 64 bytes; package batch's
// TestNPYHeader has numpy itself read a file with it.
func TestHeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dtype string
		shape []int
		dict  string
	}{
		{"uint8 5-d", "|u1", []int{2, 2, 48, 64, 3}, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 48, 64, 3), }"},
		{"one dimension keeps its comma", "<i8", []int{8}, "{'descr': '<i8', 'fortran_order': False, 'shape': (8,), }"},
		{"float32", "<f4", []int{4, 2, 7}, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2, 7), }"},
		{"bool", "|b1", []int{3, 1}, "{'descr': '|b1', 'fortran_order': False, 'shape': (3, 1), }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Header(tc.dtype, tc.shape)
			if len(h)%Align != 0 {
				t.Fatalf("header of %d bytes, not a multiple of %d", len(h), Align)
			}
			if !bytes.HasPrefix(h, []byte("\x93NUMPY\x01\x00")) {
				t.Fatalf("magic and version %q", h[:8])
			}
			if n := int(binary.LittleEndian.Uint16(h[8:10])); n != len(h)-10 {
				t.Fatalf("header length field %d, want %d", n, len(h)-10)
			}
			want := tc.dict + string(bytes.Repeat([]byte{' '}, len(h)-10-len(tc.dict)-1)) + "\n"
			if got := string(h[10:]); got != want {
				t.Fatalf("dict %q, want %q", got, want)
			}
		})
	}
}

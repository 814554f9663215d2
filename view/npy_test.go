package view

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestParseNPYHeader(t *testing.T) {
	tests := []struct {
		name  string
		h     string
		shape []int
		ok    bool
	}{
		{"frames", "{'descr': '|u1', 'fortran_order': False, 'shape': (64, 2, 256, 256, 3), }", []int{64, 2, 256, 256, 3}, true},
		{"vector", "{'descr': '<i8', 'fortran_order': False, 'shape': (64,), }", []int{64}, true},
		{"fortran order", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", nil, false},
		{"scalar", "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", nil, false},
		{"negative", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", nil, false},
		{"too large", "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000, 1000000), }", nil, false},
		{"no descr", "{'fortran_order': False, 'shape': (2,), }", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseNPYHeader(tc.h, 64)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && len(a.Shape) != len(tc.shape) {
				t.Fatalf("shape %v, want %v", a.Shape, tc.shape)
			}
			for i := range tc.shape {
				if a.Shape[i] != tc.shape[i] {
					t.Fatalf("shape %v, want %v", a.Shape, tc.shape)
				}
			}
		})
	}
}

// FuzzNPYHeader: any bytes as a .npy file give an array or an error,
// never a panic, and a row read of an accepted header stays in bounds.
func FuzzNPYHeader(f *testing.F) {
	var seed bytes.Buffer
	h := "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n"
	seed.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&seed, binary.LittleEndian, uint16(len(h)))
	seed.WriteString(h)
	seed.Write(make([]byte, 24))
	f.Add(seed.Bytes())
	f.Add([]byte("\x93NUMPY\x01\x00\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		a, err := readNPYHeader(r)
		if err != nil {
			return
		}
		if a.Shape[0] > 0 && a.rowElems() < 1<<16 {
			a.row(r, 0) // may fail on short data; must not panic
		}
	})
}

package sample

import "testing"

func TestDecodeCodes(t *testing.T) {
	codes := func(s string, pad int) []float64 {
		var v []float64
		for _, r := range s {
			v = append(v, float64(r))
		}
		return append(v, make([]float64, pad)...)
	}
	utf8Bytes := func(s string, pad int) []float64 {
		var v []float64
		for _, b := range []byte(s) {
			v = append(v, float64(b))
		}
		return append(v, make([]float64, pad)...)
	}
	cases := []struct {
		name string
		in   []float64
		want string
	}{
		{"ascii, zero padded", codes("push the red star", 10), "push the red star"},
		{"no padding", codes("exactly", 0), "exactly"},
		{"all zeros", make([]float64, 8), ""},
		{"latin-1 code point", codes("push the café sign", 5), "push the café sign"},
		{"code points beyond a byte", codes("move → left, 東", 3), "move → left, 東"},
		{"UTF-8 bytes (language_table)", utf8Bytes("put the crème brûlée down", 7), "put the crème brûlée down"},
		{"zero inside", append(codes("ab", 1), codes("cd", 2)...), "abcd"},
		{"invalid code point", []float64{104, -5, 105, 0x110000}, "h\uFFFDi\uFFFD"},
	}
	for _, tc := range cases {
		if got := string(decodeCodes(nil, tc.in)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

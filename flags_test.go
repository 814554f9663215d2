package main

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1048576", want: 1 << 20},
		{in: "512MiB", want: 512 << 20},
		{in: "8GiB", want: 8 << 30},
		{in: "8 gib", want: 8 << 30},
		{in: "70MB", want: 70e6},
		{in: "1.5G", want: 3 << 29},
		{in: "12k", want: 12 << 10},
		{in: "", bad: true},
		{in: "MiB", bad: true},
		{in: "5 parsecs", bad: true},
		{in: "-1G", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSize(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("parseSize(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

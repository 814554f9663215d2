package bytesize

import "testing"

func TestParse(t *testing.T) {
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
			got, err := Parse(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("Parse(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCompact(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{512, "512B"},
		{1 << 10, "1KiB"},
		{50 << 30, "50GiB"},
		{6319127552, "5.9GiB"}, // a quarter of 23.5 GiB
		{1536 << 20, "1.5GiB"},
		{1<<30 - 1, "1GiB"},
		{1000 << 20, "1000MiB"},
		{3 << 40, "3TiB"},
		{5000 << 40, "5000TiB"},
	} {
		got := Compact(tc.in)
		if got != tc.want {
			t.Errorf("Compact(%d) = %q, want %q", tc.in, got, tc.want)
		}
		// What --help shows as a default is what the log shows once
		// parsed back.
		back, err := Parse(got)
		if err != nil || Compact(back) != got {
			t.Errorf("Compact(Parse(%q)) = %q, %v; want the same", got, Compact(back), err)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1 << 10, "1.0 KiB"},
		{3 << 20, "3.0 MiB"},
		{1536 << 20, "1.5 GiB"},
		{23 << 30, "23.0 GiB"},
		{100 << 30, "100.0 GiB"},
		{1000 << 20, "1000.0 MiB"},
		{1000 << 40, "1000.0 TiB"},
		{1<<30 - 1, "1.0 GiB"}, // the unit is chosen after rounding
		{-5, "-5 B"},
	} {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

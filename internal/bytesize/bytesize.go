// Package bytesize owns how oxefs writes and reads byte counts: in binary
// units, to a tenth, in the largest unit the count reaches (B, KiB, MiB,
// GiB, TiB). Messages and logs spell a count with a space and one decimal
// ("1.5 GiB", "100.0 GiB", "512 B": Format); size flags and --help spell it
// without them ("1.5GiB", "50GiB": Compact), and Parse reads that back.
//
// It imports nothing of oxefs.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

var units = [...]string{"B", "KiB", "MiB", "GiB", "TiB"}

// scale returns n in the largest unit it reaches once rounded to a tenth,
// the value so rounded, and the unit's index.
func scale(n int64) (float64, int) {
	tenth := func(v float64) float64 { return math.Round(v*10) / 10 }
	v, i := float64(n), 0
	for i < len(units)-1 && tenth(v) >= 1024 {
		v, i = v/1024, i+1
	}
	return tenth(v), i
}

// Format writes n for a message: "512 B", "1.0 KiB", "1.5 GiB".
func Format(n int64) string {
	v, i := scale(n)
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// Compact writes n as a size flag takes it and --help shows it: "512B",
// "1KiB", "5.9GiB". Parse reads it back to a count that Compact writes the
// same way.
func Compact(n int64) string {
	v, i := scale(n)
	return strconv.FormatFloat(v, 'f', -1, 64) + units[i]
}

var parseUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1e12, "tib": 1 << 40,
}

// Parse reads a size: a number, a decimal one included, then an optional
// unit, binary (KiB, MiB, GiB, TiB; K, M, G, T) or decimal (KB, MB, GB, TB),
// in any case: "512MiB", "8GiB", "70MB", "1.5G", "1048576".
func Parse(text string) (int64, error) {
	t := strings.TrimSpace(text)
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult, ok := parseUnits[unit]
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q (examples: 512MiB, 8GiB, 70MB, 1048576)", text)
	}
	return int64(f * mult), nil
}

package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// sizeFlag is a byte size given as 512MiB, 8GiB, 70MB, 1.5G or a plain
// number of bytes.
type sizeFlag int64

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1e12, "tib": 1 << 40,
}

// UnmarshalText parses a size for kong.
func (s *sizeFlag) UnmarshalText(b []byte) error {
	v, err := parseSize(string(b))
	if err != nil {
		return err
	}
	*s = sizeFlag(v)
	return nil
}

// String formats the size as --help and the log show it: 5.8GiB, 50GiB.
func (s sizeFlag) String() string { return formatSize(int64(s)) }

// formatSize writes n in the largest binary unit it reaches, to a tenth;
// parseSize reads it back.
func formatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	tenth := func(v float64) float64 { return math.Round(v*10) / 10 }
	v, i := float64(n), 0
	for i < len(units)-1 && tenth(v) >= 1024 {
		v, i = v/1024, i+1
	}
	return strconv.FormatFloat(tenth(v), 'f', -1, 64) + units[i]
}

func parseSize(text string) (int64, error) {
	t := strings.TrimSpace(text)
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult, ok := sizeUnits[unit]
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q (examples: 512MiB, 8GiB, 70MB, 1048576)", text)
	}
	return int64(f * mult), nil
}

// defaultCacheDir is $XDG_CACHE_HOME/oxefs, or ~/.cache/oxefs.
func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "oxefs")
	}
	return filepath.Join(os.TempDir(), "oxefs-cache")
}

// parseRanks reads --ranks: ranks and inclusive ranges separated by
// commas ("0-7", "8-15", "0,2,4-5"), each in 0..world-1 and none twice,
// returned in the order given.
func parseRanks(text string, world int) ([]int, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--ranks %s --world %d: %s", text, world, fmt.Sprintf(format, args...))
	}
	if world < 1 {
		return nil, bad("--world must be at least 1")
	}
	var out []int
	seen := map[int]bool{}
	for part := range strings.SplitSeq(text, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b, errB := strconv.Atoi(strings.TrimSpace(hi))
		if errA != nil || errB != nil || a > b {
			return nil, bad("%q is not a rank or a range such as 0-7", part)
		}
		for r := a; r <= b; r++ {
			if r >= world {
				return nil, bad("rank %d is not in 0..%d", r, world-1)
			}
			if seen[r] {
				return nil, bad("rank %d is listed twice", r)
			}
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

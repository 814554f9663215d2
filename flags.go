package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/oxefs/oxefs/internal/bytesize"
)

// sizeFlag is a byte size given as 512MiB, 8GiB, 70MB, 1.5G or a plain
// number of bytes.
type sizeFlag int64

// UnmarshalText parses a size for kong.
func (s *sizeFlag) UnmarshalText(b []byte) error {
	v, err := bytesize.Parse(string(b))
	if err != nil {
		return err
	}
	*s = sizeFlag(v)
	return nil
}

// String formats the size as --help and the log show it: 5.8GiB, 50GiB.
func (s sizeFlag) String() string { return bytesize.Compact(int64(s)) }

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

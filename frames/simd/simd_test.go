package simd

import "testing"

// TestLevels: the levels are listed slowest first, Best is the last of
// them, and Runs agrees with the list for every level.
func TestLevels(t *testing.T) {
	ls := Levels()
	for i := 1; i < len(ls); i++ {
		if ls[i] <= ls[i-1] {
			t.Fatalf("Levels() = %v: not slowest first", ls)
		}
	}
	if len(ls) == 0 {
		if Best() != 0 {
			t.Fatalf("no levels, but Best() = %v", Best())
		}
	} else if Best() != ls[len(ls)-1] {
		t.Fatalf("Best() = %v, want %v", Best(), ls[len(ls)-1])
	}
	listed := map[Level]bool{}
	for _, l := range ls {
		listed[l] = true
	}
	for _, l := range []Level{0, SSE2, AVX2, AVX512, AVX512 + 1} {
		if Runs(l) != listed[l] {
			t.Errorf("Runs(%v) = %v, listed %v", l, Runs(l), listed[l])
		}
	}
	if got := (AVX512 + 1).String(); got != "Level(4)" {
		t.Errorf("String of an unknown level = %q", got)
	}
}

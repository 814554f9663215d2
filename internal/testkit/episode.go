package testkit

import (
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// Floats returns every value of the episode's numeric feature key, step
// after step, failing the test when the feature is missing or not numeric.
func Floats(t testing.TB, ep episode.Episode, key string) []float64 {
	t.Helper()
	v, err := ep.Feature(key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.Float64s(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package config

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestKind: a config's kind of sample is decided by the registry — a
// sample block asks for step samples, none for pairs — and the registry
// lists every kind once, the default (pairs) last; StepDeltas refuses a
// kind without a sample block.
func TestKind(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Kind
	}{
		{"no sample block", "datasets: [{name: a, source: /x}]\n", KindPairs},
		{"sample block", "sample: {cameras: {p: {}}}\ndatasets: [{name: a, source: /x}]\n", KindSteps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Kind(); got != tc.want {
				t.Errorf("Kind() = %q, want %q", got, tc.want)
			}
			_, err = c.StepDeltas(&c.Datasets[0], 10)
			if (err != nil) != (tc.want != KindSteps) || err != nil && !strings.Contains(err.Error(), "without a sample block") {
				t.Errorf("StepDeltas: %v", err)
			}
		})
	}
	kinds := Kinds()
	for _, tc := range []struct {
		name string
		k    *KindDef
	}{
		{"no parser", &KindDef{Kind: "a", Key: "a", Rules: FramePairs.Rules}},
		{"no key", &KindDef{Kind: "a", Parse: func(*yaml.Node) (any, error) { return nil, nil }, Rules: FramePairs.Rules}},
		{"config's key", &KindDef{Kind: "a", Key: "seed", Parse: func(*yaml.Node) (any, error) { return nil, nil }, Rules: FramePairs.Rules}},
		{"a kind's key", &KindDef{Kind: "a", Key: "sample", Parse: func(*yaml.Node) (any, error) { return nil, nil }, Rules: FramePairs.Rules}},
		{"a kind's name", &KindDef{Kind: KindPairs, Key: "b", Parse: func(*yaml.Node) (any, error) { return nil, nil }, Rules: FramePairs.Rules}},
	} {
		t.Run("RegisterKind "+tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterKind(%+v) did not panic", *tc.k)
				}
				if got := Kinds(); !slices.Equal(got, kinds) {
					t.Errorf("Kinds() = %v after a refused RegisterKind, want %v", got, kinds)
				}
			}()
			RegisterKind(tc.k)
		})
	}
	RegisterKind(StepSamples) // a built-in kind again: nothing
	if got := Kinds(); !slices.Equal(got, kinds) {
		t.Errorf("Kinds() = %v after registering a built-in kind again, want %v", got, kinds)
	}
	sorted := slices.Clone(kinds)
	slices.Sort(sorted)
	if len(kinds) < 2 || kinds[len(kinds)-1] != KindPairs || !slices.Contains(kinds, KindSteps) || len(slices.Compact(sorted)) != len(kinds) {
		t.Errorf("Kinds() = %v, want each kind once, steps among them, pairs (the default) last", kinds)
	}
}

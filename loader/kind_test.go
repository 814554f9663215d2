package loader

import (
	"testing"

	"github.com/oxefs/oxefs/config"
)

// TestEveryKindRegistered: each kind of sample config's registry can
// decide (config.Kinds: its built-in kinds and those kinds registers)
// has its mixKind, and mixKinds holds nothing else: a kind config knows
// without a line in kinds fails here, not when a config first asks for
// it.
func TestEveryKindRegistered(t *testing.T) {
	kinds := config.Kinds()
	if len(kinds) < 2 {
		t.Fatalf("config.Kinds() = %v: want the pairs and steps at least", kinds)
	}
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			if mixKinds[k] == nil {
				t.Errorf("config kind %q has no line in mixKinds (loader/kind.go)", k)
			}
		})
	}
	if len(mixKinds) != len(kinds) {
		t.Errorf("mixKinds holds %d kinds, config.Kinds() %d: %v", len(mixKinds), len(kinds), kinds)
	}
}

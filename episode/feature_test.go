package episode

import (
	"strings"
	"testing"
)

func TestKindString(t *testing.T) {
	var got []string
	for k := Kind(0); k <= KindUnsupported+1; k++ {
		got = append(got, k.String())
	}
	want := "Kind(0) tensor image text class_label video unsupported Kind(7)"
	if strings.Join(got, " ") != want {
		t.Errorf("got %s", strings.Join(got, " "))
	}
}

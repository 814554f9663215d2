package pairs

import (
	"encoding/json"
	"math"
	"testing"
)

func TestMetaJSONNonFinite(t *testing.T) {
	b, err := json.Marshal(batchMeta{DatasetName: []string{"d"}, Action: []floats{{1.5, math.NaN(), math.Inf(-1), -2e-9}}})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Action [][]*float64 `json:"action"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	a := back.Action[0]
	if len(a) != 4 || *a[0] != 1.5 || a[1] != nil || a[2] != nil || *a[3] != -2e-9 {
		t.Fatalf("round trip of %s", b)
	}
}

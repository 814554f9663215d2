package mix

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// Weight is a dataset's weight in a mix: an exact number, or Proportionate.
// The zero Weight is no weight at all: the dataset is in the plan (so that
// dataset indices agree between views) but never sampled.
type Weight struct {
	// Proportionate shares what the numeric weights leave in proportion to
	// sample units.
	Proportionate bool
	// Value is the weight as written, exactly ("0.54" is 27/50). Nil for a
	// proportionate weight.
	Value *big.Rat
}

// Proportionate is the weight `proportionate`.
var Proportionate = Weight{Proportionate: true}

// NewWeight returns the weight num/den.
func NewWeight(num, den int64) Weight { return Weight{Value: big.NewRat(num, den)} }

// Sampled reports whether the dataset is drawn from at all: a positive
// weight or proportionate.
func (w Weight) Sampled() bool {
	return w.Proportionate || (w.Value != nil && w.Value.Sign() > 0)
}

func (w Weight) String() string {
	switch {
	case w.Proportionate:
		return "proportionate"
	case w.Value == nil:
		return "0"
	case w.Value.IsInt():
		return w.Value.Num().String()
	}
	if f, exact := w.Value.FloatPrec(); exact {
		return w.Value.FloatString(f)
	}
	return w.Value.RatString()
}

// MarshalJSON writes a number (as exact as JSON allows: the decimal when it
// is one, else a fraction as a string such as "1/3") or "proportionate".
func (w Weight) MarshalJSON() ([]byte, error) {
	s := w.String()
	if w.Proportionate || strings.Contains(s, "/") {
		return json.Marshal(s)
	}
	return []byte(s), nil
}

// numberText is what a weight may be written as: a decimal with an optional
// exponent, or a fraction a/b. Exponents and lengths are bounded so that no
// weight makes big numbers of absurd size.
var numberText = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,2})?$|^[0-9]+/[0-9]+$`)

// parseWeight reads the text of a YAML weight.
func parseWeight(text string) (Weight, error) {
	t := strings.TrimSpace(text)
	if t == "proportionate" {
		return Proportionate, nil
	}
	if len(t) > 64 || !numberText.MatchString(strings.ReplaceAll(t, "_", "")) {
		return Weight{}, errors.New(`must be a number (1.0, 0.25, 3/4) or "proportionate"`)
	}
	v, ok := new(big.Rat).SetString(strings.ReplaceAll(t, "_", ""))
	if !ok {
		return Weight{}, errors.New(`must be a number (1.0, 0.25, 3/4) or "proportionate"`)
	}
	return Weight{Value: v}, nil
}

// normalise turns weights into exact normalised shares (Σ = 1) given each
// dataset's sample units:
//
//   - without proportionate weights, w_d = v_d / Σv;
//   - with some, numeric weights are fractions of the batch and must sum to
//     less than 1; the proportionate datasets share the rest in proportion
//     to their units;
//
// and datasets that are not Sampled get 0.
func normalise(ws []Weight, units []int64, names []string) ([]*big.Rat, error) {
	out := make([]*big.Rat, len(ws))
	sum := new(big.Rat)
	var prop []string
	var propUnits int64
	for d, w := range ws {
		out[d] = new(big.Rat)
		switch {
		case w.Proportionate:
			prop = append(prop, names[d])
			propUnits += units[d]
		case w.Sampled():
			sum.Add(sum, w.Value)
		}
	}
	if len(prop) == 0 {
		if sum.Sign() == 0 {
			return nil, errors.New("mix: every dataset has weight 0")
		}
		for d, w := range ws {
			if w.Sampled() {
				out[d].Quo(w.Value, sum)
			}
		}
		return out, nil
	}
	one := big.NewRat(1, 1)
	if sum.Cmp(one) >= 0 {
		return nil, fmt.Errorf("mix: numeric weights sum to %s, but %s %s proportionate: alongside proportionate datasets numeric weights are fractions of the batch and must sum to less than 1",
			sum.FloatString(4), strings.Join(prop, ", "), plural(len(prop), "is", "are"))
	}
	if propUnits == 0 {
		return nil, fmt.Errorf("mix: proportionate datasets %s have no sample units", strings.Join(prop, ", "))
	}
	rest := new(big.Rat).Sub(one, sum)
	for d, w := range ws {
		switch {
		case w.Proportionate:
			out[d].Mul(rest, big.NewRat(units[d], propUnits))
		case w.Sampled():
			out[d].Set(w.Value)
		}
	}
	return out, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

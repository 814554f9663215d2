package config

import (
	"encoding/json"
	"errors"
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

// ParseWeight reads the text of a YAML weight: a number (1.0, 0.25, 3/4)
// or "proportionate".
func ParseWeight(text string) (Weight, error) {
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

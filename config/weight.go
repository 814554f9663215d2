package config

import (
	"encoding/json"
	"errors"
	"math/big"
	"regexp"
	"strconv"
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
	}
	f, exact := w.Value.FloatPrec()
	if !exact {
		return w.Value.RatString()
	}
	s := w.Value.FloatString(f) // an integer's f is 0: no point
	if len(s) <= maxWeightText {
		return s
	}
	// Too long to read back (1e70 has 71 digits): mantissa and exponent,
	// m·10^(z−f) with m the digits of value·10^f less its z trailing zeros.
	m := new(big.Int).Mul(w.Value.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(f)), nil))
	m.Quo(m, w.Value.Denom())
	digits := m.String()
	trimmed := strings.TrimRight(digits, "0")
	return trimmed + "e" + strconv.Itoa(len(digits)-len(trimmed)-f)
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
// exponent, or a fraction a/b. Lengths, exponents and the size of the value
// (maxWeightBits) are bounded so that no weight makes big numbers of
// absurd size. A value written with a two-digit exponent and up to 64
// characters comes back from String within these bounds, with an exponent
// of up to three digits.
var numberText = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$|^[0-9]+/[0-9]+$`)

const (
	maxWeightText = 64
	maxWeightBits = 700 // about 10^210: beyond 64 digits times 10^99
)

// ParseWeight reads the text of a YAML weight: a number (1.0, 0.25, 3/4)
// or "proportionate".
func ParseWeight(text string) (Weight, error) {
	t := strings.TrimSpace(text)
	if t == "proportionate" {
		return Proportionate, nil
	}
	if len(t) > maxWeightText || !numberText.MatchString(strings.ReplaceAll(t, "_", "")) {
		return Weight{}, errors.New(`must be a number (1.0, 0.25, 3/4) or "proportionate"`)
	}
	v, ok := new(big.Rat).SetString(strings.ReplaceAll(t, "_", ""))
	if !ok || v.Num().BitLen() > maxWeightBits || v.Denom().BitLen() > maxWeightBits {
		return Weight{}, errors.New(`must be a number (1.0, 0.25, 3/4) or "proportionate"`)
	}
	return Weight{Value: v}, nil
}

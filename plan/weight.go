package plan

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/oxefs/oxefs/config"
)

// normalise turns weights into exact normalised shares (Σ = 1) given each
// dataset's sample units:
//
//   - without proportionate weights, w_d = v_d / Σv;
//   - with some, numeric weights are fractions of the batch and must sum to
//     less than 1; the proportionate datasets share the rest in proportion
//     to their units;
//
// and datasets that are not Sampled get 0.
func normalise(ws []config.Weight, units []int64, names []string) ([]*big.Rat, error) {
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

package loader

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
)

// knownSplitLengths returns each split's episode lengths when the dataset
// knows them without reading its episodes (format.LengthLoader): LeRobot's
// episode table, or an RLDS length index built earlier. ok is false when
// some split of ranges is not covered.
func knownSplitLengths(d *Dataset, ranges []episode.Range) (map[string][]int32, bool) {
	ll, ok := d.Data.(format.LengthLoader)
	if !ok {
		return nil, false
	}
	ls, err := ll.LoadLengths()
	if err != nil {
		return nil, false
	}
	for _, r := range ranges {
		if s, ok := ls[r.Split]; !ok || int64(len(s)) < r.To {
			return nil, false
		}
	}
	return ls, true
}

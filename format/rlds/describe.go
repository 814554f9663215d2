package rlds

import (
	"fmt"
	"strings"

	"github.com/oxefs/oxefs/internal/bytesize"
)

// Description is what `oxefs inspect` reports of a dataset.
type Description struct {
	Name     string               `json:"name"`
	Version  string               `json:"version"`
	Source   string               `json:"source"`
	Splits   []SplitDescription   `json:"splits"`
	Features []FeatureDescription `json:"features"`
	Images   []ImageDescription   `json:"images"`
}

// SplitDescription is one split. Lengths is present when the episode-length
// index has been built for the split.
type SplitDescription struct {
	Name     string       `json:"name"`
	Episodes int64        `json:"episodes"`
	Shards   int          `json:"shards"`
	Bytes    int64        `json:"bytes"`
	Lengths  *LengthStats `json:"lengths,omitempty"`
}

// FeatureDescription is one flattened feature.
type FeatureDescription struct {
	Key      string `json:"key"`
	Class    string `json:"class"`
	DType    string `json:"dtype"`
	Shape    []int  `json:"shape"`
	Encoding string `json:"encoding,omitempty"`
	PerStep  bool   `json:"per_step"`
}

// ImageDescription is one image feature, the candidates for image_key.
type ImageDescription struct {
	Key      string `json:"key"`
	Encoding string `json:"encoding"`
	Height   int    `json:"height"`
	Width    int    `json:"width"`
	Channels int    `json:"channels"`
}

// Describe summarises the dataset. The length index is included when it
// exists; Describe never builds it.
func (d *Dataset) Describe() Description {
	desc := Description{Name: d.Meta.Name, Version: d.Meta.Version, Source: d.Source.Location()}
	lengths, _ := d.LoadLengths()
	for _, s := range d.Meta.Splits {
		sd := SplitDescription{Name: s.Name, Episodes: s.NumExamples(), Shards: len(s.ShardLengths), Bytes: s.NumBytes}
		if lengths != nil {
			if st, ok := lengths.Stats(s.Name); ok {
				sd.Lengths = &st
			}
		}
		desc.Splits = append(desc.Splits, sd)
	}
	for _, f := range d.Features.All() {
		desc.Features = append(desc.Features, FeatureDescription{
			Key: f.Key, Class: f.Class, DType: f.DType, Shape: f.Shape, Encoding: f.Encoding, PerStep: f.PerStep,
		})
	}
	for _, f := range d.Features.Images() {
		img := ImageDescription{Key: f.Key, Encoding: f.Encoding, Height: -1, Width: -1, Channels: -1}
		if len(f.Shape) == 3 {
			img.Height, img.Width, img.Channels = f.Shape[0], f.Shape[1], f.Shape[2]
		}
		desc.Images = append(desc.Images, img)
	}
	return desc
}

// String renders the description for people.
func (desc Description) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s  (%s)\n\nsplits:\n", desc.Name, desc.Version, desc.Source)
	for _, s := range desc.Splits {
		fmt.Fprintf(&b, "  %-12s %8d episodes  %5d shards  %10s", s.Name, s.Episodes, s.Shards, bytesize.Format(s.Bytes))
		if l := s.Lengths; l != nil {
			fmt.Fprintf(&b, "  steps min/median/mean/max %d/%d/%.1f/%d", l.Min, l.Median, l.Mean, l.Max)
			if l.Corrupt > 0 {
				fmt.Fprintf(&b, "  (%d corrupt)", l.Corrupt)
			}
		}
		b.WriteByte('\n')
	}
	b.WriteString("\nfeatures (flattened keys):\n")
	for _, f := range desc.Features {
		enc := ""
		if f.Encoding != "" && f.Encoding != "none" {
			enc = " " + f.Encoding
		}
		scope := "episode"
		if f.PerStep {
			scope = "step"
		}
		fmt.Fprintf(&b, "  %-48s %-8s %-8s %-14s%s\n", f.Key, scope, f.DType, shapeString(f.Shape), enc)
	}
	b.WriteString("\nimage keys:\n")
	if len(desc.Images) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, im := range desc.Images {
		fmt.Fprintf(&b, "  %-48s %-5s %s\n", im.Key, im.Encoding, shapeString([]int{im.Height, im.Width, im.Channels}))
	}
	return b.String()
}

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d < 0 {
			parts[i] = "?"
		} else {
			parts[i] = fmt.Sprint(d)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

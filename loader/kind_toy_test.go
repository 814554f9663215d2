package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/sample"
	"go.yaml.in/yaml/v3"
)

// This file plants a third kind of sample the way the README says a new
// kind is added: one file (this one: its config.KindDef, its block and
// rules, its mixKind) and one line (the register call below, which in a
// real kind is its line in kinds, loader/kind.go). The toy kind is frame
// pairs asked for by a `toy_pairs` block of its own, so that its batches
// can be checked against a pairs config's.

// toyBlock is the toy kind's YAML block.
type toyBlock struct {
	Label string `json:"label"`
}

// toyKindDef is the toy kind's config half.
var toyKindDef = &config.KindDef{
	Kind: "toy_pairs",
	Key:  "toy_pairs",
	Parse: func(n *yaml.Node) (any, error) {
		b := &toyBlock{}
		if n.Kind != yaml.MappingNode {
			return b, errors.New("must be a mapping such as {label: x}")
		}
		var errs config.ConfigErrors
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value != "label" {
				errs = append(errs, &config.ConfigError{Line: k.Line, Field: "toy_pairs", Msg: fmt.Sprintf("unknown key %q; valid keys: label", k.Value)})
				continue
			}
			b.Label = v.Value
		}
		if errs != nil {
			return b, errs
		}
		return b, nil
	},
	// Its config rules are frame pairs'.
	Rules: func(c *config.Config) config.KindRules { return toyRules{config.FramePairs.Rules(c)} },
}

type toyRules struct{ config.KindRules }

// toyAssembled counts the toy kind's assemble calls.
var toyAssembled atomic.Int64

// toyKind is the toy kind's mixKind: pairs, its block's label kept.
type toyKind struct {
	pairKind
	label string
}

func (k toyKind) assemble(m *Mix) (sample.Kind, error) {
	toyAssembled.Add(1)
	return k.pairKind.assemble(m)
}

// The toy kind's one registration line.
func init() {
	register(kind{toyKindDef, func(cfg *config.Config) mixKind {
		return toyKind{pairKind{cfg}, cfg.KindBlock().(*toyBlock).Label}
	}})
}

// TestToyKind: the kind planted by the one file above is asked for by its
// block, which config parses (errors with their line), writes into
// info.json's config and reads back; loader builds its batches through
// its mixKind, byte for byte those of the same config without the block
// (frame pairs).
func TestToyKind(t *testing.T) {
	pairsYAML := "batch_size: 8\nimage_size: [32, 48]\nsamples_per_episode: 3\ndatasets:\n  - source: " + bridgeSource(t) +
		"\n    image_key: steps/observation/image\n    action_keys: [steps/action/world_vector]\n"
	toyYAML := "toy_pairs: {label: hello}\n" + pairsYAML

	cfg, err := config.Parse([]byte(toyYAML))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kind() != "toy_pairs" || kindOf(cfg).(toyKind).label != "hello" {
		t.Fatalf("kind %q, mixKind %#v: want the toy kind with label hello", cfg.Kind(), kindOf(cfg))
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"toy_pairs":{"label":"hello"}`)) {
		t.Errorf("info.json's config has no toy_pairs block: %s", js)
	}
	back, err := config.Parse(js)
	if err != nil {
		t.Fatalf("info.json's config read back: %v", err)
	}
	if back.Kind() != "toy_pairs" || back.KindBlock().(*toyBlock).Label != "hello" {
		t.Errorf("read back from info.json: kind %q block %+v", back.Kind(), back.KindBlock())
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "toy_pairs:\n  colour: red\n" + pairsYAML, `line 2: toy_pairs: unknown key "colour"; valid keys: label`},
		{"not a mapping", "toy_pairs: 3\n" + pairsYAML, "line 1: toy_pairs: must be a mapping such as {label: x}"},
		{"no value", "toy_pairs:\n" + pairsYAML, "line 1: toy_pairs: has no value"},
		{"two kinds", "sample: {}\ntoy_pairs: {label: x}\n" + pairsYAML, "toy_pairs: asks for toy_pairs samples, and `sample` for steps samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v\nwant %q", err, tc.want)
			}
		})
	}

	before := toyAssembled.Load()
	toy := openYAMLPipeline(t, toyYAML, 0)
	defer toy.Close()
	if toyAssembled.Load() == before {
		t.Fatal("the toy kind's assemble was not called")
	}
	var info struct {
		Config struct {
			Toy *toyBlock `json:"toy_pairs"`
		} `json:"config"`
	}
	if err := json.Unmarshal(toy.Info(), &info); err != nil || info.Config.Toy == nil || info.Config.Toy.Label != "hello" {
		t.Errorf("info.json's config.toy_pairs: %+v (%v), want label hello", info.Config.Toy, err)
	}
	pairs := openYAMLPipeline(t, pairsYAML, 0)
	defer pairs.Close()
	if toy.Train.Len() != pairs.Train.Len() || toy.Train.Len() == 0 {
		t.Fatalf("%d toy batches, %d pair batches", toy.Train.Len(), pairs.Train.Len())
	}
	for n := range toy.Train.Len() {
		got, err := toy.BatchFiles(t.Context(), toy.Train, n)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pairs.BatchFiles(t.Context(), pairs.Train, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("batch %d: %d files, pairs %d", n, len(got), len(want))
		}
		for name, b := range want {
			if !bytes.Equal(got[name], b) {
				t.Errorf("batch %d: %s differs from the pairs batch's", n, name)
			}
		}
	}
}

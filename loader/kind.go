package loader

import (
	"context"
	"log/slog"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// This file is the factory of the kinds of sample: kinds, the registry
// that pairs each kind a config may ask for (its config.KindDef: the YAML
// block that asks for it and its config rules; config.Config.Kind picks
// one) with what the composition root and the builder ask of it (its
// mixKind), and frameDecoder, which picks the frame decoder. Everything
// else asks the kind (mixKind here, sample.Kind in the builder);
// internal/layers' TestOneFactory keeps any other file from looking at
// the config's sample block, or comparing its kind, to choose a path.
//
// A new kind of sample is its package (a sample.Kind, like steps/), one
// file here, kind_<name>.go (its config.KindDef: block key, block parser,
// config rules; and its mixKind), and its line in kinds, which registers
// both halves. The two built-in kinds' config halves are config's own
// (config.StepSamples, config.FramePairs), since config parses configs
// without this package too.

// kind is one kind of sample: its config half and its mixKind.
type kind struct {
	config *config.KindDef
	mix    func(cfg *config.Config) mixKind
}

// kinds is the registry of the kinds of sample: one line per kind, in
// the order config asks for them (the default, pairs, last).
var kinds = []kind{
	{config.StepSamples, func(cfg *config.Config) mixKind { return stepKind{cfg} }},
	{config.FramePairs, func(cfg *config.Config) mixKind { return pairKind{cfg} }},
}

func init() {
	for _, k := range kinds {
		register(k)
	}
}

// mixKinds maps each registered kind to its mixKind; filled by register.
// TestEveryKindRegistered checks that it covers config.Kinds.
var mixKinds = map[config.Kind]func(cfg *config.Config) mixKind{}

// register adds k to config's registry and to mixKinds.
func register(k kind) {
	config.RegisterKind(k.config)
	mixKinds[k.config.Kind] = k.mix
}

// kindOf returns the kind of sample cfg asks for.
func kindOf(cfg *config.Config) mixKind { return mixKinds[cfg.Kind()](cfg) }

// frameDecoder returns the maker of each decode worker's FrameDecoder:
// libjpeg-turbo or image/jpeg as opts ask, PNG, libavcodec for video,
// applying augment.Params (augmentingCPU). A new decoder backend (a GPU
// one, a pass-through one, a viewer's tap) is a sample.FrameDecoder of
// its own file and its line here.
func frameDecoder(opts frames.DecoderOptions) func() (sample.FrameDecoder, error) {
	return func() (sample.FrameDecoder, error) {
		c, err := sample.NewCPU(opts)
		if err != nil {
			return nil, err
		}
		return &augmentingCPU{CPU: c}, nil
	}
}

// transformer draws the transform parameters of a view's samples, per
// (batch, sample, camera slot), for the frame stage to hand its
// FrameDecoder: augmentation plugs in here (a Transformer that draws,
// and in frameDecoder the decoder that applies what it draws); train says
// which view, since the val view is not augmented (at most a configured
// crop's deterministic centre twin). pl is the view's plan (its batches'
// global indices key the draws, the same on every rank).
func transformer(m *Mix, pl *plan.Plan, train bool) sample.Transformer {
	if a := newAugmenter(m, pl, train); a != nil {
		return a
	}
	return sample.Identity{}
}

// mixKind is what the composition root asks of a kind of sample, from
// the config's rules to what info.json says of its batches.
type mixKind interface {
	// openDataset takes what the kind reads of a dataset whose features
	// the config rules checked (use, with those rules' errors ferrs), and
	// returns the dataset's errors from there on, ferrs that still hold
	// included. bad makes the error of one of the dataset's keys.
	openDataset(d *Dataset, use config.FeatureUse, ferrs config.ConfigErrors, bad func(key, format string, args ...any) *config.ConfigError) config.ConfigErrors
	// minOffset is the offset every t of dataset dc's samples leaves
	// before the episode's end.
	minOffset(dc *config.DatasetConfig) int
	// summedActions says whether a sample's action is the sum over
	// [t, t+offset) (pairs), so that the statistics hold action_summed;
	// step samples hold each step's action.
	summedActions() bool
	// cameraSlots are the mix's camera slots, whose frames the
	// statistics sample; none for pairs.
	cameraSlots() []config.CameraSlot
	// checkLength checks that episodes of one split of d are long enough
	// (see checkLength), and what their lengths say of the action chunk.
	checkLength(ctx context.Context, m *Mix, d *Dataset, field, split string, ranges []episode.Range, lengths []int32, log *slog.Logger) (config.ConfigErrors, lengthFit)
	// batchShape bounds a batch's size from the config alone (checkMem).
	batchShape() []int
	// assemble makes the sample.Kind the builders build the mix with.
	assemble(m *Mix) (sample.Kind, error)
	// describe fills info.json's description of the batches.
	describe(p *Pipeline, in *info)
	// describeDataset fills a dataset's entries of info.json.
	describeDataset(p *Pipeline, d *Dataset, di *datasetInfo)
}

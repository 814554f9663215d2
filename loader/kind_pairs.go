package loader

import (
	"context"
	"log/slog"
	"strings"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/pairs"
	"github.com/oxefs/oxefs/sample"
)

// pairKind is frame pairs (package pairs): the mix has no `sample` block.
type pairKind struct{ cfg *config.Config }

// openDataset keeps the image_key the config rules resolved, and checks
// that oxefs can decode it where it is stored as video.
func (k pairKind) openDataset(d *Dataset, use config.FeatureUse, ferrs config.ConfigErrors, bad func(key, format string, args ...any) *config.ConfigError) config.ConfigErrors {
	d.Config.ImageKey = use.ImageKey
	f, ok := d.Data.Info().Features.Lookup(use.ImageKey)
	if !ok {
		return ferrs
	}
	d.Image = f
	if strings.HasPrefix(f.Encoding, "video") {
		if err := av.Available(); err != nil {
			ferrs = append(ferrs, bad("image_key", "%s is stored as video (%s), which oxefs decodes with libavcodec: %v", use.ImageKey, f.Encoding, err))
		}
	}
	return ferrs
}

// minOffset is the dataset's least offset.
func (k pairKind) minOffset(dc *config.DatasetConfig) int { return dc.Offset.Min }

// summedActions: a pair's action is the sum over [t, t+offset).
func (k pairKind) summedActions() bool { return true }

// cameraSlots: pairs have none (their frames get no statistics).
func (k pairKind) cameraSlots() []config.CameraSlot { return nil }

func (k pairKind) checkLength(ctx context.Context, m *Mix, d *Dataset, field, split string, ranges []episode.Range, lengths []int32, log *slog.Logger) (config.ConfigErrors, lengthFit) {
	if e := checkLength(ctx, d, field, split, ranges, lengths, log); e != nil {
		return config.ConfigErrors{e}, lengthFit{}
	}
	return nil, lengthFit{}
}

func (k pairKind) batchShape() []int {
	cfg := k.cfg
	f, h, w := cfg.Frames(), cfg.ImageSize[0], cfg.ImageSize[1]
	if cfg.Layout == config.BCFHW {
		return []int{cfg.BatchSize, 3, f, h, w}
	}
	return []int{cfg.BatchSize, f, h, w, 3}
}

// assemble makes one pairs.Assembler per dataset of the mix.
func (k pairKind) assemble(m *Mix) (sample.Kind, error) {
	cfg := m.Config
	asm := make([]*pairs.Assembler, len(m.Datasets))
	dims := make([]pairs.Dims, len(m.Datasets))
	for i, d := range m.Datasets {
		dc := d.Config
		pc := pairs.Config{
			ImageKey:     d.Image.Key,
			Frames:       cfg.FramesOf(&dc),
			ActionKeys:   dc.ActionKeys,
			StateKey:     dc.StateKey,
			LanguageKey:  dc.LanguageKey,
			Robot:        dc.Robot,
			Height:       cfg.ImageSize[0],
			Width:        cfg.ImageSize[1],
			Resize:       cfg.Resize,
			Layout:       cfg.Layout,
			Decode:       cfg.Decode,
			Augmented:    cfg.Augmented(""),
			MaxActionDim: m.MaxActionDim,
			MaxStateDim:  m.MaxStateDim,
		}
		if d.Norm != nil {
			pc.ActionNorm = affine(cfg.Normalize.Action, d.Norm.ActionSum)
			pc.StateNorm = affine(cfg.Normalize.State, d.Norm.State)
		}
		a, err := pairs.New(d.Data.Info(), pc)
		if err != nil {
			return nil, err
		}
		asm[i] = a
		dims[i] = pairs.Dims{Action: d.ActionDim, State: d.StateDim}
	}
	return pairs.NewKind(cfg.BatchSize, asm, dims, cfg.Meta)
}

// describe: the batch is one uint8 array, info.json's "frames".
func (k pairKind) describe(p *Pipeline, in *info) {
	cfg := p.Mix.Config
	in.BatchSize = cfg.BatchSize
	in.Files = []string{"npy"}
	in.Frames = &framesInfo{Shape: p.Mix.kind.batchShape(), DType: "uint8", Layout: cfg.Layout, Decode: cfg.Decode}
	if cfg.Augmented("") {
		in.Files = append(in.Files, strings.TrimPrefix(pairs.AugmentSuffix, "."))
		in.Augment = newAugmentInfo(map[string]string{"image": "augment"})
		in.Augment.In = "NNNNNN" + pairs.AugmentSuffix + ", float32 [B, 18]"
	}
	if cfg.Decode == config.DecodeGPU {
		in.Files = append(in.Files, strings.TrimPrefix(pairs.JPEGSizeSuffix, "."))
		in.Frames.JPEGSize = "NNNNNN" + pairs.JPEGSizeSuffix
	}
}

func (k pairKind) describeDataset(*Pipeline, *Dataset, *datasetInfo) {}

package formats

import (
	"context"
	"errors"
	"image"
	"math"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/format/lerobot"
	lrsynth "github.com/oxefs/oxefs/format/lerobot/synth"
	"github.com/oxefs/oxefs/format/synthetic"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/storage/local"
)

// avSynthEncoder gives frames/av's encoder to the LeRobot synth, as the CLI
// does.
type avSynthEncoder struct{ *av.Encoder }

func (e avSynthEncoder) Config() []byte { return e.Extradata() }

func (e avSynthEncoder) Samples() []format.VideoSample {
	var out []format.VideoSample
	for _, p := range e.Packets() {
		out = append(out, format.VideoSample{Data: p.Data, PTS: p.PTS, DTS: p.DTS, Key: p.Key})
	}
	return out
}

// TestLeRobotSynthFrames writes two small synthetic LeRobot datasets with
// real video, for each codec, opens them with format/lerobot and decodes
// frames through frames.Video: each must be the frame the RLDS synth
// renders for the same episode and step, within the codec's loss (PSNR
// above 30 dB), and nearer it than its neighbours. The encoder runs at CRF
// 18: at LeRobot's CRF 30 the scenes' sensor noise alone keeps the PSNR
// near 29.5 dB.
func TestLeRobotSynthFrames(t *testing.T) {
	requireVideo(t)
	for _, codec := range []string{"av1", "h264"} {
		t.Run(codec, func(t *testing.T) {
			probe, err := av.NewEncoder(codec, 64, 64, 10, av.EncoderOptions{})
			if errors.Is(err, av.ErrUnavailable) {
				t.Skipf("no %s encoder: %v", codec, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := probe.Encode(make([]byte, 64*64*3)); err != nil {
				t.Fatal(err)
			}
			probe.Close()
			ctx := context.Background()
			res, err := lrsynth.Generate(ctx, lrsynth.Options{
				Dir: t.TempDir(), Datasets: 2, Episodes: 2, Steps: 12, Seed: 5, Codec: codec,
				NewEncoder: func(w, h, fps int) (format.VideoEncoder, error) {
					e, err := av.NewEncoder(codec, w, h, fps, av.EncoderOptions{CRF: 18})
					if err != nil {
						return nil, err
					}
					return avSynthEncoder{e}, nil
				},
				VideoFileBytes: 64 << 10,
			})
			if err != nil {
				t.Fatal(err)
			}
			dec, err := frames.NewDecoder(frames.DecoderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer dec.Close()
			for _, dr := range res.Datasets {
				d, err := lerobot.Open(ctx, dr.Name, local.New(dr.Dir), lerobot.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for i, want := range dr.Episodes {
					key, _ := d.Key(int64(i))
					ep, err := d.Episode(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					content := synthetic.EpisodeContent(dr.Dataset, 5, want.Split, want.Index, want.Steps)
					for ci, cam := range dr.Cameras {
						v, err := ep.Feature(cam)
						if err != nil {
							t.Fatal(err)
						}
						c := dr.Dataset.Cameras[ci]
						w, h := c.Width&^1, c.Height&^1
						src := &frames.Video{Key: cam, Steps: ep.Steps(), Stream: v.(episode.Video), Size: frames.Size{W: w, H: h}}
						img := image.NewRGBA(image.Rect(0, 0, c.Width, c.Height))
						for _, step := range []int{0, 5, ep.Steps() - 1} {
							got := make([]byte, w*h*3)
							if err := src.Decode(ctx, dec, []int{step}, frames.Slot{Buf: got, Frames: 1, H: h, W: w}); err != nil {
								t.Fatalf("%s episode %d %s step %d: %v", dr.Name, i, cam, step, err)
							}
							content.Render(ci, step, img)
							q := psnrRGBA(got, img, w, h)
							if q < 30 {
								t.Errorf("%s episode %d %s step %d: PSNR %.1f dB against the rendered frame, want > 30", dr.Name, i, cam, step, q)
							}
							for _, other := range []int{step - 1, step + 1} {
								if other < 0 || other >= ep.Steps() {
									continue
								}
								content.Render(ci, other, img)
								if qo := psnrRGBA(got, img, w, h); qo >= q {
									t.Errorf("%s episode %d %s step %d: PSNR %.1f dB against step %d, %.1f against its own", dr.Name, i, cam, step, qo, other, q)
								}
							}
						}
					}
				}
			}
		})
	}
}

// psnrRGBA compares packed RGB with the top-left w×h of an RGBA image.
func psnrRGBA(rgb []byte, img *image.RGBA, w, h int) float64 {
	var se float64
	for y := range h {
		for x := range w {
			for c := range 3 {
				d := float64(rgb[(y*w+x)*3+c]) - float64(img.Pix[y*img.Stride+4*x+c])
				se += d * d
			}
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(w*h*3)))
}

package synth

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/format/lerobot/mp4"
	"github.com/oxefs/oxefs/format/synthetic"
)

// videoPath is LeRobot's video_path template.
const videoPath = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"

// timescale is the MP4 media timescale FFmpeg's muxer picks for a time
// base of 1/fps: fps doubled until it reaches 10000 (10240 for 10 fps).
func timescale(fps int) uint32 {
	t := uint32(fps)
	for t < 10000 {
		t *= 2
	}
	return t
}

// videoFile is the camera's video file being written.
type videoFile struct {
	f      *os.File
	w      *mp4.Writer
	index  int64
	frames int64   // samples written
	end    float64 // to_timestamp of its last episode
	config []byte
}

// writeVideos renders and encodes every episode of camera ci, in order,
// into the camera's video files, rolling over at o.VideoFileBytes, and
// records where each episode lies.
func (p *dataset) writeVideos(ctx context.Context, o Options, ci int) (err error) {
	cam := p.Dataset.Cameras[ci]
	key := p.Cameras[ci]
	w, h := cam.Width&^1, cam.Height&^1
	img := image.NewRGBA(image.Rect(0, 0, cam.Width, cam.Height))
	rgb := make([]byte, w*h*3)
	ts := timescale(FPS)
	dur := ts / FPS
	spans := make([]lerobot.VideoSpan, len(p.episodes))
	var cur *videoFile
	defer func() {
		if cur != nil && err != nil {
			cur.f.Close()
		}
	}()
	var written int64
	for e := range p.episodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := p.content(o, e)
		samples, config, err := encodeEpisode(o, c, ci, img, rgb, w, h)
		if err != nil {
			return fmt.Errorf("synth: %s %s episode %d: %w", p.Name, key, e, err)
		}
		var size int64
		for _, s := range samples {
			size += int64(len(s.Data))
		}
		// LeRobot: a new file when the current one plus this episode
		// would reach the limit.
		next := int64(0)
		if cur != nil && cur.w.Size()+size >= o.VideoFileBytes {
			if err := cur.close(); err != nil {
				return err
			}
			written += cur.w.Size()
			cur, next = nil, cur.index+1
		}
		if cur == nil {
			cur = &videoFile{index: next}
			if err := cur.open(p.Dir, key, o.Codec, config, w, h, ts); err != nil {
				cur = nil
				return err
			}
		}
		if !bytes.Equal(config, cur.config) {
			return fmt.Errorf("synth: %s %s episode %d: the encoder's configuration changed within a file", p.Name, key, e)
		}
		from := cur.end
		for _, s := range samples {
			err := cur.w.Write(mp4.WriteSample{Data: s.Data, PTS: (cur.frames + s.PTS) * int64(dur),
				DTS: (cur.frames + s.DTS) * int64(dur), Duration: dur, Key: s.Key})
			if err != nil {
				return fmt.Errorf("synth: %s %s episode %d: %w", p.Name, key, e, err)
			}
		}
		cur.frames += int64(len(samples))
		// LeRobot adds the episode file's duration (stream.duration ×
		// time_base) to the previous to_timestamp.
		cur.end = from + float64(int64(len(samples))*int64(dur))/float64(ts)
		spans[e] = lerobot.VideoSpan{Chunk: 0, File: cur.index, FromTimestamp: from, ToTimestamp: cur.end}
		p.done(o, e, size)
	}
	if cur != nil {
		if err := cur.close(); err != nil {
			return err
		}
		written += cur.w.Size()
	}
	p.spans[ci] = spans
	p.videoBytes[ci] = written
	return nil
}

// encodeEpisode renders one episode of camera ci, crops each frame to
// w×h, and encodes it with a fresh encoder, as LeRobot encodes each
// episode on its own.
func encodeEpisode(o Options, c *synthetic.Content, ci int, img *image.RGBA, rgb []byte, w, h int) ([]format.VideoSample, []byte, error) {
	enc, err := o.NewEncoder(w, h, FPS)
	if err != nil {
		return nil, nil, err
	}
	defer enc.Close()
	var samples []format.VideoSample
	for s := range c.Steps {
		c.Render(ci, s, img)
		for y := range h {
			row := img.Pix[y*img.Stride:]
			out := rgb[y*w*3:]
			for x := range w {
				out[3*x], out[3*x+1], out[3*x+2] = row[4*x], row[4*x+1], row[4*x+2]
			}
		}
		if err := enc.Encode(rgb); err != nil {
			return nil, nil, fmt.Errorf("step %d: %w", s, err)
		}
		samples = append(samples, enc.Samples()...)
	}
	if err := enc.Flush(); err != nil {
		return nil, nil, err
	}
	samples = append(samples, enc.Samples()...)
	if len(samples) != c.Steps {
		return nil, nil, fmt.Errorf("%d frames encoded into %d samples", c.Steps, len(samples))
	}
	return samples, enc.Config(), nil
}

func (v *videoFile) open(dir, key, codec string, config []byte, w, h int, ts uint32) error {
	name, err := lerobot.FilePath(videoPath, 0, v.index, key)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	mw, err := mp4.NewWriter(f, mp4.TrackConfig{Codec: codec, Config: config, Width: w, Height: h, Timescale: ts})
	if err != nil {
		f.Close()
		return fmt.Errorf("synth: %s: %w", path, err)
	}
	v.f, v.w, v.config = f, mw, config
	return nil
}

func (v *videoFile) close() error {
	if err := v.w.Close(); err != nil {
		v.f.Close()
		return fmt.Errorf("synth: %s: %w", v.f.Name(), err)
	}
	if err := v.f.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

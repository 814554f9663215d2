package frames

import (
	"context"
	"fmt"
)

// Source is the frames of one camera of one episode: the seam through which
// the sample assembler gets pixels. The assembler chooses which frames a
// sample holds and hands their indices, with the sample's Slot and the
// worker's Decoder, to Decode; how the frames are stored is the Source's
// business. A Source is a cheap view, built per sample or shared between
// workers; everything that is reused from frame to frame lives in the
// Decoder, which belongs to one worker.
//
// Two Sources exist: Images (images.go), one encoded image per step, and
// Video (video.go), the frames of many episodes in one shared video file,
// frame i of an episode at its own presentation time. Video fits without
// any change to the assembler; it is a file of package frames, next to
// images.go, with its codec binding in a subpackage (frames/av), and:
//   - Len is the episode's frame count.
//   - Decode maps each index to its timestamp and reads the file through a
//     reader the Source was built with, bounded by ctx. Because idx is
//     ascending, one seek to the keyframe at or before the first timestamp
//     serves the whole sample: it decodes forward and writes each wanted
//     frame through the same resize path Images uses.
//   - The stream state that makes consecutive frames cheap (a codec
//     context positioned after the last frame it decoded, keyed by file)
//     lives in the Decoder, registered through DecoderOptions, so that the
//     next sample a worker builds from the same file continues forward
//     instead of seeking again.
//   - Damaged frame data is an *ImageError; a read that fails is returned
//     as it is, so that the caller can tell damage (substitute another
//     sample) from an outage (fail the read).
type Source interface {
	// Len is the number of frames.
	Len() int
	// Decode writes frame idx[k] into frame k of dst for every k, with d.
	// idx is ascending, len(idx) == dst.Frames, and every index is in
	// [0, Len()). Bad data of one frame is an *ImageError naming it; any
	// other error (a read that failed, ctx done, a malformed request) is
	// not the episode's fault. After an error dst holds partial data.
	Decode(ctx context.Context, d *Decoder, idx []int, dst Slot) error
}

// checkRequest checks what Source.Decode is given: a valid slot, one
// index per frame of it, every index a frame of the source's steps. It
// returns the size the frames must have and, for errors, where it comes
// from.
func checkRequest(key string, steps int, idx []int, dst Slot, size Size, sizeFrom string) (Size, string, error) {
	if err := dst.check(); err != nil {
		return size, sizeFrom, err
	}
	if len(idx) != dst.Frames {
		return size, sizeFrom, fmt.Errorf("camera %s: %d frames asked for a slot of %d", key, len(idx), dst.Frames)
	}
	for _, i := range idx {
		if i < 0 || i >= steps {
			return size, sizeFrom, fmt.Errorf("camera %s: frame %d asked, it has %d", key, i, steps)
		}
	}
	if sizeFrom == "" {
		sizeFrom = "expected"
	}
	return size, sizeFrom, nil
}

package episode

import "context"

// Video is the View of a camera stored as a compressed video track that
// many episodes share (LeRobot v3 concatenates episodes into MP4 files). A
// format returns it from Episode.Feature for such a camera; its Spec is an
// image feature (Kind KindImage, Encoding the codec: "av1", "h264",
// "hevc"), so that config rules and the assembler treat it as a camera.
// Bytes, Float64s and Int64s have nothing to give and fail or return nil.
//
// The format demuxes; the decoder (package frames) decodes. Between them
// pass only numbers: which sample of the track shows a step, where each
// sample's bytes lie in the file, and the bytes themselves. Samples are
// numbered in decode order over the whole track, not the episode, so that
// a decoder positioned in a file can continue from one episode into the
// next. An episode need not describe the whole track, only the samples its
// steps need: from the earliest sample its shown samples start decoding
// from (see DecodeStart) up to the next keyframe after the last one, or the
// end of the track. A decoder starts from a shown sample's Start and
// drains at the end of what is described, so those suffice.
type Video interface {
	View
	// File names the video file, unique within the process (dataset and
	// path): a decoder keeps its position per file.
	File() string
	// Codec is the codec ("av1", "h264", "hevc") and its configuration
	// record (the MP4 sample entry's av1C, avcC or hvcC payload).
	Codec() (name string, config []byte)
	// Shown returns the sample that shows the episode's step: the one
	// whose presentation time is nearest the step's timestamp. An error
	// says the step has no frame in the video (its timestamp lies outside
	// the track, beyond the format's tolerance): the episode is corrupt.
	Shown(step int) (sample int, err error)
	// Samples is one past the last sample the episode describes.
	Samples() int
	// Start is the sample decoding must start from to show sample j (see
	// DecodeStart), or -1 when there is none.
	Start(j int) int
	// Sample describes sample j: its bytes are at [off, off+size) of the
	// file; pts is its presentation time in the track's units; key says
	// decoding can start there. A sample the episode does not describe
	// has size 0.
	Sample(j int) (off int64, size int, pts int64, key bool)
	// ReadAt reads the file's bytes at off, bounded by ctx.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

// Samples describes the samples of a video track in decode order: what
// DecodeStart needs of a format's index or view.
type Samples interface {
	Sample(j int) (off int64, size int, pts int64, key bool)
}

// DecodeStart returns the sample decoding must start from to show sample
// j: the last keyframe at or before j, in decode order, that is not shown
// after j. A keyframe shown after j is the start of an open group of
// pictures (HEVC's CRA, an open-GOP H.264 I frame) and j one of its leading
// pictures, which reference the group before: started there, a decoder
// drops j. When no keyframe qualifies, it is the last keyframe at or before
// j, and -1 when there is none.
func DecodeStart(s Samples, j int) int {
	_, _, pts, _ := s.Sample(j)
	last := -1
	for k := j; k >= 0; k-- {
		_, size, p, key := s.Sample(k)
		if size == 0 && k != j {
			break // outside what s describes
		}
		if !key {
			continue
		}
		if last < 0 {
			last = k
		}
		if p <= pts {
			return k
		}
	}
	return last
}

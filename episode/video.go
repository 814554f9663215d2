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
// next.
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
	// Samples is the number of samples of the track.
	Samples() int
	// Sample describes sample j: its bytes are at [off, off+size) of the
	// file; pts is its presentation time in the track's units; key says
	// decoding can start there.
	Sample(j int) (off int64, size int, pts int64, key bool)
	// ReadAt reads the file's bytes at off, bounded by ctx.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

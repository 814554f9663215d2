package frames

import (
	"errors"
	"fmt"
)

// What can be wrong with one frame's data. An *ImageError wraps one of
// them.
var (
	// ErrEmptyImage: the frame's encoded bytes are empty.
	ErrEmptyImage = errors.New("empty image")
	// ErrImageFormat: the bytes are neither a JPEG nor a PNG.
	ErrImageFormat = errors.New("not a JPEG or PNG image")
	// ErrUndecodable: the decoder rejected the bytes.
	ErrUndecodable = errors.New("undecodable image")
	// ErrImageSize: the decoded size is not the one the source expects
	// (Images.Size) or, when it expects none, not that of the sample's
	// first frame.
	ErrImageSize = errors.New("unexpected image size")
)

// ImageError is one bad frame of a Source: its data cannot give the
// frame's pixels. Key names the camera (the image feature) and Step the
// frame. It is the episode's fault, not the reader's: the assembler reports
// it as corrupt data of that episode, and other frames of the same episode
// may still decode.
type ImageError struct {
	Key  string
	Step int
	Err  error
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("%s step %d: %v", e.Key, e.Step, e.Err)
}

func (e *ImageError) Unwrap() error { return e.Err }

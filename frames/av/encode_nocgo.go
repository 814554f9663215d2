//go:build !cgo

package av

import "fmt"

// Encoder is unavailable without cgo.
type Encoder struct{}

// NewEncoder checks the codec name and returns an error matching
// ErrUnavailable.
func NewEncoder(codec string, width, height, fps int, opts EncoderOptions) (*Encoder, error) {
	if _, ok := encoderNames[codec]; !ok {
		return nil, fmt.Errorf("av: unknown codec %q to encode (want av1 or h264)", codec)
	}
	return nil, errNoCgo
}

// Name returns "".
func (e *Encoder) Name() string { return "" }

// Extradata returns nil.
func (e *Encoder) Extradata() []byte { return nil }

// Encode returns an error matching ErrUnavailable.
func (e *Encoder) Encode([]byte) error { return errNoCgo }

// Flush returns an error matching ErrUnavailable.
func (e *Encoder) Flush() error { return errNoCgo }

// Packets returns nil.
func (e *Encoder) Packets() []Packet { return nil }

// Close does nothing.
func (e *Encoder) Close() {}

//go:build !cgo

package av

import "fmt"

var errNoCgo = fmt.Errorf("%w: oxefs was built without cgo (CGO_ENABLED=0), so it cannot dlopen libavcodec; build with cgo and %s", ErrUnavailable, install)

// Available reports that this build cannot use libavcodec.
func Available() error { return errNoCgo }

// Decoder is unavailable without cgo.
type Decoder struct{}

// NewDecoder checks the codec name and returns an error matching
// ErrUnavailable.
func NewDecoder(codec string, extradata []byte) (*Decoder, error) {
	if _, err := codecID(codec); err != nil {
		return nil, err
	}
	return nil, errNoCgo
}

// Name returns "".
func (d *Decoder) Name() string { return "" }

// Send returns an error matching ErrUnavailable.
func (d *Decoder) Send([]byte) error { return errNoCgo }

// SendPTS returns an error matching ErrUnavailable.
func (d *Decoder) SendPTS([]byte, int64) error { return errNoCgo }

// Receive returns an error matching ErrUnavailable.
func (d *Decoder) Receive() (*Frame, error) { return nil, errNoCgo }

// Reset does nothing.
func (d *Decoder) Reset() {}

// Close does nothing.
func (d *Decoder) Close() {}

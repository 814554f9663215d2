//go:build !cgo

package turbojpeg

import "fmt"

// Library is the name dlopen would be given.
const Library = "libturbojpeg.so.0"

var errNoCgo = fmt.Errorf("%w: oxefs was built without cgo (CGO_ENABLED=0), so it cannot dlopen %s", ErrUnavailable, Library)

// Available reports that this build cannot use libturbojpeg.
func Available() (string, error) { return "", errNoCgo }

// Decompressor is unavailable without cgo.
type Decompressor struct{}

// NewDecompressor returns an error matching ErrUnavailable.
func NewDecompressor() (*Decompressor, error) { return nil, errNoCgo }

// Close does nothing.
func (d *Decompressor) Close() {}

// Header returns an error matching ErrUnavailable.
func (d *Decompressor) Header([]byte) (Header, error) { return Header{}, errNoCgo }

// DecodeRGB returns an error matching ErrUnavailable.
func (d *Decompressor) DecodeRGB([]byte, Header, []byte, int) error { return errNoCgo }

// DecodeScaledRGB returns an error matching ErrUnavailable.
func (d *Decompressor) DecodeScaledRGB([]byte, Header, int, []byte, int) error { return errNoCgo }

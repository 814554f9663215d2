//go:build !linux

package batch

import "errors"

func memfdBuffer([]byte, int64) (*buffer, error) {
	return nil, errors.New("memfd buffers need Linux")
}

func (b *buffer) free() {}

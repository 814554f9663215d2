//go:build !linux

package batch

import "errors"

var errNoMemfd = errors.New("memfd buffers need Linux")

func memfdBuffer([]byte, int64) (*buffer, error) { return nil, errNoMemfd }

func memfdParts(int64, []Part) (*buffer, error) { return nil, errNoMemfd }

func (b *buffer) free() {}

func (b *buffer) lend(int) (int, error) { return -1, errNoMemfd }

type returns struct{}

func newReturns() (*returns, error)      { return nil, errNoMemfd }
func (r *returns) watch(*buffer) error   { return errNoMemfd }
func (r *returns) unwatch(*buffer)       {}
func (r *returns) run(func(int), func()) {}
func (r *returns) close() error          { return nil }

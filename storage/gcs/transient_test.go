package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"google.golang.org/api/googleapi"
)

func TestIsTransient(t *testing.T) {
	opErr := func(errno syscall.Errno) error {
		return &url.Error{Op: "Get", URL: "http://x/b/o", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"503", &googleapi.Error{Code: 503}, true},
		{"500", &googleapi.Error{Code: 500}, true},
		{"429", &googleapi.Error{Code: 429}, true},
		{"408", &googleapi.Error{Code: 408}, true},
		{"wrapped 502", fmt.Errorf("shard x: %w", &googleapi.Error{Code: 502}), true},
		{"403", &googleapi.Error{Code: 403}, false},
		{"400", &googleapi.Error{Code: 400}, false},
		{"404", &googleapi.Error{Code: 404}, false},
		{"not exist", fmt.Errorf("%w: storage: object doesn't exist", fs.ErrNotExist), false},
		{"local not exist", &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, false},
		{"permission", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"reset", opErr(syscall.ECONNRESET), true},
		{"refused", opErr(syscall.ECONNREFUSED), true},
		{"timeout", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, true},
		{"deadline", context.DeadlineExceeded, true},
		{"canceled", context.Canceled, false},
		{"other", errors.New("storage: partial request not satisfied"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isTransient(tc.err); got != tc.want {
				t.Errorf("isTransient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

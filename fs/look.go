package fs

import (
	"context"
	"os"
	"strconv"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// lookKey marks a Get as a look (see Looking).
type lookKey struct{}

// Looking reports whether ctx's Get is a look at one batch rather than a
// reader going through them: the open or read of a caller that is a thread
// of this very process, which is the daemon's own web page (mount --view):
// it shows a batch, nothing reads on from there, so the Batches should
// start no readahead for it.
func Looking(ctx context.Context) bool { return ctx.Value(lookKey{}) != nil }

// markLook marks ctx as a look when the FUSE request comes from one of this
// process's threads (the kernel names the calling thread, whose entry is
// then under /proc/self/task).
func markLook(ctx context.Context) context.Context {
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Pid == 0 {
		return ctx
	}
	if _, err := os.Stat("/proc/self/task/" + strconv.FormatUint(uint64(c.Pid), 10)); err != nil {
		return ctx
	}
	return context.WithValue(ctx, lookKey{}, true)
}

//go:build !linux

package frames

import "time"

// threadCPU is not measured here; benchmarks then report wall time only.
func threadCPU() time.Duration { return 0 }

package loader

// The storage backends oxefs reads datasets from: each registers its
// URL scheme with package storage (a local directory has none).
import (
	_ "github.com/oxefs/oxefs/storage/gcs"
	_ "github.com/oxefs/oxefs/storage/local"
)

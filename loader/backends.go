package loader

// The storage backends oxefs reads datasets from, each registering its URL
// scheme with package storage (a local directory has none), and the
// dataset formats, registering with package format in probe order.
import (
	_ "github.com/oxefs/oxefs/format/formats"
	_ "github.com/oxefs/oxefs/storage/gcs"
	_ "github.com/oxefs/oxefs/storage/hf"
	_ "github.com/oxefs/oxefs/storage/local"
	_ "github.com/oxefs/oxefs/storage/s3"
)

// Package episode is the format-neutral model that every layer above the
// formats speaks: a dataset's description (splits, the shards that group its
// episodes, typed per-step and per-episode features), the key that names one
// episode, the read-only view of a loaded episode, and the errors about bad
// dataset bytes.
//
// A format (package format/rlds for RLDS in TFDS TFRecord shards,
// format/lerobot for LeRobot v3's parquet tables and MP4 files) reads a
// dataset directory through a storage backend and yields a Dataset; the
// plan, the sample assembler and the composition root see only this
// package's types. A camera's frames are a View of encoded images, one per
// step, or a Video track that many episodes share. A new format goes in its
// own package under format/, implements Dataset and Episode, resolves split
// strings with episode/splitspec, and registers with package format in
// format/formats.
//
// episode imports nothing else of oxefs, and does no I/O.
package episode

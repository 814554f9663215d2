// Package rlds is the first dataset format: RLDS episodes in TFDS TFRecord
// shards, one tf.train.Example per episode. It reads a dataset directory
// through a storage backend — dataset_info.json and features.json
// (package format/rlds/tfds; split strings resolve through
// episode/splitspec), the
// shards' record framing with both CRC32C checks (format/rlds/tfrecord) and
// the Examples (format/rlds/example) — and yields the format-neutral model
// of package episode: Dataset.Info describes the splits, shards and typed
// features, Dataset.Episode loads an episode whose views read the Example
// in place. Datasets are opened over a store.Store (Open), which owns what
// every format shares: the storage stack, the disk cache, the per-source
// index directory, derived files, offline records and the load statistics.
// This package owns what only this format needs: the record index of each
// shard (for a remote shard not in the disk cache, built by header hops and
// saved: hops.go), the fetch of single records of remote shards
// (ranged.go), shard prefetch, the persistent episode-length index, the
// inspect report, the checks of shard files against dataset_info.json, and
// what the offline record of a remote dataset holds (its metadata and
// shard versions, saved by `oxefs warm` through the store) from which an
// offline store opens it.
//
// Nothing outside this package tree imports TFDS types. A new format goes
// in its own package under format/, implements episode.Dataset and
// episode.Episode, and registers with package format in format/formats,
// which is also where this package's datasets are given the capabilities
// of package format.
//
// rlds imports storage, store and the neutral model; it must not import the plan,
// pairs, frames, the scheduler or anything above them.
package rlds

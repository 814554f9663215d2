// Package tfds owns the metadata of a TFDS dataset directory as
// tensorflow_datasets 4.x writes it, and the arithmetic TFDS does on it:
//
//   - dataset_info.json: the dataset's name, version and file format, its
//     splits with their per-shard example counts, and the shard file names
//     that each split's filepathTemplate expands to (ParseDatasetInfo,
//     DatasetInfo.ShardNames);
//   - features.json: the feature tree, flattened to the tf.train.Example keys
//     TFDS writes (`steps/observation/image`, `episode_metadata/file_path`),
//     with each key's kind, dtype, shape and encoding (ParseFeatures);
//   - example indices mapped to a shard and a record within it
//     (SplitInfo.Locate).
//
// Split strings (`train[:90%]`, `train+val`) are not TFDS's alone: LeRobot
// datasets are selected with them too, so their grammar lives in the
// neutral package episode/splitspec.
//
// It reads no files and does no I/O: callers hand it the bytes of the two
// JSON files. The semantics are those of tensorflow_datasets 4.9
// (core/splits.py, core/naming.py, core/features/*, core/example_serializer.py);
// the tests hold values computed by running TFDS itself.
//
// tfds belongs to the RLDS format: only format/rlds may import it. Of
// oxefs it imports only the neutral model (package episode), for the
// feature kinds.
package tfds

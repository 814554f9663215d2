// Package format is the seam between oxefs and its dataset formats: a
// registry of formats, each a probe and an opener (Register, Open), and the
// capabilities a format's datasets may have beyond the neutral
// episode.Dataset.
//
// Every dataset is a Dataset. What only some formats do is a small
// interface of its own, found by type assertion, as go-fuse finds what a
// node can do (NodeLookuper, NodeReader):
//
//   - LengthLoader: episode lengths known without reading the episodes
//     (LeRobot's episode table, an RLDS length index built earlier);
//   - LengthIndexer: lengths that one pass over the episodes indexes
//     (RLDS, for samples_per_episode 0 and `inspect --index`);
//   - SplitChecker: a split's files checked against the metadata at open;
//   - Deriver: files derived from the dataset's bytes (normalisation
//     statistics), kept under its identity;
//   - ShardFetcher: remote bytes worth fetching ahead of the reads, whole
//     shards in plan order and each batch's episodes at once (RLDS);
//   - CameraSelector: cameras stored as files of their own, left unread
//     when no mix entry reads them (LeRobot's video files);
//   - EpisodeBytes (of a loaded episode): remote bytes its decode reads
//     beyond its load, fetched with the rest of its batch (LeRobot's
//     video samples);
//   - Auditor: defects of whole files that no episode's load sees, for
//     `oxefs check` (LeRobot's orphaned rows and video frame counts);
//   - Warmer and OfflineChecker: what `oxefs warm` saves for mount
//     --offline, and what the cache still lacks;
//   - Describer: the description `oxefs inspect` prints;
//   - Named: the format's name, for messages.
//
// What a whole format does rather than one dataset is a field of its
// Format: its probe and opener, what an offline open lacks
// (MissingOffline), and writing synthetic datasets for `oxefs synth`
// (Synth). What the datasets of one daemon share (the store, LeRobot's
// video sample tables) is in their Env.
//
// A caller asks for a capability and does without it when the dataset has
// none; it never names a format. The formats register in one place,
// package format/formats, which the composition root imports; nothing
// outside format/ imports a format's own package (internal/layers checks
// it). A new format is a package under format/ and one file in
// format/formats.
package format

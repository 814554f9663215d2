// Package lerobot reads LeRobot v3 datasets (lerobot ≥ 0.4, codebase_version
// "v3.0") into the format-neutral model of package episode, so that they mix
// with RLDS datasets in one mount.
//
// # Layout read
//
//	meta/info.json                         fps, features, splits, path templates
//	meta/episodes/chunk-XXX/file-YYY.parquet  one row per episode: length, data file,
//	                                       row range, per camera its video file and
//	                                       from/to timestamps
//	meta/tasks.parquet                     task_index → task text
//	data/chunk-XXX/file-YYY.parquet        one row per frame: action, observation.state,
//	                                       timestamp, frame_index, episode_index, index,
//	                                       task_index, image columns ({bytes, path})
//	videos/<camera>/chunk-XXX/file-YYY.mp4 many episodes per file, one after another
//
// Open reads info.json and the two metadata tables; nothing else until an
// episode is loaded. The episode table's files are found by walking
// chunk/file indices the way LeRobot assigns them until total_episodes rows
// are read, so a source needs no listing.
//
// # The neutral model
//
//   - Splits come from info.json ("train": "0:40"). Within a split, each run
//     of episodes stored in one data file is a shard, so the plan's shard
//     windows keep reads within few files. Select applies TFDS's split
//     grammar ("train[:90%]", "train[5:]+val") to them.
//   - Every declared feature is a per-step feature under LeRobot's own key
//     ("action", "observation.state", "observation.images.top"). Cameras,
//     video or image, are image features: a video camera's Encoding is
//     "video/<codec>", an image camera's "png". The bookkeeping columns
//     LeRobot declares with shape [1] (timestamp, frame_index, ...) are
//     scalars.
//   - TaskKey ("task") is added: the step's task text, through task_index
//     and the task table — what LeRobotDataset[i]["task"] gives.
//   - Episode ids are dataset/split/episode_NNNNNN, with LeRobot's episode
//     index.
//
// # Video
//
// A video camera's view is an episode.Video: this package demuxes (package
// mp4 reads the file's sample tables by ranged reads) and package frames
// decodes. At load every step is matched to the sample whose presentation
// time is nearest from_timestamp + timestamp, as LeRobot's decoders match
// frames, and a step with no frame within Tolerance makes the episode
// corrupt. The episode then keeps a copy of only the samples its frames
// need, so that the whole file's table can go: tables are kept in an
// IndexCache, bounded in bytes and shared by the datasets of a mix, and
// parsed again when dropped.
//
// Every file is read by ranges through package store (Options.Store), the
// one reader every format shares: each read names the file's version and
// what its bytes are for (an episode's span of a video, a parser's ranges,
// a data file's blocks: see ranges.go), and the disk cache decides where
// they come from. The store also counts each episode loaded and the bytes
// of its data file read (store.Stats).
//
// # Errors
//
// Bad data of one episode — a data or video file that is missing,
// truncated or unreadable as parquet or MP4, a missing column, rows that
// are not the episode's, an unknown codec, timestamps outside the video —
// is an *episode.CorruptError naming the file and the episode index, which
// the loader substitutes like any corrupt episode; a missing file's also
// matches episode.ErrMissingShard (never fs.ErrNotExist, which would read
// as "no such batch"). A video file cut short after its sample table
// (LeRobot's files have it first) costs only the episodes whose samples
// lie past the cut. Only the cameras the dataset reads (UseCameras: those
// the mix's entries name) are matched at load, so another camera's files
// may be missing or damaged. A read that failed is returned as it is. Errors in the metadata (info.json, the episode and task
// tables) fail Open and name the file and field.
package lerobot

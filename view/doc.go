// Package view serves a web page of what an oxefs mount serves: the mix
// (each dataset's target and realised share, substitutions, the val
// view), any batch of any view and rank as the trainer receives it (each
// slot's frames across its history with padding and missing slots marked,
// the action chunk and state history per dimension, where each sample
// came from, any other per-sample array info.json lists), the daemon's
// live counters, and an `oxefs check` report.
//
// It is a reader of the mount and nothing else: it opens the mount's
// directory through an os.Root and reads info.json, stats.json and the
// batch files, as any trainer does, so it never sees the pipeline behind
// them (`oxefs view MOUNT` and `oxefs mount --view` serve the same page).
// Read-only: GET and HEAD only; a batch past the listing, a rank the
// mount lacks, an unknown parameter or a malformed value is a 4xx with
// the reason as JSON; values under keys that name a secret, and the user
// info and query of URLs, are removed before anything reaches the page.
//
// The page is net/http, html/template and embed.FS, as `go tool pprof
// -http` and expvar do: its HTML, script and style are in the binary, it
// fetches its data from JSON endpoints (/api/mix, /api/batch, /api/stats,
// /api/check, /api/info) and each frame from /api/frame, encoded as PNG
// (or JPEG) on request from that frame's bytes alone. Charts are SVG drawn
// by the page's own script (no library): each curve carries its values
// as data attributes, which the browser tests compare with the .npy.
package view

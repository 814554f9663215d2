// Package mp4 reads the sample tables of the video tracks of a
// non-fragmented ISO-BMFF (MP4) file, so that a LeRobot dataset's frames can
// be fetched one at a time: for every sample of every video track, where its
// bytes are, how many there are, whether it is a sync sample, and its decode
// and presentation times. It never reads the media data itself.
//
// # What it reads
//
// Parse reads the header of each top-level box (ftyp, free, mdat, moov,
// anything else; the first must be one an MP4 file starts with, such as
// ftyp, moov or mdat), then the whole moov box in one read, wherever it
// sits (after mdat as FFmpeg writes it, or before with +faststart). In moov it
// walks mvhd and each trak's tkhd, edts/elst, mdia/mdhd, hdlr and
// minf/stbl: stsd (one visual sample entry, its width and height, and its
// av1C, avcC or hvcC payload, which is what FFmpeg calls extradata), stts,
// ctts (versions 0 and 1), stss, stsz, stsc, and stco or co64. Tracks whose
// handler is not 'vide' are listed by handler and otherwise ignored. Boxes
// it does not need (btrt, colr, pasp, sdtp, udta, ...) are skipped.
//
// # What it refuses
//
// Fragmented files (a top-level moof or mfra, or mvex in moov), stz2
// compact sample sizes, more than one sample description in a track, edit
// lists with more than one non-empty edit, edits whose rate is not 1, and
// files past the bounds below match ErrUnsupported. Everything structurally wrong (box sizes that do not
// nest, tables that are short, disagree in length or point outside the
// file, required boxes missing or repeated) matches ErrMalformed. A file
// that ends early (a box, moov included, or a sample that extends past the
// file's size) matches ErrTruncated, and also ErrMalformed. ParsePartial
// reads what is left of a file cut after its moov (a faststart file cut in
// mdat): every sample the boxes declare, with File.Truncated set to that
// error, so that a reader loses only the samples past the cut. Every such error
// is an *Error naming the box path, e.g. "moov/trak[0]/mdia/minf/stbl/stsz"
// (trak boxes are counted from 0), and what is wrong. Errors from the
// io.ReaderAt are returned wrapped and match none of these.
//
// # Timestamps
//
// Times are in the track's media timescale (mdhd). Decode times come from
// stts, starting at 0. Presentation times follow FFmpeg's mov demuxer, and
// so PyAV, for the edit lists FFmpeg writes: with E the sum of the initial
// empty edits (media_time -1; their durations are in the movie timescale of
// mvhd and are each converted to the media timescale, rounding to nearest)
// and M the media_time of the one non-empty edit (0 when there is none),
//
//	PTS = stts time + ctts offset + E - M
//	DTS = stts time + E - M - S
//
// where S is the largest negative ctts offset negated, or 0: like FFmpeg,
// DTS is moved back so that DTS <= PTS when ctts has negative offsets (as
// FFmpeg writes with -movflags negative_cts_offsets), and ctts offsets are
// read as signed in version 0 too. So an H.264 file with B-frames, whose
// edit list skips the composition delay, starts at PTS 0 with a negative
// DTS. Samples are never dropped or trimmed to the edit's duration.
//
// # Bounds
//
// Parse allocates in proportion to the bytes it is given, never to a count
// read from them, and every loop is bounded by those bytes. moov may be at
// most 256 MiB, and the top level may hold at most 4096 boxes. Each
// table's entry count must fit in its box. A file holds at most 1<<24
// samples across its video tracks; with a constant sample size (stsz
// without a table) the samples must fit in the file. stsz, stts, ctts and
// stsc must agree on the number of samples, and edit-list times must stay
// below 1<<60. Nothing here panics on any input.
package mp4

// Package pairs turns a planned sample and its episode into training data:
// it picks the sample's frames, decodes them, resizes them exactly as
// TensorFlow does and writes them straight into the sample's slot of a
// batch buffer, and it builds the sample's metadata record (dataset name,
// episode id, frame indices, language, summed action, initial state,
// robot). It reads episodes through package cache, draws its random choices
// with mix.Draw, takes its enums, frame selection and rules from package
// config, and knows nothing of FUSE or of the batch file format.
//
// # Pieces
//
// An Assembler is built once per dataset of a mix from a Config (image key,
// frame selection, action/state/language keys, target size, resize mode,
// layout) whose keys package config's rules accepted when the mix was
// opened, which New does not check again; it is immutable and shared by
// every worker. A Decoder belongs to one worker goroutine and
// holds everything that is reused from frame to frame: the libjpeg-turbo
// handle, the full-size decode buffer, the resize tables, metadata scratch.
// Assembler.Build(decoder, sample, episode, slot, meta) does the work.
//
// # Frames
//
// Frames are chosen in [t, t+offset] (see Select and config.FrameMode for
// the exact rules): t is drawn with mix.Draw(key, mix.StreamT, ·) when
// samples_per_episode ≥ 1 and is the sample's Unit when it is 0; a [min,
// max] offset is drawn after t with mix.Draw(key, mix.StreamOffset, ·) over
// the offsets that fit the episode.
//
// # Pixels
//
// TensorFlow's reference pipeline is
//
//	img = tf.io.decode_image(jpeg_or_png, channels=3)
//	out = tf.cast(tf.image.resize(img, [H, W], method="bilinear", antialias=False), tf.uint8)
//
// JPEG is decoded by libjpeg-turbo (dlopen of libturbojpeg.so.0, see
// package pairs/turbojpeg) with the fast integer IDCT and fancy upsampling,
// TensorFlow's own defaults, so decoded pixels are TensorFlow's bit for bit.
// Without the library (or with OXEFS_DECODER=go) image/jpeg decodes them;
// its planes then go through libjpeg's fancy chroma upsampling and colour
// conversion, reimplemented here exactly, so that only image/jpeg's
// accurate IDCT (TensorFlow uses libjpeg's fast one) separates the two: a
// mean difference of about one level, at most 9 on the fixtures. PNG is
// decoded by image/png, exactly. Grayscale becomes R=G=B, alpha is dropped
// (not composited), 16-bit samples keep their high byte: what decode_image
// does. A CMYK JPEG, which libjpeg cannot turn into RGB, goes through
// image/jpeg with either decoder.
//
// The resize is TensorFlow's ResizeBilinear with half_pixel_centers=True,
// recomputed step for step in float32: scale = in/out, src = (dst+0.5)·scale
// − 0.5, lower = max(floor(src), 0), upper = min(ceil(src), in−1), lerp =
// src − floor(src); top and bottom rows are interpolated first, then the two
// together; the result is truncated to uint8 as tf.cast does. Go may fuse
// a*b+c into one rounding; every product here is converted to float32
// explicitly so that it never does. Frames already at the target size are
// copied. See config.ResizeMode for crop and pad.
//
// # Errors
//
// An episode too short for the offset is a *ShortEpisodeError (the plan
// substitutes another unit). Bad data — an image that is empty, undecodable
// or of the wrong size, a missing feature, a malformed tensor — is a
// *cache.CorruptError naming the dataset, shard and record, wrapping an
// *ImageError that names the key and step where an image is at fault.
// Nothing is ever silently replaced.
package pairs

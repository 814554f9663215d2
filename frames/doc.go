// Package frames owns the pixels: it decodes a camera's frames and resizes
// them exactly as TensorFlow does, straight into a sample's slot of a batch
// buffer. It owns the Decoder (one per worker goroutine, holding every
// buffer reused from frame to frame), the decode memory budget shared by
// the decoders of a pool, the header checks that bound any one image
// (MaxSide, MaxPixels), the resize (squash, crop, pad) and the frame-source
// seam, Source, through which the sample assembler asks for frame i of one
// camera of one episode.
//
// Frames come from two Sources: Images, one encoded image (JPEG or PNG)
// per step, and Video, the frames of a compressed video track (AV1, H.264,
// HEVC) that many episodes share, decoded by timestamp.
//
// It imports nothing else of oxefs but its own subpackages, frames/turbojpeg
// and frames/av: no storage, format, plan, config or assembly package.
// What the frames are stored in reaches it through small interfaces
// (Encoded, Stream), and the names a config uses for its enums are parsed
// elsewhere.
//
// # Where a new decoder goes
//
// A new decoder is a file of this package, with any C binding in a
// subpackage (as frames/turbojpeg binds libjpeg-turbo and frames/av
// libavcodec), registered as a choice of DecoderOptions and held, per
// worker, in the Decoder. A new kind of frame storage is a new Source
// implementation next to Images and Video; see Source for how Video fits
// without a change to the assembler.
//
// # Pixels
//
// TensorFlow's reference pipeline is
//
//	img = tf.io.decode_image(jpeg_or_png, channels=3)
//	out = tf.cast(tf.image.resize(img, [H, W], method="bilinear", antialias=False), tf.uint8)
//
// JPEG is decoded by libjpeg-turbo (dlopen of libturbojpeg.so.0, see
// package frames/turbojpeg) with the fast integer IDCT and fancy
// upsampling, TensorFlow's own defaults, so decoded pixels are TensorFlow's
// bit for bit. Without the library (or with DecoderOptions.JPEG JPEGGo)
// image/jpeg decodes them; its planes then go through libjpeg's fancy chroma
// upsampling and colour conversion, reimplemented here exactly, so that
// only image/jpeg's accurate IDCT (TensorFlow uses libjpeg's fast one)
// separates the two: a mean difference of about one level, at most 9 on the
// fixtures. PNG is decoded by image/png, exactly. Grayscale becomes R=G=B,
// alpha is dropped (not composited), 16-bit samples keep their high byte:
// what decode_image does. A CMYK JPEG, which libjpeg cannot turn into RGB,
// goes through image/jpeg with either decoder.
//
// The resize is TensorFlow's ResizeBilinear with half_pixel_centers=True,
// recomputed step for step in float32: scale = in/out, src = (dst+0.5)·scale
// − 0.5, lower = max(floor(src), 0), upper = min(ceil(src), in−1), lerp =
// src − floor(src); top and bottom rows are interpolated first, then the two
// together; the result is truncated to uint8 as tf.cast does. Go may fuse
// a*b+c into one rounding; every product here is converted to float32
// explicitly so that it never does. Where cgo is available on amd64, the
// same computation runs in C with SSE2 or AVX2 intrinsics (package
// frames/bilinear, chosen by the CPU), equal to the Go loop bit for bit;
// the build tag purego keeps the Go loop. Frames already at the target
// size are copied. See ResizeMode for crop and pad.
//
// A slot whose Decode is Fast trades that parity for less work: a JPEG at
// least twice the slot's size is decoded by libjpeg-turbo at 1/2, 1/4 or
// 1/8 scale in the DCT domain, and frames are resized with area weights
// (bilinear when enlarging) in fixed point (fastresize.go): deterministic
// and free of aliasing, but not TensorFlow's values.
//
// # Augmentation
//
// A Slot's Augment (augment.go) is the functional half of augmentation:
// package augment draws the parameters, this package applies them on the
// frame's way into the slot, the same to every frame of the slot. A crop
// box (CropBox: fractions that round to whole source pixels, cut from the
// part the ResizeMode keeps) goes through the resize above as its source
// box, so a crop costs a resize and equals tf.image.resize of the cut box
// bit for bit. An affine (Affine: torchvision's F.affine, nearest) is a
// sampling grid over the resized frame: each output pixel takes the
// resized pixel the inverse transform sends it to, from a ring of the
// resized rows a band of output rows samples (small rotations) or by
// evaluating the resize at that one point (affine.go), so no resized
// frame is made; outside the frame it is 0. Colour ops
// (colour.go) then run over the uint8 frame in one pass per group of
// per-pixel ops; contrast's grayscale mean comes from a read-only pass
// first (brightness and contrast then share one table), or from the pass
// before it. Where cgo is available on amd64 and the CPU has AVX2 (or
// AVX-512 F, BW and VBMI: sixteen lanes, the leading blends as one byte
// table), those passes run in C (package frames/colourk), equal to the Go
// code on every value. A geometric augmentation always takes the exact
// path, whatever the slot's DecodeMode; a dropped camera's frames are
// zeros, not decoded.
//
// # Memory
//
// Before anything is decoded or allocated, an image's header is checked
// against MaxSide and MaxPixels and against the size the Source expects,
// and what decoding it needs beyond the Decoder's own buffers is reserved
// from the pool's DecodeMemory. On the libjpeg-turbo path a Decoder
// allocates nothing per frame in steady state.
//
// # Errors
//
// Bad data of one frame (empty, not a JPEG or PNG, undecodable, of the
// wrong size) is an *ImageError naming the camera and the step, wrapping
// ErrEmptyImage, ErrImageFormat, ErrUndecodable or ErrImageSize.
package frames
